"""Linear algebra: ``tensordot`` (composed from array and math ops) and ``einsum`` (one op)."""

from __future__ import annotations

import numpy as np

from engine import dtypes, errors
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.registry import Attr, ShapeError, op
from engine.framework.tensor_util import constant_value
from engine.ops import array as array_ops
from engine.ops import array_transform, reduction, slicing
from engine.ops import math as math_ops
from engine.ops._common import broadcast_shape, check_same_dtype, create
from engine.ops.grad_util import unbroadcast
from engine.tensor_shape import TensorShape, unknown_shape

__all__ = ["tensordot", "einsum"]


def tensordot(a, b, axes, name=None) -> Tensor:
    """Sums the products of ``a`` and ``b`` over the given axes (numpy's ``tensordot``).

    ``axes`` is an int ``N`` (the last N axes of ``a`` against the first N of ``b``) or a pair
    ``[a_axes, b_axes]`` of equally long lists (or of two ints). The contraction is a
    transpose and reshape of each side to a matrix, one ``matmul`` and a reshape back, as TF
    composes it; dimensions unknown while building stay unknown in the static shape.

    >>> tensordot(ones([2, 3, 4]), ones([4, 3, 5]), [[1, 2], [1, 0]]).shape  # (2, 5)
    """
    with name_scope(name, "Tensordot", [a, b]) as scope:
        a = convert_to_tensor(a, name="a")
        b = convert_to_tensor(b, name="b")
        a_axes, b_axes, a_free, b_free = _tensordot_axes(a, b, axes)
        a_mat, a_free_dims, a_free_static = _to_matrix(a, a_axes, a_free)
        b_mat, b_free_dims, b_free_static = _to_matrix(b, b_axes, b_free, flipped=True)
        product = math_ops.matmul(a_mat, b_mat)
        if isinstance(a_free_dims, list) and isinstance(b_free_dims, list):
            out_dims = a_free_dims + b_free_dims
            if product.shape.is_fully_defined() and product.shape.as_list() == out_dims:
                return product
            return array_ops.reshape(product, out_dims, name=scope)
        a_free_dims = convert_to_tensor(a_free_dims, dtype=dtypes.int32)
        b_free_dims = convert_to_tensor(b_free_dims, dtype=dtypes.int32)
        out = array_ops.reshape(
            product, array_transform.concat([a_free_dims, b_free_dims], 0), name=scope
        )
        if a_free_static is not None and b_free_static is not None:
            out.set_shape(a_free_static + b_free_static)
        return out


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _tensordot_axes(a, b, axes):
    """``(a_axes, b_axes, a_free, b_free)``; the free axes are tensors only when an int
    ``axes`` meets an unknown rank (they are then ranges), else None (derived later)."""
    if isinstance(axes, Tensor):
        value = constant_value(axes)
        if value is None:
            raise ValueError(f"tensordot needs `axes` known while building the graph; got {axes}.")
        axes = value
    if isinstance(axes, np.ndarray):
        axes = axes.item() if axes.ndim == 0 else axes.tolist()
    if _is_int(axes):
        n = int(axes)
        if n < 0:
            raise ValueError(f"`axes` must be at least 0. Received: {n}.")
        a_rank, b_rank = a.shape.rank, b.shape.rank
        if a_rank is not None:
            if n > a_rank:
                raise ValueError(
                    f"`axes` must not be larger than the number of dimensions of "
                    f"tensor {a}.  Received {n}, vs tensor dimensions {a_rank}."
                )
            a_axes, a_free = list(range(a_rank - n, a_rank)), None
        else:
            rank_a = array_ops.rank(a)
            split = rank_a - n
            a_axes = array_ops.range(split, rank_a)
            a_free = array_ops.range(0, split)
        b_free = None if b_rank is not None else array_ops.range(n, array_ops.rank(b))
        return a_axes, list(range(n)), a_free, b_free
    if isinstance(axes, (list, tuple)):
        if len(axes) != 2:
            raise ValueError(f"`axes` must be an integer or have length 2. Received {axes}.")
        a_axes, b_axes = axes
        if _is_int(a_axes) and _is_int(b_axes):
            a_axes, b_axes = [a_axes], [b_axes]
        a_axes, b_axes = [int(i) for i in a_axes], [int(i) for i in b_axes]
        if len(a_axes) != len(b_axes):
            raise ValueError(
                f"Different number of contraction axes `a` and `b`, {len(a_axes)} != {len(b_axes)}."
            )
        return a_axes, b_axes, None, None
    raise TypeError(f"`axes` must be an int or a pair of lists of ints, got {axes!r}.")


def _to_matrix(a, axes, free=None, flipped=False):
    """``a`` transposed and reshaped to ``[prod(free), prod(axes)]`` (flipped: the other way).

    Returns ``(matrix, free_dims, free_dims_static)``: ``free_dims`` is a list of ints when
    ``a``'s shape is fully known, else an int32 tensor; ``free_dims_static`` is the list of
    known-or-None free dims, or None when the rank is unknown.
    """
    shape = a.shape
    if free is None and isinstance(axes, list) and shape.rank is not None:
        rank = shape.rank
        axes = [i + rank if i < 0 else i for i in axes]
        free_list = [i for i in range(rank) if i not in axes]
        dims = shape.as_list()
        free_dims = [dims[i] for i in free_list]
        if shape.is_fully_defined():
            prod_free = int(np.prod(free_dims, dtype=np.int64))
            prod_axes = int(np.prod([dims[i] for i in axes], dtype=np.int64))
            perm = axes + free_list if flipped else free_list + axes
            new_shape = [prod_axes, prod_free] if flipped else [prod_free, prod_axes]
            if perm != list(range(rank)):
                a = array_ops.transpose(a, perm)
            if a.shape.as_list() != new_shape:
                a = array_ops.reshape(a, new_shape)
            return a, free_dims, free_dims
        free_dims_static = free_dims
        axes = convert_to_tensor(axes, dtype=dtypes.int32, name="axes")
        free = convert_to_tensor(free_list, dtype=dtypes.int32, name="free")
        shape_a = array_ops.shape(a)
    else:
        free_dims_static = None
        shape_a = array_ops.shape(a)
        if free is None:
            rank_a = array_ops.rank(a)
            axes = convert_to_tensor(axes, dtype=dtypes.int32, name="axes")
            axes = math_ops.where(axes >= 0, axes, axes + rank_a)
            free = _complement(array_ops.range(0, rank_a), axes)
        elif not isinstance(axes, Tensor):
            axes = convert_to_tensor(axes, dtype=dtypes.int32, name="axes")
    free_dims = slicing.gather(shape_a, free)
    axes_dims = slicing.gather(shape_a, axes)
    prod_free = reduction.reduce_prod(free_dims)
    prod_axes = reduction.reduce_prod(axes_dims)
    if flipped:
        perm = array_transform.concat([axes, free], 0)
        new_shape = array_transform.stack([prod_axes, prod_free])
    else:
        perm = array_transform.concat([free, axes], 0)
        new_shape = array_transform.stack([prod_free, prod_axes])
    matrix = array_ops.reshape(array_ops.transpose(a, perm), new_shape)
    return matrix, free_dims, free_dims_static


def _complement(indices, axes):
    """The entries of the 1-D ``indices`` not in ``axes``, in order (TF's ``ListDiff``).

    Composed from reductions: with ``c`` the running count of kept entries, the j-th kept
    entry sits at position ``#{i : c[i] <= j}``; ``indices`` is ``range(rank)``, so the
    position is the value.
    """
    keep = reduction.reduce_all(
        math_ops.not_equal(array_ops.reshape(indices, [-1, 1]), axes), axis=1
    )
    keep = math_ops.cast(keep, dtypes.int32)
    running = reduction.cumsum(keep)
    j = array_ops.range(0, reduction.reduce_sum(keep))
    before = math_ops.less_equal(running, array_ops.reshape(j, [-1, 1]))
    return reduction.reduce_sum(math_ops.cast(before, dtypes.int32), axis=1)


# -----------------------------------------------------------------------------------------
# Einsum: one engine op for TF's ``Einsum`` and ONNX's ``Einsum``
# -----------------------------------------------------------------------------------------

_ELLIPSIS = "."  # "..." is kept as one token "." after parsing


def _parse_einsum(equation: str, n_inputs: int | None = None):
    """``([input_subscripts...], output_subscripts)``, each a string of labels in which
    ``"."`` stands for the ellipsis; the implicit output (no ``->``) is numpy's: the ellipsis,
    then the labels used once, in alphabetical order. ValueError on a malformed equation."""
    eq = equation.replace(" ", "")
    if eq.count("->") > 1:
        raise ValueError(f"Einsum equation '{equation}' has more than one '->'")
    lhs, arrow, rhs = eq.partition("->")

    def subscripts(part: str) -> str:
        if part.count("...") > 1 or part.replace("...", "").count(".") > 0:
            raise ValueError(f"Einsum equation '{equation}': bad ellipsis in '{part}'")
        s = part.replace("...", _ELLIPSIS)
        bad = [c for c in s if not (c.isascii() and c.isalpha()) and c != _ELLIPSIS]
        if bad:
            raise ValueError(f"Einsum equation '{equation}': invalid label {bad[0]!r}")
        return s

    ins = [subscripts(p) for p in lhs.split(",")]
    if n_inputs is not None and len(ins) != n_inputs:
        raise ValueError(
            f"Einsum equation '{equation}' names {len(ins)} operands but {n_inputs} were given"
        )
    if arrow:
        out = subscripts(rhs)
        seen = set("".join(ins))
        for c in out:
            if c != _ELLIPSIS and c not in seen:
                raise ValueError(f"Einsum equation '{equation}': output label '{c}' is unused")
            if out.count(c) > 1:
                raise ValueError(f"Einsum equation '{equation}': output label '{c}' repeats")
        if _ELLIPSIS in out and not any(_ELLIPSIS in s for s in ins):
            raise ValueError(f"Einsum equation '{equation}': output ellipsis without inputs'")
    else:
        labels = "".join(ins).replace(_ELLIPSIS, "")
        once = sorted(c for c in set(labels) if labels.count(c) == 1)
        out = (_ELLIPSIS if any(_ELLIPSIS in s for s in ins) else "") + "".join(once)
    return ins, out


def _einsum_infer(o):
    d = check_same_dtype(o)
    if d not in _EINSUM_DTYPES:
        raise TypeError(f"Einsum does not support dtype {d.name}")
    ins, out = _parse_einsum(o._attrs["equation"], len(o._inputs))
    sizes: dict[str, int | None] = {}
    ellipsis = TensorShape([])
    ellipsis_known = True
    for subs, t in zip(ins, o._inputs):
        dims = t._shape.as_tuple()
        labels = subs.replace(_ELLIPSIS, "")
        if dims is None:
            ellipsis_known = ellipsis_known and _ELLIPSIS not in subs
            for c in labels:
                sizes.setdefault(c, None)
            continue
        if len(dims) < len(labels) or (_ELLIPSIS not in subs and len(dims) != len(labels)):
            raise ShapeError(
                f"Einsum operand with subscripts '{subs.replace(_ELLIPSIS, '...')}' has rank "
                f"{len(dims)}"
            )
        k = subs.find(_ELLIPSIS)
        n_ell = len(dims) - len(labels)
        if k >= 0:
            ellipsis = broadcast_shape(ellipsis, TensorShape(dims[k : k + n_ell]))
            dims = dims[:k] + dims[k + n_ell :]
        for c, dim in zip(labels, dims):
            known = sizes.get(c)
            if known is not None and dim is not None and known != dim:
                raise ShapeError(f"Einsum label '{c}' has sizes {known} and {dim}")
            sizes[c] = dim if known is None else known
    if _ELLIPSIS in out and not ellipsis_known:
        return [(d, unknown_shape())]
    result = []
    for c in out:
        result.extend(ellipsis.as_tuple() if c == _ELLIPSIS else (sizes[c],))
    return [(d, TensorShape(result))]


def _einsum_grad(o, g):
    xs = list(o.inputs)
    if not xs[0].dtype.base_dtype.is_floating:
        return [None] * len(xs)
    ins, out = _parse_einsum(o.get_attr("equation"), len(xs))
    return [_einsum_input_grad(ins, out, xs, g, i) for i in range(len(xs))]


def _einsum_input_grad(ins, out, xs, g, i):
    """d(out)/d(xs[i]): the einsum of ``g`` with the other operands onto input ``i``'s
    labels; labels summed away inside input ``i`` alone are broadcast back, and ellipsis
    dimensions that were broadcast are summed back to ``xs[i]``'s shape."""
    subs = ins[i]
    if len(set(subs)) != len(subs):
        raise LookupError(
            f"Einsum gradient: input subscripts '{subs.replace(_ELLIPSIS, '...')}' repeat a "
            "label (a diagonal); TensorFlow does not differentiate this either"
        )
    others = [s for j, s in enumerate(ins) if j != i]
    available = set(out).union(*others) if others else set(out)
    kept = "".join(c for c in subs if c in available)
    lhs = ",".join([out] + others).replace(_ELLIPSIS, "...")
    operands = [g] + [x for j, x in enumerate(xs) if j != i]
    partial = create(
        "Einsum", operands, {"equation": f"{lhs}->{kept.replace(_ELLIPSIS, '...')}"}, None
    ).outputs[0]
    x = xs[i]
    if kept != subs:
        rank = x.shape.rank
        if rank is None:
            raise LookupError("Einsum gradient needs the operand's rank for a summed label")
        n_ell = rank - len(subs.replace(_ELLIPSIS, ""))
        axis = 0
        for c in subs:
            width = n_ell if c == _ELLIPSIS else 1
            if c not in kept:
                for _ in range(width):
                    partial = array_ops.expand_dims(partial, axis)
                    axis += 1
            else:
                axis += width
        return array_transform.broadcast_to(partial, array_ops.shape(x))
    return unbroadcast(partial, x)


_EINSUM_DTYPES = frozenset(
    [
        dtypes.float16,
        dtypes.float32,
        dtypes.float64,
        dtypes.int32,
        dtypes.int64,
    ]
)


@op(
    "Einsum",
    infer=_einsum_infer,
    grad=_einsum_grad,
    inputs=("inputs*",),
    attrs=(Attr("equation", "string"),),
)
def _einsum_kernel(xp, *xs, equation):
    try:
        result = xp.einsum(equation, *xs, optimize=len(xs) > 1)
    except ValueError as e:
        raise errors.InvalidArgumentError(None, None, f"Einsum '{equation}': {e}") from None
    result = xp.asarray(result)
    # numpy returns views for pure transpositions; kernels never alias their inputs.
    if result.base is not None:
        result = result.copy()
    return result


def einsum(equation: str, *inputs, name=None, **kwargs) -> Tensor:
    """Einstein summation over ``inputs`` as ``equation`` says (``tf.einsum``).

    Labels are letters; ``...`` stands for broadcast leading dimensions; without ``->`` the
    output is numpy's implicit one. One engine op (``Einsum``), as TF records it.

    >>> einsum("bij,bjk->bik", x, y)  # batched matmul
    """
    kwargs.pop("optimize", None)  # a hint for TF's contraction order; numpy picks its own
    if kwargs:
        raise TypeError(f"Invalid keyword arguments for einsum: {sorted(kwargs)}")
    with name_scope(name, "einsum", list(inputs)) as scope:
        xs = [convert_to_tensor(x, name="input") for x in inputs]
        if len(xs) > 1:
            d = xs[0].dtype.base_dtype
            xs = [xs[0]] + [convert_to_tensor(x, dtype=d) for x in xs[1:]]
        _parse_einsum(equation, len(xs))
        return create("Einsum", xs, {"equation": equation.replace(" ", "")}, scope).outputs[0]
