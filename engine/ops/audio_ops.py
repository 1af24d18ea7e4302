"""Audio ops as TF's CPU kernels compute them: ``DecodeWav``/``EncodeWav`` (16-bit PCM WAV),
``AudioSpectrogram`` (periodic-Hann windows, a power-of-two FFT) and ``Mfcc`` (TF's mel
filterbank over the square root of a squared-magnitude spectrogram, log, DCT-II). TF's
speech-commands models (``conv_actions_frozen.pb``) take WAV bytes through these four.

WAV bytes are untrusted: every chunk size is checked against the data before it is read;
a malformed file is an ``InvalidArgumentError`` naming the problem."""

from __future__ import annotations

import struct

import numpy as np

from engine import dtypes
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.registry import Attr, OpFlags, ShapeError, op
from engine.ops._common import base, create
from engine.ops.array import _invalid
from engine.tensor_shape import TensorShape

__all__ = ["decode_wav", "encode_wav", "audio_spectrogram", "mfcc"]

_CPU = OpFlags(device_types=("CPU",))
_SKIPPED_BEFORE_FMT = {b"JUNK", b"bext", b"iXML", b"qlty", b"mext", b"levl", b"link", b"axml"}


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise _invalid("Data too short when trying to read string")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def u16(self) -> int:
        return struct.unpack("<H", self.take(2))[0]

    def u32(self) -> int:
        return struct.unpack("<I", self.take(4))[0]


def _parse_wav(data: bytes) -> tuple[np.ndarray, int]:
    """(samples [frames, channels] float32, sample rate) of a 16-bit PCM WAV."""
    r = _Reader(data)
    for want in (b"RIFF", None, b"WAVE"):
        got = r.take(4)
        if want is not None and got != want:
            raise _invalid(f"Header mismatch: Expected {want.decode()} but found {got!r}")
    chunk = r.take(4)
    while chunk != b"fmt ":
        if chunk not in _SKIPPED_BEFORE_FMT:
            raise _invalid(f"Unexpected field {chunk!r}")
        r.take(r.u32())
        chunk = r.take(4)
    size = r.u32()
    if size not in (16, 18):
        raise _invalid(f"Bad format chunk size for WAV: Expected 16 or 18, but got {size}")
    if (fmt := r.u16()) != 1:
        raise _invalid(f"Bad audio format for WAV: Expected 1 (PCM), but got {fmt}")
    channels = r.u16()
    if channels < 1:
        raise _invalid(f"Bad number of channels for WAV: Expected at least 1, but got {channels}")
    rate, per_second, per_frame, bits = r.u32(), r.u32(), r.u16(), r.u16()
    if bits != 16:
        raise _invalid(f"Can only read 16-bit WAV files, but received {bits}")
    if per_frame != 2 * channels:
        raise _invalid(f"Bad bytes per sample in WAV header: Expected {2 * channels}")
    if per_second != per_frame * rate:
        raise _invalid(f"Bad bytes per second in WAV header: Expected {per_frame * rate}")
    if size == 18:
        r.take(2)
    samples = None
    while r.pos < len(data):
        chunk_id, chunk_size = r.take(4), r.u32()
        if chunk_size > 0x7FFFFFFF:
            raise _invalid(f"WAV data chunk {chunk_id!r} is too large: {chunk_size} bytes")
        if chunk_id == b"data":
            if samples is not None:
                raise _invalid("More than one data chunk found in WAV")
            frames = chunk_size // per_frame
            raw = r.take(2 * frames * channels)
            samples = np.frombuffer(raw, "<i2").astype(np.float32) / np.float32(32768)
            samples = samples.reshape(frames, channels)
        else:
            r.pos = min(r.pos + chunk_size, len(data))
    if samples is None:
        raise _invalid("No data chunk found in WAV")
    return samples, rate


def _decode_wav_infer(o):
    if base(o._inputs[0]) is not dtypes.string:
        raise TypeError("DecodeWav takes a string (the WAV file's bytes)")
    if o._inputs[0]._shape.rank not in (None, 0):
        raise ShapeError("contents must be a scalar string")
    samples = o._attrs["desired_samples"]
    chans = o._attrs["desired_channels"]
    shape = TensorShape([None if samples == -1 else samples, None if chans == -1 else chans])
    return [(dtypes.float32, shape), (dtypes.int32, TensorShape([]))]


@op(
    "DecodeWav",
    infer=_decode_wav_infer,
    differentiable=False,
    inputs=("contents",),
    attrs=(Attr("desired_channels", "int", default=-1), Attr("desired_samples", "int", default=-1)),
    flags=_CPU,
)
def _decode_wav(xp, contents, *, desired_channels=-1, desired_samples=-1):
    data = contents.item() if isinstance(contents, np.ndarray) else contents
    samples, rate = _parse_wav(bytes(data))
    frames, channels = samples.shape
    want_frames = frames if desired_samples == -1 else desired_samples
    want_channels = channels if desired_channels == -1 else desired_channels
    if want_frames < 0 or want_channels < 0:
        raise _invalid("desired_samples and desired_channels must be -1 or non-negative")
    out = np.zeros((want_frames, want_channels), np.float32)
    take = min(frames, want_frames)
    source = np.minimum(np.arange(want_channels), channels - 1)  # extra channels repeat the last
    out[:take] = samples[:take][:, source]
    return out, np.int32(rate)


def _encode_wav_infer(o):
    if o._inputs[0]._shape.rank not in (None, 2):
        raise ShapeError("audio must be [samples, channels]")
    return [(dtypes.string, TensorShape([]))]


@op(
    "EncodeWav",
    infer=_encode_wav_infer,
    differentiable=False,
    inputs=("audio", "sample_rate"),
    flags=_CPU,
)
def _encode_wav(xp, audio, sample_rate):
    audio = np.asarray(audio, np.float32)
    if audio.ndim != 2:
        raise _invalid(f"audio must be 2-dimensional, got shape {list(audio.shape)}")
    rate, channels = int(sample_rate), audio.shape[1]
    if not 0 < rate < 2**32 or not 0 < channels < 2**16:
        raise _invalid(f"sample_rate and channels out of range: {rate}, {channels}")
    pcm = np.clip(np.round(audio * np.float32(32768)), -32768, 32767).astype("<i2").tobytes()
    header = struct.pack(
        "<4sI4s4sIHHIIHH4sI",
        b"RIFF",
        36 + len(pcm),
        b"WAVE",
        b"fmt ",
        16,
        1,
        channels,
        rate,
        rate * 2 * channels,
        2 * channels,
        16,
        b"data",
        len(pcm),
    )
    return np.array(header + pcm, dtype=object)


def _spectrogram_infer(o):
    x = o._inputs[0]
    if x._shape.rank not in (None, 2):
        raise ShapeError("input must be 2-dimensional [samples, channels]")
    window, stride = o._attrs["window_size"], o._attrs["stride"]
    if window < 2 or stride < 1:
        raise ShapeError(f"window_size must be > 1 and stride > 0, got {window} and {stride}")
    fft = 1 << (window - 1).bit_length()
    dims = x._shape.as_tuple() or (None, None)
    samples, channels = dims
    frames = (
        None if samples is None else (0 if samples < window else 1 + (samples - window) // stride)
    )
    return [(dtypes.float32, TensorShape([channels, frames, fft // 2 + 1]))]


@op(
    "AudioSpectrogram",
    infer=_spectrogram_infer,
    differentiable=False,
    inputs=("input",),
    attrs=(
        Attr("window_size", "int"),
        Attr("stride", "int"),
        Attr("magnitude_squared", "bool", default=False),
    ),
    flags=_CPU,
)
def _audio_spectrogram(xp, x, *, window_size, stride, magnitude_squared=False):
    x = np.asarray(x, np.float32)
    if x.ndim != 2:
        raise _invalid(f"input must be 2-dimensional, got shape {list(x.shape)}")
    samples, channels = x.shape
    fft = 1 << (window_size - 1).bit_length()
    frames = 0 if samples < window_size else 1 + (samples - window_size) // stride
    hann = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(window_size) / window_size)
    starts = np.arange(frames) * stride
    windows = x.T.astype(np.float64)[:, starts[:, None] + np.arange(window_size)] * hann
    spectrum = np.fft.rfft(windows, n=fft, axis=-1)
    power = (spectrum.real**2 + spectrum.imag**2).astype(np.float32)
    return power if magnitude_squared else np.sqrt(power)


def _mel_weights(bins: int, rate: float, channels: int, lower: float, upper: float):
    """TF's mel filterbank: (start bin, end bin, channel of each bin, weight of each bin)."""
    if channels < 1 or rate <= 0 or bins < 2 or lower < 0 or upper <= lower:
        raise _invalid(
            f"bad Mfcc parameters: filterbank_channel_count={channels}, sample_rate={rate}, "
            f"spectrogram bins={bins}, frequency limits [{lower}, {upper}]"
        )

    def mel(f):
        return 1127.0 * np.log1p(np.asarray(f, np.float64) / 700.0)

    lo = mel(lower)
    centers = lo + (mel(upper) - lo) / (channels + 1) * np.arange(1, channels + 2)
    hz_per_bin = 0.5 * rate / (bins - 1)
    start, end = int(1.5 + lower / hz_per_bin), int(upper / hz_per_bin)
    mapper = np.full(bins, -2, np.int64)
    weights = np.zeros(bins, np.float64)
    channel = 0
    for i in range(start, min(end, bins - 1) + 1):
        f = mel(i * hz_per_bin)
        while channel < channels and centers[channel] < f:
            channel += 1
        c = channel - 1
        mapper[i] = c
        if c >= 0:
            weights[i] = (centers[c + 1] - f) / (centers[c + 1] - centers[c])
        else:
            weights[i] = (centers[0] - f) / (centers[0] - lo)
    return start, end, mapper, weights


def _mfcc_infer(o):
    s = o._inputs[0]
    if s._shape.rank not in (None, 3):
        raise ShapeError("spectrogram must be 3-dimensional [channels, frames, bins]")
    dims = s._shape.as_tuple() or (None, None, None)
    return [(dtypes.float32, TensorShape([dims[0], dims[1], o._attrs["dct_coefficient_count"]]))]


@op(
    "Mfcc",
    infer=_mfcc_infer,
    differentiable=False,
    inputs=("spectrogram", "sample_rate"),
    attrs=(
        Attr("upper_frequency_limit", "float", default=4000.0),
        Attr("lower_frequency_limit", "float", default=20.0),
        Attr("filterbank_channel_count", "int", default=40),
        Attr("dct_coefficient_count", "int", default=13),
    ),
    flags=_CPU,
)
def _mfcc(
    xp,
    spectrogram,
    sample_rate,
    *,
    upper_frequency_limit=4000.0,
    lower_frequency_limit=20.0,
    filterbank_channel_count=40,
    dct_coefficient_count=13,
):
    spec = np.asarray(spectrogram, np.float64)
    if spec.ndim != 3:
        raise _invalid(f"spectrogram must be 3-dimensional, got shape {list(spec.shape)}")
    n, dct = filterbank_channel_count, dct_coefficient_count
    if not 1 <= dct <= n:
        raise _invalid(f"dct_coefficient_count must be in [1, {n}], got {dct}")
    start, end, mapper, weights = _mel_weights(
        spec.shape[-1], float(sample_rate), n, lower_frequency_limit, upper_frequency_limit
    )
    if spec.shape[-1] <= end:
        raise _invalid("Input too short to compute filterbank")
    # each bin adds weight * magnitude to its channel, the rest to the next channel
    right = np.zeros((spec.shape[-1], n))
    for i in range(start, end + 1):
        c = mapper[i]
        if c >= 0:
            right[i, c] += weights[i]
        if c + 1 < n:
            right[i, c + 1] += 1.0 - weights[i]
    bank = np.sqrt(spec) @ right
    logs = np.log(np.maximum(bank, 1e-12))
    k = np.arange(dct)[:, None] * (np.pi / n) * (np.arange(n)[None, :] + 0.5)
    cosines = np.sqrt(2.0 / n) * np.cos(k)
    return (logs @ cosines.T).astype(np.float32)


# -- Python API (TF's tf.audio and the speech-commands tutorial's contrib_audio) -------------


def decode_wav(contents, desired_channels=-1, desired_samples=-1, name=None):
    """``(audio [samples, channels] float32 in [-1, 1), sample_rate int32)``."""
    with name_scope(name, "DecodeWav", [contents]) as scope:
        c = convert_to_tensor(contents, dtype=dtypes.string, name="contents")
        attrs = {"desired_channels": int(desired_channels), "desired_samples": int(desired_samples)}
        a, r = create("DecodeWav", [c], attrs, scope).outputs
        return _DecodeWavResult(a, r)


class _DecodeWavResult(tuple):
    """TF's ``DecodeWav`` namedtuple: ``.audio`` and ``.sample_rate``."""

    def __new__(cls, audio, sample_rate):
        return super().__new__(cls, (audio, sample_rate))

    @property
    def audio(self) -> Tensor:
        return self[0]

    @property
    def sample_rate(self) -> Tensor:
        return self[1]


def encode_wav(audio, sample_rate, name=None) -> Tensor:
    """16-bit PCM WAV bytes of ``audio`` ([samples, channels] floats in [-1, 1])."""
    with name_scope(name, "EncodeWav", [audio, sample_rate]) as scope:
        a = convert_to_tensor(audio, dtype=dtypes.float32, name="audio")
        r = convert_to_tensor(sample_rate, dtype=dtypes.int32, name="sample_rate")
        return create("EncodeWav", [a, r], {}, scope).outputs[0]


def audio_spectrogram(input, window_size, stride, magnitude_squared=False, name=None):  # noqa: A002
    """[channels, frames, fft_length / 2 + 1] magnitudes (or their squares)."""
    with name_scope(name, "AudioSpectrogram", [input]) as scope:
        x = convert_to_tensor(input, dtype=dtypes.float32, name="input")
        attrs = {
            "window_size": int(window_size),
            "stride": int(stride),
            "magnitude_squared": bool(magnitude_squared),
        }
        return create("AudioSpectrogram", [x], attrs, scope).outputs[0]


def mfcc(
    spectrogram,
    sample_rate,
    upper_frequency_limit=4000,
    lower_frequency_limit=20,
    filterbank_channel_count=40,
    dct_coefficient_count=13,
    name=None,
) -> Tensor:
    """Mel-frequency cepstral coefficients of a squared-magnitude spectrogram."""
    with name_scope(name, "Mfcc", [spectrogram, sample_rate]) as scope:
        s = convert_to_tensor(spectrogram, dtype=dtypes.float32, name="spectrogram")
        r = convert_to_tensor(sample_rate, dtype=dtypes.int32, name="sample_rate")
        attrs = {
            "upper_frequency_limit": float(upper_frequency_limit),
            "lower_frequency_limit": float(lower_frequency_limit),
            "filterbank_channel_count": int(filterbank_channel_count),
            "dct_coefficient_count": int(dct_coefficient_count),
        }
        return create("Mfcc", [s, r], attrs, scope).outputs[0]
