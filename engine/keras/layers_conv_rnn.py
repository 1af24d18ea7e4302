"""Keras' convolutional LSTM as TF 1.15 has it: ``ConvLSTM2DCell`` (the LSTM step with
convolutions in place of the products) and ``ConvLSTM2D``, the ``RNN`` over it for inputs
``[batch, time, rows, cols, channels]`` (``channels_last``) or ``[batch, time, channels,
rows, cols]``.

Weights are Keras': ``kernel`` ``kernel_size + (channels, 4 * filters)`` (input -> gates),
``recurrent_kernel`` ``kernel_size + (filters, 4 * filters)`` and ``bias`` ``(4 * filters,)``,
the gates in Keras' order i, f, c, o. The input convolution uses the layer's strides, padding
and dilation; the recurrent one stride 1 and ``"same"`` padding. The states ``[h, c]`` start
as zeros of the input convolution's output shape (computed, as Keras does, by convolving a
zero kernel over the summed input).
"""

from __future__ import annotations

from engine.keras import activations
from engine.keras.conv_utils import (
    normalize_data_format,
    normalize_padding,
    normalize_tuple,
    tf_data_format,
)
from engine.keras.layers_rnn import _CellLayer
from engine.keras.layers_rnn_cells import _CellBase, _ForgetBiasInitializer, _masked, _split
from engine.ops import array as array_ops
from engine.ops import nn, nn_conv, reduction
from engine.tensor_shape import TensorShape

__all__ = ["ConvLSTM2D", "ConvLSTM2DCell"]


class ConvLSTM2DCell(_CellBase):
    """One step of the convolutional LSTM: ``z = conv(x, W) + b + conv(h, U)`` per gate,
    ``c = f * c_prev + i * activation(z_c)``, ``h = o * activation(c)``; states ``[h, c]``."""

    _gates = 4

    def __init__(
        self,
        filters,
        kernel_size,
        strides=(1, 1),
        padding="valid",
        data_format=None,
        dilation_rate=(1, 1),
        recurrent_activation="hard_sigmoid",
        unit_forget_bias=True,
        **kwargs,
    ):
        super().__init__(filters, **kwargs)
        self.filters = filters
        self.kernel_size = normalize_tuple(kernel_size, 2, "kernel_size")
        self.strides = normalize_tuple(strides, 2, "strides")
        self.padding = normalize_padding(padding)
        if self.padding == "causal":
            raise ValueError("ConvLSTM2D does not support padding='causal'")
        self.data_format = normalize_data_format(data_format)
        self.dilation_rate = normalize_tuple(dilation_rate, 2, "dilation_rate")
        self.recurrent_activation = activations.get(recurrent_activation)
        self.unit_forget_bias = bool(unit_forget_bias)
        del self._config["units"]
        self._config = {
            "filters": filters,
            "kernel_size": self.kernel_size,
            "strides": self.strides,
            "padding": self.padding,
            "data_format": self.data_format,
            "dilation_rate": self.dilation_rate,
            **self._config,
            "recurrent_activation": recurrent_activation,
            "unit_forget_bias": unit_forget_bias,
        }

    @property
    def state_size(self):
        return [self.filters, self.filters]

    def get_config(self) -> dict:
        config = super().get_config()
        config.pop("units", None)  # Keras' config says filters
        return config

    def build(self, input_shape):
        shape = TensorShape(input_shape)
        axis = -1 if self.data_format == "channels_last" else 1
        depth = shape[axis].value if shape.rank is not None else None
        if depth is None:
            raise ValueError("The channel dimension of the inputs should be defined. Found `None`.")
        width = 4 * self.filters
        self.kernel = self.add_weight(
            "kernel",
            self.kernel_size + (depth, width),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
        )
        self.recurrent_kernel = self.add_weight(
            "recurrent_kernel",
            self.kernel_size + (self.filters, width),
            initializer=self.recurrent_initializer,
            regularizer=self.recurrent_regularizer,
            constraint=self.recurrent_constraint,
        )
        self.bias = None
        if self.use_bias:
            init = self.bias_initializer
            if self.unit_forget_bias:
                init = _ForgetBiasInitializer(init, self.filters)
            self.bias = self.add_weight(
                "bias",
                (width,),
                initializer=init,
                regularizer=self.bias_regularizer,
                constraint=self.bias_constraint,
            )
        self.built = True

    def input_conv(self, x, kernel, bias=None, padding="valid"):
        fmt = tf_data_format(self.data_format, 4)
        out = nn_conv.conv2d(
            x,
            kernel,
            strides=list(self.strides),
            padding=padding.upper(),
            data_format=fmt,
            dilations=list(self.dilation_rate),
        )
        return nn.bias_add(out, bias, data_format=fmt) if bias is not None else out

    def recurrent_conv(self, h, kernel):
        fmt = tf_data_format(self.data_format, 4)
        return nn_conv.conv2d(h, kernel, strides=[1, 1], padding="SAME", data_format=fmt)

    def call(self, inputs, states, training=None):
        h_tm1, c_tm1 = states[0], states[1]
        xs = _masked(inputs, self._input_masks(inputs, training), 4)
        hs = _masked(h_tm1, self._state_masks(h_tm1, training), 4)
        ks, rks = _split(self.kernel, 4, 3), _split(self.recurrent_kernel, 4, 3)
        bs = _split(self.bias, 4, 0) if self.bias is not None else [None] * 4
        z = [
            self.input_conv(x, k, b, self.padding) + self.recurrent_conv(h, rk)
            for x, h, k, rk, b in zip(xs, hs, ks, rks, bs)
        ]
        i = self.recurrent_activation(z[0])
        f = self.recurrent_activation(z[1])
        c = f * c_tm1 + i * self.activation(z[2])
        o = self.recurrent_activation(z[3])
        h = o * self.activation(c)
        return h, [h, c]


class ConvLSTM2D(_CellLayer):
    """The convolutional LSTM over 5-D inputs: ``RNN(ConvLSTM2DCell(filters, kernel_size,
    ...))``; with ``return_sequences`` the output is ``[batch, time, rows', cols',
    filters]`` (channels_last), else the last step's."""

    cell_class = ConvLSTM2DCell

    def __init__(self, filters, kernel_size, **kwargs):
        super().__init__(filters, kernel_size=kernel_size, **kwargs)

    def get_config(self) -> dict:
        config = super().get_config()
        config.pop("units", None)  # Keras' config says filters
        return config

    def build(self, input_shape):
        if isinstance(input_shape, (list, tuple)) and not isinstance(input_shape, TensorShape):
            if input_shape and isinstance(input_shape[0], (list, tuple, TensorShape)):
                input_shape = input_shape[0]
        shape = TensorShape(input_shape)
        if shape.rank is not None and shape.rank != 5:
            raise ValueError(
                f"Input 0 of layer {self.name} is incompatible with the layer: expected "
                f"ndim=5, found ndim={shape.rank}. Full shape received: {shape.as_list()}"
            )
        if self.unroll:
            raise ValueError("ConvLSTM2D(unroll=True) is not supported here")
        super().build(shape)

    def _initial_states(self, inputs, initial_state) -> list:
        if initial_state is not None:
            states = initial_state if isinstance(initial_state, (list, tuple)) else [initial_state]
            if len(states) != 2:
                raise ValueError(
                    f"An `initial_state` was passed that is not compatible with "
                    f"`cell.state_size`: layer {self.name} has 2 states but was passed "
                    f"{len(states)} initial states."
                )
            return [array_ops.identity(s) for s in states]
        cell = self.cell
        summed = reduction.reduce_sum(
            array_ops.zeros_like(inputs), axis=0 if self.time_major else 1
        )
        kernel = array_ops.zeros(
            cell.kernel_size + (cell.kernel.shape[2].value, cell.filters), dtype=inputs.dtype
        )
        zero = cell.input_conv(summed, kernel, padding=cell.padding)
        return [zero, zero]
