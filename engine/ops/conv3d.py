"""3-D convolution and pooling ops, as TensorFlow names them: ``Conv3D``,
``Conv3DBackpropInputV2``, ``Conv3DBackpropFilterV2``, ``MaxPool3D``, ``AvgPool3D``,
``MaxPool3DGrad``, ``MaxPool3DGradGrad`` and ``AvgPool3DGrad``, NDHWC and NCDHW.

They follow the 2-D ops of ``engine.ops.conv``: one geometry per window op (``Window3``:
output size and padding per spatial dimension, by TF's SAME/VALID rule ``window_size``); the
padded input read through one strided view of all its windows (no Python loop over
positions); a convolution is one matmul of those patches with the filter (``conv_groups``,
grouped filters included); the backprops scatter per-tap gradients back through the views
(a loop over the ``kd * kh * kw`` taps only). Kernels work in NDHWC (NCDHW is transposed on
the way in and out) and only use ``xp`` functions, so the same bodies run on cupy.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass

import numpy as np

from engine import dtypes
from engine.framework.registry import Attr, ShapeError, op
from engine.framework.tensor_util import constant_value_as_shape
from engine.ops import array as array_ops
from engine.ops._common import FLOATS, INDEX, check_dtype, check_same_dtype, create
from engine.ops.conv import (
    _SIZES_0,
    _SIZES_1,
    _check_groups,
    _dims,
    _invalid,
    _shape_of,
    _sizes,
    conv_grads,
    window_size,
)
from engine.ops.conv_groups import acc_dtype, conv_filter_grad, conv_forward, conv_input_taps
from engine.ops.pooling import _lowest
from engine.tensor_shape import TensorShape, unknown_shape

__all__ = ["FORMATS", "PADDINGS", "spatial_axes", "channel_axis"]

FORMATS = ("NDHWC", "NCDHW")
PADDINGS = ("SAME", "VALID")
_ONES = (1, 1, 1, 1, 1)

# -----------------------------------------------------------------------------------------
# Geometry and layout
# -----------------------------------------------------------------------------------------


def spatial_axes(data_format: str) -> tuple[int, int, int]:
    return (1, 2, 3) if data_format == "NDHWC" else (2, 3, 4)


def channel_axis(data_format: str) -> int:
    return 4 if data_format == "NDHWC" else 1


def _spatial(values, data_format: str) -> tuple[int, ...]:
    return tuple(int(values[a]) for a in spatial_axes(data_format))


@dataclass(frozen=True)
class Window3:
    """The geometry of one window op on an NDHWC input: per spatial dimension (depth,
    height, width) the window, stride, dilation, output size and padding."""

    n: int
    size: tuple[int, ...]
    c: int
    k: tuple[int, ...]
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    out: tuple[int, ...]
    before: tuple[int, ...]
    after: tuple[int, ...]

    @property
    def taps(self) -> int:
        return math.prod(self.k)

    @property
    def positions(self) -> int:
        return self.n * math.prod(self.out)

    @property
    def padded(self) -> tuple[int, ...]:
        inner = (s + b + a for s, b, a in zip(self.size, self.before, self.after))
        return (self.n, *inner, self.c)

    def out_shape(self, channels: int) -> tuple[int, ...]:
        return (self.n, *self.out, channels)

    def view(self, tap: tuple[int, ...]) -> tuple[slice, ...]:
        """The index of the strided view of one tap into the padded input."""
        inner = (
            slice(t * d, t * d + (o - 1) * s + 1, s)
            for t, d, o, s in zip(tap, self.dilation, self.out, self.stride)
        )
        return (slice(None), *inner, slice(None))

    def crop(self) -> tuple[slice, ...]:
        """The index of the input inside the padded input."""
        inner = (slice(b, b + s) for b, s in zip(self.before, self.size))
        return (slice(None), *inner, slice(None))


@functools.lru_cache(maxsize=1024)
def _window_of(shape, k, strides, dilations, padding, data_format) -> Window3:
    n, *size, c = shape
    st, dil = _spatial(strides, data_format), _spatial(dilations, data_format)
    try:
        dims = [window_size(size[i], k[i], st[i], dil[i], padding) for i in range(3)]
    except ValueError as e:
        raise _invalid(str(e)) from None
    out, before, after = (tuple(d[j] for d in dims) for j in range(3))
    return Window3(n, tuple(size), c, k, st, dil, out, before, after)


def window3(ndhwc_shape, k, *, strides, dilations, padding, data_format) -> Window3:
    """The ``Window3`` of an NDHWC input shape (remembered per geometry: a served model asks
    for the same few at every call); InvalidArgumentError on impossible geometry."""
    return _window_of(
        tuple(int(d) for d in ndhwc_shape),
        tuple(int(v) for v in k),
        tuple(int(v) for v in strides),
        tuple(int(v) for v in dilations),
        padding,
        data_format,
    )


def _to_last(x, data_format: str):
    return x if data_format == "NDHWC" else x.transpose(0, 2, 3, 4, 1)


def _from_last(xp, y, data_format: str):
    return y if data_format == "NDHWC" else xp.ascontiguousarray(y.transpose(0, 4, 1, 2, 3))


def _last_shape(shape, data_format: str) -> tuple[int, ...]:
    s = tuple(int(d) for d in shape)
    return s if data_format == "NDHWC" else (s[0], s[2], s[3], s[4], s[1])


def _pad(xp, x, g: Window3, fill=0):
    if not any(g.before + g.after):
        return x
    widths = ((0, 0), *zip(g.before, g.after), (0, 0))
    return xp.pad(x, widths, mode="constant", constant_values=fill)


def _patch_view(xp, xpad, g: Window3):
    """``[n, od, oh, ow, kd, kh, kw, c]``: every window of the padded input, as a strided
    view of it (no copy; every index stays inside ``xpad`` by the window's geometry)."""
    s = xpad.strides
    moves = tuple(st * s[i + 1] for i, st in enumerate(g.stride))
    taps = tuple(d * s[i + 1] for i, d in enumerate(g.dilation))
    shape = (g.n, *g.out, *g.k, g.c)
    return xp.lib.stride_tricks.as_strided(xpad, shape, (s[0], *moves, *taps, s[4]))


def _patches(xp, xpad, g: Window3):
    """``[n, od, oh, ow, taps, c]``: the windows copied out, taps in row-major order."""
    return _patch_view(xp, xpad, g).copy().reshape(g.n, *g.out, g.taps, g.c)


def _scatter(xp, taps, g: Window3, dtype):
    """The adjoint of ``_patches`` then cropping the padding: each tap's values (``taps``:
    ``[n, od, oh, ow, taps, c]``) add back onto the input positions it read."""
    out = xp.zeros(g.padded, dtype=dtype)
    for t, tap in enumerate(itertools.product(*(range(k) for k in g.k))):
        out[g.view(tap)] += taps[:, :, :, :, t, :]
    return out[g.crop()]


def _check_rank(t, op_type: str, what: str):
    if t.ndim != 5:
        raise _invalid(f"{op_type}: {what} must be 5-dimensional: {_dims(t.shape)}")


def _groups(fshape, c: int, op_type: str) -> int:
    """The number of groups: input depth / filter depth (conv.py's rule on 2-D filters)."""
    if fshape[3] == 0 or c % fshape[3]:
        raise _invalid(
            f"{op_type}: input and filter must have the same depth: {c} vs {fshape[3]} (or "
            "the input depth a multiple of the filter's, for grouped convolutions)"
        )
    return _check_groups(tuple(fshape[1:]), c, op_type)


def _check_out_backprop(dy, g: Window3, channels: int, op_type: str):
    want = g.out_shape(channels)
    if tuple(dy.shape) != want:
        raise _invalid(
            f"{op_type}: Size of out_backprop doesn't match computed: actual = "
            f"{_dims(dy.shape)}, computed = {_dims(want)}"
        )


# -----------------------------------------------------------------------------------------
# Static shape inference
# -----------------------------------------------------------------------------------------

_ATTR_WORDS = {"strides": "stride", "dilations": "dilation", "ksize": "ksize"}


def _check_attrs(o, *, pool: bool = False):
    fmt = o._attrs["data_format"]
    if fmt not in FORMATS:
        raise ShapeError(f"Invalid data format: {fmt} (expected NDHWC or NCDHW)")
    padding = o._attrs["padding"]
    if padding not in PADDINGS:
        raise ShapeError(f"Invalid padding: {padding} (expected SAME or VALID)")
    for name in ("ksize", "strides") if pool else ("strides", "dilations"):
        values = [int(v) for v in o._attrs.get(name, _ONES)]
        if len(values) != 5:
            raise ShapeError(
                f"{o._type} requires the {_ATTR_WORDS[name]} attribute to contain 5 values, "
                f"but got: {len(values)}"
            )
        if any(v < 1 for v in values):
            raise ShapeError(f"{o._type}: {name} must be positive, got {values}")
        if values[0] != 1 or values[channel_axis(fmt)] != 1:
            if name == "ksize":
                raise ShapeError("Pooling is not yet supported on the batch nor depth dimensions.")
            raise ShapeError(
                f"Current implementation does not yet support {name} in the batch and depth "
                "dimensions."
            )


def _rank5(t, what: str) -> list:
    s = t._shape
    if s.rank is not None and s.rank != 5:
        raise ShapeError(f"Shape must be rank 5 but is rank {s.rank} for {what}")
    return s.as_list() if s.rank is not None else [None] * 5


def _out_dim(size, k, stride, dilation, padding):
    if size is None or k is None:
        return None
    eff = (k - 1) * dilation + 1
    if padding == "VALID" and size < eff:
        raise ShapeError(f"Negative dimension size caused by subtracting {eff} from {size}")
    return window_size(size, k, stride, dilation, padding)[0]


def _out_shape(o, x: list, k, channels) -> TensorShape:
    """The output shape (data_format order) of a window op on input dims ``x``."""
    fmt = o._attrs["data_format"]
    strides = o._attrs["strides"]
    dil = o._attrs.get("dilations", _ONES)
    out = [x[0], None, None, None, None]
    for i, a in enumerate(spatial_axes(fmt)):
        out[a] = _out_dim(x[a], k[i], int(strides[a]), int(dil[a]), o._attrs["padding"])
    out[channel_axis(fmt)] = channels
    return TensorShape(out)


def _conv_infer(o):
    d = check_same_dtype(o)
    check_dtype(o, 0, FLOATS)
    _check_attrs(o)
    x = _rank5(o._inputs[0], "input")
    f = _rank5(o._inputs[1], "filter")
    cin = x[channel_axis(o._attrs["data_format"])]
    if cin is not None and f[3] is not None:
        if f[3] == 0 or cin % f[3]:
            raise ShapeError(
                f"Depth of input ({cin}) is not a multiple of input depth of filter ({f[3]})"
            )
        if f[4] is not None and f[4] % (cin // f[3]):
            raise ShapeError(
                f"Depth of output ({f[4]}) is not a multiple of the number of groups "
                f"({cin // f[3]})"
            )
    return [(d, _out_shape(o, x, f[:3], f[4]))]


def _sizes_shape(t, what: str) -> TensorShape:
    shape = constant_value_as_shape(t)
    if shape.rank is not None and shape.rank != 5:
        raise ShapeError(f"{what} must be 5-D, got {shape.rank}-D")
    return shape if shape.rank is not None else unknown_shape(5)


def _backprop_input_infer(o):
    check_dtype(o, 0, INDEX, "Tshape")
    d = check_same_dtype(o, (1, 2))
    check_dtype(o, 1, FLOATS)
    _check_attrs(o)
    _rank5(o._inputs[1], "filter")
    _rank5(o._inputs[2], "out_backprop")
    return [(d, _sizes_shape(o._inputs[0], "input_sizes"))]


def _backprop_filter_infer(o):
    check_dtype(o, 1, INDEX, "Tshape")
    d = check_same_dtype(o, (0, 2))
    check_dtype(o, 0, FLOATS)
    _check_attrs(o)
    _rank5(o._inputs[0], "input")
    _rank5(o._inputs[2], "out_backprop")
    return [(d, _sizes_shape(o._inputs[1], "filter_sizes"))]


def _pool_infer(o):
    d = check_dtype(o, 0, FLOATS)
    _check_attrs(o, pool=True)
    x = _rank5(o._inputs[0], "input")
    fmt = o._attrs["data_format"]
    return [(d, _out_shape(o, x, _spatial(o._attrs["ksize"], fmt), x[channel_axis(fmt)]))]


def _max_pool_grad_infer(o):
    """MaxPool3DGrad: the input's shape; MaxPool3DGradGrad: the output's."""
    check_same_dtype(o, (0, 1))
    check_dtype(o, 0, FLOATS, "TInput")
    d = check_dtype(o, 2, FLOATS)
    _check_attrs(o, pool=True)
    for i, what in enumerate(("orig_input", "orig_output", "grad")):
        _rank5(o._inputs[i], what)
    shape = o._inputs[0 if o._type == "MaxPool3DGrad" else 1]._shape
    return [(d, shape if shape.rank is not None else unknown_shape(5))]


def _avg_pool_grad_infer(o):
    check_dtype(o, 0, frozenset([dtypes.int32]), "orig_input_shape")
    d = check_dtype(o, 1, FLOATS)
    _check_attrs(o, pool=True)
    _rank5(o._inputs[1], "grad")
    return [(d, _sizes_shape(o._inputs[0], "orig_input_shape"))]


# -----------------------------------------------------------------------------------------
# Conv3D and its backprops
# -----------------------------------------------------------------------------------------

CONV3D_ATTRS = (
    Attr("strides", "list(int)"),
    Attr("padding", "string"),
    Attr("data_format", "string", default="NDHWC"),
    Attr("dilations", "list(int)", default=_ONES),
)
POOL3D_ATTRS = (
    Attr("ksize", "list(int)"),
    Attr("strides", "list(int)"),
    Attr("padding", "string"),
    Attr("data_format", "string", default="NDHWC"),
)


_conv_grad, _conv_input_grad, _conv_filter_grad = conv_grads(
    "Conv3D", "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2"
)


def _conv_window(ndhwc_shape, fshape, strides, padding, data_format, dilations) -> Window3:
    return window3(
        ndhwc_shape,
        fshape[:3],
        strides=strides,
        dilations=dilations,
        padding=padding,
        data_format=data_format,
    )


@op("Conv3D", infer=_conv_infer, inputs=("input", "filter"), grad=_conv_grad, attrs=CONV3D_ATTRS)
def conv3d_kernel(xp, x, f, *, strides, padding, data_format="NDHWC", dilations=_ONES):
    _check_rank(x, "Conv3D", "input")
    _check_rank(f, "Conv3D", "filter")
    xn = _to_last(x, data_format)
    groups = _groups(f.shape, xn.shape[4], "Conv3D")
    g = _conv_window(xn.shape, f.shape, strides, padding, data_format, dilations)
    oc = f.shape[4]
    if g.positions == 0 or oc == 0:
        return _from_last(xp, xp.zeros(g.out_shape(oc), dtype=x.dtype), data_format)
    cols = _patches(xp, _pad(xp, xn, g), g).reshape(g.positions, g.taps, -1)
    out = conv_forward(xp, cols, f, groups, x.dtype)
    return _from_last(xp, out.reshape(g.out_shape(oc)), data_format)


@op(
    "Conv3DBackpropInputV2",
    infer=_backprop_input_infer,
    inputs=("input_sizes", "filter", "out_backprop"),
    grad=_conv_input_grad,
    attrs=CONV3D_ATTRS,
    flags=_SIZES_0,
)
def conv3d_backprop_input_kernel(
    xp, sizes, f, dy, *, strides, padding, data_format="NDHWC", dilations=_ONES
):
    op_type = "Conv3DBackpropInputV2"
    shape = _last_shape(_sizes(sizes, op_type, "input_sizes", 5), data_format)
    _check_rank(f, op_type, "filter")
    _check_rank(dy, op_type, "out_backprop")
    groups = _groups(f.shape, shape[4], op_type)
    g = _conv_window(shape, f.shape, strides, padding, data_format, dilations)
    dyn = _to_last(dy, data_format)
    oc = f.shape[4]
    _check_out_backprop(dyn, g, oc, op_type)
    if dyn.size == 0:
        return _from_last(xp, xp.zeros(shape, dtype=dy.dtype), data_format)
    taps = conv_input_taps(xp, dyn.reshape(-1, oc), f, groups, g.taps, dy.dtype)
    taps = taps.reshape(g.n, *g.out, g.taps, g.c)
    dx = _scatter(xp, taps, g, acc_dtype(dy.dtype)).astype(dy.dtype, copy=False)
    return _from_last(xp, xp.ascontiguousarray(dx), data_format)


@op(
    "Conv3DBackpropFilterV2",
    infer=_backprop_filter_infer,
    inputs=("input", "filter_sizes", "out_backprop"),
    grad=_conv_filter_grad,
    attrs=CONV3D_ATTRS,
    flags=_SIZES_1,
)
def conv3d_backprop_filter_kernel(
    xp, x, sizes, dy, *, strides, padding, data_format="NDHWC", dilations=_ONES
):
    op_type = "Conv3DBackpropFilterV2"
    fshape = tuple(_sizes(sizes, op_type, "filter_sizes", 5))
    _check_rank(x, op_type, "input")
    _check_rank(dy, op_type, "out_backprop")
    xn = _to_last(x, data_format)
    groups = _groups(fshape, xn.shape[4], op_type)
    g = _conv_window(xn.shape, fshape, strides, padding, data_format, dilations)
    dyn = _to_last(dy, data_format)
    _check_out_backprop(dyn, g, fshape[4], op_type)
    if dyn.size == 0 or xn.size == 0:
        return xp.zeros(fshape, dtype=x.dtype)
    cols = _patches(xp, _pad(xp, xn, g), g).reshape(g.positions, g.taps, -1)
    return conv_filter_grad(xp, cols, dyn.reshape(-1, fshape[4]), groups, fshape, x.dtype)


# -----------------------------------------------------------------------------------------
# Pooling
# -----------------------------------------------------------------------------------------


def _pool_attrs(o) -> dict:
    return {k: o._attrs[k] for k in ("ksize", "strides", "padding", "data_format")}


def _pool_window(ndhwc_shape, ksize, strides, padding, data_format) -> Window3:
    return window3(
        ndhwc_shape,
        _spatial(ksize, data_format),
        strides=strides,
        dilations=_ONES,
        padding=padding,
        data_format=data_format,
    )


def _first_max_taps(xp, xn, g: Window3):
    """``[n, od, oh, ow, c]``: the tap (row-major in the window) of each window's first
    maximum, as TF's CPU kernels pick it."""
    return _patches(xp, _pad(xp, xn, g, _lowest(xn.dtype)), g).argmax(axis=4)


def _window_counts(xp, g: Window3):
    """``[1, od, oh, ow, 1]``: how many input (not padding) positions each window covers."""
    counts = np.ones((1,), np.int64)
    for size, k, stride, before, out in zip(g.size, g.k, g.stride, g.before, g.out):
        start = np.arange(out) * stride - before
        per_dim = np.clip(start + k, 0, size) - np.clip(start, 0, size)
        counts = np.multiply.outer(counts, per_dim)
    return xp.asarray(counts.reshape(1, *g.out, 1))


def _max_pool_grad(o, g):
    return [
        create("MaxPool3DGrad", [o.inputs[0], o.outputs[0], g], _pool_attrs(o), None).outputs[0]
    ]


@op("MaxPool3D", infer=_pool_infer, inputs=("input",), grad=_max_pool_grad, attrs=POOL3D_ATTRS)
def max_pool3d_kernel(xp, x, *, ksize, strides, padding, data_format="NDHWC"):
    _check_rank(x, "MaxPool3D", "input")
    xn = _to_last(x, data_format)
    g = _pool_window(xn.shape, ksize, strides, padding, data_format)
    if g.positions * g.c == 0:
        return _from_last(xp, xp.zeros(g.out_shape(g.c), dtype=x.dtype), data_format)
    xpad = _pad(xp, xn, g, _lowest(x.dtype))
    taps = itertools.product(*(range(k) for k in g.k))
    out = xpad[g.view(next(taps))].copy()
    for tap in taps:  # tap by tap over strided views: no reduction over a 7-D view
        xp.maximum(out, xpad[g.view(tap)], out=out)
    return _from_last(xp, out, data_format)


def _grad_through(op_type: str):
    """The gradient of MaxPool3DGrad (MaxPool3DGradGrad) and of MaxPool3DGradGrad
    (MaxPool3DGrad): the other op on the upstream gradient; none for the pooled values."""

    def grad(o, g):
        x, y = o.inputs[:2]
        out = create(op_type, [x, y, g], _pool_attrs(o), None).outputs[0]
        return [array_ops.zeros_like(x), array_ops.zeros_like(y), out]

    return grad


@op(
    "MaxPool3DGrad",
    infer=_max_pool_grad_infer,
    inputs=("orig_input", "orig_output", "grad"),
    grad=_grad_through("MaxPool3DGradGrad"),
    attrs=POOL3D_ATTRS,
)
def max_pool3d_grad_kernel(xp, x, y, dy, *, ksize, strides, padding, data_format="NDHWC"):
    _check_rank(x, "MaxPool3DGrad", "orig_input")
    xn, dyn = _to_last(x, data_format), _to_last(dy, data_format)
    g = _pool_window(xn.shape, ksize, strides, padding, data_format)
    _check_out_backprop(dyn, g, g.c, "MaxPool3DGrad")
    if dyn.size == 0:
        return xp.zeros(x.shape, dtype=dy.dtype)
    first = _first_max_taps(xp, xn, g)[:, :, :, :, None, :]
    hit = first == xp.arange(g.taps).reshape(g.taps, 1)
    taps = xp.where(hit, dyn[:, :, :, :, None, :], dy.dtype.type(0))
    dx = _scatter(xp, taps, g, acc_dtype(dy.dtype)).astype(dy.dtype, copy=False)
    return _from_last(xp, xp.ascontiguousarray(dx), data_format)


@op(
    "MaxPool3DGradGrad",
    infer=_max_pool_grad_infer,
    inputs=("orig_input", "orig_output", "grad"),
    grad=_grad_through("MaxPool3DGrad"),
    attrs=POOL3D_ATTRS,
)
def max_pool3d_grad_grad_kernel(xp, x, y, gx, *, ksize, strides, padding, data_format="NDHWC"):
    """The gradient ``gx`` (shaped like the input) read at each window's maximum."""
    _check_rank(x, "MaxPool3DGradGrad", "orig_input")
    xn, gn = _to_last(x, data_format), _to_last(gx, data_format)
    if gn.shape != xn.shape:
        raise _invalid(
            f"MaxPool3DGradGrad: grad must have the shape of orig_input: {_dims(gx.shape)} vs "
            f"{_dims(x.shape)}"
        )
    g = _pool_window(xn.shape, ksize, strides, padding, data_format)
    if g.positions * g.c == 0:
        return _from_last(xp, xp.zeros(g.out_shape(g.c), dtype=gx.dtype), data_format)
    first = _first_max_taps(xp, xn, g)[:, :, :, :, None, :]
    values = _patches(xp, _pad(xp, gn, g), g)
    out = xp.take_along_axis(values, first, axis=4)[:, :, :, :, 0, :]
    return _from_last(xp, out, data_format)


def _avg_pool_grad(o, g):
    shape = _shape_of(o.inputs[0])
    return [create("AvgPool3DGrad", [shape, g], _pool_attrs(o), None).outputs[0]]


@op("AvgPool3D", infer=_pool_infer, inputs=("input",), grad=_avg_pool_grad, attrs=POOL3D_ATTRS)
def avg_pool3d_kernel(xp, x, *, ksize, strides, padding, data_format="NDHWC"):
    """Each window's mean over the input positions it covers (SAME padding excluded)."""
    _check_rank(x, "AvgPool3D", "input")
    xn = _to_last(x, data_format)
    g = _pool_window(xn.shape, ksize, strides, padding, data_format)
    if g.positions * g.c == 0:
        return _from_last(xp, xp.zeros(g.out_shape(g.c), dtype=x.dtype), data_format)
    acc = acc_dtype(x.dtype)
    xpad = _pad(xp, xn, g)
    taps = itertools.product(*(range(k) for k in g.k))
    sums = xpad[g.view(next(taps))].astype(acc, copy=True)
    for tap in taps:  # summed tap by tap in row-major order
        sums += xpad[g.view(tap)]
    means = (sums / _window_counts(xp, g).astype(acc)).astype(x.dtype, copy=False)
    return _from_last(xp, means, data_format)


@op(
    "AvgPool3DGrad",
    infer=_avg_pool_grad_infer,
    inputs=("orig_input_shape", "grad"),
    grad=lambda o, g: [None, create("AvgPool3D", [g], _pool_attrs(o), None).outputs[0]],
    attrs=POOL3D_ATTRS,
    flags=_SIZES_0,
)
def avg_pool3d_grad_kernel(xp, sizes, dy, *, ksize, strides, padding, data_format="NDHWC"):
    op_type = "AvgPool3DGrad"
    shape = _last_shape(_sizes(sizes, op_type, "orig_input_shape", 5), data_format)
    _check_rank(dy, op_type, "grad")
    dyn = _to_last(dy, data_format)
    g = _pool_window(shape, ksize, strides, padding, data_format)
    _check_out_backprop(dyn, g, g.c, op_type)
    if dyn.size == 0:
        return _from_last(xp, xp.zeros(shape, dtype=dy.dtype), data_format)
    acc = acc_dtype(dy.dtype)
    share = dyn.astype(acc) / _window_counts(xp, g).astype(acc)
    taps = xp.broadcast_to(share[:, :, :, :, None, :], (g.n, *g.out, g.taps, g.c))
    dx = _scatter(xp, taps, g, acc).astype(dy.dtype, copy=False)
    return _from_last(xp, xp.ascontiguousarray(dx), data_format)
