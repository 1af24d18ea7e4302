"""Matrix products: ``MatMul`` (two matrices) and ``BatchMatMulV2`` (stacks of matrices,
broadcast over the batch dimensions), and ``matmul``, which picks one by rank.

Kernels of 2-3 rows compute each row on its own (``few_rows``: a merged batch of unbatched
requests gets each request's own bits); large products are split across the intra-op
threads (``split_product``).
"""

from __future__ import annotations

from engine import errors
from engine.framework.graph import name_scope
from engine.framework.registry import Attr, ShapeError, op
from engine.ops._common import (
    NUMERIC,
    base,
    broadcast_shape,
    check_same_dtype,
    convert_pair,
    create,
)
from engine.ops.few_rows import few_rows, rows_product
from engine.ops.grad_util import unbroadcast
from engine.ops.split_product import matmul as split_matmul
from engine.tensor_shape import TensorShape, unknown_shape

__all__ = ["matmul"]


def _matmul_infer(o):
    a, b = o._inputs
    d = check_same_dtype(o)
    if d not in NUMERIC:
        raise TypeError(
            f"Value for attr 'T' of {d.name} is not in the list of allowed values for MatMul"
        )
    ta, tb = o._attrs["transpose_a"], o._attrs["transpose_b"]
    for t in (a, b):
        if t._shape.rank is not None and t._shape.rank != 2:
            raise ShapeError(f"Shape must be rank 2 but is rank {t._shape.rank}")
    ad = a._shape.as_tuple() or (None, None)
    bd = b._shape.as_tuple() or (None, None)
    m, k1 = (ad[1], ad[0]) if ta else ad
    k2, n = (bd[1], bd[0]) if tb else bd
    if k1 is not None and k2 is not None and k1 != k2:
        raise ShapeError(f"Dimensions must be equal, but are {k1} and {k2}")
    return [(d, TensorShape([m, n]))]


def _matmul_grad(o, g):
    a, b = o.inputs
    if not base(a).is_floating:
        return [None, None]
    ta, tb = o.get_attr("transpose_a"), o.get_attr("transpose_b")
    mm = matmul
    if not ta and not tb:
        return [mm(g, b, transpose_b=True), mm(a, g, transpose_a=True)]
    if not ta and tb:
        return [mm(g, b), mm(g, a, transpose_a=True)]
    if ta and not tb:
        return [mm(b, g, transpose_b=True), mm(a, g)]
    return [
        mm(b, g, transpose_a=True, transpose_b=True),
        mm(g, a, transpose_a=True, transpose_b=True),
    ]


@op(
    "MatMul",
    infer=_matmul_infer,
    grad=_matmul_grad,
    inputs=("a", "b"),
    attrs=(
        Attr("transpose_a", "bool"),
        Attr("transpose_b", "bool"),
    ),
)
def _matmul_kernel(xp, a, b, *, transpose_a, transpose_b):
    if a.ndim != 2 or b.ndim != 2:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"In[{0 if a.ndim != 2 else 1}] is not "
            "a matrix. Instead it has shape "
            f"{list((a if a.ndim != 2 else b).shape)}",
        )
    b = b.T if transpose_b else b
    if not transpose_a and few_rows(a, b):  # 2-3 rows: the bits of each row alone
        return rows_product(a, b)
    return split_matmul(xp, a.T if transpose_a else a, b)  # large: on the intra-op threads


def _batch_matmul_infer(o):
    a, b = o._inputs
    d = check_same_dtype(o)
    if d not in NUMERIC:
        raise TypeError(f"matmul does not support dtype {d.name}")
    adj_a, adj_b = o._attrs["adj_x"], o._attrs["adj_y"]
    sa, sb = a._shape, b._shape
    if sa.rank is None or sb.rank is None:
        return [(d, unknown_shape())]
    for s in (sa, sb):
        if s.rank < 2:
            raise ShapeError(f"In[0] and In[1] must have rank >= 2, got rank {s.rank}")
    ad, bd = sa.as_tuple(), sb.as_tuple()
    m, k1 = (ad[-1], ad[-2]) if adj_a else (ad[-2], ad[-1])
    k2, n = (bd[-1], bd[-2]) if adj_b else (bd[-2], bd[-1])
    if k1 is not None and k2 is not None and k1 != k2:
        raise ShapeError(f"Dimensions must be equal, but are {k1} and {k2}")
    batch = broadcast_shape(TensorShape(ad[:-2]), TensorShape(bd[:-2]))
    return [(d, batch.concatenate([m, n]))]


def _batch_matmul_grad(o, g):
    x, y = o.inputs
    if not base(x).is_floating:
        return [None, None]
    ax, ay = o.get_attr("adj_x"), o.get_attr("adj_y")

    def bmm(a, b, adj_a=False, adj_b=False):
        return create("BatchMatMulV2", [a, b], {"adj_x": adj_a, "adj_y": adj_b}, None).outputs[0]

    if not ax and not ay:
        gx, gy = bmm(g, y, adj_b=True), bmm(x, g, adj_a=True)
    elif not ax and ay:
        gx, gy = bmm(g, y), bmm(g, x, adj_a=True)
    elif ax and not ay:
        gx, gy = bmm(y, g, adj_b=True), bmm(x, g)
    else:
        gx, gy = bmm(y, g, adj_a=True, adj_b=True), bmm(g, x, adj_a=True, adj_b=True)
    return [unbroadcast(gx, x), unbroadcast(gy, y)]


@op(
    "BatchMatMulV2",
    infer=_batch_matmul_infer,
    grad=_batch_matmul_grad,
    inputs=("x", "y"),
    attrs=(
        Attr("adj_x", "bool"),
        Attr("adj_y", "bool"),
    ),
)
def _batch_matmul_kernel(xp, a, b, *, adj_x, adj_y):
    if adj_x:
        a = xp.swapaxes(a, -1, -2)
    if adj_y:
        b = xp.swapaxes(b, -1, -2)
    return split_matmul(xp, a, b)  # large: on the intra-op threads


def matmul(
    a,
    b,
    transpose_a=False,
    transpose_b=False,
    adjoint_a=False,
    adjoint_b=False,
    a_is_sparse=False,
    b_is_sparse=False,
    name=None,
):
    """Matrix product ``a @ b``; rank > 2 inputs multiply batches of matrices."""
    with name_scope(name, "MatMul", [a, b]) as scope:
        a, b = convert_pair(a, b)
        ta = bool(transpose_a or adjoint_a)
        tb = bool(transpose_b or adjoint_b)
        ra, rb = a.shape.rank, b.shape.rank
        if ra is None or rb is None or ra > 2 or rb > 2:
            return create("BatchMatMulV2", [a, b], {"adj_x": ta, "adj_y": tb}, scope).outputs[0]
        return create("MatMul", [a, b], {"transpose_a": ta, "transpose_b": tb}, scope).outputs[0]
