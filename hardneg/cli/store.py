"""``hardneg store``: look inside a FeatureStore, and check it for damage."""

from __future__ import annotations

import typer
from rich.table import Table

from ._common import console

app = typer.Typer(help="Inspect FeatureStores.", no_args_is_help=True)


@app.command("info")
def info(path: str = typer.Argument(..., help="Store directory.")):
    """Rows, dimension, layout, splits and labels of a store."""
    from ..store import FeatureStore

    store = FeatureStore.open(path)
    items = store.items
    table = Table(title=str(store.path), show_header=False)
    table.add_row("rows", f"{len(store):,}")
    table.add_row("dim", str(store.dim))
    table.add_row("layout", "sparse CSR" if store.is_sparse else "dense float32")
    splits = items.column("split").value_counts().to_pylist()
    table.add_row("splits", ", ".join(f"{d['values']}: {d['counts']:,}" for d in splits) or "-")
    labels = store.labels()
    table.add_row("labelled rows", f"{int((labels >= 0).sum()):,} ({len(set(labels[labels >= 0].tolist()))} classes)")
    for key, value in store.attrs.items():
        table.add_row(f"attrs.{key}", str(value)[:80])
    console.print(table)


@app.command("verify")
def verify(path: str = typer.Argument(..., help="Store directory.")):
    """Check every chunk and item part against the checksums recorded at commit time.

    Prints OK, or one line per damaged chunk or part; exits with code 2 when
    anything is damaged (or the store cannot even be opened).
    """
    from ..store import FeatureStore

    report = FeatureStore.open(path).verify()
    console.print(str(report), highlight=False, markup=False, soft_wrap=True)
    if not report.ok:
        raise typer.Exit(code=2)
