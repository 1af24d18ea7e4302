"""TF1's top-k streaming metrics (``tf.metrics.precision_at_k``, ``recall_at_k``,
``average_precision_at_k``, ``precision_at_top_k``, ``recall_at_top_k``).

Labels are, per row of ``predictions`` (``[D1, ... DN, num_classes]``), a set of class ids:
an int tensor ``[D1, ... DN, num_labels]`` (every entry is in the set, as TF's dense set
ops take it) or ``[D1, ... DN]`` (one label a row), or a ``SparseTensor`` (only its present
entries). TF computes the set sizes with ``tf.sets``; here the same counts come from
comparing every prediction with every label of its row, counting each distinct id once.

The running totals are float64 local variables named by name scope, as TF1 does:
``precision_at_5/true_positive_at_5``, ``recall_at_5_class3/false_negative_at_5_class3``,
``average_precision_at_5/total``...
"""

from __future__ import annotations

from engine import dtypes
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.sparse_tensor import SparseTensor, convert_to_sparse_tensor, is_sparse
from engine.metrics_common import broadcast_weights, collect, metric_variable
from engine.ops import array as array_ops
from engine.ops import control_flow, nn, reduction, state
from engine.ops import math as math_ops
from engine.ops.math_more import div_no_nan
from engine.sparse_api import sparse_tensor_to_dense

__all__ = [
    "precision_at_k",
    "recall_at_k",
    "average_precision_at_k",
    "precision_at_top_k",
    "recall_at_top_k",
    "sparse_precision_at_k",
    "sparse_average_precision_at_k",
]


def _at_k_name(name: str, k=None, class_id=None) -> str:
    name = f"{name}_at_{int(k)}" if k is not None else f"{name}_at_k"
    return name if class_id is None else f"{name}_class{int(class_id)}"


# -----------------------------------------------------------------------------------------
# Label sets as (ids, present) pairs
# -----------------------------------------------------------------------------------------


def _dense_label_set(labels):
    """``(ids, present)``: int64 ids and, for a SparseTensor, where an entry is present
    (``None`` when every entry is)."""
    if is_sparse(labels):
        sp = convert_to_sparse_tensor(labels)
        ids = sparse_tensor_to_dense(sp, default_value=array_ops.zeros([], sp.dtype))
        marks = SparseTensor(
            sp.indices, array_ops.ones_like(sp.values, dtype=dtypes.int32), sp.dense_shape
        )
        present = math_ops.cast(sparse_tensor_to_dense(marks), dtypes.bool)
        return math_ops.cast(ids, dtypes.int64), present
    return convert_to_tensor(labels), None


def _expand_labels(ids: Tensor, present, predictions: Tensor):
    """TF1's ``_maybe_expand_labels``: one label a row gains a trailing dim of 1."""
    labels_rank, predictions_rank = ids.shape.rank, predictions.shape.rank
    if labels_rank is None or predictions_rank is None:
        raise ValueError(
            "top-k metrics need labels and predictions of known rank, got shapes "
            f"{ids.shape} and {predictions.shape}"
        )
    if predictions_rank == labels_rank:
        return ids, present
    if predictions_rank != labels_rank + 1:
        raise ValueError(
            f"Unexpected labels shape {ids.shape} for predictions shape "
            f"{predictions.shape}. Predictions rank should be the same rank as labels "
            "rank or labels rank plus one ."
        )
    with name_scope(None, "expand_labels", [ids]):
        ids = array_ops.expand_dims(ids, -1)
        if present is not None:
            present = array_ops.expand_dims(present, -1)
        return ids, present


def _label_set(labels, predictions: Tensor):
    ids, present = _dense_label_set(labels)
    ids, present = _expand_labels(ids, present, predictions)
    return math_ops.cast(ids, dtypes.int64), present


def _member(a: Tensor, b: Tensor, b_present) -> Tensor:
    """``[..., i]``: whether ``a[..., i]`` is a (present) id of ``b``'s row."""
    same = math_ops.equal(array_ops.expand_dims(a, -1), array_ops.expand_dims(b, -2))
    if b_present is not None:
        same = math_ops.logical_and(same, array_ops.expand_dims(b_present, -2))
    return reduction.reduce_any(same, -1)


def _first(a: Tensor, a_present) -> Tensor:
    """``[..., i]``: ``a[..., i]`` is present and no earlier present entry of its row has
    its id, so that counting these counts each distinct id once, as set sizes do."""
    index = array_ops.range(array_ops.shape(a)[-1])
    earlier = math_ops.less(array_ops.expand_dims(index, 0), array_ops.expand_dims(index, 1))
    same = math_ops.logical_and(
        math_ops.equal(array_ops.expand_dims(a, -1), array_ops.expand_dims(a, -2)), earlier
    )
    if a_present is not None:
        same = math_ops.logical_and(same, array_ops.expand_dims(a_present, -2))
    first = math_ops.logical_not(reduction.reduce_any(same, -1))
    return first if a_present is None else math_ops.logical_and(first, a_present)


def _select(ids: Tensor, present, class_id):
    """The entries of ``ids`` equal to ``class_id`` (TF1's ``_select_class_id``)."""
    if class_id is None:
        return present
    is_class = math_ops.equal(ids, math_ops.cast(class_id, dtypes.int64))
    return is_class if present is None else math_ops.logical_and(present, is_class)


def _set_count(kind: str, labels, predictions_idx: Tensor, class_id) -> Tensor:
    """Per row, the size of ``predictions ∩ labels`` ("tp"), ``predictions - labels``
    ("fp") or ``labels - predictions`` ("fn"), as float64."""
    ids, present = labels
    present = _select(ids, present, class_id)
    p_present = _select(predictions_idx, None, class_id)
    if kind == "fn":
        hit = math_ops.logical_and(
            _first(ids, present), math_ops.logical_not(_member(ids, predictions_idx, p_present))
        )
    else:
        found = _member(predictions_idx, ids, present)
        hit = math_ops.logical_and(
            _first(predictions_idx, p_present),
            found if kind == "tp" else math_ops.logical_not(found),
        )
    return reduction.reduce_sum(math_ops.cast(hit, dtypes.float64), -1)


_COUNT_SCOPES = {
    "tp": ("true_positive", "true_positives"),
    "fp": ("false_positive", "false_positives"),
    "fn": ("false_negative", "false_negatives"),
}


def _streaming_count(kind, labels, predictions_idx, k, class_id, weights):
    """A ``<scope>/<kind>_at_<k>`` float64 total of the (weighted) per-row counts."""
    outer, inner = _COUNT_SCOPES[kind]
    with name_scope(None, _at_k_name(outer, k, class_id), [predictions_idx, weights]) as scope:
        with name_scope(None, inner, [predictions_idx, weights]):
            counts = _set_count(kind, labels, predictions_idx, class_id)
            if weights is not None:
                counts = math_ops.multiply(
                    counts, broadcast_weights(weights, counts, dtypes.float64)
                )
        batch_total = math_ops.cast(reduction.reduce_sum(counts), dtypes.float64)
        var = metric_variable([], dtypes.float64, scope)
        return var, state.assign_add(var, batch_total, name="update")


# -----------------------------------------------------------------------------------------
# Precision and recall
# -----------------------------------------------------------------------------------------


def _top_k_ratio(kind, labels, predictions_idx, k, class_id, weights, collections, name):
    """``tp / (tp + <kind>)`` for precision ("fp") or recall ("fn"); NaN before any count,
    as in TF1."""
    metric_collections, update_collections = collections
    default = _at_k_name("precision" if kind == "fp" else "recall", k, class_id)
    with name_scope(name, default, [predictions_idx, labels, weights]):
        predictions_idx = convert_to_tensor(predictions_idx)
        label_set = _label_set(labels, predictions_idx)
        top_k_idx = math_ops.cast(predictions_idx, dtypes.int64)
        tp, tp_update = _streaming_count("tp", label_set, top_k_idx, k, class_id, weights)
        other, other_update = _streaming_count(kind, label_set, top_k_idx, k, class_id, weights)
        value = math_ops.divide(tp, math_ops.add(tp, other))
        update = math_ops.divide(tp_update, math_ops.add(tp_update, other_update), name="update")
        return collect(value, update, metric_collections, update_collections)


def precision_at_top_k(
    labels,
    predictions_idx,
    k=None,
    class_id=None,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """Of the ids in ``predictions_idx`` (``[D1, ... DN, k]``), the (weighted) fraction that
    are labels of their row; with ``class_id``, of the rows predicting that class, the
    fraction labelled with it."""
    return _top_k_ratio(
        "fp",
        labels,
        predictions_idx,
        k,
        class_id,
        weights,
        (metrics_collections, updates_collections),
        name,
    )


def recall_at_top_k(
    labels,
    predictions_idx,
    k=None,
    class_id=None,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """Of the labels, the (weighted) fraction among their row's ``predictions_idx``."""
    return _top_k_ratio(
        "fn",
        labels,
        predictions_idx,
        k,
        class_id,
        weights,
        (metrics_collections, updates_collections),
        name,
    )


def precision_at_k(
    labels,
    predictions,
    k,
    class_id=None,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """``precision_at_top_k`` of the ``k`` highest-scoring classes of ``predictions``."""
    default = _at_k_name("precision", k, class_id)
    with name_scope(name, default, [predictions, labels, weights]) as scope:
        _, top_k_idx = nn.top_k(predictions, k)
        return precision_at_top_k(
            labels,
            top_k_idx,
            k,
            class_id,
            weights,
            metrics_collections,
            updates_collections,
            name=scope,
        )


def recall_at_k(
    labels,
    predictions,
    k,
    class_id=None,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """``recall_at_top_k`` of the ``k`` highest-scoring classes of ``predictions``."""
    default = _at_k_name("recall", k, class_id)
    with name_scope(name, default, [predictions, labels, weights]) as scope:
        _, top_k_idx = nn.top_k(predictions, k)
        return recall_at_top_k(
            labels,
            top_k_idx,
            k,
            class_id,
            weights,
            metrics_collections,
            updates_collections,
            name=scope,
        )


def sparse_precision_at_k(
    labels,
    predictions,
    k,
    class_id=None,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """TF1's deprecated name of ``precision_at_k``."""
    return precision_at_k(
        labels, predictions, k, class_id, weights, metrics_collections, updates_collections, name
    )


# -----------------------------------------------------------------------------------------
# Average precision
# -----------------------------------------------------------------------------------------


def _clean_out_of_range(labels, num_classes: Tensor):
    """Label ids ``>= num_classes`` become -1 (never predicted), as TF1 does before
    counting the relevant labels."""
    ids, present = labels

    def clean():
        return math_ops.where_v2(
            math_ops.greater_equal(ids, num_classes), -1 * array_ops.ones_like(ids), ids
        )

    out_of_range = math_ops.greater_equal(reduction.reduce_max(ids), num_classes)
    return control_flow.cond(out_of_range, clean, lambda: array_ops.identity(ids)), present


def _num_relevant(ids: Tensor, present, k: int) -> Tensor:
    """Per row, the labels that can be found in ``k`` predictions: the non-negative entries
    of dense labels, or the distinct present ids of sparse ones, at most ``k``."""
    with name_scope(None, "num_relevant", [ids]):
        if present is None:
            counted = math_ops.cast(math_ops.greater_equal(ids, 0), dtypes.int64)
        else:
            counted = math_ops.cast(_first(ids, present), dtypes.int64)
        return math_ops.minimum(reduction.reduce_sum(counted, -1), k)


def _average_precision(labels, predictions_idx: Tensor) -> Tensor:
    """Per row, ``sum_i precision@i * relevant(i) / num_relevant`` over the ``k`` ids of
    ``predictions_idx`` (float64; NaN for a row without labels, as in TF1)."""
    with name_scope(None, "average_precision", [predictions_idx]):
        predictions_idx = math_ops.cast(predictions_idx, dtypes.int64)
        if predictions_idx.shape.rank == 0:
            raise ValueError("The rank of `predictions_idx` must be at least 1.")
        k = predictions_idx.shape[-1] if predictions_idx.shape.rank is not None else None
        k = getattr(k, "value", k)
        if k is None:
            raise ValueError(
                "The last dimension of predictions_idx must be set. Currently, it is None."
            )
        ids, present = _expand_labels(*labels, predictions_idx)
        relevant = math_ops.cast(_member(predictions_idx, ids, present), dtypes.float64)
        tp_per_k = reduction.cumsum(relevant, axis=-1)
        retrieved_per_k = reduction.cumsum(array_ops.ones_like(relevant), axis=-1)
        precision_sum = reduction.reduce_sum(tp_per_k / retrieved_per_k * relevant, -1)
        num_relevant = math_ops.cast(_num_relevant(ids, present, k), dtypes.float64)
        return math_ops.divide(precision_sum, num_relevant)


def _streaming_average_precision(labels, predictions_idx, weights, collections):
    """``<scope>/total`` and ``<scope>/max`` (the rows' weights): their ratio is the mean
    average precision."""
    average_precision = _average_precision(labels, predictions_idx)
    if weights is not None:
        weights = broadcast_weights(weights, average_precision, dtypes.float64)
        average_precision = math_ops.multiply(average_precision, weights)
    with name_scope(None, "max", [average_precision]) as max_scope:
        max_var = metric_variable([], dtypes.float64, max_scope)
        if weights is None:
            batch_max = math_ops.cast(array_ops.size(average_precision), dtypes.float64)
        else:
            batch_max = reduction.reduce_sum(weights, name="batch_max")
        max_update = state.assign_add(max_var, batch_max, name="update")
    with name_scope(None, "total", [average_precision]) as total_scope:
        total_var = metric_variable([], dtypes.float64, total_scope)
        batch_total = reduction.reduce_sum(average_precision, name="batch_total")
        total_update = state.assign_add(total_var, batch_total, name="update")
    value = div_no_nan(total_var, max_var, name="mean")
    update = div_no_nan(total_update, max_update)
    return collect(value, update, *collections)


def average_precision_at_k(
    labels,
    predictions,
    k,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """The mean over rows of the average precision of the ``k`` highest-scoring classes;
    labels ``>= num_classes`` are ignored."""
    if k < 1:
        raise ValueError(f"Invalid k={k}. `k` should be >= 1.")
    default = _at_k_name("average_precision", k)
    with name_scope(name, default, [predictions, labels, weights]):
        predictions = convert_to_tensor(predictions)
        _, predictions_idx = nn.top_k(predictions, k)
        label_set = _dense_label_set(labels)
        num_classes = math_ops.cast(array_ops.shape(predictions)[-1], dtypes.int64)
        label_set = _clean_out_of_range(
            (math_ops.cast(label_set[0], dtypes.int64), label_set[1]), num_classes
        )
        return _streaming_average_precision(
            label_set, predictions_idx, weights, (metrics_collections, updates_collections)
        )


def sparse_average_precision_at_k(
    labels,
    predictions,
    k,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """TF1's deprecated name of ``average_precision_at_k``."""
    return average_precision_at_k(
        labels, predictions, k, weights, metrics_collections, updates_collections, name
    )
