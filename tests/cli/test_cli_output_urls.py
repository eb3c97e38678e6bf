"""Outputs given as URLs (issue 39 item 7): refused with one line, nothing written under a ``file:`` folder."""

import numpy as np

from _helpers import assert_one_line_error, run_cli


def test_file_url_output_is_refused_and_nothing_is_written(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    np.save(tmp_path / "e.npy", np.random.default_rng(0).random((6, 3)).astype(np.float32))
    url = f"file://{tmp_path}/s.store"
    line = assert_one_line_error(run_cli(capsys, "store", "import", "e.npy", "-o", url), "--out", "local path")
    assert str(tmp_path / "s.store") in line
    assert run_cli(capsys, "store", "import", "e.npy", "-o", "s.store")[0] == 0
    assert_one_line_error(run_cli(capsys, "store", "quantize", "s.store", "-o", f"file://{tmp_path}/q.store"), "--out")
    assert_one_line_error(run_cli(capsys, "hash", "train", "s.store", "-o", "s3://bucket/m.npz"), "--out", "s3://")
    assert not (tmp_path / "file:").exists() and not (tmp_path / "q.store").exists()
    assert not (tmp_path / "s3:").exists()
