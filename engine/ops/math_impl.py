"""``tf.math`` helpers composed from other ops with TensorFlow's formulas: ``log_sigmoid``,
``reduce_variance`` and ``reduce_std``."""

from __future__ import annotations

from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.ops import math as math_ops
from engine.ops import reduction
from engine.ops.nn import softplus

__all__ = ["log_sigmoid", "reduce_std", "reduce_variance"]


def log_sigmoid(x, name=None) -> Tensor:
    """``log(sigmoid(x))``, computed as ``-softplus(-x)`` (no overflow for large ``|x|``)."""
    with name_scope(name, "LogSigmoid", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        return math_ops.negative(softplus(-x), name=scope)


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None) -> Tensor:
    """The variance across ``axis``: ``mean((x - mean(x)) ** 2)`` (floats only)."""
    with name_scope(name or "reduce_variance"):
        x = convert_to_tensor(input_tensor, name="input_tensor")
        if not x.dtype.base_dtype.is_floating:
            raise TypeError(f"Input must be either real or complex, got {x.dtype.name}")
        means = reduction.reduce_mean(x, axis=axis, keepdims=True)
        squared_deviations = math_ops.square(x - means)
        return reduction.reduce_mean(squared_deviations, axis=axis, keepdims=keepdims)


def reduce_std(input_tensor, axis=None, keepdims=False, name=None) -> Tensor:
    """The standard deviation across ``axis``: ``sqrt(reduce_variance(...))``."""
    with name_scope(name or "reduce_std"):
        variance = reduce_variance(input_tensor, axis=axis, keepdims=keepdims)
        return math_ops.sqrt(variance)
