"""TF1's streaming metrics (``tf.metrics``): each returns ``(value, update_op)``.

The running totals are local variables (collections ``LOCAL_VARIABLES`` and
``METRIC_VARIABLES``, initialized by ``tf.local_variables_initializer()``) named as TF1 names
them (``accuracy/total``, ``precision/true_positives/count``, ``auc/true_positives``...).
Running ``update_op`` folds a batch into the totals and returns the updated metric;
``value`` reads the metric without changing it.

>>> acc, acc_update = tf.metrics.accuracy(labels, predictions)
>>> sess.run(tf.local_variables_initializer())
>>> for batch in batches: sess.run(acc_update, feed(batch))
>>> sess.run(acc)
"""

from __future__ import annotations

from engine import dtypes
from engine.framework.constant_op import constant, convert_to_tensor
from engine.framework.graph import GraphKeys, Tensor, add_to_collections
from engine.init_ops import zeros_initializer
from engine.ops import array as array_ops
from engine.ops import math as math_ops
from engine.ops import reduction, state
from engine.variable_scope import get_variable, variable_scope

__all__ = ["mean", "accuracy", "precision", "recall", "auc"]


def _metric_variable(shape, dtype, name):
    return get_variable(
        name,
        shape=shape,
        dtype=dtype,
        initializer=zeros_initializer(),
        trainable=False,
        collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES],
    )


def _safe_div(num, den, name):
    return math_ops.where_v2(
        math_ops.greater(den, 0), math_ops.truediv(num, den), array_ops.zeros_like(num), name=name
    )


def _collect(value, update, metrics_collections, updates_collections):
    if metrics_collections:
        add_to_collections(metrics_collections, value)
    if updates_collections:
        add_to_collections(updates_collections, update)
    return value, update


def _weights(values: Tensor, weights):
    """``weights`` broadcast to ``values`` as float32 (ones when None)."""
    if weights is None:
        return array_ops.ones_like(values)
    w = math_ops.cast(convert_to_tensor(weights), values.dtype.base_dtype)
    return math_ops.multiply(w, array_ops.ones_like(values))


def mean(values, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """The (weighted) mean of every value seen: ``total / count``."""
    with variable_scope(name, "mean", [values, weights]):
        v = math_ops.cast(convert_to_tensor(values), dtypes.float32)
        return _mean_in_scope(v, weights, metrics_collections, updates_collections)


def _check_same_shape(labels: Tensor, predictions: Tensor):
    a, b = labels.shape, predictions.shape
    if a.rank is not None and b.rank is not None and not a.is_compatible_with(b):
        raise ValueError(f"Shapes {a} and {b} are incompatible")


def accuracy(
    labels,
    predictions,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """How often ``predictions`` equals ``labels``."""
    with variable_scope(name, "accuracy", [labels, predictions, weights]):
        labels = convert_to_tensor(labels)
        predictions = convert_to_tensor(predictions)
        if predictions.dtype.base_dtype is not labels.dtype.base_dtype:
            predictions = math_ops.cast(predictions, labels.dtype.base_dtype)
        _check_same_shape(labels, predictions)
        correct = math_ops.cast(math_ops.equal(predictions, labels), dtypes.float32)
        return _mean_in_scope(correct, weights, metrics_collections, updates_collections)


def _mean_in_scope(values, weights, metrics_collections, updates_collections):
    """``mean``'s variables directly in the current scope (``accuracy/total``)."""
    w = _weights(values, weights)
    total = _metric_variable([], dtypes.float32, "total")
    count = _metric_variable([], dtypes.float32, "count")
    update_total = state.assign_add(total, reduction.reduce_sum(values * w))
    update_count = state.assign_add(count, reduction.reduce_sum(w))
    value = _safe_div(total, count, "value")
    update = _safe_div(update_total, update_count, "update_op")
    return _collect(value, update, metrics_collections, updates_collections)


def _bools(labels, predictions):
    labels = math_ops.cast(convert_to_tensor(labels), dtypes.bool)
    predictions = math_ops.cast(convert_to_tensor(predictions), dtypes.bool)
    _check_same_shape(labels, predictions)
    return labels, predictions


def _count(name, condition, weights):
    """A ``<name>/count`` total of the (weighted) True entries of ``condition``."""
    with variable_scope(name):
        c = math_ops.cast(condition, dtypes.float32)
        w = _weights(c, weights)
        var = _metric_variable([], dtypes.float32, "count")
        return var, state.assign_add(var, reduction.reduce_sum(c * w))


def precision(
    labels,
    predictions,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """``true_positives / (true_positives + false_positives)`` of boolean predictions."""
    with variable_scope(name, "precision", [predictions, labels, weights]):
        labels, predictions = _bools(labels, predictions)
        tp, tp_up = _count("true_positives", math_ops.logical_and(labels, predictions), weights)
        fp, fp_up = _count(
            "false_positives",
            math_ops.logical_and(math_ops.logical_not(labels), predictions),
            weights,
        )
        value = _safe_div(tp, tp + fp, "value")
        update = _safe_div(tp_up, tp_up + fp_up, "update_op")
        return _collect(value, update, metrics_collections, updates_collections)


def recall(
    labels,
    predictions,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """``true_positives / (true_positives + false_negatives)`` of boolean predictions."""
    with variable_scope(name, "recall", [predictions, labels, weights]):
        labels, predictions = _bools(labels, predictions)
        tp, tp_up = _count("true_positives", math_ops.logical_and(labels, predictions), weights)
        fn, fn_up = _count(
            "false_negatives",
            math_ops.logical_and(labels, math_ops.logical_not(predictions)),
            weights,
        )
        value = _safe_div(tp, tp + fn, "value")
        update = _safe_div(tp_up, tp_up + fn_up, "update_op")
        return _collect(value, update, metrics_collections, updates_collections)


_EPSILON = 1e-7


def auc(
    labels,
    predictions,
    weights=None,
    num_thresholds=200,
    metrics_collections=None,
    updates_collections=None,
    curve="ROC",
    name=None,
    summation_method="trapezoidal",
    thresholds=None,
):
    """The area under the ROC (or PR) curve, from confusion counts at ``num_thresholds``
    evenly spaced thresholds, summed with the trapezoidal rule as TF1 does by default."""
    if curve not in ("ROC", "PR"):
        raise ValueError(f"curve must be either ROC or PR, {curve} unknown")
    if summation_method != "trapezoidal":
        raise NotImplementedError("auc supports summation_method='trapezoidal' only")
    if thresholds is None:
        if int(num_thresholds) < 2:
            raise ValueError("num_thresholds must be > 1.")
        n = int(num_thresholds)
        inner = [(i + 1) * 1.0 / (n - 1) for i in range(n - 2)]
        thresholds = [0.0 - _EPSILON] + inner + [1.0 + _EPSILON]
    else:
        thresholds = [0.0 - _EPSILON] + [float(t) for t in thresholds] + [1.0 + _EPSILON]
    n = len(thresholds)
    with variable_scope(name, "auc", [labels, predictions, weights]):
        labels = math_ops.cast(convert_to_tensor(labels), dtypes.bool)
        preds = math_ops.cast(convert_to_tensor(predictions), dtypes.float32)
        _check_same_shape(labels, preds)
        flat_p = array_ops.reshape(preds, [1, -1])
        flat_l = array_ops.reshape(labels, [1, -1])
        w = array_ops.reshape(_weights(preds, weights), [1, -1])
        above = math_ops.greater(flat_p, constant([[t] for t in thresholds], dtypes.float32))
        not_label = math_ops.logical_not(flat_l)
        not_above = math_ops.logical_not(above)

        def tally(var_name, cond):
            var = _metric_variable([n], dtypes.float32, var_name)
            c = math_ops.cast(cond, dtypes.float32) * w
            return var, state.assign_add(var, reduction.reduce_sum(c, axis=1))

        tp, tp_up = tally("true_positives", math_ops.logical_and(flat_l, above))
        fn, fn_up = tally("false_negatives", math_ops.logical_and(flat_l, not_above))
        tn, tn_up = tally("true_negatives", math_ops.logical_and(not_label, not_above))
        fp, fp_up = tally("false_positives", math_ops.logical_and(not_label, above))

        def area(tp, fn, tn, fp, out_name):
            rec = (tp + _EPSILON) / (tp + fn + _EPSILON)
            if curve == "ROC":
                x = fp / (fp + tn + _EPSILON)
                y = rec
            else:
                x = rec
                y = (tp + _EPSILON) / (tp + fp + _EPSILON)
            return reduction.reduce_sum(
                (x[: n - 1] - x[1:]) * (y[: n - 1] + y[1:]) / 2.0, name=out_name
            )

        value = area(tp, fn, tn, fp, "value")
        update = area(tp_up, fn_up, tn_up, fp_up, "update_op")
        return _collect(value, update, metrics_collections, updates_collections)
