"""Every user-caused failure of ``hardneg`` is one line on stderr and exit code 2.

Bad options are refused before any work starts and name the option as the user
typed it (``--input-size``, not ``input_size``); bad paths never end in an
``OSError`` traceback; only a genuine bug (or ``-vv``) shows a traceback.
"""

import errno
import logging
from urllib.error import URLError

import numpy as np
import pytest

from _helpers import assert_one_line_error
from _helpers import run_cli as run
from hardneg.cli.main import main
from hardneg.hashing import LSHHasher, load_hasher
from hardneg.index import HammingIndex
from hardneg.store import FeatureStore

DIM = 6
# Python argument names that must not stand in for the CLI options in messages.
PYTHON_NAMES = ("input_size", "n_bits", "n_iter", "n_bins", "batch_size", "n_words", "chunk_rows", "n_candidates",
                "resize_to", "num_threads", "random_state", "n_unlabeled", "n_fit_images", "=True")


def _make_store(path, n=40, dim=DIM, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, dim)).astype(np.float32)
    X[: n // 2, 0] += 1.0
    with FeatureStore.create(path, dim=dim) as store:
        store.append(
            X,
            labels=[i % 2 for i in range(n)],
            tags=[["boat"] if i < n // 2 else ["car"] for i in range(n)],
            split=["train" if i % 4 else "test" for i in range(n)],
        )
    return X


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A tiny store, an 8-bit LSH model and its index, a concept model, a store of another dim."""
    root = tmp_path_factory.mktemp("cli-errors")
    X = _make_store(root / "s")
    _make_store(root / "s3", dim=3)
    hasher = LSHHasher(n_bits=8, random_state=0).fit(X)
    hasher.save(root / "lsh.npz")
    HammingIndex.from_store(FeatureStore.open(root / "s"), hasher).save(root / "idx.npz")
    assert main(["concept", "train", str(root / "s"), "-c", "boat", "-o", str(root / "boat.npz"), "-T", "1", "--bins", "8"]) == 0
    (root / "folder").mkdir()
    np.save(root / "q.npy", X[:2])
    return root


# ---------------------------------------------------------------- paths


@pytest.mark.parametrize(
    "argv",
    [
        ["concept", "train", "{s}", "-c", "boat", "-o", "{folder}", "-T", "1"],
        ["hash", "train", "{s}", "--method", "lsh", "-b", "8", "-o", "{folder}"],
        ["hash", "index", "{lsh}", "{s}", "-o", "{folder}"],
    ],
    ids=["concept-train", "hash-train", "hash-index"],
)
def test_output_file_that_is_a_folder(capsys, files, argv):
    argv = [a.format(s=files / "s", folder=files / "folder", lsh=files / "lsh.npz") for a in argv]
    line = assert_one_line_error(run(capsys, *argv), "--out", "is a folder")
    assert ".tmp" not in line


def test_output_file_under_a_file(capsys, files, tmp_path):
    result = run(capsys, "hash", "train", files / "s", "--method", "lsh", "-b", "8", "-o", files / "lsh.npz" / "sub" / "m.npz")
    assert_one_line_error(result, "--out", "is a file, not a folder")
    result = run(capsys, "datasets", "import", "digits", files / "lsh.npz" / "x.store")
    assert_one_line_error(result, "is a file, not a folder")


def test_output_folder_that_is_a_file(capsys, files):
    assert_one_line_error(run(capsys, "demo", "--out", files / "lsh.npz"), "--out", "is a file, not a folder")
    assert_one_line_error(run(capsys, "extract", "dataset", "digits", "-f", "dsift", "--out", files / "lsh.npz"), "--out")


def test_unwritable_output_is_one_line(capsys, files, tmp_path, monkeypatch):
    # Running as root, chmod cannot make a folder unwritable: fail the write itself.
    def refuse(self, path):
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(LSHHasher, "save", refuse)
    out = tmp_path / "m.npz"
    line = assert_one_line_error(run(capsys, "hash", "train", files / "s", "--method", "lsh", "-b", "8", "-o", out), "Permission denied")
    assert str(out) in line and "Errno" not in line


def test_store_given_as_model_and_model_as_store(capsys, files):
    assert_one_line_error(run(capsys, "concept", "search", files / "s", files / "s"), "is a FeatureStore, not a concept model file")
    assert_one_line_error(run(capsys, "hash", "index", files / "s", files / "s", "-o", files / "i.npz"), "is a FeatureStore")
    assert_one_line_error(run(capsys, "hash", "search", files / "lsh.npz", files / "s", "--query-npy", files / "q.npy"), "not an index file")
    assert_one_line_error(run(capsys, "concept", "search", files / "boat.npz", files / "lsh.npz"), "not a FeatureStore")
    assert_one_line_error(run(capsys, "concept", "search", files / "lsh.npz", files / "s"), "lsh.npz")
    assert_one_line_error(run(capsys, "hash", "index", files / "boat.npz", files / "s", "-o", files / "i.npz"), "not a hasher")
    assert_one_line_error(run(capsys, "store", "info", files / "lsh.npz"), "not a FeatureStore")


def test_missing_files(capsys, files):
    assert_one_line_error(run(capsys, "concept", "search", files / "nope.npz", files / "s"), "nope.npz")
    assert_one_line_error(run(capsys, "hash", "search", files / "nope.npz", files / "idx.npz", "--query-npy", files / "q.npy"), "nope.npz")
    assert_one_line_error(run(capsys, "concept", "train", files / "nostore", "-c", "boat", "-o", files / "m.npz"), "nostore")


def test_wrong_store_dimension(capsys, files):
    assert_one_line_error(run(capsys, "concept", "search", files / "boat.npz", files / "s3"), "3-d")
    assert_one_line_error(run(capsys, "hash", "index", files / "lsh.npz", files / "s3", "-o", files / "i3.npz"), "3-d")
    result = run(capsys, "hash", "search", files / "lsh.npz", files / "idx.npz", "--store", files / "s3", "-q", "0")
    assert_one_line_error(result, "--store", "3-d")


@pytest.mark.parametrize(
    "content, message",
    [
        ("folder", "is a folder"),
        ("npz", ".npz archive"),
        ("garbage", "not a readable .npy"),
        ("object", "not a readable .npy"),
        ("dim", "features but the model expects 6"),
        ("nan", "NaN"),
    ],
)
def test_bad_query_npy(capsys, files, tmp_path, content, message):
    path = tmp_path / "q.npy"
    if content == "folder":
        path = files / "folder"
    elif content == "npz":
        path = files / "lsh.npz"
    elif content == "garbage":
        path.write_bytes(b"\x93NUMPY garbage")
    elif content == "object":
        np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    elif content == "dim":
        np.save(path, np.zeros((2, 5), np.float32))
    else:
        np.save(path, np.full((1, DIM), np.nan, np.float32))
    line = assert_one_line_error(run(capsys, "hash", "search", files / "lsh.npz", files / "idx.npz", "--query-npy", path), "--query-npy", message)
    assert "allow_pickle" not in line


def test_one_query_vector_and_a_huge_k(capsys, files, tmp_path):
    np.save(tmp_path / "one.npy", np.zeros(DIM, np.float32))
    code, out, err = run(capsys, "hash", "search", files / "lsh.npz", files / "idx.npz", "--query-npy", tmp_path / "one.npy", "-k", "1000000")
    assert code == 0, err
    assert "top 40" in out  # k is capped at the size of the index


def test_existing_store_says_overwrite_option(capsys, files):
    line = assert_one_line_error(run(capsys, "datasets", "import", "digits", files / "s"), "already exists", "--overwrite")
    assert "overwrite=True" not in line
    assert len(FeatureStore.open(files / "s")) == 40


def test_unknown_concept_and_split(capsys, files):
    assert_one_line_error(run(capsys, "concept", "train", files / "s", "-c", "plane", "-o", files / "m.npz"), "no items tagged 'plane'")
    result = run(capsys, "concept", "train", files / "s", "-c", "boat", "-o", files / "m.npz", "--split", "nosuch")
    assert_one_line_error(result, "--split", "nosuch")
    assert_one_line_error(run(capsys, "concept", "search", files / "boat.npz", files / "s", "--split", "nosuch"), "--split")
    result = run(capsys, "hash", "train", files / "s", "--method", "lsh", "-b", "8", "-o", files / "m.npz", "--split", "nosuch")
    assert_one_line_error(result, "--split", "nosuch")


def test_datasets_fetch_without_network(capsys, tmp_path, monkeypatch):
    import hardneg.datasets._download as download

    def offline(url, timeout=None):
        raise URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(download, "urlopen", offline)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    line = assert_one_line_error(run(capsys, "datasets", "fetch", "mnist"), "could not download", "name resolution")
    assert "[Errno" in line  # printed as text, not eaten as rich markup
    assert not (tmp_path / "cache" / "hardneg" / "mnist").exists()  # nothing half-downloaded is left


# ---------------------------------------------------------------- options


@pytest.mark.parametrize(
    "argv, option",
    [
        (["hash", "train", "{s}", "--method", "lsh", "-b", "0", "-o", "{out}"], "--bits"),
        (["hash", "train", "{s}", "--method", "lsh", "-b", "-3", "-o", "{out}"], "--bits"),
        (["hash", "train", "{s}", "--method", "lsh", "-b", "4097", "-o", "{out}"], "--bits"),
        (["hash", "train", "{s}", "--method", "lsh", "-b", "100000", "-o", "{out}"], "--bits"),
        (["hash", "train", "{s}", "--method", "pca-itq", "-b", "7", "-o", "{out}"], "--bits"),
        (["hash", "train", "{s}", "--method", "tsvm", "-b", "8", "--n-unlabeled", "-5", "-o", "{out}"], "--n-unlabeled"),
        (["hash", "train", "{s}", "--method", "tsvm", "-b", "8", "--cost", "-1", "-o", "{out}"], "--cost"),
        (["hash", "train", "{s}", "--method", "tsvm", "-b", "8", "--cost", "nan", "-o", "{out}"], "--cost"),
        (["hash", "train", "{s}", "--method", "tsvm", "-b", "8", "--cost", "inf", "-o", "{out}"], "--cost"),
        (["hash", "train", "{s}", "--method", "tsvm", "-b", "8", "--embedding", "foo", "-o", "{out}"], "--embedding"),
        (["hash", "train", "{s}", "--method", "foo", "-b", "8", "-o", "{out}"], "--method"),
        (["hash", "train", "{s}", "--method", "lsh", "-b", "8", "--seed", "-1", "-o", "{out}"], "--seed"),
        (["hash", "index", "{lsh}", "{s}", "--chunk-rows", "0", "-o", "{out}"], "--chunk-rows"),
        (["hash", "search", "{lsh}", "{idx}", "--query-npy", "{q}", "-k", "0"], "-k"),
        (["concept", "train", "{s}", "-c", "boat", "-o", "{out}", "-T", "0"], "--iterations"),
        (["concept", "train", "{s}", "-c", "boat", "-o", "{out}", "-T", "100000"], "--iterations"),
        (["concept", "train", "{s}", "-c", "boat", "-o", "{out}", "--bins", "-1"], "--bins"),
        (["concept", "train", "{s}", "-c", "boat", "-o", "{out}", "--bins", "5000"], "--bins"),
        (["concept", "train", "{s}", "-c", "boat", "-o", "{out}", "-p", "0"], "--positives"),
        (["concept", "train", "{s}", "-c", "boat", "-o", "{out}", "--candidates", "0"], "--candidates"),
        (["concept", "train", "{s}", "-c", "boat", "-o", "{out}", "--method", "foo"], "--method"),
        (["concept", "train", "{s}", "-c", "boat", "-o", "{out}", "--seed", "-2"], "--seed"),
        (["concept", "search", "{boat}", "{s}", "-k", "0"], "-k"),
        (["concept", "search", "{boat}", "{s}", "--chunk-rows", "0"], "--chunk-rows"),
        (["datasets", "import", "digits", "{out}", "--batch", "0"], "--batch"),
        (["extract", "dataset", "digits", "--out", "{out}", "--input-size", "33"], "--input-size"),
        (["extract", "dataset", "digits", "--out", "{out}", "--input-size", "0"], "--input-size"),
        (["extract", "dataset", "digits", "--out", "{out}", "--input-size", "100000"], "--input-size"),
        (["extract", "dataset", "digits", "--out", "{out}", "--threads", "0"], "--threads"),
        (["extract", "dataset", "digits", "--out", "{out}", "-f", "dsift", "--batch-size", "0"], "--batch-size"),
        (["extract", "dataset", "digits", "--out", "{out}", "-f", "dsift", "--n-words", "1"], "--n-words"),
        (["extract", "dataset", "digits", "--out", "{out}", "-f", "dsift", "--step", "0"], "--step"),
        (["extract", "dataset", "digits", "--out", "{out}", "-f", "dsift", "--sift-size", "8"], "--sift-size"),
        (["extract", "dataset", "digits", "--out", "{out}", "-f", "dsift", "--seed", "-1"], "--seed"),
        (["extract", "images", "{folder}", "--out", "{out}", "--input-size", "33"], "--input-size"),
        (["extract", "images", "{folder}", "--out", "{out}", "-f", "dsift", "--n-words", "0"], "--n-words"),
        (["extract", "images", "{folder}", "--out", "{out}", "-f", "dsift", "--fit-images", "0"], "--fit-images"),
        (["extract", "fashion-mnist", "--out", "{out}", "--limit", "-5"], "--limit"),
        (["extract", "fashion-mnist", "--out", "{out}", "--limit", "0"], "--limit"),
        (["extract", "fashion-mnist", "--out", "{out}", "--threads", "0"], "--threads"),
        (["concept", "train", "{s}", "-c", "boat", "-o", "{out}", "-T", "abc"], "--iterations"),
        (["concept", "train", "{s}", "-o", "{out}"], "--concept"),
        (["concept", "train", "{s}", "-c", "boat", "-o", "{out}", "--bogus"], "--bogus"),
    ],
)
def test_bad_option_is_refused_before_any_work(capsys, files, tmp_path, argv, option):
    out = tmp_path / "out"
    argv = [
        a.format(s=files / "s", out=out, lsh=files / "lsh.npz", idx=files / "idx.npz", q=files / "q.npy",
                 boat=files / "boat.npz", folder=files / "folder")
        for a in argv
    ]
    line = assert_one_line_error(run(capsys, *argv), option)
    assert not out.exists()  # refused up front: no store, model or index was started
    assert not any(name in line for name in PYTHON_NAMES), line


def test_typo_in_a_command_is_one_line(capsys):
    assert_one_line_error(run(capsys, "concept", "trian"), "No such command", "hardneg concept --help")


def test_bad_input_size_leaves_no_store(capsys, tmp_path):
    # It used to exit 0 after "skipping" every image, leaving an empty store behind.
    out = tmp_path / "e"
    assert_one_line_error(run(capsys, "extract", "dataset", "digits", "--out", out, "--input-size", "33"), "multiple of 32")
    assert not out.exists()


def test_efficientnet_refuses_bad_input_size_at_construction():
    pytest.importorskip("torch")
    from hardneg.features import EfficientNetLite0, TorchExtractor

    for size in (33, 16, 100):
        with pytest.raises(ValueError, match="input_size: EfficientNet-Lite0 needs a multiple of 32"):
            EfficientNetLite0(input_size=size)
    for size in (0, -32):
        with pytest.raises(ValueError, match="input_size"):
            EfficientNetLite0(input_size=size)
    with pytest.raises(TypeError, match="input_size"):
        TorchExtractor(None, input_size=33.5)
    assert EfficientNetLite0(input_size=32).input_size == 32


# ---------------------------------------------------------------- sizes


def test_bits_bound_end_to_end(capsys, files, tmp_path):
    out = tmp_path / "h.npz"
    assert_one_line_error(run(capsys, "hash", "train", files / "s", "--method", "lsh", "-b", "100000", "-o", out), "--bits", "4096")
    assert not out.exists()
    # The bound itself is accepted (sklsh: cheap at any length on a 6-d store).
    code, stdout, err = run(capsys, "hash", "train", files / "s", "--method", "sklsh", "-b", "4096", "-o", out)
    assert code == 0, err
    assert "4096 bits" in stdout and load_hasher(out).n_bits_ == 4096


def test_help_says_why_bits_are_bounded(capsys):
    code, out, _ = run(capsys, "hash", "train", "--help")
    assert code == 0 and "4096" in out


# ---------------------------------------------------------------- bugs keep their traceback


def test_genuine_bug_keeps_its_traceback(files, monkeypatch):
    def broken(*args, **kwargs):
        raise KeyError("a bug")

    monkeypatch.setattr(FeatureStore, "open", broken)
    with pytest.raises(KeyError):
        main(["store", "verify", str(files / "s")])  # opens the store (info reads meta.json only)


def test_io_fault_is_not_a_user_error(files, monkeypatch):
    def failing(*args, **kwargs):
        raise OSError(errno.EIO, "Input/output error", "chunk")

    monkeypatch.setattr(FeatureStore, "open", failing)
    with pytest.raises(OSError):
        main(["store", "verify", str(files / "s")])


def test_disk_full_is_a_user_error(capsys, files, monkeypatch):
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", "/data/s")

    monkeypatch.setattr(FeatureStore, "open", full)
    assert_one_line_error(run(capsys, "store", "verify", files / "s"), "/data/s: No space left on device")


def test_vv_shows_the_traceback(files):
    try:
        with pytest.raises(Exception, match="is a folder"):
            main(["-vv", "hash", "train", str(files / "s"), "--method", "lsh", "-b", "8", "-o", str(files / "folder")])
    finally:
        logging.getLogger().setLevel(logging.WARNING)


def test_rich_markup_in_a_message_is_printed_as_is(capsys, files):
    line = assert_one_line_error(run(capsys, "store", "info", files / "[red]x[/red]"))
    assert "[red]x[/red]" in line
