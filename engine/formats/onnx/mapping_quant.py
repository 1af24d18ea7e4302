"""Op-table rows for quantized models: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv.

Everything is composed of ordinary engine ops, computed so that results are those of
onnxruntime's CPU kernels bit for bit:

- quantizing divides in float32 (``x / scale``, as MLAS does), rounds half to even (the
  engine's ``Round``), adds the zero point and saturates to the integer type's range;
- dequantizing subtracts the zero point in int32, converts to float32 and multiplies by the
  scale (then casts to float16 when the scale is float16);
- integer products are float matmuls/convolutions of the zero-point-shifted operands: every
  product and every partial sum is an integer, so the sums are exact as long as they stay
  below the float's integer precision: 2**53 for float64 (any int32 accumulator), 2**24 for
  float32, which is used when a bound known at import (constant weights) shows every partial
  sum stays below it. (An accumulator overflowing int32 is not wrapped as onnxruntime's is.)
- QLinear* requantize as MLAS does: the int32 accumulator (plus the int32 bias) converted to
  float32, times the float32 ``a_scale * b_scale / y_scale``, rounded half to even.

Float8, int4/int2 and the other sub-byte or exotic element types are reported as
``UnsupportedModelError`` naming the type.
"""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.formats.onnx import _tf as tf
from engine.formats.onnx.mapping import UnsupportedModelError, _const, register
from engine.formats.onnx.mapping_vision import _conv
from engine.formats.onnx.tensors import ONNX_TYPE_NAMES
from engine.framework.graph import Tensor
from engine.ops._common import create

__all__: list[str] = []

# ONNX element type -> the engine's integer types that quantized tensors can have.
_QUANT_TYPES = {2: dtypes.uint8, 3: dtypes.int8, 4: dtypes.uint16, 5: dtypes.int16}
_EXACT_F32 = 2.0**24  # integers up to this are exact in float32


def _type_name(code: int) -> str:
    return ONNX_TYPE_NAMES.get(code, f"element type {code}")


def _range(dt: dtypes.DType) -> tuple[int, int]:
    info = np.iinfo(dt.as_numpy_dtype)
    return int(info.min), int(info.max)


def _check_int(node, t: Tensor, allowed, what: str) -> dtypes.DType:
    dt = t.dtype.base_dtype
    if dt not in allowed:
        names = ", ".join(sorted(d.name for d in allowed))
        raise UnsupportedModelError(
            f"{node['op_type']} node {node.get('name', '')!r}: {what} of type {dt.name} "
            f"(supported: {names})"
        )
    return dt


_BYTE = frozenset([dtypes.uint8, dtypes.int8])
_QUANT = frozenset(_QUANT_TYPES.values())


# -----------------------------------------------------------------------------------------
# Scales and zero points: per tensor, per axis, per block
# -----------------------------------------------------------------------------------------


def _param(ctx, node, i: int, x: Tensor, axis: int, block: int) -> Tensor | None:
    """Input ``i`` (a scale or zero point) shaped to broadcast against ``x``."""
    p = ctx.optional(node, i)
    if p is None:
        return None
    rank = ctx.rank(x, node)
    dims = p.shape.as_tuple()
    if dims is None:
        raise UnsupportedModelError(f"{node['op_type']} needs the rank of input {i}")
    size = None if None in dims else int(np.prod(dims, dtype=np.int64))
    if size == 1 and block <= 0:  # per tensor ([1] counts as a scalar, as onnxruntime reads it)
        return tf.reshape(p, []) if dims else p
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        raise UnsupportedModelError(f"{node['op_type']}: axis out of range for rank {rank}")
    if block <= 0:
        if len(dims) != 1:
            raise UnsupportedModelError(
                f"{node['op_type']}: a {len(dims)}-D scale or zero point needs block_size"
            )
        return tf.reshape(p, [-1] + [1] * (rank - 1 - axis))
    # Blocked: p has x's rank, dim ``axis`` holding one entry per block of ``block``.
    length = x.shape.as_tuple()[axis]
    if length is None or len(dims) != rank:
        raise UnsupportedModelError(
            f"{node['op_type']} blocked quantization needs a static dim {axis} and a scale "
            f"of rank {rank}"
        )
    index = np.arange(length, dtype=np.int64) // block
    return tf.gather(p, _const(index, tf.int64), axis=axis)


def _axis_block(ctx, node) -> tuple[int, int]:
    return int(ctx.attr(node, "axis", 1)), int(ctx.attr(node, "block_size", 0))


def _quantize(value: Tensor, scale: Tensor, zero: Tensor | None, qtype) -> Tensor:
    """``saturate(round_half_even(value / scale) + zero)`` as ``qtype``; value and scale are
    float32 (float64 for int32 inputs)."""
    q = tf.round(tf.realdiv(value, scale))
    if zero is not None:
        q = tf.add(q, tf.cast(zero, value.dtype.base_dtype))
    lo, hi = _range(qtype)
    q = tf.clip_by_value(q, _const(lo, q.dtype.base_dtype), _const(hi, q.dtype.base_dtype))
    return tf.cast(q, qtype)


def _requantize(acc: Tensor, scale: Tensor, zero: Tensor, qtype) -> Tensor:
    """An int32 accumulator to ``qtype`` as MLAS does: float32(acc) * scale, rounded half to
    even, plus the zero point, saturated."""
    q = tf.round(tf.multiply(tf.cast(acc, tf.float32), scale))
    q = tf.add(q, tf.cast(zero, tf.float32))
    lo, hi = _range(qtype)
    return tf.cast(tf.clip_by_value(q, _const(lo, tf.float32), _const(hi, tf.float32)), qtype)


# -----------------------------------------------------------------------------------------
# QuantizeLinear / DequantizeLinear / DynamicQuantizeLinear
# -----------------------------------------------------------------------------------------


def _output_type(ctx, node, zero: Tensor | None) -> dtypes.DType:
    code = int(ctx.attr(node, "output_dtype", 0))
    if zero is not None:
        dt = _check_int(node, zero, _QUANT, "a zero point")
        if code and _QUANT_TYPES.get(code) != dt:
            raise UnsupportedModelError(
                f"QuantizeLinear: output_dtype {_type_name(code)} differs from the zero point's"
            )
        return dt
    if not code:
        return dtypes.uint8
    if code not in _QUANT_TYPES:
        raise UnsupportedModelError(f"QuantizeLinear to {_type_name(code)}")
    return _QUANT_TYPES[code]


def _compute_type(ctx, node, x: Tensor):
    precision = int(ctx.attr(node, "precision", 0))
    if precision not in (0, 1):
        raise UnsupportedModelError(f"QuantizeLinear with precision {_type_name(precision)}")
    dt = x.dtype.base_dtype
    if dt in (dtypes.float32, dtypes.float16):
        return tf.float32  # onnxruntime divides float16 inputs in float32 too
    if dt == dtypes.int32:
        return dtypes.float64  # every int32 and float32 scale is exact in float64
    raise UnsupportedModelError(f"QuantizeLinear of {dt.name} input")


def _quantize_linear(ctx, node):
    x = ctx.input(node, 0)
    axis, block = _axis_block(ctx, node)
    zero = _param(ctx, node, 2, x, axis, block)
    qtype = _output_type(ctx, node, zero)
    compute = _compute_type(ctx, node, x)
    scale = tf.cast(_param(ctx, node, 1, x, axis, block), compute)
    return [_quantize(tf.cast(x, compute), scale, zero, qtype)]


_DEQUANT_INPUTS = _QUANT | {dtypes.int32}


def _dequantize_linear(ctx, node):
    x = ctx.input(node, 0)
    _check_int(node, x, _DEQUANT_INPUTS, "input")
    axis, block = _axis_block(ctx, node)
    scale = _param(ctx, node, 1, x, axis, block)
    zero = _param(ctx, node, 2, x, axis, block)
    out = scale.dtype.base_dtype
    code = int(ctx.attr(node, "output_dtype", 0))
    if code:
        out = {1: dtypes.float32, 10: dtypes.float16}.get(code)
        if out is None:
            raise UnsupportedModelError(f"DequantizeLinear to {_type_name(code)}")
    if out not in (dtypes.float32, dtypes.float16):
        raise UnsupportedModelError(f"DequantizeLinear with a {out.name} scale")
    shifted = tf.cast(x, tf.int32)
    if zero is not None:
        shifted = tf.subtract(shifted, tf.cast(zero, tf.int32))
    y = tf.multiply(tf.cast(shifted, tf.float32), tf.cast(scale, tf.float32))
    return [y if out == dtypes.float32 else tf.cast(y, out)]


def _dynamic_quantize_linear(ctx, node):
    x = ctx.input(node, 0)
    if x.dtype.base_dtype != dtypes.float32:
        raise UnsupportedModelError(f"DynamicQuantizeLinear of {x.dtype.base_dtype.name}")
    zero_f = _const(0, tf.float32)
    lo = tf.minimum(tf.reduce_min(x), zero_f)
    hi = tf.maximum(tf.reduce_max(x), zero_f)
    # onnxruntime uses scale 1 for an all-zero input (the spec's formula would divide by 0).
    span = tf.subtract(hi, lo)
    flat = tf.equal(span, zero_f)
    scale = tf.where_v2(flat, _const(1, tf.float32), tf.realdiv(span, _const(255, tf.float32)))
    initial = tf.negative(tf.realdiv(lo, scale))
    zp = tf.round(tf.clip_by_value(initial, zero_f, _const(255, tf.float32)))
    zero = tf.cast(zp, dtypes.uint8)
    return [_quantize(x, scale, zero, dtypes.uint8), scale, zero]


register("QuantizeLinear", (10, 13, 19, 21, 23, 24, 25, 28), _quantize_linear)
register("DequantizeLinear", (10, 13, 19, 21, 23, 24, 25, 28), _dequantize_linear)
register("DynamicQuantizeLinear", (11,), _dynamic_quantize_linear)


# -----------------------------------------------------------------------------------------
# Integer matmul and convolution
# -----------------------------------------------------------------------------------------


def _shifted_const(ctx, node, i: int, zero_i: int, reshape) -> np.ndarray | None:
    """Constant input ``i`` minus its (constant) zero point, as float64, or None."""
    v = ctx.const(node, i)
    if v is None:
        return None
    v = np.asarray(v).astype(np.float64)
    if zero_i < 0 or ctx.optional(node, zero_i) is None:
        return v
    z = ctx.const(node, zero_i)
    if z is None:
        return None
    z = np.asarray(z).astype(np.float64)
    return v - reshape(z, z.ndim)


def _shifted(ctx, node, i: int, zero_i: int, reshape, dt) -> Tensor:
    x = tf.cast(ctx.input(node, i), dt)
    if zero_i < 0 or ctx.optional(node, zero_i) is None:
        return x
    z = ctx.input(node, zero_i)
    rank = z.shape.ndims
    if rank is None:
        raise UnsupportedModelError(f"{node['op_type']} needs the rank of input {zero_i}")
    return tf.subtract(x, reshape(tf.cast(z, dt), rank))


def _exact_type(ctx, node, x_i: int, x_zero_i: int, w: np.ndarray | None, axis: int):
    """float32 when a product sum of input ``x_i`` with constant ``w`` (summed over every axis
    but ``axis``) cannot leave float32's exact integers, else float64."""
    if w is None:
        return dtypes.float64
    lo, hi = _range(ctx.input(node, x_i).dtype.base_dtype)
    z = ctx.const(node, x_zero_i) if x_zero_i >= 0 else None
    if ctx.optional(node, x_zero_i) is not None and z is None:
        x_abs = hi - lo
    else:
        z = np.zeros(1) if z is None else np.asarray(z, np.float64)
        x_abs = float(max(np.max(np.abs(hi - z)), np.max(np.abs(z - lo))))
    if w.size == 0:
        return dtypes.float32
    sums = np.moveaxis(np.abs(w), axis, 0).reshape(w.shape[axis], -1).sum(axis=1)
    return dtypes.float32 if x_abs * float(np.max(sums)) < _EXACT_F32 else dtypes.float64


def _matmul(a: Tensor, b: Tensor) -> Tensor:
    if a.shape.ndims == 2 and b.shape.ndims == 2:
        return tf.matmul(a, b)
    return create("OnnxMatMul", [a, b]).outputs[0]


def _rows(z, rank: int):
    """A's zero point: per tensor, or 1-D with one entry per row of A."""
    if rank == 1:
        return z.reshape(-1, 1) if isinstance(z, np.ndarray) else tf.reshape(z, [-1, 1])
    return z


def _cols(z, rank: int):
    """B's zero point: per tensor, or one entry per column of B (broadcasts as it is)."""
    return z


def _integer_product(ctx, node, ia: int, iza: int, ib: int, izb: int) -> Tensor:
    """(A - a_zero) @ (B - b_zero) as an exact float matmul, the sums still in float."""
    for i in (ia, ib):
        _check_int(node, ctx.input(node, i), _BYTE, f"input {i}")
    b_const = _shifted_const(ctx, node, ib, izb, _cols)
    dt = _exact_type(ctx, node, ia, iza, b_const, b_const.ndim - 1 if b_const is not None else 0)
    a = _shifted(ctx, node, ia, iza, _rows, dt)
    if b_const is not None:
        b = tf.constant(b_const.astype(dt.as_numpy_dtype))
    else:
        b = _shifted(ctx, node, ib, izb, _cols, dt)
    return _matmul(a, b)


def _matmul_integer(ctx, node):
    return [tf.cast(_integer_product(ctx, node, 0, 2, 1, 3), tf.int32)]


def _qlinear_matmul(ctx, node):
    acc = tf.cast(_integer_product(ctx, node, 0, 2, 3, 5), tf.int32)
    y_zero = ctx.input(node, 7)
    qtype = _check_int(node, y_zero, _BYTE, "y_zero_point")
    scale = _out_scale(ctx, node, 1, 4, 6, None)
    return [_requantize(acc, scale, tf.reshape(y_zero, []), qtype)]


def _out_scale(ctx, node, ia: int, ib: int, iy: int, b_shape) -> Tensor:
    """float32 ``a_scale * b_scale / y_scale`` (b_scale per tensor or per output channel,
    reshaped by ``b_shape`` when given)."""

    def scalar(i):
        s = tf.cast(ctx.input(node, i), tf.float32)
        return tf.reshape(s, []) if s.shape.ndims else s

    b = tf.cast(ctx.input(node, ib), tf.float32)
    dims = b.shape.as_tuple()
    if dims is not None and None not in dims and int(np.prod(dims, dtype=np.int64)) == 1:
        b = tf.reshape(b, [])
    elif b_shape is not None:
        b = tf.reshape(b, b_shape)
    return tf.realdiv(tf.multiply(scalar(ia), b), scalar(iy))


class _ConvInputs:
    """The context ``mapping_vision._conv`` reads, with the shifted operands as its inputs."""

    def __init__(self, ctx, x: Tensor, w: Tensor, w_const: np.ndarray | None):
        self._ctx, self._values, self._w_const = ctx, {0: x, 1: w}, w_const

    def input(self, node, i):
        return self._values[i]

    def optional(self, node, i):
        return self._values.get(i)

    def const(self, node, i):
        return self._w_const if i == 1 else None

    def __getattr__(self, name):
        return getattr(self._ctx, name)


def _conv_integer_acc(ctx, node, ix: int, izx: int, iw: int, izw: int) -> Tensor:
    """conv(X - x_zero, W - w_zero) as an exact float convolution."""
    for i in (ix, iw):
        _check_int(node, ctx.input(node, i), _BYTE, f"input {i}")
    w_in = ctx.input(node, iw)
    w_rank = ctx.rank(w_in, node)

    def w_zero(z, rank):
        if rank != 1:
            return z
        shape = [-1] + [1] * (w_rank - 1)
        return z.reshape(shape) if isinstance(z, np.ndarray) else tf.reshape(z, shape)

    w_const = _shifted_const(ctx, node, iw, izw, w_zero)
    dt = _exact_type(ctx, node, ix, izx, w_const, 0)
    x = _shifted(ctx, node, ix, izx, _cols, dt)
    if w_const is not None:
        w_const = w_const.astype(dt.as_numpy_dtype)
        w = tf.constant(w_const)
    else:
        w = _shifted(ctx, node, iw, izw, w_zero, dt)
    return _conv(_ConvInputs(ctx, x, w, w_const), node)[0]


def _conv_integer(ctx, node):
    return [tf.cast(_conv_integer_acc(ctx, node, 0, 2, 1, 3), tf.int32)]


def _qlinear_conv(ctx, node):
    acc = tf.cast(_conv_integer_acc(ctx, node, 0, 2, 3, 5), tf.int32)
    rank = ctx.rank(acc, node)
    bias = ctx.optional(node, 8)
    if bias is not None:
        _check_int(node, bias, frozenset([dtypes.int32]), "bias")
        acc = tf.add(acc, tf.reshape(bias, [-1] + [1] * (rank - 2)))
    y_zero = ctx.input(node, 7)
    qtype = _check_int(node, y_zero, _BYTE, "y_zero_point")
    scale = _out_scale(ctx, node, 1, 4, 6, [-1] + [1] * (rank - 2))
    return [_requantize(acc, scale, tf.reshape(y_zero, []), qtype)]


register("MatMulInteger", (10,), _matmul_integer)
register("ConvInteger", (10,), _conv_integer)
register("QLinearMatMul", (10, 21), _qlinear_matmul)
register("QLinearConv", (10,), _qlinear_conv)
