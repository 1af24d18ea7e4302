"""``tf.train.ExponentialMovingAverage``: shadow variables that track moving averages of
variables or tensors, updated by the op ``apply`` returns::

    ema = tf.train.ExponentialMovingAverage(decay=0.99)
    maintain_averages = ema.apply([w, batch_mean])   # run it after each training step
    w_avg = ema.average(w)

Each update is ``shadow -= (1 - decay) * (shadow - value)``; with ``num_updates`` the decay
is ``min(decay, (1 + num_updates) / (10 + num_updates))``, as in TF. A variable's shadow
starts at the variable's initial value, a tensor's at zeros.
"""

from __future__ import annotations

from engine import dtypes
from engine.framework import graph as ops
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import GraphKeys, name_scope
from engine.ops import array as array_ops
from engine.ops import control_flow
from engine.ops import math as math_ops
from engine.ops import state as state_ops
from engine.variable_scope import get_variable
from engine.variables import Variable, trainable_variables

__all__ = ["ExponentialMovingAverage", "assign_moving_average"]

_FLOATS = (dtypes.float16, dtypes.float32, dtypes.float64)


def assign_moving_average(variable, value, decay, zero_debias=True, name=None):
    """``variable -= (1 - decay) * (variable - value)``; returns the updated value. TF's
    ``zero_debias`` (on by default there) is not supported: pass ``zero_debias=False``."""
    if zero_debias:
        raise ValueError(
            "assign_moving_average: zero_debias=True is not supported; pass zero_debias=False"
        )
    with name_scope(name, "AssignMovingAvg", [variable, value, decay]):
        decay = convert_to_tensor(decay, dtype=variable.dtype.base_dtype, name="decay")
        delta = math_ops.multiply(math_ops.subtract(variable, value), 1.0 - decay)
        return state_ops.assign_sub(variable, delta)


class ExponentialMovingAverage:
    """Moving averages of variables and tensors (see the module docstring)."""

    def __init__(
        self,
        decay,
        num_updates=None,
        zero_debias=False,
        name="ExponentialMovingAverage",
    ):
        if zero_debias:
            raise ValueError("ExponentialMovingAverage: zero_debias=True is not supported")
        self._decay = decay
        self._num_updates = num_updates
        self._name = name
        self._averages: dict = {}

    @property
    def name(self) -> str:
        return self._name

    def _shadow(self, var):
        """The shadow variable of ``var``: its initial value, or zeros for a tensor."""
        if isinstance(var, Variable):
            init = var.initialized_value()
            shape = None
        else:
            if not var.shape.is_fully_defined():
                raise ValueError(
                    f"ExponentialMovingAverage needs a fully defined shape for tensor "
                    f"{var.name}, got {var.shape}"
                )
            init = array_ops.zeros(var.shape.as_list(), var.dtype.base_dtype)
            shape = None
        return get_variable(
            f"{var.op.name}/{self._name}",
            shape=shape,
            dtype=var.dtype.base_dtype,
            initializer=init,
            trainable=False,
            collections=[GraphKeys.GLOBAL_VARIABLES],
        )

    def apply(self, var_list=None):
        """Creates shadows for ``var_list`` (default: the trainable variables) and returns
        the op that updates them all."""
        if var_list is None:
            var_list = trainable_variables()
        var_list = list(var_list)
        for var in var_list:
            if var.dtype.base_dtype not in _FLOATS:
                raise TypeError(
                    f"The variables must be half, float, or double: {var.name} is "
                    f"{var.dtype.base_dtype.name}"
                )
            if var in self._averages:
                raise ValueError(f"Moving average already computed for: {var.name}")
        for var in var_list:
            with ops.get_default_graph().control_dependencies(None):
                self._averages[var] = self._shadow(var)
            if isinstance(var, Variable):
                ops.add_to_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, var)
        with name_scope(self._name) as scope:
            decay = convert_to_tensor(self._decay, dtypes.float32, name="decay")
            if self._num_updates is not None:
                n = math_ops.cast(self._num_updates, dtypes.float32, name="num_updates")
                decay = math_ops.minimum(decay, (1.0 + n) / (10.0 + n))
            updates = []
            for var in var_list:
                avg = self._averages[var]
                value = var.value() if isinstance(var, Variable) else var
                d = math_ops.cast(decay, var.dtype.base_dtype)
                updates.append(assign_moving_average(avg, value, d, zero_debias=False))
            return control_flow.group(*updates, name=scope.rstrip("/"))

    def average(self, var):
        """The shadow variable of ``var``, or None when ``apply`` has not seen it."""
        return self._averages.get(var)

    def average_name(self, var) -> str:
        """The name the shadow of ``var`` has (or would have) in checkpoints."""
        if var in self._averages:
            return self._averages[var].op.name
        return f"{var.op.name}/{self._name}"

    def variables_to_restore(self, moving_avg_variables=None) -> dict:
        """A Saver ``var_list`` that restores the averages into the variables themselves."""
        if moving_avg_variables is None:
            moving_avg_variables = ops.get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES)
            moving_avg_variables += trainable_variables()
        moving = list(dict.fromkeys(moving_avg_variables))
        result = {self.average_name(v): v for v in moving}
        for v in ops.get_collection(GraphKeys.GLOBAL_VARIABLES):
            if v not in moving and v.op.name not in result:
                result[v.op.name] = v
        return result
