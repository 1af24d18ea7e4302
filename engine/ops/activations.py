"""Activations of models from other tools: ``Erf`` (for exact GELU) and ``Selu``."""

from __future__ import annotations

import math

from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.registry import op
from engine.ops import array as array_ops
from engine.ops import math as math_ops
from engine.ops._common import FLOATS, create, unary

__all__ = ["erf", "selu", "gelu"]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _erf_grad(o, g):
    x = o.inputs[0]
    two_over_sqrt_pi = 2.0 / math.sqrt(math.pi)
    density = math_ops.exp(math_ops.negative(math_ops.multiply(x, x)))
    return [math_ops.multiply(g, density * two_over_sqrt_pi)]


_ERFC_COEFFS = (
    -1.26551223,
    1.00002368,
    0.37409196,
    0.09678418,
    -0.18628806,
    0.27886807,
    -1.13520398,
    1.48851587,
    -0.82215223,
    0.17087277,
)


@op("Erf", infer=unary(FLOATS), inputs=("x",), grad=_erf_grad)
def _erf(xp, x):
    # numpy has no erf; with array ops only (so one body runs on every device): the Taylor
    # series below |x| = 0.5 (exact to float64 rounding in 14 terms), above it 1 - erfc with
    # the Chebyshev fit of Numerical Recipes (relative error < 1.2e-7).
    x64 = x.astype(xp.float64)
    z = xp.abs(x64)
    small = xp.minimum(z, 0.5)
    term, total = small, small
    sq = small * small
    for n in range(1, 14):
        term = term * (-sq) / n
        total = total + term / (2 * n + 1)
    series = total * (2.0 / math.sqrt(math.pi))
    t = 1.0 / (1.0 + 0.5 * z)
    poly = xp.zeros_like(t) + _ERFC_COEFFS[-1]
    for c in reversed(_ERFC_COEFFS[:-1]):
        poly = c + t * poly
    tail = 1.0 - t * xp.exp(-z * z + poly)
    out = xp.where(z < 0.5, series, tail)
    return (xp.sign(x64) * out).astype(x.dtype)


def _selu_grad(o, g):
    x = o.inputs[0]
    neg = math_ops.multiply(math_ops.exp(x), _SELU_SCALE * _SELU_ALPHA)
    slope = math_ops.where(math_ops.greater(x, 0.0), array_ops.ones_like(x) * _SELU_SCALE, neg)
    return [math_ops.multiply(g, slope)]


@op("Selu", infer=unary(FLOATS), inputs=("features",), grad=_selu_grad)
def _selu(xp, x):
    neg = (_SELU_SCALE * _SELU_ALPHA) * xp.expm1(xp.minimum(x, 0))
    return xp.where(x > 0, _SELU_SCALE * x, neg).astype(x.dtype)


def erf(x, name=None) -> Tensor:
    """The Gauss error function, elementwise."""
    with name_scope(name, "Erf", [x]) as scope:
        return create("Erf", [convert_to_tensor(x, name="x")], {}, scope).outputs[0]


def selu(features, name=None) -> Tensor:
    """Scaled exponential linear unit: ``scale * (features if > 0 else alpha * (e^x - 1))``."""
    with name_scope(name, "Selu", [features]) as scope:
        return create("Selu", [convert_to_tensor(features, name="features")], {}, scope).outputs[0]


def gelu(features, approximate=False, name=None) -> Tensor:
    """``x * P(X <= x)`` for a standard normal X: exact (with Erf) or the tanh approximation."""
    with name_scope(name, "Gelu", [features]) as scope:
        x = convert_to_tensor(features, name="features")
        if approximate:
            inner = (x + math_ops.pow(x, 3.0) * 0.044715) * math.sqrt(2.0 / math.pi)
            return math_ops.multiply(x * 0.5, math_ops.tanh(inner) + 1.0, name=scope)
        return math_ops.multiply(x * 0.5, erf(x * (1.0 / math.sqrt(2.0))) + 1.0, name=scope)
