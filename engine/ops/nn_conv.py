"""TF1's ``tf.nn`` convolution, pooling and fused batch-norm functions over the ops of
``engine.ops.conv``: argument normalization (ints or lists of 1, 2 or 4 for strides, ksize and
dilations; padding names or explicit pairs) and TF1's op names."""

from __future__ import annotations

import numbers

from engine import dtypes
from engine.framework.constant_op import constant, convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.tensor_util import constant_value
from engine.ops import array as array_ops
from engine.ops import conv  # noqa: F401 - registers the ops
from engine.ops._common import create
from engine.ops.conv import channel_axis, spatial_axes

__all__ = [
    "conv1d",
    "conv2d",
    "conv2d_transpose",
    "depthwise_conv2d",
    "depthwise_conv2d_native",
    "separable_conv2d",
    "max_pool",
    "max_pool2d",
    "avg_pool",
    "avg_pool2d",
    "atrous_conv2d",
    "fused_batch_norm",
    "conv2d_backprop_input",
    "conv2d_backprop_filter",
    "depthwise_conv2d_native_backprop_input",
    "depthwise_conv2d_native_backprop_filter",
]


def _format(data_format) -> str:
    fmt = data_format or "NHWC"
    if fmt not in ("NHWC", "NCHW"):
        raise ValueError(f"data_format must be 'NHWC' or 'NCHW'. Received: data_format={fmt}")
    return fmt


def _sequence(value, name: str, data_format: str, default=None) -> list[int]:
    """``value`` (an int or a list of 1, 2 or 4 ints) as 4 ints in data_format order."""
    if value is None:
        if default is None:
            raise ValueError(f"`{name}` must be given")
        value = default
    if isinstance(value, numbers.Integral):
        value = [int(value)]
    value = [int(v) for v in value]
    a, b = spatial_axes(data_format)
    if len(value) == 4:
        return value
    if len(value) in (1, 2):
        hw = value * 2 if len(value) == 1 else value
        out = [1, 1, 1, 1]
        out[a], out[b] = hw
        return out
    raise ValueError(f"{name} should be of length 1, 2 or 4. Received: {name}={value}")


def _padding(padding, data_format: str) -> tuple[str, list[int]]:
    """TF's padding argument: 'SAME', 'VALID' or explicit ``[[before, after]] * 4`` pairs."""
    if isinstance(padding, str):
        p = padding.upper()
        if p not in ("SAME", "VALID"):
            raise ValueError(f"Padding must be 'SAME', 'VALID' or a list. Received: {padding}")
        return p, []
    if not isinstance(padding, (list, tuple)) or len(padding) != 4:
        raise ValueError(
            f"When padding is a list, it must be of length 4 (one pair per dimension). "
            f"Received: padding={padding}"
        )
    flat = []
    for pair in padding:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ValueError(f"Each padding entry must be a pair. Received: padding={padding}")
        flat += [int(pair[0]), int(pair[1])]
    n, c = 0, channel_axis(data_format)
    if flat[2 * n : 2 * n + 2] != [0, 0] or flat[2 * c : 2 * c + 2] != [0, 0]:
        raise ValueError(
            f"The padding of the batch and channel dimensions must be 0. Received: "
            f"padding={padding}"
        )
    return "EXPLICIT", flat


def _conv_attrs(strides, padding, data_format, dilations, *, cudnn=None) -> dict:
    fmt = _format(data_format)
    pad, explicit = _padding(padding, fmt)
    attrs = {
        "strides": _sequence(strides, "strides", fmt),
        "padding": pad,
        "explicit_paddings": explicit,
        "data_format": fmt,
        "dilations": _sequence(dilations, "dilations", fmt, default=1),
    }
    if cudnn is not None:
        attrs["use_cudnn_on_gpu"] = bool(cudnn)
    return attrs


def _pick(a, b, what: str):
    if a is not None and b is not None:
        raise ValueError(f"Cannot specify both {what}")
    return a if a is not None else b


def conv2d(
    input,  # noqa: A002 - TF's argument names
    filter=None,  # noqa: A002
    strides=None,
    padding=None,
    use_cudnn_on_gpu=True,
    data_format="NHWC",
    dilations=(1, 1, 1, 1),
    name=None,
    filters=None,
) -> Tensor:
    """A 2-D convolution of a 4-D ``input`` with a ``[kh, kw, in, out]`` filter.

    >>> y = conv2d(x, w, strides=[1, 2, 2, 1], padding="SAME")  # x: [n, h, w, in]
    """
    f = _pick(filter, filters, "'filters' and 'filter'")
    attrs = _conv_attrs(strides, padding, data_format, dilations, cudnn=use_cudnn_on_gpu)
    with name_scope(name, "Conv2D", [input, f]) as scope:
        x = convert_to_tensor(input, name="input")
        w = convert_to_tensor(f, dtype=x.dtype.base_dtype, name="filter")
        return create("Conv2D", [x, w], attrs, scope).outputs[0]


def conv1d(
    value=None,
    filters=None,
    stride=None,
    padding=None,
    use_cudnn_on_gpu=None,
    data_format=None,
    name=None,
    input=None,  # noqa: A002
    dilations=None,
) -> Tensor:
    """A 1-D convolution (``[n, w, in]`` by ``[k, in, out]``) as a 2-D one of height 1."""
    value = _pick(value, input, "'value' and 'input'")
    fmt = data_format or "NWC"
    if fmt not in ("NWC", "NCW"):
        raise ValueError(f"data_format must be 'NWC' or 'NCW'. Received: {fmt}")
    with name_scope(name, "conv1d", [value, filters]) as scope:
        x = convert_to_tensor(value, name="input")
        axis = 1 if fmt == "NWC" else 2
        x = array_ops.expand_dims(x, axis, name="ExpandDims")
        w = array_ops.expand_dims(convert_to_tensor(filters, dtype=x.dtype.base_dtype), 0)
        fmt2 = "NHWC" if fmt == "NWC" else "NCHW"
        if not isinstance(stride, numbers.Integral):
            stride = list(stride)[1 if fmt == "NWC" else 2] if len(stride) == 3 else stride[0]
        rate = 1 if dilations is None else dilations
        if not isinstance(rate, numbers.Integral):
            rate = list(rate)[1 if fmt == "NWC" else 2] if len(rate) == 3 else rate[0]
        y = conv2d(
            x,
            w,
            strides=[1, int(stride)],
            padding=padding,
            data_format=fmt2,
            dilations=[1, int(rate)],
            name="Conv2D",
        )
        return array_ops.squeeze(y, [axis], name=scope)


def conv2d_transpose(
    value=None,
    filter=None,  # noqa: A002
    output_shape=None,
    strides=None,
    padding="SAME",
    data_format="NHWC",
    name=None,
    input=None,  # noqa: A002
    filters=None,
    dilations=None,
) -> Tensor:
    """The gradient of ``conv2d`` with respect to its input ("deconvolution"): ``value`` of
    shape ``[n, h, w, out]`` by a ``[kh, kw, out_shape_channels, value_channels]`` filter to
    ``output_shape``."""
    value = _pick(value, input, "'value' and 'input'")
    f = _pick(filter, filters, "'filters' and 'filter'")
    attrs = _conv_attrs(strides, padding, data_format, dilations)
    with name_scope(name, "conv2d_transpose", [value, f, output_shape]) as scope:
        dy = convert_to_tensor(value, name="value")
        w = convert_to_tensor(f, dtype=dy.dtype.base_dtype, name="filter")
        shape = convert_to_tensor(output_shape, dtype_hint=dtypes.int32, name="output_shape")
        if shape.shape.rank is not None and shape.shape.as_list() not in ([4], [None]):
            raise ValueError(f"output_shape must have shape (4,), got {shape.shape}")
        c = channel_axis(attrs["data_format"])
        ws, vs = w.shape.as_tuple(), dy.shape.as_tuple()
        if ws is not None and vs is not None and None not in (ws[3], vs[c]) and ws[3] != vs[c]:
            raise ValueError(
                f"Input channels of value ({vs[c]}) must match the filter's output channels "
                f"({ws[3]})"
            )
        sv = constant_value(shape)
        if sv is not None and ws is not None and ws[2] is not None and int(sv[c]) != ws[2]:
            raise ValueError(
                f"output_shape does not match filter's output channels, {int(sv[c])} != {ws[2]}"
            )
        return create("Conv2DBackpropInput", [shape, w, dy], attrs, scope).outputs[0]


def depthwise_conv2d_native(
    input,  # noqa: A002
    filter,  # noqa: A002
    strides,
    padding,
    data_format="NHWC",
    dilations=(1, 1, 1, 1),
    name=None,
) -> Tensor:
    """The ``DepthwiseConv2dNative`` op: each input channel convolved with its own
    ``channel_multiplier`` filters (``filter`` is ``[kh, kw, in, channel_multiplier]``)."""
    attrs = _conv_attrs(strides, padding, data_format, dilations)
    with name_scope(name, "DepthwiseConv2dNative", [input, filter]) as scope:
        x = convert_to_tensor(input, name="input")
        w = convert_to_tensor(filter, dtype=x.dtype.base_dtype, name="filter")
        return create("DepthwiseConv2dNative", [x, w], attrs, scope).outputs[0]


def _rate(rate, dilations, data_format):
    if rate is not None and dilations is not None:
        raise ValueError("Cannot specify both 'rate' and 'dilations'")
    r = rate if rate is not None else dilations
    if r is None:
        return 1
    r = [int(v) for v in ([r] if isinstance(r, numbers.Integral) else r)]
    if len(r) != 2 and len(r) != 1:
        raise ValueError(f"rate must be of length 2. Received: {r}")
    if any(v < 1 for v in r):
        raise ValueError(f"rate must be positive. Received: {r}")
    return r


def depthwise_conv2d(
    input,  # noqa: A002
    filter,  # noqa: A002
    strides,
    padding,
    rate=None,
    name=None,
    data_format=None,
    dilations=None,
) -> Tensor:
    """Depthwise 2-D convolution; ``rate`` (or ``dilations``) dilates the filter."""
    fmt = _format(data_format)
    with name_scope(name, "depthwise", [input, filter]) as scope:
        return depthwise_conv2d_native(
            input, filter, strides, padding, fmt, _rate(rate, dilations, fmt), name=scope
        )


def separable_conv2d(
    input,  # noqa: A002
    depthwise_filter,
    pointwise_filter,
    strides,
    padding,
    rate=None,
    name=None,
    data_format=None,
    dilations=None,
) -> Tensor:
    """A depthwise convolution followed by a 1x1 ``pointwise_filter`` convolution."""
    fmt = _format(data_format)
    with name_scope(name, "separable_conv2d", [input, depthwise_filter, pointwise_filter]) as scope:
        x = convert_to_tensor(input, name="input")
        pw = convert_to_tensor(pointwise_filter, dtype=x.dtype.base_dtype, name="pointwise_filter")
        ps = pw.shape.as_tuple()
        if ps is not None and (ps[0] not in (1, None) or ps[1] not in (1, None)):
            raise ValueError(f"pointwise_filter must be [1, 1, in, out], got {pw.shape}")
        dw = depthwise_conv2d_native(
            x, depthwise_filter, strides, padding, fmt, _rate(rate, dilations, fmt), "depthwise"
        )
        return conv2d(dw, pw, [1, 1, 1, 1], "VALID", data_format=fmt, name=scope)


def _pool(op_type, value, ksize, strides, padding, data_format, name):
    fmt = _format(data_format)
    if not isinstance(padding, str) or padding.upper() not in ("SAME", "VALID"):
        raise ValueError(f"Padding must be 'SAME' or 'VALID'. Received: padding={padding}")
    attrs = {
        "ksize": _sequence(ksize, "ksize", fmt),
        "strides": _sequence(strides, "strides", fmt),
        "padding": padding.upper(),
        "data_format": fmt,
    }
    with name_scope(name, op_type, [value]) as scope:
        x = convert_to_tensor(value, name="input")
        return create(op_type, [x], attrs, scope).outputs[0]


def max_pool(
    value=None,
    ksize=None,
    strides=None,
    padding=None,
    data_format="NHWC",
    name=None,
    input=None,  # noqa: A002
) -> Tensor:
    """Max pooling over ``ksize`` windows moved by ``strides``; SAME windows ignore padding."""
    value = _pick(value, input, "'value' and 'input'")
    return _pool("MaxPool", value, ksize, strides, padding, data_format, name)


def avg_pool(
    value=None,
    ksize=None,
    strides=None,
    padding=None,
    data_format="NHWC",
    name=None,
    input=None,  # noqa: A002
) -> Tensor:
    """Average pooling; SAME windows average only the input positions they cover (as TF)."""
    value = _pick(value, input, "'value' and 'input'")
    return _pool("AvgPool", value, ksize, strides, padding, data_format, name)


max_pool2d = max_pool  # TF 1.14+'s name (rank-4 input, as max_pool)
avg_pool2d = avg_pool


def atrous_conv2d(value, filters, rate, padding, name=None) -> Tensor:
    """A 2-D convolution with holes: ``filters`` applied to every ``rate``-th input position
    (``conv2d`` with dilations ``[1, rate, rate, 1]``, NHWC)."""
    if isinstance(rate, bool) or not isinstance(rate, numbers.Integral) or rate < 1:
        raise ValueError(f"rate must be a positive integer, got {rate!r}")
    with name_scope(name, "atrous_conv2d", [value, filters]) as scope:
        return conv2d(
            value, filters, [1, 1, 1, 1], padding, dilations=[1, rate, rate, 1], name=scope
        )


def fused_batch_norm(
    x,
    scale,
    offset=None,
    mean=None,
    variance=None,
    epsilon=0.001,
    data_format="NHWC",
    is_training=True,
    name=None,
    exponential_avg_factor=1.0,
) -> tuple[Tensor, Tensor, Tensor]:
    """Batch normalization of a 4-D ``x`` over all axes but the channel axis, in one op.

    Training normalizes with the batch statistics and returns them (the variance with
    Bessel's correction, as TF does); inference uses the given ``mean`` and ``variance``.
    Returns ``(y, mean, variance)``.
    """
    if (not is_training or exponential_avg_factor != 1.0) and (mean is None or variance is None):
        raise ValueError(
            "Both `mean` and `variance` must be a 1-D tensor when is_training is False or "
            f"exponential_avg_factor != 1.0. Received: `mean` {mean!r} and `variance` "
            f"{variance!r}"
        )
    fmt = _format(data_format)
    x = convert_to_tensor(x, name="input")
    scale = convert_to_tensor(scale, name="scale")
    u = scale.dtype.base_dtype
    offset = array_ops.zeros_like(scale) if offset is None else convert_to_tensor(offset, u)
    mean = constant([], dtype=u) if mean is None else convert_to_tensor(mean, u)
    variance = constant([], dtype=u) if variance is None else convert_to_tensor(variance, u)
    attrs = {
        # cuDNN's floor on epsilon, which TF applies on every device.
        "epsilon": max(float(epsilon), 1.001e-5),
        "exponential_avg_factor": float(exponential_avg_factor),
        "data_format": fmt,
        "is_training": bool(is_training),
    }
    o = create(
        "FusedBatchNormV3", [x, scale, offset, mean, variance], attrs, name or "FusedBatchNormV3"
    )
    return o.outputs[0], o.outputs[1], o.outputs[2]


def _backprop(op_type, a, sizes, b, strides, padding, data_format, dilations, name, cudnn=None):
    attrs = _conv_attrs(strides, padding, data_format, dilations, cudnn=cudnn)
    with name_scope(name, op_type, [a, sizes, b]) as scope:
        if op_type.endswith("Input"):
            sizes = convert_to_tensor(sizes, dtype_hint=dtypes.int32, name="input_sizes")
            f = convert_to_tensor(a, name="filter")
            dy = convert_to_tensor(b, dtype=f.dtype.base_dtype, name="out_backprop")
            return create(op_type, [sizes, f, dy], attrs, scope).outputs[0]
        x = convert_to_tensor(a, name="input")
        sizes = convert_to_tensor(sizes, dtype_hint=dtypes.int32, name="filter_sizes")
        dy = convert_to_tensor(b, dtype=x.dtype.base_dtype, name="out_backprop")
        return create(op_type, [x, sizes, dy], attrs, scope).outputs[0]


def conv2d_backprop_input(
    input_sizes,
    filter=None,  # noqa: A002
    out_backprop=None,
    strides=None,
    padding=None,
    use_cudnn_on_gpu=True,
    data_format="NHWC",
    dilations=(1, 1, 1, 1),
    name=None,
    filters=None,
) -> Tensor:
    """The gradient of ``conv2d`` with respect to its input, of shape ``input_sizes``."""
    f = _pick(filter, filters, "'filters' and 'filter'")
    return _backprop(
        "Conv2DBackpropInput",
        f,
        input_sizes,
        out_backprop,
        strides,
        padding,
        data_format,
        dilations,
        name,
        cudnn=use_cudnn_on_gpu,
    )


def conv2d_backprop_filter(
    input,  # noqa: A002
    filter_sizes,
    out_backprop,
    strides,
    padding,
    use_cudnn_on_gpu=True,
    data_format="NHWC",
    dilations=(1, 1, 1, 1),
    name=None,
) -> Tensor:
    """The gradient of ``conv2d`` with respect to its filter, of shape ``filter_sizes``."""
    return _backprop(
        "Conv2DBackpropFilter",
        input,
        filter_sizes,
        out_backprop,
        strides,
        padding,
        data_format,
        dilations,
        name,
        cudnn=use_cudnn_on_gpu,
    )


def depthwise_conv2d_native_backprop_input(
    input_sizes,
    filter,  # noqa: A002
    out_backprop,
    strides,
    padding,
    data_format="NHWC",
    dilations=(1, 1, 1, 1),
    name=None,
) -> Tensor:
    """The gradient of ``depthwise_conv2d_native`` with respect to its input."""
    return _backprop(
        "DepthwiseConv2dNativeBackpropInput",
        filter,
        input_sizes,
        out_backprop,
        strides,
        padding,
        data_format,
        dilations,
        name,
    )


def depthwise_conv2d_native_backprop_filter(
    input,  # noqa: A002
    filter_sizes,
    out_backprop,
    strides,
    padding,
    data_format="NHWC",
    dilations=(1, 1, 1, 1),
    name=None,
) -> Tensor:
    """The gradient of ``depthwise_conv2d_native`` with respect to its filter."""
    return _backprop(
        "DepthwiseConv2dNativeBackpropFilter",
        input,
        filter_sizes,
        out_backprop,
        strides,
        padding,
        data_format,
        dilations,
        name,
    )
