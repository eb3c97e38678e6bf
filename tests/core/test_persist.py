"""Portable model files: round trip and clear errors for bad files."""

import zipfile

import numpy as np
import pytest

from _helpers import flipped_byte_copies
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


# ---------------------------------------------------------------------- hostile files
# Hand-built archives: what a careless or hostile user can hand to load_model.
import io  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import tracemalloc  # noqa: E402

from hardneg._persist import ArraySpec, model_kind  # noqa: E402

_SCHEMA = {"w": ArraySpec("f", 2), "b": ArraySpec("f", 1), "names": ArraySpec("U", 1, optional=True)}


def _npy(array=None, *, header=None, data=b""):
    buf = io.BytesIO()
    if header is None:
        np.lib.format.write_array(buf, np.asarray(array), allow_pickle=True)
    else:
        np.lib.format.write_array_header_1_0(buf, header)
        buf.write(data)
    return buf.getvalue()


def _meta(kind="toy", version=1, meta=None, text=None):
    if text is None:
        text = json.dumps({"library": "hardneg", "kind": kind, "format_version": version, "meta": meta or {}})
    return _npy(np.frombuffer(text.encode() if isinstance(text, str) else text, dtype=np.uint8))


def _zip(path, entries, compression=zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w", compression=compression) as zf:
        for name, payload in entries:
            zf.writestr(name, payload)
    return path


def _valid(tmp_path):
    path = tmp_path / "m.npz"
    arrays = {"w": np.arange(12, dtype=np.float32).reshape(3, 4), "b": np.array([0.5, -1.0]),
              "names": np.array(["a", "bc", "déf"])}
    save_model(path, "toy", 1, arrays, {"C": 1.0, "classes": [0, 1], "name": "x"})
    return path, arrays


def _refused(path, match=None, schema=_SCHEMA):
    """Load must raise ModelFileError with one line and no numpy/pickle wording."""
    with pytest.raises(ModelFileError, match=match) as info:
        load_model(path, "toy", {1}, schema=schema)
    message = str(info.value)
    assert "\n" not in message and "allow_pickle" not in message
    return message


def test_round_trip_with_schema_and_checksums(tmp_path):
    path, arrays = _valid(tmp_path)
    loaded, meta = load_model(path, "toy", {1}, schema=_SCHEMA)
    assert set(loaded) == set(arrays)
    for k in arrays:
        np.testing.assert_array_equal(loaded[k], arrays[k])
        assert loaded[k].dtype == arrays[k].dtype
    assert meta == {"C": 1.0, "classes": [0, 1], "name": "x"}
    loaded["w"][0, 0] = 7.0  # arrays come back writable, as np.load gives them


def test_fortran_and_zero_size_arrays_round_trip(tmp_path):
    arrays = {"f": np.asfortranarray(np.arange(6.0).reshape(2, 3)), "e": np.zeros((0, 5), np.int8),
              "s": np.float64(3.5), "ids": np.zeros(0, dtype=str)}
    save_model(tmp_path / "m.npz", "toy", 1, arrays, {})
    loaded, _ = load_model(tmp_path / "m.npz", "toy", {1})
    for k, v in arrays.items():
        np.testing.assert_array_equal(loaded[k], v)
        assert loaded[k].shape == np.shape(v)


def test_zip_bomb_is_refused_unread(tmp_path):
    # 16 MiB of zeros deflate to ~16 KiB; the entry declares (and would inflate to) 16 MiB
    path = tmp_path / "bomb.npz"
    n = 1 << 21
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("__meta__.npy", _meta(), compress_type=zipfile.ZIP_STORED)
        with zf.open("w.npy", "w", force_zip64=True) as fh:
            fh.write(_npy(header={"descr": "<f8", "fortran_order": False, "shape": (n,)}))
            zero = bytes(1 << 20)
            for _ in range(8 * n // len(zero)):
                fh.write(zero)
    assert path.stat().st_size < 1 << 20
    tracemalloc.start()
    try:
        _refused(path, "'w.npy' is compressed", schema=None)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20  # nothing was inflated


def test_npy_header_claiming_800_gb(tmp_path):
    header = {"descr": "<f8", "fortran_order": False, "shape": (100_000_000_000,)}
    path = _zip(tmp_path / "m.npz", [("__meta__.npy", _meta()), ("w.npy", _npy(header=header, data=bytes(64)))])
    _refused(path, "800,000,000,000 bytes", schema=None)
    # the same claim with a (patched) directory that agrees with it: more than the file holds
    big = 100_000_000_000 * 8 + 128
    raw = bytearray(path.read_bytes())
    cd = raw.rfind(b"PK\x01\x02")  # the last central directory record is w.npy's
    raw[cd + 20 : cd + 28] = (0xFFFFFFFF).to_bytes(4, "little") * 2
    raw[cd + 20 : cd + 24] = (big & 0xFFFFFFFF).to_bytes(4, "little")
    raw[cd + 24 : cd + 28] = (big & 0xFFFFFFFF).to_bytes(4, "little")
    path.write_bytes(bytes(raw))
    _refused(path, schema=None)


def test_directory_size_larger_than_the_file(tmp_path):
    path, _ = _valid(tmp_path)
    raw = bytearray(path.read_bytes())
    cd = raw.find(b"PK\x01\x02")
    name_len = int.from_bytes(raw[cd + 28 : cd + 30], "little")
    assert raw[cd + 46 : cd + 46 + name_len].endswith(b".npy")
    for field in (20, 24):  # compressed and uncompressed size of the first entry
        raw[cd + field : cd + field + 4] = (1 << 31).to_bytes(4, "little")
    path.write_bytes(bytes(raw))
    _refused(path)


@pytest.mark.parametrize("depth", [40, 100_000])
def test_deeply_nested_metadata(tmp_path, depth):
    text = '{"library": "hardneg", "kind": "toy", "format_version": 1, "meta": {"x": ' + "[" * depth + "]" * depth + "}}"
    path = _zip(tmp_path / "m.npz", [("__meta__.npy", _meta(text=text))])
    _refused(path, "nested", schema=None)
    with pytest.raises(ModelFileError, match="nested"):
        model_kind(path)


def test_brackets_inside_strings_are_not_nesting(tmp_path):
    meta = {"s": "[" * 1000 + '\\"{' * 100}
    save_model(tmp_path / "m.npz", "toy", 1, {}, meta)
    assert load_model(tmp_path / "m.npz", "toy", {1})[1] == meta


@pytest.mark.parametrize(
    "text, message",
    [
        ("[1, 2]", "not a hardneg"),
        ('{"library": "hardneg", "kind": "toy", "format_version": 1, "meta": [1]}', "not a JSON object"),
        ('{"library": "other"}', "not a hardneg"),
        ("{" + " " * (1 << 20) + "}", "metadata"),
        (b"\xff\xfe{}", "metadata"),
        ('{"library": "hardneg", "kind": "toy", "format_version": true}', "version"),
        ('{"library": "hardneg", "kind": "toy", "format_version": 1, "meta": {"x": ' + "1" * 5000 + "}}", "metadata"),
    ],
)
def test_bad_metadata(tmp_path, text, message):
    path = _zip(tmp_path / "m.npz", [("__meta__.npy", _meta(text=text))])
    _refused(path, message, schema=None)


def test_pickle_payloads_are_refused_without_numpy_wording(tmp_path):
    evil = np.array([{"a": 1}, print], dtype=object)
    for name in ("w", "__meta__"):
        entries = [("__meta__.npy", _meta()), ("b.npy", _npy(np.ones(2)))]
        entries = [(n, p) for n, p in entries if n != f"{name}.npy"] + [(f"{name}.npy", _npy(evil))]
        path = _zip(tmp_path / f"{name}.npz", entries)
        message = _refused(path, "object" if name == "w" else None, schema=None)
        assert "allow_pickle" not in message
    # a structured dtype may hide objects too
    rec = np.zeros(2, dtype=[("a", "f4"), ("b", "i4")])
    path = _zip(tmp_path / "rec.npz", [("__meta__.npy", _meta()), ("w.npy", _npy(rec))])
    _refused(path, "dtype", schema=None)


@pytest.mark.parametrize(
    "entries, message",
    [
        ([("w.npy", "w"), ("b.npy", "b"), ("extra.npy", "b")], "unexpected"),
        ([("w.npy", "w")], "lacks array"),
        ([("w.npy", "b"), ("b.npy", "b")], "dimension"),
        ([("w.npy", "i"), ("b.npy", "b")], "expected kind"),
        ([("w.npy", "w"), ("b.npy", "b"), ("../evil.npy", "b")], "not an array name"),
        ([("w.npy", "w"), ("b.npy", "b"), ("sub/b.npy", "b")], "not an array name"),
        ([("w.npy", "w"), ("b.npy", "b"), ("/abs.npy", "b")], "not an array name"),
        ([("w.npy", "w"), ("b.npy", "b"), ("notes.txt", "b")], "not an array name"),
        ([("w.npy", "w"), ("b.npy", "b"), ("b.npy", "b")], "twice"),
    ],
)
def test_unexpected_entries(tmp_path, entries, message):
    payloads = {"w": _npy(np.ones((2, 2))), "b": _npy(np.ones(2)), "i": _npy(np.ones((2, 2), int))}
    path = tmp_path / "m.npz"
    with pytest.warns(UserWarning) if message == "twice" else _no_warning():
        _zip(path, [("__meta__.npy", _meta())] + [(n, payloads[p]) for n, p in entries])
    _refused(path, message)


def _no_warning():
    import contextlib

    return contextlib.nullcontext()


def test_too_many_entries_without_schema(tmp_path):
    entries = [("__meta__.npy", _meta())] + [(f"a{i}.npy", _npy(np.ones(1))) for i in range(100)]
    _refused(_zip(tmp_path / "m.npz", entries), "entries", schema=None)


def test_encrypted_flag_is_refused(tmp_path):
    path, _ = _valid(tmp_path)
    raw = bytearray(path.read_bytes())
    cd = raw.find(b"PK\x01\x02")
    raw[cd + 8] |= 0x1
    path.write_bytes(bytes(raw))
    _refused(path, "encrypted")


def test_files_without_checksums_still_load_with_a_warning(tmp_path, caplog):
    path = _zip(tmp_path / "old.npz", [("__meta__.npy", _meta(meta={"C": 2.0})), ("w.npy", _npy(np.ones((2, 2)))),
                                       ("b.npy", _npy(np.zeros(2)))])
    with caplog.at_level(logging.WARNING, logger="hardneg._persist"):
        arrays, meta = load_model(path, "toy", {1}, schema=_SCHEMA)
    assert meta == {"C": 2.0} and arrays["w"].shape == (2, 2)
    assert "checksum" in caplog.text


def _rewrite(path, change_arrays=None, change_header=None):
    """Re-zip a valid file with an edit (so the zip CRCs are right but the checksums are not)."""
    with zipfile.ZipFile(path) as zf:
        entries = {n[:-4]: np.load(io.BytesIO(zf.read(n))) for n in zf.namelist()}
    header = json.loads(entries.pop("__meta__").tobytes())
    if change_arrays:
        change_arrays(entries)
    if change_header:
        change_header(header)
    entries["__meta__"] = np.frombuffer(json.dumps(header).encode(), np.uint8)
    np.savez(path, **entries)


@pytest.mark.parametrize(
    "change_arrays, change_header, message",
    [
        (lambda a: a["w"].__setitem__((0, 0), 99.0), None, "'w' does not match its checksum"),
        (lambda a: a.__setitem__("b", a["b"][:1]), None, "'b' does not match its checksum"),
        (lambda a: a.pop("names"), None, "do not list"),
        (None, lambda h: h["meta"].__setitem__("C", 2.0), "parameters do not match"),
        (None, lambda h: h["checksum"].__setitem__("algorithm", "crc"), "unknown checksum"),
        (None, lambda h: h.__setitem__("checksum", [1]), "unknown checksum"),
    ],
)
def test_edited_files_fail_their_checksums(tmp_path, change_arrays, change_header, message):
    path, _ = _valid(tmp_path)
    _rewrite(path, change_arrays, change_header)
    _refused(path, message)


def test_truncated_anywhere(tmp_path):
    path, _ = _valid(tmp_path)
    raw = path.read_bytes()
    for n in list(range(0, len(raw), 37)) + [len(raw) - 1]:
        path.write_bytes(raw[:n])
        _refused(path)


def test_flipped_bytes_fuzz(tmp_path):
    """Every single-byte change to a valid file loads the same content or raises ModelFileError."""
    path, arrays = _valid(tmp_path)
    raw = path.read_bytes()
    refused = 0
    for _ in flipped_byte_copies(raw, path, 200, seed=0):
        for load in (lambda: load_model(path, "toy", {1}, schema=_SCHEMA), lambda: load_model(path, "toy", {1})):
            try:
                loaded, meta = load()
            except ModelFileError as exc:
                assert "\n" not in str(exc)
                refused += 1
                continue
            assert meta == {"C": 1.0, "classes": [0, 1], "name": "x"}
            assert set(loaded) == set(arrays)
            for k in arrays:
                np.testing.assert_array_equal(loaded[k], arrays[k])
        try:
            assert model_kind(path) == "toy"
        except ModelFileError:
            pass
    assert refused > 100


def test_save_refuses_what_load_would_refuse(tmp_path):
    with pytest.raises(ValueError, match="name"):
        save_model(tmp_path / "m.npz", "toy", 1, {"../x": np.ones(1)}, {})
    with pytest.raises(TypeError, match="meta"):
        save_model(tmp_path / "m.npz", "toy", 1, {}, [1, 2])
    with pytest.raises(TypeError, match="dtype"):
        save_model(tmp_path / "m.npz", "toy", 1, {"t": np.array(["2020-01-01"], dtype="datetime64[D]")}, {})
    nested = []
    for _ in range(40):
        nested = [nested]
    with pytest.raises(ValueError, match="nested"):
        save_model(tmp_path / "m.npz", "toy", 1, {}, {"x": nested})
    assert not list(tmp_path.iterdir())
