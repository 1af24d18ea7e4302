"""Keras' recurrent cells as TF 1.15 has them: ``SimpleRNNCell``, ``LSTMCell``, ``GRUCell``
and ``StackedRNNCells``. A cell computes one time step, ``call(inputs, states) -> (output,
new_states)``; the ``RNN`` layer (``layers_rnn``) runs it over time.

Weights are Keras': ``kernel`` (input -> gates), ``recurrent_kernel`` (state -> gates) and
``bias``, the gates side by side in Keras' order (LSTM: i, f, c, o; GRU: z, r, h), so weights
trained in TensorFlow load with ``set_weights``. ``implementation`` 1 and 2 compute the same
values (per gate, or in one product). Dropout masks are drawn once per sequence, on the
cell's first step call of an ``RNN`` call, and reused at every step, as Keras does.
"""

from __future__ import annotations

from engine.keras import activations, backend, initializers
from engine.keras.base_layer import Layer
from engine.keras.core import smart_cond, training_flag
from engine.ops import array as array_ops
from engine.ops import array_transform, nn
from engine.ops.matmul import matmul
from engine.tensor_shape import TensorShape

__all__ = ["GRUCell", "LSTMCell", "SimpleRNNCell", "StackedRNNCells"]


def _dropout_masks(like, rate, training, count):
    """``count`` masks of ``like``'s shape: dropout of ones while training, ones otherwise."""
    ones = array_ops.ones_like(like)

    def one():
        return smart_cond(
            training_flag(training), lambda: nn.dropout(ones, rate=rate), lambda: ones
        )

    return [one() for _ in range(count)]


def _split(t, n, axis):
    return array_transform.split(t, n, axis=axis)


class _CellBase(Layer):
    """What the three cells share: units, activations, the weights' initializers,
    regularizers and constraints, and the dropout masks."""

    _gates = 1

    def __init__(
        self,
        units,
        activation="tanh",
        use_bias=True,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        bias_initializer="zeros",
        kernel_regularizer=None,
        recurrent_regularizer=None,
        bias_regularizer=None,
        kernel_constraint=None,
        recurrent_constraint=None,
        bias_constraint=None,
        dropout=0.0,
        recurrent_dropout=0.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if not isinstance(units, int) or isinstance(units, bool) or units <= 0:
            raise ValueError(
                f"Received an invalid value for argument `units`, expected a positive "
                f"integer, got {units}."
            )
        self.units = units
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = kernel_regularizer
        self.recurrent_regularizer = recurrent_regularizer
        self.bias_regularizer = bias_regularizer
        self.kernel_constraint = kernel_constraint
        self.recurrent_constraint = recurrent_constraint
        self.bias_constraint = bias_constraint
        self.dropout = min(1.0, max(0.0, float(dropout)))
        self.recurrent_dropout = min(1.0, max(0.0, float(recurrent_dropout)))
        self._config = {
            "units": units,
            "activation": activation,
            "use_bias": use_bias,
            "kernel_initializer": kernel_initializer,
            "recurrent_initializer": recurrent_initializer,
            "bias_initializer": bias_initializer,
            "kernel_regularizer": kernel_regularizer,
            "recurrent_regularizer": recurrent_regularizer,
            "bias_regularizer": bias_regularizer,
            "kernel_constraint": kernel_constraint,
            "recurrent_constraint": recurrent_constraint,
            "bias_constraint": bias_constraint,
            "dropout": dropout,
            "recurrent_dropout": recurrent_dropout,
        }
        self.reset_dropout_mask()

    @property
    def state_size(self):
        return self.units

    @property
    def output_size(self) -> int:
        return self.units

    def reset_dropout_mask(self) -> None:
        self._dropout_mask = None
        self._recurrent_dropout_mask = None

    reset_recurrent_dropout_mask = reset_dropout_mask

    def _input_masks(self, inputs, training):
        if self._dropout_mask is None and 0 < self.dropout < 1:
            self._dropout_mask = _dropout_masks(inputs, self.dropout, training, self._gates)
        return self._dropout_mask

    def _state_masks(self, state, training):
        if self._recurrent_dropout_mask is None and 0 < self.recurrent_dropout < 1:
            self._recurrent_dropout_mask = _dropout_masks(
                state, self.recurrent_dropout, training, self._gates
            )
        return self._recurrent_dropout_mask

    def _build_weights(self, input_shape, bias_shape, bias_initializer=None) -> None:
        depth = TensorShape(input_shape)[-1].value
        if depth is None:
            raise ValueError(
                f"The last dimension of the inputs to `{type(self).__name__}` should be "
                "defined. Found `None`."
            )
        width = self.units * self._gates
        self.kernel = self.add_weight(
            "kernel",
            (depth, width),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
        )
        self.recurrent_kernel = self.add_weight(
            "recurrent_kernel",
            (self.units, width),
            initializer=self.recurrent_initializer,
            regularizer=self.recurrent_regularizer,
            constraint=self.recurrent_constraint,
        )
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(
                "bias",
                bias_shape,
                initializer=bias_initializer or self.bias_initializer,
                regularizer=self.bias_regularizer,
                constraint=self.bias_constraint,
            )
        self.built = True

    def get_config(self) -> dict:
        return {**super().get_config(), **self._config}


def _masked(x, masks, count):
    """``x`` times each mask, or ``x`` ``count`` times when there is no dropout."""
    return [x * m for m in masks] if masks else [x] * count


class SimpleRNNCell(_CellBase):
    """``h = activation(x @ kernel + bias + h_prev @ recurrent_kernel)``."""

    def build(self, input_shape):
        self._build_weights(input_shape, (self.units,))

    def call(self, inputs, states, training=None):
        prev = states[0] if isinstance(states, (list, tuple)) else states
        x = _masked(inputs, self._input_masks(inputs, training), 1)[0]
        h_prev = _masked(prev, self._state_masks(prev, training), 1)[0]
        h = matmul(x, self.kernel)
        if self.bias is not None:
            h = nn.bias_add(h, self.bias)
        output = self.activation(h + matmul(h_prev, self.recurrent_kernel))
        return output, [output]


class _ForgetBiasInitializer:
    """Keras' ``unit_forget_bias``: the bias initializer's values, but ones for the forget
    gate."""

    def __init__(self, init, units):
        self.init, self.units = init, units

    def __call__(self, shape, dtype=None, **kwargs):  # noqa: ARG002 - the initializer protocol
        u = self.units
        dtype = dtype or backend.floatx()
        return array_transform.concat(
            [
                self.init((u,), dtype=dtype),
                array_ops.ones((u,), dtype=dtype),
                self.init((2 * u,), dtype=dtype),
            ],
            0,
        )


class LSTMCell(_CellBase):
    """The LSTM step: gates i, f, c, o; ``c = f * c_prev + i * activation(z_c)``,
    ``h = o * activation(c)``; states ``[h, c]``. TF 1 Keras' defaults:
    ``recurrent_activation='hard_sigmoid'``, ``unit_forget_bias=True``."""

    _gates = 4

    def __init__(
        self, units, recurrent_activation="hard_sigmoid", unit_forget_bias=True,
        implementation=1, **kwargs,
    ):  # fmt: skip
        super().__init__(units, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.unit_forget_bias = bool(unit_forget_bias)
        # Keras computes recurrent dropout per gate only.
        self.implementation = 1 if self.recurrent_dropout else implementation
        self._config.update(
            recurrent_activation=recurrent_activation,
            unit_forget_bias=unit_forget_bias,
            implementation=implementation,
        )

    @property
    def state_size(self):
        return [self.units, self.units]

    def build(self, input_shape):
        init = None
        if self.unit_forget_bias:
            init = _ForgetBiasInitializer(self.bias_initializer, self.units)
        self._build_weights(input_shape, (4 * self.units,), init)

    def _gate_inputs(self, inputs, h_tm1, training):
        """The four pre-activations ``x W + h U + b``, per gate or in one product."""
        dp = self._input_masks(inputs, training)
        rdp = self._state_masks(h_tm1, training)
        # Without dropout masks the per-gate products (implementation 1) are the fused ones
        # split by columns: one product each for x and h is the same math, 4x fewer ops.
        if self.implementation == 2 or (dp is None and rdp is None):
            z = matmul(_masked(inputs, dp, 1)[0], self.kernel)
            z = z + matmul(_masked(h_tm1, rdp, 1)[0], self.recurrent_kernel)
            if self.bias is not None:
                z = nn.bias_add(z, self.bias)
            return _split(z, 4, 1)
        xs, hs = _masked(inputs, dp, 4), _masked(h_tm1, rdp, 4)
        ks, rks = _split(self.kernel, 4, 1), _split(self.recurrent_kernel, 4, 1)
        bs = _split(self.bias, 4, 0) if self.bias is not None else [None] * 4
        out = []
        for x, h, k, rk, b in zip(xs, hs, ks, rks, bs):
            z = matmul(x, k)
            if b is not None:
                z = nn.bias_add(z, b)
            out.append(z + matmul(h, rk))
        return out

    def call(self, inputs, states, training=None):
        h_tm1, c_tm1 = states[0], states[1]
        z_i, z_f, z_c, z_o = self._gate_inputs(inputs, h_tm1, training)
        i = self.recurrent_activation(z_i)
        f = self.recurrent_activation(z_f)
        c = f * c_tm1 + i * self.activation(z_c)
        o = self.recurrent_activation(z_o)
        h = o * self.activation(c)
        return h, [h, c]


class GRUCell(_CellBase):
    """The GRU step: gates z (update), r (reset), h (candidate);
    ``h = z * h_prev + (1 - z) * hh``. With ``reset_after`` (CuDNN's form) the reset gate
    multiplies ``h_prev @ U_h + b_h`` and the bias has shape (2, 3 * units)."""

    _gates = 3

    def __init__(
        self, units, recurrent_activation="hard_sigmoid", implementation=1, reset_after=False,
        **kwargs,
    ):  # fmt: skip
        super().__init__(units, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        # Keras computes recurrent dropout per gate only.
        self.implementation = 1 if self.recurrent_dropout else implementation
        self.reset_after = bool(reset_after)
        self._config.update(
            recurrent_activation=recurrent_activation,
            implementation=implementation,
            reset_after=reset_after,
        )

    def build(self, input_shape):
        width = 3 * self.units
        self._build_weights(input_shape, (2, width) if self.reset_after else (width,))

    def _biases(self):
        if self.bias is None:
            return None, None
        if not self.reset_after:
            return self.bias, None
        b = array_transform.unstack(self.bias)
        return b[0], b[1]

    def call(self, inputs, states, training=None):
        h_tm1 = states[0] if isinstance(states, (list, tuple)) else states
        dp = self._input_masks(inputs, training)
        rdp = self._state_masks(h_tm1, training)
        input_bias, recurrent_bias = self._biases()
        if self.implementation == 2 or (dp is None and rdp is None):  # same math, fewer ops
            x = _masked(inputs, dp, 1)[0]
            x_z, x_r, x_h, rec_z, rec_r, rec_h = self._fused(x, h_tm1, input_bias, recurrent_bias)
            h_for_candidate = h_tm1
        else:
            hs = _masked(h_tm1, rdp, 3)
            x_z, x_r, x_h, rec_z, rec_r, rec_h = self._per_gate(
                _masked(inputs, dp, 3), hs, input_bias, recurrent_bias
            )
            h_for_candidate = hs[2]
        z = self.recurrent_activation(x_z + rec_z)
        r = self.recurrent_activation(x_r + rec_r)
        if self.reset_after:
            rec_h = r * rec_h
        else:
            rec_h = matmul(r * h_for_candidate, _split(self.recurrent_kernel, 3, 1)[2])
        hh = self.activation(x_h + rec_h)
        h = z * h_tm1 + (1 - z) * hh
        return h, [h]

    def _per_gate(self, xs, hs, input_bias, recurrent_bias):
        ks, rks = _split(self.kernel, 3, 1), _split(self.recurrent_kernel, 3, 1)
        ib = _split(input_bias, 3, 0) if input_bias is not None else [None] * 3
        rb = _split(recurrent_bias, 3, 0) if recurrent_bias is not None else [None] * 3
        x = []
        for xi, k, b in zip(xs, ks, ib):
            v = matmul(xi, k)
            x.append(nn.bias_add(v, b) if b is not None else v)
        rec = [matmul(hs[0], rks[0]), matmul(hs[1], rks[1]), None]
        if self.reset_after:
            rec[2] = matmul(hs[2], rks[2])
        for j in range(3):
            if rb[j] is not None and rec[j] is not None:
                rec[j] = rec[j] + rb[j]
        return (*x, *rec)

    def _fused(self, x, h, input_bias, recurrent_bias):
        mx = matmul(x, self.kernel)
        if input_bias is not None:
            mx = nn.bias_add(mx, input_bias)
        x_z, x_r, x_h = _split(mx, 3, 1)
        u = self.units
        if self.reset_after:
            inner = matmul(h, self.recurrent_kernel)
            if recurrent_bias is not None:
                inner = nn.bias_add(inner, recurrent_bias)
            rec_z, rec_r, rec_h = _split(inner, 3, 1)
        else:
            inner = matmul(h, _split(self.recurrent_kernel, [2 * u, u], 1)[0])
            rec_z, rec_r = _split(inner, 2, 1)
            rec_h = None
        return x_z, x_r, x_h, rec_z, rec_r, rec_h


class StackedRNNCells(Layer):
    """Cells run one after another at each step, each on the previous one's output; the
    state is every cell's states in order."""

    def __init__(self, cells, **kwargs):
        for cell in cells:
            if not hasattr(cell, "call"):
                raise ValueError(f"All cells must have a `call` method. Received cell: {cell}")
            if not hasattr(cell, "state_size"):
                raise ValueError(
                    f"All cells must have a `state_size` attribute. Received cell: {cell}"
                )
        super().__init__(**kwargs)
        self.cells = list(cells)

    @property
    def state_size(self) -> list:
        return [s for cell in self.cells for s in state_sizes(cell)]

    @property
    def output_size(self) -> int:
        last = self.cells[-1]
        return getattr(last, "output_size", None) or state_sizes(last)[0]

    def reset_dropout_mask(self) -> None:
        for cell in self.cells:
            if hasattr(cell, "reset_dropout_mask"):
                cell.reset_dropout_mask()

    def build(self, input_shape):
        shape = TensorShape(input_shape)
        for cell in self.cells:
            if isinstance(cell, Layer) and not cell.built:
                cell.build(shape)
                cell.built = True
            out = getattr(cell, "output_size", None) or state_sizes(cell)[0]
            shape = TensorShape([shape[0].value, out])
        self.built = True

    def call(self, inputs, states, training=None):
        new_states, pos = [], 0
        for cell in self.cells:
            n = len(state_sizes(cell))
            cell_states = list(states[pos : pos + n])
            pos += n
            inputs, cell_new = call_cell(cell, inputs, cell_states, training)
            new_states += cell_new
        return inputs, new_states

    def get_config(self) -> dict:
        return {**super().get_config(), "cells": self.cells}


def state_sizes(cell) -> list[int]:
    """A cell's ``state_size`` as a flat list of ints."""
    size = cell.state_size
    if isinstance(size, (list, tuple)):
        return [int(getattr(s, "value", s)) for s in size]
    return [int(getattr(size, "value", size))]


def call_cell(cell, inputs, states: list, training) -> tuple:
    """One step of ``cell``: ``(output, new_states as a list)``; ``training`` is given to
    cells whose ``call`` takes it."""
    if "training" in _call_args(cell):
        output, new = cell.call(inputs, states, training=training)
    else:
        output, new = cell.call(inputs, states)
    return output, list(new) if isinstance(new, (list, tuple)) else [new]


def _call_args(cell) -> tuple:
    code = getattr(type(cell).call, "__code__", None)
    return code.co_varnames[: code.co_argcount] if code is not None else ()
