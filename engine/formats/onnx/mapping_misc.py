"""Op-table rows for the remaining standard operators real exports use now and then:
GroupNormalization, LpPool and GlobalLpPool, Unique, the random generators (RandomNormal,
RandomUniform, their ``*Like`` forms, Bernoulli, Multinomial), the signal windows
(HannWindow, HammingWindow, BlackmanWindow), CenterCropPad and RotaryEmbedding. See
``mapping.py`` for the table.

Random operators draw from the engine's seeded generators: a ``seed`` attribute makes a run
repeatable, but the numbers are not onnxruntime's (no two runtimes share a generator)."""

from __future__ import annotations

import math

import numpy as np

from engine import dtypes
from engine.formats.onnx import ops_misc as _ops_misc  # noqa: F401 - registers OnnxUnique
from engine.formats.onnx.mapping import UnsupportedModelError, _const, converter_for, register
from engine.formats.onnx.tensors import engine_dtype
from engine.framework.graph import Tensor
from engine.ops import array as array_ops
from engine.ops import array_transform, random_more, reduction, slicing
from engine.ops import bitcast as bitcast_ops
from engine.ops import math as math_ops
from engine.ops import random as random_ops
from engine.ops._common import create

__all__: list[str] = []

_FLOAT = 1  # TensorProto.FLOAT


def _dtype(ctx, node, name: str, default: int):
    return engine_dtype(int(ctx.attr(node, name, default)), f"{node.get('op_type')} {name}")


# -----------------------------------------------------------------------------------------
# GroupNormalization
# -----------------------------------------------------------------------------------------


def _group_norm(ctx, node):
    x = ctx.input(node, 0)
    scale, bias = ctx.input(node, 1), ctx.input(node, 2)
    rank = ctx.rank(x, node)
    if rank < 3:
        raise UnsupportedModelError("GroupNormalization needs an input of rank >= 3 (N, C, ...)")
    groups = int(ctx.attr(node, "num_groups"))
    if groups < 1:
        raise UnsupportedModelError(f"GroupNormalization num_groups {groups} is not positive")
    eps = float(ctx.attr(node, "epsilon", 1e-5))
    per_channel = ctx.opset_of(node) >= 21
    dt = x.dtype.base_dtype
    # Opset 21's stash_type (default float) is the precision the statistics are taken in.
    stash = _dtype(ctx, node, "stash_type", _FLOAT) if per_channel else dt
    shape = array_ops.shape(x, out_type=dtypes.int64)
    grouped = array_ops.reshape(
        math_ops.cast(x, stash),
        array_transform.concat([shape[:1], _const([groups, -1], dtypes.int64)], axis=0),
    )
    mean = reduction.reduce_mean(grouped, axis=2, keepdims=True)
    centered = math_ops.subtract(grouped, mean)
    var = reduction.reduce_mean(math_ops.multiply(centered, centered), axis=2, keepdims=True)
    normed = math_ops.multiply(centered, math_ops.rsqrt(math_ops.add(var, _const(eps, stash))))
    normed = math_ops.cast(normed, dt)
    if per_channel:
        y = array_ops.reshape(normed, shape)
        tail = [1] * (rank - 2)
        y = math_ops.multiply(y, array_ops.reshape(scale, [-1] + tail))
        return [math_ops.add(y, array_ops.reshape(bias, [-1] + tail))]
    y = math_ops.add(
        math_ops.multiply(normed, array_ops.reshape(scale, [-1, 1])),
        array_ops.reshape(bias, [-1, 1]),
    )
    return [array_ops.reshape(y, shape)]


register("GroupNormalization", (18, 21), _group_norm)


# -----------------------------------------------------------------------------------------
# LpPool, GlobalLpPool: (sum of |x|^p over the window)^(1/p), padding counted as zeros
# -----------------------------------------------------------------------------------------


def _p(ctx, node) -> float:
    p = float(ctx.attr(node, "p", 2))
    if not p > 0:
        raise UnsupportedModelError(f"{node.get('op_type')} p={p}: expected a positive p")
    return p


def _powered(x: Tensor, p: float) -> Tensor:
    dt = x.dtype.base_dtype
    a = math_ops.abs(x)
    return math_ops.multiply(a, a) if p == 2 else math_ops.pow(a, _const(p, dt))


def _root(s: Tensor, p: float) -> Tensor:
    return math_ops.sqrt(s) if p == 2 else math_ops.pow(s, _const(1.0 / p, s.dtype.base_dtype))


def _lp_pool(ctx, node):
    x = ctx.input(node, 0)
    if not x.dtype.base_dtype.is_floating:
        raise UnsupportedModelError("LpPool takes floating-point input")
    p = _p(ctx, node)
    kernel = [int(k) for k in ctx.attr(node, "kernel_shape")]
    # The window sum is an average pool that counts the (zero) padding, times the window.
    name = f"{node.get('output', ['lp'])[0]}__lp_powered"
    ctx.values[name] = _powered(x, p)
    attrs = [a for a in node.get("attribute", []) if a.get("name") != "p"]
    attrs.append({"name": "count_include_pad", "type": 2, "i": 1})
    avg = {"op_type": "AveragePool", "input": [name], "output": node["output"], "attribute": attrs}
    opset = max(ctx.opset_of(node), 11)
    (mean,) = converter_for("AveragePool", opset)(ctx, dict(avg, _opset=opset))[:1]
    total = math_ops.multiply(mean, _const(float(math.prod(kernel)), mean.dtype.base_dtype))
    return [_root(total, p)]


def _global_lp_pool(ctx, node):
    x = ctx.input(node, 0)
    rank = ctx.rank(x, node)
    if rank < 3:
        raise UnsupportedModelError("GlobalLpPool needs an input of rank >= 3 (N, C, ...)")
    p = _p(ctx, node)
    total = reduction.reduce_sum(_powered(x, p), axis=list(range(2, rank)), keepdims=True)
    return [_root(total, p)]


register("LpPool", (1, 2, 11, 18, 22), _lp_pool)
register("GlobalLpPool", (1, 2, 22), _global_lp_pool)


# -----------------------------------------------------------------------------------------
# Unique
# -----------------------------------------------------------------------------------------


def _unique(ctx, node):
    x = ctx.input(node, 0)
    axis = ctx.attr(node, "axis", None)
    if axis is not None:
        rank = ctx.rank(x, node)
        if not -rank <= int(axis) < rank:
            raise UnsupportedModelError(f"Unique axis {axis} is out of range for rank {rank}")
        axis = int(axis) % rank
    attrs = {"axis": -1 if axis is None else axis, "sorted": int(ctx.attr(node, "sorted", 1))}
    return list(create("OnnxUnique", [x], attrs).outputs)


register("Unique", (11, 28), _unique)


# -----------------------------------------------------------------------------------------
# Random generators
# -----------------------------------------------------------------------------------------


def _seed(ctx, node):
    seed = ctx.attr(node, "seed", None)
    # ONNX seeds are floats; the engine's op seeds are ints.
    return None if seed is None else int(np.float32(seed).view(np.int32)) & 0x7FFFFFFF


def _random(kind: str, like: bool):
    def convert(ctx, node):
        if like:
            src = ctx.input(node, 0)
            shape = array_ops.shape(src, out_type=dtypes.int64)
            dt = (
                _dtype(ctx, node, "dtype", _FLOAT)
                if ctx.attr(node, "dtype", None) is not None
                else src.dtype.base_dtype
            )
        else:
            shape = _const([int(d) for d in ctx.attr(node, "shape")], dtypes.int64)
            dt = _dtype(ctx, node, "dtype", _FLOAT)
        if not dt.is_floating:
            raise UnsupportedModelError(f"{node.get('op_type')} dtype {dt.name}: expected a float")
        seed = _seed(ctx, node)
        if kind == "normal":
            mean, scale = float(ctx.attr(node, "mean", 0.0)), float(ctx.attr(node, "scale", 1.0))
            return [random_ops.random_normal(shape, mean, scale, dtype=dt, seed=seed)]
        low, high = float(ctx.attr(node, "low", 0.0)), float(ctx.attr(node, "high", 1.0))
        return [random_ops.random_uniform(shape, low, high, dtype=dt, seed=seed)]

    return convert


def _bernoulli(ctx, node):
    p = ctx.input(node, 0)
    pdt = p.dtype.base_dtype
    dt = _dtype(ctx, node, "dtype", 0) if ctx.attr(node, "dtype", None) is not None else pdt
    shape = array_ops.shape(p, out_type=dtypes.int64)
    u = random_ops.random_uniform(shape, dtype=pdt, seed=_seed(ctx, node))
    return [math_ops.cast(math_ops.less(u, p), dt)]


def _multinomial(ctx, node):
    logits = ctx.input(node, 0)
    if ctx.rank(logits, node) != 2:
        raise UnsupportedModelError("Multinomial takes 2-D input [batch, classes]")
    n = int(ctx.attr(node, "sample_size", 1))
    dt = _dtype(ctx, node, "dtype", 6)  # int32
    if dt not in (dtypes.int32, dtypes.int64):
        raise UnsupportedModelError(f"Multinomial dtype {dt.name}: expected int32 or int64")
    return [random_more.multinomial(logits, n, seed=_seed(ctx, node), output_dtype=dt)]


register("RandomNormal", (1, 22), _random("normal", like=False))
register("RandomUniform", (1, 22), _random("uniform", like=False))
register("RandomNormalLike", (1, 22), _random("normal", like=True))
register("RandomUniformLike", (1, 22), _random("uniform", like=True))
register("Bernoulli", (15, 22), _bernoulli)
register("Multinomial", (7, 22), _multinomial)


# -----------------------------------------------------------------------------------------
# Signal windows: sums of cosines of 2*pi*n/N (N = size when periodic, size - 1 when not)
# -----------------------------------------------------------------------------------------

_WINDOWS = {
    "HannWindow": (0.5, -0.5, 0.0),
    "HammingWindow": (25.0 / 46.0, -(1.0 - 25.0 / 46.0), 0.0),
    "BlackmanWindow": (0.42, -0.5, 0.08),
}


def _window(ctx, node):
    a0, a1, a2 = _WINDOWS[node["op_type"]]
    size = math_ops.cast(array_ops.reshape(ctx.input(node, 0), []), dtypes.float64)
    periodic = bool(ctx.attr(node, "periodic", 1))
    denom = size if periodic else math_ops.subtract(size, _const(1.0, dtypes.float64))
    n = array_ops.range(_const(0.0, dtypes.float64), size, _const(1.0, dtypes.float64))
    angle = math_ops.realdiv(math_ops.multiply(n, _const(2 * math.pi, dtypes.float64)), denom)
    w = math_ops.add(
        _const(a0, dtypes.float64),
        math_ops.multiply(_const(a1, dtypes.float64), math_ops.cos(angle)),
    )
    if a2:
        two = math_ops.cos(math_ops.multiply(angle, _const(2.0, dtypes.float64)))
        w = math_ops.add(w, math_ops.multiply(_const(a2, dtypes.float64), two))
    return [math_ops.cast(w, _dtype(ctx, node, "output_datatype", _FLOAT))]


for _name in _WINDOWS:
    register(_name, (17,), _window)


# -----------------------------------------------------------------------------------------
# CenterCropPad
# -----------------------------------------------------------------------------------------


def _center_crop_pad(ctx, node):
    x = ctx.input(node, 0)
    rank = ctx.rank(x, node)
    target = math_ops.cast(ctx.input(node, 1), dtypes.int64)
    axes = [int(a) for a in ctx.attr(node, "axes", list(range(rank)))]
    if any(not -rank <= a < rank for a in axes) or len({a % rank for a in axes}) != len(axes):
        raise UnsupportedModelError(
            f"CenterCropPad axes {axes} are not distinct axes of rank {rank}"
        )
    axes = [a % rank for a in axes]
    have = array_ops.shape(x, out_type=dtypes.int64)
    zero = _const(0, dtypes.int64)
    two = _const(2, dtypes.int64)
    begin, size, pads = [], [], []
    for a in range(rank):
        if a not in axes:
            begin.append(zero)
            size.append(_const(-1, dtypes.int64))
            pads.append(_const([0, 0], dtypes.int64))
            continue
        # A negative target is an empty axis, as onnxruntime computes it.
        d, t = have[a], math_ops.maximum(target[axes.index(a)], zero)
        crop = math_ops.maximum(math_ops.subtract(d, t), zero)
        begin.append(math_ops.floordiv(crop, two))
        size.append(math_ops.minimum(d, t))
        pad = math_ops.maximum(math_ops.subtract(t, d), zero)
        before = math_ops.floordiv(pad, two)
        pads.append(array_transform.stack([before, math_ops.subtract(pad, before)]))
    cropped = slicing.slice(x, array_transform.stack(begin), array_transform.stack(size))
    return [array_transform.pad(cropped, array_transform.stack(pads))]


register("CenterCropPad", (18,), _center_crop_pad)


# -----------------------------------------------------------------------------------------
# RotaryEmbedding (opset 23)
# -----------------------------------------------------------------------------------------


def _rotary_embedding(ctx, node):
    positions = ctx.optional(node, 3)
    attrs = {
        "interleaved": int(ctx.attr(node, "interleaved", 0)),
        "rotary_embedding_dim": int(ctx.attr(node, "rotary_embedding_dim", 0)),
        "num_heads": int(ctx.attr(node, "num_heads", 0)),
        "has_positions": int(positions is not None),
    }
    if attrs["rotary_embedding_dim"] < 0 or attrs["num_heads"] < 0:
        raise UnsupportedModelError(
            f"RotaryEmbedding with rotary_embedding_dim {attrs['rotary_embedding_dim']} and "
            f"num_heads {attrs['num_heads']}: expected non-negative values"
        )
    if positions is None:
        positions = _const(np.zeros(0, np.int64), dtypes.int64)
    ins = [ctx.input(node, 0), ctx.input(node, 1), ctx.input(node, 2), positions]
    return list(create("OnnxRotaryEmbedding", ins, attrs).outputs)


register("RotaryEmbedding", (23,), _rotary_embedding)


# -----------------------------------------------------------------------------------------
# GridSample
# -----------------------------------------------------------------------------------------

_GRID_MODES = {
    "bilinear": "linear",
    "bicubic": "cubic",
    "linear": "linear",
    "cubic": "cubic",
    "nearest": "nearest",
}


def _grid_sample(ctx, node):
    x, grid = ctx.input(node, 0), ctx.input(node, 1)
    mode = _text(ctx.attr(node, "mode", "linear" if ctx.opset_of(node) >= 20 else "bilinear"))
    padding = _text(ctx.attr(node, "padding_mode", "zeros"))
    if mode not in _GRID_MODES:
        raise UnsupportedModelError(f"GridSample mode {mode!r} (linear, nearest or cubic)")
    if padding not in ("zeros", "border", "reflection"):
        raise UnsupportedModelError(f"GridSample padding_mode {padding!r}")
    rank = ctx.rank(x, node)
    if ctx.opset_of(node) < 20 and rank != 4:
        raise UnsupportedModelError(f"GridSample-16 takes 4-D input, got rank {rank}")
    if not 3 <= rank <= 5:
        raise UnsupportedModelError(f"GridSample on rank {rank} input (3 to 5 run)")
    attrs = {
        "mode": _GRID_MODES[mode],
        "padding_mode": padding,
        "align_corners": int(ctx.attr(node, "align_corners", 0)),
    }
    return [create("OnnxGridSample", [x, grid], attrs).outputs[0]]


def _text(v) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


register("GridSample", (16, 20, 22), _grid_sample)


# -----------------------------------------------------------------------------------------
# BitCast (opset 26): the bytes as another type of the same width
# -----------------------------------------------------------------------------------------


def _bitcast(ctx, node):
    x = ctx.input(node, 0)
    to = _dtype(ctx, node, "to", _FLOAT)
    src = x.dtype.base_dtype
    if src == dtypes.string or to == dtypes.string:
        raise UnsupportedModelError(f"BitCast from {src.name} to {to.name}")
    if src.size != to.size:
        raise UnsupportedModelError(
            f"BitCast from {src.name} ({src.size * 8} bits) to {to.name} ({to.size * 8} bits): "
            "the widths must be equal"
        )
    # bool is one byte holding 0 or 1: through uint8 (any nonzero byte reads as true).
    if src == dtypes.bool:
        x, src = math_ops.cast(x, dtypes.uint8), dtypes.uint8
    if to == dtypes.bool:
        raw = bitcast_ops.bitcast(x, dtypes.uint8) if src != dtypes.uint8 else x
        return [math_ops.not_equal(raw, _const(0, dtypes.uint8))]
    return [x if src == to else bitcast_ops.bitcast(x, to)]


register("BitCast", (26,), _bitcast)
