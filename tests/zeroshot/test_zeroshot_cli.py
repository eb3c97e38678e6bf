"""``hardneg zsl`` through a typer app built in the test."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.io
import typer
from typer.testing import CliRunner

pytest.importorskip("torch")


def _write_xlsa17(folder, seed=0):
    rng = np.random.default_rng(seed)
    C, a, d, per = 8, 6, 16, 20
    att = 3.0 * rng.random((C, a))
    y = np.repeat(np.arange(C), per)
    X = att[y] @ rng.normal(size=(a, d)) + 0.05 * rng.normal(size=(y.size, d))
    seen_rows = np.flatnonzero(y < 6)
    rng.shuffle(seen_rows)
    trainval, test_seen = seen_rows[:90], seen_rows[90:]
    unseen = np.flatnonzero(y >= 6)
    scipy.io.savemat(folder / "res101.mat", {"features": X.T, "labels": (y + 1)[:, None]})
    scipy.io.savemat(folder / "att_splits.mat", {
        "att": att.T, "trainval_loc": trainval[:, None] + 1, "test_seen_loc": test_seen[:, None] + 1,
        "test_unseen_loc": unseen[:, None] + 1,
        "allclasses_names": np.array([[f"c{i}"] for i in range(C)], dtype=object)})


def _app():
    from hardneg.cli.zsl import app as zsl_app

    app = typer.Typer()
    app.add_typer(zsl_app, name="zsl")
    return app


def test_train_and_eval(tmp_path):
    _write_xlsa17(tmp_path)
    runner = CliRunner()
    model = tmp_path / "m.npz"
    r = runner.invoke(_app(), ["zsl", "train", str(tmp_path), "-o", str(model), "--sampler", "uncertainty",
                               "--epochs", "5", "-n", "3"])
    assert r.exit_code == 0, r.output
    assert model.is_file()
    r = runner.invoke(_app(), ["zsl", "eval", str(model), str(tmp_path), "--json"])
    assert r.exit_code == 0, r.output
    scores = json.loads(r.output)
    assert set(scores) == {"zsl", "seen", "unseen", "harmonic"}
    r = runner.invoke(_app(), ["zsl", "eval", str(model), str(tmp_path)])
    assert "GZSC" in r.output


def test_user_errors(tmp_path):
    from hardneg.cli._common import CLIError

    _write_xlsa17(tmp_path)
    r = CliRunner().invoke(_app(), ["zsl", "train", str(tmp_path), "-o", str(tmp_path / "m.npz"), "--sampler", "correlation"])
    assert isinstance(r.exception, CLIError) and "per-image" in str(r.exception)
    r = CliRunner().invoke(_app(), ["zsl", "train", str(tmp_path / "missing"), "-o", str(tmp_path / "m.npz"), "--sampler", "random"])
    assert isinstance(r.exception, FileNotFoundError)
