"""Query images -> feature rows made the way a store's rows were made.

One implementation for every image query: the CLI's ``--query-image``
(:func:`hardneg.cli._inputs.extract_query_images`) and the service's uploads
(:class:`hardneg.serve._images.ImageQuery`) both call :class:`QueryFeatures`.
A store made by extracting images rebuilds its extractor from the settings
it records (:func:`~hardneg.features._extract.extractor_from_store`: the same
network, input size, normalization, codebook); a built-in pixel data set
(digits, MNIST, Fashion-MNIST, faces) turns an image into its grey pixels at
the data set's side and value range.
"""

from __future__ import annotations

import threading

import numpy as np

__all__ = ["PIXEL_DATASETS", "QueryFeatures", "pixel_scale"]

# Built-in data sets whose store rows are the image's pixels: value range of a pixel.
PIXEL_DATASETS = {"digits": 16.0, "mnist": 255.0, "mnist5k": 255.0, "fashion-mnist": 255.0, "faces": 1.0}

EXTRACTOR_KINDS = ("cnn", "bow", "vlad")


def pixel_scale(store) -> float | None:
    """Largest pixel value when the store's rows are raw square grey images, else None."""
    attrs = store.attrs
    if attrs.get("extractor") is not None or attrs.get("dataset") not in PIXEL_DATASETS:
        return None
    side = int(round(np.sqrt(store.dim)))
    return PIXEL_DATASETS[attrs["dataset"]] if side * side == store.dim and not store.is_sparse else None


class QueryFeatures:
    """Turn RGB images into feature rows the way ``store``'s rows were made.

    Parameters
    ----------
    store : FeatureStore
        The store the queries are searched in.
    model : str or path-like, optional
        A custom torch model's file, for a store made with one (see
        :func:`~hardneg.features._extract.extractor_from_store`).
    trust_model : bool, default=False
        Allow ``model`` to run the code in its file.
    num_threads : int, optional
        Threads of the extractor (None: its default).

    Attributes
    ----------
    kind : {"pixels", "cnn", "bow", "vlad"} or None
        How images become rows; None when the store records no extractor
        settings and is not a built-in pixel data set (:meth:`transform` then
        raises the ``ValueError`` of ``extractor_from_store`` naming why).
    """

    def __init__(self, store, *, model=None, trust_model: bool = False, num_threads: int | None = None):
        self.store = store
        self.model, self.trust_model, self.num_threads = model, trust_model, num_threads
        self.scale = pixel_scale(store)
        cfg = store.attrs.get("extractor")
        self.kind: str | None = None
        if self.scale is not None:
            self.kind = "pixels"
        elif isinstance(cfg, dict) and cfg.get("extractor") in EXTRACTOR_KINDS:
            self.kind = cfg["extractor"]
        self._extractor = None
        self._lock = threading.Lock()

    @property
    def available(self) -> bool:
        """Whether images can be turned into this store's rows."""
        return self.kind is not None

    @property
    def target_size(self) -> int | None:
        """The side the extractor resizes an image to (None: it uses the full image), so a
        decoder may shrink a large image on the way."""
        if self.kind == "pixels":
            return round(self.store.dim ** 0.5)
        cfg = self.store.attrs.get("extractor")
        if not isinstance(cfg, dict):
            return None
        if self.kind == "cnn":
            size = cfg.get("input_size")
        else:
            d = cfg.get("descriptor")
            if not isinstance(d, dict):
                d = {}
            size = d.get("resize_to") or d.get("max_side")
        return int(size) if isinstance(size, (int, float)) and size >= 1 else None

    def _build(self):
        from ._extract import extractor_from_store

        return extractor_from_store(self.store, model=self.model, trust_model=self.trust_model, num_threads=self.num_threads)

    def load(self):
        """The store's extractor, built on first use (it takes seconds); its errors propagate."""
        with self._lock:
            if self._extractor is None:
                self._extractor = self._build()
            return self._extractor

    def transform(self, images) -> np.ndarray:
        """Feature rows of ``images`` (RGB ``uint8`` arrays), dense float32 of shape (n, dim)."""
        if self.scale is not None:  # kind "pixels"
            from PIL import Image

            side = int(round(np.sqrt(self.store.dim)))
            rows = []
            for rgb in images:
                grey = Image.fromarray(np.asarray(rgb)).convert("L").resize((side, side), Image.Resampling.BILINEAR)
                rows.append((np.asarray(grey, np.float32) / 255.0 * self.scale).ravel())
            return np.asarray(rows, np.float32).reshape(len(rows), self.store.dim)
        extractor = self.load()
        with self._lock:  # torch / OpenCV models are not re-entrant
            X = extractor.transform(list(images))
        X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
        return np.asarray(X, np.float32)
