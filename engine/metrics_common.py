"""What TF1's streaming metrics share (``engine/metrics*.py``): their local variables, the
collections they fill, weights shaped to the values, and the weighted running mean.

Metric variables are local (``LOCAL_VARIABLES`` and ``METRIC_VARIABLES``), untrainable,
zero-initialized, and named as TF1 names them within the metric's scope.
"""

from __future__ import annotations

from engine import dtypes
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import GraphKeys, Tensor, add_to_collections
from engine.losses import _broadcast_weights, _remove_squeezable_dimensions
from engine.ops import array as array_ops
from engine.ops import math as math_ops
from engine.ops import reduction, state
from engine.ops.math_more import div_no_nan
from engine.variable_scope import variable_scope
from engine.variables import Variable

METRIC_COLLECTIONS = [GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES]


def metric_variable(shape, dtype, name: str) -> Variable:
    """A zero-initialized local variable ``name`` in the current name scope (a plain
    ``Variable``, as TF1's, so a second metric of the same name gets ``<name>_1/...``); a
    ``name`` ending in '/' is the variable's full name."""
    dtype = dtypes.as_dtype(dtype)
    return Variable(
        lambda: array_ops.zeros(shape, dtype),
        trainable=False,
        collections=list(METRIC_COLLECTIONS),
        name=name,
    )


def collect(value, update, metrics_collections, updates_collections):
    """Adds ``value`` and ``update`` to the caller's collections; returns them as a pair."""
    if metrics_collections:
        add_to_collections(metrics_collections, value)
    if updates_collections:
        add_to_collections(updates_collections, update)
    return value, update


def squeeze_labels(labels, predictions):
    """TF's ``confusion_matrix.remove_squeezable_dimensions``: drops a trailing size-1 dim of
    whichever of ``labels``/``predictions`` has one rank more; ``(labels, predictions)``."""
    labels, predictions, _ = _remove_squeezable_dimensions(labels, predictions, None)
    return labels, predictions


def remove_squeezable_dimensions(predictions, labels, weights):
    """TF1's ``metrics_impl._remove_squeezable_dimensions``: ``labels`` and ``predictions``
    squeezed to one rank, then ``weights`` (unless a scalar) squeezed or expanded by one
    trailing dim to the predictions' rank. Returns ``(predictions, labels, weights)``.

    Where a rank is unknown at build time the weights are left as given.
    """
    predictions = convert_to_tensor(predictions)
    if labels is not None:
        labels, predictions = squeeze_labels(labels, predictions)
        if not predictions.shape.is_compatible_with(labels.shape):
            raise ValueError(f"Shapes {predictions.shape} and {labels.shape} are incompatible")
    if weights is None:
        return predictions, labels, None
    weights = convert_to_tensor(weights)
    w_rank, p_rank = weights.shape.rank, predictions.shape.rank
    if w_rank == 0 or w_rank is None or p_rank is None:
        return predictions, labels, weights
    if w_rank - p_rank == 1:
        weights = array_ops.squeeze(weights, [-1])
    elif p_rank - w_rank == 1:
        weights = array_ops.expand_dims(weights, -1)
    return predictions, labels, weights


def broadcast_weights(weights, values: Tensor, dtype=dtypes.float32) -> Tensor:
    """``weights`` (cast to ``dtype``) at the shape of ``values``; a ValueError when they
    cannot broadcast (a scalar, or the values' rank with each dim 1 or equal)."""
    return _broadcast_weights(math_ops.cast(weights, dtype), values)


def check_same_shape(labels: Tensor, predictions: Tensor) -> None:
    """TF's ``assert_is_compatible_with`` on the static shapes."""
    if not predictions.shape.is_compatible_with(labels.shape):
        raise ValueError(f"Shapes {predictions.shape} and {labels.shape} are incompatible")


def weighted_mean(
    values, weights, metrics_collections, updates_collections, name, default_name="mean"
):
    """TF1's ``tf.metrics.mean`` exactly: ``<scope>/total`` and ``<scope>/count`` (float32),
    the weights shaped by ``remove_squeezable_dimensions`` and broadcast to the values."""
    with variable_scope(name, default_name, [values, weights]):
        values = math_ops.cast(values, dtypes.float32)
        total = metric_variable([], dtypes.float32, "total")
        count = metric_variable([], dtypes.float32, "count")
        if weights is None:
            num_values = math_ops.cast(array_ops.size(values), dtypes.float32)
        else:
            values, _, weights = remove_squeezable_dimensions(values, None, weights)
            weights = broadcast_weights(weights, values)
            values = math_ops.multiply(values, weights)
            num_values = reduction.reduce_sum(weights)
        update_total = state.assign_add(total, reduction.reduce_sum(values))
        # (TF1 orders this after ``values`` by a control edge; dataflow needs none here)
        update_count = state.assign_add(count, num_values)
        value = div_no_nan(total, math_ops.maximum(count, 0.0), name="value")
        update = div_no_nan(update_total, math_ops.maximum(update_count, 0.0), name="update_op")
        return collect(value, update, metrics_collections, updates_collections)
