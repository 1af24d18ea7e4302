"""TF1's legacy ``tf.layers`` 3-D layers (``conv3d``, ``conv3d_transpose``,
``max_pooling3d``, ``average_pooling3d``) over ``engine.ops.nn_conv3d``, scoped and
weighted as the 2-D layers of ``engine.conv_layers`` are: ``<scope>/kernel`` (``[kd, kh,
kw, in, filters]``, or ``[kd, kh, kw, filters, in]`` transposed) and ``<scope>/bias``."""

from __future__ import annotations

from engine import dtypes
from engine.conv_layers import (
    _data_format,
    _deconv_length,
    _finish,
    _float_input,
    _padding,
    _tuple,
    _weights,
)
from engine.core_layers import _check_min_ndim, _dim, _layer_scope, _short_name
from engine.framework.constant_op import constant, convert_to_tensor
from engine.framework.graph import Tensor
from engine.init_ops import zeros_initializer
from engine.ops import array as array_ops
from engine.ops import array_transform, nn_conv3d

__all__ = ["conv3d", "conv3d_transpose", "max_pooling3d", "average_pooling3d"]

# channels_last / channels_first: the ops' 5-D layout, its spatial axes and BiasAdd's name.
_LAYOUTS = {
    "NHWC": ("NDHWC", (1, 2, 3), "NHWC"),
    "NCHW": ("NCDHW", (2, 3, 4), "NCHW"),
}


def _layout(data_format):
    return _LAYOUTS[_data_format(data_format)]


def _five(values, fmt: str) -> list[int]:
    """Three spatial values as the op's five, ones on the batch and channel axes."""
    return [1, *values, 1] if fmt == "NDHWC" else [1, 1, *values]


def _channels(x: Tensor, fmt: str, layer: str) -> int:
    dims = x.shape.as_tuple()
    c = dims[4 if fmt == "NDHWC" else 1] if dims is not None else None
    if c is None:
        raise ValueError(
            f"The channel dimension of the inputs to `{layer}` should be defined. Found `None`."
        )
    return c


def conv3d(
    inputs,
    filters,
    kernel_size,
    strides=(1, 1, 1),
    padding="valid",
    data_format="channels_last",
    dilation_rate=(1, 1, 1),
    activation=None,
    use_bias=True,
    kernel_initializer=None,
    bias_initializer=zeros_initializer(),
    kernel_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    kernel_constraint=None,
    bias_constraint=None,
    trainable=True,
    name=None,
    reuse=None,
) -> Tensor:
    """A 3-D convolution layer: ``activation(conv3d(inputs, kernel) + bias)``.

    >>> h = conv3d(clips, 16, 3, padding="same", activation=nn.relu)  # conv3d/kernel, ...
    """
    fmt, _, bias_fmt = _layout(data_format)
    k = _tuple(kernel_size, 3, "kernel_size")
    strides = _five(_tuple(strides, 3, "strides"), fmt)
    dilations = _five(_tuple(dilation_rate, 3, "dilation_rate"), fmt)
    pad = _padding(padding)
    with _layer_scope(name, "conv3d", reuse) as scope:
        x = _float_input(inputs, "Conv3D", 5, scope, name)
        c = _channels(x, fmt, "Conv3D")
        kernel, bias = _weights(
            (*k, c, int(filters)),
            x.dtype.base_dtype,
            use_bias,
            int(filters),
            kernel_initializer,
            bias_initializer,
            kernel_regularizer,
            bias_regularizer,
            kernel_constraint,
            bias_constraint,
            trainable,
        )
        y = nn_conv3d.conv3d(x, kernel, strides, pad, data_format=fmt, dilations=dilations)
        return _finish(y, bias, bias_fmt, activation, activity_regularizer)


def _transpose_shape(x: Tensor, axes, k, s, pad: str, filters: int, fmt: str):
    """(output_shape tensor, static output dims) of a transposed convolution layer."""
    dims = x.shape.as_tuple()
    static = [_deconv_length(dims[a], k[i], s[i], pad) for i, a in enumerate(axes)]
    sizes = []
    for i, a in enumerate(axes):
        if static[i] is not None:
            sizes.append(static[i])
            continue
        size = array_ops.shape(x)[a]
        sizes.append(size * s[i] if pad == "SAME" else size * s[i] + max(k[i] - s[i], 0))
    order = (lambda b, sp, c: [b, *sp, c]) if fmt == "NDHWC" else (lambda b, sp, c: [b, c, *sp])
    parts = order(_dim(x, 0), sizes, filters)
    if all(isinstance(p, int) for p in parts):
        shape = constant(parts, dtype=dtypes.int32)
    else:
        shape = array_transform.stack(parts)
    return shape, order(dims[0], static, filters)


def conv3d_transpose(
    inputs,
    filters,
    kernel_size,
    strides=(1, 1, 1),
    padding="valid",
    data_format="channels_last",
    activation=None,
    use_bias=True,
    kernel_initializer=None,
    bias_initializer=zeros_initializer(),
    kernel_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    kernel_constraint=None,
    bias_constraint=None,
    trainable=True,
    name=None,
    reuse=None,
) -> Tensor:
    """A transposed 3-D convolution ("deconvolution") layer; the kernel is
    ``[kd, kh, kw, filters, in_channels]``. Spatial sizes grow by ``strides``."""
    fmt, axes, bias_fmt = _layout(data_format)
    k = _tuple(kernel_size, 3, "kernel_size")
    s = _tuple(strides, 3, "strides")
    pad = _padding(padding)
    with _layer_scope(name, "conv3d_transpose", reuse) as scope:
        x = _float_input(inputs, "Conv3DTranspose", 5, scope, name)
        c = _channels(x, fmt, "Conv3DTranspose")
        kernel, bias = _weights(
            (*k, int(filters), c),
            x.dtype.base_dtype,
            use_bias,
            int(filters),
            kernel_initializer,
            bias_initializer,
            kernel_regularizer,
            bias_regularizer,
            kernel_constraint,
            bias_constraint,
            trainable,
        )
        shape, static = _transpose_shape(x, axes, k, s, pad, int(filters), fmt)
        y = nn_conv3d.conv3d_transpose(x, kernel, shape, _five(s, fmt), pad, data_format=fmt)
        y.set_shape(static)
        return _finish(y, bias, bias_fmt, activation, activity_regularizer)


def _pooling(op, default_name, inputs, pool_size, strides, padding, data_format, name):
    fmt, _, _ = _layout(data_format)
    k = _five(_tuple(pool_size, 3, "pool_size"), fmt)
    s = _five(_tuple(strides, 3, "strides"), fmt)
    with _layer_scope(name, default_name) as scope:
        x = convert_to_tensor(inputs)
        _check_min_ndim(x, name or _short_name(scope), 5)
        return op(x, k, s, _padding(padding), data_format=fmt)


def max_pooling3d(
    inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None
) -> Tensor:
    """Max pooling over ``pool_size`` windows (ints or triples) moved by ``strides``."""
    return _pooling(
        nn_conv3d.max_pool3d,
        "max_pooling3d",
        inputs,
        pool_size,
        strides,
        padding,
        data_format,
        name,
    )


def average_pooling3d(
    inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None
) -> Tensor:
    """Average pooling over ``pool_size`` windows moved by ``strides``."""
    return _pooling(
        nn_conv3d.avg_pool3d,
        "average_pooling3d",
        inputs,
        pool_size,
        strides,
        padding,
        data_format,
        name,
    )
