"""Partitions and stitches of rows, and the block rearrangements of space and depth or batch
(TF1's ``dynamic_partition``, ``dynamic_stitch``, ``space_to_depth``, ``depth_to_space``,
``space_to_batch_nd``, ``batch_to_space_nd`` and the 2-D ``space_to_batch``/``batch_to_space``),
each with TensorFlow's shape function, run-time checks and gradient.

``dynamic_stitch`` lets later indices win where they repeat (TF documents this for
DynamicStitch; ``parallel_dynamic_stitch`` behaves the same here, deterministically, on numpy
and cupy). Rows no index names are zero, as TF 2's kernel leaves them.

``space_to_depth``/``depth_to_space`` run NCHW as well as NHWC (TF's CPU kernel refuses NCHW;
its GPU kernel gives what this gives).

    >>> dynamic_partition([10, 20, 30], [1, 0, 1], 2)  # [[20], [10, 30]]
    >>> dynamic_stitch([[0, 2], [1]], [[1.0, 3.0], [2.0]])  # [1, 2, 3]
"""

from __future__ import annotations

import numpy as np

from engine import dtypes, errors
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.registry import Attr, OpFlags, ShapeError, op
from engine.framework.tensor_util import constant_value
from engine.ops import array as array_ops
from engine.ops import reduction, slicing
from engine.ops._common import ALL, BOOL, INDEX, NUMERIC, base, check_dtype, create, dims_text
from engine.tensor_shape import TensorShape, unknown_shape

__all__ = [
    "dynamic_partition",
    "dynamic_stitch",
    "parallel_dynamic_stitch",
    "space_to_depth",
    "depth_to_space",
    "space_to_batch_nd",
    "batch_to_space_nd",
    "space_to_batch",
    "batch_to_space",
]

_INT32 = frozenset([dtypes.int32])
_BLOCKABLE = NUMERIC | BOOL


def _invalid(msg: str) -> errors.InvalidArgumentError:
    """A run-time data error; the session attaches the failing op."""
    return errors.InvalidArgumentError(None, None, msg)


def _dims(t: Tensor) -> list | None:
    dims = t._shape.as_tuple()
    return None if dims is None else list(dims)


def _merge_dims(a: list, b: list) -> list:
    """Two equal-rank dim lists merged, TF's message at the first mismatch."""
    out = []
    for x, y in zip(a, b):
        if x is not None and y is not None and x != y:
            raise ShapeError(f"Dimensions must be equal, but are {x} and {y}")
        out.append(x if x is not None else y)
    return out


def _split_prefix(data: list, prefix: list) -> list:
    """``data``'s dims after ``prefix``, which must be their start (TF's MergePrefix)."""
    if len(data) < len(prefix):
        raise ShapeError(f"Shape must be at least rank {len(prefix)} but is rank {len(data)}")
    _merge_dims(data[: len(prefix)], prefix)
    return data[len(prefix) :]


def _position(flat_index: int, shape) -> str:
    """TF's ``[i,j]`` for the element at ``flat_index`` of an array of ``shape``."""
    if not shape:
        return ""
    return dims_text(int(p) for p in np.unravel_index(flat_index, tuple(shape)))


def _ints(values) -> list[int]:
    return [int(v) for v in np.asarray(values).reshape(-1).tolist()]


# -----------------------------------------------------------------------------------------
# DynamicPartition, DynamicStitch, ParallelDynamicStitch
# -----------------------------------------------------------------------------------------


def _partition_infer(o):
    data, partitions = o._inputs
    dtype = check_dtype(o, 0, ALL)
    check_dtype(o, 1, _INT32, "partitions")
    n = o._attrs["num_partitions"]
    if n < 1:
        raise ShapeError(
            f"Attr 'num_partitions' of 'DynamicPartition' Op passed {n} less than minimum 1."
        )
    d, p = _dims(data), _dims(partitions)
    if p is None or d is None:
        return [(dtype, unknown_shape())] * n
    return [(dtype, TensorShape([None] + _split_prefix(d, p)))] * n


def _partition_grad(o, *grads):
    """TF's: the output gradients stitched back to the rows they came from."""
    data, partitions = o.inputs
    prefix = array_ops._shape_of(partitions)
    original = array_ops.reshape(array_ops.range(reduction.reduce_prod(prefix)), prefix)
    parts = dynamic_partition(original, partitions, o.get_attr("num_partitions"))
    stitched = parallel_dynamic_stitch(parts, list(grads))
    return [array_ops.reshape(stitched, array_ops._shape_of(data)), None]


@op(
    "DynamicPartition",
    infer=_partition_infer,
    inputs=("data", "partitions"),
    attrs=(Attr("num_partitions", "int"),),
    grad=_partition_grad,
)
def _partition_kernel(xp, data, partitions, *, num_partitions):
    if data.shape[: partitions.ndim] != partitions.shape:
        raise _invalid(
            f"data.shape must start with partitions.shape, got data.shape = "
            f"{dims_text(data.shape)}, partitions.shape = {dims_text(partitions.shape)}"
        )
    flat = partitions.reshape(-1)
    bad = (flat < 0) | (flat >= num_partitions)
    if bool(bad.any()):
        i = int(xp.argmax(bad))
        raise _invalid(
            f"partitions{_position(i, partitions.shape)} = {int(flat[i])} is not in "
            f"[0, {num_partitions})"
        )
    rows = data.reshape(flat.shape + data.shape[partitions.ndim :])
    return array_ops._outputs([rows[flat == p] for p in range(num_partitions)])


def _stitch_infer(o):
    n = len(o._inputs) // 2
    if n < 1 or len(o._inputs) != 2 * n:
        raise ShapeError(f"{o._type} takes as many indices as data tensors (at least one)")
    for i in range(n):
        check_dtype(o, i, _INT32, "indices")
    dtype = check_dtype(o, n, ALL)
    for i in range(n + 1, 2 * n):
        if base(o._inputs[i]) is not dtype:
            raise TypeError(
                f"Input 'data[{i - n}]' of '{o._type}' Op has type {base(o._inputs[i]).name} "
                f"that does not match type {dtype.name} of argument 'data[0]'."
            )
    extra, max_index, all_constant = None, -1, True
    for indices, data in zip(o._inputs[:n], o._inputs[n:]):
        value = constant_value(indices)
        if value is None:
            all_constant = False
        elif np.size(value):
            max_index = max(max_index, int(np.max(value)))
        ind, dat = _dims(indices), _dims(data)
        if ind is None or dat is None:
            continue
        rest = _split_prefix(dat, ind)
        if extra is not None and len(extra) != len(rest):
            raise ShapeError(f"Shapes must be equal rank, but are {len(extra)} and {len(rest)}")
        extra = rest if extra is None else _merge_dims(extra, rest)
    if extra is None:
        return [(dtype, unknown_shape())]
    return [(dtype, TensorShape([max_index + 1 if all_constant else None] + extra))]


def _stitch_grad(o, g):
    """TF's: each data tensor gets the gradient gathered at its indices (duplicates too)."""
    n = len(o.inputs) // 2
    return [None] * n + [slicing.gather(g, o.inputs[i]) for i in range(n)]


def _check_stitch_shapes(indices, data) -> tuple:
    """The rows' inner shape, after TF's checks that each ``data[i]`` starts with
    ``indices[i]``'s shape and all share what follows."""
    inner = data[0].shape[indices[0].ndim :]
    for i, (ind, dat) in enumerate(zip(indices, data)):
        if dat.shape[: ind.ndim] != ind.shape:
            raise _invalid(
                f"data[{i}].shape = {dims_text(dat.shape)} does not start with indices[{i}]"
                f".shape = {dims_text(ind.shape)}"
            )
        if dat.shape[ind.ndim :] != inner:
            raise _invalid(
                f"Need data[0].shape[{indices[0].ndim}:] = data[{i}].shape[{ind.ndim}:], got "
                f"data[0].shape = {dims_text(data[0].shape)}, data[{i}].shape = "
                f"{dims_text(dat.shape)}, indices[0].shape = {dims_text(indices[0].shape)}, "
                f"indices[{i}].shape = {dims_text(ind.shape)}"
            )
    return inner


def _stitch_kernel(xp, *args):
    n = len(args) // 2
    indices, data = args[:n], args[n:]
    inner = _check_stitch_shapes(indices, data)
    sizes = [int(ind.size) for ind in indices]
    first = max([int(ind.max()) for ind in indices if ind.size] + [-1]) + 1
    out = xp.zeros((first,) + inner, dtype=data[0].dtype)
    if not sum(sizes):
        return out
    flat = xp.concatenate([ind.reshape(-1) for ind in indices])
    bad = flat < 0
    if bool(bad.any()):
        j = int(xp.argmax(bad))
        raise _invalid(f"indices[{_index_within(sizes, j)}] is out of range")
    rows = xp.concatenate([d.reshape((s,) + inner) for d, s in zip(data, sizes)])
    # The last row written to each index wins: one write per index keeps it deterministic
    # where a scatter's order is not (cupy).
    order = xp.argsort(flat, kind="stable")
    ordered = flat[order]
    last = xp.concatenate([ordered[1:] != ordered[:-1], xp.ones(1, dtype=bool)])
    out[ordered[last]] = rows[order[last]]
    return out


def _index_within(sizes: list[int], j: int) -> int:
    """The position within its own indices tensor of element ``j`` of them all."""
    for s in sizes:
        if j < s:
            return j
        j -= s
    return j


for _stitch_type in ("DynamicStitch", "ParallelDynamicStitch"):
    op(_stitch_type, infer=_stitch_infer, inputs=("indices*",), grad=_stitch_grad)(_stitch_kernel)


def dynamic_partition(data, partitions, num_partitions: int, name=None) -> list[Tensor]:
    """``num_partitions`` tensors: output ``p`` holds the rows of ``data`` whose
    ``partitions`` entry is ``p``, in order (``partitions`` indexes ``data``'s leading dims).

    >>> dynamic_partition([10, 20, 30, 40], [0, 1, 0, 1], 2)  # [[10, 30], [20, 40]]
    """
    with name_scope(name, "DynamicPartition", [data, partitions]) as scope:
        d = convert_to_tensor(data, name="data")
        p = convert_to_tensor(partitions, dtype_hint=dtypes.int32, name="partitions")
        attrs = {"num_partitions": int(num_partitions)}
        return list(create("DynamicPartition", [d, p], attrs, scope).outputs)


def _stitch(op_type: str, indices, data, name) -> Tensor:
    indices, data = list(indices), list(data)
    if len(indices) != len(data):
        raise ValueError(
            f"List argument 'data' to '{op_type}' Op with length {len(data)} must match length "
            f"{len(indices)} of argument 'indices'."
        )
    with name_scope(name, op_type, indices + data) as scope:
        ind = [convert_to_tensor(i, dtype_hint=dtypes.int32, name="indices") for i in indices]
        first = next((v for v in data if isinstance(v, Tensor)), None)
        hint = None if first is None else first.dtype.base_dtype
        dat = [convert_to_tensor(v, dtype_hint=hint, name="data") for v in data]
        return create(op_type, ind + dat, {}, scope).outputs[0]


def dynamic_stitch(indices, data, name=None) -> Tensor:
    """Interleaves the rows of the ``data`` tensors: ``merged[indices[m][i]] =
    data[m][i]``; where an index repeats, the later one wins.

    >>> dynamic_stitch([[0, 2], [2, 1]], [[1.0, 2.0], [3.0, 4.0]])  # [1, 4, 3]
    """
    return _stitch("DynamicStitch", indices, data, name)


def parallel_dynamic_stitch(indices, data, name=None) -> Tensor:
    """``dynamic_stitch`` as TF's ParallelDynamicStitch op (same values here)."""
    return _stitch("ParallelDynamicStitch", indices, data, name)


# -----------------------------------------------------------------------------------------
# SpaceToDepth, DepthToSpace
# -----------------------------------------------------------------------------------------

_DEPTH_ATTRS = (Attr("block_size", "int"), Attr("data_format", "string", default="NHWC"))


def _divide(d, by: int):
    if d is None:
        return None
    if d % by:
        raise ShapeError(f"Dimension size must be evenly divisible by {by} but is {d}")
    return d // by


def _times(d, by: int):
    return None if d is None else d * by


def _depth_infer(o):
    dtype = check_dtype(o, 0, ALL)
    bs, fmt = o._attrs["block_size"], o._attrs["data_format"]
    if bs < 2:
        raise ShapeError(f"Attr 'block_size' of '{o._type}' Op passed {bs} less than minimum 2.")
    if fmt not in ("NHWC", "NCHW"):
        raise ShapeError(f"{o._type}: data_format {fmt!r} is not supported (NHWC, NCHW)")
    d = _dims(o._inputs[0])
    if d is None:
        return [(dtype, unknown_shape(4))]
    if len(d) != 4:
        raise ShapeError(f"Shape must be rank 4 but is rank {len(d)}")
    n, h, w, c = (d[0], d[2], d[3], d[1]) if fmt == "NCHW" else d
    if o._type == "SpaceToDepth":
        h, w, c = _divide(h, bs), _divide(w, bs), _times(c, bs * bs)
    else:
        h, w, c = _times(h, bs), _times(w, bs), _divide(c, bs * bs)
    return [(dtype, TensorShape([n, c, h, w] if fmt == "NCHW" else [n, h, w, c]))]


def _as_nhwc(xp, x, data_format: str, to_depth: bool, bs: int):
    """The rearrangement in NHWC, with NCHW transposed in and out."""
    if x.ndim != 4:
        raise _invalid(f"Input rank should be: 4 instead of: {x.ndim}")
    nchw = data_format == "NCHW"
    t = x.transpose(0, 2, 3, 1) if nchw else x
    n, h, w, c = t.shape
    if to_depth:
        if h % bs or w % bs:
            raise _invalid(
                f"Image width {w} and height {h} should be divisible by block_size: {bs}"
            )
        t = t.reshape(n, h // bs, bs, w // bs, bs, c).transpose(0, 1, 3, 2, 4, 5)
        shape = (n, h // bs, w // bs, c * bs * bs)
    else:
        if c % (bs * bs):
            raise _invalid(f"Input depth dimension {c} should be divisible by: {bs * bs}")
        t = t.reshape(n, h, w, bs, bs, c // (bs * bs)).transpose(0, 1, 3, 2, 4, 5)
        shape = (n, h * bs, w * bs, c // (bs * bs))
    out = t.copy().reshape(shape)  # one copy: the output never aliases the input
    return out.transpose(0, 3, 1, 2).copy() if nchw else out


@op(
    "SpaceToDepth",
    infer=_depth_infer,
    inputs=("input",),
    attrs=_DEPTH_ATTRS,
    grad=lambda o, g: [_depth_op("DepthToSpace", g, o)],
)
def _space_to_depth_kernel(xp, x, *, block_size, data_format="NHWC"):
    return _as_nhwc(xp, x, data_format, True, block_size)


@op(
    "DepthToSpace",
    infer=_depth_infer,
    inputs=("input",),
    attrs=_DEPTH_ATTRS,
    grad=lambda o, g: [_depth_op("SpaceToDepth", g, o)],
)
def _depth_to_space_kernel(xp, x, *, block_size, data_format="NHWC"):
    return _as_nhwc(xp, x, data_format, False, block_size)


def _depth_op(op_type: str, g: Tensor, like) -> Tensor:
    attrs = {k: like.get_attr(k) for k in ("block_size", "data_format")}
    return create(op_type, [g], attrs, None).outputs[0]


def space_to_depth(input, block_size: int, name=None, data_format="NHWC") -> Tensor:  # noqa: A002
    """Moves ``block_size`` x ``block_size`` blocks of space into depth: NHWC
    ``[n, h, w, c]`` becomes ``[n, h / b, w / b, c * b * b]`` (NCHW alike)."""
    with name_scope(name, "SpaceToDepth", [input]) as scope:
        x = convert_to_tensor(input, name="input")
        attrs = {"block_size": int(block_size), "data_format": data_format}
        return create("SpaceToDepth", [x], attrs, scope).outputs[0]


def depth_to_space(input, block_size: int, name=None, data_format="NHWC") -> Tensor:  # noqa: A002
    """The inverse of ``space_to_depth``: ``[n, h, w, c]`` becomes
    ``[n, h * b, w * b, c / (b * b)]`` (NHWC; NCHW alike)."""
    with name_scope(name, "DepthToSpace", [input]) as scope:
        x = convert_to_tensor(input, name="input")
        attrs = {"block_size": int(block_size), "data_format": data_format}
        return create("DepthToSpace", [x], attrs, scope).outputs[0]


# -----------------------------------------------------------------------------------------
# SpaceToBatchND, BatchToSpaceND
# -----------------------------------------------------------------------------------------


def _block_infer_start(o, what: str):
    """(dtype, input dims or None, block values or None, pad/crop pairs or None, m)."""
    x, block, pairs = o._inputs
    dtype = check_dtype(o, 0, _BLOCKABLE)
    check_dtype(o, 1, INDEX, "Tblock_shape")
    check_dtype(o, 2, INDEX, "Tpaddings" if what == "paddings" else "Tcrops")
    b = _dims(block)
    if b is None or len(b) != 1:
        raise ShapeError("block_shape must have rank 1.")
    if b[0] is None:
        raise ShapeError("block_shape must have known size.")
    m = b[0]
    d = _dims(x)
    if d is not None and len(d) < m + 1:
        raise ShapeError(f"Shape must be at least rank {m + 1} but is rank {len(d)}")
    p = _dims(pairs)
    if p is not None:
        if len(p) != 2:
            raise ShapeError(f"Shape must be rank 2 but is rank {len(p)}")
        _merge_dims(p, [m, 2])
    values = constant_value(block)
    if values is not None and any(v < 1 for v in _ints(values)):
        raise ShapeError("block_shape must be positive")
    pv = constant_value(pairs)
    if pv is not None and any(v < 0 for v in _ints(pv)):
        raise ShapeError(f"{what} cannot be negative")
    blocks = None if values is None else _ints(values)
    return dtype, d, blocks, None if pv is None else _ints(pv), m


def _space_to_batch_infer(o):
    dtype, d, blocks, pads, m = _block_infer_start(o, "paddings")
    if d is None:
        return [(dtype, unknown_shape())]
    batch = d[0] if blocks is not None else None
    if batch is not None:
        batch *= int(np.prod(blocks, dtype=np.int64))
    out = [batch] + [None] * m
    if blocks is not None and pads is not None:
        for i in range(m):
            size = d[i + 1]
            padded = None if size is None else size + pads[2 * i] + pads[2 * i + 1]
            out[i + 1] = _divide(padded, blocks[i])
    return [(dtype, TensorShape(out + d[m + 1 :]))]


def _batch_to_space_infer(o):
    dtype, d, blocks, crops, m = _block_infer_start(o, "crops")
    if d is None:
        return [(dtype, unknown_shape())]
    batch = d[0] if blocks is not None else None
    for b in blocks or []:
        batch = _divide(batch, b)
    out = [batch] + [None] * m
    if blocks is not None and crops is not None:
        for i in range(m):
            size = _times(d[i + 1], blocks[i])
            for c in crops[2 * i : 2 * i + 2]:
                if size is not None and size < c:
                    raise ShapeError(
                        f"Negative dimension size caused by subtracting {c} from {size}"
                    )
                size = None if size is None else size - c
            out[i + 1] = size
    return [(dtype, TensorShape(out + d[m + 1 :]))]


def _check_block_args(x, block_shape, pairs, what: str) -> tuple[list, list]:
    """(block sizes, [start, end] pairs) after TF's checks of the kernel's arguments."""
    if block_shape.ndim != 1:
        raise _invalid(f"block_shape rank should be 1 instead of {block_shape.ndim}")
    m = block_shape.shape[0]
    if x.ndim < m + 1:
        raise _invalid(f"input rank should be >= {m + 1} instead of {x.ndim}")
    if pairs.shape != (m, 2):
        raise _invalid(f"{what} should have shape [{m}, 2] instead of {dims_text(pairs.shape)}")
    blocks, flat = _ints(block_shape), _ints(pairs)
    if any(b < 1 for b in blocks):
        raise _invalid("block_shape must be positive")
    if any(v < 0 for v in flat):
        raise _invalid(f"{what.capitalize()} must be non-negative")
    return blocks, [flat[2 * i : 2 * i + 2] for i in range(m)]


def _space_to_batch_kernel(xp, x, block_shape, paddings):
    blocks, pads = _check_block_args(x, block_shape, paddings, "paddings")
    m, rest = len(blocks), x.shape[len(blocks) + 1 :]
    padded_dims = [s + a + b for s, (a, b) in zip(x.shape[1 : m + 1], pads)]
    for i, (p, b) in enumerate(zip(padded_dims, blocks)):
        if p % b:
            raise _invalid(f"padded_shape[{i}]={p} is not divisible by block_shape[{i}]={b}")
    padded = xp.zeros((x.shape[0], *padded_dims, *rest), dtype=x.dtype)
    inner = tuple(slice(a, a + s) for (a, _), s in zip(pads, x.shape[1 : m + 1]))
    padded[(slice(None), *inner)] = x
    split = sum(((p // b, b) for p, b in zip(padded_dims, blocks)), ())
    r = padded.reshape((x.shape[0], *split, *rest))
    perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)]
    perm += list(range(2 * m + 1, r.ndim))
    batch = x.shape[0] * int(np.prod(blocks, dtype=np.int64))
    return r.transpose(perm).reshape((batch, *(p // b for p, b in zip(padded_dims, blocks)), *rest))


def _batch_to_space_kernel(xp, x, block_shape, crops):
    blocks, crop = _check_block_args(x, block_shape, crops, "crops")
    m, rest = len(blocks), x.shape[len(blocks) + 1 :]
    product = int(np.prod(blocks, dtype=np.int64))
    if x.shape[0] % product:
        raise _invalid(
            f"Input batch dimension ({x.shape[0]}) is not divisible by product of block "
            f"sizes ({product})"
        )
    spatial = x.shape[1 : m + 1]
    for i, ((a, b), s, k) in enumerate(zip(crop, spatial, blocks)):
        if a + b > s * k:
            raise _invalid(f"cropped_shape[{i}]={s * k - a - b} must be non-negative")
    r = x.reshape((*blocks, x.shape[0] // product, *x.shape[1:]))
    perm = [m] + sum(([m + 1 + i, i] for i in range(m)), []) + list(range(2 * m + 1, r.ndim))
    full = r.transpose(perm).reshape(
        (x.shape[0] // product, *(s * k for s, k in zip(spatial, blocks)), *rest)
    )
    keep = tuple(slice(a, s * k - b) for (a, b), s, k in zip(crop, spatial, blocks))
    return full[(slice(None), *keep)].copy()


_BLOCK_FLAGS = OpFlags(host_inputs=(1, 2))


op(
    "SpaceToBatchND",
    infer=_space_to_batch_infer,
    inputs=("input", "block_shape", "paddings"),
    grad=lambda o, g: [batch_to_space_nd(g, o.inputs[1], o.inputs[2]), None, None],
    flags=_BLOCK_FLAGS,
)(_space_to_batch_kernel)
op(
    "BatchToSpaceND",
    infer=_batch_to_space_infer,
    inputs=("input", "block_shape", "crops"),
    grad=lambda o, g: [space_to_batch_nd(g, o.inputs[1], o.inputs[2]), None, None],
    flags=_BLOCK_FLAGS,
)(_batch_to_space_kernel)


def _block_op(op_type: str, x, block_shape, pairs, name) -> Tensor:
    with name_scope(name, op_type, [x, block_shape, pairs]) as scope:
        t = convert_to_tensor(x, name="input")
        b = convert_to_tensor(block_shape, dtype_hint=dtypes.int32, name="block_shape")
        p = convert_to_tensor(pairs, dtype_hint=dtypes.int32, name="pairs")
        return create(op_type, [t, b, p], {}, scope).outputs[0]


def space_to_batch_nd(input, block_shape, paddings, name=None) -> Tensor:  # noqa: A002
    """Zero-pads ``input``'s spatial dims (1..M, M = len(block_shape)) by ``paddings`` and
    moves each block of them into the batch: ``[B, *spatial, *rest]`` becomes
    ``[B * prod(block_shape), *(padded / block_shape), *rest]``."""
    return _block_op("SpaceToBatchND", input, block_shape, paddings, name)


def batch_to_space_nd(input, block_shape, crops, name=None) -> Tensor:  # noqa: A002
    """The inverse of ``space_to_batch_nd``: the batch's blocks back into space, then
    ``crops`` ([M, 2]) removed from each spatial dim."""
    return _block_op("BatchToSpaceND", input, block_shape, crops, name)


def _square(block_size, block_shape) -> np.ndarray:
    size = block_shape if block_size is None else block_size
    return np.array([size, size], dtype=np.int64)


def space_to_batch(input, paddings, block_size=None, name=None, block_shape=None) -> Tensor:  # noqa: A002
    """TF1's 2-D ``space_to_batch`` of a 4-D NHWC ``input``: ``space_to_batch_nd`` with
    ``[block_size, block_size]``."""
    out = space_to_batch_nd(input, _square(block_size, block_shape), paddings, name=name)
    out.set_shape(out.shape.with_rank(4))
    return out


def batch_to_space(input, crops, block_size, name=None, block_shape=None) -> Tensor:  # noqa: A002
    """TF1's 2-D ``batch_to_space``: ``batch_to_space_nd`` with ``[block_size,
    block_size]``."""
    out = batch_to_space_nd(input, _square(block_size, block_shape), crops, name=name)
    out.set_shape(out.shape.with_rank(4))
    return out
