"""TF 1.x Keras' ``CuDNNLSTM`` and ``CuDNNGRU``: the layers GPU-trained TF1 models were built
with, run here on any device. They compute what cuDNN computes: an LSTM with sigmoid gates
and two bias vectors (input and recurrent, added), and a GRU whose reset gate is applied after
the recurrent product (Keras' ``reset_after=True``), with the weights laid out as TF's Keras
lays them out (``cu_dnnlstm/kernel``, ``recurrent_kernel``, ``bias`` of 8 or 6 x units), so
their checkpoints and HDF5 files load unchanged. As in TF, they take no activation or dropout
arguments and no masks."""

from __future__ import annotations

import inspect

from engine.keras import backend
from engine.keras.layers_rnn import _CellLayer
from engine.keras.layers_rnn_cells import GRUCell, LSTMCell, _split
from engine.ops import array as array_ops
from engine.ops import array_transform, nn
from engine.ops.matmul import matmul

__all__ = ["CuDNNGRU", "CuDNNLSTM"]

_LAYER_KWARGS = {
    "time_major",
    "name",
    "dtype",
    "trainable",
    "input_shape",
    "batch_input_shape",
    "batch_size",
    "weights",
    "input_dim",
    "input_length",
}


class _CuDNNForgetBias:
    """``unit_forget_bias`` on cuDNN's bias: ones for the recurrent half's forget gate."""

    def __init__(self, init, units):
        self.init, self.units = init, units

    def __call__(self, shape, dtype=None, **kwargs):  # noqa: ARG002 - the initializer protocol
        u, dtype = self.units, dtype or backend.floatx()
        return array_transform.concat(
            [
                self.init((5 * u,), dtype=dtype),
                array_ops.ones((u,), dtype=dtype),
                self.init((2 * u,), dtype=dtype),
            ],
            0,
        )


class _CuDNNLSTMCell(LSTMCell):
    def __init__(self, units, unit_forget_bias=True, **kwargs):
        super().__init__(
            units,
            recurrent_activation="sigmoid",
            unit_forget_bias=unit_forget_bias,
            implementation=2,
            **kwargs,
        )

    def build(self, input_shape):
        init = (
            _CuDNNForgetBias(self.bias_initializer, self.units) if self.unit_forget_bias else None
        )
        self._build_weights(input_shape, (8 * self.units,), init)

    def _gate_inputs(self, inputs, h_tm1, training):  # noqa: ARG002 - no dropout in cuDNN
        z = matmul(inputs, self.kernel) + matmul(h_tm1, self.recurrent_kernel)
        input_bias, recurrent_bias = _split(self.bias, 2, 0)
        return _split(nn.bias_add(z, input_bias + recurrent_bias), 4, 1)


class _CuDNNGRUCell(GRUCell):
    def __init__(self, units, **kwargs):
        super().__init__(
            units, recurrent_activation="sigmoid", reset_after=True, implementation=2, **kwargs
        )

    def build(self, input_shape):
        self._build_weights(input_shape, (6 * self.units,))

    def _biases(self):
        return tuple(_split(self.bias, 2, 0))


def _check_kwargs(layer: str, kwargs: dict) -> None:
    unknown = sorted(set(kwargs) - _LAYER_KWARGS)
    if unknown:
        raise TypeError(
            f"{layer}: keyword argument not understood: {unknown[0]} (cuDNN "
            "layers take no activation, dropout or implementation arguments)"
        )


class _CuDNNLayer(_CellLayer):
    def get_config(self) -> dict:
        """TF's keys only: the constructor's arguments (no activations, dropout, ...)."""
        allowed = set(inspect.signature(type(self).__init__).parameters) - {"self", "kwargs"}
        allowed |= {"name", "trainable", "dtype", "batch_input_shape", "time_major"}
        return {k: v for k, v in super().get_config().items() if k in allowed}

    def call(self, inputs, mask=None, training=None, initial_state=None):
        if isinstance(mask, list):  # inputs given with their initial states
            mask = mask[0]
        if mask is not None:
            raise TypeError(
                f"Layer {self.name} does not support masking, but was passed an input_mask"
            )
        return super().call(inputs, training=training, initial_state=initial_state)


class CuDNNLSTM(_CuDNNLayer):
    cell_class = _CuDNNLSTMCell

    def __init__(
        self,
        units,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        bias_initializer="zeros",
        unit_forget_bias=True,
        kernel_regularizer=None,
        recurrent_regularizer=None,
        bias_regularizer=None,
        activity_regularizer=None,
        kernel_constraint=None,
        recurrent_constraint=None,
        bias_constraint=None,
        return_sequences=False,
        return_state=False,
        go_backwards=False,
        stateful=False,
        **kwargs,
    ):
        _check_kwargs("CuDNNLSTM", kwargs)
        super().__init__(
            units,
            kernel_initializer=kernel_initializer,
            recurrent_initializer=recurrent_initializer,
            bias_initializer=bias_initializer,
            unit_forget_bias=unit_forget_bias,
            kernel_regularizer=kernel_regularizer,
            recurrent_regularizer=recurrent_regularizer,
            bias_regularizer=bias_regularizer,
            activity_regularizer=activity_regularizer,
            kernel_constraint=kernel_constraint,
            recurrent_constraint=recurrent_constraint,
            bias_constraint=bias_constraint,
            return_sequences=return_sequences,
            return_state=return_state,
            go_backwards=go_backwards,
            stateful=stateful,
            **kwargs,
        )


class CuDNNGRU(_CuDNNLayer):
    cell_class = _CuDNNGRUCell

    def __init__(
        self,
        units,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        bias_initializer="zeros",
        kernel_regularizer=None,
        recurrent_regularizer=None,
        bias_regularizer=None,
        activity_regularizer=None,
        kernel_constraint=None,
        recurrent_constraint=None,
        bias_constraint=None,
        return_sequences=False,
        return_state=False,
        go_backwards=False,
        stateful=False,
        **kwargs,
    ):
        _check_kwargs("CuDNNGRU", kwargs)
        super().__init__(
            units,
            kernel_initializer=kernel_initializer,
            recurrent_initializer=recurrent_initializer,
            bias_initializer=bias_initializer,
            kernel_regularizer=kernel_regularizer,
            recurrent_regularizer=recurrent_regularizer,
            bias_regularizer=bias_regularizer,
            activity_regularizer=activity_regularizer,
            kernel_constraint=kernel_constraint,
            recurrent_constraint=recurrent_constraint,
            bias_constraint=bias_constraint,
            return_sequences=return_sequences,
            return_state=return_state,
            go_backwards=go_backwards,
            stateful=stateful,
            **kwargs,
        )
