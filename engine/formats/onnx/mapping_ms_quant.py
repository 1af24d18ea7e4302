"""Op-table rows for onnxruntime's quantized operators (domain ``com.microsoft``): what its
quantization tool writes in QOperator format beyond the standard QLinearConv/QLinearMatMul
(QLinearAdd, QLinearMul, QLinearGlobalAveragePool, QLinearAveragePool, QLinearConcat,
QLinearLeakyRelu, QLinearSigmoid, QGemm), what its graph optimizer saves for dynamically
quantized models (DynamicQuantizeMatMul, MatMulIntegerToFloat), and its older
QuantizeLinear/DequantizeLinear. The ONNX model zoo's int8 models are made of these.

Integer products reuse ``mapping_quant``'s exact float sums; the elementwise operators work
as onnxruntime's kernels do: dequantize to float32, compute, and quantize with rounding half
to even and saturation."""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.formats.onnx import _tf as tf
from engine.formats.onnx.mapping import UnsupportedModelError, _const, converter_for, register
from engine.formats.onnx.mapping_ms import MS_DOMAIN
from engine.formats.onnx.mapping_quant import (
    _BYTE,
    _check_int,
    _dequantize_linear,
    _dynamic_quantize_linear,
    _integer_product,
    _quantize,
    _quantize_linear,
    _requantize,
)
from engine.framework.graph import Tensor

__all__: list[str] = []


def _ms(op_type: str, fn) -> None:
    register(op_type, (1,), fn, domain=MS_DOMAIN)


class _Inputs:
    """The context a converter reads, with some inputs replaced (by position)."""

    def __init__(self, ctx, values: dict[int, Tensor], consts: dict | None = None):
        self._ctx, self._values, self._consts = ctx, values, consts or {}

    def input(self, node, i):
        return self._values[i] if i in self._values else self._ctx.input(node, i)

    def optional(self, node, i):
        return self._values[i] if i in self._values else self._ctx.optional(node, i)

    def const(self, node, i):
        if i in self._values:
            return self._consts.get(i)
        return self._ctx.const(node, i)

    def __getattr__(self, name):
        return getattr(self._ctx, name)


def _scalar(ctx, node, i: int, what: str) -> Tensor:
    t = ctx.input(node, i)
    dims = t.shape.as_tuple()
    if dims is None or any(d != 1 for d in dims):
        raise UnsupportedModelError(f"{node['op_type']}: {what} must be a single value")
    return tf.reshape(t, [])


def _dequantize(ctx, node, ix: int, iscale: int, izero: int) -> Tensor:
    """float32((x - zero)) * scale, per tensor."""
    x = ctx.input(node, ix)
    _check_int(node, x, _BYTE, f"input {ix}")
    shifted = tf.cast(x, tf.int32)
    if ctx.optional(node, izero) is not None:
        shifted = tf.subtract(shifted, tf.cast(_scalar(ctx, node, izero, "a zero point"), tf.int32))
    scale = tf.cast(_scalar(ctx, node, iscale, "a scale"), tf.float32)
    return tf.multiply(tf.cast(shifted, tf.float32), scale)


def _quantize_to(ctx, node, value: Tensor, iscale: int, izero: int, like: Tensor) -> Tensor:
    """``value`` quantized with input ``iscale``/``izero``; the type is the zero point's, or
    ``like``'s when the zero point is omitted."""
    zero = None
    if ctx.optional(node, izero) is not None:
        zero = _scalar(ctx, node, izero, "a zero point")
        qtype = _check_int(node, zero, _BYTE, "the output zero point")
    else:
        qtype = like.dtype.base_dtype
    scale = tf.cast(_scalar(ctx, node, iscale, "a scale"), tf.float32)
    return _quantize(value, scale, zero, qtype)


# -----------------------------------------------------------------------------------------
# Elementwise
# -----------------------------------------------------------------------------------------


def _qlinear_binary(kind: str):
    def convert(ctx, node):
        a = _dequantize(ctx, node, 0, 1, 2)
        b = _dequantize(ctx, node, 3, 4, 5)
        value = tf.add(a, b) if kind == "add" else tf.multiply(a, b)
        return [_quantize_to(ctx, node, value, 6, 7, ctx.input(node, 0))]

    return convert


def _qlinear_unary(fn):
    def convert(ctx, node):
        x = _dequantize(ctx, node, 0, 1, 2)
        return [_quantize_to(ctx, node, fn(ctx, node, x), 3, 4, ctx.input(node, 0))]

    return convert


def _leaky_relu(ctx, node, x):
    alpha = _const(float(ctx.attr(node, "alpha", 0.01)), tf.float32)
    return tf.where_v2(tf.greater_equal(x, _const(0.0, tf.float32)), x, tf.multiply(alpha, x))


def _sigmoid(ctx, node, x):
    return tf.sigmoid(x)


def _qlinear_concat(ctx, node):
    names = node.get("input", [])
    if len(names) < 5 or (len(names) - 2) % 3:
        raise UnsupportedModelError(
            f"QLinearConcat takes Y_scale, Y_zero_point and (X, X_scale, X_zero_point) "
            f"triples; got {len(names)} inputs"
        )
    first = ctx.input(node, 2)
    parts = []
    for i in range(2, len(names), 3):
        value = _dequantize(ctx, node, i, i + 1, i + 2)
        parts.append(_quantize_to(ctx, node, value, 0, 1, first))
    axis = int(ctx.attr(node, "axis"))
    return [tf.concat(parts, axis=axis)]


# -----------------------------------------------------------------------------------------
# Pools
# -----------------------------------------------------------------------------------------


def _to_channels_first(ctx, node, x: Tensor) -> Tensor:
    rank = ctx.rank(x, node)
    return tf.transpose(x, [0, rank - 1] + list(range(1, rank - 1)))


def _to_channels_last(ctx, node, x: Tensor) -> Tensor:
    rank = ctx.rank(x, node)
    return tf.transpose(x, [0] + list(range(2, rank)) + [1])


def _qlinear_global_average_pool(ctx, node):
    x = ctx.input(node, 0)
    qtype = _check_int(node, x, _BYTE, "input 0")
    rank = ctx.rank(x, node)
    last = bool(ctx.attr(node, "channels_last", 0))
    axes = list(range(1, rank - 1)) if last else list(range(2, rank))
    dims = x.shape.as_tuple()
    if dims is None or any(dims[a] is None for a in axes):
        raise UnsupportedModelError("QLinearGlobalAveragePool needs static spatial dims")
    count = int(np.prod([dims[a] for a in axes], dtype=np.int64))
    # As MLAS: the int32 sum less count * x_zero, times x_scale / (y_scale * count).
    acc = tf.reduce_sum(tf.cast(x, tf.int32), axis=axes, keepdims=True)
    if ctx.optional(node, 2) is not None:
        zero = tf.cast(_scalar(ctx, node, 2, "a zero point"), tf.int32)
        acc = tf.subtract(acc, tf.multiply(zero, _const(count, tf.int32)))
    x_scale = tf.cast(_scalar(ctx, node, 1, "a scale"), tf.float32)
    y_scale = tf.cast(_scalar(ctx, node, 3, "a scale"), tf.float32)
    scale = tf.realdiv(x_scale, tf.multiply(y_scale, _const(float(count), tf.float32)))
    if ctx.optional(node, 4) is not None:
        y_zero = _scalar(ctx, node, 4, "a zero point")
        qtype = _check_int(node, y_zero, _BYTE, "the output zero point")
    else:
        y_zero = _const(0, qtype)
    return [_requantize(acc, scale, y_zero, qtype)]


def _qlinear_average_pool(ctx, node):
    x = _dequantize(ctx, node, 0, 1, 2)
    last = bool(ctx.attr(node, "channels_last", 0))
    if last:
        x = _to_channels_first(ctx, node, x)
    attrs = [a for a in node.get("attribute", []) if a.get("name") != "channels_last"]
    pool = {"op_type": "AveragePool", "input": ["x"], "output": ["y"], "attribute": attrs}
    (y,) = converter_for("AveragePool", 19)(_Inputs(ctx, {0: x}), dict(pool, _opset=19))[:1]
    if last:
        y = _to_channels_last(ctx, node, y)
    return [_quantize_to(ctx, node, y, 3, 4, ctx.input(node, 0))]


# -----------------------------------------------------------------------------------------
# Products
# -----------------------------------------------------------------------------------------


def _scale_product(ctx, node, ia: int, ib: int) -> Tensor:
    """float32 a_scale * b_scale (b_scale per tensor or per column)."""
    a = tf.cast(_scalar(ctx, node, ia, "a_scale"), tf.float32)
    b = tf.cast(ctx.input(node, ib), tf.float32)
    dims = b.shape.as_tuple()
    if dims is not None and None not in dims and int(np.prod(dims, dtype=np.int64)) == 1:
        b = tf.reshape(b, [])
    return tf.multiply(a, b)


def _plus_bias(ctx, node, y: Tensor, i: int) -> Tensor:
    bias = ctx.optional(node, i)
    return y if bias is None else tf.add(y, bias)


def _matmul_integer_to_float(ctx, node):
    acc = tf.cast(tf.cast(_integer_product(ctx, node, 0, 4, 1, 5), tf.int32), tf.float32)
    return [_plus_bias(ctx, node, tf.multiply(acc, _scale_product(ctx, node, 2, 3)), 6)]


def _dynamic_quantize_matmul(ctx, node):
    a = ctx.input(node, 0)
    node_q = {"op_type": "DynamicQuantizeLinear", "input": ["a"], "output": ["q", "s", "z"]}
    qa, a_scale, a_zero = _dynamic_quantize_linear(_Inputs(ctx, {0: a}), node_q)
    # Inputs as MatMulIntegerToFloat's: A, B, a_scale, b_scale, a_zero, b_zero.
    view = _Inputs(
        ctx,
        {0: qa, 1: ctx.input(node, 1), 2: a_scale, 3: ctx.input(node, 2), 4: a_zero}
        | ({5: ctx.input(node, 3)} if ctx.optional(node, 3) is not None else {}),
        {1: ctx.const(node, 1), 3: ctx.const(node, 2), 5: ctx.const(node, 3)},
    )
    view_node = dict(node, input=["a", "b", "as", "bs", "az", "bz" if 5 in view._values else ""])
    (y,) = _matmul_integer_to_float(view, view_node)
    return [_plus_bias(ctx, node, y, 4)]


def _qgemm(ctx, node):
    a, b = ctx.input(node, 0), ctx.input(node, 3)
    for t, flag in ((a, "transA"), (b, "transB")):
        if ctx.rank(t, node) != 2:
            raise UnsupportedModelError(f"QGemm takes 2-D A and B ({flag})")
    values, consts = {}, {}
    if ctx.attr(node, "transA", 0):
        values[0] = tf.transpose(a)
    if ctx.attr(node, "transB", 0):
        values[3] = tf.transpose(b)
        b_const = ctx.const(node, 3)
        consts[3] = None if b_const is None else np.ascontiguousarray(b_const.T)
    view = _Inputs(ctx, values, consts)
    acc = tf.cast(_integer_product(view, node, 0, 2, 3, 5), tf.int32)
    c = ctx.optional(node, 6)
    if c is not None:
        _check_int(node, c, frozenset([dtypes.int32]), "C")
        acc = tf.add(acc, c)
    scale = _scale_product(ctx, node, 1, 4)
    alpha = float(ctx.attr(node, "alpha", 1.0))
    if alpha != 1.0:
        scale = tf.multiply(scale, _const(alpha, tf.float32))
    if ctx.optional(node, 7) is None:
        return [tf.multiply(tf.cast(acc, tf.float32), scale)]
    y_scale = tf.cast(_scalar(ctx, node, 7, "y_scale"), tf.float32)
    if ctx.optional(node, 8) is not None:
        y_zero = _scalar(ctx, node, 8, "y_zero_point")
        qtype = _check_int(node, y_zero, _BYTE, "y_zero_point")
    else:
        qtype, y_zero = dtypes.uint8, _const(0, dtypes.uint8)
    return [_requantize(acc, tf.realdiv(scale, y_scale), y_zero, qtype)]


_ms("QLinearAdd", _qlinear_binary("add"))
_ms("QLinearMul", _qlinear_binary("mul"))
_ms("QLinearLeakyRelu", _qlinear_unary(_leaky_relu))
_ms("QLinearSigmoid", _qlinear_unary(_sigmoid))
_ms("QLinearConcat", _qlinear_concat)
_ms("QLinearGlobalAveragePool", _qlinear_global_average_pool)
_ms("QLinearAveragePool", _qlinear_average_pool)
_ms("QGemm", _qgemm)
_ms("MatMulIntegerToFloat", _matmul_integer_to_float)
_ms("DynamicQuantizeMatMul", _dynamic_quantize_matmul)
# onnxruntime's own QuantizeLinear/DequantizeLinear (older quantization tools wrote these).
_ms("QuantizeLinear", _quantize_linear)
_ms("DequantizeLinear", _dequantize_linear)
