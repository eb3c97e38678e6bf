"""``hardneg zsl`` through a typer app built in the test."""

from __future__ import annotations

import json

import pytest
import typer
from _helpers import write_xlsa17 as _write_xlsa17
from typer.testing import CliRunner

pytest.importorskip("torch")


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
    from hardneg.zeroshot import load_zero_shot

    trained = load_zero_shot(model)
    assert trained.lr == "auto" and trained.n_epochs == 5 and trained.n_epochs_ <= 5  # --epochs is the cap
    r = runner.invoke(_app(), ["zsl", "train", str(tmp_path), "-o", str(tmp_path / "m2.npz"), "--epochs", "2",
                               "--lr", "0.001"])
    assert r.exit_code == 0, r.output
    assert load_zero_shot(tmp_path / "m2.npz").lr_["W_A"] == 0.001
    r = runner.invoke(_app(), ["zsl", "eval", str(model), str(tmp_path), "--json"])
    assert r.exit_code == 0, r.output
    scores = json.loads(r.output)
    assert set(scores) == {"zsl", "seen", "unseen", "harmonic"}
    r = runner.invoke(_app(), ["zsl", "eval", str(model), str(tmp_path)])
    assert "GZSC" in r.output


def test_user_errors(tmp_path):
    from hardneg.exceptions import CLIError

    _write_xlsa17(tmp_path)
    for bad in ("fast", "0", "-1", "nan"):
        r = CliRunner().invoke(_app(), ["zsl", "train", str(tmp_path), "-o", str(tmp_path / "m.npz"), "--lr", bad])
        assert isinstance(r.exception, CLIError) and "--lr" in str(r.exception), bad
    r = CliRunner().invoke(_app(), ["zsl", "train", str(tmp_path), "-o", str(tmp_path / "m.npz"), "--sampler", "correlation"])
    assert isinstance(r.exception, CLIError) and "per-image" in str(r.exception)
    r = CliRunner().invoke(_app(), ["zsl", "train", str(tmp_path / "missing"), "-o", str(tmp_path / "m.npz"), "--sampler", "random"])
    assert isinstance(r.exception, FileNotFoundError)
