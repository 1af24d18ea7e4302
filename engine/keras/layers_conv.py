"""Keras' convolution layers in TF1 graph mode: ``Conv1D``/``2D``/``3D``,
``Conv2DTranspose``, ``SeparableConv1D``/``2D`` and ``DepthwiseConv2D``.

Kernels are created as Keras names and shapes them (``conv2d/kernel:0`` is
``[kh, kw, in, filters]``, ``separable_conv2d/depthwise_kernel:0`` and ``pointwise_kernel``,
``depthwise_conv2d/depthwise_kernel:0`` is ``[kh, kw, in, depth_multiplier]``); the maths are
the engine's ``tf.nn`` convolutions in NHWC or NCHW order.
"""

from __future__ import annotations

from engine.keras import activations, backend
from engine.keras.base_layer import InputSpec, Layer
from engine.keras.conv_utils import (
    activation_config,
    conv_output_length,
    deconv_output_length,
    normalize_data_format,
    normalize_padding,
    normalize_tuple,
    tf_data_format,
)
from engine.ops import array as array_ops
from engine.ops import array_transform, nn, nn_conv, nn_conv3d
from engine.tensor_shape import TensorShape

__all__ = [
    "Conv1D",
    "Conv2D",
    "Conv2DTranspose",
    "Conv3D",
    "Convolution1D",
    "Convolution2D",
    "Convolution2DTranspose",
    "Convolution3D",
    "DepthwiseConv2D",
    "SeparableConv1D",
    "SeparableConv2D",
    "SeparableConvolution1D",
    "SeparableConvolution2D",
]


def _dims(shape) -> list:
    """A TensorShape (or tuple) as a list of ints and Nones."""
    shape = TensorShape(shape)
    return shape.as_list() if shape.rank is not None else None


class Conv(Layer):
    """The N-D convolution layer ``Conv1D``/``Conv2D``/``Conv3D`` are (Keras' ``Conv``)."""

    def __init__(
        self,
        rank,
        filters,
        kernel_size,
        strides=1,
        padding="valid",
        data_format=None,
        dilation_rate=1,
        groups=1,
        activation=None,
        use_bias=True,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        bias_regularizer=None,
        activity_regularizer=None,
        kernel_constraint=None,
        bias_constraint=None,
        **kwargs,
    ):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.rank = rank
        if isinstance(filters, float):
            filters = int(filters)
        if filters is not None and filters <= 0:
            raise ValueError(
                "Invalid value for argument `filters`. Expected a strictly positive value. "
                f"Received filters={filters}."
            )
        self.filters = filters
        self.groups = groups or 1
        self.kernel_size = normalize_tuple(kernel_size, rank, "kernel_size")
        self.strides = normalize_tuple(strides, rank, "strides")
        self.padding = normalize_padding(padding)
        self.data_format = normalize_data_format(data_format)
        self.dilation_rate = normalize_tuple(dilation_rate, rank, "dilation_rate")
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer
        self.kernel_regularizer = kernel_regularizer
        self.bias_regularizer = bias_regularizer
        self.kernel_constraint = kernel_constraint
        self.bias_constraint = bias_constraint
        self.input_spec = InputSpec(ndim=rank + 2)
        self._validate_init()

    def _validate_init(self) -> None:
        if self.filters is not None and self.filters % self.groups != 0:
            raise ValueError(
                "The number of filters must be evenly divisible by the number of groups. "
                f"Received: groups={self.groups}, filters={self.filters}"
            )
        if self.padding == "causal" and not isinstance(self, (Conv1D, SeparableConv1D)):
            raise ValueError("Causal padding is only supported for `Conv1D`and `SeparableConv1D`.")
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(
                "`strides > 1` not supported in conjunction with `dilation_rate > 1`. "
                f"Received: strides={self.strides} and dilation_rate={self.dilation_rate}"
            )

    @property
    def _channel_axis(self) -> int:
        return -1 if self.data_format == "channels_last" else 1

    def _input_channel(self, input_shape) -> int:
        dims = _dims(input_shape)
        if dims is None or len(dims) != self.rank + 2:
            raise ValueError(
                f'Input 0 of layer "{self.name}" is incompatible with the layer: expected '
                f"ndim={self.rank + 2}, found ndim={None if dims is None else len(dims)}. "
                f"Full shape received: {input_shape}"
            )
        channel = dims[self._channel_axis]
        if channel is None:
            raise ValueError(
                "The channel dimension of the inputs should be defined. The input_shape "
                f"received is {input_shape}, where axis {self._channel_axis} (0-based) is the "
                "channel dimension, which found to be `None`."
            )
        return channel

    def _add_bias(self, size: int) -> None:
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(
                "bias",
                (size,),
                initializer=self.bias_initializer,
                regularizer=self.bias_regularizer,
                constraint=self.bias_constraint,
            )

    def build(self, input_shape):
        channel = self._input_channel(input_shape)
        if channel % self.groups != 0:
            raise ValueError(
                "The number of input channels must be evenly divisible by the number of "
                f"groups. Received groups={self.groups}, but the input has {channel} channels "
                f"(full input shape is {input_shape})."
            )
        self.compute_output_shape(input_shape)
        self.kernel = self.add_weight(
            "kernel",
            (*self.kernel_size, channel // self.groups, self.filters),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
        )
        self._add_bias(self.filters)
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={self._channel_axis: channel})
        self.built = True

    def _causal_pad(self, inputs):
        left = self.dilation_rate[0] * (self.kernel_size[0] - 1)
        if self.data_format == "channels_last":
            return array_transform.pad(inputs, [[0, 0], [left, 0], [0, 0]])
        return array_transform.pad(inputs, [[0, 0], [0, 0], [left, 0]])

    def _convolution(self, inputs, kernel):
        fmt = tf_data_format(self.data_format, self.rank + 2)
        padding = "VALID" if self.padding == "causal" else self.padding.upper()
        if self.rank == 1:
            return nn_conv.conv1d(
                inputs,
                kernel,
                self.strides[0],
                padding,
                data_format=fmt,
                dilations=self.dilation_rate[0],
            )
        conv = nn_conv.conv2d if self.rank == 2 else nn_conv3d.conv3d
        return conv(
            inputs,
            kernel,
            strides=list(self.strides),
            padding=padding,
            data_format=fmt,
            dilations=list(self.dilation_rate),
        )

    def _finish(self, outputs):
        if self.use_bias:
            fmt = "NHWC" if self.data_format == "channels_last" else "NCHW"
            outputs = nn.bias_add(outputs, self.bias, data_format=fmt)
        if self.activation is not activations.linear:
            outputs = self.activation(outputs)
        return outputs

    def call(self, inputs):
        if self.padding == "causal":
            inputs = self._causal_pad(inputs)
        return self._finish(self._convolution(inputs, self.kernel))

    def _spatial_output(self, spatial) -> list:
        return [
            conv_output_length(d, k, self.padding, s, dilation=r)
            for d, k, s, r in zip(spatial, self.kernel_size, self.strides, self.dilation_rate)
        ]

    def _out_channels(self, input_shape) -> int:  # noqa: ARG002 - depthwise uses it
        return self.filters

    def compute_output_shape(self, input_shape):
        dims = _dims(input_shape)
        last = self.data_format == "channels_last"
        spatial = self._spatial_output(dims[1:-1] if last else dims[2:])
        if any(d is not None and d <= 0 for d in spatial):
            raise ValueError(
                f"One of the dimensions in the output is <= 0 due to downsampling in "
                f"{self.name}. Consider increasing the input size. Received input shape "
                f"{TensorShape(input_shape)} which would produce output shape with a zero or "
                "negative value in a dimension."
            )
        channels = self._out_channels(dims)
        out = [dims[0], *spatial, channels] if last else [dims[0], channels, *spatial]
        return TensorShape(out)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "filters": self.filters,
            "kernel_size": self.kernel_size,
            "strides": self.strides,
            "padding": self.padding,
            "data_format": self.data_format,
            "dilation_rate": self.dilation_rate,
            "groups": self.groups,
            "activation": activation_config(self.activation),
            "use_bias": self.use_bias,
        }


class Conv1D(Conv):
    """1-D convolution over ``(batch, steps, channels)``; ``padding='causal'`` pads the left
    so output ``t`` sees only inputs ``<= t``."""

    def __init__(
        self,
        filters,
        kernel_size,
        strides=1,
        padding="valid",
        data_format="channels_last",
        dilation_rate=1,
        **kwargs,
    ):
        super().__init__(
            1, filters, kernel_size, strides, padding, data_format, dilation_rate, **kwargs
        )


class Conv2D(Conv):
    """2-D convolution over images, kernel ``[kh, kw, in, filters]``.

    >>> y = Conv2D(16, 3, padding="same", activation="relu")(images)
    """

    def __init__(
        self,
        filters,
        kernel_size,
        strides=(1, 1),
        padding="valid",
        data_format=None,
        dilation_rate=(1, 1),
        **kwargs,
    ):
        super().__init__(
            2, filters, kernel_size, strides, padding, data_format, dilation_rate, **kwargs
        )


class Conv3D(Conv):
    """3-D convolution over volumes, kernel ``[kd, kh, kw, in, filters]``."""

    def __init__(
        self,
        filters,
        kernel_size,
        strides=(1, 1, 1),
        padding="valid",
        data_format=None,
        dilation_rate=(1, 1, 1),
        **kwargs,
    ):
        super().__init__(
            3, filters, kernel_size, strides, padding, data_format, dilation_rate, **kwargs
        )


class Conv2DTranspose(Conv2D):
    """The transpose of ``Conv2D`` ("deconvolution"), kernel ``[kh, kw, filters, in]``."""

    def __init__(
        self,
        filters,
        kernel_size,
        strides=(1, 1),
        padding="valid",
        output_padding=None,
        data_format=None,
        dilation_rate=(1, 1),
        **kwargs,
    ):
        super().__init__(
            filters, kernel_size, strides, padding, data_format, dilation_rate, **kwargs
        )
        self.output_padding = output_padding
        if output_padding is not None:
            self.output_padding = normalize_tuple(
                output_padding, 2, "output_padding", allow_zero=True
            )
            for stride, out_pad in zip(self.strides, self.output_padding):
                if out_pad >= stride:
                    raise ValueError(
                        "Strides must be greater than output padding. Received strides="
                        f"{self.strides}, output_padding={self.output_padding}."
                    )

    def build(self, input_shape):
        dims = _dims(input_shape)
        if dims is None or len(dims) != 4:
            raise ValueError(
                f"Inputs should have rank 4. Received input_shape={TensorShape(input_shape)}."
            )
        channel = self._input_channel(input_shape)
        self.kernel = self.add_weight(
            "kernel",
            (*self.kernel_size, self.filters, channel),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
        )
        self._add_bias(self.filters)
        self.input_spec = InputSpec(ndim=4, axes={self._channel_axis: channel})
        self.built = True

    def _spatial_output(self, spatial) -> list:
        pads = self.output_padding or (None, None)
        return [
            deconv_output_length(d, k, self.padding, output_padding=p, stride=s, dilation=r)
            for d, k, p, s, r in zip(
                spatial, self.kernel_size, pads, self.strides, self.dilation_rate
            )
        ]

    def call(self, inputs):
        last = self.data_format == "channels_last"
        h_axis, w_axis = (1, 2) if last else (2, 3)
        static = backend.int_shape(inputs)
        dynamic = array_ops.shape(inputs)
        sizes = [static[a] if static[a] is not None else dynamic[a] for a in (h_axis, w_axis)]
        out_h, out_w = self._spatial_output(sizes)
        dims = [dynamic[0], out_h, out_w, self.filters]
        if not last:
            dims = [dynamic[0], self.filters, out_h, out_w]
        outputs = nn_conv.conv2d_transpose(
            inputs,
            self.kernel,
            array_transform.stack(dims),
            list(self.strides),
            padding=self.padding.upper(),
            data_format=tf_data_format(self.data_format, 4),
            dilations=list(self.dilation_rate),
        )
        outputs.set_shape(self.compute_output_shape(inputs.shape))
        return self._finish(outputs)

    def get_config(self) -> dict:
        return {**super().get_config(), "output_padding": self.output_padding}


class SeparableConv(Conv):
    """A depthwise convolution (``depth_multiplier`` filters per input channel) followed by a
    1x1 ``pointwise`` convolution to ``filters`` channels."""

    def __init__(
        self,
        rank,
        filters,
        kernel_size,
        strides=1,
        padding="valid",
        data_format=None,
        dilation_rate=1,
        depth_multiplier=1,
        depthwise_initializer="glorot_uniform",
        pointwise_initializer="glorot_uniform",
        depthwise_regularizer=None,
        pointwise_regularizer=None,
        depthwise_constraint=None,
        pointwise_constraint=None,
        **kwargs,
    ):
        super().__init__(
            rank, filters, kernel_size, strides, padding, data_format, dilation_rate, **kwargs
        )
        self.depth_multiplier = int(depth_multiplier)
        self.depthwise_initializer = depthwise_initializer
        self.pointwise_initializer = pointwise_initializer
        self.depthwise_regularizer = depthwise_regularizer
        self.pointwise_regularizer = pointwise_regularizer
        self.depthwise_constraint = depthwise_constraint
        self.pointwise_constraint = pointwise_constraint

    def build(self, input_shape):
        channel = self._input_channel(input_shape)
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel",
            (*self.kernel_size, channel, self.depth_multiplier),
            initializer=self.depthwise_initializer,
            regularizer=self.depthwise_regularizer,
            constraint=self.depthwise_constraint,
        )
        self.pointwise_kernel = self.add_weight(
            "pointwise_kernel",
            (*(1,) * self.rank, self.depth_multiplier * channel, self.filters),
            initializer=self.pointwise_initializer,
            regularizer=self.pointwise_regularizer,
            constraint=self.pointwise_constraint,
        )
        self._add_bias(self.filters)
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={self._channel_axis: channel})
        self.built = True

    def call(self, inputs):
        if self.padding == "causal":
            inputs = self._causal_pad(inputs)
        depthwise, pointwise = self.depthwise_kernel, self.pointwise_kernel
        strides, rate = list(self.strides), list(self.dilation_rate)
        if self.rank == 1:
            spatial = 1 if self.data_format == "channels_last" else 2
            inputs = array_ops.expand_dims(inputs, spatial)
            depthwise = array_ops.expand_dims(depthwise, 0)
            pointwise = array_ops.expand_dims(pointwise, 0)
            strides, rate = [1, *strides], [1, *rate]
        padding = "VALID" if self.padding == "causal" else self.padding.upper()
        outputs = nn_conv.separable_conv2d(
            inputs,
            depthwise,
            pointwise,
            strides=strides,
            padding=padding,
            rate=rate,
            data_format=tf_data_format(self.data_format, 4),
        )
        if self.rank == 1:
            outputs = array_ops.squeeze(outputs, [spatial])
        return self._finish(outputs)

    def get_config(self) -> dict:
        return {**super().get_config(), "depth_multiplier": self.depth_multiplier}


class SeparableConv1D(SeparableConv):
    def __init__(
        self,
        filters,
        kernel_size,
        strides=1,
        padding="valid",
        data_format=None,
        dilation_rate=1,
        **kwargs,
    ):
        super().__init__(
            1, filters, kernel_size, strides, padding, data_format, dilation_rate, **kwargs
        )


class SeparableConv2D(SeparableConv):
    def __init__(
        self,
        filters,
        kernel_size,
        strides=(1, 1),
        padding="valid",
        data_format=None,
        dilation_rate=(1, 1),
        **kwargs,
    ):
        super().__init__(
            2, filters, kernel_size, strides, padding, data_format, dilation_rate, **kwargs
        )


class DepthwiseConv2D(Conv2D):
    """Each input channel convolved with its own ``depth_multiplier`` filters; the kernel is
    ``depthwise_kernel`` ``[kh, kw, in, depth_multiplier]``."""

    def __init__(
        self,
        kernel_size,
        strides=(1, 1),
        padding="valid",
        depth_multiplier=1,
        data_format=None,
        dilation_rate=(1, 1),
        depthwise_initializer="glorot_uniform",
        depthwise_regularizer=None,
        depthwise_constraint=None,
        **kwargs,
    ):
        super().__init__(None, kernel_size, strides, padding, data_format, dilation_rate, **kwargs)
        self.depth_multiplier = int(depth_multiplier)
        self.depthwise_initializer = depthwise_initializer
        self.depthwise_regularizer = depthwise_regularizer
        self.depthwise_constraint = depthwise_constraint

    def build(self, input_shape):
        dims = _dims(input_shape)
        if dims is None or len(dims) < 4:
            raise ValueError(
                "Inputs to `DepthwiseConv2D` should have rank 4. "
                f"Received input_shape={TensorShape(input_shape)}."
            )
        channel = self._input_channel(input_shape)
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel",
            (*self.kernel_size, channel, self.depth_multiplier),
            initializer=self.depthwise_initializer,
            regularizer=self.depthwise_regularizer,
            constraint=self.depthwise_constraint,
        )
        self._add_bias(channel * self.depth_multiplier)
        self.input_spec = InputSpec(ndim=4, axes={self._channel_axis: channel})
        self.built = True

    def call(self, inputs):
        outputs = nn_conv.depthwise_conv2d(
            inputs,
            self.depthwise_kernel,
            strides=[1, *self.strides, 1]
            if self.data_format == "channels_last"
            else [1, 1, *self.strides],
            padding=self.padding.upper(),
            dilations=list(self.dilation_rate),
            data_format=tf_data_format(self.data_format, 4),
        )
        return self._finish(outputs)

    def _out_channels(self, input_shape) -> int:
        channel = input_shape[self._channel_axis]
        return None if channel is None else channel * self.depth_multiplier

    def get_config(self) -> dict:
        config = super().get_config()
        for key in ("filters", "kernel_initializer", "kernel_regularizer", "kernel_constraint"):
            config.pop(key, None)
        return {**config, "depth_multiplier": self.depth_multiplier}


Convolution1D = Conv1D
Convolution2D = Conv2D
Convolution3D = Conv3D
Convolution2DTranspose = Conv2DTranspose
SeparableConvolution1D = SeparableConv1D
SeparableConvolution2D = SeparableConv2D
