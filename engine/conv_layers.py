"""TF1's legacy ``tf.layers`` convolution, pooling and batch-normalization layers, functional
forms (``conv2d``, ``max_pooling2d``, ...) over ``engine.ops.nn_conv``.

As with ``dense``, each call opens a variable scope named as TF1 names it (``conv2d``,
``conv2d_1``, ... or ``name``), so variables are ``<scope>/kernel``, ``<scope>/bias``,
``<scope>/gamma``, ... and can be shared with ``name=..., reuse=True``.
"""

from __future__ import annotations

import numbers

from engine import dtypes
from engine.core_layers import (
    _check_min_ndim,
    _dim,
    _layer_scope,
    _short_name,
    _static_training,
)
from engine.framework.constant_op import constant, convert_to_tensor
from engine.framework.graph import GraphKeys, Tensor, add_to_collection, name_scope
from engine.init_ops import ones_initializer, zeros_initializer
from engine.ops import array as array_ops
from engine.ops import array_transform, control_flow, nn, nn_conv, state
from engine.ops import math as math_ops
from engine.variable_scope import get_variable

__all__ = [
    "conv1d",
    "conv2d",
    "conv2d_transpose",
    "separable_conv2d",
    "max_pooling2d",
    "average_pooling2d",
    "max_pooling1d",
    "average_pooling1d",
    "batch_normalization",
]


def _tuple(value, n: int, name: str) -> tuple[int, ...]:
    if isinstance(value, numbers.Integral):
        return (int(value),) * n
    value = tuple(int(v) for v in value)
    if len(value) != n:
        raise ValueError(
            f"The `{name}` argument must be a tuple of {n} integers. Received: {value}"
        )
    return value


def _data_format(data_format: str) -> str:
    fmt = (data_format or "channels_last").lower()
    if fmt not in ("channels_last", "channels_first"):
        raise ValueError(
            "The `data_format` argument must be one of `channels_first`, `channels_last`. "
            f"Received: {data_format}"
        )
    return "NHWC" if fmt == "channels_last" else "NCHW"


def _padding(padding: str) -> str:
    p = str(padding).lower()
    if p not in ("valid", "same"):
        raise ValueError(
            f"The `padding` argument must be one of `valid`, `same`. Received: {padding}"
        )
    return p.upper()


def _channels(x: Tensor, fmt: str, layer: str) -> int:
    dims = x.shape.as_tuple()
    c = dims[3 if fmt == "NHWC" else 1] if dims is not None else None
    if c is None:
        raise ValueError(
            f"The channel dimension of the inputs to `{layer}` should be defined. Found `None`."
        )
    return c


def _finish(outputs, bias, fmt, activation, activity_regularizer):
    if bias is not None:
        outputs = nn.bias_add(outputs, bias, data_format=fmt)
    if activation is not None:
        outputs = activation(outputs)
    if activity_regularizer is not None:
        with name_scope("ActivityRegularizer"):
            loss = activity_regularizer(outputs)
            batch = math_ops.cast(_dim(outputs, 0), loss.dtype.base_dtype)
            add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss / batch)
    return outputs


def _weights(
    shape,
    dtype,
    use_bias,
    bias_units,
    kernel_initializer,
    bias_initializer,
    kernel_regularizer,
    bias_regularizer,
    kernel_constraint,
    bias_constraint,
    trainable,
    kernel_name="kernel",
):
    kernel = get_variable(
        kernel_name,
        shape=list(shape),
        dtype=dtype,
        initializer=kernel_initializer,
        regularizer=kernel_regularizer,
        trainable=trainable,
        constraint=kernel_constraint,
    )
    bias = None
    if use_bias:
        bias = get_variable(
            "bias",
            shape=[bias_units],
            dtype=dtype,
            initializer=bias_initializer,
            regularizer=bias_regularizer,
            trainable=trainable,
            constraint=bias_constraint,
        )
    return kernel, bias


def _float_input(inputs, layer: str, min_ndim: int, scope, name):
    x = convert_to_tensor(inputs)
    if x.shape.rank is not None and x.shape.rank != min_ndim:
        raise ValueError(
            f"Input 0 of layer {name or _short_name(scope)} is incompatible with the layer: "
            f": expected ndim={min_ndim}, found ndim={x.shape.rank}. Full shape received: "
            f"{x.shape}"
        )
    if not x.dtype.base_dtype.is_floating:
        raise TypeError(f"Unable to build `{layer}` layer with non-floating point dtype {x.dtype}")
    return x


def conv2d(
    inputs,
    filters,
    kernel_size,
    strides=(1, 1),
    padding="valid",
    data_format="channels_last",
    dilation_rate=(1, 1),
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
    """A 2-D convolution layer: ``activation(conv2d(inputs, kernel) + bias)``.

    Creates ``<scope>/kernel`` (``[kh, kw, in_channels, filters]``) and ``<scope>/bias``.

    >>> h = conv2d(images, 32, 5, padding="same", activation=nn.relu)  # conv2d/kernel, ...
    """
    fmt = _data_format(data_format)
    kh, kw = _tuple(kernel_size, 2, "kernel_size")
    strides = _tuple(strides, 2, "strides")
    dilation = _tuple(dilation_rate, 2, "dilation_rate")
    pad = _padding(padding)
    with _layer_scope(name, "conv2d", reuse) as scope:
        x = _float_input(inputs, "Conv2D", 4, scope, name)
        c = _channels(x, fmt, "Conv2D")
        kernel, bias = _weights(
            (kh, kw, c, int(filters)),
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
        y = nn_conv.conv2d(x, kernel, list(strides), pad, data_format=fmt, dilations=list(dilation))
        return _finish(y, bias, fmt, activation, activity_regularizer)


def conv1d(
    inputs,
    filters,
    kernel_size,
    strides=1,
    padding="valid",
    data_format="channels_last",
    dilation_rate=1,
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
    """A 1-D convolution layer over ``[batch, width, channels]`` inputs."""
    if _data_format(data_format) != "NHWC":
        raise NotImplementedError("conv1d supports data_format='channels_last' only")
    (k,) = _tuple(kernel_size, 1, "kernel_size")
    (s,) = _tuple(strides, 1, "strides")
    (d,) = _tuple(dilation_rate, 1, "dilation_rate")
    with _layer_scope(name, "conv1d", reuse) as scope:
        x = _float_input(inputs, "Conv1D", 3, scope, name)
        c = x.shape.as_tuple()[2]
        if c is None:
            raise ValueError("The channel dimension of the inputs to `Conv1D` should be defined.")
        kernel, bias = _weights(
            (k, c, int(filters)),
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
        y = nn_conv.conv1d(x, kernel, s, _padding(padding), dilations=d)
        return _finish(y, bias, "NHWC", activation, activity_regularizer)


def _deconv_length(size, k, stride, padding):
    if size is None:
        return None
    return size * stride if padding == "SAME" else size * stride + max(k - stride, 0)


def conv2d_transpose(
    inputs,
    filters,
    kernel_size,
    strides=(1, 1),
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
    """A transposed 2-D convolution ("deconvolution") layer; the kernel is
    ``[kh, kw, filters, in_channels]``. Spatial sizes grow by ``strides``."""
    fmt = _data_format(data_format)
    kh, kw = _tuple(kernel_size, 2, "kernel_size")
    sh, sw = _tuple(strides, 2, "strides")
    pad = _padding(padding)
    with _layer_scope(name, "conv2d_transpose", reuse) as scope:
        x = _float_input(inputs, "Conv2DTranspose", 4, scope, name)
        c = _channels(x, fmt, "Conv2DTranspose")
        kernel, bias = _weights(
            (kh, kw, int(filters), c),
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
        ha, wa = (1, 2) if fmt == "NHWC" else (2, 3)
        dims = x.shape.as_tuple()
        oh = _deconv_length(dims[ha], kh, sh, pad)
        ow = _deconv_length(dims[wa], kw, sw, pad)

        def dynamic(axis, static, k, s):
            if static is not None:
                return static
            size = array_ops.shape(x)[axis]
            return size * s if pad == "SAME" else size * s + max(k - s, 0)

        hw = [dynamic(ha, oh, kh, sh), dynamic(wa, ow, kw, sw)]
        parts = [_dim(x, 0)] + (hw + [int(filters)] if fmt == "NHWC" else [int(filters)] + hw)
        if all(isinstance(p, int) for p in parts):
            out_shape = constant(parts, dtype=dtypes.int32)
        else:
            out_shape = array_transform.stack(parts)
        strides4 = [1, sh, sw, 1] if fmt == "NHWC" else [1, 1, sh, sw]
        y = nn_conv.conv2d_transpose(x, kernel, out_shape, strides4, pad, data_format=fmt)
        static = [dims[0]] + ([oh, ow, int(filters)] if fmt == "NHWC" else [int(filters), oh, ow])
        y.set_shape(static)
        return _finish(y, bias, fmt, activation, activity_regularizer)


def separable_conv2d(
    inputs,
    filters,
    kernel_size,
    strides=(1, 1),
    padding="valid",
    data_format="channels_last",
    dilation_rate=(1, 1),
    depth_multiplier=1,
    activation=None,
    use_bias=True,
    depthwise_initializer=None,
    pointwise_initializer=None,
    bias_initializer=zeros_initializer(),
    depthwise_regularizer=None,
    pointwise_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    depthwise_constraint=None,
    pointwise_constraint=None,
    bias_constraint=None,
    trainable=True,
    name=None,
    reuse=None,
) -> Tensor:
    """A depthwise-separable 2-D convolution layer (``depthwise_kernel``,
    ``pointwise_kernel``, ``bias``)."""
    fmt = _data_format(data_format)
    kh, kw = _tuple(kernel_size, 2, "kernel_size")
    sh, sw = _tuple(strides, 2, "strides")
    dilation = _tuple(dilation_rate, 2, "dilation_rate")
    pad = _padding(padding)
    with _layer_scope(name, "separable_conv2d", reuse) as scope:
        x = _float_input(inputs, "SeparableConv2D", 4, scope, name)
        c = _channels(x, fmt, "SeparableConv2D")
        dtype = x.dtype.base_dtype
        m = int(depth_multiplier)
        depthwise = get_variable(
            "depthwise_kernel",
            shape=[kh, kw, c, m],
            dtype=dtype,
            initializer=depthwise_initializer,
            regularizer=depthwise_regularizer,
            trainable=trainable,
            constraint=depthwise_constraint,
        )
        pointwise, bias = _weights(
            (1, 1, c * m, int(filters)),
            dtype,
            use_bias,
            int(filters),
            pointwise_initializer,
            bias_initializer,
            pointwise_regularizer,
            bias_regularizer,
            pointwise_constraint,
            bias_constraint,
            trainable,
            kernel_name="pointwise_kernel",
        )
        strides4 = [1, sh, sw, 1] if fmt == "NHWC" else [1, 1, sh, sw]
        y = nn_conv.separable_conv2d(
            x, depthwise, pointwise, strides4, pad, data_format=fmt, dilations=list(dilation)
        )
        return _finish(y, bias, fmt, activation, activity_regularizer)


def _pooling(op, default_name, inputs, pool_size, strides, padding, data_format, name):
    fmt = _data_format(data_format)
    kh, kw = _tuple(pool_size, 2, "pool_size")
    sh, sw = _tuple(strides, 2, "strides")
    with _layer_scope(name, default_name) as scope:
        x = convert_to_tensor(inputs)
        _check_min_ndim(x, name or _short_name(scope), 4)
        k4 = [1, kh, kw, 1] if fmt == "NHWC" else [1, 1, kh, kw]
        s4 = [1, sh, sw, 1] if fmt == "NHWC" else [1, 1, sh, sw]
        return op(x, k4, s4, _padding(padding), data_format=fmt)


def max_pooling2d(
    inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None
) -> Tensor:
    """Max pooling over ``pool_size`` windows (ints or pairs) moved by ``strides``."""
    return _pooling(
        nn_conv.max_pool, "max_pooling2d", inputs, pool_size, strides, padding, data_format, name
    )


def average_pooling2d(
    inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None
) -> Tensor:
    """Average pooling over ``pool_size`` windows moved by ``strides``."""
    return _pooling(
        nn_conv.avg_pool,
        "average_pooling2d",
        inputs,
        pool_size,
        strides,
        padding,
        data_format,
        name,
    )


def _pooling1d(op, default_name, inputs, pool_size, strides, padding, data_format, name):
    if _data_format(data_format) != "NHWC":
        raise NotImplementedError(f"{default_name} supports data_format='channels_last' only")
    (k,) = _tuple(pool_size, 1, "pool_size")
    (s,) = _tuple(strides, 1, "strides")
    with _layer_scope(name, default_name):
        x = array_ops.expand_dims(convert_to_tensor(inputs), 1)
        y = op(x, [1, 1, k, 1], [1, 1, s, 1], _padding(padding))
        return array_ops.squeeze(y, [1])


def max_pooling1d(
    inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None
) -> Tensor:
    """Max pooling over ``[batch, width, channels]`` inputs."""
    return _pooling1d(
        nn_conv.max_pool, "max_pooling1d", inputs, pool_size, strides, padding, data_format, name
    )


def average_pooling1d(
    inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None
) -> Tensor:
    """Average pooling over ``[batch, width, channels]`` inputs."""
    return _pooling1d(
        nn_conv.avg_pool,
        "average_pooling1d",
        inputs,
        pool_size,
        strides,
        padding,
        data_format,
        name,
    )


# -----------------------------------------------------------------------------------------
# batch_normalization
# -----------------------------------------------------------------------------------------


def _assign_moving_average(variable, value, momentum):
    with name_scope(None, "AssignMovingAvg", [variable, value, momentum]) as scope:
        decay = math_ops.subtract(1.0, momentum, name="decay")
        delta = math_ops.multiply(math_ops.subtract(variable, value), decay)
        return state.assign_sub(variable, delta, name=scope)


def _bn_statistics(x, axis, fmt, gamma, beta, mean_var, epsilon, training, static):
    """(outputs, batch mean, batch variance) for training; moving statistics otherwise."""
    moving_mean, moving_variance = mean_var
    fused = fmt is not None

    def train():
        if fused:
            return nn_conv.fused_batch_norm(x, gamma, beta, epsilon=epsilon, data_format=fmt)
        axes = [i for i in range(x.shape.rank) if i != axis]
        mean, variance = nn.moments(x, axes)
        return nn.batch_normalization(x, mean, variance, beta, gamma, epsilon), mean, variance

    def infer():
        if fused:
            return nn_conv.fused_batch_norm(
                x,
                gamma,
                beta,
                moving_mean,
                moving_variance,
                epsilon=epsilon,
                data_format=fmt,
                is_training=False,
            )
        shape = [1] * x.shape.rank
        shape[axis] = -1

        def r(v):
            return array_ops.reshape(v, shape)

        y = nn.batch_normalization(
            x, r(moving_mean), r(moving_variance), r(beta), r(gamma), epsilon
        )
        return y, moving_mean, moving_variance

    if static is True:
        return train()
    if static is False:
        return infer()
    return control_flow.cond(training, train, infer)


def batch_normalization(
    inputs,
    axis=-1,
    momentum=0.99,
    epsilon=1e-3,
    center=True,
    scale=True,
    beta_initializer=zeros_initializer(),
    gamma_initializer=ones_initializer(),
    moving_mean_initializer=zeros_initializer(),
    moving_variance_initializer=ones_initializer(),
    beta_regularizer=None,
    gamma_regularizer=None,
    beta_constraint=None,
    gamma_constraint=None,
    training=False,
    trainable=True,
    name=None,
    reuse=None,
    renorm=False,
    renorm_clipping=None,
    renorm_momentum=0.99,
    fused=None,
    virtual_batch_size=None,
    adjustment=None,
) -> Tensor:
    """Batch normalization over every axis but ``axis``.

    Creates ``gamma``, ``beta`` (trainable) and ``moving_mean``, ``moving_variance``. When
    training (a bool or a bool tensor), normalizes with the batch statistics and puts the
    moving-average updates in ``GraphKeys.UPDATE_OPS``: run them with the train op, as in TF1::

        update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        with tf.control_dependencies(update_ops):
            train_op = optimizer.minimize(loss)

    4-D inputs normalized over the channel axis use one ``FusedBatchNormV3`` op.
    """
    del renorm_clipping, renorm_momentum  # meaningful only with renorm, refused below
    if renorm or virtual_batch_size is not None or adjustment is not None:
        raise NotImplementedError(
            "batch_normalization: renorm, virtual_batch_size and adjustment are not supported"
        )
    static = _static_training(training)
    with _layer_scope(name, "batch_normalization", reuse):
        x = convert_to_tensor(inputs)
        axis, c, pdtype, fmt = _bn_layout(x, axis, fused)

        def param(pname, init, reg=None, constraint=None, train_it=False):
            return get_variable(pname, [c], pdtype, init, reg, train_it, constraint=constraint)

        gamma = (
            param("gamma", gamma_initializer, gamma_regularizer, gamma_constraint, trainable)
            if scale
            else constant(1.0, dtype=pdtype, shape=[c])
        )
        beta = (
            param("beta", beta_initializer, beta_regularizer, beta_constraint, trainable)
            if center
            else constant(0.0, dtype=pdtype, shape=[c])
        )
        moving = (
            param("moving_mean", moving_mean_initializer),
            param("moving_variance", moving_variance_initializer),
        )
        y, mean, variance = _bn_statistics(
            x, axis, fmt, gamma, beta, moving, epsilon, training, static
        )
        if static is not False:
            _add_moving_average_updates(
                moving, (mean, variance), momentum, training, static, pdtype
            )
        return y


def _bn_layout(x: Tensor, axis, fused):
    """(axis, channels, parameter dtype, fused data format or None) for ``x``."""
    rank = x.shape.rank
    if rank is None:
        raise ValueError(f"Input has undefined rank: {x.shape}")
    if not isinstance(axis, numbers.Integral):
        raise NotImplementedError("batch_normalization supports a single int axis")
    if not -rank <= axis < rank:
        raise ValueError(f"Invalid axis: {axis}")
    axis = axis % rank
    c = x.shape.as_tuple()[axis]
    if c is None:
        raise ValueError(
            f"Axis {axis} of input tensor should have a defined dimension but the layer "
            f"received an input with shape {x.shape}."
        )
    dtype = x.dtype.base_dtype
    if not dtype.is_floating:
        raise TypeError(f"Unable to build `BatchNormalization` with dtype {dtype}")
    pdtype = dtypes.float32 if dtype is dtypes.float16 else dtype
    fmt = None
    if rank == 4 and axis in (1, 3) and fused is not False:
        fmt = "NHWC" if axis == 3 else "NCHW"
    elif fused:
        raise ValueError("fused=True needs a 4-D input normalized over axis 1 or 3")
    return axis, c, pdtype, fmt


def _add_moving_average_updates(moving, batch, momentum, training, static, pdtype):
    """``AssignMovingAvg`` ops in UPDATE_OPS; with a tensor ``training`` the momentum is 1
    (no change) when not training, as TF1 does."""
    if static is None:
        m = control_flow.cond(
            training,
            lambda: constant(momentum, dtype=pdtype),
            lambda: constant(1.0, dtype=pdtype),
        )
    else:
        m = constant(momentum, dtype=pdtype)
    for var, value in zip(moving, batch):
        add_to_collection(GraphKeys.UPDATE_OPS, _assign_moving_average(var, value, m))
