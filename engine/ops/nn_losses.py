"""Neural-network losses (TF1's ``tf.nn``): ``l2_loss`` and the cross entropies of logits,
softmax (dense and sparse labels) and sigmoid, with their fused kernels and gradients.
"""

from __future__ import annotations

import numpy as np

from engine import dtypes, errors
from engine.framework.constant_op import constant, convert_to_tensor
from engine.framework.graph import Tensor, control_dependencies, name_scope
from engine.framework.registry import ShapeError, op
from engine.ops import array as array_ops
from engine.ops import array_transform, logging_ops
from engine.ops import math as math_ops
from engine.ops._common import (
    FLOATS,
    INDEX,
    check_dtype,
    check_same_dtype,
    create,
    dims_text,
)
from engine.tensor_shape import TensorShape

__all__ = [
    "l2_loss",
    "softmax_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits_v2",
    "sparse_softmax_cross_entropy_with_logits",
    "sigmoid_cross_entropy_with_logits",
]


# -----------------------------------------------------------------------------------------
# Losses
# -----------------------------------------------------------------------------------------


@op(
    "L2Loss",
    infer=lambda o: [(check_dtype(o, 0, FLOATS), TensorShape([]))],
    inputs=("t",),
    grad=lambda o, g: [math_ops.multiply(o.inputs[0], g)],
)
def _l2_loss_kernel(xp, x):
    acc = x.astype(np.float32) if x.dtype == np.float16 else x
    return xp.asarray(xp.sum(xp.square(acc)) / 2, dtype=x.dtype)


def l2_loss(t, name=None) -> Tensor:
    """``sum(t ** 2) / 2`` as a scalar."""
    with name_scope(name, "L2Loss", [t]) as scope:
        x = convert_to_tensor(t, name="t")
        return create("L2Loss", [x], {}, scope).outputs[0]


# -----------------------------------------------------------------------------------------
# Cross-entropy losses
# -----------------------------------------------------------------------------------------


def _xent_infer(sparse: bool):
    def infer(o):
        logits, labels = o._inputs
        d = check_dtype(o, 0, FLOATS)
        if sparse:
            check_dtype(o, 1, INDEX, "Tlabels")
        else:
            check_same_dtype(o)
        ls, bs = logits._shape, labels._shape
        if ls.rank is not None and ls.rank != 2:
            raise ShapeError(f"Shape must be rank 2 but is rank {ls.rank}")
        want = 1 if sparse else 2
        if bs.rank is not None and bs.rank != want:
            raise ShapeError(f"Shape must be rank {want} but is rank {bs.rank}")
        dims = list(ls.as_tuple() or (None, None))
        if bs.rank is not None:
            other = bs.as_tuple()
            for i, n in enumerate(other):
                if dims[i] is not None and n is not None and dims[i] != n:
                    raise ShapeError(f"Dimensions must be equal, but are {dims[i]} and {n}")
                dims[i] = dims[i] if dims[i] is not None else n
        return [(d, TensorShape(dims[:1])), (d, TensorShape(dims))]

    return infer


def _log_softmax_rows(xp, x):
    """``(log_softmax(x), log_sum_exp - max)`` of a 2-D array, in float32 at least."""
    if x.dtype == np.float16:
        x = x.astype(np.float32)
    shifted = x - xp.max(x, axis=1, keepdims=True)
    return shifted - xp.log(xp.sum(xp.exp(shifted), axis=1, keepdims=True))


def _check_xent_logits(logits):
    if logits.ndim != 2:
        raise errors.InvalidArgumentError(
            None, None, f"logits must be 2-dimensional, got {dims_text(logits.shape)}"
        )


def _scale_rows(grad_loss: Tensor, t: Tensor) -> Tensor:
    """``grad_loss[:, None] * t`` for a ``[batch]`` loss gradient and a ``[batch, n]`` t."""
    return math_ops.multiply(array_ops.reshape(grad_loss, [-1, 1]), t)


def _is_zeros(t: Tensor | None) -> bool:
    """True for no gradient or the zeros the gradient walk fills in for an unused output."""
    return t is None or t.op.type == "ZerosLike"


def _xent_logits_grad(o, grad_loss, grad_backprop):
    # The kernel's second output is exactly d loss / d logits; an incoming gradient for that
    # output (backprop used as a value) adds the softmax gradient term.
    grad = _scale_rows(grad_loss, o.outputs[1])
    if not _is_zeros(grad_backprop):
        probs = create("Softmax", [o.inputs[0]], {}, None).outputs[0]
        backprop = create("SoftmaxGrad", [grad_backprop, probs], {}, None).outputs[0]
        grad = math_ops.add(grad, backprop)
    return grad


def _xent_grad(o, grad_loss, grad_backprop):
    logits, labels = o.inputs
    grad_labels = None
    if labels.op.type != "StopGradient":  # v1 and tf.losses stop it: skip the dead branch
        log_probs = create("LogSoftmax", [logits], {}, None).outputs[0]
        grad_labels = math_ops.negative(_scale_rows(grad_loss, log_probs))
    return [_xent_logits_grad(o, grad_loss, grad_backprop), grad_labels]


def _sparse_xent_grad(o, grad_loss, grad_backprop):
    return [_xent_logits_grad(o, grad_loss, grad_backprop), None]


@op(
    "SoftmaxCrossEntropyWithLogits",
    infer=_xent_infer(False),
    inputs=("features", "labels"),
    grad=_xent_grad,
)
def _xent_kernel(xp, logits, labels):
    _check_xent_logits(logits)
    if labels.shape != logits.shape:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"logits and labels must be same size: logits_size="
            f"{dims_text(logits.shape)} labels_size={dims_text(labels.shape)}",
        )
    if logits.shape[1] == 0:
        return xp.zeros(logits.shape[:1], logits.dtype), xp.zeros(logits.shape, logits.dtype)
    # Via log-sum-exp: finite for any finite logits (1000 included), unlike log(softmax).
    log_probs = _log_softmax_rows(xp, logits)
    loss = -xp.sum(labels * log_probs, axis=1)
    backprop = xp.exp(log_probs) - labels
    return loss.astype(logits.dtype, copy=False), backprop.astype(logits.dtype, copy=False)


@op(
    "SparseSoftmaxCrossEntropyWithLogits",
    infer=_xent_infer(True),
    inputs=("features", "labels"),
    grad=_sparse_xent_grad,
)
def _sparse_xent_kernel(xp, logits, labels):
    _check_xent_logits(logits)
    if labels.ndim != 1:
        raise errors.InvalidArgumentError(
            None, None, f"labels must be 1-D, but got shape {dims_text(labels.shape)}"
        )
    if labels.shape[0] != logits.shape[0]:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"logits and labels must have the same first dimension, got logits "
            f"shape {dims_text(logits.shape)} and labels shape {dims_text(labels.shape)}",
        )
    classes = logits.shape[1]
    bad = (labels < 0) | (labels >= classes)
    if bad.any():
        first = int(labels[int(xp.argmax(bad))])
        values = " ".join(str(int(v)) for v in labels.tolist())
        raise errors.InvalidArgumentError(
            None,
            None,
            f"Received a label value of {first} which is outside the valid range "
            f"of [0, {classes}).  Label values: {values}",
        )
    if logits.shape[0] == 0:
        return xp.zeros((0,), logits.dtype), xp.zeros(logits.shape, logits.dtype)
    log_probs = _log_softmax_rows(xp, logits)
    rows = xp.arange(logits.shape[0])
    loss = -log_probs[rows, labels]
    backprop = xp.exp(log_probs)
    backprop[rows, labels] -= 1
    return loss.astype(logits.dtype, copy=False), backprop.astype(logits.dtype, copy=False)


def _ensure_xent_args(name, sentinel, labels, logits):
    # TF1 requires named arguments: a positional labels lands in ``_sentinel``.
    if sentinel is not None:
        raise ValueError(f"Only call `{name}` with named arguments (labels=..., logits=..., ...)")
    if labels is None or logits is None:
        raise ValueError("Both labels and logits must be provided.")


def _flatten_outerdims_text(t: Tensor) -> Tensor:
    """``t`` reshaped to ``[-1, last_dim]`` (static dims kept where known)."""
    s = t.shape
    if s.rank == 2:
        return t
    if s.rank is not None and s.as_tuple()[-1] is not None:
        last = s.as_tuple()[-1]
    else:
        last = array_ops.shape(t)[-1]
    out = array_ops.reshape(
        t, array_transform.stack([-1, last]) if isinstance(last, Tensor) else [-1, last]
    )
    if s.rank is not None:
        rows = s[:-1].num_elements()
        out.set_shape([rows, s.as_tuple()[-1]])
    return out


def _move_axis_to_end(t: Tensor, axis: int, rank) -> Tensor:
    if isinstance(rank, int):
        perm = [i for i in range(rank) if i != axis] + [axis]
        return array_ops.transpose(t, perm)
    perm = array_transform.concat(
        [array_ops.range(0, axis), array_ops.range(axis + 1, rank), [axis]], 0
    )
    return array_ops.transpose(t, perm)


def softmax_cross_entropy_with_logits_v2(labels, logits, axis=None, name=None, dim=None) -> Tensor:
    """The cross entropy ``-sum(labels * log_softmax(logits), axis)``; gradients flow into
    both ``logits`` and ``labels``.

    Computed through log-sum-exp in one ``SoftmaxCrossEntropyWithLogits`` kernel, so logits
    of any magnitude give a finite loss and gradient.

    >>> softmax_cross_entropy_with_logits_v2(labels=[[0., 1.]], logits=[[1000., 0.]])  # [1000.]
    """
    axis = _deprecated_lookup("axis", axis, "dim", dim)
    axis = -1 if axis is None else axis
    with name_scope(name, "softmax_cross_entropy_with_logits", [logits, labels]) as scope:
        logits = convert_to_tensor(logits, name="logits")
        labels = convert_to_tensor(labels, dtype_hint=logits.dtype.base_dtype, name="labels")
        half = logits.dtype.base_dtype is dtypes.float16
        precise = math_ops.cast(logits, dtypes.float32) if half else logits
        labels = math_ops.cast(labels, precise.dtype.base_dtype)
        shape = logits.shape
        rank = shape.rank
        if rank is not None:
            if rank == 0:
                raise ValueError(f"logits must have rank >= 1, got shape {shape}")
            if not -rank <= axis < rank:
                raise ValueError(f"axis {axis} is out of range for logits of rank {rank}")
            axis %= rank
        if rank == 2 and axis == 1:
            return _half_back(
                create("SoftmaxCrossEntropyWithLogits", [precise, labels], {}, scope).outputs[0],
                half,
            )
        if rank is None or axis != rank - 1:
            if rank is None and axis != -1:
                rank_t = array_ops.rank(precise)
                axis = math_ops.floormod(constant(axis, dtype=dtypes.int32), rank_t)
                precise = _move_axis_to_end(precise, axis, rank_t)
                labels = _move_axis_to_end(labels, axis, rank_t)
            elif rank is not None:
                precise = _move_axis_to_end(precise, axis, rank)
                labels = _move_axis_to_end(labels, axis, rank)
        input_shape = array_ops.shape(precise)
        cost = create(
            "SoftmaxCrossEntropyWithLogits",
            [_flatten_outerdims_text(precise), _flatten_outerdims_text(labels)],
            {},
            scope,
        ).outputs[0]
        cost = array_ops.reshape(cost, input_shape[:-1])
        if rank is not None:
            dims = shape.as_list()
            del dims[axis]
            cost.set_shape(dims)
        return _half_back(cost, half)


def _half_back(t: Tensor, half: bool) -> Tensor:
    return math_ops.cast(t, dtypes.float16) if half else t


def _deprecated_lookup(new_name, new, old_name, old):
    """TF's ``deprecated_argument_lookup``: giving both names is an error."""
    if old is not None:
        if new is not None:
            raise ValueError(f"Cannot specify both '{old_name}' and '{new_name}'.")
        return old
    return new


def softmax_cross_entropy_with_logits(
    _sentinel=None, labels=None, logits=None, dim=-1, name=None, axis=None
) -> Tensor:
    """TF1's softmax cross entropy: as ``softmax_cross_entropy_with_logits_v2`` but no
    gradient flows into ``labels``. Arguments must be named.

    >>> softmax_cross_entropy_with_logits(labels=[[0., 1.]], logits=[[1., 2.]])  # [0.3133]
    """
    _ensure_xent_args("softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    dim = _deprecated_lookup("axis", axis, "dim", dim)
    with name_scope(name, "softmax_cross_entropy_with_logits_sg", [logits, labels]) as scope:
        labels = array_ops.stop_gradient(labels, name="labels_stop_gradient")
    return softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits, axis=dim, name=scope)


def sparse_softmax_cross_entropy_with_logits(
    _sentinel=None, labels=None, logits=None, name=None
) -> Tensor:
    """Softmax cross entropy with integer class ``labels`` (shape ``logits.shape[:-1]``).

    A label outside ``[0, num_classes)`` fails at run time with InvalidArgumentError.

    >>> sparse_softmax_cross_entropy_with_logits(labels=[1], logits=[[1., 2.]])  # [0.3133]
    """
    _ensure_xent_args("sparse_softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    with name_scope(name, "SparseSoftmaxCrossEntropyWithLogits", [labels, logits]):
        labels = convert_to_tensor(labels)
        logits = convert_to_tensor(logits)
        half = logits.dtype.base_dtype is dtypes.float16
        precise = math_ops.cast(logits, dtypes.float32) if half else logits
        labels_shape, logits_shape = labels.shape, logits.shape
        if logits_shape.rank == 0:
            raise ValueError(f"Logits cannot be scalars - received shape {logits_shape}.")
        if (
            logits_shape.rank is not None
            and labels_shape.rank is not None
            and labels_shape.rank != logits_shape.rank - 1
        ):
            raise ValueError(
                f"Rank mismatch: Rank of labels (received {labels_shape.rank}) "
                f"should equal rank of logits minus 1 (received "
                f"{logits_shape.rank})."
            )
        static = (
            labels_shape.is_fully_defined()
            and logits_shape.rank is not None
            and logits_shape[:-1].is_fully_defined()
        )
        if static and labels_shape != logits_shape[:-1]:
            raise ValueError(
                f"Shape mismatch: The shape of labels (received {labels_shape}) "
                f"should equal the shape of logits except for the last dimension "
                f"(received {logits_shape})."
            )
        if logits_shape.rank == 2:
            cost = create(
                "SparseSoftmaxCrossEntropyWithLogits", [precise, labels], {}, name
            ).outputs[0]
            return _half_back(cost, half)
        checks = []
        if not static:
            checks.append(
                logging_ops.assert_equal(array_ops.shape(labels), array_ops.shape(logits)[:-1])
            )
        with control_dependencies(checks):
            flat_labels = array_ops.reshape(labels, [-1])
            cost = create(
                "SparseSoftmaxCrossEntropyWithLogits",
                [_flatten_outerdims_text(precise), flat_labels],
                {},
                name,
            ).outputs[0]
            cost = array_ops.reshape(cost, array_ops.shape(labels))
            cost.set_shape(labels_shape)
        return _half_back(cost, half)


def sigmoid_cross_entropy_with_logits(
    _sentinel=None, labels=None, logits=None, name=None
) -> Tensor:
    """Elementwise logistic loss ``max(x, 0) - x * z + log(1 + exp(-abs(x)))`` for logits
    ``x`` and labels ``z``: TF's stable form, finite for logits of any magnitude.
    """
    _ensure_xent_args("sigmoid_cross_entropy_with_logits", _sentinel, labels, logits)
    with name_scope(name, "logistic_loss", [logits, labels]) as scope:
        logits = convert_to_tensor(logits, name="logits")
        labels = convert_to_tensor(labels, dtype_hint=logits.dtype.base_dtype, name="labels")
        try:
            labels.shape.merge_with(logits.shape)
        except ValueError:
            raise ValueError(
                f"logits and labels must have the same shape ({logits.shape} vs {labels.shape})"
            ) from None
        zeros = array_ops.zeros_like(logits, dtype=logits.dtype.base_dtype)
        cond = math_ops.greater_equal(logits, zeros)
        relu_logits = math_ops.where(cond, logits, zeros)
        neg_abs_logits = math_ops.where(cond, math_ops.negative(logits), logits)
        return math_ops.add(
            math_ops.subtract(relu_logits, math_ops.multiply(logits, labels)),
            math_ops.log1p(math_ops.exp(neg_abs_logits)),
            name=scope,
        )
