"""TF1's Adadelta, FTRL and proximal optimizers on the ``Optimizer`` base class.

Each applies one fused update op per variable, the op TensorFlow's graph holds
(``ApplyAdadelta``, ``ApplyFtrl``/``ApplyFtrlV2``, ``ApplyProximalGradientDescent``,
``ApplyProximalAdagrad`` in ``engine/ops/training_ops.py``), with TF's slot names
(``w/Adadelta`` and ``w/Adadelta_1`` for ``accum`` and ``accum_update``; ``w/Ftrl`` and
``w/Ftrl_1`` for ``accum`` and ``linear``; ``w/ProximalAdagrad`` for ``accumulator``) and TF's
argument checks. As in TF, the proximal optimizers pass their hyper-parameters to the op
without casting them to the variable's dtype, so a float64 variable needs float64 tensors.

    opt = tf.train.FtrlOptimizer(0.1, l1_regularization_strength=0.01)
    train = opt.minimize(loss)
"""

from __future__ import annotations

from engine.ops._common import create
from engine.training.optimizer import Optimizer, _scalar

__all__ = [
    "AdadeltaOptimizer",
    "FtrlOptimizer",
    "ProximalGradientDescentOptimizer",
    "ProximalAdagradOptimizer",
]


def _check_non_negative(**values) -> None:
    """ValueError naming the first of ``values`` that is negative, worded as TF words it."""
    for name, value in values.items():
        if value < 0.0:
            raise ValueError(f"{name} {value:f} needs to be positive or zero")


class AdadeltaOptimizer(Optimizer):
    """Adadelta (Zeiler, 2012): ``accum`` averages ``grad**2`` and ``accum_update`` averages
    the squared updates, with decay ``rho``; the update is
    ``sqrt(accum_update + epsilon) / sqrt(accum + epsilon) * grad``, scaled by
    ``learning_rate`` (1.0 gives the paper's form)."""

    def __init__(
        self, learning_rate=0.001, rho=0.95, epsilon=1e-8, use_locking=False, name="Adadelta"
    ):
        super().__init__(use_locking, name)
        self._lr, self._rho, self._epsilon = learning_rate, rho, epsilon

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "accum")
            self._zeros_slot(v, "accum_update")

    def _prepare(self):
        self._lr_t = self._tensor(self._lr, None, "lr")
        self._rho_t = self._tensor(self._rho, None, "rho")
        self._epsilon_t = self._tensor(self._epsilon, None, "epsilon")

    def _apply_dense(self, grad, var):
        accum, accum_update = self.get_slot(var, "accum"), self.get_slot(var, "accum_update")
        return create(
            "ApplyAdadelta",
            [
                var._ref(),
                accum._ref(),
                accum_update._ref(),
                _scalar(self._lr_t, var, "lr"),
                _scalar(self._rho_t, var, "rho"),
                _scalar(self._epsilon_t, var, "epsilon"),
                grad,
            ],
            {"use_locking": self._use_locking},
            None,
        )


class FtrlOptimizer(Optimizer):
    """FTRL-proximal (McMahan et al., 2013) with online l1/l2 regularization and, when
    ``l2_shrinkage_regularization_strength > 0``, an l2 penalty on the weights' magnitude
    (``ApplyFtrlV2``). ``learning_rate_power`` (<= 0) sets how the per-coordinate step size
    ``learning_rate / accum**-learning_rate_power`` decays; 0 keeps it fixed. Slots: ``accum``
    (starting at ``initial_accumulator_value``, named ``accum_name`` or the optimizer's name)
    and ``linear`` (zeros, named ``linear_name`` or the optimizer's name)."""

    def __init__(
        self,
        learning_rate,
        learning_rate_power=-0.5,
        initial_accumulator_value=0.1,
        l1_regularization_strength=0.0,
        l2_regularization_strength=0.0,
        use_locking=False,
        name="Ftrl",
        accum_name=None,
        linear_name=None,
        l2_shrinkage_regularization_strength=0.0,
    ):
        super().__init__(use_locking, name)
        _check_non_negative(initial_accumulator_value=initial_accumulator_value)
        if learning_rate_power > 0.0:
            raise ValueError(
                f"learning_rate_power {learning_rate_power:f} needs to be negative or zero"
            )
        _check_non_negative(
            l1_regularization_strength=l1_regularization_strength,
            l2_regularization_strength=l2_regularization_strength,
            l2_shrinkage_regularization_strength=l2_shrinkage_regularization_strength,
        )
        self._learning_rate = learning_rate
        self._learning_rate_power = learning_rate_power
        self._initial_accumulator_value = initial_accumulator_value
        self._l1 = l1_regularization_strength
        self._l2 = l2_regularization_strength
        self._l2_shrinkage = l2_shrinkage_regularization_strength
        self._accum_name, self._linear_name = accum_name, linear_name

    def _create_slots(self, var_list):
        for v in var_list:
            self._filled_slot(
                v, self._initial_accumulator_value, "accum", self._accum_name or self._name
            )
            self._zeros_slot(v, "linear", self._linear_name or self._name)

    def _prepare(self):
        self._lr_t = self._tensor(self._learning_rate, None, "learning_rate")
        self._l1_t = self._tensor(self._l1, None, "l1_regularization_strength")
        self._l2_t = self._tensor(self._l2, None, "l2_regularization_strength")
        self._l2_shrinkage_t = self._tensor(
            self._l2_shrinkage, None, "l2_shrinkage_regularization_strength"
        )
        self._lr_power_t = self._tensor(self._learning_rate_power, None, "learning_rate_power")

    def _apply_dense(self, grad, var):
        accum, linear = self.get_slot(var, "accum"), self.get_slot(var, "linear")
        lr, l1, l2 = (
            _scalar(self._lr_t, var, "lr"),
            _scalar(self._l1_t, var, "l1"),
            _scalar(self._l2_t, var, "l2"),
        )
        lr_power = _scalar(self._lr_power_t, var, "lr_power")
        refs = [var._ref(), accum._ref(), linear._ref(), grad]
        attrs = {"use_locking": self._use_locking}
        if self._l2_shrinkage <= 0.0:
            return create("ApplyFtrl", [*refs, lr, l1, l2, lr_power], attrs, None)
        shrinkage = _scalar(self._l2_shrinkage_t, var, "l2_shrinkage")
        return create("ApplyFtrlV2", [*refs, lr, l1, l2, shrinkage, lr_power], attrs, None)


class ProximalGradientDescentOptimizer(Optimizer):
    """Gradient descent followed by the proximal step of l1 (soft threshold
    ``learning_rate * l1``) and l2 (division by ``1 + learning_rate * l2``): FOBOS
    (Duchi & Singer, 2009)."""

    def __init__(
        self,
        learning_rate,
        l1_regularization_strength=0.0,
        l2_regularization_strength=0.0,
        use_locking=False,
        name="ProximalGradientDescent",
    ):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength

    def _prepare(self):
        self._lr_t = self._tensor(self._learning_rate, None, "learning_rate")
        self._l1_t = self._tensor(self._l1, None, "l1_regularization_strength")
        self._l2_t = self._tensor(self._l2, None, "l2_regularization_strength")

    def _apply_dense(self, grad, var):
        return create(
            "ApplyProximalGradientDescent",
            [var._ref(), self._lr_t, self._l1_t, self._l2_t, grad],
            {"use_locking": self._use_locking},
            None,
        )


class ProximalAdagradOptimizer(Optimizer):
    """Adagrad's per-coordinate step size ``learning_rate / sqrt(accumulator)`` with FOBOS's
    l1/l2 proximal step; the ``accumulator`` slot starts at ``initial_accumulator_value``."""

    def __init__(
        self,
        learning_rate,
        initial_accumulator_value=0.1,
        l1_regularization_strength=0.0,
        l2_regularization_strength=0.0,
        use_locking=False,
        name="ProximalAdagrad",
    ):
        if initial_accumulator_value <= 0.0:
            raise ValueError(
                f"initial_accumulator_value must be positive: {initial_accumulator_value}"
            )
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = initial_accumulator_value
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength

    def _create_slots(self, var_list):
        for v in var_list:
            self._filled_slot(v, self._initial_accumulator_value, "accumulator")

    def _prepare(self):
        self._lr_t = self._tensor(self._learning_rate, None, "learning_rate")
        self._l1_t = self._tensor(self._l1, None, "l1_regularization_strength")
        self._l2_t = self._tensor(self._l2, None, "l2_regularization_strength")

    def _apply_dense(self, grad, var):
        acc = self.get_slot(var, "accumulator")
        return create(
            "ApplyProximalAdagrad",
            [var._ref(), acc._ref(), self._lr_t, self._l1_t, self._l2_t, grad],
            {"use_locking": self._use_locking},
            None,
        )
