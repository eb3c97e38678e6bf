"""Type aliases for annotations (no run-time use).

``ArrayLike`` names what a public function accepts as an array (a NumPy array, a list of
lists, ...; numpy.typing.ArrayLike in the docs). For mypy it is ``Any``: the code converts
an argument once where it enters and keeps the converted array under the same name
(``X = check_matrix(X)``), which numpy's ArrayLike union would reject at every later
``X.shape``.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import numpy as np

ArrayLike: TypeAlias = Any
RandomState: TypeAlias = int | np.random.Generator | None

__all__ = ["ArrayLike", "RandomState"]
