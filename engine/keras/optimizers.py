"""``tf.keras.optimizers`` as TF1's Keras has them (the "legacy" optimizers): ``SGD``,
``Adam``, ``RMSprop``, ``Adagrad``, ``Adadelta`` and ``Adamax`` with Keras' defaults and
update rules, a learning rate held in a variable (so ``K.set_value(opt.lr, ...)`` and the
learning-rate callbacks work), ``decay``, ``clipnorm`` and ``clipvalue``.

``compile`` also takes a TF1 optimizer (``tf.train.AdamOptimizer(...)``), as TF1's Keras did.
"""

from __future__ import annotations

import inspect

import numpy as np

from engine.framework import graph as ops
from engine.framework.constant_op import convert_to_tensor
from engine.gradients import gradients
from engine.keras import backend
from engine.ops import array as array_ops
from engine.ops import clip_ops, state
from engine.ops import math as math_ops
from engine.ops.control_flow import group
from engine.training.optimizer import Optimizer as _TFOptimizer
from engine.variables import Variable

__all__ = [
    "SGD",
    "Adadelta",
    "Adagrad",
    "Adam",
    "Adamax",
    "Optimizer",
    "RMSprop",
    "TFOptimizer",
    "get",
]


def _one_minus(x: float) -> float:
    """``1 - x`` as TF's float32 kernels compute it (``1 - float32(x)``, not in float64): Adam's
    ``1 - 0.999`` differs by 1.3e-5 between the two, which Adam's normalization amplifies."""
    return float(np.float32(1) - np.float32(x))


def _hyper_kwargs(kwargs: dict, allowed=("lr", "decay", "clipnorm", "clipvalue", "name")):
    unknown = set(kwargs) - set(allowed)
    if unknown:
        raise TypeError(f"Unexpected keyword argument passed to optimizer: {sorted(unknown)[0]}")


class Optimizer:
    """The shared machinery: hyperparameters as variables, gradients (clipped as asked), and
    one update op per step that also increments ``iterations``."""

    _defaults: dict = {}

    def __init__(self, name, learning_rate=0.001, **kwargs):
        _hyper_kwargs(kwargs)
        if "lr" in kwargs:
            learning_rate = kwargs.pop("lr")
        self._name = kwargs.pop("name", name)
        self.decay_value = float(kwargs.pop("decay", 0.0))
        if self.decay_value < 0:
            raise ValueError(f"decay cannot be less than 0. Received: decay={self.decay_value}")
        self.clipnorm = kwargs.pop("clipnorm", None)
        self.clipvalue = kwargs.pop("clipvalue", None)
        self._initial_lr = learning_rate
        self._graph = None
        self.weights: list = []

    def _build_hyper(self) -> None:
        """Creates the variables in the current graph (once per graph)."""
        graph = ops.get_default_graph()
        if self._graph is graph:
            return
        self._graph = graph
        self.weights = []
        with ops.name_scope(None), ops.name_scope(self._name), ops.control_dependencies(None):
            self.iterations = self._variable(0, "iter", "int64")
            self.weights = [self.iterations]  # TF1's OptimizerV2: iterations, then slots
            self.lr = self._variable(self._initial_lr, "learning_rate")
            self.decay = self._variable(self.decay_value, "decay")

    def _variable(self, value, name, dtype=None):
        v = Variable(
            convert_to_tensor(value, dtype=dtype or backend.floatx()), name=name, trainable=False
        )
        backend.track_variable(v)
        return v

    @property
    def learning_rate(self):
        return self.lr

    def _slot(self, var, name, value=0.0):
        with ops.name_scope(None), ops.name_scope(self._name), ops.control_dependencies(None):
            init = array_ops.zeros(var.shape.as_list(), dtype=var.dtype.base_dtype) + value
            slot = Variable(init, name=f"{var.op.name}/{name}", trainable=False)
        backend.track_variable(slot)
        self.weights.append(slot)
        return slot

    def get_gradients(self, loss, params) -> list:
        grads = gradients(loss, params)
        missing = [p.name for p, g in zip(params, grads) if g is None]
        if missing:
            raise ValueError(
                f"Variables {missing} have no gradient with respect to the loss. Make sure "
                "that all of your ops have a gradient defined (i.e. are differentiable)."
            )
        if self.clipnorm is not None:
            grads = [clip_ops.clip_by_norm(g, self.clipnorm) for g in grads]
        if self.clipvalue is not None:
            grads = [clip_ops.clip_by_value(g, -self.clipvalue, self.clipvalue) for g in grads]
        return grads

    def get_updates(self, loss, params) -> list:
        """The ops of one training step on ``params`` (then ``iterations`` += 1)."""
        self._build_hyper()
        grads = self.get_gradients(loss, params)
        # Every gradient is computed before any variable changes: a layer's update must not
        # be seen by the gradients of the layers below it (variables are read in place).
        with ops.name_scope(self._name), ops.control_dependencies(grads):
            step = math_ops.cast(self.iterations, backend.floatx())
            lr = self.lr
            if self.decay_value:
                lr = lr * (1.0 / (1.0 + self.decay * step))
            updates = []
            for p, g in zip(params, grads):
                new_p = self._update(p, g, lr, step + 1.0)
                if getattr(p, "constraint", None) is not None:
                    new_p = p.constraint(new_p)
                updates.append(state.assign(p, new_p).op)
            with ops.control_dependencies(updates):
                bump = state.assign_add(self.iterations, convert_to_tensor(1, dtype="int64"))
        return [group(*updates, bump.op)]

    def _update(self, p, g, lr, t):
        raise NotImplementedError

    def get_weights(self) -> list:
        return backend.batch_get_value(self.weights)

    def set_weights(self, weights) -> None:
        if len(weights) != len(self.weights):
            raise ValueError(
                f"You called `set_weights(weights)` on optimizer {self._name} with a weight "
                f"list of length {len(weights)}, but the optimizer was expecting "
                f"{len(self.weights)} weights."
            )
        backend.batch_set_value(list(zip(self.weights, weights)))

    def get_config(self) -> dict:
        config = {"name": self._name, "learning_rate": self._initial_lr, "decay": self.decay_value}
        # The subclass's own hyperparameters (beta_1, momentum, ...) as TF's get_config.
        for name in inspect.signature(type(self).__init__).parameters:
            value = getattr(self, name, None)
            if name not in config and isinstance(value, (bool, int, float)):
                config[name] = value
        for name in ("clipnorm", "clipvalue"):
            if getattr(self, name) is not None:
                config[name] = getattr(self, name)
        return config


class SGD(Optimizer):
    """``v = momentum * v - lr * g; p += v`` (Nesterov: ``p += momentum * v - lr * g``)."""

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name="SGD", **kwargs):
        super().__init__(name, learning_rate, **kwargs)
        if not 0 <= momentum <= 1:
            raise ValueError(f"`momentum` must be between [0, 1]. Received: momentum={momentum}")
        self.momentum, self.nesterov = float(momentum), bool(nesterov)

    def _update(self, p, g, lr, t):  # noqa: ARG002 - no step count
        if not self.momentum:
            return p - lr * g
        v = self._slot(p, "momentum")
        v_t = state.assign(v, v * self.momentum - lr * g)
        return p + (v_t * self.momentum - lr * g if self.nesterov else v_t)


class Adam(Optimizer):
    def __init__(
        self,
        learning_rate=0.001,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-7,
        amsgrad=False,
        name="Adam",
        **kwargs,
    ):
        super().__init__(name, learning_rate, **kwargs)
        self.beta_1, self.beta_2 = float(beta_1), float(beta_2)
        self.epsilon = backend.epsilon() if epsilon is None else float(epsilon)
        self.amsgrad = bool(amsgrad)

    def _update(self, p, g, lr, t):
        m, v = self._slot(p, "m"), self._slot(p, "v")
        b1t = math_ops.pow(self.beta_1, t)
        b2t = math_ops.pow(self.beta_2, t)
        lr_t = lr * math_ops.sqrt(1.0 - b2t) / (1.0 - b1t)
        m_t = state.assign(m, m + (g - m) * _one_minus(self.beta_1))
        v_t = state.assign(v, v + (g * g - v) * _one_minus(self.beta_2))
        if self.amsgrad:
            vhat = self._slot(p, "vhat")
            v_t = state.assign(vhat, math_ops.maximum(vhat, v_t))
        return p - lr_t * m_t / (math_ops.sqrt(v_t) + self.epsilon)


class RMSprop(Optimizer):
    def __init__(
        self,
        learning_rate=0.001,
        rho=0.9,
        momentum=0.0,
        epsilon=1e-7,
        centered=False,
        name="RMSprop",
        **kwargs,
    ):
        super().__init__(name, learning_rate, **kwargs)
        self.rho, self.momentum = float(rho), float(momentum)
        self.epsilon = backend.epsilon() if epsilon is None else float(epsilon)
        self.centered = bool(centered)

    def _update(self, p, g, lr, t):  # noqa: ARG002 - no step count
        rms = self._slot(p, "rms")
        rms_t = state.assign(rms, self.rho * rms + _one_minus(self.rho) * g * g)
        denom = rms_t
        if self.centered:
            mg = self._slot(p, "mg")
            mg_t = state.assign(mg, self.rho * mg + _one_minus(self.rho) * g)
            denom = rms_t - mg_t * mg_t
        if self.momentum:
            mom = self._slot(p, "momentum")
            mom_t = state.assign(
                mom, self.momentum * mom + lr * g / math_ops.sqrt(denom + self.epsilon)
            )
            return p - mom_t
        return p - lr * g / (math_ops.sqrt(denom) + self.epsilon)


class Adagrad(Optimizer):
    def __init__(
        self,
        learning_rate=0.001,
        initial_accumulator_value=0.1,
        epsilon=1e-7,
        name="Adagrad",
        **kwargs,
    ):
        super().__init__(name, learning_rate, **kwargs)
        if initial_accumulator_value < 0:
            raise ValueError(
                f"initial_accumulator_value must be non-negative: {initial_accumulator_value}"
            )
        self.initial_accumulator_value = float(initial_accumulator_value)
        self.epsilon = backend.epsilon() if epsilon is None else float(epsilon)

    def _update(self, p, g, lr, t):  # noqa: ARG002 - no step count
        acc = self._slot(p, "accumulator", self.initial_accumulator_value)
        acc_t = state.assign(acc, acc + g * g)
        return p - lr * g / (math_ops.sqrt(acc_t) + self.epsilon)


class Adadelta(Optimizer):
    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-7, name="Adadelta", **kwargs):
        super().__init__(name, learning_rate, **kwargs)
        self.rho = float(rho)
        self.epsilon = backend.epsilon() if epsilon is None else float(epsilon)

    def _update(self, p, g, lr, t):  # noqa: ARG002 - no step count
        acc, acc_up = self._slot(p, "accum_grad"), self._slot(p, "accum_var")
        acc_t = state.assign(acc, self.rho * acc + _one_minus(self.rho) * g * g)
        update = math_ops.sqrt(acc_up + self.epsilon) / math_ops.sqrt(acc_t + self.epsilon) * g
        with ops.control_dependencies([acc_t]):
            up_t = state.assign(acc_up, self.rho * acc_up + _one_minus(self.rho) * update * update)
        with ops.control_dependencies([up_t]):
            return p - lr * update


class Adamax(Optimizer):
    def __init__(
        self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, name="Adamax", **kwargs
    ):
        super().__init__(name, learning_rate, **kwargs)
        self.beta_1, self.beta_2 = float(beta_1), float(beta_2)
        self.epsilon = backend.epsilon() if epsilon is None else float(epsilon)

    def _update(self, p, g, lr, t):
        m, u = self._slot(p, "m"), self._slot(p, "v")
        m_t = state.assign(m, m + (g - m) * _one_minus(self.beta_1))
        u_t = state.assign(u, math_ops.maximum(self.beta_2 * u, math_ops.abs(g)))
        lr_t = lr / (1.0 - math_ops.pow(self.beta_1, t))
        return p - lr_t * m_t / (u_t + self.epsilon)


class TFOptimizer(Optimizer):
    """A TF1 optimizer (``tf.train.*Optimizer``) used by ``compile``."""

    def __init__(self, optimizer):
        super().__init__(optimizer.get_name())
        self.optimizer = optimizer

    def get_updates(self, loss, params) -> list:
        self._build_hyper()
        grads = self.get_gradients(loss, params)
        op = self.optimizer.apply_gradients(list(zip(grads, params)), global_step=self.iterations)
        for v in self.optimizer.variables():  # slots and powers: Keras' session starts them
            backend.track_variable(v)
        return [op]


_BY_NAME = {
    "sgd": SGD,
    "adam": Adam,
    "rmsprop": RMSprop,
    "adagrad": Adagrad,
    "adadelta": Adadelta,
    "adamax": Adamax,
}


def get(identifier) -> Optimizer:
    """The optimizer ``identifier`` names (with Keras' defaults), a Keras optimizer, or a
    TF1 optimizer wrapped."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, _TFOptimizer):
        return TFOptimizer(identifier)
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier.lower())
        if cls is None:
            raise ValueError(
                f"Unknown optimizer: {identifier!r}; expected one of {', '.join(_BY_NAME)}, a "
                "Keras optimizer or a tf.train optimizer"
            )
        return cls()
    raise ValueError(f"Could not interpret optimizer identifier: {identifier!r}")
