"""Op-table rows (and ONNX-only engine ops) for the signal operators: DFT (opsets 17 and 20),
STFT and MelWeightMatrix, as audio front ends (spectrograms, log-mel features) export them.

Complex values are ONNX's trailing dimension of 2 (real, imaginary); a trailing 1 is a real
signal. Transforms run on the host FFT (``numpy.fft``) in double precision and return the
input's type, as the ONNX reference implementation computes them. Lengths read from the run's
inputs are bounded (``MAX_SIGNAL``)."""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.formats.onnx import _tf as tf
from engine.formats.onnx.mapping import UnsupportedModelError, _const, register
from engine.formats.onnx.ops import _bad, _host_ints, _onnx_op
from engine.formats.onnx.tensors import engine_dtype
from engine.ops._common import FLOATS, check_dtype, create
from engine.tensor_shape import TensorShape, unknown_shape

__all__ = ["MAX_SIGNAL"]

MAX_SIGNAL = 1 << 24  # samples of one transform (dft_length, frame_length) at most
_MAX_MEL = 1 << 16


def _scalar_int(xp, t, what: str) -> int:
    values = _host_ints(xp, t)
    if len(values) != 1:
        raise _bad(f"{what} must be a single value, got {len(values)}")
    return int(values[0])


def _complex(x: np.ndarray) -> np.ndarray:
    if x.shape[-1] == 1:
        return x[..., 0].astype(np.float64)
    return x[..., 0].astype(np.float64) + 1j * x[..., 1].astype(np.float64)


def _pairs(z: np.ndarray, dtype) -> np.ndarray:
    return np.stack([z.real, z.imag], axis=-1).astype(dtype)


# -- DFT --------------------------------------------------------------------------------------


def _dft_infer(op):
    dt = check_dtype(op, 0, FLOATS)
    x = op._inputs[0]._shape
    return [(dt, unknown_shape(x.ndims))]


@_onnx_op(
    "OnnxDFT",
    infer=_dft_infer,
    inputs=("x", "dft_length", "axis"),
    attrs=[("inverse", "int"), ("onesided", "int"), ("has_length", "int")],
    cpu_only=True,
    host_inputs=(1, 2),
)
def _dft(xp, x, dft_length, axis, *, inverse, onesided, has_length):
    x = np.asarray(x)
    if x.ndim < 2 or x.shape[-1] not in (1, 2):
        raise _bad(f"DFT: input {list(x.shape)} must end in a dimension of 1 or 2 (complex)")
    a = _scalar_int(xp, axis, "DFT axis")
    if not -x.ndim <= a < x.ndim or a % x.ndim == x.ndim - 1:
        raise _bad(f"DFT: axis {a} is not a signal axis of input rank {x.ndim}")
    a %= x.ndim
    if has_length:
        n = _scalar_int(xp, dft_length, "DFT dft_length")
    else:
        n = 2 * (x.shape[a] - 1) if inverse and onesided else x.shape[a]
    if not 0 < n <= MAX_SIGNAL:
        raise _bad(f"DFT: dft_length {n} not in [1, {MAX_SIGNAL}]")
    z = _complex(x)
    if inverse and onesided:
        return np.fft.irfft(z, n=n, axis=a)[..., None].astype(x.dtype)
    if inverse:
        return _pairs(np.fft.ifft(z, n=n, axis=a), x.dtype)
    out = np.fft.fft(z, n=n, axis=a)
    if onesided:
        out = np.take(out, np.arange(n // 2 + 1), axis=a)
    return _pairs(out, x.dtype)


def _dft_convert(ctx, node):
    x = ctx.input(node, 0)
    length = ctx.optional(node, 1)
    if ctx.opset_of(node) >= 20:
        axis = ctx.optional(node, 2)
        axis = _const(np.int64(-2), dtypes.int64) if axis is None else axis
    else:
        axis = _const(np.int64(int(ctx.attr(node, "axis", 1))), dtypes.int64)
    attrs = {
        "inverse": int(ctx.attr(node, "inverse", 0)),
        "onesided": int(ctx.attr(node, "onesided", 0)),
        "has_length": int(length is not None),
    }
    if length is None:
        length = _const(np.int64(0), dtypes.int64)
    return [create("OnnxDFT", [x, _as_int64(length), _as_int64(axis)], attrs).outputs[0]]


def _as_int64(t):
    return t if t.dtype.base_dtype == dtypes.int64 else tf.cast(t, tf.int64)


# -- STFT -------------------------------------------------------------------------------------


def _stft_infer(op):
    dt = check_dtype(op, 0, FLOATS)
    dims = op._inputs[0]._shape.as_tuple()
    return [(dt, TensorShape([dims[0] if dims else None, None, None, 2]))]


@_onnx_op(
    "OnnxSTFT",
    infer=_stft_infer,
    inputs=("signal", "frame_step", "window", "frame_length"),
    attrs=[("onesided", "int"), ("has_window", "int"), ("has_length", "int")],
    cpu_only=True,
    host_inputs=(1, 2, 3),
)
def _stft(xp, signal, frame_step, window, frame_length, *, onesided, has_window, has_length):
    x = np.asarray(signal)
    if x.ndim != 3 or x.shape[-1] not in (1, 2):
        raise _bad(f"STFT: signal {list(x.shape)} must be [batch, length, 1 or 2]")
    step = _scalar_int(xp, frame_step, "STFT frame_step")
    w = np.asarray(window.get() if hasattr(window, "get") else window) if has_window else None
    if has_length:
        length = _scalar_int(xp, frame_length, "STFT frame_length")
    else:
        length = w.shape[0] if w is not None else x.shape[1]
    if w is None:
        w = np.ones(length, x.dtype)
    if w.ndim != 1 or not 0 < length <= MAX_SIGNAL or step <= 0 or w.shape[0] > length:
        raise _bad(
            f"STFT: frame_step {step}, frame_length {length} and window {list(w.shape)} "
            "must be positive, with the window no longer than a frame"
        )
    frames = 1 + (x.shape[1] - length) // step
    if frames <= 0:
        return np.zeros((x.shape[0], 0, length // 2 + 1 if onesided else length, 2), x.dtype)
    starts = np.arange(frames) * step
    taps = starts[:, None] + np.arange(w.shape[0])[None, :]
    windows = _complex(x)[:, taps] * w.astype(np.float64)
    spectrum = np.fft.fft(windows, n=length, axis=-1)
    if onesided:
        spectrum = spectrum[..., : length // 2 + 1]
    return _pairs(spectrum, x.dtype)


def _stft_convert(ctx, node):
    ins = [ctx.input(node, 0), _as_int64(ctx.input(node, 1))]
    window, length = ctx.optional(node, 2), ctx.optional(node, 3)
    attrs = {
        "onesided": int(ctx.attr(node, "onesided", 1)),
        "has_window": int(window is not None),
        "has_length": int(length is not None),
    }
    x_dt = ins[0].dtype.base_dtype
    ins.append(window if window is not None else _const(np.zeros(0, x_dt.as_numpy_dtype), x_dt))
    ins.append(_as_int64(length) if length is not None else _const(np.int64(0), dtypes.int64))
    return [create("OnnxSTFT", ins, attrs).outputs[0]]


# -- MelWeightMatrix --------------------------------------------------------------------------


def _mel_infer(op):
    return [(op.get_attr("output_type"), TensorShape([None, None]))]


@_onnx_op(
    "OnnxMelWeightMatrix",
    infer=_mel_infer,
    inputs=("num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz"),
    attrs=[("output_type", "type")],
    cpu_only=True,
    host_inputs=(0, 1, 2, 3, 4),
)
def _mel(xp, num_mel_bins, dft_length, sample_rate, lower, upper, *, output_type):
    bins = _scalar_int(xp, num_mel_bins, "MelWeightMatrix num_mel_bins")
    n = _scalar_int(xp, dft_length, "MelWeightMatrix dft_length")
    rate = _scalar_int(xp, sample_rate, "MelWeightMatrix sample_rate")
    lo = float(np.asarray(lower).reshape(-1)[0])
    hi = float(np.asarray(upper).reshape(-1)[0])
    if not (0 < bins <= _MAX_MEL and 0 < n <= MAX_SIGNAL and rate > 0 and 0 <= lo <= hi):
        raise _bad(
            f"MelWeightMatrix: num_mel_bins {bins}, dft_length {n}, sample_rate {rate}, "
            f"edges [{lo}, {hi}]"
        )
    spectrogram_bins = n // 2 + 1
    low_mel = 2595 * np.log1p(lo / 700) / np.log(10)
    high_mel = 2595 * np.log1p(hi / 700) / np.log(10)
    step = (high_mel - low_mel) / (bins + 2)
    hz = 700 * np.expm1((np.arange(bins + 2) * step + low_mel) / 2595 * np.log(10))
    edges = (((n + 1) * hz) // rate).astype(np.int64)
    if edges.max() >= spectrogram_bins or edges.min() < 0:
        raise _bad("MelWeightMatrix: upper_edge_hertz lies past the spectrogram's bins")
    out = np.zeros((spectrogram_bins, bins))
    for i in range(bins):
        left, center, right = edges[i], edges[i + 1], edges[i + 2]
        if center == left:
            out[center, i] = 1
        else:
            j = np.arange(left, center + 1)
            out[j, i] = (j - left) / (center - left)
        if right > center:
            j = np.arange(center, right)
            out[j, i] = (right - j) / (right - center)
    return out.astype(output_type.as_numpy_dtype)


def _mel_convert(ctx, node):
    code = int(ctx.attr(node, "output_datatype", 1))
    dt = engine_dtype(code, "MelWeightMatrix output_datatype")
    if not dt.is_floating:
        raise UnsupportedModelError(f"MelWeightMatrix to {dt.name} (a float type expected)")
    ins = [ctx.input(node, i) for i in range(5)]
    return [create("OnnxMelWeightMatrix", ins, {"output_type": dt}).outputs[0]]


register("DFT", (17, 20), _dft_convert)
register("STFT", (17,), _stft_convert)
register("MelWeightMatrix", (17,), _mel_convert)
