"""TF1's streaming metrics (``tf.metrics``): each returns ``(value, update_op)``.

The running totals are local variables (collections ``LOCAL_VARIABLES`` and
``METRIC_VARIABLES``, initialized by ``tf.local_variables_initializer()``) named as TF1 names
them (``accuracy/total``, ``precision/true_positives/count``, ``auc/true_positives``...).
The other metrics live in ``metrics_more`` (errors, confusion counts, at thresholds, per-class)
and ``metrics_at_k`` (top-k over label sets); this module is the ``tf.metrics`` namespace.
Running ``update_op`` folds a batch into the totals and returns the updated metric;
``value`` reads the metric without changing it.

>>> acc, acc_update = tf.metrics.accuracy(labels, predictions)
>>> sess.run(tf.local_variables_initializer())
>>> for batch in batches: sess.run(acc_update, feed(batch))
>>> sess.run(acc)
"""

from __future__ import annotations

from engine import dtypes
from engine.metrics_at_k import (
    average_precision_at_k,
    precision_at_k,
    precision_at_top_k,
    recall_at_k,
    recall_at_top_k,
    sparse_average_precision_at_k,
    sparse_precision_at_k,
)
from engine.metrics_common import collect as _collect
from engine.metrics_common import remove_squeezable_dimensions, weighted_mean
from engine.metrics_more import (
    confusion_at_thresholds,
    false_negatives,
    false_negatives_at_thresholds,
    false_positives,
    false_positives_at_thresholds,
    mean_absolute_error,
    mean_cosine_distance,
    mean_iou,
    mean_per_class_accuracy,
    mean_relative_error,
    mean_squared_error,
    mean_tensor,
    percentage_below,
    precision_at_thresholds,
    recall_at_thresholds,
    root_mean_squared_error,
    sensitivity_at_specificity,
    specificity_at_sensitivity,
    true_negatives,
    true_negatives_at_thresholds,
    true_positives,
    true_positives_at_thresholds,
)
from engine.ops import array as array_ops
from engine.ops import math as math_ops
from engine.ops import reduction
from engine.variable_scope import variable_scope

__all__ = [
    "mean",
    "accuracy",
    "precision",
    "recall",
    "auc",
    "mean_absolute_error",
    "mean_squared_error",
    "root_mean_squared_error",
    "mean_relative_error",
    "mean_cosine_distance",
    "mean_tensor",
    "percentage_below",
    "true_positives",
    "false_positives",
    "true_negatives",
    "false_negatives",
    "true_positives_at_thresholds",
    "false_positives_at_thresholds",
    "true_negatives_at_thresholds",
    "false_negatives_at_thresholds",
    "precision_at_thresholds",
    "recall_at_thresholds",
    "sensitivity_at_specificity",
    "specificity_at_sensitivity",
    "mean_per_class_accuracy",
    "mean_iou",
    "precision_at_k",
    "recall_at_k",
    "average_precision_at_k",
    "precision_at_top_k",
    "recall_at_top_k",
    "sparse_precision_at_k",
    "sparse_average_precision_at_k",
]


def _safe_div(num, den, name):
    return math_ops.where_v2(
        math_ops.greater(den, 0), math_ops.truediv(num, den), array_ops.zeros_like(num), name=name
    )


def mean(values, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """The (weighted) mean of every value seen: ``total / count``."""
    return weighted_mean(values, weights, metrics_collections, updates_collections, name)


def accuracy(
    labels,
    predictions,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """How often ``predictions`` equals ``labels``."""
    predictions, labels, weights = remove_squeezable_dimensions(predictions, labels, weights)
    if predictions.dtype.base_dtype is not labels.dtype.base_dtype:
        predictions = math_ops.cast(predictions, labels.dtype.base_dtype)
    correct = math_ops.cast(math_ops.equal(predictions, labels), dtypes.float32)
    return weighted_mean(
        correct, weights, metrics_collections, updates_collections, name or "accuracy"
    )


def _bools(labels, predictions, weights):
    """``(predictions, labels, weights)``: booleans of one rank, weights shaped to them."""
    return remove_squeezable_dimensions(
        math_ops.cast(predictions, dtypes.bool), math_ops.cast(labels, dtypes.bool), weights
    )


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
        predictions, labels, weights = _bools(labels, predictions, weights)
        tp, tp_up = true_positives(labels, predictions, weights)
        fp, fp_up = false_positives(labels, predictions, weights)
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
        predictions, labels, weights = _bools(labels, predictions, weights)
        tp, tp_up = true_positives(labels, predictions, weights)
        fn, fn_up = false_negatives(labels, predictions, weights)
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
        v, u = confusion_at_thresholds(labels, predictions, thresholds, weights)
        tp, fn, tn, fp = v["tp"], v["fn"], v["tn"], v["fp"]
        tp_up, fn_up, tn_up, fp_up = u["tp"], u["fn"], u["tn"], u["fp"]

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
