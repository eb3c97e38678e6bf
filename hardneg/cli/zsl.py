"""``hardneg zsl``: zero-shot classification by metric learning with hard negative mining."""

from __future__ import annotations

import typer

from ._common import CLIError, check_output_file, check_result_outputs, console, emit_results
from ._options import csv_option, html_option, json_option, out_option

app = typer.Typer(help="Zero-shot classification by metric learning (Bucher, Herbin & Jurie 2016) on xlsa17 data (res101.mat + att_splits.mat).",
                  no_args_is_help=True)


@app.command("train")
def train(
    data: str = typer.Argument(..., metavar="DATA", help="Folder with the xlsa17 files res101.mat and att_splits.mat."),
    out: str = out_option("Model file to write (.npz)."),
    sampler: str = typer.Option("uncertainty", "--sampler", help="random, uncertainty ([Bucher16] Eq. (8)); correlation ([Bucher16] Eq. (9)-(10)) needs per-image attributes, which xlsa17 lacks."),
    n_negatives: int = typer.Option(10, "--n-negatives", "-n", help="Negative pairs per positive pair."),
    m: int = typer.Option(16, "--m", help="Columns of the metric W_A."),
    lam: float = typer.Option(0.1, "--lam", help="λ: weight of the attribute regression ([Bucher16] Eq. (6))."),
    mu: float = typer.Option(1e-4, "--mu", help="μ: weight of the regularizer ([Bucher16] Eq. (6))."),
    epochs: int = typer.Option(20, "--epochs", help="Training epochs."),
    lr: float = typer.Option(0.01, "--lr", help="SGD step size."),
    seed: int = typer.Option(0, "--seed", help="Random seed."),
):
    """Train on the trainval split (seen classes) and save the model."""
    from ..datasets import load_xlsa17
    from ..zeroshot import ZeroShotClassifier

    check_output_file(out, "--out", inputs=(data,))
    ds = load_xlsa17(data)
    if sampler == "correlation":
        raise CLIError("--sampler correlation needs per-image attribute vectors; xlsa17 gives one vector per class: use uncertainty")
    rows = ds.splits["trainval"]
    clf = ZeroShotClassifier(sampler=sampler, n_negatives=n_negatives, m=m, lam=lam, mu=mu, n_epochs=epochs, lr=lr,
                             random_state=seed)
    clf.fit(ds.X[rows], ds.y[rows], ds.class_attributes)
    clf.save(out)
    console.print(f"trained on {rows.size:,} images of {clf.classes_.size} seen classes; saved to {out}")


@app.command("eval")
def evaluate(
    model: str = typer.Argument(..., metavar="MODEL", help="Model file from `hardneg zsl train`."),
    data: str = typer.Argument(..., metavar="DATA", help="Folder with the xlsa17 files."),
    as_json: bool = json_option(),
    csv_out: str = csv_option(),
    html_out: str = html_option(),
):
    """ZSC accuracy on test_unseen; GZSC seen / unseen / harmonic mean with test_seen."""
    import numpy as np

    from ..datasets import load_xlsa17
    from ..zeroshot import load_zero_shot, zero_shot_scores

    check_result_outputs(as_json, csv_out, html_out, inputs=(data, model))
    ds = load_xlsa17(data)
    clf = load_zero_shot(model)
    if clf.n_features_in_ != ds.X.shape[1]:
        raise CLIError(f"{model} expects {clf.n_features_in_} features, {data} has {ds.X.shape[1]}")
    rows = np.concatenate([ds.splits["test_unseen"], ds.splits["test_seen"]])
    scores = zero_shot_scores(clf, ds.X[rows], ds.y[rows], ds.class_attributes, unseen_classes=ds.unseen_classes)
    if as_json or csv_out or html_out:
        emit_results(dict(scores), title=f"{model} on {data}", as_json=as_json, csv_out=csv_out, html_out=html_out, figures=True)
    if as_json or csv_out == "-":
        return
    console.print(f"ZSC mean per-class accuracy (unseen): {100 * scores['zsl']:.2f}")
    if "harmonic" in scores:
        console.print(f"GZSC seen {100 * scores['seen']:.2f}  unseen {100 * scores['unseen']:.2f}  H {100 * scores['harmonic']:.2f}")
