"""Portable model files: round trip and clear errors for bad files."""

import zipfile

import numpy as np
import pytest

from hardneg._persist import ModelFileError, load_model, save_model


def test_round_trip(tmp_path):
    arrays = {"w": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.array([1.5])}
    save_model(tmp_path / "m.npz", "toy", 1, arrays, {"C": 1.0, "classes": [0, 1]})
    loaded, meta = load_model(tmp_path / "m.npz", "toy", {1})
    np.testing.assert_array_equal(loaded["w"], arrays["w"])
    assert meta == {"C": 1.0, "classes": [0, 1]}


def test_refuses_object_arrays(tmp_path):
    with pytest.raises(TypeError, match="pickle"):
        save_model(tmp_path / "m.npz", "toy", 1, {"x": np.array([object()])}, {})
    assert not list(tmp_path.iterdir())  # nothing half-written


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: None, "does not exist"),
        (lambda p: p.write_bytes(b"garbage"), "corrupt"),
        (lambda p: np.savez(p, x=np.ones(2)), "no metadata"),
        (lambda p: save_model(p, "other", 1, {}, {}), "'other'"),
        (lambda p: save_model(p, "toy", 7, {}, {}), "version 7"),
    ],
)
def test_bad_files_give_clear_errors(tmp_path, make, message):
    path = tmp_path / "m.npz"
    make(path)
    with pytest.raises(ModelFileError, match=message):
        load_model(path, "toy", {1})


def test_truncated_file(tmp_path):
    path = tmp_path / "m.npz"
    save_model(path, "toy", 1, {"w": np.ones(10_000)}, {})
    path.write_bytes(path.read_bytes()[:500])
    with pytest.raises(ModelFileError):
        load_model(path, "toy", {1})


def test_model_kind_reads_only_the_header(tmp_path):
    from hardneg._persist import model_kind

    save_model(tmp_path / "m.npz", "toy", 1, {"w": np.ones(3)}, {})
    assert model_kind(tmp_path / "m.npz") == "toy"
    (tmp_path / "bad.npz").write_bytes(b"nope")
    with pytest.raises(ModelFileError, match="corrupt"):
        model_kind(tmp_path / "bad.npz")
