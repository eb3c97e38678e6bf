"""``hardneg datasets``: list the datasets, import one into a FeatureStore."""

from __future__ import annotations

from pathlib import Path

import typer

from ._common import CLIError, check_output_dir, console, task_progress

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
    name: str = typer.Argument(..., help="Dataset name (see `hardneg datasets`)."),
    store: str = typer.Argument(..., metavar="STORE", help="FeatureStore directory to create."),
    overwrite: bool = typer.Option(False, help="Replace an existing store."),
    batch: int = typer.Option(10_000, min=1, help="Rows per committed batch."),
):
    """Write a dataset's vectors, labels and split into a new FeatureStore."""
    from ..datasets import load
    from ..store import FeatureStore

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


@app.command("fetch")
def fetch(name: str = typer.Argument(..., help="mnist or fashion-mnist")):
    """Download a dataset from its official address (needs internet) and verify checksums."""
    from ..datasets import fetch as fetch_dataset

    where = fetch_dataset(name)
    console.print(f"{name}: files verified in {where}")
