"""ONNX-only engine ops, continued: scatter/gather forms, one-hot, hardmax, depth/space
layout, inverse trigonometry, eye, non-zero, compress, reverse-sequence, determinant.
Declared like those of ``ops.py`` (not differentiable, ``kernel(xp, *inputs, **attrs)``)."""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.formats.onnx.ops import (
    _bad,
    _host_ints,
    _normalized_indices,
    _onnx_op,
    _same,
    _unknown_like,
)
from engine.ops._common import ALL, FLOATS, check_dtype
from engine.tensor_shape import unknown_shape

__all__: list[str] = []

# -----------------------------------------------------------------------------------------
# Further ONNX-only operators: scatter/gather forms, one-hot, hardmax, layout, misc math
# -----------------------------------------------------------------------------------------

_UNARY_MATH = ("sinh", "cosh", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh")


@_onnx_op("OnnxUnaryMath", infer=_same, inputs=("x",), attrs=[("fn", "string")])
def _unary_math(xp, x, *, fn):
    if fn not in _UNARY_MATH:
        raise _bad(f"unknown function {fn!r}")
    return getattr(xp, fn)(x).astype(x.dtype)


def _like_input(op):
    return [(check_dtype(op, 0, ALL), op._inputs[0]._shape)]


@_onnx_op("OnnxHardmax", infer=_like_input, inputs=("x",), cpu_only=True, attrs=[("axis", "int")])
def _hardmax(xp, x, *, axis):
    axis %= x.ndim
    idx = xp.expand_dims(xp.argmax(x, axis=axis), axis)
    out = xp.zeros_like(x)
    xp.put_along_axis(out, idx, 1, axis=axis)
    return out


def _one_hot_infer(op):
    return [(check_dtype(op, 2, ALL), unknown_shape())]


@_onnx_op(
    "OnnxOneHot",
    infer=_one_hot_infer,
    inputs=("indices", "depth", "values"),
    attrs=[("axis", "int")],
)
def _one_hot(xp, indices, depth, values, *, axis):
    d = int(np.asarray(depth.get() if hasattr(depth, "get") else depth).reshape(-1)[0])
    if d < 1:
        raise _bad(f"OneHot: depth must be positive, got {d}")
    idx = indices.astype(np.int64)
    idx = xp.where(idx < 0, idx + d, idx)
    rank = idx.ndim + 1
    axis %= rank
    classes = xp.arange(d).reshape([d if i == axis else 1 for i in range(rank)])
    hot = xp.expand_dims(idx, axis) == classes
    off, on = values.reshape(-1)[0], values.reshape(-1)[1]
    return xp.where(hot, on, off).astype(values.dtype)


def _scatter_infer(op):
    return [(check_dtype(op, 0, ALL), op._inputs[0]._shape)]


def _reduce_into(xp, out, index, updates, reduction: str):
    if reduction == "none":
        out[index] = updates
    elif reduction == "add":
        xp.add.at(out, index, updates)
    elif reduction == "mul":
        xp.multiply.at(out, index, updates)
    elif reduction == "max":
        xp.maximum.at(out, index, updates)
    elif reduction == "min":
        xp.minimum.at(out, index, updates)
    else:
        raise _bad(f"unknown reduction {reduction!r}")


@_onnx_op(
    "OnnxScatterND",
    attrs=[("reduction", "string")],
    infer=_scatter_infer,
    inputs=("data", "indices", "updates"),
    cpu_only=True,
)
def _scatter_nd(xp, x, indices, updates, *, reduction):
    out = x.copy()
    k = indices.shape[-1]
    if k > x.ndim:
        raise _bad(f"ScatterND: index depth {k} exceeds the data rank {x.ndim}")
    flat = indices.reshape(-1, k).astype(np.int64)
    dims = xp.asarray(x.shape[:k])
    flat = xp.where(flat < 0, flat + dims, flat)
    if bool(((flat < 0) | (flat >= dims)).any()):
        raise _bad("ScatterND: index out of bounds")
    upd = updates.reshape((-1,) + x.shape[k:])
    if reduction == "none":
        for n in range(flat.shape[0]):
            out[tuple(int(v) for v in flat[n])] = upd[n]
    else:
        _reduce_into(xp, out, tuple(flat[:, j] for j in range(k)), upd, reduction)
    return out


@_onnx_op(
    "OnnxScatterElements",
    attrs=[("axis", "int"), ("reduction", "string")],
    infer=_scatter_infer,
    inputs=("data", "indices", "updates"),
    cpu_only=True,
)
def _scatter_elements(xp, x, indices, updates, *, axis, reduction):
    axis %= x.ndim
    idx = _normalized_indices(xp, indices.astype(np.int64), x.shape[axis], "ScatterElements")
    out = x.copy()
    grid = list(xp.indices(idx.shape, sparse=True))
    grid[axis] = idx
    _reduce_into(xp, out, tuple(grid), updates, reduction)
    return out


def _gather_nd_infer(op):
    return [(check_dtype(op, 0, ALL), unknown_shape())]


@_onnx_op(
    "OnnxGatherND",
    infer=_gather_nd_infer,
    inputs=("data", "indices"),
    attrs=[("batch_dims", "int")],
)
def _gather_nd(xp, x, indices, *, batch_dims):
    b = batch_dims
    k = indices.shape[-1]
    batch_shape = x.shape[:b]
    nb = int(np.prod(batch_shape, dtype=np.int64)) if b else 1
    xs = x.reshape((nb,) + x.shape[b:])
    ids = indices.reshape((nb, -1, k)).astype(np.int64)
    dims = xp.asarray(xs.shape[1 : 1 + k])
    ids = xp.where(ids < 0, ids + dims, ids)
    if bool(((ids < 0) | (ids >= dims)).any()):
        raise _bad("GatherND: index out of bounds")
    rows = xp.arange(nb).reshape(nb, 1)
    picked = xs[(rows,) + tuple(ids[..., j] for j in range(k))]
    return picked.reshape(indices.shape[:-1] + x.shape[b + k :])


@_onnx_op(
    "OnnxDepthToSpace",
    infer=_unknown_like(),
    inputs=("input",),
    attrs=[("blocksize", "int"), ("mode", "string"), ("inverse", "int")],
)
def _depth_to_space(xp, x, *, blocksize, mode, inverse):
    n, c, h, w = x.shape
    b = blocksize
    if inverse:  # SpaceToDepth
        if h % b or w % b:
            raise _bad(f"SpaceToDepth: spatial dims {h}x{w} not divisible by {b}")
        y = x.reshape(n, c, h // b, b, w // b, b)
        y = y.transpose(0, 3, 5, 1, 2, 4) if mode == "DCR" else y.transpose(0, 1, 3, 5, 2, 4)
        return y.reshape(n, c * b * b, h // b, w // b)
    if c % (b * b):
        raise _bad(f"DepthToSpace: {c} channels not divisible by {b * b}")
    if mode == "DCR":
        y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return y.reshape(n, c // (b * b), h * b, w * b)


def _eye_infer(op):
    return [(op._attrs["dtype"], op._inputs[0]._shape)]


@_onnx_op(
    "OnnxEyeLike", infer=_eye_infer, inputs=("input",), attrs=[("dtype", "type"), ("k", "int")]
)
def _eye_like(xp, x, *, dtype, k):
    if x.ndim != 2:
        raise _bad("EyeLike: input must be 2-D")
    return xp.eye(x.shape[0], x.shape[1], k=k, dtype=dtype.as_numpy_dtype)


def _nonzero_infer(op):
    check_dtype(op, 0, ALL)
    return [(dtypes.int64, unknown_shape(2))]


@_onnx_op("OnnxNonZero", infer=_nonzero_infer, inputs=("x",))
def _nonzero(xp, x):
    return (
        xp.stack(xp.nonzero(x.reshape(x.shape or (1,)) if x.ndim == 0 else x))
        .astype(np.int64)
        .reshape(max(x.ndim, 1), -1)
    )


@_onnx_op(
    "OnnxCompress", infer=_unknown_like(), inputs=("input", "condition"), attrs=[("axis", "int?")]
)
def _compress(xp, x, cond, *, axis):
    c = cond.astype(bool).reshape(-1)
    if axis is None:
        flat = x.reshape(-1)
        return flat[: c.shape[0]][c[: flat.shape[0]]]
    axis %= x.ndim
    n = min(c.shape[0], x.shape[axis])
    return xp.compress(c[:n], xp.take(x, xp.arange(n), axis=axis), axis=axis)


@_onnx_op(
    "OnnxReverseSequence",
    infer=_like_input,
    inputs=("input", "sequence_lens"),
    attrs=[("batch_axis", "int"), ("time_axis", "int")],
)
def _reverse_sequence(xp, x, lens, *, batch_axis, time_axis):
    out = x.copy()
    lens_h = _host_ints(xp, lens)
    for b, n in enumerate(lens_h):
        src = [slice(None)] * x.ndim
        src[batch_axis], src[time_axis] = b, slice(n - 1, None, -1) if n else slice(0, 0)
        dst = [slice(None)] * x.ndim
        dst[batch_axis], dst[time_axis] = b, slice(0, n)
        out[tuple(dst)] = x[tuple(src)]
    return out


def _det_infer(op):
    return [(check_dtype(op, 0, FLOATS), unknown_shape())]


@_onnx_op("OnnxDet", infer=_det_infer, inputs=("x",))
def _det(xp, x):
    return xp.asarray(xp.linalg.det(x)).astype(x.dtype)


# -----------------------------------------------------------------------------------------
# Attention (opset 23+): the reference algorithm, one op with its four outputs
# -----------------------------------------------------------------------------------------


def _attention_infer(op):
    d = check_dtype(op, 0, FLOATS)
    return [(d, unknown_shape())] * 4


def _window_allowed(xp, q: int, kv: int, offset, left: int, right: int, causal: bool):
    """[q, kv] (or [batch, 1, q, kv] for per-batch offsets) of allowed key positions."""
    i = xp.arange(q).reshape(q, 1)
    j = xp.arange(kv).reshape(1, kv)
    if getattr(offset, "ndim", 0):
        diff = (i + offset.reshape(-1, 1, 1)) - j
        diff = diff.reshape(diff.shape[0], 1, q, kv)
    else:
        diff = i + int(offset) - j
    allowed = xp.ones(diff.shape, dtype=bool)
    if causal:
        allowed &= diff >= 0
    if left >= 0:
        allowed &= diff <= left
    if right >= 0:
        allowed &= -diff <= right
    return allowed


def _to_heads(x, heads: int):
    b, s, h = x.shape
    return x.reshape(b, s, heads, h // heads).transpose(0, 2, 1, 3)


def _attention_bias(
    xp, q, k, mask, past_key, nonpad, has_mask, has_past, has_nonpad, causal, left, right
):
    """The additive [.., q, kv] bias: the mask (bool or float, padded to the keys), the
    causal and sliding-window frontiers (offset by the cache), and the padded-key mask."""
    dt = q.dtype
    nq, nkv = q.shape[2], k.shape[2]
    bias = xp.zeros((nq, nkv), dtype=dt)
    if has_mask:
        m = mask
        if m.shape[-1] < nkv:
            width = [(0, 0)] * (m.ndim - 1) + [(0, nkv - m.shape[-1])]
            m = xp.pad(m, width, constant_values=False if m.dtype == bool else -np.inf)
        if m.dtype == bool:
            m = xp.where(m, dt.type(0), dt.type(-np.inf))
        bias = bias + m.astype(dt)
    if has_nonpad and not has_past:
        offset = nonpad.reshape(-1) - nq
    else:
        offset = past_key.shape[2] if has_past else 0
    if causal or left >= 0 or right >= 0:
        allowed = _window_allowed(xp, nq, nkv, offset, left, right, causal)
        bias = bias + xp.where(allowed, dt.type(0), dt.type(-np.inf))
    if has_nonpad:
        keep = xp.arange(nkv) < nonpad.reshape(-1, 1)
        bias = bias + xp.where(keep, 0, -np.inf).astype(dt).reshape(-1, 1, 1, nkv)
    return bias


@_onnx_op(
    "OnnxAttention",
    infer=_attention_infer,
    inputs=("Q", "K", "V", "attn_mask", "past_key", "past_value", "nonpad_kv_seqlen"),
    attrs=[
        ("present", "list(int)"),
        ("scale", "float?"),
        ("is_causal", "int"),
        ("q_num_heads", "int?"),
        ("kv_num_heads", "int?"),
        ("softcap", "float?"),
        ("qk_matmul_output_mode", "int"),
        ("left_window_size", "int"),
        ("right_window_size", "int"),
        ("softmax_dtype", "type?"),
    ],
)
def _attention(
    xp,
    q,
    k,
    v,
    mask,
    past_key,
    past_value,
    nonpad,
    *,
    present,
    scale,
    is_causal,
    q_num_heads,
    kv_num_heads,
    softcap,
    qk_matmul_output_mode,
    left_window_size,
    right_window_size,
    softmax_dtype,
):
    """``present``: which optional inputs were given (mask, past_key, past_value, nonpad)."""
    has_mask, has_past, _, has_nonpad = (bool(p) for p in present)
    rank = q.ndim
    if rank == 3:
        if q_num_heads is None or kv_num_heads is None:
            raise _bad("Attention: 3-D inputs need q_num_heads and kv_num_heads")
        q, k, v = _to_heads(q, q_num_heads), _to_heads(k, kv_num_heads), _to_heads(v, kv_num_heads)
    dt = q.dtype
    s = dt.type(np.sqrt(scale if scale is not None else 1 / np.sqrt(q.shape[3])))
    if has_past:
        k = xp.concatenate([past_key, k], axis=2)
        v = xp.concatenate([past_value, v], axis=2)
    present_k, present_v = (k, v) if has_past else (k.copy(), v.copy())
    bias = _attention_bias(
        xp,
        q,
        k,
        mask,
        past_key,
        nonpad,
        has_mask,
        has_past,
        has_nonpad,
        bool(is_causal),
        left_window_size,
        right_window_size,
    )
    hq, hk = q.shape[1], k.shape[1]
    if hq != hk and hq % hk == 0:
        k, v = xp.repeat(k, hq // hk, axis=1), xp.repeat(v, hq // hk, axis=1)
    qk = xp.matmul(q * s, k.transpose(0, 1, 3, 2) * s)
    if softcap is not None and softcap > 0:
        qk = (xp.tanh(qk / softcap) * softcap).astype(dt)
    with_bias = qk + bias
    exposed = with_bias if qk_matmul_output_mode == 2 else qk
    if softmax_dtype is not None:
        with_bias = with_bias.astype(softmax_dtype.as_numpy_dtype)
    sd = with_bias.dtype
    top = xp.max(with_bias, axis=-1, keepdims=True)
    masked_row = xp.isneginf(top)
    e = xp.exp(with_bias - xp.where(masked_row, sd.type(0), top))
    total = e.sum(axis=-1, keepdims=True)
    probs = e / xp.where(total == 0, sd.type(1), total)
    all_masked = xp.isneginf(xp.max(bias, axis=-1, keepdims=True))
    probs = xp.where(all_masked, sd.type(0), probs)
    if qk_matmul_output_mode == 3:
        exposed = probs
    probs = probs.astype(dt)
    y = xp.matmul(probs, v)
    if rank == 3:
        y = y.transpose(0, 2, 1, 3).reshape(y.shape[0], y.shape[2], -1)
    return y, present_k, present_v, xp.asarray(exposed).astype(dt)


# -----------------------------------------------------------------------------------------
# Loss operators (evaluation of a model's loss output): NLL and softmax cross-entropy
# -----------------------------------------------------------------------------------------


def _loss_infer(op):
    check_dtype(op, 1, frozenset([dtypes.int32, dtypes.int64]))
    return [(check_dtype(op, 0, FLOATS), unknown_shape())]


def _nll(xp, x, target, weight, has_weight: bool, ignore_index, reduction: str):
    """ONNX NegativeLogLikelihoodLoss on log-probabilities ``x`` [N, C, d...]."""
    if x.ndim < 2:
        raise _bad("NegativeLogLikelihoodLoss: input must have rank at least 2")
    c = x.shape[1]
    t = target.astype(np.int64)
    ignored = (t == ignore_index) if ignore_index is not None else xp.zeros(t.shape, bool)
    safe = xp.where(ignored, 0, t)
    if bool(((safe < 0) | (safe >= c)).any()):
        raise _bad(f"NegativeLogLikelihoodLoss: target out of range [0, {c})")
    picked = xp.take_along_axis(x, xp.expand_dims(safe, 1), axis=1).squeeze(1)
    loss = xp.where(ignored, x.dtype.type(0), -picked)
    if has_weight:
        w = xp.where(ignored, x.dtype.type(0), weight[safe]).astype(x.dtype)
        loss = loss * w
        if reduction == "mean":
            return (loss.sum() / w.sum()).astype(x.dtype)
    elif ignore_index is not None and reduction == "mean":
        kept = (~ignored).sum()
        return (loss.sum() / xp.maximum(kept, 1) if kept else loss.sum() * 0).astype(x.dtype)
    if reduction == "mean":
        return loss.mean().astype(x.dtype)
    if reduction == "sum":
        return loss.sum().astype(x.dtype)
    return loss.astype(x.dtype)


@_onnx_op(
    "OnnxNLLLoss",
    infer=_loss_infer,
    inputs=("input", "target", "weight"),
    attrs=[("reduction", "string"), ("ignore_index", "int?"), ("has_weight", "int")],
)
def _nll_loss(xp, x, target, weight, *, reduction, ignore_index, has_weight):
    return _nll(xp, x, target, weight, bool(has_weight), ignore_index, reduction)


def _sce_infer(op):
    d = _loss_infer(op)[0][0]
    return [(d, unknown_shape()), (d, op._inputs[0]._shape)]


@_onnx_op(
    "OnnxSoftmaxCrossEntropyLoss",
    infer=_sce_infer,
    inputs=("scores", "labels", "weights"),
    attrs=[("reduction", "string"), ("ignore_index", "int?"), ("has_weight", "int")],
)
def _sce_loss(xp, x, labels, weight, *, reduction, ignore_index, has_weight):
    top = x.max(axis=1, keepdims=True)
    log_prob = (x - top) - xp.log(xp.exp(x - top).sum(axis=1, keepdims=True))
    log_prob = log_prob.astype(x.dtype)
    loss = _nll(xp, log_prob, labels, weight, bool(has_weight), ignore_index, reduction)
    return loss, log_prob
