"""``hardneg datasets``: list the datasets, import one into a FeatureStore."""

from __future__ import annotations

from pathlib import Path

import typer

from ._console import console, task_progress
from ._inputs import check_output_dir
from ..exceptions import CLIError
from ._options import out_option

app = typer.Typer(help="List datasets and import them into FeatureStores.", invoke_without_command=True)


@app.callback()
def _list(ctx: typer.Context):
    """Without a subcommand: list the datasets and whether they are available here."""
    if ctx.invoked_subcommand is not None:
        return
    from rich.table import Table

    from ..datasets import list_datasets

    table = Table(title="hardneg datasets")
    for col in ("name", "samples", "features", "classes", "available", "where / how to get it"):
        table.add_column(col)
    for info in list_datasets():
        table.add_row(
            info.name,
            f"{info.n_samples:,}",
            str(info.n_features),
            str(info.n_classes),
            "[green]yes[/green]" if info.available else "[red]no[/red]",
            info.where if info.available else info.how_to_get,
        )
    console.print(table)


@app.command("import")
def import_(
    name: str = typer.Argument(..., help="Dataset name (see `hardneg datasets`), or xlsa17."),
    store: str = typer.Argument(
        None, metavar="STORE|DIR",
        help="FeatureStore directory to create; for xlsa17 the folder holding res101.mat and att_splits.mat.",
    ),
    out: str = out_option("FeatureStore directory to create (xlsa17: required).", default=None),
    overwrite: bool = typer.Option(False, help="Replace an existing store (and, for xlsa17, its descriptions CSV)."),
    batch: int = typer.Option(10_000, min=1, help="Rows per committed batch."),
):
    """Write a dataset's vectors, labels and split into a new FeatureStore.

    xlsa17 (a folder of res101.mat + att_splits.mat): `import xlsa17 DIR -o
    STORE` writes the features, class labels and names, splits (trainval ->
    train, test_seen / test_unseen -> test, and the tag xlsa17:<split>) and the
    class attribute table as STORE.descriptions.csv beside the store, for
    `hardneg zsl train STORE --descriptions STORE.descriptions.csv`.
    """
    from ..datasets import load
    from ..store import FeatureStore

    if name.strip().lower() == "xlsa17":
        return _import_xlsa17(store, out, overwrite, batch)
    if store is not None and out is not None:
        raise CLIError(f"give the store once: as STORE ({store}) or as -o ({out})")
    store = store if store is not None else out
    if store is None:
        raise CLIError(f"hardneg datasets import {name}: give the FeatureStore to create (STORE or -o STORE)")
    # Checked first: loading a large dataset takes a while.
    if Path(store).exists() and not overwrite:
        raise CLIError(f"{store} already exists; pass --overwrite to replace it")
    check_output_dir(store)
    data = load(name)
    n = data.X.shape[0]
    class_names = list(data.class_names) if data.class_names is not None else None
    with FeatureStore.create(store, dim=data.X.shape[1], overwrite=overwrite, attrs={"dataset": data.name, "class_names": class_names}) as fs:
        with task_progress(f"importing {name}", n) as advance:
            for lo in range(0, n, batch):
                hi = min(lo + batch, n)
                split = None if data.split is None else [str(s) for s in data.split[lo:hi]]
                tags = [[class_names[c]] for c in data.y[lo:hi]] if class_names else None
                fs.append(data.X[lo:hi], ids=[f"{data.name}-{i}" for i in range(lo, hi)], labels=data.y[lo:hi], split=split, tags=tags)
                advance(hi - lo)
    console.print(f"wrote {n:,} rows × {data.X.shape[1]} to {store}")


def _import_xlsa17(folder: str | None, out: str | None, overwrite: bool, batch: int) -> None:
    from ..datasets._xlsa17 import descriptions_path, import_xlsa17, load_xlsa17

    if folder is None or out is None:
        raise CLIError("hardneg datasets import xlsa17 DIR -o STORE: give the xlsa17 folder and the store to create")
    csv_path = descriptions_path(out)
    if not overwrite:
        for p in (Path(out), csv_path):
            if p.exists() or p.is_symlink():
                raise CLIError(f"{p} already exists; pass --overwrite to replace it")
    check_output_dir(out)
    n = load_xlsa17(folder).y.size  # checks the files before the store is touched
    with task_progress("importing xlsa17", n) as advance:
        store, csv_path = import_xlsa17(folder, out, overwrite=overwrite, batch=batch, progress=advance)
    console.print(f"wrote {n:,} rows to {store} and the class attributes to {csv_path}")


@app.command("fetch")
def fetch(name: str = typer.Argument(..., help="mnist or fashion-mnist")):
    """Download a dataset from its official address (needs internet) and verify checksums."""
    from ..datasets import fetch as fetch_dataset

    where = fetch_dataset(name)
    console.print(f"{name}: files verified in {where}")
