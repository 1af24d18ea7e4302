"""ONNX-only engine ops for ``mapping_misc.py``: Unique (sorted or in order of first
occurrence, flat or along an axis), and Squeeze/Unsqueeze whose axes are computed at run
time. Declared like those of ``ops.py``."""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.formats.onnx.ops import _bad, _host_ints, _onnx_op
from engine.ops._common import ALL, FLOATS, check_dtype
from engine.tensor_shape import TensorShape, unknown_shape

__all__: list[str] = []


def _unique_infer(op):
    dt = check_dtype(op, 0, ALL)
    vector = TensorShape([None])
    axis = op.get_attr("axis")
    shape = op._inputs[0]._shape
    y = vector if axis < 0 else unknown_shape()
    if axis >= 0 and shape.ndims is not None:
        dims = list(shape.as_list())
        dims[axis] = None
        y = TensorShape(dims)
    return [(dt, y), (dtypes.int64, vector), (dtypes.int64, vector), (dtypes.int64, vector)]


@_onnx_op(
    "OnnxUnique",
    infer=_unique_infer,
    inputs=("x",),
    cpu_only=True,
    attrs=[("axis", "int"), ("sorted", "int")],
)
def _unique(xp, x, *, axis, sorted):  # noqa: A002 - ONNX's attribute name
    x = np.asarray(x)
    flat = axis < 0
    data = x.reshape(-1) if flat else x
    y, first, inverse, counts = np.unique(
        data,
        return_index=True,
        return_inverse=True,
        return_counts=True,
        axis=None if flat else axis,
        equal_nan=False,
    )
    inverse = inverse.reshape(-1)
    if not sorted:
        order = np.argsort(first, kind="stable")
        y = y[order] if flat else np.take(y, order, axis=axis)
        first, counts = first[order], counts[order]
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        inverse = rank[inverse]
    i64 = np.int64
    return y.astype(x.dtype), first.astype(i64), inverse.astype(i64), counts.astype(i64)


# -----------------------------------------------------------------------------------------
# Squeeze / Unsqueeze with axes computed at run time
# -----------------------------------------------------------------------------------------


def _axes_count(op) -> int | None:
    dims = op._inputs[1]._shape.as_tuple()
    return None if dims is None or len(dims) != 1 else dims[0]


def _unsqueeze_infer(op):
    x, k = op._inputs[0]._shape, _axes_count(op)
    check_dtype(op, 1, (dtypes.int64,))
    rank = None if x.ndims is None or k is None else x.ndims + k
    return [(check_dtype(op, 0, ALL), unknown_shape(rank))]


def _squeeze_infer(op):
    check_dtype(op, 1, (dtypes.int64,))
    return [(check_dtype(op, 0, ALL), unknown_shape())]


def _normalized_axes(axes, rank: int, what: str) -> list[int]:
    out = []
    for a in np.asarray(axes).reshape(-1).tolist():
        if not -rank <= a < rank:
            raise _bad(f"{what}: axis {a} is out of range for rank {rank}")
        out.append(a % rank)
    if len(set(out)) != len(out):
        raise _bad(f"{what}: repeated axes {np.asarray(axes).tolist()}")
    return out


@_onnx_op(
    "OnnxUnsqueeze", infer=_unsqueeze_infer, inputs=("x", "axes"), host_inputs=(1,), aliases=True
)
def _unsqueeze(xp, x, axes):
    axes_h = _host_ints(xp, axes)
    out_rank = x.ndim + len(axes_h)
    for a in sorted(_normalized_axes(axes_h, out_rank, "Unsqueeze")):
        x = xp.expand_dims(x, a)
    return x


@_onnx_op("OnnxSqueeze", infer=_squeeze_infer, inputs=("x", "axes"), host_inputs=(1,), aliases=True)
def _squeeze(xp, x, axes):
    found = _normalized_axes(_host_ints(xp, axes), x.ndim, "Squeeze")
    for a in found:
        if x.shape[a] != 1:
            raise _bad(f"Squeeze: dimension {a} of shape {list(x.shape)} is not 1")
    return xp.squeeze(x, axis=tuple(found)) if found else xp.squeeze(x)


# -----------------------------------------------------------------------------------------
# Dilated pooling windows (MaxPool/AveragePool/LpPool with dilations), on padded N, C, ... data
# -----------------------------------------------------------------------------------------


def _window_pool_infer(op):
    x = op._inputs[0]._shape
    k, s, d = (op.get_attr(a) for a in ("kernel", "strides", "dilations"))
    if x.ndims is None:
        return [(check_dtype(op, 0, ALL), unknown_shape())]
    dims = x.as_list()
    out = dims[:2]
    for size, ki, si, di in zip(dims[2:], k, s, d):
        out.append(None if size is None else max((size - ((ki - 1) * di + 1)) // si + 1, 0))
    return [(check_dtype(op, 0, ALL), TensorShape(out))]


@_onnx_op(
    "OnnxWindowPool",
    infer=_window_pool_infer,
    inputs=("x",),
    attrs=[
        ("mode", "string"),
        ("kernel", "list(int)"),
        ("strides", "list(int)"),
        ("dilations", "list(int)"),
    ],
)
def _window_pool(xp, x, *, mode, kernel, strides, dilations):
    """The max or the sum over each (dilated) window of the already padded ``x``, tap by tap
    over strided views (no window copied)."""
    n = len(kernel)
    if x.ndim != n + 2 or len(strides) != n or len(dilations) != n:
        raise _bad(f"window pool: {n} window dims for input of rank {x.ndim}")
    if mode not in ("max", "sum"):
        raise _bad(f"window pool: unknown mode {mode!r}")
    out_sizes = [
        (size - ((k - 1) * d + 1)) // s + 1
        for size, k, s, d in zip(x.shape[2:], kernel, strides, dilations)
    ]
    if min(out_sizes, default=1) <= 0:
        return xp.zeros(x.shape[:2] + tuple(max(o, 0) for o in out_sizes), x.dtype)
    out = None
    for tap in np.ndindex(*kernel):
        index = (slice(None), slice(None)) + tuple(
            slice(t * d, t * d + (o - 1) * s + 1, s)
            for t, d, o, s in zip(tap, dilations, out_sizes, strides)
        )
        window = x[index]
        if out is None:
            out = window.copy()
        elif mode == "max":
            xp.maximum(out, window, out=out)
        else:
            out += window
    return out


# -----------------------------------------------------------------------------------------
# RotaryEmbedding (opset 23)
# -----------------------------------------------------------------------------------------


def _rotary_infer(op):
    dt = check_dtype(op, 0, FLOATS)
    return [(dt, op._inputs[0]._shape)]


@_onnx_op(
    "OnnxRotaryEmbedding",
    infer=_rotary_infer,
    inputs=("x", "cos_cache", "sin_cache", "position_ids"),
    attrs=[
        ("interleaved", "int"),
        ("rotary_embedding_dim", "int"),
        ("num_heads", "int"),
        ("has_positions", "int"),
    ],
)
def _rotary_embedding(
    xp, x, cos, sin, positions, *, interleaved, rotary_embedding_dim, num_heads, has_positions
):
    """The ONNX definition: x [batch, seq, hidden] (with num_heads) or [batch, heads, seq,
    head]; the first ``rotary_embedding_dim`` features of each head rotated by the caches'
    angles (at ``position_ids``, else the caches are [batch, seq, dim/2] already)."""
    shape = x.shape
    if x.ndim == 4:
        x = x.transpose(0, 2, 1, 3)
    elif x.ndim == 3:
        if num_heads <= 0 or shape[2] % num_heads:
            raise _bad(f"RotaryEmbedding: hidden size {shape[2]} and num_heads {num_heads}")
        x = x.reshape(shape[0], shape[1], num_heads, shape[2] // num_heads)
    else:
        raise _bad(f"RotaryEmbedding: input of rank {x.ndim} (3 or 4)")
    head = x.shape[3]
    dim = rotary_embedding_dim or head
    if dim % 2 or dim > head:
        raise _bad(f"RotaryEmbedding: rotary_embedding_dim {dim} for head size {head}")
    if has_positions:
        pos = positions.astype(np.int64)
        if pos.size and (pos.min() < 0 or pos.max() >= cos.shape[0] or pos.max() >= sin.shape[0]):
            raise _bad(f"RotaryEmbedding: position_ids outside [0, {cos.shape[0]})")
        cos, sin = cos[pos], sin[pos]
    if cos.shape[-1] != dim // 2 or sin.shape[-1] != dim // 2:
        raise _bad(
            f"RotaryEmbedding: caches' last dimension {cos.shape[-1]} is not "
            f"rotary_embedding_dim / 2 = {dim // 2}"
        )
    if cos.shape[:2] != x.shape[:2] or sin.shape[:2] != x.shape[:2]:
        raise _bad(f"RotaryEmbedding: caches {list(cos.shape)} for input {list(shape)}")
    cos, sin = cos[:, :, None, :], sin[:, :, None, :]
    rotate, keep = x[..., :dim], x[..., dim:]
    if interleaved:
        x1, x2 = rotate[..., 0::2], rotate[..., 1::2]
    else:
        x1, x2 = rotate[..., : dim // 2], rotate[..., dim // 2 :]
    real = cos * x1 - sin * x2
    imag = sin * x1 + cos * x2
    if interleaved:
        rotated = xp.stack([real, imag], axis=-1).reshape(rotate.shape)
    else:
        rotated = xp.concatenate([real, imag], axis=-1)
    out = xp.concatenate([rotated, keep], axis=-1).astype(x.dtype, copy=False)
    if len(shape) == 3:
        return out.reshape(shape)
    return xp.ascontiguousarray(out.transpose(0, 2, 1, 3))


# -----------------------------------------------------------------------------------------
# GridSample (opset 16: 4-D; opset 20+: any spatial rank)
# -----------------------------------------------------------------------------------------

_CUBIC_A = -0.75


def _grid_infer(op):
    x, g = op._inputs[0]._shape, op._inputs[1]._shape
    dt = check_dtype(op, 0, FLOATS)
    if x.ndims is None or g.ndims is None:
        return [(dt, unknown_shape())]
    xd, gd = x.as_list(), g.as_list()
    return [(dt, TensorShape(xd[:2] + gd[1:-1]))]


def _reflect(xp, v, lo: float, hi: float):
    """Coordinates reflected by the nearer border until inside [lo, hi] (ONNX's rule)."""
    span = hi - lo
    if span <= 0:
        return xp.full_like(v, lo)
    below, above = v < lo, v > hi
    dx = xp.where(below, lo - v, v - hi)
    n = xp.trunc(dx / span)
    r = dx - n * span
    even = (n % 2) == 0
    return xp.where(
        below, xp.where(even, lo + r, hi - r), xp.where(above, xp.where(even, hi - r, lo + r), v)
    )


def _cubic_weights(xp, t):
    a = _CUBIC_A
    t1, t2, t3 = t + 1, 1 - t, 2 - t
    return [
        ((a * t1 - 5 * a) * t1 + 8 * a) * t1 - 4 * a,
        ((a + 2) * t - (a + 3)) * t * t + 1,
        ((a + 2) * t2 - (a + 3)) * t2 * t2 + 1,
        ((a * t3 - 5 * a) * t3 + 8 * a) * t3 - 4 * a,
    ]


def _axis_taps(xp, v, mode: str):
    """Per spatial axis: [(index, weight)] taps for coordinate array ``v``."""
    if mode == "nearest":
        return [(v, None)]
    base = xp.floor(v)
    t = v - base
    if mode == "linear":
        return [(base, 1 - t), (base + 1, t)]
    return [(base + k - 1, w) for k, w in enumerate(_cubic_weights(xp, t))]


@_onnx_op(
    "OnnxGridSample",
    infer=_grid_infer,
    inputs=("x", "grid"),
    attrs=[("mode", "string"), ("padding_mode", "string"), ("align_corners", "int")],
    cpu_only=True,
)
def _grid_sample(xp, x, grid, *, mode, padding_mode, align_corners):
    n_sp = x.ndim - 2
    if n_sp < 1 or grid.ndim != x.ndim or grid.shape[-1] != n_sp or grid.shape[0] != x.shape[0]:
        raise _bad(
            f"GridSample: grid {list(grid.shape)} does not match input {list(x.shape)} "
            f"(expected [N, *out, {max(n_sp, 0)}])"
        )
    dims = x.shape[2:]
    out_sp = grid.shape[1:-1]
    n, c = x.shape[:2]
    points = int(np.prod(out_sp, dtype=np.int64))
    if n * c * points == 0:
        return xp.zeros((n, c, *out_sp), x.dtype)
    ft = x.dtype.type
    g = grid.astype(x.dtype, copy=False).reshape(n, points, n_sp)
    coords = []
    for i, size in enumerate(dims):
        v = g[..., n_sp - 1 - i]  # grid's last axis is (x, y, z): the last spatial dim first
        v = (v + 1) / 2 * (size - 1) if align_corners else ((v + 1) * size - 1) / 2
        v = v.astype(x.dtype, copy=False)
        if mode == "nearest":
            v = xp.rint(v)
        lo, hi = (0.0, size - 1.0) if align_corners else (-0.5, size - 0.5)
        if padding_mode == "border":
            v = xp.where((v < lo) | (v > hi), xp.clip(v, 0, size - 1), v)
        elif padding_mode == "reflection":
            v = _reflect(xp, v, lo, hi).astype(x.dtype, copy=False)
        coords.append((v, size, lo, hi))
    flat = x.reshape(n, c, -1)
    batch = xp.arange(n)[:, None, None]
    chan = xp.arange(c)[None, :, None]
    out = xp.zeros((n, c, points), dtype=x.dtype)
    per_axis = [_axis_taps(xp, v, mode) for v, _, _, _ in coords]
    for combo in np.ndindex(*[len(t) for t in per_axis]):
        index = xp.zeros((n, points), dtype=np.int64)
        valid = xp.ones((n, points), dtype=bool)
        weight = None
        for axis, k in enumerate(combo):
            pos, w = per_axis[axis][k]
            size, lo, hi = coords[axis][1:]
            if padding_mode == "reflection" and mode != "nearest":
                pos = _reflect(xp, pos, lo, hi)
            i = pos.astype(np.int64)
            if padding_mode == "zeros":
                valid &= (i >= 0) & (i < size)
            i = xp.clip(i, 0, size - 1)
            index = index * size + i
            if w is not None:
                weight = w if weight is None else weight * w
        values = flat[batch, chan, index[:, None, :]]
        values = xp.where(valid[:, None, :], values, ft(0))
        out += values if weight is None else values * weight[:, None, :].astype(x.dtype)
    return out.reshape(n, c, *out_sp)
