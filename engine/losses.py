"""The ``engine.losses`` namespace (TF1's ``tf.losses``): weighted, reduced losses that add
themselves to the ``GraphKeys.LOSSES`` collection.

Each loss computes elementwise losses in float32 (as TF does), multiplies them by ``weights``
(a scalar or a tensor broadcastable to the losses, same rank) and reduces them as
``reduction`` says; the default, ``SUM_BY_NONZERO_WEIGHTS``, divides the weighted sum by the
number of non-zero weights (0 when there are none)::

    loss = tf.losses.mean_squared_error(labels, predictions, weights=[[1.0], [0.0]])
    total = tf.losses.get_total_loss()  # every collected loss plus the regularization losses
"""

from __future__ import annotations

from engine import dtypes
from engine.framework.constant_op import constant, convert_to_tensor
from engine.framework.graph import GraphKeys, Tensor, control_dependencies, name_scope
from engine.framework.graph import add_to_collection as _add_to_collection
from engine.framework.graph import get_collection as _get_collection
from engine.framework.tensor_like import TensorLike
from engine.framework.tensor_util import constant_value
from engine.ops import array as array_ops
from engine.ops import control_flow, logging_ops, nn_losses
from engine.ops import math as math_ops
from engine.ops import reduction as reduction_ops

__all__ = [
    "Reduction",
    "compute_weighted_loss",
    "mean_squared_error",
    "absolute_difference",
    "softmax_cross_entropy",
    "sparse_softmax_cross_entropy",
    "sigmoid_cross_entropy",
    "add_loss",
    "get_losses",
    "get_total_loss",
    "get_regularization_loss",
    "get_regularization_losses",
]


class Reduction:
    """How a weighted loss is reduced.

    * ``NONE``: the weighted losses, unreduced.
    * ``SUM``: their sum.
    * ``MEAN``: the sum divided by the sum of the weights.
    * ``SUM_OVER_BATCH_SIZE``: the sum divided by the number of loss elements.
    * ``SUM_BY_NONZERO_WEIGHTS`` (= ``SUM_OVER_NONZERO_WEIGHTS``, the default): the sum divided
      by the number of non-zero weights.
    """

    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls) -> tuple[str, ...]:
        return (
            cls.NONE,
            cls.SUM,
            cls.MEAN,
            cls.SUM_OVER_BATCH_SIZE,
            cls.SUM_OVER_NONZERO_WEIGHTS,
            cls.SUM_BY_NONZERO_WEIGHTS,
        )

    @classmethod
    def validate(cls, key: str) -> None:
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key}. Key should be one of {cls.all()}.")


# -----------------------------------------------------------------------------------------
# The loss collection
# -----------------------------------------------------------------------------------------


def add_loss(loss: Tensor, loss_collection: str | None = GraphKeys.LOSSES) -> None:
    """Adds ``loss`` to ``loss_collection`` (nothing when the collection is None or empty)."""
    if loss_collection:
        _add_to_collection(loss_collection, loss)


def get_losses(scope: str | None = None, loss_collection: str = GraphKeys.LOSSES) -> list[Tensor]:
    """The losses in ``loss_collection``, filtered by ``scope`` (a name regex) when given."""
    return _get_collection(loss_collection, scope)


def get_regularization_losses(scope: str | None = None) -> list[Tensor]:
    """The ``GraphKeys.REGULARIZATION_LOSSES`` collection, filtered by ``scope``."""
    return _get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


def get_regularization_loss(
    scope: str | None = None, name: str = "total_regularization_loss"
) -> Tensor:
    """The sum of the regularization losses, or a float32 0 when there are none."""
    losses = get_regularization_losses(scope)
    if losses:
        return math_ops.add_n(losses, name=name)
    return constant(0.0)


def get_total_loss(
    add_regularization_losses: bool = True, name: str = "total_loss", scope: str | None = None
) -> Tensor:
    """The sum of ``get_losses(scope)`` and (by default) the regularization losses.

    Raises ValueError when there is no loss at all, as TF's ``add_n`` of nothing does.
    """
    losses = get_losses(scope=scope)
    if add_regularization_losses:
        losses += get_regularization_losses(scope=scope)
    return math_ops.add_n(losses, name=name)


# -----------------------------------------------------------------------------------------
# Weighting and reduction
# -----------------------------------------------------------------------------------------

_BROADCAST_ERROR = "weights can not be broadcast to values."


def _div_no_nan(x: Tensor, y: Tensor, name=None) -> Tensor:
    """``x / y``, or 0 where ``y`` is 0."""
    with name_scope(name, "div_no_nan", [x, y]) as scope:
        zero = math_ops.equal(y, array_ops.zeros([], dtype=y.dtype.base_dtype))
        safe = math_ops.where_v2(zero, array_ops.ones_like(y), y)
        return math_ops.where_v2(
            zero, array_ops.zeros_like(x), math_ops.realdiv(x, safe), name=scope
        )


def _assert_broadcastable(weights: Tensor, values: Tensor):
    """None when ``weights`` statically broadcast to ``values`` (a scalar, or the same rank
    with each dim 1 or equal); ValueError when they statically cannot; else an Assert op.

    As in TF, weights must have the values' rank unless they are a scalar. With an unknown
    rank on either side there is no check (the multiply still fails on incompatible shapes).
    """
    with name_scope(None, "assert_broadcastable", [weights, values]):
        w_rank, v_rank = weights.shape.rank, values.shape.rank
        if w_rank == 0:
            return None
        if w_rank is None or v_rank is None:
            return None
        if w_rank != v_rank:
            raise ValueError(
                f"{_BROADCAST_ERROR} values.rank={v_rank}. weights.rank={w_rank}. "
                f"values.shape={values.shape}. weights.shape={weights.shape}. "
                f"Received weights={weights}, values={values}"
            )
        w_dims, v_dims = weights.shape.as_tuple(), values.shape.as_tuple()
        dynamic = False
        for i, (w, v) in enumerate(zip(w_dims, v_dims)):
            if w is None or (v is None and w != 1):
                dynamic = True
            elif w not in (1, v):
                raise ValueError(
                    f"{_BROADCAST_ERROR} Mismatch at dim {i}. values.shape="
                    f"{values.shape}, weights.shape={weights.shape}. Received "
                    f"weights={weights}, values={values}"
                )
        if not dynamic:
            return None
        w_shape, v_shape = array_ops.shape(weights), array_ops.shape(values)
        ok = reduction_ops.reduce_all(
            math_ops.logical_or(math_ops.equal(w_shape, 1), math_ops.equal(w_shape, v_shape))
        )
        return logging_ops.Assert(
            ok, [_BROADCAST_ERROR, "weights.shape=", w_shape, "values.shape=", v_shape]
        )


def _broadcast_weights(weights: Tensor, values: Tensor) -> Tensor:
    """``weights`` at the full shape of ``values``."""
    with name_scope(None, "broadcast_weights", [weights, values]) as scope:
        ws, vs = weights.shape, values.shape
        if ws.is_fully_defined() and vs.is_fully_defined() and ws.as_list() == vs.as_list():
            return weights
        check = _assert_broadcastable(weights, values)
        with control_dependencies([check] if check is not None else []):
            return math_ops.multiply(weights, array_ops.ones_like(values), name=scope)


def _num_elements(losses: Tensor) -> Tensor:
    with name_scope(None, "num_elements", [losses]) as scope:
        return math_ops.cast(array_ops.size(losses, name=scope), losses.dtype.base_dtype)


def _num_present(losses: Tensor, weights) -> Tensor:
    """The number of loss elements with a non-zero weight (weights broadcast to losses)."""
    if isinstance(weights, float) and weights != 0.0:
        return _num_elements(losses)
    with name_scope(None, "num_present", [losses, weights]) as scope:
        weights = math_ops.cast(weights, dtypes.float32)
        present = math_ops.where(
            math_ops.equal(weights, 0.0),
            array_ops.zeros_like(weights),
            array_ops.ones_like(weights),
        )
        present = _broadcast_weights(present, losses)
        return reduction_ops.reduce_sum(present, name=scope)


def _safe_mean(total: Tensor, num_present: Tensor) -> Tensor:
    """``total / num_present``, or 0 when nothing is present."""
    return _div_no_nan(total, num_present, name="value")


def compute_weighted_loss(
    losses: TensorLike,
    weights: TensorLike = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Tensor:
    """``losses * weights`` reduced as ``reduction`` says, in the dtype of ``losses``, and
    added to ``loss_collection``.

    ``weights`` is a scalar or has the rank of ``losses`` with each dim 1 or equal to the
    loss dim. Gradients flow into ``weights`` too; stop them with ``stop_gradient``.

    >>> compute_weighted_loss([1.0, 3.0], weights=[1.0, 0.0])  # 1.0 (one non-zero weight)
    """
    Reduction.validate(reduction)
    with name_scope(scope, "weighted_loss", [losses, weights]):
        losses = convert_to_tensor(losses)
        input_dtype = losses.dtype.base_dtype
        losses = math_ops.cast(losses, dtypes.float32)
        weights_t = math_ops.cast(
            convert_to_tensor(weights, dtype_hint=dtypes.float32), dtypes.float32
        )
        check = _assert_broadcastable(weights_t, losses)
        with control_dependencies([check] if check is not None else []):
            weighted = math_ops.multiply(losses, weights_t)
            if reduction == Reduction.NONE:
                loss = weighted
            else:
                loss = reduction_ops.reduce_sum(weighted)
                if reduction == Reduction.MEAN:
                    loss = _safe_mean(
                        loss,
                        reduction_ops.reduce_sum(
                            math_ops.multiply(array_ops.ones_like(losses), weights_t)
                        ),
                    )
                elif reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
                    loss = _safe_mean(loss, _num_present(losses, weights))
                elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
                    loss = _safe_mean(loss, _num_elements(losses))
            loss = math_ops.cast(loss, input_dtype)
            add_loss(loss, loss_collection)
            return loss


# -----------------------------------------------------------------------------------------
# Losses
# -----------------------------------------------------------------------------------------


def _require(value, what: str) -> None:
    if value is None:
        raise ValueError(f"Argument `{what}` must not be None.")


def _regression_loss(
    kind, default_name, labels, predictions, weights, scope, loss_collection, reduction
):
    _require(labels, "labels")
    _require(predictions, "predictions")
    with name_scope(scope, default_name, [predictions, labels, weights]) as scope:
        predictions = math_ops.cast(convert_to_tensor(predictions), dtypes.float32)
        labels = math_ops.cast(convert_to_tensor(labels), dtypes.float32)
        predictions.shape.assert_is_compatible_with(labels.shape)
        losses = kind(predictions, labels)
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction=reduction)


def mean_squared_error(
    labels: TensorLike,
    predictions: TensorLike,
    weights: TensorLike = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Tensor:
    """The weighted squared error ``(predictions - labels) ** 2``, reduced.

    >>> mean_squared_error([1.0, 2.0], [2.0, 2.0])  # 0.5
    """
    return _regression_loss(
        math_ops.squared_difference,
        "mean_squared_error",
        labels,
        predictions,
        weights,
        scope,
        loss_collection,
        reduction,
    )


def absolute_difference(
    labels: TensorLike,
    predictions: TensorLike,
    weights: TensorLike = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Tensor:
    """The weighted absolute error ``|predictions - labels|``, reduced."""
    return _regression_loss(
        lambda p, t: math_ops.abs(math_ops.subtract(p, t)),
        "absolute_difference",
        labels,
        predictions,
        weights,
        scope,
        loss_collection,
        reduction,
    )


def softmax_cross_entropy(
    onehot_labels: TensorLike,
    logits: TensorLike,
    weights: TensorLike = 1.0,
    label_smoothing: float = 0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Tensor:
    """Softmax cross entropy of ``[batch, classes]`` logits against one-hot (or soft) labels;
    ``weights`` scale the per-example losses. With ``label_smoothing`` s the labels become
    ``labels * (1 - s) + s / num_classes``. No gradient flows into the labels.
    """
    _require(onehot_labels, "onehot_labels")
    _require(logits, "logits")
    with name_scope(scope, "softmax_cross_entropy_loss", [logits, onehot_labels, weights]) as scope:
        logits = convert_to_tensor(logits)
        labels = math_ops.cast(onehot_labels, logits.dtype.base_dtype)
        logits.shape.assert_is_compatible_with(labels.shape)
        if label_smoothing > 0:
            num_classes = math_ops.cast(array_ops.shape(labels)[-1], logits.dtype.base_dtype)
            smooth_positives = 1.0 - label_smoothing
            smooth_negatives = math_ops.truediv(label_smoothing, num_classes)
            labels = math_ops.add(math_ops.multiply(labels, smooth_positives), smooth_negatives)
        labels = array_ops.stop_gradient(labels, name="labels_stop_gradient")
        losses = nn_losses.softmax_cross_entropy_with_logits_v2(
            labels=labels, logits=logits, name="xentropy"
        )
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction=reduction)


def _remove_squeezable_dimensions(labels, predictions, weights, expected_rank_diff=0):
    """Squeezes a trailing size-1 dim off ``labels``/``predictions`` (or ``weights``) whose
    rank is one more than expected, as TF's confusion_matrix helper does."""
    predictions = convert_to_tensor(predictions)
    labels = convert_to_tensor(labels)
    p_shape, l_shape = predictions.shape, labels.shape
    p_rank, l_rank = p_shape.rank, l_shape.rank
    if p_rank is not None and l_rank is not None:
        rank_diff = p_rank - l_rank
        if rank_diff == expected_rank_diff + 1 and p_shape[-1].is_compatible_with(1):
            predictions = array_ops.squeeze(predictions, [-1])
        elif rank_diff == expected_rank_diff - 1 and l_shape[-1].is_compatible_with(1):
            labels = array_ops.squeeze(labels, [-1])
    else:
        rank_diff = math_ops.subtract(array_ops.rank(predictions), array_ops.rank(labels))
        if p_rank is None or p_shape[-1].is_compatible_with(1):
            predictions = _squeeze_if(
                math_ops.equal(expected_rank_diff + 1, rank_diff), predictions
            )
        if l_rank is None or l_shape[-1].is_compatible_with(1):
            labels = _squeeze_if(math_ops.equal(expected_rank_diff - 1, rank_diff), labels)
    if weights is None:
        return labels, predictions, None
    weights = convert_to_tensor(weights)
    l_rank, w_shape = labels.shape.rank, weights.shape
    w_rank = w_shape.rank
    if l_rank is not None and w_rank is not None:
        if w_rank - l_rank == 1:
            weights = array_ops.squeeze(weights, [-1])
        return labels, predictions, weights
    if w_rank is None or (w_rank > 0 and w_shape[-1].is_compatible_with(1)):
        rank_diff = math_ops.subtract(array_ops.rank(weights), array_ops.rank(labels))
        weights = _squeeze_if(math_ops.equal(1, rank_diff), weights)
    return labels, predictions, weights


def _squeeze_if(pred: Tensor, t: Tensor) -> Tensor:
    value = constant_value(pred)
    if value is not None:
        return array_ops.squeeze(t, [-1]) if bool(value) else t
    return control_flow.cond(pred, lambda: array_ops.squeeze(t, [-1]), lambda: t)


def sparse_softmax_cross_entropy(
    labels: TensorLike,
    logits: TensorLike,
    weights: TensorLike = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Tensor:
    """Softmax cross entropy of ``[batch, classes]`` logits against int class ``labels``
    (``[batch]``, or ``[batch, 1]``); ``weights`` scale the per-example losses.
    """
    _require(labels, "labels")
    _require(logits, "logits")
    with name_scope(scope, "sparse_softmax_cross_entropy_loss", [logits, labels, weights]) as scope:
        labels, logits, weights = _remove_squeezable_dimensions(
            labels, logits, weights, expected_rank_diff=1
        )
        losses = nn_losses.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits, name="xentropy"
        )
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction=reduction)


def sigmoid_cross_entropy(
    multi_class_labels: TensorLike,
    logits: TensorLike,
    weights: TensorLike = 1.0,
    label_smoothing: float = 0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Tensor:
    """Elementwise sigmoid cross entropy of ``logits`` against 0/1 (or soft) labels of the
    same shape. With ``label_smoothing`` s the labels become ``labels * (1 - s) + s / 2``.
    """
    _require(multi_class_labels, "multi_class_labels")
    _require(logits, "logits")
    with name_scope(
        scope, "sigmoid_cross_entropy_loss", [logits, multi_class_labels, weights]
    ) as scope:
        logits = convert_to_tensor(logits)
        labels = math_ops.cast(multi_class_labels, logits.dtype.base_dtype)
        logits.shape.assert_is_compatible_with(labels.shape)
        if label_smoothing > 0:
            labels = math_ops.add(
                math_ops.multiply(labels, 1 - label_smoothing), 0.5 * label_smoothing
            )
        losses = nn_losses.sigmoid_cross_entropy_with_logits(
            labels=labels, logits=logits, name="xentropy"
        )
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction=reduction)
