"""Bring your own embeddings: ``hardneg store import`` from .npy, .parquet and .safetensors."""

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from _helpers import run_cli as run
from hardneg.store import StoreError
from hardneg.store._import import import_embeddings


@pytest.fixture
def X():
    return np.random.default_rng(0).random((11, 5)).astype(np.float32)


class Counted:
    """Records the largest block the importer asked for (the memory bound)."""

    def __init__(self):
        self.sizes = []

    def __call__(self, n):
        self.sizes.append(n)


def test_npy_with_side_files(tmp_path, X):
    np.save(tmp_path / "e.npy", X.astype(np.float64))
    (tmp_path / "ids.csv").write_text("id\n" + "\n".join(f"img{i}.jpg" for i in range(11)) + "\n")
    (tmp_path / "tags.csv").write_text("img0.jpg,mug;cup\nimg3.jpg,mug\n")
    (tmp_path / "labels.csv").write_text("id,label\nimg0.jpg,kitchen\nimg5.jpg,garden\n")
    seen = Counted()
    store = import_embeddings(tmp_path / "e.npy", tmp_path / "e.store", ids=tmp_path / "ids.csv", tags=tmp_path / "tags.csv",
                              labels=tmp_path / "labels.csv", block_rows=4, progress=seen)
    assert seen.sizes == [4, 4, 3]  # read in blocks, never all at once
    np.testing.assert_allclose(store.to_numpy(), X)
    assert store.ids().tolist()[:2] == ["img0.jpg", "img1.jpg"]
    assert store.select(tags="mug").tolist() == [0, 3]
    assert store.attrs["class_names"] == ["garden", "kitchen"] and store.labels()[[0, 5, 1]].tolist() == [1, 0, -1]
    assert store.verify().ok and store.attrs["imported"]["format"] == "npy"


def test_parquet_columns(tmp_path, X):
    table = pa.table({"id": [f"p{i}" for i in range(11)], "vec": [list(map(float, r)) for r in X],
                      "path": [f"imgs/{i}.png" for i in range(11)], "tags": ["a;b" if i % 2 else None for i in range(11)],
                      "label": [i % 3 for i in range(11)], "note": ["x"] * 11})
    pq.write_table(table, tmp_path / "e.parquet", row_group_size=3)
    store = import_embeddings(tmp_path / "e.parquet", tmp_path / "p.store", block_rows=4)
    np.testing.assert_allclose(store.to_numpy(), X)
    assert store.ids().tolist()[-1] == "p10" and store.select(tags="b").tolist() == [1, 3, 5, 7, 9]
    assert store.labels().tolist() == [i % 3 for i in range(11)]
    assert store.items.column("path").to_pylist()[0] == os.path.join(str(tmp_path), "imgs", "0.png")  # absolute: found from anywhere


def test_safetensors_ids_from_side_file_or_row_numbers(tmp_path, X):
    from safetensors.numpy import save_file

    save_file({"embeddings": X, "labels": np.arange(11, dtype=np.int64) % 2}, str(tmp_path / "e.safetensors"))
    store = import_embeddings(tmp_path / "e.safetensors", tmp_path / "s.store", block_rows=5)
    np.testing.assert_array_equal(store.to_numpy(), X)
    assert store.ids().tolist() == [str(i) for i in range(11)] and store.labels().tolist() == [i % 2 for i in range(11)]


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda d, X: np.save(d / "e.npy", np.where(np.arange(55).reshape(11, 5) == 17, np.nan, X)), r"row 3 \('3'\) holds NaN or infinity"),
        (lambda d, X: np.save(d / "e.npy", np.full((2, 3), 1e300)), "too large for float32"),
        (lambda d, X: np.save(d / "e.npy", X[0]), r"expected a 2-D array \(rows, dims\), got shape \(5,\)"),
        (lambda d, X: np.save(d / "e.npy", X.astype(np.complex64)), "complex64 values"),
        (lambda d, X: np.save(d / "e.npy", np.array([{"a": 1}], dtype=object)), "not a .npy array of numbers"),
        (lambda d, X: (d / "e.npy").write_text("hello"), "not a .npy array of numbers"),
    ],
)
def test_bad_npy_is_one_line_naming_the_file(tmp_path, X, make, match):
    make(tmp_path, X)
    with pytest.raises(ValueError, match=match) as err:
        import_embeddings(tmp_path / "e.npy", tmp_path / "bad.store", block_rows=4)
    assert "\n" not in str(err.value) and "e.npy" in str(err.value)
    assert not (tmp_path / "bad.store").exists() and [p.name for p in tmp_path.iterdir()] == ["e.npy"]  # nothing half-written


def test_bad_parquet_and_side_files(tmp_path, X):
    pq.write_table(pa.table({"a": [[1.0, 2.0], [1.0]], "b": [[1.0, 2.0], [3.0, 4.0]]}), tmp_path / "two.parquet")
    with pytest.raises(ValueError, match="cannot tell the embedding column"):
        import_embeddings(tmp_path / "two.parquet", tmp_path / "x.store")
    with pytest.raises(ValueError, match="row 1 of column 'a' has 1 values, row 0 has 2"):
        import_embeddings(tmp_path / "two.parquet", tmp_path / "x.store", column="a")
    np.save(tmp_path / "e.npy", X)
    (tmp_path / "ids.csv").write_text("a\nb\n")
    with pytest.raises(ValueError, match="2 ids for 11 embedding rows"):
        import_embeddings(tmp_path / "e.npy", tmp_path / "x.store", ids=tmp_path / "ids.csv")
    (tmp_path / "tags.csv").write_text("99,mug\n")
    with pytest.raises(ValueError, match="not among the embeddings' ids"):
        import_embeddings(tmp_path / "e.npy", tmp_path / "x.store", tags=tmp_path / "tags.csv")
    with pytest.raises(ValueError, match="unknown embedding file type '.csv'"):
        import_embeddings(tmp_path / "ids.csv", tmp_path / "x.store")
    import_embeddings(tmp_path / "e.npy", tmp_path / "x.store")
    with pytest.raises(StoreError, match="already exists"):
        import_embeddings(tmp_path / "e.npy", tmp_path / "x.store")
    assert len(import_embeddings(tmp_path / "two.parquet", tmp_path / "x.store", column="b", overwrite=True)) == 2


def test_cli_import_then_a_method_runs(tmp_path, capsys, X):
    np.save(tmp_path / "e.npy", X)
    code, out, _ = run(capsys, "store", "import", str(tmp_path / "e.npy"), "-o", str(tmp_path / "e.store"))
    assert code == 0 and "11 rows x 5 imported" in out
    code, out, _ = run(capsys, "knn", str(tmp_path / "e.store"), "-q", "3", "-k", "2", "--json")
    assert code == 0 and '"rank": 1' in out  # a method runs on the imported store
    bad = tmp_path / "bad.npy"
    np.save(bad, np.array([[np.inf, 1.0]]))
    code, _, err = run(capsys, "store", "import", str(bad), "-o", str(tmp_path / "b.store"))
    assert code == 2 and "holds NaN or infinity" in err and len(err.strip().splitlines()) == 1


# ---------------------------------------------------------------- issue 39 item 5: labels that are floats or NaN


def test_parquet_float_labels_with_nan_are_class_ids(tmp_path, X):
    """pandas writes a missing integer as NaN in a float column: NaN is unlabelled, 2.0 is class 2."""
    labels = [float(i % 3) for i in range(10)] + [float("nan")]
    table = pa.table({"id": [f"p{i}" for i in range(11)], "vec": [list(map(float, r)) for r in X], "label": labels})
    pq.write_table(table, tmp_path / "e.parquet")
    store = import_embeddings(tmp_path / "e.parquet", tmp_path / "p.store")
    assert store.labels().tolist() == [i % 3 for i in range(10)] + [-1]
    assert "class_names" not in store.attrs


def test_csv_label_that_is_not_an_integer_is_refused_naming_the_row(tmp_path, X):
    np.save(tmp_path / "e.npy", X)
    (tmp_path / "labels.csv").write_text("id,label\n0,2\n1,1.5\n")
    with pytest.raises(ValueError, match=r"row 1 holds '1.5'"):
        import_embeddings(tmp_path / "e.npy", tmp_path / "s.store", labels=tmp_path / "labels.csv")
    (tmp_path / "labels.csv").write_text("id,label\n0,2\n1,3.0\n2,nan\n3,\n")
    store = import_embeddings(tmp_path / "e.npy", tmp_path / "s.store", labels=tmp_path / "labels.csv")
    assert store.labels()[:5].tolist() == [2, 3, -1, -1, -1] and "class_names" not in store.attrs


def test_huge_dimension_is_refused_from_the_header_before_reading(tmp_path):
    """Issue 39 item 4: a (2, 8,000,000) .npy is refused in one line; nothing is read beyond the header."""
    from numpy.lib.format import open_memmap

    big = open_memmap(tmp_path / "wide.npy", mode="w+", dtype=np.float32, shape=(2, 8_000_000))  # sparse file on disk
    del big
    with pytest.raises(ValueError, match=r"8,000,000 dimensions per row .* transposed"):
        import_embeddings(tmp_path / "wide.npy", tmp_path / "w.store")
    assert not (tmp_path / "w.store").exists()


def test_blocks_are_bounded_by_bytes(tmp_path, monkeypatch):
    from hardneg.store import _import

    monkeypatch.setattr(_import, "BLOCK_BYTES", 3 * 8 * 1000)  # three float64 rows of 1,000 dimensions
    np.save(tmp_path / "e.npy", np.ones((10, 1000), np.float32))
    seen = Counted()
    import_embeddings(tmp_path / "e.npy", tmp_path / "e.store", progress=seen)
    assert seen.sizes == [3, 3, 3, 1]
