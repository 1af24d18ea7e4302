"""Op-table rows for the vision operators: Conv, ConvTranspose, the pooling family, Resize.

Convolutions and pools run on the engine's ``Conv2D``/``DepthwiseConv2dNative``/
``Conv2DBackpropInput``/``MaxPool``/``AvgPool`` kernels (NCHW, as ONNX lays tensors out), and
3-D ones on ``Conv3D``/``Conv3DBackpropInputV2``/``MaxPool3D``/``AvgPool3D`` (NCDHW).
ONNX's 1-D forms run as 2-D with a unit height. Explicit pads map onto TF's EXPLICIT padding
for 2-D convolutions; ops that take SAME/VALID only (pools, 3-D convolutions) get their pads
as an explicit pad op, with ``-inf`` for max pooling and, for averages that exclude padding, a
second pool of ones giving each window's count; 3-D transposed convolutions crop theirs off.
"""

from __future__ import annotations

import numpy as np

from engine.formats.onnx import _tf as tf
from engine.formats.onnx.mapping import UnsupportedModelError, _const, register
from engine.framework.graph import Tensor
from engine.ops._common import create

__all__: list[str] = []


def _node_ints(ctx, node, name, n, default):
    v = ctx.attr(node, name, None)
    return [default] * n if v is None else [int(a) for a in v]


def _spatial(x: Tensor) -> list | None:
    dims = x.shape.as_tuple()
    return None if dims is None else list(dims[2:])


def _auto_pads(ctx, node, x, kernel, strides, dilations, *, transpose=False, out_pad=None):
    """ONNX pads ``[b1, b2, ..., e1, e2, ...]`` for the node's auto_pad setting."""
    n = len(kernel)
    auto = ctx.attr(node, "auto_pad", "NOTSET")
    if auto in ("NOTSET", ""):
        return _node_ints(ctx, node, "pads", 2 * n, 0)
    if auto == "VALID":
        return [0] * (2 * n)
    sizes = _spatial(x)
    if sizes is None or None in sizes:
        raise UnsupportedModelError(
            f"{node['op_type']} with auto_pad={auto} needs static spatial input dims"
        )
    begins, ends = [], []
    for i in range(n):
        eff = (kernel[i] - 1) * dilations[i] + 1
        if transpose:
            out = sizes[i] * strides[i]
            total = max(strides[i] * (sizes[i] - 1) + out_pad[i] + eff - out, 0)
        else:
            out = -(-sizes[i] // strides[i])
            total = max((out - 1) * strides[i] + eff - sizes[i], 0)
        small, big = total // 2, total - total // 2
        b, e = (small, big) if auto == "SAME_UPPER" else (big, small)
        begins.append(b)
        ends.append(e)
    return begins + ends


def _to_2d(x: Tensor, rank: int) -> Tensor:
    return tf.expand_dims(x, 2) if rank == 3 else x


def _from_2d(y: Tensor, rank: int) -> Tensor:
    return tf.squeeze(y, [2]) if rank == 3 else y


def _filter(ctx, node, i: int, perm, reshape=None) -> Tensor:
    """The weight input transposed (folded at import when it is a constant)."""
    w = ctx.const(node, i)
    if w is not None:
        w = np.asarray(w)
        if reshape is not None:
            w = w.reshape(reshape(w.shape))
        return tf.constant(np.ascontiguousarray(w.transpose(perm)))
    t = ctx.input(node, i)
    if reshape is not None:
        t = tf.reshape(t, list(reshape(tuple(t.shape.as_list()))))
    return tf.transpose(t, perm)


def _check_rank(ctx, node, x) -> int:
    rank = ctx.rank(x, node)
    if rank not in (3, 4, 5):
        raise UnsupportedModelError(
            f"{node['op_type']} on {rank - 2}-D data (1-D, 2-D and 3-D run)"
        )
    return rank


def _padded(x: Tensor, pads, fill: Tensor) -> Tensor:
    """``x`` (N, C, spatial...) padded by ONNX ``pads`` (begins, then ends) with ``fill``."""
    if not any(pads):
        return x
    n = len(pads) // 2
    width = _const([0, 0] + list(pads[:n]) + [0, 0] + list(pads[n:]), tf.int64)
    none = _const([], tf.int64)
    return create("OnnxPad", [x, width, fill, none], {"mode": "constant"}).outputs[0]


def _conv3d(ctx, node, x: Tensor, strides, dilations, pads) -> Tensor:
    """``Conv3D`` (groups in the filter's depth) on ``x`` zero-padded by ``pads``."""
    w = _filter(ctx, node, 1, (2, 3, 4, 1, 0))
    x = _padded(x, pads, _const([0], x.dtype.base_dtype))
    return tf.nn.conv3d(
        x, w, [1, 1] + strides, "VALID", data_format="NCDHW", dilations=[1, 1] + dilations
    )


def _conv3d_transpose(ctx, node, x: Tensor, m: int, kernel, strides, dilations, pads, out):
    """``Conv3DBackpropInputV2`` to the whole output, ONNX's begin ``pads`` and what lies
    beyond ``out`` cropped off, and output past the whole (``output_padding``, a larger
    ``output_shape``, which no input reaches) zero-filled."""
    sizes = _spatial(x)
    full = [strides[i] * (sizes[i] - 1) + (kernel[i] - 1) * dilations[i] + 1 for i in range(3)]
    w = _filter(ctx, node, 1, (2, 3, 4, 1, 0))
    batch = tf.shape(x, out_type=tf.int32)[0:1]
    shape = tf.concat([batch, _const([m] + full, tf.int32)], axis=0)
    y = tf.nn.conv3d_transpose(
        x, w, shape, [1, 1] + strides, "VALID", data_format="NCDHW", dilations=[1, 1] + dilations
    )
    keep = [max(min(out[i], full[i] - pads[i]), 0) for i in range(3)]
    b = pads[:3]
    y = y[:, :, b[0] : b[0] + keep[0], b[1] : b[1] + keep[1], b[2] : b[2] + keep[2]]
    extra = [out[i] - keep[i] for i in range(3)]
    return _padded(y, [0, 0, 0] + extra, _const([0], y.dtype.base_dtype))


def _conv(ctx, node):
    x = ctx.input(node, 0)
    rank = _check_rank(ctx, node, x)
    w_shape = ctx.input(node, 1).shape.as_tuple()
    if w_shape is None or None in w_shape:
        raise UnsupportedModelError("Conv needs a weight of static shape")
    m, cg = w_shape[0], w_shape[1]
    kernel = list(w_shape[2:])
    n = len(kernel)
    strides = _node_ints(ctx, node, "strides", n, 1)
    dilations = _node_ints(ctx, node, "dilations", n, 1)
    pads = _auto_pads(ctx, node, x, kernel, strides, dilations)
    group = int(ctx.attr(node, "group", 1))
    if rank == 5:
        return [_add_bias(ctx, node, _conv3d(ctx, node, x, strides, dilations, pads), rank)]
    if rank == 3:
        kernel, strides, dilations = [1] + kernel, [1] + strides, [1] + dilations
        pads = [0, pads[0], 0, pads[1]]
    x2 = _to_2d(x, rank)
    explicit = [[0, 0], [0, 0], [pads[0], pads[2]], [pads[1], pads[3]]]
    common = dict(
        strides=[1, 1] + strides[-2:],
        padding=explicit,
        data_format="NCHW",
        dilations=[1, 1] + dilations[-2:],
    )

    def kernel_shape(s):
        return (s[0], s[1], 1, s[2]) if rank == 3 else s

    if group == 1:
        w = _filter(ctx, node, 1, (2, 3, 1, 0), kernel_shape if rank == 3 else None)
        y = tf.nn.conv2d(x2, w, **common)
    elif cg == 1 and m % group == 0:
        # Depthwise: input channel c feeds outputs c*mult .. c*mult+mult-1.
        mult = m // group

        def dw_shape(s):
            return (group, mult) + tuple(kernel)

        w = _filter(ctx, node, 1, (2, 3, 0, 1), dw_shape)
        y = tf.nn.depthwise_conv2d_native(
            x2, w, common["strides"], explicit, "NCHW", common["dilations"]
        )
    else:
        if m % group:
            raise UnsupportedModelError("Conv: output channels not divisible by group")
        w_all = _filter(ctx, node, 1, (2, 3, 1, 0), kernel_shape if rank == 3 else None)
        xs = tf.split(x2, group, axis=1)
        ws = tf.split(w_all, group, axis=3)
        y = tf.concat([tf.nn.conv2d(a, b, **common) for a, b in zip(xs, ws)], axis=1)
    return [_add_bias(ctx, node, _from_2d(y, rank), rank)]


def _add_bias(ctx, node, y: Tensor, rank: int) -> Tensor:
    b = ctx.optional(node, 2)
    if b is None:
        return y
    shape = [-1] + [1] * (rank - 2)
    known = ctx.const(node, 2)
    if known is not None:  # shaped once at import rather than on every run
        return tf.add(y, tf.constant(np.asarray(known).reshape(shape)))
    return tf.add(y, tf.reshape(b, shape))


def _conv_transpose(ctx, node):
    x = ctx.input(node, 0)
    rank = _check_rank(ctx, node, x)
    w_shape = ctx.input(node, 1).shape.as_tuple()
    if w_shape is None or None in w_shape:
        raise UnsupportedModelError("ConvTranspose needs a weight of static shape")
    if int(ctx.attr(node, "group", 1)) != 1:
        raise UnsupportedModelError("ConvTranspose with group > 1")
    c_in, m = w_shape[0], w_shape[1]
    kernel = list(w_shape[2:])
    n = len(kernel)
    strides = _node_ints(ctx, node, "strides", n, 1)
    dilations = _node_ints(ctx, node, "dilations", n, 1)
    out_pad = _node_ints(ctx, node, "output_padding", n, 0)
    sizes = _spatial(x)
    if sizes is None or None in sizes:
        raise UnsupportedModelError("ConvTranspose needs static spatial input dims")
    output_shape = ctx.attr(node, "output_shape", None)
    if output_shape is not None:
        out = [int(v) for v in output_shape[-n:]]
        pads = []
        for i in range(n):
            eff = (kernel[i] - 1) * dilations[i] + 1
            # A negative total (output_shape larger than the natural size) is extra output
            # at the end, which receives no contributions, as output_padding does.
            total = max(strides[i] * (sizes[i] - 1) + out_pad[i] + eff - out[i], 0)
            small, big = total // 2, total - total // 2
            # ONNX puts the odd pad first unless auto_pad is SAME_UPPER (NOTSET included).
            upper = ctx.attr(node, "auto_pad", "NOTSET") == "SAME_UPPER"
            pads.append((small, big) if upper else (big, small))
        pads = [p[0] for p in pads] + [p[1] for p in pads]
    else:
        pads = _auto_pads(ctx, node, x, kernel, strides, dilations, transpose=True, out_pad=out_pad)
        out = [
            strides[i] * (sizes[i] - 1)
            + out_pad[i]
            + (kernel[i] - 1) * dilations[i]
            + 1
            - pads[i]
            - pads[i + n]
            for i in range(n)
        ]
    if rank == 5:
        y = _conv3d_transpose(ctx, node, x, m, kernel, strides, dilations, pads, out)
        return [_add_bias(ctx, node, y, rank)]
    if rank == 3:
        kernel, strides, dilations, out = [1] + kernel, [1] + strides, [1] + dilations, [1] + out
        pads = [0, pads[0], 0, pads[1]]

    def kernel_shape(s):
        return (s[0], s[1], 1, s[2]) if rank == 3 else s

    w = _filter(ctx, node, 1, (2, 3, 1, 0), kernel_shape if rank == 3 else None)
    batch = tf.shape(x, out_type=tf.int32)[0:1]
    shape = tf.concat([batch, _const([m] + out, tf.int32)], axis=0)
    explicit = [[0, 0], [0, 0], [pads[0], pads[2]], [pads[1], pads[3]]]
    y = tf.nn.conv2d_transpose(
        _to_2d(x, rank),
        w,
        shape,
        strides=[1, 1] + strides,
        padding=explicit,
        data_format="NCHW",
        dilations=[1, 1] + dilations,
    )
    del c_in
    y = _from_2d(y, rank)
    b = ctx.optional(node, 2)
    if b is not None:
        y = tf.add(y, tf.reshape(b, [-1] + [1] * (rank - 2)))
    return [y]


def _pool(kind: str):
    def convert(ctx, node):
        x = ctx.input(node, 0)
        rank = _check_rank(ctx, node, x)
        if len(node.get("output", [])) > 1 and node["output"][1]:
            raise UnsupportedModelError("MaxPool's Indices output")
        fmt = "NCDHW" if rank == 5 else "NCHW"
        pool = {
            ("max", False): tf.nn.max_pool,
            ("avg", False): tf.nn.avg_pool,
            ("max", True): tf.nn.max_pool3d,
            ("avg", True): tf.nn.avg_pool3d,
        }[kind, rank == 5]
        kernel = [int(k) for k in ctx.attr(node, "kernel_shape")]
        n = len(kernel)
        strides = _node_ints(ctx, node, "strides", n, 1)
        dilations = _node_ints(ctx, node, "dilations", n, 1)
        dilated = any(d != 1 for d in dilations)
        count_pad = kind == "avg" and bool(ctx.attr(node, "count_include_pad", 0))
        same_upper = ctx.attr(node, "auto_pad", "NOTSET") == "SAME_UPPER"
        if same_upper and not count_pad and not ctx.attr(node, "ceil_mode", 0) and not dilated:
            # TF's SAME is ONNX's SAME_UPPER, and its windows ignore the padding.
            ks, st = [1, 1] + ([1] if rank == 3 else []) + kernel, [1, 1]
            st += ([1] if rank == 3 else []) + strides
            y = pool(_to_2d(x, rank), ks, st, "SAME", data_format=fmt)
            return [_from_2d(y, rank)]
        pads = _auto_pads(ctx, node, x, kernel, strides, dilations)
        if ctx.attr(node, "ceil_mode", 0):
            sizes = _spatial(x)
            if sizes is None or None in sizes:
                raise UnsupportedModelError("pooling with ceil_mode needs static spatial dims")
            for i in range(n):
                eff = (kernel[i] - 1) * dilations[i] + 1
                span = sizes[i] + pads[i] + pads[i + n] - eff
                out = -(-span // strides[i]) + 1
                # The last window must start inside the input or the begin padding.
                if (out - 1) * strides[i] >= sizes[i] + pads[i]:
                    out -= 1
                pads[i + n] += max((out - 1) * strides[i] - span, 0)
        if dilated:
            return [_dilated_pool(kind, x, pads, kernel, strides, dilations, count_pad)]
        if rank == 3:
            kernel, strides = [1] + kernel, [1] + strides
            pads = [0, pads[0], 0, pads[1]]
        x2 = _to_2d(x, rank)
        ksize, stride = [1, 1] + kernel, [1, 1] + strides
        dt = x2.dtype.base_dtype
        lowest = (-np.inf if dt.is_floating else dt.min) if kind == "max" else 0
        padded = _padded(x2, pads, _const([lowest], dt))
        y = pool(padded, ksize, stride, "VALID", data_format=fmt)
        if kind == "avg" and any(pads) and not count_pad:
            # Windows average only real input positions: divide by each window's share of
            # real positions, found by pooling a padded mask of ones.
            mask = _padded(tf.ones_like(x2[:1, :1]), pads, _const([0], dt))
            y = tf.realdiv(y, pool(mask, ksize, stride, "VALID", data_format=fmt))
        return [_from_2d(y, rank)]

    return convert


def _dilated_pool(kind, x, pads, kernel, strides, dilations, count_pad) -> Tensor:
    """A pool with dilated windows (any rank) on the padded input: the max, or the sum
    divided by the window (``count_include_pad``) or by its share of real positions."""
    dt = x.dtype.base_dtype
    attrs = {"kernel": kernel, "strides": strides, "dilations": dilations}
    lowest = (-np.inf if dt.is_floating else dt.min) if kind == "max" else 0
    padded = _padded(x, pads, _const([lowest], dt))
    if kind == "max":
        return create("OnnxWindowPool", [padded], dict(attrs, mode="max")).outputs[0]
    total = create("OnnxWindowPool", [padded], dict(attrs, mode="sum")).outputs[0]
    if count_pad or not any(pads):
        return tf.realdiv(total, _const(float(np.prod(kernel)), dt))
    mask = _padded(tf.ones_like(x[:1, :1]), pads, _const([0], dt))
    share = create("OnnxWindowPool", [mask], dict(attrs, mode="sum")).outputs[0]
    return tf.realdiv(total, share)


register("Conv", (1, 11, 22), _conv)
register("ConvTranspose", (1, 11, 22), _conv_transpose)
register("MaxPool", (1, 8, 10, 11, 12, 22), _pool("max"))
register("AveragePool", (1, 7, 10, 11, 19, 22), _pool("avg"))


def _resize_static_shape(ctx, node, x, attrs, version):
    """The output shape when the sizes (or scales and input dims) are constants."""
    dims = x.shape.as_tuple()
    if dims is None or attrs["axes"] or attrs["keep_aspect_ratio_policy"] != "stretch":
        return None
    if attrs["coordinate_transformation_mode"] == "tf_crop_and_resize":
        return None
    sizes = ctx.const(node, 3) if version >= 11 else None
    if sizes is not None and np.asarray(sizes).size == len(dims):
        return [int(v) for v in np.asarray(sizes).ravel()]
    scales = ctx.const(node, 2 if version >= 11 else 1)
    if scales is not None and np.asarray(scales).size == len(dims):
        return [
            None if d is None else int(np.floor(d * float(s)))
            for d, s in zip(dims, np.asarray(scales).ravel())
        ]
    return None


def _resize(version: int):
    def convert(ctx, node):
        x = ctx.input(node, 0)
        empty_f = _const(np.zeros([0]), tf.float32)
        if version < 11:
            roi, scales, sizes = empty_f, ctx.input(node, 1 if version >= 9 else -1), None
        else:
            roi, scales, sizes = ctx.optional(node, 1), ctx.optional(node, 2), ctx.optional(node, 3)
        if ctx.attr(node, "antialias", 0):
            raise UnsupportedModelError("Resize with antialias=1")
        mode = ctx.attr(node, "mode", "nearest")
        default_ct = "half_pixel" if version >= 11 else "asymmetric"
        attrs = {
            "mode": mode,
            "coordinate_transformation_mode": ctx.attr(
                node, "coordinate_transformation_mode", default_ct
            ),
            "nearest_mode": ctx.attr(
                node, "nearest_mode", "round_prefer_floor" if version >= 11 else "floor"
            ),
            "cubic_coeff_a": float(ctx.attr(node, "cubic_coeff_a", -0.75)),
            "exclude_outside": int(ctx.attr(node, "exclude_outside", 0)),
            "extrapolation_value": float(ctx.attr(node, "extrapolation_value", 0.0)),
            "axes": [int(a) for a in ctx.attr(node, "axes", [])],
            "keep_aspect_ratio_policy": ctx.attr(node, "keep_aspect_ratio_policy", "stretch"),
        }
        if mode == "linear" and version < 11:
            attrs["coordinate_transformation_mode"] = "asymmetric"
        static = _resize_static_shape(ctx, node, x, attrs, version)
        roi = empty_f if roi is None else tf.cast(roi, tf.float32)
        scales = empty_f if scales is None else tf.cast(scales, tf.float32)
        sizes = _const(np.zeros([0]), tf.int64) if sizes is None else sizes
        y = create("OnnxResize", [x, roi, scales, sizes], attrs).outputs[0]
        if static is not None:
            y.set_shape(static)
        return [y]

    return convert


def _upsample(ctx, node):
    x = ctx.input(node, 0)
    if ctx.opset_of(node) >= 9:
        scales = tf.cast(ctx.input(node, 1), tf.float32)
    else:
        scales = _const(ctx.attr(node, "scales"), tf.float32)
    mode = ctx.attr(node, "mode", "nearest")
    attrs = {
        "mode": "linear" if mode in ("linear", "bilinear") else mode,
        "coordinate_transformation_mode": "asymmetric",
        "nearest_mode": "floor",
        "cubic_coeff_a": -0.75,
        "exclude_outside": 0,
        "extrapolation_value": 0.0,
        "axes": [],
        "keep_aspect_ratio_policy": "stretch",
    }
    empty_f = _const(np.zeros([0]), tf.float32)
    sizes = _const(np.zeros([0]), tf.int64)
    return [create("OnnxResize", [x, empty_f, scales, sizes], attrs).outputs[0]]


register("Resize", (10, 11, 13, 18, 19), {10: _resize(10), 11: _resize(11)})
register("Upsample", (7, 9, 10), _upsample)
