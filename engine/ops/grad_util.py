"""Helpers for gradient functions: undoing broadcasting in one place.

Binary elementwise ops broadcast their inputs (numpy rules), so the gradient flowing back to
an input has the broadcast shape; ``unbroadcast(grad, x)`` sums it back to ``x``'s shape with
one ``SumToShape`` op (or nothing at all when static shapes already agree).
"""

from __future__ import annotations

from engine import dtypes
from engine.framework.constant_op import constant
from engine.framework.graph import Tensor
from engine.framework.registry import OpFlags, ShapeError, op
from engine.framework.tensor_util import constant_value_as_shape
from engine.ops import array as array_ops
from engine.ops._common import INDEX, NUMERIC, check_dtype, create

__all__ = ["unbroadcast", "sum_to_shape"]


def _sum_to_shape_infer(o):
    g, shape = o._inputs
    d = check_dtype(o, 0, NUMERIC)
    if shape._dtype.base_dtype not in INDEX:
        raise TypeError(f"SumToShape's shape must be int32 or int64, got {shape._dtype.name}")
    target = constant_value_as_shape(shape)
    gs = g._shape
    if target.rank is not None and gs.rank is not None:
        if gs.rank < target.rank:
            raise ShapeError(f"Cannot sum a rank {gs.rank} gradient to rank {target.rank}")
        lead = gs.rank - target.rank
        for gd, td in zip(gs.as_tuple()[lead:], target.as_tuple()):
            if gd is not None and td is not None and td != 1 and gd != td:
                raise ShapeError(f"Cannot sum shape {gs} to shape {target}")
    return [(d, target)]


def _sum_to_shape_grad(o, dy):
    # array_transform builds on this module (its gradients unbroadcast).
    from engine.ops import array_transform  # noqa: PLC0415

    return [array_transform.broadcast_to(dy, array_ops.shape(o.inputs[0])), None]


@op(
    "SumToShape",
    infer=_sum_to_shape_infer,
    grad=_sum_to_shape_grad,
    inputs=("grad", "shape"),
    flags=OpFlags(aliases=True, host_inputs=(1,)),
)
def _sum_to_shape_kernel(xp, g, shape):
    target = tuple(shape.tolist())  # one copy to the host, not one per element
    if g.shape == target:
        return g
    lead = g.ndim - len(target)
    if lead < 0:
        raise ValueError(f"Cannot sum shape {g.shape} to shape {target}")
    r = g.sum(axis=tuple(range(lead))) if lead else g
    axes = tuple(i for i, d in enumerate(target) if d == 1 and r.shape[i] != 1)
    if axes:
        r = r.sum(axis=axes, keepdims=True)
    if r.shape != target:
        raise ValueError(f"Cannot sum shape {g.shape} to shape {target}")
    return r.astype(g.dtype, copy=False)


def sum_to_shape(grad: Tensor, shape) -> Tensor:
    s = shape if isinstance(shape, Tensor) else constant(list(shape), dtype=dtypes.int32)
    return create("SumToShape", [grad, s], {}, "SumToShape").outputs[0]


def unbroadcast(grad: Tensor | None, x: Tensor) -> Tensor | None:
    """``grad`` (of a broadcasting op's output) summed back to the shape of input ``x``."""
    if grad is None:
        return None
    gs, xs = grad.shape, x.shape
    if gs.is_fully_defined() and xs.is_fully_defined() and gs.as_list() == xs.as_list():
        return grad
    if xs.is_fully_defined():
        return sum_to_shape(grad, xs.as_list())

    return sum_to_shape(grad, array_ops.shape(x))
