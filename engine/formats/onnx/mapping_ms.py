"""Op-table rows for onnxruntime's own operators (domain ``com.microsoft``, opset 1) that the
models users already have contain: onnxruntime's transformer optimizer writes ``Attention``,
``EmbedLayerNormalization``, ``SkipLayerNormalization``, ``FastGelu``/``BiasGelu``,
``FusedMatMul``; its graph optimizations saved with the model write ``FusedConv`` and
``FusedGemm``; LLaMA-style exports carry ``SimplifiedLayerNormalization`` (registered by
onnxruntime in the default domain, version 1) and ``SkipSimplifiedLayerNormalization``.

Semantics follow onnxruntime's CPU kernels, which the tests run side by side. Forms that
need onnxruntime's key/value caches (``past``/``present`` of ``Attention``, the past inputs of
``MultiHeadAttention``) or its rotary embeddings are refused by name."""

from __future__ import annotations

import math

import numpy as np

from engine.formats.onnx import _tf as tf
from engine.formats.onnx.mapping import (
    TABLES,
    UnsupportedModelError,
    _const,
    _erf,
    _scalar,
    converter_for,
    register,
)
from engine.framework.graph import Tensor
from engine.ops._common import create

__all__ = ["MS_DOMAIN", "ORT_DEFAULT_DOMAIN_OPS"]

MS_DOMAIN = "com.microsoft"
# onnxruntime's operators it registers in the default domain (not ONNX's).
ORT_DEFAULT_DOMAIN_OPS = frozenset({"SimplifiedLayerNormalization"})
TABLES.setdefault(MS_DOMAIN, ({}, {}))


def _ms(op_type: str, fn) -> None:
    register(op_type, (1,), fn, domain=MS_DOMAIN)


def _where(node: dict) -> str:
    return f"{node.get('op_type')} node {node.get('name', '')!r}"


# -----------------------------------------------------------------------------------------
# Activations
# -----------------------------------------------------------------------------------------


def _erf_gelu(x: Tensor) -> Tensor:
    half = _const(0.5, x.dtype.base_dtype)
    e = _erf(tf.multiply(x, _const(1 / math.sqrt(2), x.dtype.base_dtype)))
    return tf.multiply(tf.multiply(half, x), tf.add(_const(1.0, x.dtype.base_dtype), e))


def _gelu(ctx, node):
    return [_erf_gelu(ctx.input(node, 0))]


def _bias_gelu(ctx, node):
    return [_erf_gelu(tf.add(ctx.input(node, 0), ctx.input(node, 1)))]


def _fast_gelu(ctx, node):
    x = ctx.input(node, 0)
    bias = ctx.optional(node, 1)
    if bias is not None:
        x = tf.add(x, bias)
    dt = x.dtype.base_dtype
    cube = tf.multiply(_const(0.044715, dt), tf.multiply(x, tf.multiply(x, x)))
    inner = tf.multiply(_const(math.sqrt(2 / math.pi), dt), tf.add(x, cube))
    return [tf.multiply(tf.multiply(_const(0.5, dt), x), tf.add(_const(1.0, dt), tf.tanh(inner)))]


def _quick_gelu(ctx, node):
    x = ctx.input(node, 0)
    alpha = float(ctx.attr(node, "alpha", 1.702))
    return [tf.multiply(x, tf.sigmoid(tf.multiply(x, _scalar(ctx, x, alpha))))]


def _bias_add(ctx, node):
    x = tf.add(ctx.input(node, 0), ctx.input(node, 1))
    return [tf.add(x, ctx.input(node, 2))]


def _activation(x: Tensor, name: str, params: list, node: dict) -> Tensor:
    """FusedConv/FusedGemm's trailing activation, with onnxruntime's parameter order."""
    dt = x.dtype.base_dtype
    p = [float(v) for v in params]
    if name == "Relu":
        return tf.maximum(x, _const(0.0, dt))
    if name == "Tanh":
        return tf.tanh(x)
    if name == "Sigmoid":
        return tf.sigmoid(x)
    if name == "LeakyRelu":
        alpha = _const(p[0] if p else 0.01, dt)
        return tf.where_v2(tf.greater_equal(x, _const(0.0, dt)), x, tf.multiply(alpha, x))
    if name == "Clip" and len(p) == 2:
        return tf.minimum(tf.maximum(x, _const(p[0], dt)), _const(p[1], dt))
    if name == "HardSigmoid":
        alpha, beta = (p + [0.2, 0.5][len(p) :])[:2]
        y = tf.add(tf.multiply(x, _const(alpha, dt)), _const(beta, dt))
        return tf.minimum(tf.maximum(y, _const(0.0, dt)), _const(1.0, dt))
    raise UnsupportedModelError(
        f"{_where(node)}: activation {name!r} with parameters {p} is not supported (expected "
        "Relu, Tanh, Sigmoid, LeakyRelu, Clip [min, max] or HardSigmoid)"
    )


def _text(v) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def _fused_conv(ctx, node):
    attrs = [
        a
        for a in node.get("attribute", [])
        if a.get("name") not in ("activation", "activation_params")
    ]
    conv = dict(node, op_type="Conv", domain="", attribute=attrs, input=node["input"][:3])
    conv.pop("_attrs", None)
    conv["_opset"] = 11
    (y,) = converter_for("Conv", 11)(ctx, conv)[:1]
    z = ctx.optional(node, 3)
    if z is not None:
        y = tf.add(y, z)
    name = ctx.attr(node, "activation", None)
    if name is None:
        return [y]
    return [_activation(y, _text(name), list(ctx.attr(node, "activation_params", [])), node)]


def _fused_gemm(ctx, node):
    a, b = ctx.input(node, 0), ctx.input(node, 1)
    ta, tb = bool(ctx.attr(node, "transA", 0)), bool(ctx.attr(node, "transB", 0))
    y = tf.matmul(a, b, transpose_a=ta, transpose_b=tb)
    alpha, beta = float(ctx.attr(node, "alpha", 1.0)), float(ctx.attr(node, "beta", 1.0))
    if alpha != 1.0:
        y = tf.multiply(y, _scalar(ctx, y, alpha))
    c = ctx.optional(node, 2)
    if c is not None:
        y = tf.add(y, c if beta == 1.0 else tf.multiply(c, _scalar(ctx, c, beta)))
    name = ctx.attr(node, "activation", None)
    if name is None:
        return [y]
    name = _text(name)
    params = {
        "LeakyRelu": [ctx.attr(node, "activation_alpha", 0.01)],
        "HardSigmoid": [
            ctx.attr(node, "activation_alpha", 0.2),
            ctx.attr(node, "activation_beta", 0.5),
        ],
    }.get(name, [])
    return [_activation(y, name, params, node)]


# -----------------------------------------------------------------------------------------
# Products
# -----------------------------------------------------------------------------------------


def _fused_matmul(ctx, node):
    a, b = ctx.input(node, 0), ctx.input(node, 1)
    if ctx.attr(node, "transBatchA", 0) or ctx.attr(node, "transBatchB", 0):
        raise UnsupportedModelError(f"{_where(node)}: transBatchA/transBatchB are not supported")
    ta, tb = bool(ctx.attr(node, "transA", 0)), bool(ctx.attr(node, "transB", 0))
    if ta:
        a = _swap_last(ctx, node, a)
    if tb:
        b = _swap_last(ctx, node, b)
    y = _matmul(a, b)
    alpha = float(ctx.attr(node, "alpha", 1.0))
    return [y if alpha == 1.0 else tf.multiply(y, _scalar(ctx, y, alpha))]


def _matmul(a: Tensor, b: Tensor) -> Tensor:
    """numpy.matmul's broadcasting, as ONNX MatMul."""
    if a.shape.ndims == 2 and b.shape.ndims == 2:
        return tf.matmul(a, b)
    return create("OnnxMatMul", [a, b]).outputs[0]


def _swap_last(ctx, node, x: Tensor) -> Tensor:
    rank = ctx.rank(x, node)
    if rank < 2:
        raise UnsupportedModelError(f"{_where(node)}: a transposed operand needs rank >= 2")
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    return tf.transpose(x, perm)


# -----------------------------------------------------------------------------------------
# Normalizations
# -----------------------------------------------------------------------------------------


def _normalize(x: Tensor, gamma, beta, eps: float, simplified: bool):
    """Over the last axis, in float32 at least: (y, mean or None, inverse std)."""
    dt = x.dtype.base_dtype
    xs = tf.cast(x, tf.float32) if dt.size < 4 else x
    sdt = xs.dtype.base_dtype
    mean = None
    if simplified:
        centered = xs
        var = tf.reduce_mean(tf.multiply(xs, xs), axis=-1, keepdims=True)
    else:
        mean = tf.reduce_mean(xs, axis=-1, keepdims=True)
        centered = tf.subtract(xs, mean)
        var = tf.reduce_mean(tf.multiply(centered, centered), axis=-1, keepdims=True)
    inv = tf.rsqrt(tf.add(var, _const(eps, sdt)))
    y = tf.cast(tf.multiply(centered, inv), dt) if sdt != dt else tf.multiply(centered, inv)
    y = tf.multiply(y, gamma)
    if beta is not None:
        y = tf.add(y, beta)
    return y, mean, inv


def _skip_layer_norm(simplified: bool):
    def convert(ctx, node):
        x = tf.add(ctx.input(node, 0), ctx.input(node, 1))
        beta = None if simplified else ctx.optional(node, 3)
        bias = ctx.optional(node, 3 if simplified else 4)
        if bias is not None:
            x = tf.add(x, bias)
        eps = float(ctx.attr(node, "epsilon", 1e-12))
        y, mean, inv = _normalize(x, ctx.input(node, 2), beta, eps, simplified)
        return [y, mean, inv, x]

    return convert


def _simplified_layer_norm(ctx, node):
    x = ctx.input(node, 0)
    axis = int(ctx.attr(node, "axis", -1))
    rank = ctx.rank(x, node)
    if rank < 1:
        raise UnsupportedModelError(f"{_where(node)}: an input of rank 0 has no axis to normalize")
    if axis % rank != rank - 1:
        raise UnsupportedModelError(f"{_where(node)}: axis {axis} (only the last axis runs)")
    eps = float(ctx.attr(node, "epsilon", 1e-5))
    y, _, inv = _normalize(x, ctx.input(node, 1), None, eps, simplified=True)
    return [y, inv]


def _embed_layer_norm(ctx, node):
    ids = ctx.input(node, 0)
    word, pos = ctx.input(node, 2), ctx.input(node, 3)
    emb = tf.gather(word, ids)
    position_ids = ctx.optional(node, 8)
    if position_ids is None:
        length = tf.shape(ids, out_type=tf.int64)[1]
        position_ids = tf.expand_dims(tf.range(_const(0, tf.int64), length), 0)
    emb = tf.add(emb, tf.gather(pos, position_ids))
    segment_ids, segment = ctx.optional(node, 1), ctx.optional(node, 4)
    if segment_ids is not None and segment is not None:
        emb = tf.add(emb, tf.gather(segment, segment_ids))
    eps = float(ctx.attr(node, "epsilon", 1e-12))
    y, _, _ = _normalize(emb, ctx.input(node, 5), ctx.input(node, 6), eps, simplified=False)
    mask = ctx.optional(node, 7)
    if mask is not None:
        mask_index = tf.reduce_sum(tf.cast(mask, tf.int32), axis=1)
    else:
        mask_index = tf.fill(tf.shape(ids, out_type=tf.int32)[:1], _const(0, tf.int32))
    return [y, mask_index, emb]


# -----------------------------------------------------------------------------------------
# Attention
# -----------------------------------------------------------------------------------------


def _last_dim(x: Tensor) -> int | None:
    dims = x.shape.as_list() if x.shape.ndims else None
    return dims[-1] if dims else None


def _heads(x: Tensor, n: int) -> Tensor:
    """[B, S, n*H] -> [B, n, S, H]."""
    shape = tf.shape(x, out_type=tf.int64)
    split = tf.concat([shape[:2], _const([n, -1], tf.int64)], axis=0)
    return tf.transpose(tf.reshape(x, split), [0, 2, 1, 3])


def _merge_heads(x: Tensor) -> Tensor:
    """[B, n, S, H] -> [B, S, n*H]."""
    y = tf.transpose(x, [0, 2, 1, 3])
    shape = tf.shape(y, out_type=tf.int64)
    return tf.reshape(y, tf.concat([shape[:2], _const([-1], tf.int64)], axis=0))


def _key_mask(ctx, node, mask: Tensor, q_len: Tensor, k_len: Tensor) -> Tensor:
    """onnxruntime's mask_index/key_padding_mask forms as a {0, 1} float mask broadcastable
    to [B, n, S, T]."""
    rank = ctx.rank(mask, node)
    if rank == 1:
        positions = tf.range(_const(0, tf.int64), k_len)
        ends = tf.cast(mask, tf.int64)
        keep = tf.less(tf.expand_dims(positions, 0), tf.expand_dims(ends, 1))  # [B, T]
        return tf.reshape(
            tf.cast(keep, tf.float32),
            tf.stack([_const(-1, tf.int64), _const(1, tf.int64), _const(1, tf.int64), k_len]),
        )
    if rank == 2:
        return tf.expand_dims(tf.expand_dims(tf.cast(tf.greater(mask, 0), tf.float32), 1), 1)
    if rank == 3:
        return tf.expand_dims(tf.cast(tf.greater(mask, 0), tf.float32), 1)
    raise UnsupportedModelError(f"{_where(node)}: a mask of rank {rank} (1, 2 or 3 run)")


def _attend(ctx, node, q, k, v, n: int, mask, bias) -> Tensor:
    """Scaled dot-product attention over [B, S, n*H] projections."""
    qh, kh, vh = _heads(q, n), _heads(k, n), _heads(v, n)
    dt = q.dtype.base_dtype
    scale = float(ctx.attr(node, "scale", 0.0))
    if not scale:
        head = _last_dim(q)
        if head is None:
            raise UnsupportedModelError(f"{_where(node)}: needs a static hidden size")
        scale = 1.0 / math.sqrt(head // n)
    scores = tf.multiply(tf.matmul(qh, kh, transpose_b=True), _const(scale, dt))
    if bias is not None:
        scores = tf.add(scores, bias)
    filt = float(ctx.attr(node, "mask_filter_value", -10000.0))
    q_len = tf.shape(q, out_type=tf.int64)[1]
    k_len = tf.shape(k, out_type=tf.int64)[1]
    # onnxruntime adds mask_filter_value where the mask drops a key, and gives the future
    # keys of a unidirectional attention the lowest float (they never count).
    if mask is not None:
        keep = _key_mask(ctx, node, mask, q_len, k_len)
        penalty = tf.multiply(tf.subtract(_const(1.0, tf.float32), keep), _const(filt, tf.float32))
        scores = tf.add(scores, tf.cast(penalty, dt))
    if ctx.attr(node, "unidirectional", 0):
        rows = tf.expand_dims(tf.range(_const(0, tf.int64), q_len), 1)
        cols = tf.expand_dims(tf.range(_const(0, tf.int64), k_len), 0)
        lowest = tf.fill(tf.shape(scores), _const(float(np.finfo(dt.as_numpy_dtype).min), dt))
        scores = tf.where_v2(tf.greater(cols, rows), lowest, scores)
    return _merge_heads(tf.matmul(tf.nn.softmax(scores, axis=-1), vh))


def _num_heads(ctx, node) -> int:
    n = int(ctx.attr(node, "num_heads"))
    if n < 1:  # onnxruntime refuses the session too
        raise UnsupportedModelError(f"{_where(node)}: num_heads {n}, expected a positive count")
    return n


def _attention(ctx, node):
    for i, what in ((4, "past"), (6, "past_sequence_length")):
        if ctx.optional(node, i) is not None:
            raise UnsupportedModelError(f"{_where(node)}: the {what} input is not supported")
    outs = node.get("output", [])
    if len(outs) > 1 and outs[1]:
        raise UnsupportedModelError(f"{_where(node)}: the present output is not supported")
    if ctx.attr(node, "do_rotary", 0):
        raise UnsupportedModelError(f"{_where(node)}: do_rotary is not supported")
    n = _num_heads(ctx, node)
    x, w = ctx.input(node, 0), ctx.input(node, 1)
    qkv = _matmul(x, w)
    bias = ctx.optional(node, 2)
    if bias is not None:
        qkv = tf.add(qkv, bias)
    sizes = [int(s) for s in ctx.attr(node, "qkv_hidden_sizes", [])]
    if not sizes:
        total = _last_dim(w) if w.shape.ndims == 2 else None
        if total is None or total % 3:
            raise UnsupportedModelError(f"{_where(node)}: weights need a static [in, 3*hidden]")
        sizes = [total // 3] * 3
    if sizes[0] != sizes[1] or any(s % n for s in sizes):
        raise UnsupportedModelError(f"{_where(node)}: qkv_hidden_sizes {sizes} for {n} heads")
    q, k, v = tf.split(qkv, sizes, axis=-1)
    return [_attend(ctx, node, q, k, v, n, ctx.optional(node, 3), ctx.optional(node, 5))]


def _multi_head_attention(ctx, node):
    for i, what in ((6, "past_key"), (7, "past_value"), (8, "past_sequence_length")):
        if ctx.optional(node, i) is not None:
            raise UnsupportedModelError(f"{_where(node)}: the {what} input is not supported")
    outs = node.get("output", [])
    if any(o for o in outs[1:]):
        raise UnsupportedModelError(f"{_where(node)}: only the output is supported")
    q, k, v = ctx.input(node, 0), ctx.optional(node, 1), ctx.optional(node, 2)
    if k is None or v is None or any(ctx.rank(t, node) != 3 for t in (q, k, v)):
        raise UnsupportedModelError(
            f"{_where(node)}: only separate 3-D query, key and value run (packed forms do not)"
        )
    bias = ctx.optional(node, 3)
    if bias is not None:
        dq, dv = _last_dim(q), _last_dim(v)
        if dq is None or dv is None:
            raise UnsupportedModelError(f"{_where(node)}: a bias needs static hidden sizes")
        bq, bk, bv = tf.split(bias, [dq, dq, dv], axis=0)
        q, k, v = tf.add(q, bq), tf.add(k, bk), tf.add(v, bv)
    n = _num_heads(ctx, node)
    return [_attend(ctx, node, q, k, v, n, ctx.optional(node, 4), ctx.optional(node, 5))]


_ms("Gelu", _gelu)
_ms("BiasGelu", _bias_gelu)
_ms("FastGelu", _fast_gelu)
_ms("QuickGelu", _quick_gelu)
_ms("BiasAdd", _bias_add)
_ms("FusedConv", _fused_conv)
_ms("FusedGemm", _fused_gemm)
_ms("FusedMatMul", _fused_matmul)
_ms("TransposeMatMul", _fused_matmul)
_ms("SkipLayerNormalization", _skip_layer_norm(simplified=False))
_ms("SkipSimplifiedLayerNormalization", _skip_layer_norm(simplified=True))
_ms("EmbedLayerNormalization", _embed_layer_norm)
_ms("Attention", _attention)
_ms("MultiHeadAttention", _multi_head_attention)
# onnxruntime registers these two in the default domain, version 1.
register("SimplifiedLayerNormalization", (1,), _simplified_layer_norm)
