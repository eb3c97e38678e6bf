"""Dense SIFT: OpenCV SIFT descriptors on a regular grid at several scales.

The Negative Bootstrap paper (Li, Snoek et al., TMM 2013, Sec. V-A) builds
its 1,024-bin histograms from SIFT computed densely rather than at detected
keypoints; VLFeat's PHOW is the usual recipe: upright descriptors every
``step`` pixels at several spatial-bin sizes. OpenCV describes a keypoint of
diameter ``size`` with 4 x 4 spatial bins each ``1.5 * size`` pixels wide
(``SIFT_DESCR_SCL_FCTR = 3`` times the radius), so a PHOW bin size ``b``
is the keypoint size ``b / 1.5`` and the descriptor covers ``4 b`` pixels.
Keypoints are placed only where that window lies inside the image.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .._validation import check_positive_int
from ._images import to_gray
from hardneg._extras import install_hint

if TYPE_CHECKING:
    import cv2

logger = logging.getLogger(__name__)

__all__ = ["DenseSift"]

_CELL_PER_SIZE = 1.5  # OpenCV: spatial bin width = SIFT_DESCR_SCL_FCTR * size / 2


def _require_cv2():
    try:
        import cv2
    except ImportError as exc:
        raise ImportError(f"dense SIFT needs OpenCV: {install_hint('bow')} (opencv-python-headless)") from exc
    return cv2


_KEYPOINT_CACHE = 64  # image sizes whose keypoints are kept (photos come in many sizes)


class DenseSift:
    """Upright SIFT descriptors on a dense multi-scale grid.

    Parameters
    ----------
    step : int
        Grid spacing in pixels (after resizing).
    bin_sizes : sequence of int
        Spatial-bin widths in pixels, one scale each (VLFeat PHOW uses
        4, 6, 8, 10); the descriptor window is 4 bins wide.
    max_side : int or None
        Images whose longer side exceeds it are downscaled to it first
        (bounds the cost per image for large photos).
    resize_to : int or None
        Resize every image to this square side first (for tiny images such
        as 28x28 Fashion-MNIST, which need upscaling to hold a grid).
    drop_flat : bool
        Drop descriptors of flat patches (all-zero SIFT vectors): they carry
        no gradient and would all fall in one word.
    root_sift : bool
        Return RootSIFT (square root of the l1-normalized descriptor),
        which makes Euclidean k-means approximate the Hellinger kernel.

    Examples
    --------
    >>> import numpy as np
    >>> from skimage import data
    >>> d = DenseSift(step=16, bin_sizes=(4, 8), max_side=128).describe([data.camera()])
    >>> d[0].shape[1], d[0].dtype
    (128, dtype('float32'))
    """

    def __init__(
        self,
        *,
        step: int = 8,
        bin_sizes: Sequence[int] = (4, 6, 8),
        max_side: int | None = 320,
        resize_to: int | None = None,
        drop_flat: bool = True,
        root_sift: bool = False,
    ):
        self.step = step
        self.bin_sizes = bin_sizes
        self.max_side = max_side
        self.resize_to = resize_to
        self.drop_flat = drop_flat
        self.root_sift = root_sift
        self._sift: cv2.SIFT | None = None  # made on first use
        # OpenCV keypoints per (image size, grid settings): building them anew for every image of one size
        # was a fair share of describing a small one
        self._keypoints: dict[tuple, tuple] = {}

    dim = 128

    def check_params(self) -> None:
        """Check the settings (done before the first image is described).

        Raises
        ------
        ValueError
            If ``step``, a bin size, ``max_side`` or ``resize_to`` is not a positive
            integer, ``bin_sizes`` is empty, or ``resize_to`` leaves no room for a descriptor.
        """
        check_positive_int(self.step, "step")
        if len(tuple(self.bin_sizes)) == 0:
            raise ValueError("bin_sizes: needs at least one size")
        for b in self.bin_sizes:
            check_positive_int(b, "bin_sizes")
        for name in ("max_side", "resize_to"):
            if getattr(self, name) is not None:
                check_positive_int(getattr(self, name), name)
        if self.resize_to is not None and self.grid(self.resize_to, self.resize_to).shape[0] == 0:
            # every image would give no descriptor and an empty histogram
            raise ValueError(
                f"resize_to={self.resize_to} is too small for a descriptor window of 4 bins of "
                f"{min(self.bin_sizes)} pixels: use at least {4 * min(int(b) for b in self.bin_sizes)}"
            )

    def config(self) -> dict:
        """JSON description of the settings, saved in the store's ``attrs``.

        Returns
        -------
        dict
            ``descriptor`` (``"dense-sift"``), ``step``, ``bin_sizes``, ``max_side``,
            ``resize_to``, ``drop_flat`` and ``root_sift``.
        """
        return {
            "descriptor": "dense-sift",
            "step": int(self.step),
            "bin_sizes": [int(b) for b in self.bin_sizes],
            "max_side": None if self.max_side is None else int(self.max_side),
            "resize_to": None if self.resize_to is None else int(self.resize_to),
            "drop_flat": bool(self.drop_flat),
            "root_sift": bool(self.root_sift),
        }

    def _prepare(self, image) -> np.ndarray:
        cv2 = _require_cv2()
        g = to_gray(image)
        h, w = g.shape
        if self.resize_to is not None:
            s = int(self.resize_to)
            if (h, w) != (s, s):
                g = cv2.resize(g, (s, s), interpolation=cv2.INTER_CUBIC if s > max(h, w) else cv2.INTER_AREA)
        elif self.max_side is not None and max(h, w) > self.max_side:
            f = self.max_side / max(h, w)
            g = cv2.resize(g, (max(1, round(w * f)), max(1, round(h * f))), interpolation=cv2.INTER_AREA)
        return g

    def grid(self, height: int, width: int) -> np.ndarray:
        """Keypoints ``(m, 3)`` as ``x, y, size`` for an image of this size.

        Parameters
        ----------
        height, width : int
            The (prepared) image's size in pixels.

        Returns
        -------
        ndarray of shape (m, 3), dtype float32
            One keypoint per row, every ``step`` pixels for each bin size, keeping
            the 4-bin window inside the image; ``m`` may be 0.
        """
        pts = []
        for b in self.bin_sizes:
            half = 2 * int(b)  # the 4-bin window must fit inside the image
            xs = np.arange(half, width - half + 1, int(self.step), dtype=np.float32)
            ys = np.arange(half, height - half + 1, int(self.step), dtype=np.float32)
            if xs.size == 0 or ys.size == 0:
                continue
            yy, xx = np.meshgrid(ys, xs, indexing="ij")
            pts.append(np.column_stack([xx.ravel(), yy.ravel(), np.full(xx.size, b / _CELL_PER_SIZE, np.float32)]))
        return np.concatenate(pts) if pts else np.empty((0, 3), np.float32)

    def describe_one(self, image) -> np.ndarray:
        """Descriptors ``(m, 128)`` float32 of one image (``m`` may be 0).

        Parameters
        ----------
        image : array-like
            One image (``(H, W)`` grey, ``(H, W, 3)`` RGB or ``(H, W, 4)`` RGBA),
            converted to grey and resized as set.

        Returns
        -------
        ndarray of shape (m, 128), dtype float32
            Upright SIFT descriptors on the dense grid (RootSIFT if ``root_sift``).
        """
        cv2 = _require_cv2()
        sift = self._sift
        if sift is None:
            self.check_params()
            sift = self._sift = cv2.SIFT_create()
        g = self._prepare(image)
        key = (*g.shape, int(self.step), tuple(int(b) for b in self.bin_sizes))
        kps = self._keypoints.get(key)
        if kps is None:
            if len(self._keypoints) >= _KEYPOINT_CACHE:
                self._keypoints.clear()
            # angle 0: upright descriptors, as dense SIFT does not estimate orientation.
            kps = self._keypoints[key] = tuple(cv2.KeyPoint(float(x), float(y), float(s), 0.0) for x, y, s in self.grid(*g.shape))
        if not kps:
            return np.empty((0, 128), np.float32)
        _, desc = sift.compute(g, kps)
        if desc is None:
            return np.empty((0, 128), np.float32)
        desc = np.asarray(desc, np.float32)
        if self.drop_flat:
            desc = desc[desc.sum(axis=1) > 0]
        if self.root_sift and desc.shape[0]:
            desc = np.sqrt(desc / np.maximum(desc.sum(axis=1, keepdims=True), 1e-12))
        return np.ascontiguousarray(desc)

    def describe(self, images) -> list[np.ndarray]:
        """Descriptors of each image: a list of ``(m_i, 128)`` float32 arrays.

        Parameters
        ----------
        images : sequence of array-like
            Images as arrays (``(H, W)`` grey, ``(H, W, 3)`` RGB or ``(H, W, 4)`` RGBA).

        Returns
        -------
        list of ndarray of shape (m_i, 128), dtype float32
            One array per image, as :meth:`describe_one` gives.
        """
        return [self.describe_one(img) for img in images]
