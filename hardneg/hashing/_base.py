"""What every hasher shares: packed codes, input checks, portable save/load.

A hasher learns ``fit(X, y=None, X_unlabeled=None)`` and maps rows to packed
binary codes with ``transform`` (``np.packbits`` order: bit 0 is the most
significant bit of byte 0), so every hasher's codes go into the same Hamming
index. Models save to an ``.npz`` + JSON file through ``hardneg._persist``.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from hardneg._persist import ModelFileError, load_model, model_kind, save_model
from hardneg._validation import check_matrix, check_positive_int

__all__ = ["BaseHasher", "faiss_bits_to_packed", "load_hasher"]

_FORMAT_VERSION = 1


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


class BaseHasher(BaseEstimator):
    """Base class: subclasses implement ``fit``, ``_bits`` (or ``transform``),
    ``_to_arrays`` and ``_from_arrays``; ``_kind`` names the model file kind."""

    _kind = "hasher"
    _fitted_attr = "n_bits_"

    def _check_n_bits(self):
        return check_positive_int(self.n_bits, "n_bits")

    def _check_X(self, X, name="X", fitting=False):
        if fitting:
            return check_matrix(X, name, min_rows=2)
        check_is_fitted(self, self._fitted_attr)
        return check_matrix(X, name, min_rows=0, n_features=self.n_features_in_)

    def embed(self, X) -> np.ndarray:
        """Real-valued projections whose signs are the bits, shape (n, n_bits)."""
        raise NotImplementedError(f"{type(self).__name__} has no real-valued embedding")

    def _bits(self, X) -> np.ndarray:
        return self.embed(X) > 0

    def transform(self, X) -> np.ndarray:
        """Packed binary codes, uint8 of shape (n_samples, ceil(n_bits / 8))."""
        X = self._check_X(X)
        return np.packbits(self._bits(X), axis=1)

    def fit_transform(self, X, y=None, **fit_params):
        return self.fit(X, y, **fit_params).transform(X)

    # persistence ---------------------------------------------------------
    def _to_arrays(self) -> dict:
        raise NotImplementedError

    def _from_arrays(self, arrays: dict, meta: dict) -> None:
        raise NotImplementedError

    def save(self, path):
        """Write the fitted model to ``path`` (portable .npz + JSON, no pickle)."""
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

    @classmethod
    def load(cls, path):
        """Read a model written by :meth:`save`."""
        arrays, meta = load_model(path, cls._kind, (_FORMAT_VERSION,))
        try:
            model = cls(**meta["params"])
            model.n_bits_ = int(meta["n_bits"])
            model.n_features_in_ = int(meta["n_features"])
            model._from_arrays(arrays, meta.get("extra", {}))
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelFileError(f"{path}: {cls._kind} model file is incomplete or inconsistent ({exc})") from None
        return model


def load_hasher(path):
    """Load any hasher model file, whatever its kind.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from hardneg.hashing import LSHHasher, load_hasher
    >>> X = np.random.default_rng(0).normal(size=(50, 8))
    >>> path = os.path.join(tempfile.mkdtemp(), "lsh.npz")
    >>> _ = LSHHasher(n_bits=16, random_state=0).fit(X).save(path)
    >>> type(load_hasher(path)).__name__
    'LSHHasher'
    """
    from hardneg.hashing import HASHERS

    kind = model_kind(path)
    for cls in HASHERS.values():
        if cls._kind == kind:
            return cls.load(path)
    raise ModelFileError(f"{path}: holds a {kind!r} model, not a hasher")
