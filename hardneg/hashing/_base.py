"""What every hasher shares: packed codes, input checks, portable save/load.

A hasher learns ``fit(X, y=None, X_unlabeled=None)`` and maps rows to packed
binary codes with ``transform`` (``np.packbits`` order: bit 0 is the most
significant bit of byte 0), so every hasher's codes go into the same Hamming
index. Models save to an ``.npz`` + JSON file through ``hardneg._persist``.
"""

from __future__ import annotations

import hashlib
import json
import numbers
import os
from pathlib import Path

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from hardneg._persist import ModelFileError, array_digest, load_model, save_model
from hardneg._typing import ArrayLike
from hardneg._validation import Interval, check_memory, validate_params, validate_X

__all__ = ["MAX_BITS", "BaseHasher", "faiss_bits_to_packed"]

_FORMAT_VERSION = 1

#: Longest code any hasher makes. Hashing papers stop at 1,024 bits; past a
#: few thousand, codes are as large as the features and some trainings cost
#: O(n_bits^2) memory and O(n_bits^3) time (an LSH rotation of 100,000 bits
#: needs 40 GB).
from ._registry import MAX_BITS
N_BITS = Interval(numbers.Integral, 1, MAX_BITS, closed="both")


def faiss_bits_to_packed(codes: np.ndarray, n_bits: int) -> np.ndarray:
    """FAISS packs bit i into byte i // 8 least-significant first; reorder to np.packbits."""
    bits = np.unpackbits(codes, axis=1, bitorder="little")[:, :n_bits]
    return np.packbits(bits, axis=1)


def _json_params(params: dict) -> dict:
    out = {}
    for key, value in params.items():
        if isinstance(value, np.random.Generator) or isinstance(value, np.random.RandomState):
            value = None  # a generator's state is not a parameter worth keeping
        elif isinstance(value, numbers.Integral) and not isinstance(value, bool):
            value = int(value)
        elif isinstance(value, numbers.Real) and not isinstance(value, bool):
            value = float(value)
        out[key] = value
    return out


class BaseHasher(TransformerMixin, BaseEstimator):
    """Base class: subclasses implement ``fit``, ``_bits`` (or ``transform``),
    ``_to_arrays`` and ``_from_arrays``; ``_kind`` names the model file kind.

    Subclasses declare ``_parameter_constraints`` (``n_bits`` at most
    :data:`MAX_BITS`); ``fit`` checks them and refuses, before allocating, a
    training whose memory estimate exceeds the memory available.
    """

    _kind = "hasher"
    _fitted_attr = "n_bits_"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = []  # codes are uint8, whatever the input dtype
        return tags

    def _check_n_bits(self):
        validate_params(self)
        return int(self.n_bits)

    def _check_X(self, X, name="X", fitting=False):
        if fitting:
            return validate_X(self, X, reset=True, name=name, min_rows=2)
        check_is_fitted(self, self._fitted_attr)
        return validate_X(self, X, reset=False, name=name, min_rows=0)

    def _fit_memory_bytes(self, n_samples: int, n_features: int, n_bits: int) -> float:
        """Peak memory estimate of ``fit``: the float32 embedding of the
        training rows and the float64 projections (subclasses add their own)."""
        return 8.0 * n_samples * n_bits + 8.0 * n_features * n_bits

    def _check_fit_memory(self, X, n_bits: int) -> None:
        n, d = X.shape
        check_memory(
            self._fit_memory_bytes(n, d, n_bits),
            f"{type(self).__name__}(n_bits={n_bits}).fit on X of shape ({n}, {d})",
            hint="lower n_bits or train on fewer rows",
        )

    def embed(self, X: ArrayLike) -> np.ndarray:
        """Real-valued projections whose signs are the bits, shape (n, n_bits).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to encode.

        Returns
        -------
        ndarray of shape (n_samples, n_bits)
            The projections (a hasher without them raises ``NotImplementedError``).
        """
        raise NotImplementedError(f"{type(self).__name__} has no real-valued embedding")

    def _bits(self, X) -> np.ndarray:
        return self.embed(X) > 0

    def transform(self, X: ArrayLike) -> np.ndarray:
        """Packed binary codes, uint8 of shape (n_samples, ceil(n_bits / 8)).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to encode.

        Returns
        -------
        ndarray of uint8, shape (n_samples, ceil(n_bits / 8))
            The codes, ``np.packbits`` order.
        """
        X = self._check_X(X)
        return np.packbits(self._bits(X), axis=1)

    def fit_transform(self, X: ArrayLike, y: ArrayLike | None = None, **fit_params) -> np.ndarray:
        """Fit on ``X`` (and ``y``), then encode ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows.
        y : array-like or None, default=None
            Labels, for the supervised hashers.
        **fit_params : dict
            Further arguments of ``fit`` (e.g. ``X_unlabeled``).

        Returns
        -------
        ndarray of uint8, shape (n_samples, n_bytes)
            The codes of ``X``, as :meth:`transform` gives them.
        """
        return self.fit(X, y, **fit_params).transform(X)

    # persistence ---------------------------------------------------------
    def _to_arrays(self) -> dict:
        raise NotImplementedError

    def _from_arrays(self, arrays: dict, meta: dict) -> None:
        raise NotImplementedError

    def save(self, path: str | os.PathLike) -> Path:
        """Write the fitted model to ``path`` (portable .npz + JSON, no pickle).

        Parameters
        ----------
        path : str or path-like
            The file to write.

        Returns
        -------
        Path
            The path written.
        """
        check_is_fitted(self, self._fitted_attr)
        meta = {
            "params": _json_params(self.get_params()),
            "n_bits": int(self.n_bits_),
            "n_features": int(self.n_features_in_),
            "extra": self._meta(),
        }
        return save_model(path, self._kind, _FORMAT_VERSION, self._to_arrays(), meta)

    def _meta(self) -> dict:
        return {}

    #: The arrays ``_to_arrays`` writes: name -> :class:`hardneg._persist.ArraySpec`.
    #: ``load`` refuses a file with other arrays, or with these of another dtype
    #: kind or number of dimensions, before reading their data.
    _schema: dict = {}

    @classmethod
    def load(cls, path: str | os.PathLike):
        """Read a model written by :meth:`save`.

        Raises :class:`~hardneg._persist.ModelFileError` (one line) for a file
        that is damaged, edited, of another kind, or whose values cannot be
        what ``fit`` made (non-finite weights, impossible sizes).

        Parameters
        ----------
        path : str or path-like
            A file written by this class's :meth:`save`.

        Returns
        -------
        BaseHasher
            The fitted hasher, of this class.
        """
        arrays, meta = load_model(path, cls._kind, (_FORMAT_VERSION,), schema=cls._schema or None)
        try:
            params = meta["params"]
            if not isinstance(params, dict):
                raise ValueError("'params' is not a JSON object")
            model = cls(**params)
            if hasattr(cls, "_parameter_constraints"):
                validate_params(model)
            model.n_bits_ = _meta_int(meta, "n_bits", MAX_BITS)
            model.n_features_in_ = _meta_int(meta, "n_features", None)
            if params.get("n_bits", model.n_bits_) != model.n_bits_:
                raise ValueError(f"n_bits={model.n_bits_} but the parameters say n_bits={params.get('n_bits')!r}")
            extra = meta.get("extra", {})
            if not isinstance(extra, dict):
                raise ValueError("'extra' is not a JSON object")
            model._from_arrays(arrays, extra)
        except (KeyError, TypeError, ValueError, RuntimeError) as exc:  # RuntimeError: FAISS's own checks
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ModelFileError(f"{path}: {cls._kind} model file is incomplete or inconsistent ({message})") from None
        return model

    def fingerprint(self) -> str:
        """A digest of the function the hasher computes: its kind, code length,
        input dimension and learned arrays (BLAKE2b-128, hex).

        A hasher loaded from a file has the fingerprint of the one that was
        saved; a Hamming index records it, so a search can refuse codes from
        another hasher.

        Returns
        -------
        str
            32 hex digits.
        """
        check_is_fitted(self, self._fitted_attr)
        h = hashlib.blake2b(digest_size=16)
        h.update(json.dumps([self._kind, int(self.n_bits_), int(self.n_features_in_), self._meta()], sort_keys=True).encode())
        for name, array in sorted(self._to_arrays().items()):
            h.update(array_digest(name, array).encode())
        return h.hexdigest()


def _meta_int(meta: dict, key: str, maximum: int | None) -> int:
    value = meta[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1 or (maximum is not None and value > maximum):
        limit = f"1..{maximum}" if maximum is not None else "a positive integer"
        raise ValueError(f"{key}={value!r} is not {limit}")
    return value


def check_finite_array(array, name: str, shape=None) -> np.ndarray:
    """A loaded float array as float32 C-contiguous, or ValueError if its shape or values are impossible."""
    with np.errstate(over="ignore"):  # an overflow becomes inf, refused below
        out = np.ascontiguousarray(array, dtype=np.float32)
    if shape is not None and out.shape != tuple(shape):
        raise ValueError(f"{name} has shape {out.shape}, expected {tuple(shape)}")
    if not np.isfinite(out).all():
        raise ValueError(f"{name} holds NaN or infinite values")
    return out
