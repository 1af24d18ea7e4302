"""More of TF1's ``tf.losses``: ``hinge_loss``, ``huber_loss``, ``log_loss``,
``cosine_distance`` and ``mean_pairwise_squared_error``, with TF 1.15's formulas, weights,
reductions and loss collection (``engine/losses.py`` holds the shared weighting)."""

from __future__ import annotations

from engine import dtypes
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import GraphKeys, Tensor, control_dependencies, name_scope
from engine.framework.tensor_like import TensorLike
from engine.losses import (
    Reduction,
    _assert_broadcastable,
    _broadcast_weights,
    _div_no_nan,
    _require,
    add_loss,
    compute_weighted_loss,
)
from engine.ops import array as array_ops
from engine.ops import math as math_ops
from engine.ops import nn as nn_ops
from engine.ops import reduction as reduction_ops

__all__ = [
    "hinge_loss",
    "huber_loss",
    "log_loss",
    "cosine_distance",
    "mean_pairwise_squared_error",
]

_LOSSES = GraphKeys.LOSSES
_SUM_NZ = Reduction.SUM_BY_NONZERO_WEIGHTS


def _float_pair(first, second):
    first = math_ops.cast(convert_to_tensor(first), dtypes.float32)
    second = math_ops.cast(convert_to_tensor(second), dtypes.float32)
    first.shape.assert_is_compatible_with(second.shape)
    return first, second


def hinge_loss(
    labels: TensorLike,
    logits: TensorLike,
    weights: TensorLike = 1.0,
    scope: str | None = None,
    loss_collection: str | None = _LOSSES,
    reduction: str = _SUM_NZ,
) -> Tensor:
    """``max(0, 1 - (2 * labels - 1) * logits)`` for labels in {0, 1}, weighted and reduced."""
    _require(labels, "labels")
    _require(logits, "logits")
    with name_scope(scope, "hinge_loss", [logits, labels, weights]) as scope:
        logits, labels = _float_pair(logits, labels)
        all_ones = array_ops.ones_like(labels)
        labels = math_ops.subtract(math_ops.multiply(2.0, labels), all_ones)
        losses = nn_ops.relu(math_ops.subtract(all_ones, math_ops.multiply(labels, logits)))
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction=reduction)


def huber_loss(
    labels: TensorLike,
    predictions: TensorLike,
    weights: TensorLike = 1.0,
    delta: float = 1.0,
    scope: str | None = None,
    loss_collection: str | None = _LOSSES,
    reduction: str = _SUM_NZ,
) -> Tensor:
    """Quadratic ``0.5 * e**2`` for ``|e| <= delta``, linear beyond, weighted and reduced."""
    _require(labels, "labels")
    _require(predictions, "predictions")
    with name_scope(scope, "huber_loss", [predictions, labels, weights]) as scope:
        predictions, labels = _float_pair(predictions, labels)
        abs_error = math_ops.abs(math_ops.subtract(predictions, labels))
        quadratic = math_ops.minimum(abs_error, delta)
        linear = math_ops.subtract(abs_error, quadratic)
        losses = math_ops.add(
            math_ops.multiply(0.5, math_ops.multiply(quadratic, quadratic)),
            math_ops.multiply(delta, linear),
        )
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction=reduction)


def log_loss(
    labels: TensorLike,
    predictions: TensorLike,
    weights: TensorLike = 1.0,
    epsilon: float = 1e-7,
    scope: str | None = None,
    loss_collection: str | None = _LOSSES,
    reduction: str = _SUM_NZ,
) -> Tensor:
    """Binary cross-entropy of probabilities, ``epsilon`` inside the logs."""
    _require(labels, "labels")
    _require(predictions, "predictions")
    with name_scope(scope, "log_loss", [predictions, labels, weights]) as scope:
        predictions, labels = _float_pair(predictions, labels)
        positive = math_ops.multiply(labels, math_ops.log(math_ops.add(predictions, epsilon)))
        negative = math_ops.multiply(
            math_ops.subtract(1.0, labels),
            math_ops.log(math_ops.add(math_ops.subtract(1.0, predictions), epsilon)),
        )
        losses = math_ops.subtract(math_ops.negative(positive), negative)
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction=reduction)


def cosine_distance(
    labels: TensorLike,
    predictions: TensorLike,
    axis: int | None = None,
    weights: TensorLike = 1.0,
    scope: str | None = None,
    loss_collection: str | None = _LOSSES,
    reduction: str = _SUM_NZ,
    dim: int | None = None,
) -> Tensor:
    """``1 - sum(labels * predictions, axis)`` for unit-normalized inputs (``dim`` is the
    deprecated name of ``axis``)."""
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'")
    axis = dim if axis is None else axis
    if axis is None:
        raise ValueError("You must specify argument `axis`.")
    _require(labels, "labels")
    _require(predictions, "predictions")
    with name_scope(scope, "cosine_distance_loss", [predictions, labels, weights]) as scope:
        predictions, labels = _float_pair(predictions, labels)
        radial = math_ops.multiply(predictions, labels)
        losses = math_ops.subtract(
            1.0, reduction_ops.reduce_sum(radial, axis=(axis,), keepdims=True)
        )
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction=reduction)


def _per_batch(x: Tensor) -> Tensor:
    """Sum over every axis but the first, keeping dims."""
    axis = array_ops.range(1, array_ops.rank(x))
    return reduction_ops.reduce_sum(x, axis=axis, keepdims=True)


def mean_pairwise_squared_error(
    labels: TensorLike,
    predictions: TensorLike,
    weights: TensorLike = 1.0,
    scope: str | None = None,
    loss_collection: str | None = _LOSSES,
) -> Tensor:
    """Mean over pairs within each batch element of the squared difference of pairwise
    differences, ``2 * sum(d**2) / (n - 1) - 2 * sum(d)**2 / (n * (n - 1))``, weighted per
    batch element and summed."""
    _require(labels, "labels")
    _require(predictions, "predictions")
    with name_scope(scope, "mean_pairwise_squared_error", [predictions, labels, weights]):
        weights = math_ops.cast(convert_to_tensor(weights), dtypes.float32)
        predictions, labels = _float_pair(predictions, labels)
        check = _assert_broadcastable(weights, labels)
        with control_dependencies([check] if check is not None else []):
            diffs = math_ops.subtract(predictions, labels)
            with name_scope(None, "num_present", [diffs, weights]):
                present = math_ops.where(
                    math_ops.equal(weights, 0.0),
                    array_ops.zeros_like(weights),
                    array_ops.ones_like(weights),
                )
                num_present = _per_batch(_broadcast_weights(present, diffs))
            term1 = math_ops.multiply(
                2.0,
                _div_no_nan(
                    _per_batch(math_ops.square(diffs)),
                    math_ops.maximum(math_ops.subtract(num_present, 1.0), 0.0),
                    name="value",
                ),
            )
            pairs = math_ops.multiply(num_present, math_ops.subtract(num_present, 1.0))
            term2 = math_ops.multiply(
                2.0,
                _div_no_nan(
                    math_ops.square(_per_batch(diffs)),
                    math_ops.maximum(pairs, 0.0),
                    name="value",
                ),
            )
            loss = reduction_ops.reduce_sum(
                math_ops.multiply(math_ops.subtract(term1, term2), weights)
            )
            mean_loss = math_ops.where(
                math_ops.greater(reduction_ops.reduce_sum(num_present), 0.0),
                loss,
                array_ops.zeros_like(loss),
                name="value",
            )
            add_loss(mean_loss, loss_collection)
            return mean_loss
