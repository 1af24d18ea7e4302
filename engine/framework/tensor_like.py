"""Names for what the public API accepts, for annotations (no runtime behaviour).

``TensorLike`` is anything ``convert_to_tensor`` takes: a ``Tensor``, a ``Variable``, or a
numpy array, Python scalar or nested list of them. ``Initializer`` is what ``get_variable``
takes as ``initializer``: an ``init_ops`` initializer (``initializer(shape, dtype)``), a
tensor or a value. ``TensorFn`` maps a tensor to a tensor (activations, regularizers,
constraints).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias, Union

import numpy.typing as npt

if TYPE_CHECKING:
    from engine.framework.graph import Tensor
    from engine.variables import Variable

__all__ = ["TensorLike", "Initializer", "TensorFn"]

TensorLike: TypeAlias = Union["Tensor", "Variable", npt.ArrayLike]
Initializer: TypeAlias = Union[Callable[..., Any], "Tensor", npt.ArrayLike]
TensorFn: TypeAlias = Callable[["Tensor"], "Tensor"]
