"""``DropoutWrapper``: dropout on an RNN cell's inputs, outputs and state, per step or
(``variational_recurrent``) with one mask per run for every step, as TF1's."""

from __future__ import annotations

import numbers

from engine.framework.constant_op import convert_to_tensor
from engine.ops import math as math_ops
from engine.ops import nn
from engine.ops import random as random_ops
from engine.rnn import LSTMStateTuple, RNNCell
from engine.tensor_shape import as_shape
from engine.util import nest

__all__ = ["DropoutWrapper"]


def _default_dropout_state_filter_visitor(substate):
    """TF's default: an LSTM's memory ``c`` is never dropped, everything else is."""
    if isinstance(substate, LSTMStateTuple):
        return LSTMStateTuple(c=False, h=True)
    return True


class DropoutWrapper(RNNCell):
    """Dropout on a cell's inputs, outputs and/or state (``*_keep_prob``, floats or tensors).

    With ``variational_recurrent=True`` one mask per input/output/state component (shape
    ``[1, size]``, drawn once per ``Session.run``) is used at every time step, as in TF;
    ``dtype`` (and ``input_size`` when inputs are dropped) must then be given. State dropout
    skips what ``dropout_state_filter_visitor`` returns False for (by default an LSTM's ``c``).
    """

    def __init__(
        self,
        cell,
        input_keep_prob=1.0,
        output_keep_prob=1.0,
        state_keep_prob=1.0,
        variational_recurrent=False,
        input_size=None,
        dtype=None,
        seed=None,
        dropout_state_filter_visitor=None,
    ):
        super().__init__()
        for name, p in (
            ("input_keep_prob", input_keep_prob),
            ("output_keep_prob", output_keep_prob),
            ("state_keep_prob", state_keep_prob),
        ):
            if isinstance(p, numbers.Real) and not 0 < p <= 1:
                raise ValueError(f"Parameter {name} must be between 0 and 1: {p}")
        if dropout_state_filter_visitor is not None and not callable(dropout_state_filter_visitor):
            raise TypeError("dropout_state_filter_visitor must be callable")
        self._cell = cell
        self._keep = (input_keep_prob, output_keep_prob, state_keep_prob)
        self._seed = seed
        self._filter = dropout_state_filter_visitor or _default_dropout_state_filter_visitor
        self._variational = bool(variational_recurrent)
        self._noise = (None, None, None)
        if self._variational:
            self._noise = self._variational_noise(input_size, dtype)

    def _variational_noise(self, input_size, dtype):
        """Uniform noise per component, drawn once (outside any loop) and reused each step."""
        if dtype is None:
            raise ValueError("When variational_recurrent=True, dtype must be provided")

        def noise(size):
            n = size if isinstance(size, numbers.Integral) else as_shape(size).as_list()[-1]
            return random_ops.random_uniform([1, n], dtype=dtype, seed=self._seed)

        def kept(keep):
            return isinstance(keep, numbers.Real) and keep == 1

        input_noise = None
        if not kept(self._keep[0]):
            if input_size is None:
                raise ValueError(
                    "When variational_recurrent=True and input_keep_prob < 1.0 or "
                    "is unknown, input_size must be provided"
                )
            input_noise = nest.map_structure(noise, input_size)
        output_noise = (
            None if kept(self._keep[1]) else nest.map_structure(noise, self._cell.output_size)
        )
        state_noise = (
            None if kept(self._keep[2]) else nest.map_structure(noise, self._cell.state_size)
        )
        return input_noise, output_noise, state_noise

    @property
    def state_size(self):
        return self._cell.state_size

    @property
    def output_size(self):
        return self._cell.output_size

    def zero_state(self, batch_size, dtype):
        return self._cell.zero_state(batch_size, dtype)

    def build(self, input_depth, dtype):
        self._cell.build(input_depth, dtype)
        self._scope_name = self._cell._scope_name
        self._built = True

    def _drop(self, value, keep, noise, filtered=False):
        if isinstance(keep, numbers.Real) and keep == 1:
            return value
        mask = nest.map_structure(lambda _: True, value)
        if filtered:
            mask = _state_filter_mask(value, self._filter)
        if noise is None:
            return nest.map_structure(
                lambda v, m: nn.dropout(v, keep_prob=keep, seed=self._seed) if m else v,
                value,
                mask,
            )
        # TF's variational dropout: floor(keep + noise) is the step-invariant binary mask
        return nest.map_structure(
            lambda v, m, u: v / keep * math_ops.floor(keep + u) if m else v, value, mask, noise
        )

    def __call__(self, inputs, state, scope=None):
        inputs = self._drop(convert_to_tensor(inputs), self._keep[0], self._noise[0])
        output, new_state = self._cell(inputs, state, scope=scope)
        return (
            self._drop(output, self._keep[1], self._noise[1]),
            self._drop(new_state, self._keep[2], self._noise[2], filtered=True),
        )


def _state_filter_mask(state, visitor):
    """Per state tensor, whether dropout applies: the visitor's answer for each substate (a
    bool for all of it, or a structure of bools shaped like it)."""

    def visit(sub):
        answer = visitor(sub)
        if isinstance(answer, bool):
            return nest.map_structure(lambda _: answer, sub)
        return answer

    if isinstance(state, tuple) and not isinstance(state, LSTMStateTuple):
        return type(state)(_state_filter_mask(s, visitor) for s in state)
    return visit(state)
