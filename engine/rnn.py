"""TF1's recurrent networks: the cells of ``tf.nn.rnn_cell`` (``BasicRNNCell``,
``BasicLSTMCell``, ``LSTMCell``, ``GRUCell``, ``MultiRNNCell``, ``DropoutWrapper``) and the
drivers ``static_rnn``, ``static_bidirectional_rnn``, ``dynamic_rnn`` and
``bidirectional_dynamic_rnn``, with ``sequence_length``.

A cell creates its variables on its first call, under the variable scope current at that
call plus its own name (``rnn/basic_lstm_cell/kernel``, as TF1 names them), and reuses them on
every later call. ``dynamic_rnn`` is one ``while_loop``: the cell is built before the loop, the
step reads ``inputs[t]`` from the captured input and adds its output into a ``[time, batch,
units]`` accumulator, so gradients flow through the loop with the engine's While gradient.
"""

from __future__ import annotations

import collections
import numbers

from engine import dtypes
from engine.framework.constant_op import constant, convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.init_ops import constant_initializer, zeros_initializer
from engine.ops import array as array_ops
from engine.ops import array_transform, clip_ops, control_flow, nn, reduction, sequences, slicing
from engine.ops import math as math_ops
from engine.util import nest
from engine.variable_scope import get_variable, variable_scope

__all__ = [
    "RNNCell",
    "BasicRNNCell",
    "BasicLSTMCell",
    "LSTMCell",
    "GRUCell",
    "MultiRNNCell",
    "LSTMStateTuple",
    "static_rnn",
    "static_bidirectional_rnn",
    "dynamic_rnn",
    "bidirectional_dynamic_rnn",
    "sequence_mask",
    "reverse_sequence",
]

LSTMStateTuple = collections.namedtuple("LSTMStateTuple", ("c", "h"))


def _concat(values, axis):
    return array_transform.concat(values, axis)


def _batch_size(x: Tensor):
    dims = x.shape.as_tuple()
    if dims is not None and dims[0] is not None:
        return dims[0]
    return array_ops.shape(x)[0]


class RNNCell:
    """The base of the cells: ``output, new_state = cell(inputs, state)``."""

    _default_name = "rnn_cell"

    def __init__(self, num_units=None, reuse=None, name=None, dtype=None):
        self._num_units = num_units
        self._name = name
        self._reuse = reuse
        self._dtype = dtype
        self._scope_name = None
        self._built = False

    @property
    def state_size(self):
        return self._num_units

    @property
    def output_size(self):
        return self._num_units

    def zero_state(self, batch_size, dtype):
        """Zeros shaped like the state, for a batch of ``batch_size``."""
        with name_scope(type(self).__name__ + "ZeroState", values=[batch_size]):
            return nest.map_structure(
                lambda n: (
                    array_ops.zeros(array_transform.stack([batch_size, n]), dtype=dtype)
                    if isinstance(batch_size, Tensor)
                    else array_ops.zeros([batch_size, n], dtype=dtype)
                ),
                self.state_size,
            )

    def _variable_scope(self):
        """The cell's variable scope: created uniquely on the first call, re-entered after."""
        if self._scope_name is None:
            name = self._name or self._default_name
            return (
                variable_scope(None, default_name=name)
                if self._name is None
                else (variable_scope(name, reuse=self._reuse))
            )
        return variable_scope(self._scope_name, reuse=True)

    def build(self, input_depth: int, dtype) -> None:
        """Creates the variables for inputs of ``input_depth`` (once)."""
        if self._built:
            return
        if input_depth is None:
            raise ValueError(
                f"The last dimension of the inputs to `{type(self).__name__}` should be defined. "
                "Found `None`."
            )
        with self._variable_scope() as scope:
            self._scope_name = scope.name
            self._create_variables(int(input_depth), dtype)
        self._built = True

    def _create_variables(self, input_depth, dtype):
        raise NotImplementedError

    def __call__(self, inputs, state, scope=None):
        x = convert_to_tensor(inputs)
        dtype = x.dtype.base_dtype
        depth = x.shape.as_tuple()[-1] if x.shape.rank is not None else None
        if scope is not None:
            with variable_scope(scope):
                self.build(depth, dtype)
        else:
            self.build(depth, dtype)
        with name_scope(self._scope_name.rsplit("/", 1)[-1]):
            return self.call(x, state)

    def call(self, inputs, state):
        raise NotImplementedError


def _linear(args, kernel, bias):
    res = math_ops.matmul(_concat(args, 1) if len(args) > 1 else args[0], kernel)
    return nn.bias_add(res, bias) if bias is not None else res


class BasicRNNCell(RNNCell):
    """``output = new_state = activation(W [inputs, state] + b)``."""

    _default_name = "basic_rnn_cell"

    def __init__(self, num_units, activation=None, reuse=None, name=None, dtype=None):
        super().__init__(num_units, reuse, name, dtype)
        self._activation = activation or math_ops.tanh

    def _create_variables(self, input_depth, dtype):
        n = self._num_units
        self.kernel = get_variable("kernel", [input_depth + n, n], dtype=dtype)
        self.bias = get_variable("bias", [n], dtype=dtype, initializer=zeros_initializer())

    def call(self, inputs, state):
        out = self._activation(_linear([inputs, state], self.kernel, self.bias))
        return out, out


class BasicLSTMCell(RNNCell):
    """The LSTM of Zaremba et al.: gates i, j, f, o from one matmul; ``forget_bias`` added to
    f. The state is ``LSTMStateTuple(c, h)``."""

    _default_name = "basic_lstm_cell"

    def __init__(
        self,
        num_units,
        forget_bias=1.0,
        state_is_tuple=True,
        activation=None,
        reuse=None,
        name=None,
        dtype=None,
    ):
        super().__init__(num_units, reuse, name, dtype)
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = activation or math_ops.tanh

    @property
    def state_size(self):
        n = self._num_units
        return LSTMStateTuple(n, n) if self._state_is_tuple else 2 * n

    def _create_variables(self, input_depth, dtype):
        n = self._num_units
        self.kernel = get_variable("kernel", [input_depth + n, 4 * n], dtype=dtype)
        self.bias = get_variable("bias", [4 * n], dtype=dtype, initializer=zeros_initializer())

    def _split_state(self, state):
        if self._state_is_tuple:
            return state
        return array_transform.split(state, 2, axis=1)

    def call(self, inputs, state):
        c, h = self._split_state(state)
        gates = _linear([inputs, h], self.kernel, self.bias)
        i, j, f, o = array_transform.split(gates, 4, axis=1)
        forget = constant(self._forget_bias, dtype=f.dtype.base_dtype)
        new_c = math_ops.add(
            math_ops.multiply(c, math_ops.sigmoid(math_ops.add(f, forget))),
            math_ops.multiply(math_ops.sigmoid(i), self._activation(j)),
        )
        new_h = math_ops.multiply(self._activation(new_c), math_ops.sigmoid(o))
        new_state = (
            LSTMStateTuple(new_c, new_h) if self._state_is_tuple else _concat([new_c, new_h], 1)
        )
        return new_h, new_state


class LSTMCell(BasicLSTMCell):
    """The LSTM with optional peepholes (``use_peepholes``), cell clipping (``cell_clip``) and
    a projection of the output (``num_proj``, ``proj_clip``)."""

    _default_name = "lstm_cell"

    def __init__(
        self,
        num_units,
        use_peepholes=False,
        cell_clip=None,
        initializer=None,
        num_proj=None,
        proj_clip=None,
        num_unit_shards=None,
        num_proj_shards=None,
        forget_bias=1.0,
        state_is_tuple=True,
        activation=None,
        reuse=None,
        name=None,
        dtype=None,
    ):
        if num_unit_shards is not None or num_proj_shards is not None:
            raise NotImplementedError("LSTMCell: num_unit_shards/num_proj_shards are not supported")
        super().__init__(num_units, forget_bias, state_is_tuple, activation, reuse, name, dtype)
        self._use_peepholes = use_peepholes
        self._cell_clip = cell_clip
        self._initializer = initializer
        self._num_proj = num_proj
        self._proj_clip = proj_clip

    @property
    def state_size(self):
        n, m = self._num_units, self._num_proj or self._num_units
        return LSTMStateTuple(n, m) if self._state_is_tuple else n + m

    @property
    def output_size(self):
        return self._num_proj or self._num_units

    def _create_variables(self, input_depth, dtype):
        n, m = self._num_units, self._num_proj or self._num_units
        init = self._initializer
        self.kernel = get_variable(
            "kernel", [input_depth + m, 4 * n], dtype=dtype, initializer=init
        )
        self.bias = get_variable("bias", [4 * n], dtype=dtype, initializer=zeros_initializer())
        if self._use_peepholes:
            self.w_f_diag = get_variable("w_f_diag", [n], dtype=dtype, initializer=init)
            self.w_i_diag = get_variable("w_i_diag", [n], dtype=dtype, initializer=init)
            self.w_o_diag = get_variable("w_o_diag", [n], dtype=dtype, initializer=init)
        if self._num_proj is not None:
            with variable_scope("projection"):
                self.proj_kernel = get_variable("kernel", [n, m], dtype=dtype, initializer=init)

    def _split_state(self, state):
        if self._state_is_tuple:
            return state
        n = self._num_units
        return state[:, :n], state[:, n:]

    def call(self, inputs, state):
        sig = math_ops.sigmoid
        c_prev, m_prev = self._split_state(state)
        gates = _linear([inputs, m_prev], self.kernel, self.bias)
        i, j, f, o = array_transform.split(gates, 4, axis=1)
        forget = constant(self._forget_bias, dtype=f.dtype.base_dtype)
        if self._use_peepholes:
            c = sig(f + forget + self.w_f_diag * c_prev) * c_prev + sig(
                i + self.w_i_diag * c_prev
            ) * self._activation(j)
        else:
            c = sig(f + forget) * c_prev + sig(i) * self._activation(j)
        if self._cell_clip is not None:
            c = clip_ops.clip_by_value(c, -self._cell_clip, self._cell_clip)
        if self._use_peepholes:
            m = sig(o + self.w_o_diag * c) * self._activation(c)
        else:
            m = sig(o) * self._activation(c)
        if self._num_proj is not None:
            m = math_ops.matmul(m, self.proj_kernel)
            if self._proj_clip is not None:
                m = clip_ops.clip_by_value(m, -self._proj_clip, self._proj_clip)
        new_state = LSTMStateTuple(c, m) if self._state_is_tuple else _concat([c, m], 1)
        return m, new_state


class GRUCell(RNNCell):
    """The gated recurrent unit (Cho et al.): reset and update gates, then a candidate."""

    _default_name = "gru_cell"

    def __init__(
        self,
        num_units,
        activation=None,
        reuse=None,
        kernel_initializer=None,
        bias_initializer=None,
        name=None,
        dtype=None,
    ):
        super().__init__(num_units, reuse, name, dtype)
        self._activation = activation or math_ops.tanh
        self._kernel_initializer = kernel_initializer
        self._bias_initializer = bias_initializer

    def _create_variables(self, input_depth, dtype):
        n = self._num_units
        k_init = self._kernel_initializer
        with variable_scope("gates"):
            self.gate_kernel = get_variable(
                "kernel", [input_depth + n, 2 * n], dtype=dtype, initializer=k_init
            )
            self.gate_bias = get_variable(
                "bias",
                [2 * n],
                dtype=dtype,
                initializer=self._bias_initializer or constant_initializer(1.0),
            )
        with variable_scope("candidate"):
            self.candidate_kernel = get_variable(
                "kernel", [input_depth + n, n], dtype=dtype, initializer=k_init
            )
            self.candidate_bias = get_variable(
                "bias", [n], dtype=dtype, initializer=self._bias_initializer or zeros_initializer()
            )

    def call(self, inputs, state):
        value = math_ops.sigmoid(_linear([inputs, state], self.gate_kernel, self.gate_bias))
        r, u = array_transform.split(value, 2, axis=1)
        c = self._activation(
            _linear([inputs, r * state], self.candidate_kernel, self.candidate_bias)
        )
        new_h = u * state + (1 - u) * c
        return new_h, new_h


class MultiRNNCell(RNNCell):
    """Cells stacked: each one's output is the next one's input. The state is a tuple of the
    cells' states, or with ``state_is_tuple=False`` (cells with flat states only) one tensor,
    the states concatenated along axis 1."""

    _default_name = "multi_rnn_cell"

    def __init__(self, cells, state_is_tuple=True):
        super().__init__()
        if not cells:
            raise ValueError("Must specify at least one cell for MultiRNNCell.")
        self._cells = list(cells)
        self._state_is_tuple = state_is_tuple
        if not state_is_tuple:
            for i, c in enumerate(self._cells):
                if not isinstance(c.state_size, numbers.Integral):
                    raise ValueError(
                        f"MultiRNNCell(state_is_tuple=False) needs cells with flat states; "
                        f"cell {i} ({type(c).__name__}) has state_size {c.state_size!r} "
                        "(build it with state_is_tuple=False)"
                    )

    @property
    def state_size(self):
        if not self._state_is_tuple:
            return sum(c.state_size for c in self._cells)
        return tuple(c.state_size for c in self._cells)

    @property
    def output_size(self):
        return self._cells[-1].output_size

    def zero_state(self, batch_size, dtype):
        if not self._state_is_tuple:
            return super().zero_state(batch_size, dtype)
        return tuple(c.zero_state(batch_size, dtype) for c in self._cells)

    def build(self, input_depth, dtype):
        if self._built:
            return
        with self._variable_scope() as scope:
            self._scope_name = scope.name
            depth = input_depth
            for i, cell in enumerate(self._cells):
                with variable_scope(f"cell_{i}"):
                    cell.build(depth, dtype)
                depth = cell.output_size
        self._built = True

    def call(self, inputs, state):
        cur = inputs
        new_states = []
        start = 0
        for i, cell in enumerate(self._cells):
            with name_scope(f"cell_{i}"):
                if self._state_is_tuple:
                    cell_state = state[i]
                else:
                    cell_state = slicing.slice(state, [0, start], [-1, cell.state_size])
                    start += cell.state_size
                cur, s = cell(cur, cell_state)
            new_states.append(s)
        if not self._state_is_tuple:
            return cur, _concat(new_states, 1)
        return cur, tuple(new_states)


# -----------------------------------------------------------------------------------------
# Sequence helpers
# -----------------------------------------------------------------------------------------


def sequence_mask(lengths, maxlen=None, dtype=dtypes.bool, name=None) -> Tensor:
    """``mask[i, j] = j < lengths[i]``, of shape ``lengths.shape + [maxlen]``."""
    with name_scope(name, "SequenceMask", [lengths, maxlen]):
        lengths = convert_to_tensor(lengths)
        if maxlen is None:
            maxlen = reduction.reduce_max(lengths)
        maxlen = math_ops.cast(convert_to_tensor(maxlen), lengths.dtype.base_dtype)
        row = array_ops.range(0, maxlen, 1, dtype=lengths.dtype.base_dtype)
        mask = math_ops.less(row, array_ops.expand_dims(lengths, -1))
        return mask if dtype is dtypes.bool else math_ops.cast(mask, dtype)


reverse_sequence = sequences.reverse_sequence


# -----------------------------------------------------------------------------------------
# static_rnn
# -----------------------------------------------------------------------------------------


def _initial_state(cell, initial_state, batch, dtype):
    if initial_state is not None:
        return initial_state
    if dtype is None:
        raise ValueError("If there is no initial_state, you must give a dtype.")
    return cell.zero_state(batch, dtype)


def _masked_step(mask, new, old):
    return nest.map_structure(lambda a, b: math_ops.where_v2(mask, a, b), new, old)


def _expand_mask(mask, like):
    return array_ops.expand_dims(mask, 1) if like.shape.rank != 1 else mask


def static_rnn(cell, inputs, initial_state=None, dtype=None, sequence_length=None, scope=None):
    """Runs ``cell`` over a Python list of ``[batch, depth]`` inputs; returns
    ``(outputs, state)``. Past ``sequence_length[b]`` outputs are zero and the state is
    carried unchanged."""
    if not isinstance(inputs, (list, tuple)):
        raise TypeError("inputs must be a sequence")
    if not inputs:
        raise ValueError("inputs must not be empty")
    with variable_scope(scope or "rnn"):
        first = convert_to_tensor(inputs[0])
        batch = _batch_size(first)
        state = _initial_state(cell, initial_state, batch, dtype)
        lengths = None
        if sequence_length is not None:
            lengths = math_ops.cast(convert_to_tensor(sequence_length), dtypes.int32)
        outputs = []
        for t, x in enumerate(inputs):
            output, new_state = cell(x, state)
            if lengths is not None:
                mask = math_ops.less(constant(t, dtype=dtypes.int32), lengths)
                m = array_ops.expand_dims(mask, 1)
                output = math_ops.where_v2(m, output, array_ops.zeros_like(output))
                new_state = nest.map_structure(
                    lambda a, b, m=m: math_ops.where_v2(m, a, b),
                    new_state,
                    state,
                )
            outputs.append(output)
            state = new_state
        return outputs, state


def static_bidirectional_rnn(
    cell_fw,
    cell_bw,
    inputs,
    initial_state_fw=None,
    initial_state_bw=None,
    dtype=None,
    sequence_length=None,
    scope=None,
):
    """Forward and backward ``static_rnn``; outputs are ``concat([fw, bw], 1)`` per step.
    Returns ``(outputs, output_state_fw, output_state_bw)``."""
    if not inputs:
        raise ValueError("inputs must not be empty")
    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            out_fw, state_fw = static_rnn(
                cell_fw, inputs, initial_state_fw, dtype, sequence_length, scope=fw_scope
            )
        with variable_scope("bw") as bw_scope:
            if sequence_length is None:
                rev = list(reversed(inputs))
            else:
                stacked = array_ops_stack(inputs)
                rev = array_transform.unstack(
                    reverse_sequence(stacked, sequence_length, seq_axis=0, batch_axis=1)
                )
            tmp, state_bw = static_rnn(
                cell_bw, rev, initial_state_bw, dtype, sequence_length, scope=bw_scope
            )
        if sequence_length is None:
            out_bw = list(reversed(tmp))
        else:
            out_bw = array_transform.unstack(
                reverse_sequence(array_ops_stack(tmp), sequence_length, seq_axis=0, batch_axis=1)
            )
        outputs = [_concat([f, b], 1) for f, b in zip(out_fw, out_bw)]
        return outputs, state_fw, state_bw


def array_ops_stack(values):
    return array_transform.stack([convert_to_tensor(v) for v in values])


# -----------------------------------------------------------------------------------------
# dynamic_rnn
# -----------------------------------------------------------------------------------------


def dynamic_rnn(
    cell,
    inputs,
    sequence_length=None,
    initial_state=None,
    dtype=None,
    parallel_iterations=None,
    swap_memory=False,
    time_major=False,
    scope=None,
):
    """Runs ``cell`` over the time axis of ``inputs`` (``[batch, time, depth]``, or
    ``[time, batch, depth]`` with ``time_major``) in a ``while_loop``; the number of steps
    may be unknown until run time. Returns ``(outputs, state)``; with ``sequence_length``
    outputs past each row's length are zero and its state is the one at its last step."""
    del parallel_iterations, swap_memory
    with variable_scope(scope or "rnn") as vs:
        del vs
        x = convert_to_tensor(inputs)
        if x.shape.rank is not None and x.shape.rank < 3:
            raise ValueError(f"inputs must be at least rank 3, got shape {x.shape}")
        if not time_major:
            perm = [1, 0] + list(range(2, x.shape.rank))
            x = array_ops.transpose(x, perm)
        dtype_x = x.dtype.base_dtype
        dims = x.shape.as_tuple()
        batch = dims[1] if dims is not None and dims[1] is not None else array_ops.shape(x)[1]
        state = _initial_state(cell, initial_state, batch, dtype)
        cell.build(x.shape.as_tuple()[-1], dtype_x)
        steps = array_ops.shape(x)[0]
        lengths = None
        if sequence_length is not None:
            lengths = math_ops.cast(convert_to_tensor(sequence_length), dtypes.int32)
            if lengths.shape.rank not in (None, 1):
                raise ValueError(
                    f"sequence_length must be a vector of length batch_size, but saw shape: "
                    f"{lengths.shape}"
                )
        out_size = cell.output_size
        acc0 = array_ops.zeros(array_transform.stack([steps, batch, out_size]), dtype=dtype_x)
        flat_state = nest.flatten(state)

        def cond(t, *_):
            return math_ops.less(t, steps)

        def body(t, acc, *flat):
            prev = nest.pack_sequence_as(state, list(flat))
            x_t = slicing.gather(x, t)
            output, new = cell(x_t, prev)
            if lengths is not None:
                mask = array_ops.expand_dims(math_ops.less(t, lengths), 1)
                output = math_ops.where_v2(mask, output, array_ops.zeros_like(output))
                new = nest.map_structure(lambda a, b: math_ops.where_v2(mask, a, b), new, prev)
            hot = array_ops.one_hot(t, steps, dtype=dtype_x)
            acc = acc + array_ops.reshape(hot, [-1, 1, 1]) * array_ops.expand_dims(output, 0)
            return [t + 1, acc] + nest.flatten(new)

        loop = control_flow.while_loop(
            cond, body, [constant(0, dtype=dtypes.int32), acc0] + flat_state
        )
        outputs = loop[1]
        final = nest.pack_sequence_as(state, list(loop[2:]))
        static_steps = x.shape.as_tuple()[0] if x.shape.rank is not None else None
        static_batch = batch if isinstance(batch, int) else None
        outputs.set_shape([static_steps, static_batch, out_size])
        if not time_major:
            outputs = array_ops.transpose(outputs, [1, 0, 2])
        return outputs, final


def bidirectional_dynamic_rnn(
    cell_fw,
    cell_bw,
    inputs,
    sequence_length=None,
    initial_state_fw=None,
    initial_state_bw=None,
    dtype=None,
    parallel_iterations=None,
    swap_memory=False,
    time_major=False,
    scope=None,
):
    """Forward and backward ``dynamic_rnn``; returns ``((out_fw, out_bw), (state_fw,
    state_bw))`` with ``out_bw`` in input time order."""
    del parallel_iterations, swap_memory  # scheduling hints without effect here
    time_axis, batch_axis = (0, 1) if time_major else (1, 0)
    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            out_fw, state_fw = dynamic_rnn(
                cell_fw,
                inputs,
                sequence_length,
                initial_state_fw,
                dtype,
                time_major=time_major,
                scope=fw_scope,
            )
        with variable_scope("bw") as bw_scope:

            def rev(v):
                if sequence_length is None:
                    return array_transform.reverse(v, [time_axis])
                return reverse_sequence(
                    v, sequence_length, seq_axis=time_axis, batch_axis=batch_axis
                )

            tmp, state_bw = dynamic_rnn(
                cell_bw,
                rev(inputs),
                sequence_length,
                initial_state_bw,
                dtype,
                time_major=time_major,
                scope=bw_scope,
            )
        return (out_fw, rev(tmp)), (state_fw, state_bw)
