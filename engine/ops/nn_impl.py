"""``tf.nn`` helpers composed from other ops, with TensorFlow's formulas (its ``nn_impl``), and
``in_top_k``: ``l2_normalize``, ``xw_plus_b``, ``relu_layer``, ``crelu``, ``swish``/``silu``,
``softsign``, ``zero_fraction``, ``weighted_cross_entropy_with_logits``, ``log_poisson_loss``,
``sufficient_statistics`` and ``normalize_moments``. Composed ops differentiate, save and run
on any device like the ops they are built from.
"""

from __future__ import annotations

import math

import numpy as np

from engine import dtypes, errors
from engine.framework.constant_op import constant, convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.registry import OpFlags, ShapeError, op
from engine.ops import array as array_ops
from engine.ops import array_transform, reduction, slicing
from engine.ops import math as math_ops
from engine.ops._common import INDEX, check_dtype, create, dims_text
from engine.ops.matmul import matmul
from engine.ops.nn import bias_add, relu
from engine.tensor_shape import TensorShape

__all__ = [
    "crelu",
    "in_top_k",
    "l2_normalize",
    "log_poisson_loss",
    "normalize_moments",
    "relu_layer",
    "silu",
    "softsign",
    "sufficient_statistics",
    "swish",
    "weighted_cross_entropy_with_logits",
    "xw_plus_b",
    "zero_fraction",
]


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """``x / sqrt(max(sum(x ** 2, axis), epsilon))``; ``dim`` is the deprecated ``axis``."""
    if dim is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'axis' and 'dim'")
        axis = dim
    with name_scope(name, "l2_normalize", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        square_sum = reduction.reduce_sum(math_ops.square(x), axis, keepdims=True)
        x_inv_norm = math_ops.rsqrt(math_ops.maximum(square_sum, epsilon))
        return math_ops.multiply(x, x_inv_norm, name=scope)


def xw_plus_b(x, weights, biases, name=None):
    """``matmul(x, weights) + biases`` (a ``BiasAdd``)."""
    with name_scope(name, "xw_plus_b", [x, weights, biases]) as scope:
        return bias_add(matmul(x, weights), biases, name=scope)


def relu_layer(x, weights, biases, name=None):
    """``relu(matmul(x, weights) + biases)``."""
    with name_scope(name, "relu_layer", [x, weights, biases]) as scope:
        return relu(bias_add(matmul(x, weights), biases), name=scope)


def swish(features, beta=1.0, name=None):
    """``features * sigmoid(beta * features)`` (also ``silu``)."""
    with name_scope(name, "swish", [features]) as scope:
        features = convert_to_tensor(features, name="features")
        beta = convert_to_tensor(beta, dtype=features.dtype.base_dtype, name="beta")
        return math_ops.multiply(features, math_ops.sigmoid(beta * features), name=scope)


silu = swish


def crelu(features, name=None, axis=-1):
    """``relu(concat([features, -features], axis))``: the positive and negative parts side by
    side (twice the depth)."""
    with name_scope(name, "CRelu", [features]) as scope:
        features = convert_to_tensor(features, name="features")
        both = array_transform.concat([features, -features], axis)
        return relu(both, name=scope)


def softsign(features, name=None):
    """``features / (abs(features) + 1)``."""
    with name_scope(name, "Softsign", [features]) as scope:
        features = convert_to_tensor(features, name="features")
        one = constant(1, dtype=features.dtype.base_dtype)
        return math_ops.truediv(features, math_ops.abs(features) + one, name=scope)


def zero_fraction(value, name=None):
    """The fraction of zeros in ``value``, a float32 scalar (TF's activation summary)."""
    with name_scope(name, "zero_fraction", [value]):
        value = convert_to_tensor(value, name="value")
        zero = constant(0, dtype=value.dtype.base_dtype)
        size = array_ops.size(value, out_type=dtypes.int64)
        nonzero = math_ops.cast(math_ops.not_equal(value, zero), dtypes.int64)
        num_nonzero = reduction.reduce_sum(nonzero)
        with name_scope("counts_to_fraction"):
            num_zero = math_ops.cast(size - num_nonzero, dtypes.float32)
            fraction = num_zero / math_ops.cast(size, dtypes.float32)
        return array_ops.identity(fraction, "fraction")


def weighted_cross_entropy_with_logits(
    labels=None, logits=None, pos_weight=None, name=None, targets=None
):
    """Sigmoid cross entropy with positive examples weighted by ``pos_weight``:
    ``(1 - labels) * logits + (1 + (pos_weight - 1) * labels) * (log1p(exp(-|logits|)) +
    relu(-logits))``. ``targets`` is TF1's name for ``labels``."""
    if targets is not None:
        if labels is not None:
            raise ValueError("Cannot specify both 'labels' and 'targets'")
        labels = targets
    if labels is None or logits is None or pos_weight is None:
        raise ValueError("labels, logits and pos_weight are all required")
    with name_scope(name, "logistic_loss", [logits, labels]) as scope:
        logits = convert_to_tensor(logits, name="logits")
        labels = convert_to_tensor(labels, dtype_hint=logits.dtype.base_dtype, name="labels")
        if not logits.shape.is_compatible_with(labels.shape):
            raise ValueError(
                f"logits and labels must have the same shape ({logits.shape} vs {labels.shape})"
            )
        log_weight = 1 + (pos_weight - 1) * labels
        softplus_neg = math_ops.log1p(math_ops.exp(-math_ops.abs(logits))) + relu(-logits)
        return math_ops.add((1 - labels) * logits, log_weight * softplus_neg, name=scope)


def log_poisson_loss(targets, log_input, compute_full_loss=False, name=None):
    """``exp(log_input) - log_input * targets``, plus Stirling's approximation of
    ``log(targets!)`` for targets above 1 with ``compute_full_loss``."""
    with name_scope(name, "log_poisson_loss", [targets, log_input]):
        log_input = convert_to_tensor(log_input, name="log_input")
        targets = convert_to_tensor(targets, dtype_hint=log_input.dtype.base_dtype, name="targets")
        if not log_input.shape.is_compatible_with(targets.shape):
            raise ValueError(
                f"log_input and targets must have the same shape "
                f"({log_input.shape} vs {targets.shape})"
            )
        result = math_ops.exp(log_input) - log_input * targets
        if compute_full_loss:
            d = targets.dtype.base_dtype
            half, two_pi = constant(0.5, dtype=d), constant(2 * math.pi, dtype=d)
            stirling = (
                targets * math_ops.log(targets) - targets + half * math_ops.log(two_pi * targets)
            )
            zeros, ones = array_ops.zeros_like(targets), array_ops.ones_like(targets)
            small = math_ops.logical_and(targets >= zeros, targets <= ones)
            result += math_ops.where(small, zeros, stirling)
        return result


def sufficient_statistics(x, axes, shift=None, keep_dims=None, name=None, keepdims=None):
    """``(count, sum(x - shift), sum((x - shift) ** 2), shift)`` over ``axes``: the
    statistics ``normalize_moments`` turns into a mean and a variance."""
    if keep_dims is not None:
        if keepdims is not None:
            raise ValueError("Cannot specify both 'keepdims' and 'keep_dims'")
        keepdims = keep_dims
    keepdims = bool(keepdims)
    axes = sorted(set(axes))
    with name_scope(name, "sufficient_statistics", [x, shift]):
        x = convert_to_tensor(x, name="x")
        dims = x.shape.as_list() if x.shape.rank is not None else None
        if dims is not None and all(dims[d] is not None for d in axes):
            counts = constant(int(np.prod([dims[d] for d in axes])), dtype=x.dtype.base_dtype)
        else:  # known only at run time
            shape = math_ops.cast(array_ops.shape(x), x.dtype.base_dtype)
            counts = reduction.reduce_prod(slicing.gather(shape, axes), name="count")
        if shift is not None:
            shift = convert_to_tensor(shift, name="shift")
            m_ss, v_ss = math_ops.subtract(x, shift), math_ops.squared_difference(x, shift)
        else:
            m_ss, v_ss = x, math_ops.square(x)
        m_ss = reduction.reduce_sum(m_ss, axes, keepdims=keepdims, name="mean_ss")
        v_ss = reduction.reduce_sum(v_ss, axes, keepdims=keepdims, name="var_ss")
    return counts, m_ss, v_ss, shift


def normalize_moments(counts, mean_ss, variance_ss, shift, name=None):
    """``(mean, variance)`` from ``sufficient_statistics``' sums."""
    with name_scope(name, "normalize", [counts, mean_ss, variance_ss, shift]):
        divisor = math_ops.reciprocal(counts, name="divisor")
        if shift is not None:
            shifted_mean = math_ops.multiply(mean_ss, divisor, name="shifted_mean")
            mean = math_ops.add(shifted_mean, shift, name="mean")
        else:
            shifted_mean = math_ops.multiply(mean_ss, divisor, name="mean")
            mean = shifted_mean
        variance = math_ops.subtract(
            math_ops.multiply(variance_ss, divisor),
            math_ops.square(shifted_mean),
            name="variance",
        )
    return mean, variance


# -----------------------------------------------------------------------------------------
# InTopKV2
# -----------------------------------------------------------------------------------------


def _in_top_k_infer(o):
    predictions, targets, k = o._inputs
    check_dtype(o, 0, frozenset([dtypes.float32]))
    t = check_dtype(o, 1, INDEX)
    if k._dtype.base_dtype != t:
        raise TypeError(f"k must have the dtype of targets ({t.name}), got {k._dtype.name}")
    p, tg = predictions._shape, targets._shape
    if p.rank is not None and p.rank != 2:
        raise ShapeError(f"Shape must be rank 2 but is rank {p.rank}")
    if tg.rank is not None and tg.rank != 1:
        raise ShapeError(f"Shape must be rank 1 but is rank {tg.rank}")
    if k._shape.rank not in (None, 0):
        raise ShapeError(f"Shape must be rank 0 but is rank {k._shape.rank}")
    rows = p.as_list()[0] if p.rank is not None else None
    if rows is None and tg.rank is not None:
        rows = tg.as_list()[0]
    return [(dtypes.bool, TensorShape([rows]))]


@op(
    "InTopKV2",
    infer=_in_top_k_infer,
    inputs=("predictions", "targets", "k"),
    differentiable=False,
    flags=OpFlags(host_inputs=(2,)),
)
def _in_top_k_kernel(xp, predictions, targets, k):
    k = int(k)
    if predictions.ndim != 2 or targets.ndim != 1:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"predictions must be 2-dimensional and targets 1-dimensional, got "
            f"{dims_text(predictions.shape)} and {dims_text(targets.shape)}",
        )
    rows, classes = predictions.shape
    if targets.shape[0] != rows:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"First dimension of predictions {rows} must match length of targets "
            f"{targets.shape[0]}",
        )
    valid = (targets >= 0) & (targets < classes)
    safe = xp.where(valid, targets, 0)
    target_values = xp.take_along_axis(predictions, safe[:, None].astype(np.int64), axis=1)
    more = xp.sum(predictions > target_values, axis=1)
    finite = xp.all(xp.isfinite(predictions), axis=1)
    # A target out of range, or any non-finite prediction in its row, is never in the top k.
    return valid & finite & (more < k)


def in_top_k(predictions, targets, k, name=None) -> Tensor:
    """Whether each row's ``targets`` class is among its ``k`` largest ``predictions``; classes
    tied with the k-th value are all in (TF's rule)."""
    with name_scope(name, "in_top_k", [predictions, targets]) as scope:
        predictions = convert_to_tensor(predictions, name="predictions")
        targets = convert_to_tensor(targets, name="targets")
        k = convert_to_tensor(k, dtype=targets.dtype.base_dtype, name="k")
        return create("InTopKV2", [predictions, targets, k], {}, scope).outputs[0]
