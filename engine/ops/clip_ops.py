"""Clipping (TF1's ``clip_ops``): ``clip_by_value``, and the norm clipping that training code
applies to gradients: ``clip_by_norm``, ``global_norm``, ``clip_by_global_norm`` and
``clip_by_average_norm``, built from ops (so they differentiate, save and run on any device)
with TensorFlow's formulas, bit for bit the same graph arithmetic:

    >>> grads, norm = tf.clip_by_global_norm(tf.gradients(loss, tvars), 5.0)
"""

from __future__ import annotations

from collections.abc import Sequence

from engine import dtypes
from engine.framework.constant_op import constant, convert_to_tensor
from engine.framework.graph import colocate_with, name_scope
from engine.framework.registry import ShapeError, op
from engine.ops import array as array_ops
from engine.ops import array_transform, reduction
from engine.ops import math as math_ops
from engine.ops._common import NUMERIC, base, broadcast_shape, check_same_dtype, create
from engine.ops.grad_util import unbroadcast
from engine.ops.nn_losses import l2_loss

__all__ = [
    "clip_by_value",
    "clip_by_norm",
    "global_norm",
    "clip_by_global_norm",
    "clip_by_average_norm",
]


def _clip_infer(o):
    x, lo, hi = o._inputs
    d = check_same_dtype(o)
    if d not in NUMERIC:
        raise TypeError(f"clip_by_value does not support dtype {d.name}")
    for t, what in ((lo, "clip_value_min"), (hi, "clip_value_max")):
        broadcast_shape(x._shape, t._shape)
        if (
            t._shape.rank is not None
            and x._shape.rank is not None
            and broadcast_shape(x._shape, t._shape).rank != x._shape.rank
        ):
            raise ShapeError(f"{what} must broadcast to the shape of t")
    return [(d, x._shape)]


def _clip_grad(o, g):
    x, lo, hi = o.inputs
    if not base(x).is_floating:
        return [None, None, None]
    zeros = array_ops.zeros_like(g)
    below, above = math_ops.less(x, lo), math_ops.greater(x, hi)
    inside = math_ops.logical_not(math_ops.logical_or(below, above))
    return [
        math_ops.where_v2(inside, g, zeros),
        unbroadcast(math_ops.where_v2(below, g, zeros), lo),
        unbroadcast(math_ops.where_v2(above, g, zeros), hi),
    ]


@op(
    "ClipByValue",
    infer=_clip_infer,
    grad=_clip_grad,
    inputs=("t", "clip_value_min", "clip_value_max"),
)
def _clip_kernel(xp, x, lo, hi):
    # TF's order: the max bound first, then the min (so min wins when min > max).
    return xp.maximum(xp.minimum(x, hi), lo).astype(x.dtype, copy=False)


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """Clips ``t`` elementwise to ``[clip_value_min, clip_value_max]``."""
    with name_scope(name, "clip_by_value", [t, clip_value_min, clip_value_max]) as scope:
        x = convert_to_tensor(t, name="t")
        lo = convert_to_tensor(clip_value_min, dtype_hint=x.dtype.base_dtype, name="clip_value_min")
        hi = convert_to_tensor(clip_value_max, dtype_hint=x.dtype.base_dtype, name="clip_value_max")
        return create("ClipByValue", [x, lo, hi], {}, scope).outputs[0]


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """``t * clip_norm / max(l2norm(t, axes), clip_norm)``: ``t`` unchanged while its L2 norm
    (over ``axes``, every axis by default) is at most ``clip_norm``, else scaled down to it.
    A zero norm gives zero gradients, not NaN (TF's two-sided ``where``)."""
    with name_scope(name, "clip_by_norm", [t, clip_norm]) as scope:
        values = convert_to_tensor(t, name="t")
        l2sum = reduction.reduce_sum(values * values, axes, keepdims=True)
        pred = l2sum > 0
        l2sum_safe = math_ops.where_v2(pred, l2sum, array_ops.ones_like(l2sum))
        l2norm = math_ops.where_v2(pred, math_ops.sqrt(l2sum_safe), l2sum)
        intermediate = values * clip_norm
        if not values.shape.is_compatible_with(intermediate.shape):
            raise ValueError(
                f"clip_norm must not broadcast t: t has shape {values.shape}, "
                f"t * clip_norm {intermediate.shape}"
            )
        return array_ops.identity(intermediate / math_ops.maximum(l2norm, clip_norm), name=scope)


def _tensor_list(t_list, what: str) -> list:
    if not isinstance(t_list, Sequence) or isinstance(t_list, (str, bytes)):
        raise TypeError(f"{what} should be a sequence of tensors, got {type(t_list).__name__}")
    return [
        convert_to_tensor(t, name=f"t_{i}") if t is not None else None for i, t in enumerate(t_list)
    ]


def global_norm(t_list, name=None):
    """``sqrt(sum(l2norm(t) ** 2 for t in t_list))``, skipping ``None`` entries (the
    gradients of variables a loss does not depend on)."""
    values = _tensor_list(t_list, "t_list")
    with name_scope(name, "global_norm", [v for v in values if v is not None]):
        half_squared_norms = []
        for v in values:
            if v is not None:
                with colocate_with(v):
                    half_squared_norms.append(l2_loss(v))
        if not half_squared_norms:
            raise ValueError("global_norm needs at least one tensor that is not None")
        half_squared_norm = reduction.reduce_sum(array_transform.stack(half_squared_norms))
        two = constant(2.0, dtype=half_squared_norm.dtype)
        return math_ops.sqrt(half_squared_norm * two, name="global_norm")


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """Scales every tensor of ``t_list`` by ``clip_norm / max(global_norm, clip_norm)``:
    ``(clipped list, the global norm)``, ``None`` entries kept as ``None``. The usual gradient
    clipping of TF1 training loops. A global norm that is infinite or NaN makes every
    clipped value NaN, as in TensorFlow (the step is then visibly broken, not silently
    zero)."""
    values = _tensor_list(t_list, "t_list")
    if use_norm is None:
        use_norm = global_norm(values, name)
    use_norm = convert_to_tensor(use_norm, name="use_norm")
    present = [v for v in values if v is not None]
    with name_scope(name, "clip_by_global_norm", [*present, clip_norm]) as scope:
        one = constant(1.0, dtype=use_norm.dtype)
        scale_for_finite = clip_norm * math_ops.minimum(1.0 / use_norm, one / clip_norm)
        # Finite norms: a no-op; inf or NaN: NaN.
        scale = scale_for_finite + (use_norm - use_norm)
        clipped = []
        for i, v in enumerate(values):
            if v is None:
                clipped.append(None)
                continue
            if v.dtype.base_dtype != scale.dtype.base_dtype:  # e.g. float16 gradients
                v_scale = math_ops.cast(scale, v.dtype.base_dtype)
            else:
                v_scale = scale
            with colocate_with(v):
                clipped.append(array_ops.identity(v * v_scale, name=f"{scope}_{i}"))
        return clipped, use_norm


def clip_by_average_norm(t, clip_norm, name=None):
    """``t * clip_norm / max(l2norm(t) / size(t), clip_norm)`` (deprecated in TF1 for
    ``clip_by_norm``; kept for the programs that call it)."""
    with name_scope(name, "clip_by_average_norm", [t, clip_norm]) as scope:
        t = convert_to_tensor(t, name="t")
        n_element = math_ops.cast(array_ops.size(t), dtypes.float32)
        l2norm_inv = math_ops.rsqrt(reduction.reduce_sum(t * t, array_ops.range(array_ops.rank(t))))
        return array_ops.identity(
            t * clip_norm * math_ops.minimum(l2norm_inv * n_element, constant(1.0) / clip_norm),
            name=scope,
        )
