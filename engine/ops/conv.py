"""Convolution, pooling and fused batch-norm ops (TF1's ``Conv2D``, ``MaxPool``,
``FusedBatchNormV3``, ... and their backprops), NHWC and NCHW.

Every window op goes through one geometry (``_Window``: output size and padding per spatial
dimension, as TF computes them for SAME, VALID and EXPLICIT padding) and one im2col: the
padded input read through ``kh * kw`` strided views (no Python loop over pixels), stacked
into patches, and multiplied by the filter in one BLAS call per layer. The backprops scatter
the patch gradients back through the same views. Kernels only use ``xp`` functions, so the
same bodies run on cupy. Kernels work in NHWC; NCHW inputs are transposed on the way in and
out.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from engine import dtypes, errors
from engine.framework.constant_op import constant
from engine.framework.registry import Attr, OpFlags, ShapeError, op
from engine.framework.tensor_util import constant_value_as_shape
from engine.ops import array as array_ops
from engine.ops._common import FLOATS, INDEX, NUMERIC, check_dtype, check_same_dtype, create
from engine.ops.conv_groups import acc_dtype as _acc_dtype
from engine.ops.conv_groups import conv_filter_grad, conv_forward, conv_input_taps, window_matmul
from engine.tensor_shape import TensorShape, unknown_shape

# -----------------------------------------------------------------------------------------
# Geometry
# -----------------------------------------------------------------------------------------

PADDINGS = ("SAME", "VALID", "EXPLICIT")
FORMATS = ("NHWC", "NCHW")


def spatial_axes(data_format: str) -> tuple[int, int]:
    return (1, 2) if data_format == "NHWC" else (2, 3)


def channel_axis(data_format: str) -> int:
    return 3 if data_format == "NHWC" else 1


def window_size(in_size, k, stride, dilation, padding, explicit=(0, 0)):
    """(output size, pad before, pad after) of one spatial dimension, as TF computes them."""
    eff = (k - 1) * dilation + 1
    if padding == "SAME":
        out = -(-in_size // stride)
        total = max((out - 1) * stride + eff - in_size, 0)
        return out, total // 2, total - total // 2
    before, after = explicit if padding == "EXPLICIT" else (0, 0)
    span = in_size + before + after - eff
    if span < 0:
        raise ValueError(
            f"Computed output size would be negative: {span // stride + 1} [input_size: "
            f"{in_size}, effective_filter_size: {eff}, stride: {stride}]"
        )
    return span // stride + 1, before, after


# The sizes inputs of the backprop ops are read on the host (OpFlags.host_inputs).
_SIZES_0, _SIZES_1 = OpFlags(host_inputs=(0,)), OpFlags(host_inputs=(1,))


@dataclass(frozen=True)
class _Window:
    """The geometry of one window op on an NHWC input."""

    n: int
    h: int
    w: int
    c: int
    kh: int
    kw: int
    sh: int
    sw: int
    dh: int
    dw: int
    oh: int
    ow: int
    pt: int
    pb: int
    pl: int
    pr: int

    @property
    def padded(self) -> tuple[int, int, int, int]:
        return (self.n, self.h + self.pt + self.pb, self.w + self.pl + self.pr, self.c)

    def view(self, i: int, j: int):
        """The index of the strided view of tap (i, j) into the padded input."""
        rows = slice(i * self.dh, i * self.dh + (self.oh - 1) * self.sh + 1, self.sh)
        cols = slice(j * self.dw, j * self.dw + (self.ow - 1) * self.sw + 1, self.sw)
        return (slice(None), rows, cols, slice(None))


def _hw(values, data_format: str) -> tuple[int, int]:
    a, b = spatial_axes(data_format)
    return int(values[a]), int(values[b])


def _window(in_shape, kh, kw, *, strides, dilations, padding, explicit_paddings, data_format):
    """The ``_Window`` of an NHWC input shape; InvalidArgumentError on impossible geometry.
    Remembered per geometry: a served model asks for the same few at every call."""
    return _window_of(
        tuple(int(d) for d in in_shape),
        int(kh),
        int(kw),
        tuple(strides),
        tuple(dilations),
        padding,
        tuple(explicit_paddings),
        data_format,
    )


@functools.lru_cache(maxsize=1024)
def _window_of(in_shape, kh, kw, strides, dilations, padding, explicit_paddings, data_format):
    n, h, w, c = in_shape
    sh, sw = _hw(strides, data_format)
    dh, dw = _hw(dilations, data_format)
    ex = [0, 0, 0, 0]
    if padding == "EXPLICIT":
        a, b = spatial_axes(data_format)
        ex = [explicit_paddings[2 * a], explicit_paddings[2 * a + 1]]
        ex += [explicit_paddings[2 * b], explicit_paddings[2 * b + 1]]
    try:
        oh, pt, pb = window_size(h, kh, sh, dh, padding, ex[:2])
        ow, pl, pr = window_size(w, kw, sw, dw, padding, ex[2:])
    except ValueError as e:
        raise errors.InvalidArgumentError(None, None, str(e)) from None
    return _Window(n, h, w, c, kh, kw, sh, sw, dh, dw, oh, ow, pt, pb, pl, pr)


def _to_nhwc(x, data_format: str):
    return x if data_format == "NHWC" else x.transpose(0, 2, 3, 1)


def _from_nhwc(xp, y, data_format: str):
    return y if data_format == "NHWC" else xp.ascontiguousarray(y.transpose(0, 3, 1, 2))


def _nhwc_shape(shape, data_format: str) -> tuple[int, ...]:
    s = tuple(int(d) for d in shape)
    return s if data_format == "NHWC" else (s[0], s[2], s[3], s[1])


def _pad(xp, x, g: _Window, fill=0):
    if not (g.pt or g.pb or g.pl or g.pr):
        return x
    widths = ((0, 0), (g.pt, g.pb), (g.pl, g.pr), (0, 0))
    return xp.pad(x, widths, mode="constant", constant_values=fill)


def _patch_view(xp, xpad, g: _Window):
    """``[n, oh, ow, kh, kw, c]``: every window of the padded input, as a strided view of it
    (no copy; every index stays inside ``xpad`` by the window's geometry)."""
    s0, s1, s2, s3 = xpad.strides
    return xp.lib.stride_tricks.as_strided(
        xpad,
        (g.n, g.oh, g.ow, g.kh, g.kw, g.c),
        (s0, g.sh * s1, g.sw * s2, g.dh * s1, g.dw * s2, s3),
    )


def _patches(xp, xpad, g: _Window):
    """``[n, oh, ow, kh * kw, c]``: every window of the padded input, taps in row-major order,
    in a new array (one strided copy: a single kernel on a GPU)."""
    return _patch_view(xp, xpad, g).copy().reshape(g.n, g.oh, g.ow, g.kh * g.kw, g.c)


def _scatter_taps(xp, taps, g: _Window, dtype):
    """The adjoint of ``_patches`` followed by cropping the padding: ``taps`` is
    ``[n, oh, ow, kh * kw, c]``; each tap's values add back onto the input positions it read."""
    out = xp.zeros(g.padded, dtype=dtype)
    for i in range(g.kh):
        for j in range(g.kw):
            out[g.view(i, j)] += taps[:, :, :, i * g.kw + j, :]
    return out[:, g.pt : g.pt + g.h, g.pl : g.pl + g.w, :]


def _dims(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def _invalid(msg: str):
    return errors.InvalidArgumentError(None, None, msg)


# -----------------------------------------------------------------------------------------
# Static shape inference
# -----------------------------------------------------------------------------------------


def _check_attrs(o, *, pool: bool = False):
    fmt = o._attrs["data_format"]
    if fmt not in FORMATS:
        raise ShapeError(f"Invalid data format: {fmt} (expected NHWC or NCHW)")
    padding = o._attrs["padding"]
    if padding not in PADDINGS or (pool and padding == "EXPLICIT"):
        raise ShapeError(f"Invalid padding: {padding}")
    strides = o._attrs["strides"]
    if len(strides) != 4:
        raise ShapeError(
            f"Sliding window strides field must specify 4 dimensions, got {len(strides)}"
        )
    if any(int(s) < 1 for s in strides):
        raise ShapeError(f"Sliding window strides must be positive: {list(strides)}")
    n, c = 0, channel_axis(fmt)
    if int(strides[n]) != 1 or int(strides[c]) != 1:
        raise ShapeError(
            "Current implementation does not yet support strides in the batch and depth dimensions."
        )
    if pool:
        ksize = o._attrs["ksize"]
        if len(ksize) != 4:
            raise ShapeError(f"Sliding window ksize field must specify 4 dimensions, got {ksize}")
        if any(int(k) < 1 for k in ksize):
            raise ShapeError(f"Sliding window ksize must be positive: {list(ksize)}")
        if int(ksize[n]) != 1 or int(ksize[c]) != 1:
            raise ShapeError("Pooling is not yet supported on the batch nor depth dimensions.")
        return
    dil = o._attrs.get("dilations", (1, 1, 1, 1))
    if len(dil) != 4 or any(int(d) < 1 for d in dil):
        raise ShapeError(f"Dilations must be 4 positive values, got {list(dil)}")
    if int(dil[n]) != 1 or int(dil[c]) != 1:
        raise ShapeError(
            "Current implementation does not yet support dilations in the batch and depth "
            "dimensions."
        )
    ex = o._attrs.get("explicit_paddings", ())
    if padding == "EXPLICIT":
        if len(ex) != 8 or any(int(p) < 0 for p in ex):
            raise ShapeError(
                f"explicit_paddings must be 8 non-negative values for EXPLICIT padding, "
                f"got {list(ex)}"
            )
        if any(int(p) for p in (ex[2 * n], ex[2 * n + 1], ex[2 * c], ex[2 * c + 1])):
            raise ShapeError("Nonzero explicit padding in the batch or depth dimensions")
    elif ex:
        raise ShapeError("explicit_paddings attribute must be empty if the padding is not EXPLICIT")


def _rank4(t, what: str):
    s = t._shape
    if s.rank is not None and s.rank != 4:
        raise ShapeError(f"Shape must be rank 4 but is rank {s.rank} for {what}")
    return s.as_list() if s.rank is not None else [None] * 4


def _out_dim(in_size, k, stride, dilation, padding, explicit):
    if in_size is None or k is None:
        return None
    return window_size(in_size, k, stride, dilation, padding, explicit)[0]


def _out_shape(o, in_dims, kh, kw, out_channels):
    """The output shape (data_format order) of a window op on input dims (data_format order)."""
    fmt = o._attrs["data_format"]
    a, b = spatial_axes(fmt)
    strides = o._attrs["strides"]
    dil = o._attrs.get("dilations", (1, 1, 1, 1))
    padding = o._attrs["padding"]
    ex = o._attrs.get("explicit_paddings", ()) or (0,) * 8
    oh = _out_dim(in_dims[a], kh, int(strides[a]), int(dil[a]), padding, ex[2 * a : 2 * a + 2])
    ow = _out_dim(in_dims[b], kw, int(strides[b]), int(dil[b]), padding, ex[2 * b : 2 * b + 2])
    out = [in_dims[0], None, None, None]
    out[a], out[b], out[channel_axis(fmt)] = oh, ow, out_channels
    return TensorShape(out)


def _conv_infer(depthwise: bool):
    def infer(o):
        d = check_same_dtype(o)
        check_dtype(o, 0, FLOATS)
        _check_attrs(o)
        x = _rank4(o._inputs[0], "input")
        f = _rank4(o._inputs[1], "filter")
        cin = x[channel_axis(o._attrs["data_format"])]
        if depthwise and cin is not None and f[2] is not None and cin != f[2]:
            raise ShapeError(f"Dimensions must be equal, but are {cin} and {f[2]}")
        if not depthwise and cin is not None and f[2] is not None:
            if f[2] == 0 or cin % f[2]:
                raise ShapeError(
                    f"Depth of input ({cin}) is not a multiple of input depth of filter ({f[2]})"
                )
            if f[3] is not None and f[3] % (cin // f[2]):
                raise ShapeError(
                    f"Depth of output ({f[3]}) is not a multiple of the number of groups "
                    f"({cin // f[2]})"
                )
        if depthwise:
            c = cin if cin is not None else f[2]
            oc = c * f[3] if c is not None and f[3] is not None else None
        else:
            oc = f[3]
        try:
            return [(d, _out_shape(o, x, f[0], f[1], oc))]
        except ValueError as e:
            raise ShapeError(str(e)) from None

    return infer


def _backprop_input_infer(o):
    sizes, f, dy = o._inputs
    check_dtype(o, 0, INDEX, "Tshape")
    d = check_same_dtype(o, (1, 2))
    check_dtype(o, 1, FLOATS)
    _check_attrs(o)
    _rank4(f, "filter")
    _rank4(dy, "out_backprop")
    shape = constant_value_as_shape(sizes)
    if shape.rank is not None and shape.rank != 4:
        raise ShapeError(f"input_sizes must be 4-D, got {shape.rank}-D")
    return [(d, shape if shape.rank is not None else unknown_shape(4))]


def _backprop_filter_infer(o):
    x, sizes, dy = o._inputs
    check_dtype(o, 1, INDEX, "Tshape")
    d = check_same_dtype(o, (0, 2))
    check_dtype(o, 0, FLOATS)
    _check_attrs(o)
    _rank4(x, "input")
    _rank4(dy, "out_backprop")
    shape = constant_value_as_shape(sizes)
    if shape.rank is not None and shape.rank != 4:
        raise ShapeError(f"filter_sizes must be 4-D, got {shape.rank}-D")
    return [(d, shape if shape.rank is not None else unknown_shape(4))]


def _pool_infer(allowed):
    def infer(o):
        d = check_dtype(o, 0, allowed)
        _check_attrs(o, pool=True)
        x = _rank4(o._inputs[0], "input")
        kh, kw = _hw(o._attrs["ksize"], o._attrs["data_format"])
        c = x[channel_axis(o._attrs["data_format"])]
        try:
            return [(d, _out_shape(o, x, kh, kw, c))]
        except ValueError as e:
            raise ShapeError(str(e)) from None

    return infer


def _max_pool_grad_infer(o):
    d = check_same_dtype(o)
    check_dtype(o, 0, NUMERIC)
    _check_attrs(o, pool=True)
    for i, what in enumerate(("orig_input", "orig_output", "grad")):
        _rank4(o._inputs[i], what)
    src = 0 if o._type == "MaxPoolGrad" else 1
    return [(d, o._inputs[src]._shape if o._inputs[src]._shape.rank else unknown_shape(4))]


def _avg_pool_grad_infer(o):
    check_dtype(o, 0, frozenset([dtypes.int32]), "orig_input_shape")
    d = check_dtype(o, 1, FLOATS)
    _check_attrs(o, pool=True)
    _rank4(o._inputs[1], "grad")
    shape = constant_value_as_shape(o._inputs[0])
    return [(d, shape if shape.rank is not None else unknown_shape(4))]


# -----------------------------------------------------------------------------------------
# Conv2D and its backprops
# -----------------------------------------------------------------------------------------

CONV_INPUTS = ("input", "filter")

_PADDING_ATTRS = (
    Attr("strides", "list(int)"),
    Attr("padding", "string"),
    Attr("explicit_paddings", "list(int)", default=()),
    Attr("data_format", "string", default="NHWC"),
    Attr("dilations", "list(int)", default=(1, 1, 1, 1)),
)
CONV_ATTRS = _PADDING_ATTRS + (Attr("use_cudnn_on_gpu", "bool", default=True),)
DEPTHWISE_ATTRS = _PADDING_ATTRS
POOL_ATTRS = (
    Attr("ksize", "list(int)"),
    Attr("strides", "list(int)"),
    Attr("padding", "string"),
    Attr("data_format", "string", default="NHWC"),
)
BN_GRAD_ATTRS = (
    Attr("epsilon", "float", default=0.0001),
    Attr("data_format", "string", default="NHWC"),
    Attr("is_training", "bool", default=True),
)
BN_ATTRS = BN_GRAD_ATTRS + (Attr("exponential_avg_factor", "float", default=1.0),)


def _conv_attrs(o) -> dict:
    keys = ("strides", "padding", "explicit_paddings", "data_format", "dilations")
    out = {k: o._attrs[k] for k in keys if k in o._attrs}
    if "use_cudnn_on_gpu" in o._attrs:
        out["use_cudnn_on_gpu"] = o._attrs["use_cudnn_on_gpu"]
    return out


def _shape_of(t):
    """``t``'s shape as an int32 tensor: a constant when static."""
    if t.shape.is_fully_defined():
        return constant(t.shape.as_list(), dtype=dtypes.int32)
    return array_ops.shape(t)


def conv_grads(forward: str, input_op: str, filter_op: str):
    """TF's gradients of a convolution op (``forward``) and of its two backprops: each is
    the other two ops on the upstream gradient, with the same window attrs."""

    def forward_grad(o, g):
        x, f = o.inputs
        attrs = _conv_attrs(o)
        return [
            create(input_op, [_shape_of(x), f, g], attrs, None).outputs[0],
            create(filter_op, [x, _shape_of(f), g], attrs, None).outputs[0],
        ]

    def input_grad(o, g):
        _, f, dy = o.inputs
        attrs = _conv_attrs(o)
        return [
            None,
            create(filter_op, [g, _shape_of(f), dy], attrs, None).outputs[0],
            create(forward, [g, f], attrs, None).outputs[0],
        ]

    def filter_grad(o, g):
        x, _, dy = o.inputs
        attrs = _conv_attrs(o)
        return [
            create(input_op, [_shape_of(x), g, dy], attrs, None).outputs[0],
            None,
            create(forward, [x, g], attrs, None).outputs[0],
        ]

    return forward_grad, input_grad, filter_grad


_conv_grad, _conv_input_grad, _conv_filter_grad = conv_grads(
    "Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"
)


def _check_filter(f, c, op_type: str, depthwise=False):
    if f.ndim != 4:
        raise _invalid(f"{op_type}: filter must be 4-dimensional: {_dims(f.shape)}")
    _check_groups(tuple(f.shape), c, op_type, depthwise)


def _check_groups(fshape, c, op_type: str, depthwise=False) -> int:
    """The number of groups: input depth / filter depth (1 for depthwise)."""
    if depthwise:
        if fshape[2] != c:
            raise _invalid(
                f"{op_type}: input and filter must have the same depth: {c} vs {fshape[2]}"
            )
        return 1
    if fshape[2] == 0 or c % fshape[2]:
        raise _invalid(
            f"{op_type}: input depth must be evenly divisible by filter depth: {c} vs {fshape[2]}"
        )
    groups = c // fshape[2]
    if fshape[3] % groups:
        raise _invalid(
            f"{op_type}: output depth must be evenly divisible by number of groups: "
            f"{fshape[3]} vs {groups}"
        )
    return groups


def _check_input(x, op_type: str):
    if x.ndim != 4:
        raise _invalid(f"{op_type}: input must be 4-dimensional: {_dims(x.shape)}")


def _geometry(nhwc_shape, f_shape, attrs):
    return _window(
        nhwc_shape,
        int(f_shape[0]),
        int(f_shape[1]),
        strides=attrs["strides"],
        dilations=attrs.get("dilations", (1, 1, 1, 1)),
        padding=attrs["padding"],
        explicit_paddings=attrs.get("explicit_paddings", ()),
        data_format=attrs["data_format"],
    )


def _check_out_backprop(dy, g: _Window, oc: int, op_type: str):
    want = (g.n, g.oh, g.ow, oc)
    if tuple(dy.shape) != want:
        raise _invalid(
            f"{op_type}: Size of out_backprop doesn't match computed: actual = "
            f"{_dims(dy.shape)}, computed = {_dims(want)}"
        )


def _sizes(v, op_type: str, what: str, rank: int = 4):
    v = [int(d) for d in np.asarray(v.get() if hasattr(v, "get") else v).reshape(-1)]
    if len(v) != rank or any(d < 0 for d in v):
        raise _invalid(f"{op_type}: {what} must be {rank} non-negative sizes, got {v}")
    return v


def _attrs(strides, padding, explicit_paddings, data_format, dilations) -> dict:
    """A conv kernel's window attrs as one dict, as ``_geometry`` reads them."""
    return dict(
        strides=strides,
        padding=padding,
        explicit_paddings=explicit_paddings,
        data_format=data_format,
        dilations=dilations,
    )


@op("Conv2D", infer=_conv_infer(False), inputs=CONV_INPUTS, grad=_conv_grad, attrs=CONV_ATTRS)
def conv2d_kernel(
    xp,
    x,
    f,
    *,
    strides,
    padding,
    explicit_paddings=(),
    data_format="NHWC",
    dilations=(1, 1, 1, 1),
    use_cudnn_on_gpu=True,
):
    attrs = _attrs(strides, padding, explicit_paddings, data_format, dilations)
    fmt = attrs["data_format"]
    _check_input(x, "Conv2D")
    xn = _to_nhwc(x, fmt)
    _check_filter(f, xn.shape[3], "Conv2D")
    g = _geometry(xn.shape, f.shape, attrs)
    oc = f.shape[3]
    if g.n * g.oh * g.ow == 0 or oc == 0:
        return _from_nhwc(xp, xp.zeros((g.n, g.oh, g.ow, oc), dtype=x.dtype), fmt)
    groups = xn.shape[3] // f.shape[2]
    if groups == 1 and (g.kh, g.kw, g.sh, g.sw, g.pt, g.pb, g.pl, g.pr) == (1, 1, 1, 1, 0, 0, 0, 0):
        return _pointwise(xp, x, f.reshape(g.c, oc), fmt)
    if groups > 1 and f.shape[2] == 1:
        # One input channel per group: a depthwise convolution with oc / c filters each.
        return _depthwise_taps(xp, x, f.reshape(g.kh, g.kw, groups, -1), g, fmt)
    cols = _patches(xp, _pad(xp, xn, g), g).reshape(g.n * g.oh * g.ow, g.kh * g.kw, -1)
    out = conv_forward(xp, cols, f, groups, x.dtype)
    return _from_nhwc(xp, out.reshape(g.n, g.oh, g.ow, oc), fmt)


@op(
    "Conv2DBackpropInput",
    infer=_backprop_input_infer,
    inputs=("input_sizes", "filter", "out_backprop"),
    grad=_conv_input_grad,
    attrs=CONV_ATTRS,
    flags=_SIZES_0,
)
def conv2d_backprop_input_kernel(
    xp,
    sizes,
    f,
    dy,
    *,
    strides,
    padding,
    explicit_paddings=(),
    data_format="NHWC",
    dilations=(1, 1, 1, 1),
    use_cudnn_on_gpu=True,
):
    attrs = _attrs(strides, padding, explicit_paddings, data_format, dilations)
    fmt = attrs["data_format"]
    op_type = "Conv2DBackpropInput"
    shape = _nhwc_shape(_sizes(sizes, op_type, "input_sizes"), fmt)
    _check_filter(f, shape[3], op_type)
    _check_input(dy, op_type)
    g = _geometry(shape, f.shape, attrs)
    dyn = _to_nhwc(dy, fmt)
    oc = f.shape[3]
    _check_out_backprop(dyn, g, oc, op_type)
    if dyn.size == 0:
        return _from_nhwc(xp, xp.zeros(shape, dtype=dy.dtype), fmt)
    groups = shape[3] // f.shape[2]
    taps = conv_input_taps(xp, dyn.reshape(-1, oc), f, groups, g.kh * g.kw, dy.dtype)
    taps = taps.reshape(g.n, g.oh, g.ow, g.kh * g.kw, g.c)
    dx = _scatter_taps(xp, taps, g, _acc_dtype(dy.dtype)).astype(dy.dtype, copy=False)
    return _from_nhwc(xp, xp.ascontiguousarray(dx), fmt)


@op(
    "Conv2DBackpropFilter",
    infer=_backprop_filter_infer,
    inputs=("input", "filter_sizes", "out_backprop"),
    grad=_conv_filter_grad,
    attrs=CONV_ATTRS,
    flags=_SIZES_1,
)
def conv2d_backprop_filter_kernel(
    xp,
    x,
    sizes,
    dy,
    *,
    strides,
    padding,
    explicit_paddings=(),
    data_format="NHWC",
    dilations=(1, 1, 1, 1),
    use_cudnn_on_gpu=True,
):
    attrs = _attrs(strides, padding, explicit_paddings, data_format, dilations)
    fmt = attrs["data_format"]
    op_type = "Conv2DBackpropFilter"
    fshape = tuple(_sizes(sizes, op_type, "filter_sizes"))
    _check_input(x, op_type)
    xn = _to_nhwc(x, fmt)
    groups = _check_groups(fshape, xn.shape[3], op_type)
    g = _geometry(xn.shape, fshape, attrs)
    dyn = _to_nhwc(dy, fmt)
    _check_out_backprop(dyn, g, fshape[3], op_type)
    if dyn.size == 0 or xn.size == 0:
        return xp.zeros(fshape, dtype=x.dtype)
    cols = _patches(xp, _pad(xp, xn, g), g).reshape(g.n * g.oh * g.ow, g.kh * g.kw, -1)
    return conv_filter_grad(xp, cols, dyn.reshape(-1, fshape[3]), groups, fshape, x.dtype)


# -----------------------------------------------------------------------------------------
# Depthwise convolution: one filter bank per input channel, a batched matmul over channels
# -----------------------------------------------------------------------------------------


_depthwise_grad, _depthwise_input_grad, _depthwise_filter_grad = conv_grads(
    "DepthwiseConv2dNative",
    "DepthwiseConv2dNativeBackpropInput",
    "DepthwiseConv2dNativeBackpropFilter",
)


@op(
    "DepthwiseConv2dNative",
    infer=_conv_infer(True),
    inputs=CONV_INPUTS,
    grad=_depthwise_grad,
    attrs=DEPTHWISE_ATTRS,
)
def depthwise_conv2d_kernel(
    xp, x, f, *, strides, padding, explicit_paddings=(), data_format="NHWC", dilations=(1, 1, 1, 1)
):
    attrs = _attrs(strides, padding, explicit_paddings, data_format, dilations)
    fmt = attrs["data_format"]
    op_type = "DepthwiseConv2dNative"
    _check_input(x, op_type)
    xn = _to_nhwc(x, fmt)
    _check_filter(f, xn.shape[3], op_type, depthwise=True)
    g = _geometry(xn.shape, f.shape, attrs)
    m = f.shape[3]
    if g.n * g.oh * g.ow * g.c * m == 0:
        return _from_nhwc(xp, xp.zeros((g.n, g.oh, g.ow, g.c * m), dtype=x.dtype), fmt)
    return _depthwise_taps(xp, x, f, g, fmt)


def _pointwise(xp, x, f2, fmt: str):
    """A 1x1, stride-1, unpadded convolution: one product with the ``[c, oc]`` filter, in
    the input's own layout (no window copy; NCHW stays NCHW, as [oc, c] @ [n, c, h*w])."""
    if fmt == "NHWC":
        n, h, w, c = x.shape
        out = window_matmul(xp, x.reshape(n * h * w, c), f2, x.dtype)
        return out.reshape(n, h, w, f2.shape[1])
    n, c, h, w = x.shape
    out = window_matmul(xp, f2.T, x.reshape(n, c, h * w), x.dtype)
    return out.reshape(n, f2.shape[1], h, w)


def _depthwise_taps(xp, x, f, g: _Window, fmt: str):
    """Each channel's window product with its ``m`` filters (``f`` is ``[kh, kw, c, m]``),
    summed tap by tap over strided views of the padded input, in the input's own layout
    (NHWC or NCHW; output channel ``c * m + j``). No window is copied: one pass per tap
    instead of materialising ``kh * kw`` copies of the input and a batched matvec."""
    m = f.shape[3]
    acc = _acc_dtype(x.dtype)
    banks = f.astype(acc, copy=False)
    if fmt == "NCHW" and g.ow < 32:
        # Short rows: NCHW's per-row strides cost more than reading channels-last, so run
        # on the channels-last view (the padding copies it once) and return a view back.
        out = _depthwise_taps(xp, x.transpose(0, 2, 3, 1), f, g, "NHWC")
        return out.transpose(0, 3, 1, 2)
    if fmt == "NHWC":
        xpad = _pad(xp, x, g)
        out = xp.zeros((g.n, g.oh, g.ow, g.c, m) if m > 1 else (g.n, g.oh, g.ow, g.c), dtype=acc)
        for i in range(g.kh):
            for j in range(g.kw):
                window = xpad[g.view(i, j)].astype(acc, copy=False)
                if m > 1:
                    out += window[..., None] * banks[i, j]
                else:  # no trailing axis of 1: numpy broadcasts that slowly
                    out += window * banks[i, j, :, 0]
        return out.reshape(g.n, g.oh, g.ow, g.c * m).astype(x.dtype, copy=False)
    widths = ((0, 0), (0, 0), (g.pt, g.pb), (g.pl, g.pr))
    xpad = xp.pad(x, widths) if any(widths[2] + widths[3]) else x
    out = xp.zeros((g.n, g.c, m, g.oh, g.ow), dtype=acc)
    for i in range(g.kh):
        for j in range(g.kw):
            nhwc = g.view(i, j)
            window = xpad[:, :, nhwc[1], nhwc[2]].astype(acc, copy=False)
            out += window[:, :, None] * banks[i, j][None, :, :, None, None]
    return out.reshape(g.n, g.c * m, g.oh, g.ow).astype(x.dtype, copy=False)


@op(
    "DepthwiseConv2dNativeBackpropInput",
    infer=_backprop_input_infer,
    inputs=("input_sizes", "filter", "out_backprop"),
    grad=_depthwise_input_grad,
    attrs=DEPTHWISE_ATTRS,
    flags=_SIZES_0,
)
def depthwise_backprop_input_kernel(
    xp,
    sizes,
    f,
    dy,
    *,
    strides,
    padding,
    explicit_paddings=(),
    data_format="NHWC",
    dilations=(1, 1, 1, 1),
):
    attrs = _attrs(strides, padding, explicit_paddings, data_format, dilations)
    fmt = attrs["data_format"]
    op_type = "DepthwiseConv2dNativeBackpropInput"
    shape = _nhwc_shape(_sizes(sizes, op_type, "input_sizes"), fmt)
    _check_filter(f, shape[3], op_type, depthwise=True)
    _check_input(dy, op_type)
    g = _geometry(shape, f.shape, attrs)
    m, k = f.shape[3], g.kh * g.kw
    dyn = _to_nhwc(dy, fmt)
    _check_out_backprop(dyn, g, g.c * m, op_type)
    if dyn.size == 0:
        return _from_nhwc(xp, xp.zeros(shape, dtype=dy.dtype), fmt)
    p = g.n * g.oh * g.ow
    banks = f.reshape(k, g.c, m).transpose(1, 2, 0)  # [c, m, k]
    taps = window_matmul(
        xp, dyn.reshape(p, g.c, m).transpose(1, 0, 2), banks, dy.dtype
    )  # [c, p, k]
    taps = taps.transpose(1, 2, 0).reshape(g.n, g.oh, g.ow, k, g.c)
    dx = _scatter_taps(xp, taps, g, _acc_dtype(dy.dtype)).astype(dy.dtype, copy=False)
    return _from_nhwc(xp, xp.ascontiguousarray(dx), fmt)


@op(
    "DepthwiseConv2dNativeBackpropFilter",
    infer=_backprop_filter_infer,
    inputs=("input", "filter_sizes", "out_backprop"),
    grad=_depthwise_filter_grad,
    attrs=DEPTHWISE_ATTRS,
    flags=_SIZES_1,
)
def depthwise_backprop_filter_kernel(
    xp,
    x,
    sizes,
    dy,
    *,
    strides,
    padding,
    explicit_paddings=(),
    data_format="NHWC",
    dilations=(1, 1, 1, 1),
):
    attrs = _attrs(strides, padding, explicit_paddings, data_format, dilations)
    fmt = attrs["data_format"]
    op_type = "DepthwiseConv2dNativeBackpropFilter"
    fshape = tuple(_sizes(sizes, op_type, "filter_sizes"))
    _check_input(x, op_type)
    xn = _to_nhwc(x, fmt)
    if fshape[2] != xn.shape[3]:
        raise _invalid(
            f"{op_type}: input and filter must have the same depth: {xn.shape[3]} vs {fshape[2]}"
        )
    g = _geometry(xn.shape, fshape, attrs)
    m, k = fshape[3], g.kh * g.kw
    dyn = _to_nhwc(dy, fmt)
    _check_out_backprop(dyn, g, g.c * m, op_type)
    if dyn.size == 0 or xn.size == 0:
        return xp.zeros(fshape, dtype=x.dtype)
    p = g.n * g.oh * g.ow
    cols = _patches(xp, _pad(xp, xn, g), g).reshape(p, k, g.c).transpose(2, 1, 0)  # [c, k, p]
    df = window_matmul(xp, cols, dyn.reshape(p, g.c, m).transpose(1, 0, 2), x.dtype)  # [c, k, m]
    return xp.ascontiguousarray(df.transpose(1, 0, 2)).reshape(fshape)
