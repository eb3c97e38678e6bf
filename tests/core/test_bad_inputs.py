"""Inputs that used to be accepted and then gave a traceback or a wrong result (issue 24).

Each test names the defect it pins down: a traceback where one line was due, a
contradictory option silently honoured, a forged model file that loaded, an
E-SVM encoding run that left an empty output behind, committed too rarely, or
searched codes of another encoder.
"""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from hardneg._persist import ModelFileError, load_model, model_kind, save_model
from _helpers import assert_one_line_error
from _helpers import run_cli as run
from hardneg.cli.main import main
from hardneg.encoding import ESVMEncoder, load_esvm_encoder
from hardneg.index import InvertedIndex
from hardneg.similarity import TfidfCosine, load_similarity
from hardneg.store import FeatureStore

DIM = 6


def _dense_store(path, n=40, dim=DIM, seed=0, zero_row=None):
    rng = np.random.default_rng(seed)
    X = rng.random((n, dim)).astype(np.float32)
    X[: n // 2, 0] += 1.0
    if zero_row is not None:
        X[zero_row] = 0.0
    with FeatureStore.create(path, dim=dim) as store:
        store.append(X, ids=[f"x{i}" for i in range(n)], labels=[i % 2 for i in range(n)],
                     tags=[["boat"] if i < n // 2 else ["car"] for i in range(n)],
                     split=["train" if i % 4 else "test" for i in range(n)])
    return X


def _bow(n=60, words=30, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, words, density=0.3, random_state=seed, format="csr", dtype=np.float32)
    X.data = np.ceil(X.data * 5)
    return X, rng.integers(0, 3, n)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("hardening")
    X = _dense_store(root / "s")
    _dense_store(root / "zero", zero_row=0)
    bow, y = _bow()
    with FeatureStore.create(root / "bow", dim=bow.shape[1], sparse=True) as store:
        store.append(bow, labels=y)
    ESVMEncoder(alpha_neg=0.01, min_negatives=20, random_state=0).fit(X).save(root / "enc.npz")
    ESVMEncoder(alpha_neg=0.01, min_negatives=20, random_state=1).fit(X[::-1].copy()).save(root / "other.npz")
    return root


def forge(path, edit):
    """Re-write a model file with edited arrays through the same writer: valid checksums, forged values."""
    kind = model_kind(path)
    arrays, meta = load_model(path, kind, (1,))
    edit(arrays)
    save_model(path, kind, 1, arrays, meta)


# ---------------------------------------------------------------- 1. similarity train --n-triplets


def test_n_triplets_beyond_memory_is_one_line_naming_the_largest_that_fits(capsys, files, tmp_path):
    out = tmp_path / "m.npz"
    line = assert_one_line_error(run(capsys, "similarity", "train", files / "bow", "-o", out, "--protocol", "random",
                                     "--n-triplets", 10**12), "--n-triplets", "largest value that fits")
    assert "memory" in line and not out.exists()


def test_n_triplets_bound_follows_the_available_memory(capsys, files, tmp_path, monkeypatch):
    import hardneg._validation as validation
    from hardneg.cli.similarity import _TRIPLET_BYTES

    monkeypatch.setattr(validation, "available_memory", lambda: 1000 * _TRIPLET_BYTES)
    assert_one_line_error(run(capsys, "similarity", "train", files / "bow", "-o", tmp_path / "m.npz", "--protocol", "random",
                              "--n-triplets", 1001), "--n-triplets 1,001", "is 1,000")
    code, _, err = run(capsys, "similarity", "train", files / "bow", "-o", tmp_path / "m.npz", "--protocol", "random",
                       "--n-triplets", 1000)
    assert code == 0, err
    assert_one_line_error(run(capsys, "similarity", "train", files / "bow", "-o", tmp_path / "m.npz", "--protocol", "random",
                              "--n-triplets", 0), "--n-triplets")


# ---------------------------------------------------------------- 2. zsl on junk .mat files


def _xlsa17(folder):
    folder.mkdir(parents=True, exist_ok=True)
    scipy.io.savemat(folder / "res101.mat", {"features": np.ones((4, 6)), "labels": np.array([[1], [1], [2], [3], [3], [2]])})
    scipy.io.savemat(folder / "att_splits.mat", {"att": np.eye(3), "trainval_loc": np.array([[1], [2], [3], [6]]),
                                                 "test_seen_loc": np.array([[3]]), "test_unseen_loc": np.array([[4], [5]])})


JUNK = {
    "random bytes": lambda p: p.write_bytes(np.random.default_rng(0).bytes(300)),
    "text": lambda p: p.write_text("hello\nthis is not a MATLAB file\n"),
    "empty": lambda p: p.write_bytes(b""),
    "zeros": lambda p: p.write_bytes(b"\0" * 200),
    "missing fields": lambda p: scipy.io.savemat(p, {"foo": np.ones(3)}),
    "a string field": lambda p: scipy.io.savemat(p, {"features": "abc", "labels": np.array([[1]]), "att": "x",
                                                     "trainval_loc": "a", "test_seen_loc": "b", "test_unseen_loc": "c"}),
}


@pytest.mark.parametrize("junk", sorted(JUNK))
@pytest.mark.parametrize("name", ["res101.mat", "att_splits.mat"])
@pytest.mark.parametrize("command", ["train", "eval"])
def test_zsl_on_a_junk_mat_file_is_one_line_naming_it(capsys, tmp_path, junk, name, command):
    _xlsa17(tmp_path / "d")
    JUNK[junk](tmp_path / "d" / name)
    argv = ["zsl", "train", tmp_path / "d", "-o", tmp_path / "m.npz"] if command == "train" else \
        ["zsl", "eval", tmp_path / "m.npz", tmp_path / "d"]
    assert_one_line_error(run(capsys, *argv), str(tmp_path / "d" / name))


# ---------------------------------------------------------------- 3. / 4. contradictory options


def test_concept_eval_refuses_concept_and_label_together(capsys, files, tmp_path):
    assert main(["concept", "train", str(files / "s"), "-c", "boat", "-o", str(tmp_path / "boat.npz"), "-T", "1", "--bins", "8"]) == 0
    capsys.readouterr()
    assert_one_line_error(run(capsys, "concept", "eval", tmp_path / "boat.npz", files / "s", "-c", "boat", "--label", "1"),
                          "--concept", "--label")
    assert run(capsys, "concept", "eval", tmp_path / "boat.npz", files / "s", "--label", "0")[0] == 0


def test_store_split_refuses_csv_with_a_test_fraction(capsys, tmp_path):
    _dense_store(tmp_path / "s")
    (tmp_path / "split.csv").write_text("id,split\nx0,test\nx1,train\n")
    before = FeatureStore.open(tmp_path / "s").items.column("split").to_pylist()
    for extra in (["--test-fraction", "0.5"], ["--seed", "3"], ["--no-stratify"]):
        assert_one_line_error(run(capsys, "store", "split", tmp_path / "s", "--from-csv", tmp_path / "split.csv", *extra),
                              "--from-csv", extra[0])
    assert FeatureStore.open(tmp_path / "s").items.column("split").to_pylist() == before
    assert run(capsys, "store", "split", tmp_path / "s", "--from-csv", tmp_path / "split.csv")[0] == 0


# ---------------------------------------------------------------- 5. malformed tags

BAD_TAGS = ["", "a;b", "a\nb", "line\rbreak", "tab\tbed", "nul\x00", "sep\u2028"]


@pytest.mark.parametrize("tag", BAD_TAGS)
def test_append_refuses_a_tag_that_would_not_read_back(tmp_path, tag):
    with FeatureStore.create(tmp_path / "s", dim=2) as store:
        with pytest.raises(ValueError, match="tags: row 1") as info:
            store.append(np.ones((2, 2)), tags=[["ok"], ["fine", tag]])
        assert len(str(info.value).splitlines()) == 1 and repr(tag) in str(info.value)
        assert len(store) == 0


@pytest.mark.parametrize("tag", ["", "a;b", "a\nb"])
def test_store_tag_refuses_a_malformed_tag(capsys, tmp_path, tag):
    _dense_store(tmp_path / "s")
    assert_one_line_error(run(capsys, "store", "tag", tmp_path / "s", "--add", tag, "--id", "x0"), "--add", repr(tag))
    assert FeatureStore.open(tmp_path / "s").items.column("tags").to_pylist()[0] == ["boat"]


def test_store_tag_refuses_a_line_break_from_a_csv_cell(capsys, tmp_path):
    _dense_store(tmp_path / "s")
    (tmp_path / "t.csv").write_text('id,tags\nx0,"ok;two\nlines"\n')
    assert_one_line_error(run(capsys, "store", "tag", tmp_path / "s", "--from-csv", tmp_path / "t.csv"), repr("two\nlines"))
    assert FeatureStore.open(tmp_path / "s").items.column("tags").to_pylist()[0] == ["boat"]


def test_a_stored_malformed_tag_can_still_be_removed(tmp_path):
    _dense_store(tmp_path / "s")
    with FeatureStore.open(tmp_path / "s", mode="a") as store:
        assert store.edit_items(remove_tags={"x0": ["a;b", "boat"]}) == 1


def test_extract_refuses_a_folder_tag_with_the_separator():
    from hardneg.exceptions import CLIError
    from hardneg.cli.extract import _tags_and_labels

    items = [SimpleNamespace(id="cats/x.jpg"), SimpleNamespace(id="a;b/y.jpg")]
    with pytest.raises(CLIError, match="--tags-from-folders: image a;b/y.jpg"):
        _tags_and_labels(items, True, None, None, False)


# ---------------------------------------------------------------- 6. forged model files


def test_forged_tfidf_weights_are_refused(tmp_path):
    bow, _ = _bow()
    TfidfCosine().fit(bow).save(tmp_path / "t.npz")
    assert load_similarity(tmp_path / "t.npz").w_.min() == 1.0
    forge(tmp_path / "t.npz", lambda a: a.__setitem__("w", -a["w"]))
    with pytest.raises(ModelFileError, match="all ones"):
        load_similarity(tmp_path / "t.npz")
    TfidfCosine().fit(bow).save(tmp_path / "t.npz")
    forge(tmp_path / "t.npz", lambda a: a.__setitem__("input_idf", -a["input_idf"]))
    with pytest.raises(ModelFileError, match="non-negative"):
        load_similarity(tmp_path / "t.npz")


def test_forged_negative_postings_are_refused(tmp_path):
    bow, _ = _bow()
    index = InvertedIndex.from_model(TfidfCosine().fit(bow))
    index.add(bow)
    index.save(tmp_path / "i.npz")
    assert InvertedIndex.load(tmp_path / "i.npz").n_postings == bow.nnz
    forge(tmp_path / "i.npz", lambda a: a.__setitem__("data", -a["data"]))
    with pytest.raises(ModelFileError, match="opposite sign") as info:
        InvertedIndex.load(tmp_path / "i.npz")
    assert len(str(info.value).splitlines()) == 1


def test_negative_learned_weights_with_their_postings_still_load(tmp_path):
    index = InvertedIndex([1.0, -0.5, 2.0])
    index.add(sp.csr_matrix(np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 3.0]])))
    index.save(tmp_path / "i.npz")
    loaded = InvertedIndex.load(tmp_path / "i.npz")
    assert np.allclose(loaded.scores(sp.csr_matrix(np.array([[0.0, 1.0, 0.0]]))), [[-1.0, -0.5]])


def test_forged_all_zero_esvm_pool_is_refused(files, tmp_path):
    path = tmp_path / "e.npz"
    Path(path).write_bytes((files / "enc.npz").read_bytes())
    forge(path, lambda a: a.__setitem__("pool_0", np.zeros_like(a["pool_0"])))
    with pytest.raises(ModelFileError, match="pool_0: row 0 is all zeros"):
        load_esvm_encoder(path)


def test_forged_lda_precision_that_is_not_positive_definite_is_refused(files, tmp_path):
    X = np.asarray(FeatureStore.open(files / "s").take(np.arange(40)))
    ESVMEncoder(solver="lda", min_negatives=20, random_state=0).fit(X).save(tmp_path / "l.npz")
    load_esvm_encoder(tmp_path / "l.npz")
    forge(tmp_path / "l.npz", lambda a: a.__setitem__("lda_precision", -a["lda_precision"]))
    with pytest.raises(ModelFileError, match="not positive definite"):
        load_esvm_encoder(tmp_path / "l.npz")
    ESVMEncoder(solver="lda", min_negatives=20, random_state=0).fit(X).save(tmp_path / "l.npz")
    forge(tmp_path / "l.npz", lambda a: a["lda_precision"].__setitem__((0, 0, 1), 1e3))
    with pytest.raises(ModelFileError, match="not symmetric"):
        load_esvm_encoder(tmp_path / "l.npz")


# ---------------------------------------------------------------- 7. refused encoding leaves no output


@pytest.mark.parametrize("extra", [["--recursions", "0"], ["--recursions", "5"], ["--recursions", "2"], ["--batch-rows", "0"]])
def test_esvm_encode_refused_options_create_no_output(capsys, files, tmp_path, extra):
    out = tmp_path / "codes"
    assert_one_line_error(run(capsys, "esvm", "encode", files / "enc.npz", files / "s", "-o", out, *extra),
                          extra[0])
    assert not out.exists()


def test_esvm_encode_failing_before_the_first_row_removes_the_output_it_created(capsys, files, tmp_path):
    out = tmp_path / "codes"
    assert_one_line_error(run(capsys, "esvm", "encode", files / "enc.npz", files / "zero", "-o", out), "all zeros")
    assert not out.exists()


def test_esvm_encode_failure_keeps_an_output_it_did_not_create(files, tmp_path):
    from hardneg.encoding import encode_store

    enc = load_esvm_encoder(files / "enc.npz")
    src = FeatureStore.open(files / "zero")
    stamp = {"fingerprint": enc.fingerprint(), "n_recursions": 1, "source": str(Path(src.path).resolve()), "source_rows": len(src)}
    FeatureStore.create(tmp_path / "codes", DIM, attrs={"esvm": stamp}).close()
    with pytest.raises(ValueError, match="all zeros"):
        encode_store(enc, src, tmp_path / "codes")
    assert FeatureStore.open(tmp_path / "codes").attrs["esvm"] == stamp


def test_esvm_encode_library_refuses_a_bad_level_before_creating_the_output(files, tmp_path):
    from hardneg.encoding import encode_store

    enc = load_esvm_encoder(files / "enc.npz")
    with pytest.raises(ValueError, match="n_recursions"):
        encode_store(enc, files / "s", tmp_path / "codes", n_recursions=0)
    assert not (tmp_path / "codes").exists()


# ---------------------------------------------------------------- 8. a commit every --batch-rows rows


def test_esvm_encode_commits_every_batch_rows(capsys, files, tmp_path, monkeypatch):
    from hardneg.encoding import encode_store

    enc = load_esvm_encoder(files / "enc.npz")
    commits = []
    encode_store(enc, files / "s", tmp_path / "a", batch_rows=8, on_commit=commits.append)
    assert commits == [8, 16, 24, 32, 40]  # the source is one 40-row chunk: it used to be one commit of 40

    calls = []
    real = FeatureStore.append

    def append_then_die(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt  # a kill during the third batch
        return real(self, *args, **kwargs)

    monkeypatch.setattr(FeatureStore, "append", append_then_die)
    assert main(["esvm", "encode", str(files / "enc.npz"), str(files / "s"), "-o", str(tmp_path / "b"), "--batch-rows", "8"]) != 0
    assert len(FeatureStore.open(tmp_path / "b")) == 16
    monkeypatch.setattr(FeatureStore, "append", real)
    capsys.readouterr()
    assert run(capsys, "esvm", "encode", files / "enc.npz", files / "s", "-o", tmp_path / "b", "--batch-rows", "8")[0] == 0
    assert np.array_equal(FeatureStore.open(tmp_path / "b").take(np.arange(40)), FeatureStore.open(tmp_path / "a").take(np.arange(40)))


def test_in_process_encode_store_commits_every_batch_rows(files, tmp_path, monkeypatch):
    from hardneg.encoding import encode_store

    sizes = []
    real = FeatureStore.append
    monkeypatch.setattr(FeatureStore, "append", lambda self, X, **kw: (sizes.append(len(X)), real(self, X, **kw))[1])
    encode_store(load_esvm_encoder(files / "enc.npz"), files / "s", tmp_path / "c", batch_rows=16)
    assert sizes == [16, 16, 8]


# ---------------------------------------------------------------- 9. search --codes of another encoder


def test_esvm_search_refuses_codes_not_written_by_the_encoder(capsys, files, tmp_path):
    assert run(capsys, "esvm", "encode", files / "other.npz", files / "s", "-o", tmp_path / "other-codes")[0] == 0
    assert run(capsys, "esvm", "encode", files / "enc.npz", files / "s", "-o", tmp_path / "codes")[0] == 0
    for codes, why in ((files / "s", "no E-SVM encoder stamp"), (tmp_path / "other-codes", "another encoder")):
        assert_one_line_error(run(capsys, "esvm", "search", files / "enc.npz", files / "s", "-q", "x0", "--codes", codes),
                              "--codes", why)
    code, out, err = run(capsys, "esvm", "search", files / "enc.npz", files / "s", "-q", "x0", "--codes", tmp_path / "codes", "-k", "3")
    assert code == 0, err
    assert "x0" in out
