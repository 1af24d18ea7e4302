"""TF1's ``tf.nn`` 3-D convolution and pooling functions (``conv3d``, ``conv3d_transpose``,
``max_pool3d``, ``avg_pool3d``, ``conv3d_backprop_filter_v2``) over the ops of
``engine.ops.conv3d``: argument normalization (ints or lists of 1, 3 or 5 for strides,
ksize and dilations) and TF1's op names."""

from __future__ import annotations

import numbers

from engine import dtypes
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.tensor_util import constant_value
from engine.ops._common import create
from engine.ops.conv3d import channel_axis, spatial_axes
from engine.ops.nn_conv import _pick

__all__ = [
    "conv3d",
    "conv3d_transpose",
    "max_pool3d",
    "avg_pool3d",
    "conv3d_backprop_filter",
    "conv3d_backprop_filter_v2",
]


def _format(data_format) -> str:
    fmt = data_format or "NDHWC"
    if fmt not in ("NDHWC", "NCDHW"):
        raise ValueError(f"data_format must be 'NDHWC' or 'NCDHW'. Received: data_format={fmt}")
    return fmt


def _sequence(value, name: str, data_format: str) -> list[int]:
    """``value`` (an int or a list of 1, 3 or 5 ints) as 5 ints in data_format order."""
    if value is None:
        raise ValueError(f"`{name}` must be given")
    values = [int(value)] if isinstance(value, numbers.Integral) else [int(v) for v in value]
    if len(values) == 5:
        return values
    if len(values) in (1, 3):
        out = [1] * 5
        for a, v in zip(spatial_axes(data_format), values * (3 // len(values))):
            out[a] = v
        return out
    raise ValueError(f"{name} should be of length 1, 3 or 5. Received: {name}={value}")


def _padding(padding) -> str:
    if not isinstance(padding, str) or padding.upper() not in ("SAME", "VALID"):
        raise ValueError(f"Padding must be 'SAME' or 'VALID'. Received: padding={padding}")
    return padding.upper()


def _conv_attrs(strides, padding, data_format, dilations) -> dict:
    fmt = _format(data_format)
    return {
        "strides": _sequence(strides, "strides", fmt),
        "padding": _padding(padding),
        "data_format": fmt,
        "dilations": _sequence(1 if dilations is None else dilations, "dilations", fmt),
    }


def conv3d(
    input,  # noqa: A002 - TF's argument names
    filter=None,  # noqa: A002
    strides=None,
    padding=None,
    data_format="NDHWC",
    dilations=(1, 1, 1, 1, 1),
    name=None,
    filters=None,
) -> Tensor:
    """A 3-D convolution of a 5-D ``input`` with a ``[kd, kh, kw, in, out]`` filter.

    >>> y = conv3d(clip, w, strides=[1, 1, 2, 2, 1], padding="SAME")  # clip: [n, d, h, w, c]
    """
    f = _pick(filter, filters, "'filters' and 'filter'")
    attrs = _conv_attrs(strides, padding, data_format, dilations)
    with name_scope(name, "Conv3D", [input, f]) as scope:
        x = convert_to_tensor(input, name="input")
        w = convert_to_tensor(f, dtype=x.dtype.base_dtype, name="filter")
        return create("Conv3D", [x, w], attrs, scope).outputs[0]


def _check_transpose_channels(w: Tensor, dy: Tensor, shape: Tensor, fmt: str) -> None:
    c = channel_axis(fmt)
    ws, vs = w.shape.as_tuple(), dy.shape.as_tuple()
    if ws is not None and vs is not None and None not in (ws[4], vs[c]) and ws[4] != vs[c]:
        raise ValueError(
            f"input channels does not match filter's input channels, {vs[c]} != {ws[4]}"
        )
    sv = constant_value(shape)
    if sv is not None and ws is not None and ws[3] is not None and int(sv[c]) != ws[3]:
        raise ValueError(
            f"output_shape does not match filter's output channels, {int(sv[c])} != {ws[3]}"
        )


def conv3d_transpose(
    value=None,
    filter=None,  # noqa: A002
    output_shape=None,
    strides=None,
    padding="SAME",
    data_format="NDHWC",
    name=None,
    input=None,  # noqa: A002
    filters=None,
    dilations=None,
) -> Tensor:
    """The gradient of ``conv3d`` with respect to its input ("deconvolution"): ``value``
    (``[n, d, h, w, in]``) by a ``[kd, kh, kw, out, in]`` filter to ``output_shape``."""
    value = _pick(value, input, "'value' and 'input'")
    f = _pick(filter, filters, "'filters' and 'filter'")
    attrs = _conv_attrs(strides, padding, data_format, dilations)
    with name_scope(name, "conv3d_transpose", [value, f, output_shape]) as scope:
        dy = convert_to_tensor(value, name="value")
        w = convert_to_tensor(f, dtype=dy.dtype.base_dtype, name="filter")
        shape = convert_to_tensor(output_shape, dtype_hint=dtypes.int32, name="output_shape")
        if shape.shape.rank is not None and shape.shape.as_list() not in ([5], [None]):
            raise ValueError(f"output_shape must have shape (5,), got {shape.shape}")
        _check_transpose_channels(w, dy, shape, attrs["data_format"])
        return create("Conv3DBackpropInputV2", [shape, w, dy], attrs, scope).outputs[0]


def conv3d_backprop_filter_v2(
    input,  # noqa: A002
    filter_sizes,
    out_backprop,
    strides,
    padding,
    data_format="NDHWC",
    dilations=(1, 1, 1, 1, 1),
    name=None,
) -> Tensor:
    """The gradient of ``conv3d`` with respect to its filter, of shape ``filter_sizes``."""
    attrs = _conv_attrs(strides, padding, data_format, dilations)
    with name_scope(name, "Conv3DBackpropFilterV2", [input, filter_sizes, out_backprop]) as scope:
        x = convert_to_tensor(input, name="input")
        sizes = convert_to_tensor(filter_sizes, dtype_hint=dtypes.int32, name="filter_sizes")
        dy = convert_to_tensor(out_backprop, dtype=x.dtype.base_dtype, name="out_backprop")
        return create("Conv3DBackpropFilterV2", [x, sizes, dy], attrs, scope).outputs[0]


conv3d_backprop_filter = conv3d_backprop_filter_v2


def _pool(op_type, value, ksize, strides, padding, data_format, name) -> Tensor:
    fmt = _format(data_format)
    attrs = {
        "ksize": _sequence(ksize, "ksize", fmt),
        "strides": _sequence(strides, "strides", fmt),
        "padding": _padding(padding),
        "data_format": fmt,
    }
    with name_scope(name, op_type, [value]) as scope:
        x = convert_to_tensor(value, name="input")
        return create(op_type, [x], attrs, scope).outputs[0]


def max_pool3d(
    input,  # noqa: A002
    ksize,
    strides,
    padding,
    data_format="NDHWC",
    name=None,
) -> Tensor:
    """Max pooling of a 5-D ``input`` over ``ksize`` windows moved by ``strides``."""
    return _pool("MaxPool3D", input, ksize, strides, padding, data_format, name)


def avg_pool3d(
    input,  # noqa: A002
    ksize,
    strides,
    padding,
    data_format="NDHWC",
    name=None,
) -> Tensor:
    """Average pooling of a 5-D ``input``; SAME windows average only the input positions
    they cover (as TF)."""
    return _pool("AvgPool3D", input, ksize, strides, padding, data_format, name)
