"""``tf.keras.regularizers`` and ``tf.keras.constraints``: penalties a layer adds to the
model's loss, and projections applied to a variable after each optimizer step."""

from __future__ import annotations

from engine.ops import clip_ops, reduction
from engine.ops import math as math_ops

__all__ = [
    "L1L2",
    "MaxNorm",
    "MinMaxNorm",
    "NonNeg",
    "Regularizer",
    "UnitNorm",
    "get",
    "get_constraint",
    "l1",
    "l1_l2",
    "l2",
]


class Regularizer:
    def __call__(self, x):  # noqa: ARG002 - the base penalty is zero
        return 0.0


class L1L2(Regularizer):
    """``l1 * sum(|x|) + l2 * sum(x**2)``."""

    def __init__(self, l1=0.0, l2=0.0):  # noqa: E741 - Keras' argument names
        self.l1 = float(l1)
        self.l2 = float(l2)

    def __call__(self, x):
        total = 0.0
        if self.l1:
            total = total + self.l1 * reduction.reduce_sum(math_ops.abs(x))
        if self.l2:
            total = total + self.l2 * reduction.reduce_sum(math_ops.square(x))
        return total

    def get_config(self) -> dict:
        return {"l1": self.l1, "l2": self.l2}


def l1(l=0.01):  # noqa: E741 - Keras' argument name
    return L1L2(l1=l)


def l2(l=0.01):  # noqa: E741 - Keras' argument name
    return L1L2(l2=l)


def l1_l2(l1=0.01, l2=0.01):  # noqa: E741
    return L1L2(l1=l1, l2=l2)


def get(identifier):
    if identifier is None:
        return None
    if isinstance(identifier, str):
        table = {"l1": l1, "l2": l2, "l1_l2": l1_l2}
        if identifier not in table:
            raise ValueError(f"Unknown regularizer: {identifier!r}; expected l1, l2 or l1_l2")
        return table[identifier]()
    if isinstance(identifier, dict):
        return L1L2(**identifier.get("config", {}))
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret regularizer identifier: {identifier!r}")


# -- constraints ---------------------------------------------------------------------------


class Constraint:
    def __call__(self, w):
        return w


class MaxNorm(Constraint):
    """Rescales each slice along ``axis`` whose L2 norm exceeds ``max_value``."""

    def __init__(self, max_value=2, axis=0):
        self.max_value = max_value
        self.axis = axis

    def __call__(self, w):
        norms = math_ops.sqrt(
            reduction.reduce_sum(math_ops.square(w), axis=self.axis, keepdims=True)
        )
        desired = clip_ops.clip_by_value(norms, 0, self.max_value)
        return w * (desired / (1e-7 + norms))


class NonNeg(Constraint):
    def __call__(self, w):
        return w * math_ops.cast(math_ops.greater_equal(w, 0.0), w.dtype)


class UnitNorm(Constraint):
    def __init__(self, axis=0):
        self.axis = axis

    def __call__(self, w):
        norms = math_ops.sqrt(
            reduction.reduce_sum(math_ops.square(w), axis=self.axis, keepdims=True)
        )
        return w / (1e-7 + norms)


class MinMaxNorm(Constraint):
    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        self.min_value, self.max_value, self.rate, self.axis = min_value, max_value, rate, axis

    def __call__(self, w):
        norms = math_ops.sqrt(
            reduction.reduce_sum(math_ops.square(w), axis=self.axis, keepdims=True)
        )
        desired = (
            self.rate * clip_ops.clip_by_value(norms, self.min_value, self.max_value)
            + (1 - self.rate) * norms
        )
        return w * (desired / (1e-7 + norms))


def get_constraint(identifier):
    if identifier is None:
        return None
    if isinstance(identifier, str):
        table = {
            "max_norm": MaxNorm,
            "non_neg": NonNeg,
            "unit_norm": UnitNorm,
            "min_max_norm": MinMaxNorm,
        }
        if identifier not in table:
            raise ValueError(f"Unknown constraint: {identifier!r}; expected one of {sorted(table)}")
        return table[identifier]()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret constraint identifier: {identifier!r}")
