"""``hardneg serve STORE``: the search service and web page (uvicorn); ``hardneg serve-demo``."""

from __future__ import annotations

from pathlib import Path

import typer

from ._console import console
from ..exceptions import CLIError
from .concept import _DEFAULT_T  # = hardneg.concept.DEFAULT_N_ITER, shared by CLI and service

_TOKEN_HELP = "Token for state-changing endpoints (train, feedback, delete); required when --host is not loopback."


_THREADS, _MAX_UPLOAD_MB = 2, 8.0  # the defaults of --threads and --max-upload-mb (serve-demo uses them too)


def _run(store: str, host: str, port: int, token: str | None, models_dir: str | None, *, workers: int = _THREADS,
         max_upload_mb: float = _MAX_UPLOAD_MB, iterations: int = _DEFAULT_T, nprobe: int | None = None,
         batch_window_ms: float = 1.0, max_batch: int = 64, batch_workers: int = 2, allowed_hosts: list[str] | None = None,
         mode_files: dict | None = None) -> None:
    """Check what the service needs, build its settings once (:func:`hardneg.serve.create_app`), run it."""
    import uvicorn

    from ..serve import create_app
    from ..serve._state import default_models_dir

    if not Path(store).is_dir():
        raise CLIError(f"{store}: no such FeatureStore folder")
    mode_files = {k: v for k, v in (mode_files or {}).items() if v is not None}
    for key, path in mode_files.items():
        if not Path(path).is_file():
            raise CLIError(f"--{key.replace('_', '-')} {path}: no such file")
    folder = Path(models_dir) if models_dir else default_models_dir(store)  # the one place it is worked out
    if ("hasher" in mode_files) != ("index" in mode_files):
        given, other, name = (("--hasher", "--index", "hamming.index") if "hasher" in mode_files
                              else ("--index", "--hasher", "hasher.npz"))
        if not (folder / name).is_file():
            raise CLIError(f"{given}: Hamming mode needs a hasher and an index; give {other} too (the models folder "
                           f"has no {name})")
    try:
        app = create_app(store, models_dir=folder, token=token or None, host=host, workers=workers,
                         max_upload_bytes=int(max_upload_mb * 2**20), concept_iterations=iterations,
                         nprobe=nprobe, batch_window_ms=batch_window_ms, max_batch=max_batch,
                         batch_workers=batch_workers, allowed_hosts=allowed_hosts or None,
                         mode_files=mode_files or None)
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    shown = f"[{host}]" if ":" in host else host
    console.print(f"serving {store} on http://{shown}:{port}/  (API docs: http://{shown}:{port}/docs)")
    uvicorn.run(app, host=host, port=port, log_level="info")


def serve(
    store: str = typer.Argument(..., metavar="STORE", help="FeatureStore to serve."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (loopback unless told otherwise)."),
    port: int = typer.Option(8000, "--port", min=1, max=65535, help="TCP port."),
    token: str | None = typer.Option(None, "--token", envvar="HARDNEG_TOKEN", help=_TOKEN_HELP),
    models_dir: str | None = typer.Option(None, "--models", help="Models folder (default <STORE>.models beside the store)."),
    threads: int = typer.Option(_THREADS, "--threads", min=1, max=32, help="Threads for training jobs."),
    max_upload_mb: float = typer.Option(_MAX_UPLOAD_MB, "--max-upload-mb", min=0.01, max=1024, help="Largest accepted image upload."),
    iterations: int = typer.Option(_DEFAULT_T, "--iterations", "-T", min=1, max=100,
                                   help="Negative Bootstrap iterations T per concept (as `concept train`)."),
    nprobe: int | None = typer.Option(None, "--nprobe", min=1, help="Approximate Hamming index (hardneg hash index "
                                      "--nlist): lists scanned per query (default: the one saved with the index)."),
    batch_window_ms: float = typer.Option(1.0, "--batch-window-ms", min=0, max=1000, help="Micro-batching: wait this "
                                          "long for concurrent Hamming queries to search them in one call."),
    max_batch: int = typer.Option(64, "--max-batch", min=1, max=4096, help="Most Hamming queries per search call "
                                  "(1: no batching)."),
    batch_workers: int = typer.Option(2, "--batch-workers", min=1, max=64, help="Hamming batches searched at the "
                                      "same time (threads)."),
    allowed_hosts: list[str] | None = typer.Option(None, "--allowed-host", help="Another name clients may reach the "
                                                   "server by (Host header; repeatable). Accepted anyway: localhost, "
                                                   "127.0.0.1, ::1 and --host; other names get 400."),
    hasher: str | None = typer.Option(None, "--hasher", help="Hamming mode: the hasher file (hardneg hash train -o), "
                                      "instead of <models>/hasher.npz."),
    index: str | None = typer.Option(None, "--index", help="Hamming mode: the index file (hardneg hash index -o; its "
                                     "FILE.ids.npz sidecar beside it), instead of <models>/hamming.index."),
    similarity_index: str | None = typer.Option(None, "--similarity-index", help="SOLIS mode: the inverted index "
                                                "(hardneg similarity index -o), instead of <models>/inverted.npz."),
):
    """Serve query by example, concept search with relevance feedback, and the web page.

    \b
    Search modes and the files they need, looked up in the models folder
    (--models; default <STORE>.models beside the store):
      cosine   always available (exact cosine over the store's vectors)
      hamming  hasher.npz (hardneg hash train -o) + hamming.index and its
               sidecar hamming.index.ids.npz (hardneg hash index -o FILE
               writes FILE and FILE.ids.npz: keep them together);
               or --hasher FILE --index FILE (the sidecar beside FILE)
      solis    inverted.npz (hardneg similarity index -o),
               or --similarity-index FILE
    Saved concept models: <models>/concepts/<name>.npz.
    """
    _run(store, host, port, token, models_dir, workers=threads, max_upload_mb=max_upload_mb, iterations=iterations,
         nprobe=nprobe, batch_window_ms=batch_window_ms, max_batch=max_batch, batch_workers=batch_workers,
         allowed_hosts=allowed_hosts, mode_files={"hasher": hasher, "index": index, "similarity_index": similarity_index})


def serve_demo(
    out: str = typer.Option("serve-demo", "--out", "-o", help="Folder for the demo store and its models."),
    dataset: str = typer.Option("digits", "--dataset", help="digits (built in) or fashion-mnist."),
    limit: int | None = typer.Option(None, "--limit", min=100, help="Use only the first N items."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind."),
    port: int = typer.Option(8000, "--port", min=1, max=65535, help="TCP port."),
    token: str | None = typer.Option(None, "--token", envvar="HARDNEG_TOKEN", help=_TOKEN_HELP),
):
    """Build a demo store with a TSVM hasher + Hamming index (once) and serve it."""
    from ..demos.service import DEMO_DATASETS, build_demo_store

    if dataset not in DEMO_DATASETS:
        raise CLIError(f"--dataset: expected one of {', '.join(DEMO_DATASETS)}, got {dataset!r}")
    with console.status("building the demo store and its TSVM Hamming index"):
        store, _ = build_demo_store(out, dataset=dataset, limit=limit)
    _run(str(store), host, port, token, None)
