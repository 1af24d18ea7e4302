"""TF1's learning-rate schedules (``tf.train.exponential_decay`` and friends) as graph ops.

Each function takes the step as a tensor (usually the global step variable) and returns a
tensor that recomputes the rate whenever it is run, so it can be handed straight to an
optimizer::

    step = tf.train.get_or_create_global_step()
    lr = tf.train.exponential_decay(0.1, step, decay_steps=1000, decay_rate=0.96)
    train_op = tf.train.GradientDescentOptimizer(lr).minimize(loss, global_step=step)

The formulas, argument names, defaults and name scopes follow TensorFlow 1.15 (whose
``training/learning_rate_decay.py`` wraps keras' ``learning_rate_schedule``): the result has
the learning rate's dtype (float32 for a Python float), and the step may be any integer or
float tensor. Two deliberate differences, both where TF fails rather than computes: a missing
``global_step`` raises ``ValueError("global_step is required for <name>.")`` (TF 1.15 fails
with "None values not supported."), and the cosine schedules and ``polynomial_decay(cycle=True)``
accept a float64 learning rate (TF mixes a float32 constant in and raises TypeError).
``piecewise_constant`` selects with nested ``where`` instead of TF's ``case``; the values are
the same, including TF's fall back to ``values[0]`` when no interval matches (a NaN step).
"""

from __future__ import annotations

import math

from engine import dtypes
from engine.framework.constant_op import constant, convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.ops import array as array_ops
from engine.ops import control_flow
from engine.ops import math as math_ops
from engine.ops import random as random_ops

__all__ = [
    "cosine_decay",
    "cosine_decay_restarts",
    "exponential_decay",
    "inverse_time_decay",
    "linear_cosine_decay",
    "natural_exp_decay",
    "noisy_linear_cosine_decay",
    "piecewise_constant",
    "piecewise_constant_decay",
    "polynomial_decay",
]


def _require(value, what: str, schedule: str) -> None:
    """TF documents a ValueError when the step is missing; say which schedule needs it."""
    if value is None:
        raise ValueError(f"{what} is required for {schedule}.")


def _rate_and_step(learning_rate, global_step):
    """(learning rate tensor, its dtype, the step cast to that dtype), as each schedule
    starts; call inside the schedule's name scope so the names match TF's."""
    lr = convert_to_tensor(learning_rate, name="initial_learning_rate")
    dtype = lr.dtype.base_dtype
    return lr, dtype, math_ops.cast(global_step, dtype)


def _half_cosine(fraction, dtype):
    """``0.5 * (1 + cos(pi * fraction))``; pi in ``dtype`` (TF's is always float32)."""
    return 0.5 * (1.0 + math_ops.cos(constant(math.pi, dtype=dtype) * fraction))


def exponential_decay(
    learning_rate, global_step, decay_steps, decay_rate, staircase=False, name=None
) -> Tensor:
    """``learning_rate * decay_rate ** (global_step / decay_steps)``; with ``staircase`` the
    exponent is floored, so the rate drops every ``decay_steps`` steps::

        lr = tf.train.exponential_decay(0.1, step, 100000, 0.96, staircase=True)
    """
    _require(global_step, "global_step", "exponential_decay")
    return _exponential(learning_rate, global_step, decay_steps, decay_rate, staircase, name)


def _exponential(learning_rate, global_step, decay_steps, decay_rate, staircase, name):
    """TF's ``ExponentialDecay.__call__``, shared with ``natural_exp_decay``."""
    with name_scope(name or "ExponentialDecay") as scope:
        lr, dtype, step = _rate_and_step(learning_rate, global_step)
        decay_steps = math_ops.cast(decay_steps, dtype)
        decay_rate = math_ops.cast(decay_rate, dtype)
        p = step / decay_steps
        if staircase:
            p = math_ops.floor(p)
        return math_ops.multiply(lr, math_ops.pow(decay_rate, p), name=scope)


def natural_exp_decay(
    learning_rate, global_step, decay_steps, decay_rate, staircase=False, name=None
) -> Tensor:
    """``learning_rate * exp(-decay_rate * global_step / decay_steps)`` (exponent floored
    with ``staircase``); TF computes it as ``exponential_decay`` with rate
    ``exp(-decay_rate)``, and so does this."""
    _require(global_step, "global_step", "natural_exp_decay")
    natural_rate = math_ops.exp(math_ops.negative(decay_rate))
    return _exponential(learning_rate, global_step, decay_steps, natural_rate, staircase, name)


def inverse_time_decay(
    learning_rate, global_step, decay_steps, decay_rate, staircase=False, name=None
) -> Tensor:
    """``learning_rate / (1 + decay_rate * global_step / decay_steps)`` (the ratio floored
    with ``staircase``)."""
    _require(global_step, "global_step", "inverse_time_decay")
    with name_scope(name or "InverseTimeDecay") as scope:
        lr, dtype, step = _rate_and_step(learning_rate, global_step)
        decay_steps = math_ops.cast(decay_steps, dtype)
        decay_rate = math_ops.cast(decay_rate, dtype)
        p = step / decay_steps
        if staircase:
            p = math_ops.floor(p)
        one = math_ops.cast(constant(1), dtype)
        denom = math_ops.add(one, math_ops.multiply(decay_rate, p))
        return math_ops.divide(lr, denom, name=scope)


def polynomial_decay(
    learning_rate,
    global_step,
    decay_steps,
    end_learning_rate=0.0001,
    power=1.0,
    cycle=False,
    name=None,
) -> Tensor:
    """From ``learning_rate`` down to ``end_learning_rate`` over ``decay_steps`` along
    ``(1 - step / decay_steps) ** power``, then constant; with ``cycle`` the horizon grows to
    the next multiple of ``decay_steps`` instead, so the rate jumps back up and decays again.
    """
    _require(global_step, "global_step", "polynomial_decay")
    with name_scope(name or "PolynomialDecay") as scope:
        lr, dtype, step = _rate_and_step(learning_rate, global_step)
        end_learning_rate = math_ops.cast(end_learning_rate, dtype)
        power = math_ops.cast(power, dtype)
        decay_steps = math_ops.cast(decay_steps, dtype)
        if cycle:
            # Step 0 would give a zero horizon; TF uses one period there.
            multiplier = math_ops.where_v2(
                math_ops.equal(step, 0), 1.0, math_ops.ceil(step / decay_steps)
            )
            decay_steps = math_ops.multiply(decay_steps, multiplier)
        else:
            step = math_ops.minimum(step, decay_steps)
        p = math_ops.divide(step, decay_steps)
        return math_ops.add(
            math_ops.multiply(lr - end_learning_rate, math_ops.pow(1 - p, power)),
            end_learning_rate,
            name=scope,
        )


def cosine_decay(learning_rate, global_step, decay_steps, alpha=0.0, name=None) -> Tensor:
    """Half a cosine from ``learning_rate`` down to ``alpha * learning_rate`` over
    ``decay_steps`` (Loshchilov & Hutter, SGDR), then constant."""
    _require(global_step, "global_step", "cosine_decay")
    with name_scope(name or "CosineDecay"):
        lr, dtype, step = _rate_and_step(learning_rate, global_step)
        decay_steps = math_ops.cast(decay_steps, dtype)
        step = math_ops.minimum(step, decay_steps)
        completed_fraction = step / decay_steps
        cosine_decayed = _half_cosine(completed_fraction, dtype)
        decayed = (1 - alpha) * cosine_decayed + alpha
        return math_ops.multiply(lr, decayed)


def _restart_position(completed_fraction, t_mul, geometric: bool):
    """(index of the current period, fraction of it completed) when period ``i`` lasts
    ``t_mul ** i`` first periods; ``geometric=False`` is the ``t_mul == 1`` case."""
    if geometric:
        i_restart = math_ops.floor(
            math_ops.log(1.0 - completed_fraction * (1.0 - t_mul)) / math_ops.log(t_mul)
        )
        sum_r = (1.0 - t_mul**i_restart) / (1.0 - t_mul)
        return i_restart, (completed_fraction - sum_r) / t_mul**i_restart
    i_restart = math_ops.floor(completed_fraction)
    return i_restart, completed_fraction - i_restart


def cosine_decay_restarts(
    learning_rate,
    global_step,
    first_decay_steps,
    t_mul=2.0,
    m_mul=1.0,
    alpha=0.0,
    name=None,
) -> Tensor:
    """Cosine decay with warm restarts (SGDR): each period is ``t_mul`` times longer than
    the one before and starts from ``m_mul`` times the previous period's initial rate; the
    first lasts ``first_decay_steps``. Decays towards ``alpha * learning_rate``."""
    _require(global_step, "global_step", "cosine_decay_restarts")
    with name_scope(name or "SGDRDecay") as scope:
        lr, dtype, step = _rate_and_step(learning_rate, global_step)
        first_decay_steps = math_ops.cast(first_decay_steps, dtype)
        alpha = math_ops.cast(alpha, dtype)
        t_mul = math_ops.cast(t_mul, dtype)
        m_mul = math_ops.cast(m_mul, dtype)
        completed_fraction = step / first_decay_steps
        # A cond, as in TF: the geometric branch divides by log(1) when t_mul == 1.
        i_restart, completed_fraction = control_flow.cond(
            math_ops.equal(t_mul, 1.0),
            lambda: _restart_position(completed_fraction, t_mul, geometric=False),
            lambda: _restart_position(completed_fraction, t_mul, geometric=True),
        )
        m_fac = m_mul**i_restart
        cosine_decayed = m_fac * _half_cosine(completed_fraction, dtype)
        decayed = (1 - alpha) * cosine_decayed + alpha
        return math_ops.multiply(lr, decayed, name=scope)


def linear_cosine_decay(
    learning_rate,
    global_step,
    decay_steps,
    num_periods=0.5,
    alpha=0.0,
    beta=0.001,
    name=None,
) -> Tensor:
    """``learning_rate * ((alpha + linear) * cosine + beta)`` where ``linear`` falls from 1
    to 0 over ``decay_steps`` and ``cosine`` runs ``num_periods`` periods (Bello et al.,
    Neural Optimizer Search); constant after ``decay_steps``."""
    _require(global_step, "global_step", "linear_cosine_decay")
    with name_scope(name or "LinearCosineDecay") as scope:
        lr, dtype, step = _rate_and_step(learning_rate, global_step)
        decay_steps, num_periods, alpha, beta = (
            math_ops.cast(v, dtype) for v in (decay_steps, num_periods, alpha, beta)
        )
        step = math_ops.minimum(step, decay_steps)
        linear_decayed = (decay_steps - step) / decay_steps
        cosine_decayed = _cosine_periods(step / decay_steps, num_periods, dtype)
        linear_cosine_decayed = (alpha + linear_decayed) * cosine_decayed + beta
        return math_ops.multiply(lr, linear_cosine_decayed, name=scope)


def _cosine_periods(completed_fraction, num_periods, dtype):
    """The cosine factor of the linear-cosine schedules: ``num_periods`` full periods."""
    return _half_cosine(2.0 * num_periods * completed_fraction, dtype)


def noisy_linear_cosine_decay(
    learning_rate,
    global_step,
    decay_steps,
    initial_variance=1.0,
    variance_decay=0.55,
    num_periods=0.5,
    alpha=0.0,
    beta=0.001,
    name=None,
) -> Tensor:
    """``linear_cosine_decay`` with Gaussian noise added to the linear part, of variance
    ``initial_variance / (1 + step) ** variance_decay``; a fresh draw on every run (seeded
    by the graph seed, as TF's)."""
    _require(global_step, "global_step", "noisy_linear_cosine_decay")
    with name_scope(name or "NoisyLinearCosineDecay") as scope:
        lr, dtype, step = _rate_and_step(learning_rate, global_step)
        decay_steps, initial_variance, variance_decay, num_periods, alpha, beta = (
            math_ops.cast(v, dtype)
            for v in (decay_steps, initial_variance, variance_decay, num_periods, alpha, beta)
        )
        step = math_ops.minimum(step, decay_steps)
        linear_decayed = (decay_steps - step) / decay_steps
        variance = initial_variance / math_ops.pow(1.0 + step, variance_decay)
        std = math_ops.sqrt(variance)
        noise = random_ops.random_normal(array_ops.shape(linear_decayed), stddev=std, dtype=dtype)
        noisy_linear_decayed = linear_decayed + noise
        cosine_decayed = _cosine_periods(step / decay_steps, num_periods, dtype)
        noisy_linear_cosine_decayed = (alpha + noisy_linear_decayed) * cosine_decayed + beta
        return math_ops.multiply(lr, noisy_linear_cosine_decayed, name=scope)


def _as_tensor_list(items) -> list[Tensor]:
    """``boundaries``/``values`` as a list of tensors (a single value counts as a list)."""
    if not isinstance(items, (list, tuple)):
        items = [items]
    return [convert_to_tensor(v) for v in items]


def _tf_repr(dtype) -> str:
    """A dtype as TF's messages print it: ``<dtype: 'int32'>``."""
    return f"<dtype: '{dtype.base_dtype.name}'>"


def _checked_boundaries(boundaries: list[Tensor], x: Tensor) -> list[Tensor]:
    """TF's rule: boundaries share ``x``'s dtype, except int32 ones widen to an int64 step."""
    x_dtype = x.dtype.base_dtype
    out = []
    for b in boundaries:
        b_dtype = b.dtype.base_dtype
        if b_dtype is not x_dtype:
            if b_dtype is not dtypes.int32 or x_dtype is not dtypes.int64:
                raise ValueError(
                    f"Boundaries ({_tf_repr(b_dtype)}) must have the same dtype as x "
                    f"({_tf_repr(x_dtype)})."
                )
            b = math_ops.cast(b, x_dtype)
        out.append(b)
    return out


def piecewise_constant(x, boundaries, values, name=None) -> Tensor:
    """``values[0]`` while ``x <= boundaries[0]``, ``values[i]`` while
    ``boundaries[i-1] < x <= boundaries[i]``, and ``values[-1]`` after the last boundary::

        lr = tf.train.piecewise_constant(step, [100000, 110000], [1.0, 0.5, 0.1])
    """
    _require(x, "x", "piecewise_constant")
    boundaries = _as_tensor_list(boundaries)
    values = _as_tensor_list(values)
    x = convert_to_tensor(x)
    boundaries = _checked_boundaries(boundaries, x)
    for v in values[1:]:
        if v.dtype.base_dtype is not values[0].dtype.base_dtype:
            raise ValueError(
                "Values must have elements all with the same dtype "
                f"({_tf_repr(values[0].dtype)} vs {_tf_repr(v.dtype)})."
            )
    if len(boundaries) != len(values) - 1:
        raise ValueError("The length of boundaries should be 1 less than the length of values")
    with name_scope(name or "PiecewiseConstant"):
        # TF's case() falls back to values[0] when no predicate holds (a NaN step).
        result = math_ops.where_v2(x > boundaries[-1], values[-1], values[0])
        for low, high, v in zip(boundaries[:-1], boundaries[1:], values[1:-1], strict=True):
            result = math_ops.where_v2((x > low) & (x <= high), v, result)
        return math_ops.where_v2(x <= boundaries[0], values[0], result)


piecewise_constant_decay = piecewise_constant
