"""Optimizers with TF1's API: ``minimize``, ``compute_gradients``, ``apply_gradients``.

Slot variables are named as TF names them (``w/Adam``, ``w/Adam_1``, ``w/Momentum``) and live
in the global variables collection; one training step is one run of the returned op.
"""

from __future__ import annotations

from engine.framework import graph as ops
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import GraphKeys, Tensor, name_scope
from engine.gradients import gradients
from engine.ops import array as array_ops
from engine.ops import math as math_ops
from engine.ops import state as state_ops
from engine.ops._common import create
from engine.ops.control_flow import group
from engine.variables import Variable

__all__ = [
    "Optimizer",
    "GradientDescentOptimizer",
    "MomentumOptimizer",
    "AdamOptimizer",
    "AdagradOptimizer",
    "RMSPropOptimizer",
]


def _var_key(var):
    return var.op


class Optimizer:
    """Base class: subclasses define ``_create_slots``, ``_prepare`` and ``_apply_dense``."""

    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking: bool, name: str):
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name
        self._slots: dict[str, dict] = {}
        self._non_slot: dict = {}

    def get_name(self) -> str:
        return self._name

    # -- public API -----------------------------------------------------------------------
    def minimize(
        self,
        loss,
        global_step=None,
        var_list=None,
        gate_gradients=GATE_OP,
        aggregation_method=None,
        colocate_gradients_with_ops=False,
        name=None,
        grad_loss=None,
    ):
        """Adds ops computing gradients of ``loss`` and applying them; returns the train op."""
        grads_and_vars = self.compute_gradients(
            loss,
            var_list=var_list,
            gate_gradients=gate_gradients,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops,
            grad_loss=grad_loss,
        )
        if not any(g is not None for g, _ in grads_and_vars):
            raise ValueError(
                "No gradients provided for any variable, check your graph for ops that do not "
                f"support gradients, between variables {[v.name for _, v in grads_and_vars]} "
                f"and loss {loss}."
            )
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def compute_gradients(
        self,
        loss,
        var_list=None,
        gate_gradients=GATE_OP,  # noqa: ARG002 - TF API compatibility
        aggregation_method=None,
        colocate_gradients_with_ops=False,
        grad_loss=None,
    ):
        """A list of (gradient or None, variable) pairs for the variables in ``var_list``."""
        if callable(loss):
            loss = loss()
        loss = convert_to_tensor(loss)
        if not loss.dtype.base_dtype.is_floating:
            raise ValueError(
                f"Invalid type {loss.dtype.name} for {loss.name}, expected: "
                "float16, float32, float64."
            )
        if var_list is None:
            var_list = ops.get_collection(GraphKeys.TRAINABLE_VARIABLES)
        else:
            var_list = list(var_list)
        if not var_list:
            raise ValueError("No variables to optimize.")
        for v in var_list:
            if not hasattr(v, "_ref"):
                raise TypeError(f"Argument is not a Variable: {v!r}")
        grads = gradients(
            loss,
            var_list,
            grad_ys=None if grad_loss is None else [grad_loss],
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops,
        )
        return list(zip(grads, var_list))

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """An op applying the gradients; with ``global_step``, also increments it."""
        grads_and_vars = tuple(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("No variables provided.")
        converted = []
        for g, v in grads_and_vars:
            if g is not None:
                g = convert_to_tensor(g)
                if not v.dtype.base_dtype.is_compatible_with(g.dtype.base_dtype):
                    raise ValueError(
                        f"Gradient {g.name} has dtype {g.dtype.name}, which does "
                        f"not match variable {v.name} ({v.dtype.base_dtype.name})"
                    )
            converted.append((g, v))
        var_list = [v for g, v in converted if g is not None]
        if not var_list:
            raise ValueError(
                f"No gradients provided for any variable: "
                f"{[(str(g), v.name) for g, v in converted]}."
            )
        with ops.control_dependencies(None):
            self._create_slots(var_list)
        with name_scope(name, self._name) as scope:
            self._prepare()
            update_ops = []
            for g, v in converted:
                if g is None:
                    continue
                with name_scope("update_" + v.op.name), ops.colocate_with(v.op):
                    update_ops.append(self._apply_dense(g, v))
            if global_step is None:
                apply_updates = self._finish(update_ops, scope)
            else:
                with ops.control_dependencies([self._finish(update_ops, "update")]):
                    with ops.colocate_with(global_step):
                        apply_updates = state_ops.assign_add(global_step, 1, name=scope)
        train_ops = ops.get_collection_ref(GraphKeys.TRAIN_OP)
        if apply_updates not in train_ops:
            train_ops.append(apply_updates)
        return apply_updates

    def get_slot(self, var, name):
        return self._slots.get(name, {}).get(_var_key(var))

    def get_slot_names(self) -> list[str]:
        return sorted(self._slots)

    def variables(self) -> list:
        out = [v for d in self._slots.values() for v in d.values()]
        out += list(self._non_slot.values())
        return out

    # -- hooks ------------------------------------------------------------------------------
    def _create_slots(self, var_list) -> None:
        pass

    def _prepare(self) -> None:
        pass

    def _apply_dense(self, grad, var):
        raise NotImplementedError

    def _finish(self, update_ops, name_scope_name):
        return group(*update_ops, name=name_scope_name)

    # -- slots ------------------------------------------------------------------------------
    def _slot_variable(self, var, initial_value_fn, op_name: str | None = None):
        """A slot of ``var`` named ``<var>/<op_name>`` (uniquified; the optimizer's name by
        default, as TF's ``slot_creator``)."""
        with ops.control_dependencies(None), ops.name_scope(None), ops.colocate_with(var.op):
            return Variable(
                initial_value_fn,
                name=f"{var.op.name}/{op_name or self._name}",
                trainable=False,
                dtype=var.dtype.base_dtype,
            )

    def _get_or_make_slot(self, var, initial_value_fn, slot_name: str, op_name=None):
        slots = self._slots.setdefault(slot_name, {})
        key = _var_key(var)
        if key not in slots:
            slots[key] = self._slot_variable(var, initial_value_fn, op_name)
        return slots[key]

    def _zeros_slot(self, var, slot_name: str, op_name=None):
        shape = var.shape.as_list()
        dtype = var.dtype.base_dtype
        return self._get_or_make_slot(
            var, lambda: array_ops.zeros(shape, dtype), slot_name, op_name
        )

    def _filled_slot(self, var, value, slot_name: str, op_name=None):
        shape = var.shape.as_list()
        dtype = var.dtype.base_dtype
        return self._get_or_make_slot(
            var,
            lambda: array_ops.fill(shape, convert_to_tensor(value, dtype=dtype)),
            slot_name,
            op_name,
        )

    def _non_slot_variable(self, name: str, initial_value, colocate_with):
        graph = colocate_with.graph
        key = (name, graph)
        v = self._non_slot.get(key)
        if v is None:
            with (
                graph.as_default(),
                ops.control_dependencies(None),
                ops.name_scope(None),
                ops.colocate_with(colocate_with.op),
            ):
                v = Variable(initial_value, name=name, trainable=False)
            self._non_slot[key] = v
        return v

    def _tensor(self, value, dtype, name):
        if callable(value):
            value = value()
        return convert_to_tensor(value, dtype=dtype, name=name)


def _scalar(value, var, name):
    t = value if isinstance(value, Tensor) else convert_to_tensor(value, name=name)
    d = var.dtype.base_dtype
    if t.dtype.base_dtype is not d:
        t = math_ops.cast(t, d)
    return t


class GradientDescentOptimizer(Optimizer):
    """``var -= learning_rate * grad``."""

    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate

    def _prepare(self):
        lr = self._learning_rate() if callable(self._learning_rate) else self._learning_rate
        self._lr_t = convert_to_tensor(lr, name="learning_rate")

    def _apply_dense(self, grad, var):
        return create(
            "ApplyGradientDescent",
            [var._ref(), _scalar(self._lr_t, var, "learning_rate"), grad],
            {"use_locking": self._use_locking},
            None,
        )


class MomentumOptimizer(Optimizer):
    """``accum = momentum * accum + grad; var -= lr * accum`` (optionally Nesterov)."""

    def __init__(
        self, learning_rate, momentum, use_locking=False, name="Momentum", use_nesterov=False
    ):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._momentum = momentum
        self._use_nesterov = use_nesterov

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "momentum")

    def _prepare(self):
        self._lr_t = self._tensor(self._learning_rate, None, "learning_rate")
        self._momentum_t = self._tensor(self._momentum, None, "momentum")

    def _apply_dense(self, grad, var):
        accum = self.get_slot(var, "momentum")
        return create(
            "ApplyMomentum",
            [
                var._ref(),
                accum._ref(),
                _scalar(self._lr_t, var, "lr"),
                grad,
                _scalar(self._momentum_t, var, "momentum"),
            ],
            {"use_locking": self._use_locking, "use_nesterov": self._use_nesterov},
            None,
        )


class AdamOptimizer(Optimizer):
    """Adam (Kingma & Ba) with TF1's bias-corrected step size and slots ``m`` and ``v``."""

    def __init__(
        self,
        learning_rate=0.001,
        beta1=0.9,
        beta2=0.999,
        epsilon=1e-8,
        use_locking=False,
        name="Adam",
    ):
        super().__init__(use_locking, name)
        self._lr, self._beta1, self._beta2, self._epsilon = learning_rate, beta1, beta2, epsilon

    def _create_slots(self, var_list):
        first = min(var_list, key=lambda v: v.op.name)
        self._non_slot_variable("beta1_power", float(self._beta1), first)
        self._non_slot_variable("beta2_power", float(self._beta2), first)
        for v in var_list:
            self._zeros_slot(v, "m")
            self._zeros_slot(v, "v")

    def _get_beta_accumulators(self):
        graph = ops.get_default_graph()
        return (self._non_slot[("beta1_power", graph)], self._non_slot[("beta2_power", graph)])

    def _prepare(self):
        self._lr_t = self._tensor(self._lr, None, "learning_rate")
        self._beta1_t = self._tensor(self._beta1, None, "beta1")
        self._beta2_t = self._tensor(self._beta2, None, "beta2")
        self._epsilon_t = self._tensor(self._epsilon, None, "epsilon")

    def _apply_dense(self, grad, var):
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        b1p, b2p = self._get_beta_accumulators()

        d = var.dtype.base_dtype
        return create(
            "ApplyAdam",
            [
                var._ref(),
                m._ref(),
                v._ref(),
                math_ops.cast(b1p.value(), d),
                math_ops.cast(b2p.value(), d),
                _scalar(self._lr_t, var, "lr"),
                _scalar(self._beta1_t, var, "beta1"),
                _scalar(self._beta2_t, var, "beta2"),
                _scalar(self._epsilon_t, var, "epsilon"),
                grad,
            ],
            {"use_locking": self._use_locking, "use_nesterov": False},
            None,
        )

    def _finish(self, update_ops, name_scope_name):
        b1p, b2p = self._get_beta_accumulators()
        with ops.control_dependencies(update_ops), ops.colocate_with(b1p.op):
            up1 = b1p.assign(b1p.value() * self._beta1_t, use_locking=self._use_locking)
            up2 = b2p.assign(b2p.value() * self._beta2_t, use_locking=self._use_locking)
        return group(*update_ops, up1, up2, name=name_scope_name)


class AdagradOptimizer(Optimizer):
    """``accum += grad**2; var -= lr * grad / sqrt(accum)``."""

    def __init__(
        self, learning_rate, initial_accumulator_value=0.1, use_locking=False, name="Adagrad"
    ):
        if initial_accumulator_value <= 0.0:
            raise ValueError(
                f"initial_accumulator_value must be positive: {initial_accumulator_value}"
            )
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial = initial_accumulator_value

    def _create_slots(self, var_list):
        for v in var_list:
            self._filled_slot(v, self._initial, "accumulator")

    def _prepare(self):
        self._lr_t = self._tensor(self._learning_rate, None, "learning_rate")

    def _apply_dense(self, grad, var):
        acc = self.get_slot(var, "accumulator")
        return create(
            "ApplyAdagrad",
            [var._ref(), acc._ref(), _scalar(self._lr_t, var, "lr"), grad],
            {"use_locking": self._use_locking, "update_slots": True},
            None,
        )


class RMSPropOptimizer(Optimizer):
    """RMSProp with TF1's defaults (decay 0.9, epsilon 1e-10, rms slot starting at 1)."""

    def __init__(
        self,
        learning_rate,
        decay=0.9,
        momentum=0.0,
        epsilon=1e-10,
        use_locking=False,
        centered=False,
        name="RMSProp",
    ):
        super().__init__(use_locking, name)
        self._learning_rate, self._decay = learning_rate, decay
        self._momentum, self._epsilon, self._centered = momentum, epsilon, centered

    def _create_slots(self, var_list):
        for v in var_list:
            self._filled_slot(v, 1.0, "rms")
            if self._centered:
                self._zeros_slot(v, "mg")
            self._zeros_slot(v, "momentum")

    def _prepare(self):
        self._lr_t = self._tensor(self._learning_rate, None, "learning_rate")
        self._decay_t = self._tensor(self._decay, None, "decay")
        self._momentum_t = self._tensor(self._momentum, None, "momentum")
        self._epsilon_t = self._tensor(self._epsilon, None, "epsilon")

    def _apply_dense(self, grad, var):
        rms, mom = self.get_slot(var, "rms"), self.get_slot(var, "momentum")
        scalars = [
            _scalar(self._lr_t, var, "lr"),
            _scalar(self._decay_t, var, "rho"),
            _scalar(self._momentum_t, var, "momentum"),
            _scalar(self._epsilon_t, var, "epsilon"),
        ]
        if self._centered:
            mg = self.get_slot(var, "mg")
            return create(
                "ApplyCenteredRMSProp",
                [var._ref(), mg._ref(), rms._ref(), mom._ref(), *scalars, grad],
                {"use_locking": self._use_locking},
                None,
            )
        return create(
            "ApplyRMSProp",
            [var._ref(), rms._ref(), mom._ref(), *scalars, grad],
            {"use_locking": self._use_locking},
            None,
        )
