"""Keras' recurrent layers as TF 1.15 has them: ``RNN`` (any cell, or a list of cells) and
``SimpleRNN``, ``LSTM``, ``GRU`` (``RNN`` over their cell, the cell's arguments taken by the
layer). The cells live in ``layers_rnn_cells`` and are exported from here too.

The time loop is one ``while_loop`` over ``TensorArray``s (so gradients flow through it):
the input is unstacked along time, each step's output written, and ``stack`` gives the
sequence. As Keras does, the cell is called once on the first step before the loop (which
draws the dropout masks that every step then reuses). A masked step keeps the previous
state and repeats the previous output (zeros with ``zero_output_for_mask``, which
``Bidirectional`` sets when returning sequences). ``go_backwards`` runs over the reversed
sequence and returns the outputs in that reversed order, as Keras does. Weights are
created directly in the layer's scope, TF 1.15's names: ``lstm/kernel:0``.
"""

from __future__ import annotations

import inspect

from engine import dtypes
from engine.framework.constant_op import constant
from engine.keras.base_layer import Layer, keras_history
from engine.keras.layers_rnn_cells import (
    GRUCell,
    LSTMCell,
    SimpleRNNCell,
    StackedRNNCells,
    call_cell,
    state_sizes,
)
from engine.ops import array as array_ops
from engine.ops import array_transform, control_flow, slicing
from engine.ops import math as math_ops
from engine.ops.tensor_array import TensorArray
from engine.tensor_shape import TensorShape

__all__ = [
    "GRU",
    "GRUCell",
    "LSTM",
    "LSTMCell",
    "RNN",
    "SimpleRNN",
    "SimpleRNNCell",
    "StackedRNNCells",
]

_RNN_ARGS = ("return_sequences", "return_state", "go_backwards", "stateful", "unroll", "time_major")


def _where(mask_t, new, old):
    """Per batch row: ``new`` where the step is unmasked, else ``old``."""
    m = mask_t
    for _ in range((new.shape.rank or 2) - 1):
        m = array_ops.expand_dims(m, -1)
    return math_ops.where_v2(m, new, old)


def _swap_batch_time(x):
    """``[batch, time, ...]`` <-> ``[time, batch, ...]`` (any rank: ConvLSTM2D's are 5-D)."""
    rank = x.shape.rank if x.shape.rank is not None else 3
    return array_ops.transpose(x, [1, 0, *range(2, rank)])


def run_unrolled(step, inputs, states: list, mask=None, zero_output_for_mask=False):
    """``run_steps`` with the steps as straight-line ops, one set per time step (Keras'
    ``unroll=True``, for a length known when the graph is built): no loop to run, more ops."""
    xs = array_transform.unstack(inputs, axis=0)
    masks = array_transform.unstack(mask, axis=0) if mask is not None else [None] * len(xs)
    outputs, prev = [], None
    for x_t, mask_t in zip(xs, masks):
        output, new_states = step(x_t, states)
        if prev is None:
            prev = array_ops.zeros_like(output)
            zero_output = prev
        if mask_t is not None:
            output = _where(mask_t, output, zero_output if zero_output_for_mask else prev)
            new_states = [_where(mask_t, n, s) for n, s in zip(new_states, states)]
        outputs.append(output)
        prev, states = output, list(new_states)
    return prev if not zero_output_for_mask else outputs[-1], array_transform.stack(outputs), states


def run_steps(step, inputs, states: list, mask=None, zero_output_for_mask=False):
    """Keras' ``K.rnn`` on time-major ``inputs`` ([time, batch, ...]) and a [time, batch]
    boolean ``mask``: returns ``(last_output, outputs [time, batch, ...], final states)``."""
    steps = array_ops.shape(inputs)[0]
    dtype = inputs.dtype.base_dtype
    input_ta = TensorArray(dtype, size=steps, element_shape=inputs.shape[1:]).unstack(inputs)
    output0, _ = step(slicing.gather(inputs, 0), states)  # draws the dropout masks
    zero_output = array_ops.zeros_like(output0)
    out_ta = TensorArray(dtype, size=steps, element_shape=output0.shape)
    mask_ta = None
    if mask is not None:
        mask_ta = TensorArray(dtypes.bool, size=steps, element_shape=mask.shape[1:])
        mask_ta = mask_ta.unstack(mask)

    def body(t, out_ta, prev_output, *flat_states):
        output, new_states = step(input_ta.read(t), list(flat_states))
        if mask_ta is not None:
            mask_t = mask_ta.read(t)
            output = _where(mask_t, output, zero_output if zero_output_for_mask else prev_output)
            new_states = [_where(mask_t, n, s) for n, s in zip(new_states, flat_states)]
        for n, s in zip(new_states, flat_states):
            n.set_shape(s.shape)
        return [t + 1, out_ta.write(t, output), output, *new_states]

    loop = control_flow.while_loop(
        lambda t, *_: math_ops.less(t, steps),
        body,
        [constant(0, dtype=dtypes.int32), out_ta, zero_output, *states],
    )
    outputs = loop[1].stack()
    outputs.set_shape(TensorShape([inputs.shape[0].value]).concatenate(output0.shape))
    last_output = slicing.gather(outputs, steps - 1) if zero_output_for_mask else loop[2]
    return last_output, outputs, list(loop[3:])


class RNN(Layer):
    """Runs ``cell`` (or ``StackedRNNCells(cell)`` for a list) over the time axis.

    >>> y, h, c = RNN(LSTMCell(8), return_sequences=True, return_state=True)(x)
    """

    def __init__(
        self,
        cell,
        return_sequences=False,
        return_state=False,
        go_backwards=False,
        stateful=False,
        unroll=False,
        time_major=False,
        **kwargs,
    ):
        if isinstance(cell, (list, tuple)):
            cell = StackedRNNCells(cell)
        if not hasattr(cell, "call"):
            raise ValueError(
                f"Argument `cell` should have a `call` method. The RNN was passed: cell={cell}"
            )
        if not hasattr(cell, "state_size"):
            raise ValueError(
                "The RNN cell should have an attribute `state_size` (tuple of integers, one "
                "integer per RNN state)."
            )
        if stateful:
            raise ValueError(
                f"{type(self).__name__}(stateful=True) is not supported: state is not carried "
                "between batches here; pass `initial_state` instead."
            )
        self.zero_output_for_mask = kwargs.pop("zero_output_for_mask", False)
        if "input_dim" in kwargs and "input_shape" not in kwargs:
            kwargs["input_shape"] = (kwargs.pop("input_length", None), kwargs.pop("input_dim"))
        kwargs.pop("input_length", None)
        super().__init__(**kwargs)
        self.cell = cell
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)
        self.go_backwards = bool(go_backwards)
        self.stateful = False
        self.unroll = bool(unroll)  # a hint: the loop is the same either way
        self.time_major = bool(time_major)
        self.supports_masking = True

    @property
    def states(self) -> list:
        return [None] * len(state_sizes(self.cell))

    def build(self, input_shape):
        if isinstance(input_shape, (list, tuple)):
            input_shape = input_shape[0]
        shape = TensorShape(input_shape)
        if shape.rank is not None and shape.rank < 3:
            raise ValueError(
                f'Input 0 of layer "{self.name}" is incompatible with the layer: expected '
                f"ndim=3, found ndim={shape.rank}. Full shape received: {shape}"
            )
        batch, depth = (shape[1], shape[2:]) if self.time_major else (shape[0], shape[2:])
        if isinstance(self.cell, Layer) and not self.cell.built:
            self.cell.build(TensorShape([batch]).concatenate(depth))
            self.cell.built = True
        self.built = True

    def __call__(self, inputs, initial_state=None, **kwargs):
        if isinstance(inputs, (list, tuple)) and initial_state is None:
            inputs, initial_state = inputs[0], list(inputs[1:]) or None
        if initial_state is None:
            return super().__call__(inputs, **kwargs)
        states = (
            list(initial_state) if isinstance(initial_state, (list, tuple)) else [initial_state]
        )
        if states and all(keras_history(s) is not None for s in states):
            # As Keras: Keras tensors as initial states are inputs of the layer's node (so
            # the model's graph and its saved config hold them), not call arguments.
            return super().__call__([inputs, *states], **kwargs)
        kwargs["initial_state"] = initial_state
        return super().__call__(inputs, **kwargs)

    def _initial_states(self, inputs, initial_state) -> list:
        sizes = state_sizes(self.cell)
        if initial_state is None:
            batch = array_ops.shape(inputs)[1 if self.time_major else 0]
            return [
                array_ops.zeros(array_transform.stack([batch, size]), dtype=inputs.dtype)
                for size in sizes
            ]
        if not isinstance(initial_state, (list, tuple)):
            initial_state = [initial_state]
        if len(initial_state) != len(sizes):
            raise ValueError(
                "An `initial_state` was passed that is not compatible with `cell.state_size`: "
                f"layer {self.name} has {len(sizes)} states ({sizes}) but was passed "
                f"{len(initial_state)} initial states."
            )
        return [self._as_state(s, size, inputs.dtype) for s, size in zip(initial_state, sizes)]

    @staticmethod
    def _as_state(state, size, dtype):
        state = array_ops.identity(state) if hasattr(state, "dtype") else constant(state, dtype)
        if state.shape.rank is not None and state.shape[-1].value not in (None, size):
            raise ValueError(
                f"An initial_state was passed that is not compatible with `cell.state_size`. "
                f"Received `state_spec`={state.shape.as_list()}; however `cell.state_size` is "
                f"{size}"
            )
        return state

    def call(self, inputs, mask=None, training=None, initial_state=None):
        if isinstance(inputs, (list, tuple)):  # [inputs, *initial states]
            inputs, initial_state = inputs[0], list(inputs[1:]) or initial_state
        if isinstance(mask, list):
            mask = mask[0]
        states = self._initial_states(inputs, initial_state)
        x = inputs if self.time_major else _swap_batch_time(inputs)
        if mask is not None:
            mask = math_ops.cast(mask, dtypes.bool)
            if not self.time_major:
                mask = array_ops.transpose(mask, [1, 0])
        if self.go_backwards:
            x = array_transform.reverse(x, [0])
            mask = array_transform.reverse(mask, [0]) if mask is not None else None
        if hasattr(self.cell, "reset_dropout_mask"):
            self.cell.reset_dropout_mask()

        def step(x_t, states_t):
            return call_cell(self.cell, x_t, states_t, training)

        run = run_steps
        if self.unroll:
            if not x.shape.rank or x.shape[0].value is None:
                raise ValueError(
                    "Cannot unroll a RNN if the time dimension is undefined: give the layer "
                    "(or the first layer of a Sequential model) an input_shape with the number "
                    "of time steps, or use unroll=False"
                )
            run = run_unrolled
        last, outputs, final = run(step, x, states, mask, self.zero_output_for_mask)
        if self.return_sequences:
            output = outputs if self.time_major else _swap_batch_time(outputs)
        else:
            output = last
        return [output, *final] if self.return_state else output

    def compute_mask(self, inputs, mask=None):  # noqa: ARG002 - Keras' signature
        if isinstance(mask, list):
            mask = mask[0]
        output_mask = mask if self.return_sequences else None
        if self.return_state:
            return [output_mask] + [None] * len(state_sizes(self.cell))
        return output_mask

    def _rnn_config(self) -> dict:
        config = {k: getattr(self, k) for k in _RNN_ARGS}
        return {**super().get_config(), **config}

    def get_config(self) -> dict:
        return {**self._rnn_config(), "cell": self.cell}

    @classmethod
    def from_config(cls, config: dict):
        config = dict(config)
        cell = config["cell"]
        copy = type(cell).from_config(cell.get_config())  # a fresh cell, weights unshared
        return cls(**{**config, "cell": copy})


def _cell_args(cell_class) -> set[str]:
    names = set()
    for klass in cell_class.__mro__:
        if klass is Layer:
            break
        sig = inspect.signature(klass.__init__)
        names |= {p for p in sig.parameters if p not in ("self", "kwargs", "units")}
    return names


class _CellLayer(RNN):
    """``RNN`` over a new ``cell_class`` cell: the cell's arguments go to the cell, the rest
    to ``RNN``; the cell's attributes (``units``, ``activation``, ...) read through."""

    cell_class: type = SimpleRNNCell

    def __init__(self, units, **kwargs):
        cell_kwargs = {k: kwargs.pop(k) for k in list(kwargs) if k in _cell_args(self.cell_class)}
        for key in ("dtype", "trainable"):
            if key in kwargs:
                cell_kwargs[key] = kwargs[key]
        cell = self.cell_class(units, **cell_kwargs)
        super().__init__(cell, **kwargs)

    def __getattr__(self, name):
        cell = self.__dict__.get("cell")
        if cell is not None and not name.startswith("_") and name in _cell_args(self.cell_class):
            return getattr(cell, name)
        if name == "units" and cell is not None:
            return cell.units
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def get_config(self) -> dict:
        cell_config = {
            k: v
            for k, v in self.cell.get_config().items()
            if k not in ("name", "trainable", "dtype")
        }
        return {
            **self._rnn_config(),
            **cell_config,
            "activity_regularizer": self.activity_regularizer,
        }

    @classmethod
    def from_config(cls, config: dict):
        return cls(**config)


class SimpleRNN(_CellLayer):
    """A fully connected RNN: ``RNN(SimpleRNNCell(units, ...))``."""

    cell_class = SimpleRNNCell


class LSTM(_CellLayer):
    """Long short-term memory, TF 1 Keras' ``LSTM`` (``recurrent_activation='hard_sigmoid'``,
    ``unit_forget_bias=True``): ``RNN(LSTMCell(units, ...))``; states ``[h, c]``."""

    cell_class = LSTMCell


class GRU(_CellLayer):
    """Gated recurrent unit, TF 1 Keras' ``GRU`` (``reset_after=False``,
    ``recurrent_activation='hard_sigmoid'``): ``RNN(GRUCell(units, ...))``."""

    cell_class = GRUCell
