"""TFLite builtin operators -> engine ops: the table, and its elementwise, activation,
convolution, pooling and normalization rows (array and shape ops: ``mapping_array.py``).

A row is ``converter(ctx, op) -> [outputs]``, registered with ``@converts("NAME", ...)``.
Converters see real values: the importer dequantizes quantized inputs and constants before,
and re-quantizes quantized outputs after (``importer.py``), so one row serves float, dynamic-
range and full-integer models. TFLite's layouts differ from TF's in two places, both handled
here: convolution filters are ``[out, h, w, in]`` (depthwise ``[1, h, w, in * multiplier]``,
transposed ``[out, h, w, in]``) and fully-connected weights are ``[out, in]``.
"""

from __future__ import annotations

from collections.abc import Callable

from engine import dtypes
from engine.formats.tflite.errors import UnsupportedModelError
from engine.framework.constant_op import constant
from engine.ops import (
    activations,
    array,
    array_transform,
    clip_ops,
    image_ops,
    lrn,
    math,
    nn,
    nn_conv,
    partition_ops,
    reduction,
)
from engine.ops.math_more import truncatediv
from engine.ops.matmul import matmul

__all__ = ["TABLE", "converts", "fused_activation"]

TABLE: dict[str, Callable] = {}
_PADDING = {0: "SAME", 1: "VALID"}


def converts(*names: str):
    """Registers a converter for the builtin operators ``names``."""

    def register(fn):
        for name in names:
            if name in TABLE:
                raise ValueError(f"TFLite operator {name!r} is mapped twice")
            TABLE[name] = fn
        return fn

    return register


def fused_activation(x, op):
    """Applies the op's ``fused_activation_function`` (NONE, RELU, RELU_N1_TO_1, RELU6,
    TANH; SIGN_BIT is refused)."""
    code = op.options.get("FusedActivationFunction", 0)
    if code == 0:
        return x
    if code == 1:
        return nn.relu(x)
    if code == 2:
        return clip_ops.clip_by_value(x, -1.0, 1.0)
    if code == 3:
        return nn.relu6(x)
    if code == 4:
        return math.tanh(x)
    raise UnsupportedModelError(f"{op.op}: fused activation function {code} is not supported")


def _padding(op) -> str:
    code = op.options.get("Padding", 0)
    if code not in _PADDING:
        raise UnsupportedModelError(f"{op.op}: padding {code}")
    return _PADDING[code]


# -- elementwise --------------------------------------------------------------------------
_BINARY = {
    "ADD": math.add,
    "SUB": math.subtract,
    "MUL": math.multiply,
    "MAXIMUM": math.maximum,
    "MINIMUM": math.minimum,
    "POW": math.pow,
    "SQUARED_DIFFERENCE": math.squared_difference,
    "FLOOR_DIV": math.floordiv,
    "FLOOR_MOD": math.floormod,
    "LESS": math.less,
    "LESS_EQUAL": math.less_equal,
    "GREATER": math.greater,
    "GREATER_EQUAL": math.greater_equal,
    "EQUAL": math.equal,
    "NOT_EQUAL": math.not_equal,
    "LOGICAL_AND": math.logical_and,
    "LOGICAL_OR": math.logical_or,
}


@converts(*_BINARY)
def _binary(ctx, op):
    return [fused_activation(_BINARY[op.op](ctx.input(op, 0), ctx.input(op, 1)), op)]


@converts("DIV")
def _div(ctx, op):
    a, b = ctx.input(op, 0), ctx.input(op, 1)
    if a.dtype.base_dtype.is_integer:  # TFLite's integer DIV truncates toward zero
        return [fused_activation(truncatediv(a, b), op)]
    return [fused_activation(math.realdiv(a, b), op)]


_UNARY = {
    "EXP": math.exp,
    "LOG": math.log,
    "SQRT": math.sqrt,
    "RSQRT": math.rsqrt,
    "SQUARE": math.square,
    "NEG": math.negative,
    "ABS": math.abs,
    "FLOOR": math.floor,
    "CEIL": math.ceil,
    "ROUND": math.round,  # half to even, as TFLite's ROUND
    "SIN": math.sin,
    "COS": math.cos,
    "SIGN": math.sign,
    "LOGICAL_NOT": math.logical_not,
    "LOGISTIC": math.sigmoid,
    "TANH": math.tanh,
    "RELU": nn.relu,
    "RELU6": nn.relu6,
    "ZEROS_LIKE": array.zeros_like,
}


@converts(*_UNARY)
def _unary(ctx, op):
    return [_UNARY[op.op](ctx.input(op, 0))]


@converts("RELU_N1_TO_1")
def _relu_n1_to_1(ctx, op):
    return [clip_ops.clip_by_value(ctx.input(op, 0), -1.0, 1.0)]


@converts("RELU_0_TO_1")
def _relu_0_to_1(ctx, op):
    return [clip_ops.clip_by_value(ctx.input(op, 0), 0.0, 1.0)]


@converts("LEAKY_RELU")
def _leaky_relu(ctx, op):
    return [nn.leaky_relu(ctx.input(op, 0), alpha=float(op.options.get("Alpha", 0.0)))]


@converts("PRELU")
def _prelu(ctx, op):
    x, alpha = ctx.input(op, 0), ctx.input(op, 1)
    return [math.add(nn.relu(x), math.multiply(alpha, math.minimum(x, 0.0)))]


@converts("HARD_SWISH")
def _hard_swish(ctx, op):
    x = ctx.input(op, 0)
    return [math.multiply(x, math.multiply(nn.relu6(math.add(x, 3.0)), 1.0 / 6.0))]


@converts("GELU")
def _gelu(ctx, op):
    approximate = bool(op.options.get("Approximate", False))
    return [activations.gelu(ctx.input(op, 0), approximate=approximate)]


@converts("SOFTMAX")
def _softmax(ctx, op):
    x = ctx.input(op, 0)
    beta = float(op.options.get("Beta", 1.0))
    if beta != 1.0:
        x = math.multiply(x, beta)
    return [nn.softmax(x, axis=-1)]


@converts("LOG_SOFTMAX")
def _log_softmax(ctx, op):
    return [nn.log_softmax(ctx.input(op, 0), axis=-1)]


@converts("ADD_N")
def _add_n(ctx, op):
    return [math.add_n([ctx.input(op, i) for i in range(len(op.inputs))])]


@converts("SELECT", "SELECT_V2")
def _select(ctx, op):
    return [math.where_v2(ctx.input(op, 0), ctx.input(op, 1), ctx.input(op, 2))]


# -- convolution and pooling ---------------------------------------------------------------
def _bias(ctx, op, y, index: int):
    bias = ctx.optional(op, index)
    return y if bias is None else math.add(y, bias)


@converts("CONV_2D")
def _conv2d(ctx, op):
    x, w = ctx.input(op, 0), ctx.input(op, 1)
    o = op.options
    in_channels = x.shape.as_list()[-1] if x.shape.ndims == 4 else None
    w_shape = w.shape.as_list()
    if in_channels is not None and w_shape[3] is not None and w_shape[3] != in_channels:
        raise UnsupportedModelError(
            f"CONV_2D operator {op.index}: grouped convolution ({in_channels} input channels, "
            f"filter for {w_shape[3]})"
        )
    y = nn_conv.conv2d(
        x,
        array.transpose(w, [1, 2, 3, 0]),
        strides=[1, o.get("StrideH", 1), o.get("StrideW", 1), 1],
        padding=_padding(op),
        dilations=[1, o.get("DilationHFactor", 1) or 1, o.get("DilationWFactor", 1) or 1, 1],
    )
    return [fused_activation(_bias(ctx, op, y, 2), op)]


@converts("DEPTHWISE_CONV_2D")
def _depthwise(ctx, op):
    x, w = ctx.input(op, 0), ctx.input(op, 1)
    o = op.options
    _, kh, kw, out_channels = w.shape.as_list()
    in_channels = x.shape.as_list()[-1] if x.shape.ndims == 4 else None
    if in_channels is None:  # older converters fill depth_multiplier reliably
        multiplier = int(o.get("DepthMultiplier", 1)) or 1
        in_channels = out_channels // multiplier
    multiplier = out_channels // in_channels if in_channels else 0
    if not multiplier or multiplier * in_channels != out_channels:
        raise UnsupportedModelError(
            f"DEPTHWISE_CONV_2D operator {op.index}: {out_channels} filter channels for "
            f"{in_channels} input channels"
        )
    filt = array.reshape(w, [kh, kw, in_channels, multiplier])
    y = nn_conv.depthwise_conv2d_native(
        x,
        filt,
        strides=[1, o.get("StrideH", 1), o.get("StrideW", 1), 1],
        padding=_padding(op),
        dilations=[1, o.get("DilationHFactor", 1) or 1, o.get("DilationWFactor", 1) or 1, 1],
    )
    return [fused_activation(_bias(ctx, op, y, 2), op)]


@converts("TRANSPOSE_CONV")
def _transpose_conv(ctx, op):
    # Inputs: output_shape, weights [out, h, w, in], input, optional bias.
    shape = ctx.const(op, 0)
    output_shape = ctx.input(op, 0) if shape is None else [int(d) for d in shape]
    w, x = ctx.input(op, 1), ctx.input(op, 2)
    o = op.options
    y = nn_conv.conv2d_transpose(
        x,
        array.transpose(w, [1, 2, 0, 3]),
        output_shape,
        strides=[1, o.get("StrideH", 1), o.get("StrideW", 1), 1],
        padding=_padding(op),
    )
    if isinstance(output_shape, list):
        y = array.reshape(y, output_shape)  # a static shape for the ops after it
    return [fused_activation(_bias(ctx, op, y, 3), op)]


@converts("FULLY_CONNECTED")
def _fully_connected(ctx, op):
    x, w = ctx.input(op, 0), ctx.input(op, 1)
    o = op.options
    if o.get("WeightsFormat", 0) != 0:
        raise UnsupportedModelError(f"FULLY_CONNECTED operator {op.index}: shuffled weights")
    units, depth = w.shape.as_list()
    flat = array.reshape(x, [-1, depth])
    y = _bias(ctx, op, matmul(flat, w, transpose_b=True), 2)
    if o.get("KeepNumDims", False) and x.shape.ndims not in (None, 2):
        lead = x.shape.as_list()[:-1]
        if lead.count(None) <= 1:  # a static target shape keeps the output's shape known
            y = array.reshape(y, [-1 if d is None else d for d in lead] + [units])
        else:
            dims = [array.shape(x)[:-1], constant([units], dtypes.int32)]
            y = array.reshape(y, array_transform.concat(dims, 0))
    return [fused_activation(y, op)]


@converts("AVERAGE_POOL_2D", "MAX_POOL_2D")
def _pool(ctx, op):
    o = op.options
    pool = nn_conv.avg_pool if op.op == "AVERAGE_POOL_2D" else nn_conv.max_pool
    y = pool(
        ctx.input(op, 0),
        ksize=[1, o.get("FilterHeight", 1), o.get("FilterWidth", 1), 1],
        strides=[1, o.get("StrideH", 1), o.get("StrideW", 1), 1],
        padding=_padding(op),
    )
    return [fused_activation(y, op)]


@converts("L2_POOL_2D")
def _l2_pool(ctx, op):
    o = op.options
    y = nn_conv.avg_pool(
        math.square(ctx.input(op, 0)),
        ksize=[1, o.get("FilterHeight", 1), o.get("FilterWidth", 1), 1],
        strides=[1, o.get("StrideH", 1), o.get("StrideW", 1), 1],
        padding=_padding(op),
    )
    return [fused_activation(math.sqrt(y), op)]


# -- normalization and image ---------------------------------------------------------------
@converts("L2_NORMALIZATION")
def _l2_normalization(ctx, op):
    # TFLite divides by max(||x||, 1e-6) over the last axis.
    x = ctx.input(op, 0)
    norm = math.sqrt(reduction.reduce_sum(math.square(x), axis=-1, keepdims=True))
    return [fused_activation(math.realdiv(x, math.maximum(norm, 1e-6)), op)]


@converts("LOCAL_RESPONSE_NORMALIZATION")
def _lrn(ctx, op):
    o = op.options
    y = lrn.lrn(
        ctx.input(op, 0),
        depth_radius=int(o.get("Radius", 5)),
        bias=float(o.get("Bias", 1.0)),
        alpha=float(o.get("Alpha", 1.0)),
        beta=float(o.get("Beta", 0.5)),
    )
    return [y]


@converts("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR")
def _resize(ctx, op):
    size = ctx.const(op, 1)
    size = ctx.input(op, 1) if size is None else [int(d) for d in size]
    resize = (
        image_ops.resize_bilinear
        if op.op == "RESIZE_BILINEAR"
        else image_ops.resize_nearest_neighbor
    )
    y = resize(
        ctx.input(op, 0),
        size,
        align_corners=bool(op.options.get("AlignCorners", False)),
        half_pixel_centers=bool(op.options.get("HalfPixelCenters", False)),
    )
    return [y]


@converts("SPACE_TO_DEPTH", "DEPTH_TO_SPACE")
def _space_depth(ctx, op):
    fn = partition_ops.space_to_depth if op.op == "SPACE_TO_DEPTH" else partition_ops.depth_to_space
    return [fn(ctx.input(op, 0), int(op.options.get("BlockSize", 1)))]
