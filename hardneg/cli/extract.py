"""``hardneg extract``: images (folders, lists, datasets) to FeatureStores."""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer

from ._cluster import cluster_options
from ._console import console, task_progress
from ._inputs import check_output_dir
from ..exceptions import CLIError

app = typer.Typer(
    help="Extract CNN or dense-SIFT bag-of-words features from images into a FeatureStore (resumable).",
    no_args_is_help=True,
)


class Features(str, Enum):
    cnn = "cnn"
    dsift = "dsift"
    vlad = "vlad"


#: --n-words when not given: 1,024 words for a bag of words, 64 for VLAD (64 x 128 = 8,192-d, Zepeda & Pérez)
_DEFAULT_WORDS = {"dsift": 1024, "vlad": 64}


def _extractor(features: Features, *, input_size: int, l2: bool, threads: int | None, model: str | None, n_words: int,
               tfidf: bool, sparse: bool | None, step: int, seed: int, trust_model: bool = False, tree_branching: int | None = None):
    from ..features import VLAD, BagOfWords, DenseSift, EfficientNetLite0, TorchExtractor

    if features == Features.vlad:
        return VLAD(DenseSift(step=step), n_words=n_words, random_state=seed)
    if features == Features.cnn:
        if model is not None:
            return TorchExtractor(model, input_size=input_size, l2_normalize=l2, num_threads=threads, name=Path(model).name,
                                  trust_model=trust_model)
        return EfficientNetLite0(input_size=input_size, l2_normalize=l2, num_threads=threads)
    return BagOfWords(
        DenseSift(step=step), n_words=n_words, weighting="tfidf" if tfidf else "tf", normalize="l1", sparse=sparse, random_state=seed,
        tree_branching=tree_branching,
    )


def _report(summary) -> None:
    console.print(
        f"[green]{summary.store_path}[/green]: {summary.n_added:,} added, {summary.n_already:,} already there, "
        f"{summary.n_failed:,} skipped of {summary.n_inputs:,} inputs ({summary.seconds:.1f}s)",
        highlight=False,
        soft_wrap=True,
    )
    if summary.failed:
        console.print(f"[yellow]skipped {summary.n_failed} unreadable input(s):[/yellow]", highlight=False, soft_wrap=True)
        for item_id, reason in summary.failed:
            console.print(f"  {item_id}: {reason}", highlight=False, soft_wrap=True)


_OPT_FEATURES = typer.Option(
    Features.cnn, "--features", "-f",
    help="cnn: EfficientNet-Lite0 1280-d; dsift: dense-SIFT bag of visual words; vlad: dense-SIFT VLAD (--n-words x 128).",
)
_OPT_THREADS = typer.Option(None, "--threads", min=1, help="Torch threads for the CNN (default: torch's own).")
_OPT_SEED = typer.Option(0, "--seed", min=0, max=2**32 - 1, help="Seed of the codebook sample and k-means.")
# An input side past this costs GBs per batch for no gain (EfficientNet-Lite0's native side is 224).
_MAX_INPUT_SIZE = 2048
_MAX_WORDS = 2**21  # = hardneg.features MAX_WORDS: k-means past that runs for days
_TREE_FROM = 16384  # = hardneg.features._codebook._HNSW_FROM: beyond, flat k-means costs hours; a vocabulary tree minutes
_OPT_TREE = typer.Option(
    None, "--tree-branching", min=0, max=1024,
    help="dsift: learn the words as a vocabulary tree with this branching (--n-words must be a power of it); 0: flat k-means. "
    f"Default: a tree with branching 10 when --n-words is above {_TREE_FROM:,} and a power of 10 (10^5, 10^6), else flat k-means.",
)


def _words_for(features: Features, n_words: int | None, tfidf: bool, tree_branching: int | None) -> int:
    """``--n-words`` or its default for ``features``; the bag-of-words-only options refused for VLAD."""
    if features == Features.vlad:
        for flag, given in (("--tfidf", tfidf), ("--tree-branching", tree_branching is not None)):
            if given:
                raise CLIError(f"{flag} applies to --features dsift (a bag of words), not to vlad")
    return n_words or _DEFAULT_WORDS.get(features.value, 1024)


def _tree_branching(n_words: int, tree_branching: int | None) -> int | None:
    """The vocabulary-tree branching to use (None: flat k-means), checked before any work.

    >>> _tree_branching(100_000, None), _tree_branching(1024, None), _tree_branching(100, 10), _tree_branching(100_000, 0)
    (10, None, 10, None)
    """
    from ..features._vocab_tree import tree_depth

    if tree_branching == 0:
        return None
    if tree_branching is None:
        if n_words <= _TREE_FROM:
            return None
        try:
            tree_depth(n_words, 10)
        except ValueError:
            return None  # not a power of 10: flat k-means, as before
        return 10
    if tree_branching < 2:
        raise CLIError(f"--tree-branching: 0 (flat k-means) or at least 2, got {tree_branching}")
    try:
        tree_depth(n_words, tree_branching)
    except ValueError:
        raise CLIError(f"--tree-branching {tree_branching}: --n-words must be a power of it (e.g. {tree_branching ** 2:,} or "
                       f"{tree_branching ** 3:,}), got {n_words:,}") from None
    return tree_branching


def _check_input_size(features: Features, input_size: int, model: str | None = None) -> None:
    """Refuse a CNN input side before any work: a bad one would make every image "unreadable"."""
    if features != Features.cnn:
        return
    if not 1 <= input_size <= _MAX_INPUT_SIZE:
        raise CLIError(f"--input-size: must lie in 1..{_MAX_INPUT_SIZE}, got {input_size}")
    if model is None and input_size % 32:
        raise CLIError(f"--input-size: EfficientNet-Lite0 needs a multiple of 32 (32, 64, ..., 224), got {input_size}")


@app.command("images")
@cluster_options
def images(
    sources: list[str] = typer.Argument(
        None,
        help="Image folders or files. Ids are paths relative to each folder given (photos/cats/x.jpg -> cats/x.jpg), whichever "
        "folders are listed, so a rerun with more folders adds only the new images; the same id from two folders is refused.",
    ),
    out: str = typer.Option(..., "--out", "-o", help="Store folder to create or resume."),
    features: Features = _OPT_FEATURES,
    list_file: str = typer.Option(None, "--list", help="Text file with one image path per line (relative to the file's folder)."),
    labels_from_folders: bool = typer.Option(
        False, "--labels-from-folders",
        help="Label each image by its first sub-folder. The store records the class names; a rerun numbers new ones after them.",
    ),
    tags_from_folders: bool = typer.Option(
        False, "--tags-from-folders",
        help="Tag each image with every folder level of its id (animals/mammals/x.png -> animals, mammals): what "
        "`concept train -c` uses. --folder-tag-levels 1: the first sub-folder only.",
    ),
    folder_tag_levels: int = typer.Option(
        0, "--folder-tag-levels", min=0, help="With --tags-from-folders: tag with the first N folder levels only (0, the default: every level).",
    ),
    tags_csv: str = typer.Option(None, "--tags-csv", help="CSV of id,tags rows (tags separated by ';'; ids as stored, e.g. cats/x.jpg)."),
    labels_csv: str = typer.Option(None, "--labels-csv", help="CSV of id,label rows (a class name or number per image)."),
    input_size: int = typer.Option(224, "--input-size", help=f"CNN input side (a multiple of 32 for EfficientNet-Lite0, at most {_MAX_INPUT_SIZE})."),
    l2: bool = typer.Option(False, "--l2", help="l2-normalize CNN features."),
    model: str = typer.Option(
        None, "--model",
        help="A TorchScript (or torch.export .pt2) file to use instead of EfficientNet-Lite0. "
        "A model file is code: it runs with your permissions; needs --trust-model.",
    ),
    trust_model: bool = typer.Option(
        False, "--trust-model", help="Allow --model FILE to load: you trust the file as you would a program."
    ),
    n_words: int = typer.Option(
        None, "--n-words", min=2, max=_MAX_WORDS,
        help="Visual words: dsift (default 1,024; above 4,096 the store is sparse CSR) or vlad (default 64).",
    ),
    tfidf: bool = typer.Option(False, "--tfidf", help="TF-IDF weighting of visual words."),
    step: int = typer.Option(8, "--step", min=1, help="Dense-SIFT grid step in pixels."),
    n_fit_images: int = typer.Option(1000, "--fit-images", min=1, help="Images sampled to learn the codebook."),
    tree_branching: int = _OPT_TREE,
    batch_size: int = typer.Option(64, "--batch-size", min=1, help="Images per committed batch."),
    threads: int = _OPT_THREADS,
    seed: int = _OPT_SEED,
    overwrite: bool = typer.Option(False, "--overwrite", help="Rebuild the store instead of resuming it."),
    runner=None,
):
    """Extract features of image files (folders and/or a list) into a store; reruns skip what is done."""
    from ..features import extract_to_store, resolve_images
    from ..features._extract import check_unique_ids, images_from_folders

    if model is not None and not trust_model:
        raise CLIError(f"--model {model}: a model file runs code from the file; pass --trust-model if you trust it")
    _check_input_size(features, input_size, model)
    n_words = _words_for(features, n_words, tfidf, tree_branching)
    tree = _tree_branching(n_words, tree_branching) if features == Features.dsift else None
    check_output_dir(out, "--out")
    sources = list(sources or [])
    if not sources and list_file is None:
        raise CLIError("give image folders/files or --list FILE")
    for src in sources:
        if not Path(src).exists():
            raise CLIError(f"{src}: no such file or folder")
    # ids: relative to each folder, whichever folders are listed (a rerun with more folders finds the stored ones)
    paths, ids = images_from_folders(sources)
    if list_file is not None:
        lf = Path(list_file)
        if not lf.is_file():
            raise CLIError(f"--list {list_file}: no such file")
        for line in lf.read_text(encoding="utf-8").splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                paths.append(str(lf.parent / line))
                ids.append(line)
    if not paths:
        raise CLIError("no image files found in the given sources")
    check_unique_ids(ids, paths)
    items = resolve_images(paths, ids=ids)
    tags, labels = _tags_and_labels(items, tags_from_folders, tags_csv, labels_csv, labels_from_folders, folder_tag_levels)
    extractor = _extractor(features, input_size=input_size, l2=l2, threads=threads, model=model, n_words=n_words,
                           tfidf=tfidf, sparse=None, step=step, seed=seed, trust_model=trust_model, tree_branching=tree)
    with task_progress(f"extracting {features.value}", len(items)) as advance:
        # with --workers / --scheduler the batches after the first are extracted on the cluster
        summary = extract_to_store(
            paths, out, extractor, ids=ids, labels=labels, tags=tags,
            batch_size=batch_size, overwrite=overwrite, n_fit_images=n_fit_images, random_state=seed, progress=advance,
            runner=runner, model=model, trust_model=trust_model,
        )
    _report(summary)
    if summary.n_already and (tags is not None or labels is not None):
        console.print(f"[yellow]note:[/yellow] tags and labels went to the new images only; "
                      f"`hardneg store tag {out} ...` changes those of the {summary.n_already:,} already there",
                      highlight=False, soft_wrap=True)


def _tags_and_labels(items, tags_from_folders: bool, tags_csv: str | None, labels_csv: str | None, labels_from_folders: bool,
                     folder_tag_levels: int = 0):
    """Per-image tags and labels from the folder names and the CSV files (checked before any work).

    Labels by name (folders, a CSV of names) go to the store as names: it numbers them by the
    class names it records, so a rerun never re-numbers them; numeric CSV labels go as numbers.
    """
    from ..features._extract import folder_tags
    from ._inputs import read_id_csv, split_tags

    if labels_from_folders and labels_csv:
        raise CLIError("--labels-csv: give it or --labels-from-folders, not both")
    ids = [it.id for it in items]
    tags: list[list[str]] | None = None
    labels: list[str | None] | list[int] | None = None  # names, or class numbers from a numeric CSV
    if tags_from_folders:
        tags = folder_tags(ids, folder_tag_levels or None)
        if not any(tags):
            raise CLIError("--tags-from-folders: no image lies in a sub-folder of the given folder(s)")
    if tags_csv:
        rows = read_id_csv(tags_csv, "--tags-csv")
        unknown = sorted(set(rows) - set(ids))
        if unknown:
            raise CLIError(f"--tags-csv {tags_csv}: {len(unknown)} id(s) match no image, e.g. {', '.join(unknown[:3])} (ids look like {ids[0]!r})")
        tags = tags or [[] for _ in ids]
        tags = [list(dict.fromkeys(t + split_tags(rows.get(i, "")))) for t, i in zip(tags, ids)]
    if tags is not None:
        from ..store._items import tag_list

        for t, i in zip(tags, ids):
            try:
                tag_list(t, 0)
            except ValueError as exc:
                where = "--tags-csv" if tags_csv else "--tags-from-folders"
                raise CLIError(f"{where}: image {i}: {str(exc).split(': ', 1)[-1].replace('row 0 holds', 'has')}") from None
    if labels_from_folders:
        labels = [i.split("/", 1)[0] if "/" in i else None for i in ids]
    elif labels_csv:
        rows = read_id_csv(labels_csv, "--labels-csv")
        unknown = sorted(set(rows) - set(ids))
        if unknown:
            raise CLIError(f"--labels-csv {labels_csv}: {len(unknown)} id(s) match no image, e.g. {', '.join(unknown[:3])}")
        values = set(rows.values())
        if all(v.lstrip("-").isdigit() for v in values):
            labels = [int(rows[i]) if i in rows else -1 for i in ids]
            if any(v < -1 for v in labels):
                raise CLIError(f"--labels-csv {labels_csv}: class numbers are >= 0 (-1: unlabeled)")
        else:
            labels = [rows.get(i) or None for i in ids]
    return tags, labels


@app.command("dataset")
def dataset(
    name: str = typer.Argument(..., help="A dataset with images: digits, faces, mnist5k, mnist, fashion-mnist (see `hardneg datasets`)."),
    out: str = typer.Option(..., "--out", "-o", help="Store folder to create or resume."),
    features: Features = _OPT_FEATURES,
    input_size: int = typer.Option(96, "--input-size", help="CNN input side, a multiple of 32 (small dataset images are upscaled)."),
    l2: bool = typer.Option(False, "--l2", help="l2-normalize CNN features."),
    n_words: int = typer.Option(None, "--n-words", min=2, max=_MAX_WORDS, help="Visual words: dsift (default 1,024) or vlad (default 64)."),
    tfidf: bool = typer.Option(False, "--tfidf", help="TF-IDF weighting of visual words."),
    resize_to: int = typer.Option(
        64, "--sift-size", min=16, max=1024,
        help="Dense SIFT: resize images to this square side first (at least 16: a descriptor with 4-pixel bins spans 16 pixels).",
    ),
    step: int = typer.Option(4, "--step", min=1, help="Dense-SIFT grid step in pixels (after resizing)."),
    n_fit_images: int = typer.Option(
        1000, "--fit-images", min=1,
        help="Images sampled to learn the codebook (dsift); a tree needs at least --n-words descriptors among them.",
    ),
    tree_branching: int = _OPT_TREE,
    batch_size: int = typer.Option(256, "--batch-size", min=1, help="Images per committed batch."),
    threads: int = _OPT_THREADS,
    seed: int = _OPT_SEED,
    overwrite: bool = typer.Option(False, "--overwrite", help="Rebuild the store instead of resuming it."),
):
    """Extract features of a built-in dataset's images, with its labels and split."""
    from ..datasets import load
    from ..features import VLAD, BagOfWords, DenseSift, EfficientNetLite0, extract_to_store

    _check_input_size(features, input_size)
    n_words = _words_for(features, n_words, tfidf, tree_branching)
    tree = _tree_branching(n_words, tree_branching) if features == Features.dsift else None
    check_output_dir(out, "--out")
    ds = load(name)
    if ds.images is None:
        raise CLIError(f"dataset {name!r} has no images to extract features from")
    import numpy as np

    images = ds.images
    if images.dtype != np.uint8:
        # e.g. digits hold 0-16 floats: scale by the dataset's maximum, not per image.
        top = float(images.max()) or 1.0
        images = np.clip(np.rint(images.astype(np.float64) * (255.0 / top)), 0, 255).astype(np.uint8)
    if features == Features.cnn:
        extractor = EfficientNetLite0(input_size=input_size, l2_normalize=l2, resize="stretch", num_threads=threads)
    elif features == Features.vlad:
        extractor = VLAD(DenseSift(step=step, bin_sizes=(4, 6), resize_to=resize_to), n_words=n_words, random_state=seed)
    else:
        extractor = BagOfWords(DenseSift(step=step, bin_sizes=(4, 6), resize_to=resize_to), n_words=n_words,
                               weighting="tfidf" if tfidf else "tf", random_state=seed, tree_branching=tree)
    with task_progress(f"extracting {name} ({features.value})", len(ds.images)) as advance:
        summary = extract_to_store(
            images, out, extractor, labels=ds.y, split=None if ds.split is None else list(ds.split),
            batch_size=batch_size, overwrite=overwrite, n_fit_images=n_fit_images, random_state=seed, progress=advance,
            attrs={"dataset": name, "class_names": list(ds.class_names or [])},
        )
    _report(summary)


@app.command("fashion-mnist")
def fashion_mnist(
    features: Features = _OPT_FEATURES,
    out: str = typer.Option(None, "--out", "-o", help="Store folder (default: the cache, ~/.cache/hardneg/stores/fashion-mnist-<features>)."),
    data: str = typer.Option(None, "--data", help="Folder with the four Fashion-MNIST IDX files (default: found automatically)."),
    limit: int = typer.Option(None, "--limit", min=1, help="Only the first N images of each split (a trial run)."),
    threads: int = _OPT_THREADS,
    overwrite: bool = typer.Option(False, "--overwrite", help="Rebuild instead of resuming."),
):
    """Build (or finish) the cached Fashion-MNIST store: all 70,000 images, labels, train/test split.

    cnn: EfficientNet-Lite0 at 96x96, 1280-d (store `fashion-mnist-cnn`);
    dsift: 1,024-word dense-SIFT l1 histograms (store `fashion-mnist-dsift1024`);
    vlad: VLAD-64 over the same dense SIFT, 8,192-d (store `fashion-mnist-vlad64`).
    """
    from ..features import build_fashion_mnist_store, fashion_mnist_store_path

    target = check_output_dir(out, "--out") if out else fashion_mnist_store_path(features.value)
    with task_progress(f"fashion-mnist ({features.value})", 70000 if limit is None else 2 * limit) as advance:
        summary = build_fashion_mnist_store(
            features.value, path=target, data_path=data, limit=limit, num_threads=threads, overwrite=overwrite, progress=advance,
        )
    _report(summary)
