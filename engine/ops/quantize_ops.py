"""Simulated quantization, as quantization-aware trained graphs hold it: ``FakeQuantWithMinMax
Args``/``Vars``/``VarsPerChannel`` (TF's nudged zero point) and ``QuantizeAndDequantize``
V2/V3/V4 (the scale taken from whichever side of the range needs the smaller one). Values
are rounded to the integer grid and mapped back in the input's float type, step for step as
TF's CPU kernels compute them, so results match TF bit for bit on float32."""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.framework.registry import Attr, OpFlags, op
from engine.ops._common import base, check_dtype
from engine.ops.array import _invalid

__all__ = []

_F32 = frozenset([dtypes.float32])
_FLOATS = frozenset([dtypes.float16, dtypes.float32, dtypes.float64])


def _float32_infer(o):
    check_dtype(o, 0, _F32)
    return [(dtypes.float32, o._inputs[0]._shape)]


def _nudge(lo, hi, num_bits: int, narrow: bool):
    """TF's Nudge: (nudged min, nudged max, scale) in float32."""
    f = np.float32
    qmin, qmax = f(1 if narrow else 0), f((1 << num_bits) - 1)
    lo, hi = f(lo), f(hi)
    scale = (hi - lo) / (qmax - qmin)
    zero = qmin - lo / scale
    if zero < qmin:
        nudged = qmin
    elif zero > qmax:
        nudged = qmax
    else:
        nudged = f(np.floor(zero + f(0.5)) if zero >= 0 else -np.floor(-zero + f(0.5)))
    return (qmin - nudged) * scale, (qmax - nudged) * scale, scale


def _fake_quant(x, lo, hi, num_bits, narrow):
    if not 2 <= num_bits <= 16:
        raise _invalid(f"num_bits must be between 2 and 16, inclusive, got {num_bits}")
    if not lo <= hi:
        raise _invalid(f"min {lo} must not be greater than max {hi}")
    nmin, nmax, scale = _nudge(lo, hi, num_bits, narrow)
    inv = np.float32(1) / scale
    shifted = np.clip(x, nmin, nmax) - nmin
    return (np.floor(shifted * inv + np.float32(0.5)) * scale + nmin).astype(np.float32)


_FQ_ATTRS = (Attr("num_bits", "int", default=8), Attr("narrow_range", "bool", default=False))


@op(
    "FakeQuantWithMinMaxArgs",
    infer=_float32_infer,
    differentiable=False,
    inputs=("inputs",),
    attrs=(Attr("min", "float", default=-6.0), Attr("max", "float", default=6.0), *_FQ_ATTRS),
    flags=OpFlags(device_types=("CPU",)),
)
def _fake_quant_args(xp, x, *, min=-6.0, max=6.0, num_bits=8, narrow_range=False):  # noqa: A002
    return _fake_quant(np.asarray(x), min, max, num_bits, narrow_range)


@op(
    "FakeQuantWithMinMaxVars",
    infer=_float32_infer,
    differentiable=False,
    inputs=("inputs", "min", "max"),
    attrs=_FQ_ATTRS,
    flags=OpFlags(device_types=("CPU",)),
)
def _fake_quant_vars(xp, x, lo, hi, *, num_bits=8, narrow_range=False):
    if np.ndim(lo) or np.ndim(hi):
        raise _invalid("min and max must be scalars")
    return _fake_quant(np.asarray(x), float(lo), float(hi), num_bits, narrow_range)


@op(
    "FakeQuantWithMinMaxVarsPerChannel",
    infer=_float32_infer,
    differentiable=False,
    inputs=("inputs", "min", "max"),
    attrs=_FQ_ATTRS,
    flags=OpFlags(device_types=("CPU",)),
)
def _fake_quant_channel(xp, x, lo, hi, *, num_bits=8, narrow_range=False):
    x = np.asarray(x)
    depth = x.shape[-1] if x.ndim else 0
    if np.shape(lo) != (depth,) or np.shape(hi) != (depth,):
        raise _invalid(f"min and max must be vectors of the last dimension ({depth})")
    out = np.empty_like(x, dtype=np.float32)
    for c in range(depth):
        out[..., c] = _fake_quant(x[..., c], float(lo[c]), float(hi[c]), num_bits, narrow_range)
    return out


def _qdq_infer(o):
    check_dtype(o, 0, _FLOATS)
    return [(base(o._inputs[0]), o._inputs[0]._shape)]


def _qdq_slice(x, lo, hi, signed, bits, narrow, range_given, half_up):
    t = x.dtype.type
    if not range_given:
        lo, hi = t(np.min(x)) if x.size else t(0), t(np.max(x)) if x.size else t(0)
    lo, hi = t(lo), t(hi)
    if range_given and lo > hi:
        raise _invalid(f"Invalid range: input_min {lo} > input_max {hi}")
    if signed:
        qmin = -(1 << (bits - 1)) + (1 if narrow else 0)
        qmax = (1 << (bits - 1)) - 1
    else:
        qmin, qmax = 0, (1 << bits) - 1
    big = np.finfo(t).max
    from_min = t(qmin) / lo if qmin * lo > 0 else big
    from_max = t(qmax) / hi if qmax * hi > 0 else big
    if from_min < from_max:
        scale, inverse = t(from_min), lo / t(qmin)
        hi = t(qmax) * inverse
    else:
        scale, inverse = t(from_max), hi / t(qmax)
        lo = t(qmin) * inverse
    scaled = np.clip(x, lo, hi) * scale
    rounded = np.floor(scaled + t(0.5)) if half_up else np.rint(scaled)
    return (rounded * inverse).astype(x.dtype)


def _qdq(x, lo, hi, signed, bits, narrow, range_given, axis, round_mode="HALF_TO_EVEN"):
    x = np.asarray(x)
    if round_mode not in ("HALF_TO_EVEN", "HALF_UP"):
        raise _invalid(f"round_mode must be HALF_TO_EVEN or HALF_UP, got {round_mode!r}")
    if not (1 <= bits <= (63 if signed else 62)):
        raise _invalid(f"num_bits is out of range: {bits}")
    half_up = round_mode == "HALF_UP"
    if axis == -1:
        if np.ndim(lo) or np.ndim(hi):
            raise _invalid("input_min must be a scalar.")
        return _qdq_slice(x, lo, hi, signed, bits, narrow, range_given, half_up)
    if not 0 <= axis < x.ndim:
        raise _invalid(f"axis {axis} is out of range for an input of rank {x.ndim}")
    depth = x.shape[axis]
    if range_given and (np.shape(lo) != (depth,) or np.shape(hi) != (depth,)):
        raise _invalid(f"input_min and input_max must be vectors of {depth} values")
    out = np.empty_like(x)
    for c in range(depth):
        sl = (slice(None),) * axis + (c,)
        clo, chi = (lo[c], hi[c]) if range_given else (0, 0)
        out[sl] = _qdq_slice(x[sl], clo, chi, signed, bits, narrow, range_given, half_up)
    return out


_QDQ_ATTRS = (
    Attr("signed_input", "bool", default=True),
    Attr("range_given", "bool", default=False),  # V3's default is True: see below
    Attr("narrow_range", "bool", default=False),
    Attr("axis", "int", default=-1),
)
_ROUND = Attr("round_mode", "string", default="HALF_TO_EVEN")
_BITS = Attr("num_bits", "int", default=8)


def _qdq_v2(
    xp,
    x,
    lo,
    hi,
    *,
    signed_input=True,
    range_given=False,
    narrow_range=False,
    axis=-1,
    num_bits=8,
    round_mode="HALF_TO_EVEN",
):
    return _qdq(x, lo, hi, signed_input, num_bits, narrow_range, range_given, axis, round_mode)


for _name in ("QuantizeAndDequantizeV2", "QuantizeAndDequantizeV4"):
    op(
        _name,
        infer=_qdq_infer,
        differentiable=False,
        inputs=("input", "input_min", "input_max"),
        attrs=(*_QDQ_ATTRS, _BITS, _ROUND),
        flags=OpFlags(device_types=("CPU",)),
    )(_qdq_v2)


@op(
    "QuantizeAndDequantizeV3",
    infer=_qdq_infer,
    differentiable=False,
    inputs=("input", "input_min", "input_max", "num_bits"),
    attrs=(_QDQ_ATTRS[0], Attr("range_given", "bool", default=True), *_QDQ_ATTRS[2:]),
    flags=OpFlags(device_types=("CPU",), host_inputs=(3,)),
)
def _qdq_v3(
    xp, x, lo, hi, bits, *, signed_input=True, range_given=True, narrow_range=False, axis=-1
):
    return _qdq(x, lo, hi, signed_input, int(bits), narrow_range, range_given, axis)
