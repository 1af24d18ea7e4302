"""The rest of TF1's streaming metrics over dense values (``tf.metrics``): errors and means,
confusion counts (overall and at thresholds), precision/recall at thresholds,
sensitivity/specificity, per-class accuracy and mean IoU.

Each returns ``(value, update_op)`` over local variables named as TF1 names them
(``mean_absolute_error/total``, ``true_positives/count``, ``precision_at_thresholds/
true_positives``, ``mean_iou/total_confusion_matrix``...); ``engine.metrics`` re-exports them.

>>> mae, mae_update = tf.metrics.mean_absolute_error(labels, predictions)
>>> tp, tp_update = tf.metrics.true_positives_at_thresholds(labels, scores, [0.25, 0.5])
"""

from __future__ import annotations

from engine import dtypes
from engine.framework.constant_op import constant, convert_to_tensor
from engine.framework.graph import Tensor, control_dependencies
from engine.metrics_common import (
    broadcast_weights,
    check_same_shape,
    collect,
    metric_variable,
    remove_squeezable_dimensions,
    squeeze_labels,
    weighted_mean,
)
from engine.ops import array as array_ops
from engine.ops import linalg_ops, logging_ops, reduction, segment_ops, slicing, state
from engine.ops import math as math_ops
from engine.ops.math_more import div_no_nan
from engine.variable_scope import variable_scope

__all__ = [
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
]

_KEPSILON = 1e-7


# -----------------------------------------------------------------------------------------
# Errors and means
# -----------------------------------------------------------------------------------------


def mean_absolute_error(
    labels,
    predictions,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """The (weighted) mean of ``|predictions - labels|``."""
    predictions, labels, weights = remove_squeezable_dimensions(predictions, labels, weights)
    errors = math_ops.abs(predictions - labels)
    return weighted_mean(
        errors, weights, metrics_collections, updates_collections, name or "mean_absolute_error"
    )


def mean_squared_error(
    labels,
    predictions,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """The (weighted) mean of ``(labels - predictions)**2``."""
    predictions, labels, weights = remove_squeezable_dimensions(predictions, labels, weights)
    errors = math_ops.squared_difference(labels, predictions)
    return weighted_mean(
        errors, weights, metrics_collections, updates_collections, name or "mean_squared_error"
    )


def root_mean_squared_error(
    labels,
    predictions,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """The square root of ``mean_squared_error`` (variables ``root_mean_squared_error/*``)."""
    predictions, labels, weights = remove_squeezable_dimensions(predictions, labels, weights)
    mse, update_mse = mean_squared_error(
        labels, predictions, weights, None, None, name or "root_mean_squared_error"
    )
    return collect(
        math_ops.sqrt(mse), math_ops.sqrt(update_mse), metrics_collections, updates_collections
    )


def mean_relative_error(
    labels,
    predictions,
    normalizer,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """The (weighted) mean of ``|labels - predictions| / normalizer`` (0 where the
    normalizer is 0)."""
    predictions, labels, weights = remove_squeezable_dimensions(predictions, labels, weights)
    normalizer, predictions = squeeze_labels(normalizer, predictions)
    check_same_shape(normalizer, predictions)
    relative = math_ops.where_v2(
        math_ops.equal(normalizer, 0.0),
        array_ops.zeros_like(labels),
        math_ops.divide(math_ops.abs(labels - predictions), normalizer),
    )
    return weighted_mean(
        relative, weights, metrics_collections, updates_collections, name or "mean_relative_error"
    )


def mean_cosine_distance(
    labels,
    predictions,
    dim,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """``1 - mean(sum(labels * predictions, dim))`` of unit-normalized vectors along ``dim``."""
    predictions, labels, weights = remove_squeezable_dimensions(predictions, labels, weights)
    radial = reduction.reduce_sum(math_ops.multiply(predictions, labels), axis=[dim], keepdims=True)
    mean_t, update = weighted_mean(radial, weights, None, None, name or "mean_cosine_distance")
    return collect(
        math_ops.subtract(1.0, mean_t),
        math_ops.subtract(1.0, update),
        metrics_collections,
        updates_collections,
    )


def mean_tensor(
    values, weights=None, metrics_collections=None, updates_collections=None, name=None
):
    """The element-wise (weighted) mean of ``values``, whose static shape must be known:
    variables ``mean/total_tensor`` and ``mean/count_tensor``."""
    with variable_scope(name, "mean", [values, weights]):
        values = math_ops.cast(values, dtypes.float32)
        if not values.shape.is_fully_defined():
            raise ValueError(f"mean_tensor needs values of a known shape, got {values.shape}")
        total = metric_variable(values.shape, dtypes.float32, "total_tensor")
        count = metric_variable(values.shape, dtypes.float32, "count_tensor")
        num_values = array_ops.ones_like(values)
        if weights is not None:
            values, _, weights = remove_squeezable_dimensions(values, None, weights)
            weights = broadcast_weights(weights, values)
            values = math_ops.multiply(values, weights)
            num_values = math_ops.multiply(num_values, weights)
        update_total = state.assign_add(total, values)
        # (TF1 orders this after ``values`` by a control edge; dataflow needs none here)
        update_count = state.assign_add(count, num_values)
        value = div_no_nan(total, math_ops.maximum(count, 0.0), name="value")
        update = div_no_nan(update_total, math_ops.maximum(update_count, 0.0), name="update_op")
        return collect(value, update, metrics_collections, updates_collections)


def percentage_below(
    values,
    threshold,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """The (weighted) fraction of ``values`` below ``threshold``."""
    below = math_ops.cast(math_ops.less(values, threshold), dtypes.float32)
    return weighted_mean(
        below,
        weights,
        metrics_collections,
        updates_collections,
        name or "percentage_below_threshold",
    )


# -----------------------------------------------------------------------------------------
# Confusion counts
# -----------------------------------------------------------------------------------------

# metric -> (label, prediction) that it counts
_OUTCOMES = {
    "true_positives": (True, True),
    "false_positives": (False, True),
    "true_negatives": (False, False),
    "false_negatives": (True, False),
}


def _count_condition(condition: Tensor, weights, metrics_collections, updates_collections):
    """A ``count`` variable in the current scope summing the (weighted) True entries."""
    count = metric_variable([], dtypes.float32, "count")
    values = math_ops.cast(condition, dtypes.float32)
    if weights is not None:
        weights = convert_to_tensor(weights)
        w_rank, v_rank = weights.shape.rank, values.shape.rank
        if w_rank not in (None, 0) and v_rank is not None and w_rank != v_rank:
            raise ValueError(
                f"weights must have rank 0 or {v_rank} (the rank of the values), "
                f"got shape {weights.shape}"
            )
        values = math_ops.multiply(values, math_ops.cast(weights, dtypes.float32))
    value = array_ops.identity(count)
    update = state.assign_add(count, reduction.reduce_sum(values))
    return collect(value, update, metrics_collections, updates_collections)


def _confusion_count(
    kind, labels, predictions, weights, metrics_collections, updates_collections, name
):
    with variable_scope(name, kind, [predictions, labels, weights]):
        predictions, labels, weights = remove_squeezable_dimensions(
            math_ops.cast(predictions, dtypes.bool), math_ops.cast(labels, dtypes.bool), weights
        )
        want_label, want_prediction = _OUTCOMES[kind]
        condition = math_ops.logical_and(
            labels if want_label else math_ops.logical_not(labels),
            predictions if want_prediction else math_ops.logical_not(predictions),
        )
        return _count_condition(condition, weights, metrics_collections, updates_collections)


def _confusion_metric(kind: str, doc: str):
    """The public ``tf.metrics.<kind>`` (true/false positives/negatives)."""

    def metric(
        labels,
        predictions,
        weights=None,
        metrics_collections=None,
        updates_collections=None,
        name=None,
    ):
        return _confusion_count(
            kind, labels, predictions, weights, metrics_collections, updates_collections, name
        )

    metric.__name__ = metric.__qualname__ = kind
    metric.__doc__ = doc
    return metric


true_positives = _confusion_metric(
    "true_positives",
    "The (weighted) count of entries where both ``labels`` and ``predictions`` are true.",
)
false_positives = _confusion_metric(
    "false_positives", "The (weighted) count of false ``labels`` with true ``predictions``."
)
true_negatives = _confusion_metric(
    "true_negatives",
    "The (weighted) count of entries where both ``labels`` and ``predictions`` are false.",
)
false_negatives = _confusion_metric(
    "false_negatives", "The (weighted) count of true ``labels`` with false ``predictions``."
)


# -----------------------------------------------------------------------------------------
# At thresholds
# -----------------------------------------------------------------------------------------

_ALL_COUNTS = ("tp", "fn", "tn", "fp")
_COUNT_NAMES = {
    "tp": "true_positives",
    "fn": "false_negatives",
    "tn": "true_negatives",
    "fp": "false_positives",
}


def _thresholded_inputs(labels, predictions, weights):
    """``(predictions, labels, weights)`` as float32/bool after checking predictions lie in
    [0, 1] at run time (InvalidArgumentError otherwise)."""
    predictions = convert_to_tensor(predictions)
    zero, one = (math_ops.cast(v, predictions.dtype.base_dtype) for v in (0.0, 1.0))
    message = "predictions must be in [0, 1]"
    checks = [
        logging_ops.assert_greater_equal(predictions, zero, message=message),
        logging_ops.assert_less_equal(predictions, one, message=message),
    ]
    with control_dependencies(checks):
        predictions = array_ops.identity(math_ops.cast(predictions, dtypes.float32))
        return remove_squeezable_dimensions(
            predictions, math_ops.cast(labels, dtypes.bool), weights
        )


def confusion_at_thresholds(labels, predictions, thresholds, weights, includes=_ALL_COUNTS):
    """TF1's ``_confusion_matrix_at_thresholds`` (also behind ``metrics.auc``): ({key:
    variable}, {key: update}) for the counts in ``includes`` ("tp", "fn", "tn", "fp"), each
    of shape ``[len(thresholds)]``; an entry is predicted positive when its prediction is
    above the threshold."""
    for key in includes:
        if key not in _ALL_COUNTS:
            raise ValueError(f"Invalid key: {key}")
    predictions, labels, weights = _thresholded_inputs(labels, predictions, weights)
    n = len(thresholds)
    pred_pos = math_ops.greater(
        array_ops.reshape(predictions, [1, -1]),
        constant([[float(t)] for t in thresholds], dtypes.float32),
    )
    label_pos = array_ops.reshape(labels, [1, -1])
    sides = {
        "tp": (label_pos, pred_pos),
        "fn": (label_pos, math_ops.logical_not(pred_pos)),
        "tn": (math_ops.logical_not(label_pos), math_ops.logical_not(pred_pos)),
        "fp": (math_ops.logical_not(label_pos), pred_pos),
    }
    weights_row = None
    if weights is not None:
        weights_row = array_ops.reshape(broadcast_weights(weights, predictions), [1, -1])
    values, updates = {}, {}
    for key in _ALL_COUNTS:
        if key not in includes:
            continue
        var = metric_variable([n], dtypes.float32, _COUNT_NAMES[key])
        hits = math_ops.cast(math_ops.logical_and(*sides[key]), dtypes.float32)
        if weights_row is not None:
            hits = hits * weights_row
        values[key] = var
        updates[key] = state.assign_add(var, reduction.reduce_sum(hits, 1))
    return values, updates


def _count_at_thresholds(
    key, labels, predictions, thresholds, weights, metrics_collections, updates_collections, name
):
    with variable_scope(name, _COUNT_NAMES[key], [predictions, labels, weights]):
        values, updates = confusion_at_thresholds(
            labels, predictions, thresholds, weights, includes=(key,)
        )
        value = array_ops.identity(values[key])
        return collect(value, updates[key], metrics_collections, updates_collections)


def _count_at_thresholds_metric(key: str, doc: str):
    """The public ``tf.metrics.<count>_at_thresholds`` for ``key`` ("tp", "fp"...)."""

    def metric(
        labels,
        predictions,
        thresholds,
        weights=None,
        metrics_collections=None,
        updates_collections=None,
        name=None,
    ):
        return _count_at_thresholds(
            key,
            labels,
            predictions,
            thresholds,
            weights,
            metrics_collections,
            updates_collections,
            name,
        )

    metric.__name__ = metric.__qualname__ = f"{_COUNT_NAMES[key]}_at_thresholds"
    metric.__doc__ = doc
    return metric


true_positives_at_thresholds = _count_at_thresholds_metric(
    "tp", "(Weighted) true positives with predictions above each of ``thresholds``."
)
false_positives_at_thresholds = _count_at_thresholds_metric(
    "fp", "(Weighted) false positives with predictions above each of ``thresholds``."
)
true_negatives_at_thresholds = _count_at_thresholds_metric(
    "tn", "(Weighted) true negatives with predictions at or below each of ``thresholds``."
)
false_negatives_at_thresholds = _count_at_thresholds_metric(
    "fn", "(Weighted) false negatives with predictions at or below each of ``thresholds``."
)


def precision_at_thresholds(
    labels,
    predictions,
    thresholds,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """``tp / (tp + fp + 1e-7)`` at each of ``thresholds``."""
    with variable_scope(name, "precision_at_thresholds", [predictions, labels, weights]):
        values, updates = confusion_at_thresholds(
            labels, predictions, thresholds, weights, includes=("tp", "fp")
        )

        def compute(tp, fp, which):
            return math_ops.divide(tp, _KEPSILON + tp + fp, name="precision_" + which)

        value = compute(values["tp"], values["fp"], "value")
        update = compute(updates["tp"], updates["fp"], "update_op")
        return collect(value, update, metrics_collections, updates_collections)


def recall_at_thresholds(
    labels,
    predictions,
    thresholds,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """``tp / (tp + fn + 1e-7)`` at each of ``thresholds``."""
    with variable_scope(name, "recall_at_thresholds", [predictions, labels, weights]):
        values, updates = confusion_at_thresholds(
            labels, predictions, thresholds, weights, includes=("tp", "fn")
        )

        def compute(tp, fn, which):
            return math_ops.divide(tp, _KEPSILON + tp + fn, name="recall_" + which)

        value = compute(values["tp"], values["fn"], "value")
        update = compute(updates["tp"], updates["fn"], "update_op")
        return collect(value, update, metrics_collections, updates_collections)


def _even_thresholds(num_thresholds: int, last: float) -> list[float]:
    if int(num_thresholds) < 2:
        raise ValueError(f"num_thresholds must be > 1, got {num_thresholds}")
    n = int(num_thresholds)
    inner = [(i + 1) * 1.0 / (n - 1) for i in range(n - 2)]
    return [0.0 - _KEPSILON, *inner, last]


def _check_rate(value, what: str) -> None:
    if value < 0 or value > 1:
        raise ValueError(f"`{what}` must be in the range [0, 1]. Currently, `{what}` is {value}.")


def _sensitivity_at(tp, tn, fp, fn, specificity, name):
    specificities = math_ops.divide(tn, tn + fp + _KEPSILON)
    index = math_ops.cast(
        reduction.argmin(math_ops.abs(specificities - specificity), 0), dtypes.int32
    )
    tp_i, fn_i = slicing.gather(tp, index), slicing.gather(fn, index)
    return math_ops.divide(tp_i, tp_i + fn_i + _KEPSILON, name=name)


def sensitivity_at_specificity(
    labels,
    predictions,
    specificity,
    weights=None,
    num_thresholds=200,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """The sensitivity at the threshold whose specificity is nearest ``specificity`` (the
    first such of ``num_thresholds`` evenly spaced thresholds)."""
    _check_rate(specificity, "specificity")
    with variable_scope(name, "sensitivity_at_specificity", [predictions, labels, weights]):
        thresholds = _even_thresholds(num_thresholds, 1.0 + _KEPSILON)
        v, u = confusion_at_thresholds(labels, predictions, thresholds, weights)
        value = _sensitivity_at(v["tp"], v["tn"], v["fp"], v["fn"], specificity, "value")
        update = _sensitivity_at(u["tp"], u["tn"], u["fp"], u["fn"], specificity, "update_op")
        return collect(value, update, metrics_collections, updates_collections)


def _specificity_at(tp, tn, fp, fn, sensitivity, name):
    distance = math_ops.abs(math_ops.divide(tp, tp + fn + _KEPSILON) - sensitivity)
    at_min = math_ops.cast(math_ops.equal(distance, reduction.reduce_min(distance)), dtypes.int64)
    # argmax of the running count: the last threshold at the minimal distance, as TF1
    index = math_ops.cast(reduction.argmax(reduction.cumsum(at_min), 0), dtypes.int32)
    tn_i, fp_i = slicing.gather(tn, index), slicing.gather(fp, index)
    return math_ops.divide(tn_i, tn_i + fp_i + _KEPSILON, name=name)


def specificity_at_sensitivity(
    labels,
    predictions,
    sensitivity,
    weights=None,
    num_thresholds=200,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """The specificity at the threshold whose sensitivity is nearest ``sensitivity`` (the
    last such of ``num_thresholds`` evenly spaced thresholds)."""
    _check_rate(sensitivity, "sensitivity")
    with variable_scope(name, "specificity_at_sensitivity", [predictions, labels, weights]):
        thresholds = _even_thresholds(num_thresholds, 1.0 - _KEPSILON)
        v, u = confusion_at_thresholds(labels, predictions, thresholds, weights)
        value = _specificity_at(v["tp"], v["tn"], v["fp"], v["fn"], sensitivity, "value")
        update = _specificity_at(u["tp"], u["tn"], u["fp"], u["fn"], sensitivity, "update_op")
        return collect(value, update, metrics_collections, updates_collections)


# -----------------------------------------------------------------------------------------
# Multi-class
# -----------------------------------------------------------------------------------------


def _flat(t: Tensor) -> Tensor:
    """``t`` flattened when its rank is not known to be at most 1."""
    rank = t.shape.rank
    return t if rank is not None and rank <= 1 else array_ops.reshape(t, [-1])


def mean_per_class_accuracy(
    labels,
    predictions,
    num_classes,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """The mean over classes of each class's (weighted) accuracy. ``update_op`` returns the
    per-class accuracies (shape ``[num_classes]``), as in TF1."""
    with variable_scope(name, "mean_accuracy", [predictions, labels, weights]):
        labels = _flat(math_ops.cast(labels, dtypes.int64))
        predictions = _flat(convert_to_tensor(predictions))
        check_same_shape(labels, predictions)
        total = metric_variable([num_classes], dtypes.float32, "total")
        count = metric_variable([num_classes], dtypes.float32, "count")
        ones = array_ops.ones_like(labels, dtype=dtypes.float32)
        if predictions.dtype.base_dtype is not labels.dtype.base_dtype:
            predictions = math_ops.cast(predictions, labels.dtype.base_dtype)
        is_correct = math_ops.cast(math_ops.equal(predictions, labels), dtypes.float32)
        if weights is not None:
            weights = math_ops.cast(_flat(convert_to_tensor(weights)), dtypes.float32)
            is_correct = is_correct * weights
            ones = ones * weights
        update_total = state.assign_add(
            total, segment_ops.unsorted_segment_sum(ones, labels, num_classes)
        )
        update_count = state.assign_add(
            count, segment_ops.unsorted_segment_sum(is_correct, labels, num_classes)
        )
        per_class = div_no_nan(count, math_ops.maximum(total, 0.0))
        value = reduction.reduce_mean(per_class, name="mean_accuracy")
        update = div_no_nan(update_count, math_ops.maximum(update_total, 0.0), name="update_op")
        return collect(value, update, metrics_collections, updates_collections)


def _confusion_matrix(labels, predictions, num_classes: int, weights) -> Tensor:
    """TF's ``confusion_matrix`` (float64, rows are labels), with its bounds checks."""
    labels, predictions = squeeze_labels(labels, predictions)
    n = constant(num_classes, dtypes.int64)
    checks = [
        logging_ops.assert_non_negative(labels, message="`labels` contains negative values"),
        logging_ops.assert_non_negative(
            predictions, message="`predictions` contains negative values"
        ),
        logging_ops.assert_less(labels, n, message="`labels` out of bound"),
        logging_ops.assert_less(predictions, n, message="`predictions` out of bound"),
    ]
    with control_dependencies(checks):
        cell = array_ops.identity(labels * n + predictions)
    if weights is None:
        counts = array_ops.ones_like(cell, dtype=dtypes.float64)
    else:
        counts = math_ops.cast(weights, dtypes.float64) * array_ops.ones_like(
            cell, dtype=dtypes.float64
        )
    flat = segment_ops.unsorted_segment_sum(counts, cell, num_classes * num_classes)
    return array_ops.reshape(flat, [num_classes, num_classes])


def _mean_iou(total_cm: Tensor) -> Tensor:
    sum_over_row = math_ops.cast(reduction.reduce_sum(total_cm, 0), dtypes.float32)
    sum_over_col = math_ops.cast(reduction.reduce_sum(total_cm, 1), dtypes.float32)
    cm_diag = math_ops.cast(linalg_ops.matrix_diag_part(total_cm), dtypes.float32)
    denominator = sum_over_row + sum_over_col - cm_diag
    # only the classes present in labels or predictions count
    num_valid = reduction.reduce_sum(
        math_ops.cast(math_ops.not_equal(denominator, 0.0), dtypes.float32)
    )
    denominator = math_ops.where_v2(
        math_ops.greater(denominator, 0.0), denominator, array_ops.ones_like(denominator)
    )
    iou = math_ops.divide(cm_diag, denominator)
    return math_ops.where_v2(
        math_ops.greater(num_valid, 0.0),
        reduction.reduce_sum(iou, name="mean_iou") / num_valid,
        constant(0.0, dtypes.float32),
    )


def mean_iou(
    labels,
    predictions,
    num_classes,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """The mean over present classes of intersection-over-union, from a running float64
    confusion matrix ``mean_iou/total_confusion_matrix``, which ``update_op`` returns."""
    with variable_scope(name, "mean_iou", [predictions, labels, weights]):
        labels, predictions = convert_to_tensor(labels), convert_to_tensor(predictions)
        check_same_shape(labels, predictions)
        total_cm = metric_variable(
            [num_classes, num_classes], dtypes.float64, "total_confusion_matrix"
        )
        labels = _flat(math_ops.cast(labels, dtypes.int64))
        predictions = _flat(math_ops.cast(predictions, dtypes.int64))
        if weights is not None:
            weights = _flat(convert_to_tensor(weights))
        current = _confusion_matrix(labels, predictions, num_classes, weights)
        update = state.assign_add(total_cm, current)
        return collect(_mean_iou(total_cm), update, metrics_collections, updates_collections)
