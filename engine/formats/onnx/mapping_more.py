"""Op-table rows for the reductions, arg max/min, top-k, the global pools, and the less
common operators: control flow (If and Loop on the engine's
cond and while_loop), scatter/gather forms, one-hot, hardmax, depth/space layout, inverse
trigonometry, bitwise ops and a few normalizations. See ``mapping.py`` for the table."""

from __future__ import annotations

from engine.formats.onnx import _tf as tf
from engine.formats.onnx.mapping import (
    UnsupportedModelError,
    _axes,
    _binary,
    _const,
    _flatten_shape,
    _scalar,
    _unary,
    register,
)
from engine.formats.onnx.probe import output_types
from engine.formats.onnx.tensors import OnnxFormatError, engine_dtype
from engine.ops._common import create

__all__: list[str] = []

# -----------------------------------------------------------------------------------------
# Reductions, arg max/min, top-k
# -----------------------------------------------------------------------------------------


def _reduce(kind: str, axes_input_since: int):
    def convert(ctx, node):
        x = ctx.input(node, 0)
        keep = bool(ctx.attr(node, "keepdims", 1))
        noop = int(ctx.attr(node, "noop_with_empty_axes", 0))
        if ctx.opset_of(node) >= axes_input_since and ctx.optional(node, 1) is not None:
            if ctx.const(node, 1) is None:
                attrs = {"kind": kind, "keepdims": int(keep), "noop_with_empty_axes": noop}
                return [create("OnnxReduce", [x, ctx.input(node, 1)], attrs).outputs[0]]
        axes = _axes(ctx, node, axes_input_since)
        if axes is not None and not axes or axes is None:
            if ctx.attr(node, "noop_with_empty_axes", 0):
                return [tf.identity(x)]
            axes = None
        if kind == "sum":
            return [tf.reduce_sum(x, axis=axes, keepdims=keep)]
        if kind == "mean":
            return [tf.reduce_mean(x, axis=axes, keepdims=keep)]
        if kind == "max":
            return [tf.reduce_max(x, axis=axes, keepdims=keep)]
        if kind == "min":
            return [tf.reduce_min(x, axis=axes, keepdims=keep)]
        if kind == "prod":
            return [tf.reduce_prod(x, axis=axes, keepdims=keep)]
        if kind == "l1":
            return [tf.reduce_sum(tf.abs(x), axis=axes, keepdims=keep)]
        if kind == "l2":
            sq = tf.reduce_sum(tf.multiply(x, x), axis=axes, keepdims=keep)
            if x.dtype.base_dtype.is_integer:
                return [tf.cast(tf.sqrt(tf.cast(sq, tf.float64)), x.dtype.base_dtype)]
            return [tf.sqrt(sq)]
        if kind == "sum_square":
            return [tf.reduce_sum(tf.multiply(x, x), axis=axes, keepdims=keep)]
        if kind == "log_sum":
            return [tf.log(tf.reduce_sum(x, axis=axes, keepdims=keep))]
        if kind == "log_sum_exp":
            return [tf.reduce_logsumexp(x, axis=axes, keepdims=keep)]
        raise AssertionError(kind)

    return convert


def _arg(kind: str):
    def convert(ctx, node):
        x = ctx.input(node, 0)
        axis = ctx.attr(node, "axis", 0)
        keep = bool(ctx.attr(node, "keepdims", 1))
        fn = tf.argmax if kind == "max" else tf.argmin
        if ctx.attr(node, "select_last_index", 0):
            rank = ctx.rank(x, node)
            axis %= rank
            rev = fn(tf.reverse(x, [axis]), axis=axis, output_type=tf.int64)
            last = tf.subtract(tf.shape(x, out_type=tf.int64)[axis], _const(1, tf.int64))
            idx = tf.subtract(last, rev)
        else:
            idx = fn(x, axis=axis, output_type=tf.int64)
        return [tf.expand_dims(idx, axis) if keep else idx]

    return convert


def _top_k(ctx, node):
    x = ctx.input(node, 0)
    if ctx.opset_of(node) < 10:
        k = _const([ctx.attr(node, "k")], tf.int64)
    else:
        k = ctx.input(node, 1)
    attrs = {
        "axis": int(ctx.attr(node, "axis", -1)),
        "largest": int(ctx.attr(node, "largest", 1)),
        "sorted": int(ctx.attr(node, "sorted", 1)),
    }
    op = create("OnnxTopK", [x, k], attrs)
    return list(op.outputs)


# -----------------------------------------------------------------------------------------
# Pooling that reduces (the windowed kinds need the conv/pool kernels)
# -----------------------------------------------------------------------------------------


def _global_pool(kind: str):
    def convert(ctx, node):
        x = ctx.input(node, 0)
        axes = list(range(2, ctx.rank(x, node)))
        if kind == "avg":
            return [tf.reduce_mean(x, axis=axes, keepdims=True)]
        return [tf.reduce_max(x, axis=axes, keepdims=True)]

    return convert


# -----------------------------------------------------------------------------------------
# Further operators on the ONNX op family
# -----------------------------------------------------------------------------------------


def _unary_math(fn_name):
    return lambda ctx, node: [
        create("OnnxUnaryMath", [ctx.input(node, 0)], {"fn": fn_name}).outputs[0]
    ]


def _swish(ctx, node):
    x = ctx.input(node, 0)
    alpha = ctx.attr(node, "alpha", 1.0)
    return [tf.multiply(x, tf.sigmoid(tf.multiply(x, _scalar(ctx, x, alpha))))]


def _hardmax(ctx, node):
    x = ctx.input(node, 0)
    if ctx.opset_of(node) >= 13:
        return [create("OnnxHardmax", [x], {"axis": int(ctx.attr(node, "axis", -1))}).outputs[0]]
    rank = ctx.rank(x, node)
    axis = ctx.attr(node, "axis", 1) % max(rank, 1)
    shape = tf.shape(x, out_type=tf.int64)
    flat = create("OnnxReshape", [x, _flatten_shape(ctx, x, axis)], {"allowzero": 0}).outputs[0]
    y = create("OnnxHardmax", [flat], {"axis": -1}).outputs[0]
    return [create("OnnxReshape", [y, shape], {"allowzero": 0}).outputs[0]]


def _one_hot(ctx, node):
    ins = [ctx.input(node, i) for i in range(3)]
    return [create("OnnxOneHot", ins, {"axis": int(ctx.attr(node, "axis", -1))}).outputs[0]]


def _scatter_nd(ctx, node):
    ins = [ctx.input(node, i) for i in range(3)]
    attrs = {"reduction": ctx.attr(node, "reduction", "none")}
    return [create("OnnxScatterND", ins, attrs).outputs[0]]


def _scatter_elements(ctx, node):
    ins = [ctx.input(node, i) for i in range(3)]
    attrs = {
        "axis": int(ctx.attr(node, "axis", 0)),
        "reduction": ctx.attr(node, "reduction", "none"),
    }
    return [create("OnnxScatterElements", ins, attrs).outputs[0]]


def _gather_nd(ctx, node):
    ins = [ctx.input(node, 0), ctx.input(node, 1)]
    attrs = {"batch_dims": int(ctx.attr(node, "batch_dims", 0))}
    return [create("OnnxGatherND", ins, attrs).outputs[0]]


def _depth_to_space(inverse: bool):
    def convert(ctx, node):
        attrs = {
            "blocksize": int(ctx.attr(node, "blocksize")),
            "mode": ctx.attr(node, "mode", "DCR"),
            "inverse": int(inverse),
        }
        return [create("OnnxDepthToSpace", [ctx.input(node, 0)], attrs).outputs[0]]

    return convert


def _lp_norm(ctx, node):
    x = ctx.input(node, 0)
    axis, p = ctx.attr(node, "axis", -1), ctx.attr(node, "p", 2)
    if p == 1:
        norm = tf.reduce_sum(tf.abs(x), axis=[axis], keepdims=True)
    elif p == 2:
        norm = tf.sqrt(tf.reduce_sum(tf.multiply(x, x), axis=[axis], keepdims=True))
    else:
        raise UnsupportedModelError(f"LpNormalization with p={p}")
    zero = _scalar(ctx, x, 0)
    safe = tf.where_v2(tf.equal(norm, zero), _scalar(ctx, x, 1), norm)
    return [tf.where_v2(tf.equal(norm, zero), tf.multiply(x, zero), tf.realdiv(x, safe))]


def _eye_like(ctx, node):
    x = ctx.input(node, 0)
    dt = ctx.attr(node, "dtype", None)
    dtype = x.dtype.base_dtype if dt is None else engine_dtype(dt, "EyeLike dtype")
    attrs = {"dtype": dtype, "k": int(ctx.attr(node, "k", 0))}
    return [create("OnnxEyeLike", [x], attrs).outputs[0]]


def _shrink(ctx, node):
    x = ctx.input(node, 0)
    lambd, bias = ctx.attr(node, "lambd", 0.5), ctx.attr(node, "bias", 0.0)
    lo = tf.less(x, _scalar(ctx, x, -lambd))
    hi = tf.greater(x, _scalar(ctx, x, lambd))
    return [
        tf.where_v2(
            lo,
            tf.add(x, _scalar(ctx, x, bias)),
            tf.where_v2(
                hi, tf.subtract(x, _scalar(ctx, x, bias)), tf.multiply(x, _scalar(ctx, x, 0))
            ),
        )
    ]


def _nonzero(ctx, node):
    return [create("OnnxNonZero", [ctx.input(node, 0)]).outputs[0]]


def _compress(ctx, node):
    axis = ctx.attr(node, "axis", None)
    attrs = {"axis": None if axis is None else int(axis)}
    return [create("OnnxCompress", [ctx.input(node, 0), ctx.input(node, 1)], attrs).outputs[0]]


def _mvn(ctx, node):
    x = ctx.input(node, 0)
    axes = [int(a) for a in ctx.attr(node, "axes", [0, 2, 3])]
    mean = tf.reduce_mean(x, axis=axes, keepdims=True)
    centered = tf.subtract(x, mean)
    var = tf.reduce_mean(tf.square(centered), axis=axes, keepdims=True)
    return [tf.realdiv(centered, tf.add(tf.sqrt(var), _scalar(ctx, x, 1e-9)))]


def _reverse_sequence(ctx, node):
    attrs = {
        "batch_axis": int(ctx.attr(node, "batch_axis", 1)),
        "time_axis": int(ctx.attr(node, "time_axis", 0)),
    }
    return [
        create("OnnxReverseSequence", [ctx.input(node, 0), ctx.input(node, 1)], attrs).outputs[0]
    ]


def _det(ctx, node):
    return [create("OnnxDet", [ctx.input(node, 0)]).outputs[0]]


def _move_axis(x, src: int, dst: int, rank: int):
    if src == dst:
        return x
    perm = list(range(rank))
    perm.insert(dst, perm.pop(src))
    return tf.transpose(x, perm)


def _scan(ctx, node):
    """Scan (opset 9+): a while_loop over the scan axis, states carried, outputs stacked."""
    ins = [ctx.input(node, i) for i in range(len(node["input"]))]
    body = ctx.attr(node, "body")
    m = int(ctx.attr(node, "num_scan_inputs"))
    n = len(ins) - m
    k = len(body.get("output", [])) - n
    if n < 0 or k < 0 or len(body.get("input", [])) != n + m:
        raise OnnxFormatError("Scan: the body does not match the states and scan inputs")
    in_axes = ctx.attr(node, "scan_input_axes", [0] * m)
    in_dirs = ctx.attr(node, "scan_input_directions", [0] * m)
    out_axes = ctx.attr(node, "scan_output_axes", [0] * k)
    out_dirs = ctx.attr(node, "scan_output_directions", [0] * k)
    seqs = []
    for j, x in enumerate(ins[n:]):
        rank = ctx.rank(x, node)
        x = _move_axis(x, in_axes[j] % rank, 0, rank)
        seqs.append(tf.reverse(x, [0]) if in_dirs[j] else x)
    if not seqs:
        raise UnsupportedModelError("Scan without scan inputs")
    length = tf.shape(seqs[0], out_type=tf.int32)[0]
    types, ranks = [], []
    for vi in body["output"][n:]:
        ttype = vi.get("type", {}).get("tensor_type", {})
        if "elem_type" not in ttype:  # untyped in the file: the body, built once aside, tells
            types.append(None)
        else:
            types.append(engine_dtype(ttype["elem_type"], "Scan output"))
        dims = ttype.get("shape", {}).get("dim")
        ranks.append(None if dims is None else len(dims) + 1)
    if None in types:
        specs = [(t.dtype.base_dtype, t.shape) for t in ins[:n]]
        specs += [(s.dtype.base_dtype, s.shape[1:]) for s in seqs]
        probed = output_types(ctx, body, specs, n)
        types = [t if t is not None else p for t, p in zip(types, probed)]
    arrays = [tf.TensorArray(dt, size=length, infer_shape=False) for dt in types]

    def keep_going(i, *rest):
        return tf.less(i, length)

    def step(i, *rest):
        states, tas = list(rest[:n]), list(rest[n:])
        outs = ctx.subgraph(body, states + [tf.gather(s, i) for s in seqs])
        tas = [ta.write(i, v) for ta, v in zip(tas, outs[n:])]
        return [tf.add(i, _const(1, tf.int32)), *outs[:n], *tas]

    invariants = [tf.TensorShape([])] + [tf.TensorShape(None)] * n + [None] * k
    res = tf.while_loop(
        keep_going, step, [_const(0, tf.int32), *ins[:n], *arrays], shape_invariants=invariants
    )
    outputs = list(res[1 : 1 + n])
    for j, ta in enumerate(res[1 + n :]):
        y = ta.stack()
        if out_dirs[j]:
            y = tf.reverse(y, [0])
        if out_axes[j]:
            if ranks[j] is None:
                raise UnsupportedModelError("Scan output axis needs the output's rank")
            y = _move_axis(y, 0, out_axes[j] % ranks[j], ranks[j])
        outputs.append(y)
    return outputs


def _attention(ctx, node):
    q, k, v = (ctx.input(node, i) for i in range(3))
    optional = [ctx.optional(node, i) for i in range(3, 7)]
    precision = ctx.attr(node, "softmax_precision", None)
    dummy = _const([], q.dtype.base_dtype)
    ins = [q, k, v] + [dummy if t is None else t for t in optional]
    scale, softcap = ctx.attr(node, "scale", None), ctx.attr(node, "softcap", None)
    attrs = {
        "present": [int(t is not None) for t in optional],
        "scale": None if scale is None else float(scale),
        "is_causal": int(ctx.attr(node, "is_causal", 0)),
        "q_num_heads": ctx.attr(node, "q_num_heads", None),
        "kv_num_heads": ctx.attr(node, "kv_num_heads", None),
        "softcap": None if softcap is None else float(softcap),
        "qk_matmul_output_mode": int(ctx.attr(node, "qk_matmul_output_mode", 0)),
        "left_window_size": int(ctx.attr(node, "left_window_size", -1)),
        "right_window_size": int(ctx.attr(node, "right_window_size", -1)),
        "softmax_dtype": None
        if precision is None
        else engine_dtype(precision, "Attention softmax_precision"),
    }
    if (optional[1] is None) != (optional[2] is None):
        raise OnnxFormatError("Attention: past_key and past_value come together")
    return list(create("OnnxAttention", ins, attrs).outputs)


def _loss(op_type: str):
    def convert(ctx, node):
        x, target, weight = ctx.input(node, 0), ctx.input(node, 1), ctx.optional(node, 2)
        ignore = ctx.attr(node, "ignore_index", None)
        attrs = {
            "reduction": ctx.attr(node, "reduction", "mean"),
            "ignore_index": None if ignore is None else int(ignore),
            "has_weight": int(weight is not None),
        }
        w = _const([], x.dtype.base_dtype) if weight is None else weight
        return list(create(op_type, [x, target, w], attrs).outputs)

    return convert


# -----------------------------------------------------------------------------------------
# Control flow: If and Loop on the engine's cond and while_loop
# -----------------------------------------------------------------------------------------


def _if(ctx, node):
    pred = tf.reshape(ctx.input(node, 0), [])
    then_g, else_g = ctx.attr(node, "then_branch"), ctx.attr(node, "else_branch")
    n = len(node["output"])
    if len(then_g.get("output", [])) != n or len(else_g.get("output", [])) != n:
        raise OnnxFormatError("If: branches must produce one value per output")
    outs = tf.cond(
        pred, lambda: list(ctx.subgraph(then_g, [])), lambda: list(ctx.subgraph(else_g, []))
    )
    return list(outs) if isinstance(outs, (list, tuple)) else [outs]


def _loop(ctx, node):
    trips, cond = ctx.optional(node, 0), ctx.optional(node, 1)
    carried = [ctx.input(node, i) for i in range(2, len(node["input"]))]
    body = ctx.attr(node, "body")
    n_scan = len(body.get("output", [])) - 1 - len(carried)
    if n_scan < 0:
        raise OnnxFormatError("Loop: the body has fewer outputs than loop-carried values")
    scan_types = []
    for vi in body["output"][1 + len(carried) :]:
        elem = vi.get("type", {}).get("tensor_type", {}).get("elem_type")
        if elem is None:  # untyped in the file: the body, built once aside, tells
            specs = [(tf.int64, []), (tf.bool, [])] + [
                (v.dtype.base_dtype, v.shape) for v in carried
            ]
            scan_types = output_types(ctx, body, specs, 1 + len(carried))
            break
        scan_types.append(engine_dtype(elem, "Loop scan output"))
    arrays = [tf.TensorArray(dt, size=0, dynamic_size=True, infer_shape=False) for dt in scan_types]
    i0 = _const(0, tf.int64)
    c0 = tf.constant(True) if cond is None else tf.reshape(cond, [])
    limit = None if trips is None else tf.reshape(tf.cast(trips, tf.int64), [])

    n_vars = len(carried)

    def keep_going(i, c, *rest):
        return c if limit is None else tf.logical_and(c, tf.less(i, limit))

    def step(i, c, *rest):
        vs, tas = list(rest[:n_vars]), list(rest[n_vars:])
        outs = ctx.subgraph(body, [i, c, *vs])
        index = tf.cast(i, tf.int32)
        tas = [ta.write(index, v) for ta, v in zip(tas, outs[1 + n_vars :])]
        next_i = tf.add(i, _const(1, tf.int64))
        return [next_i, tf.reshape(outs[0], []), *outs[1 : 1 + n_vars], *tas]

    invariants = [i0.shape, c0.shape] + [tf.TensorShape(None) for _ in carried]
    res = tf.while_loop(
        keep_going,
        step,
        [i0, c0, *carried, *arrays],
        shape_invariants=invariants + [None] * len(arrays) if arrays else invariants,
    )
    final = list(res[2 : 2 + n_vars])
    return final + [ta.stack() for ta in res[2 + n_vars :]]


register("If", (1, 11, 13, 16, 19, 21, 23, 24, 25), _if)
for _name, _np_name in (
    ("Sinh", "sinh"),
    ("Cosh", "cosh"),
    ("Asin", "arcsin"),
    ("Acos", "arccos"),
    ("Atan", "arctan"),
    ("Asinh", "arcsinh"),
    ("Acosh", "arccosh"),
    ("Atanh", "arctanh"),
):
    register(
        _name,
        (7, 9, 22) if _name in ("Sinh", "Cosh", "Asinh", "Acosh", "Atanh") else (7, 22),
        _unary_math(_np_name),
    )
register("BitwiseAnd", (18,), _binary(tf.bitwise_and))
register("BitwiseOr", (18,), _binary(tf.bitwise_or))
register("BitwiseXor", (18,), _binary(tf.bitwise_xor))
register("BitwiseNot", (18,), _unary(tf.invert))
register("Swish", (24,), _swish)
register("Hardmax", (1, 11, 13), {1: _hardmax})
register("OneHot", (9, 11, 28), _one_hot)
register("ScatterND", (11, 13, 16, 18), _scatter_nd)
register("ScatterElements", (11, 13, 16, 18), _scatter_elements)
register("GatherND", (11, 12, 13), _gather_nd)
register("DepthToSpace", (1, 11, 13, 28), _depth_to_space(False))
register("SpaceToDepth", (1, 13, 28), _depth_to_space(True))
register("LpNormalization", (1, 22), _lp_norm)
register("EyeLike", (9, 22), _eye_like)
register("Shrink", (9,), _shrink)
register("NonZero", (9, 13), _nonzero)
register("Compress", (9, 11, 28), _compress)
register("MeanVarianceNormalization", (9, 13), _mvn)
register("ReverseSequence", (10, 28), _reverse_sequence)
register("Det", (11, 22), _det)
register("Loop", (1, 11, 13, 16, 19, 21, 23, 24, 25), _loop)
register("Attention", (23, 24, 25), _attention)
register("NegativeLogLikelihoodLoss", (12, 13, 22), _loss("OnnxNLLLoss"))
register("SoftmaxCrossEntropyLoss", (12, 13), _loss("OnnxSoftmaxCrossEntropyLoss"))
register("Scan", (8, 9, 11, 16, 19, 21, 23, 24, 25), {9: _scan})  # Scan-8 (batched) is not read

register("ReduceSum", (1, 11, 13), {1: _reduce("sum", 13)})
for _name, _kind in (
    ("ReduceMean", "mean"),
    ("ReduceMax", "max"),
    ("ReduceMin", "min"),
    ("ReduceProd", "prod"),
    ("ReduceL1", "l1"),
    ("ReduceL2", "l2"),
    ("ReduceSumSquare", "sum_square"),
    ("ReduceLogSum", "log_sum"),
    ("ReduceLogSumExp", "log_sum_exp"),
):
    _v = (1, 11, 12, 13, 18, 20) if _kind in ("max", "min") else (1, 11, 13, 18)
    _v += (28,) if _kind in ("log_sum", "log_sum_exp") else ()
    register(_name, _v, _reduce(_kind, 18))
register("ArgMax", (1, 11, 12, 13), _arg("max"))
register("ArgMin", (1, 11, 12, 13), _arg("min"))
register("TopK", (1, 10, 11, 24), _top_k)
register("GlobalAveragePool", (1, 22), _global_pool("avg"))

register("GlobalMaxPool", (1, 22), _global_pool("max"))

del _name, _kind, _v
