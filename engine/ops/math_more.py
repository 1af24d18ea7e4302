"""More elementwise math, one row each as in ``math.py``: inverse and hyperbolic
trigonometry, ``Erfc``, ``Lgamma``, ``Digamma``, ``Polygamma``, the ``*NoNan`` ops, ``Xlogy``,
``Xdivy``, ``Rint`` and truncating division.

numpy has no special functions, so ``Erfc``, ``Lgamma``, ``Digamma`` and ``Polygamma`` are
array-op formulas (one body for every device), computed in float64: a series and a
continued fraction for erfc, the recurrence up to 10 then Stirling's / de Moivre's
asymptotic series for lgamma and digamma (reflection below 1/2), Euler-Maclaurin for the
Hurwitz zeta behind polygamma.
"""

from __future__ import annotations

import math

from engine import dtypes
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.registry import op
from engine.ops._common import FLOATS, NUMERIC, base, binary, create, unary
from engine.ops.activations import _ERFC_COEFFS
from engine.ops.math import (
    _binary_op,
    _check_int_divisor,
    _realdiv,
    _ub,
    _unary_op,
    add,
    cast,
    exp,
    multiply,
    negative,
    not_equal,
    realdiv,
    reciprocal,
    rsqrt,
    square,
    subtract,
)

_SQRT_PI = math.sqrt(math.pi)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_SHIFT = 10.0  # the asymptotic series are used at 10 and above
# B_2j / (2j)! for j = 1..12 (Euler-Maclaurin's coefficients)
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)
_BERNOULLI += (43867 / 798, -174611 / 330, 854513 / 138, -236364091 / 2730)
_EM = tuple(b / math.factorial(2 * j + 2) for j, b in enumerate(_BERNOULLI))


def _f64(xp, x):
    return x.astype(xp.float64)


def _sin_pi(xp, x):
    # sin(pi x) from x's distance to the nearest integer: exact zeros at the integers.
    r = x - xp.round(x)
    return xp.sin(math.pi * r) * xp.where(xp.round(x) % 2 == 0, 1.0, -1.0)


def _erfc_fit(xp, x):
    # Numerical Recipes' Chebyshev fit of erfc (relative error below 1.2e-7 everywhere, the
    # tails included), evaluated in float64, for float32 and float16. In place: three
    # buffers, however many passes the polynomial takes (fresh temporaries of this size
    # cost as much again in page faults).
    z = _f64(xp, x).reshape(-1)  # 1-D: ufuncs give arrays, not scalars, for 0-d x
    xp.abs(z, out=z)
    t = z * 0.5
    t += 1.0
    xp.reciprocal(t, out=t)
    poly = xp.full_like(t, _ERFC_COEFFS[-1])
    for c in reversed(_ERFC_COEFFS[:-1]):
        poly *= t
        poly += c
    xp.multiply(z, z, out=z)
    xp.subtract(poly, z, out=poly)  # -z^2 + poly
    xp.exp(poly, out=poly)
    poly *= t
    xp.subtract(2.0, poly, out=poly, where=(x < 0).reshape(-1))
    return poly.reshape(x.shape).astype(x.dtype)


def _erfc(xp, x):
    if x.dtype.itemsize <= 4:
        return _erfc_fit(xp, x)
    # float64, exact to its rounding. Below 2: 1 - erf from erf's series of positive terms,
    # erf(z) = 2/sqrt(pi) exp(-z^2) sum 2^n z^(2n+1) / (2n+1)!! (60 terms are exact there).
    # From 2 on: Laplace's continued fraction, evaluated backwards from a fixed depth.
    # erfc(-z) = 2 - erfc(z).
    x64 = _f64(xp, x)
    z = xp.abs(x64)
    s = xp.minimum(z, 2.0)
    term = s.copy()
    total = s.copy()
    for n in range(60):
        term = term * (2 * s * s) / (2 * n + 3)
        total = total + term
    series = 1.0 - (2 / _SQRT_PI) * xp.exp(-s * s) * total
    c = xp.maximum(z, 2.0)
    t = c.copy()
    for k in range(120, 0, -1):
        t = c + (k / 2) / t
    # exp(-c^2) in two factors: c's leading 12 fractional bits square exactly.
    hi = xp.floor(c * 4096.0) / 4096.0
    fraction = xp.exp(-hi * hi) * xp.exp(-(c - hi) * (c + hi)) / (_SQRT_PI * t)
    fraction = xp.where(c == xp.inf, 0.0, fraction)
    out = xp.where(z < 2.0, series, fraction)
    return xp.where(x64 < 0, 2.0 - out, out).astype(x.dtype)


def _shift_up(xp, y):
    """(y + n, the product y (y + 1) ... (y + n - 1), the sum of their reciprocals) with n
    the steps that bring y >= 0.5 to 10 or above."""
    prod = xp.ones_like(y)
    recip = xp.zeros_like(y)
    for _ in range(int(_SHIFT)):
        low = y < _SHIFT
        prod = xp.where(low, prod * y, prod)
        recip = xp.where(low, recip + 1.0 / y, recip)
        y = xp.where(low, y + 1.0, y)
    return y, prod, recip


def _lgamma(xp, x):
    x64 = _f64(xp, x)
    # Reflection: lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x), below 1/2.
    low = x64 < 0.5
    y, prod, _ = _shift_up(xp, xp.where(low, 1.0 - x64, x64))
    inv, inv2 = 1.0 / y, 1.0 / (y * y)
    series = xp.zeros_like(y)
    for c in (1 / 156, -691 / 360360, 1 / 1188, -1 / 1680, 1 / 1260, -1 / 360, 1 / 12):
        series = series * inv2 + c
    big = (y - 0.5) * xp.log(y) - y + _HALF_LOG_2PI + series * inv - xp.log(prod)
    big = xp.where(xp.isinf(y), xp.inf, big)
    reflected = math.log(math.pi) - xp.log(xp.abs(_sin_pi(xp, x64))) - big
    out = xp.where(low, reflected, big)
    return xp.where(xp.isinf(x64), xp.inf, out).astype(x.dtype)


def _digamma64(xp, x64):
    # Reflection: psi(x) = psi(1 - x) - pi / tan(pi x), below 1/2; poles (0, -1, ...) NaN.
    low = x64 < 0.5
    y, _, recip = _shift_up(xp, xp.where(low, 1.0 - x64, x64))
    inv2 = 1.0 / (y * y)
    series = xp.zeros_like(y)
    for c in (-1 / 12, 691 / 32760, -1 / 132, 1 / 240, -1 / 252, 1 / 120, -1 / 12):
        series = series * inv2 + c
    big = xp.log(y) - 0.5 / y + series * inv2 - recip
    r = x64 - xp.round(x64)
    reflected = big - math.pi / xp.tan(math.pi * r)
    out = xp.where(low, reflected, big)
    pole = (x64 <= 0) & (x64 == xp.floor(x64))
    return xp.where(pole | (x64 == -xp.inf), xp.nan, out)


def _digamma(xp, x):
    return _digamma64(xp, _f64(xp, x)).astype(x.dtype)


def _polygamma(xp, a, x):
    # psi^(n)(x) = (-1)^(n+1) n! zeta(n+1, x) for integers n >= 1, with the Hurwitz zeta by
    # Euler-Maclaurin: the terms below x + N >= 10 summed, the tail as an integral plus
    # Bernoulli corrections. As TF (Eigen): NaN for a non-integer or negative n.
    a64, x64 = xp.broadcast_arrays(_f64(xp, a), _f64(xp, x))
    s = xp.where(a64 >= 1, a64 + 1.0, 2.0)
    finite = x64[xp.isfinite(x64)]
    lowest = float(finite.min()) if finite.size else _SHIFT
    steps = max(int(_SHIFT), int(math.ceil(_SHIFT - lowest)))
    total = xp.zeros_like(x64)
    w = x64
    for _ in range(steps):
        total = total + w**-s
        w = w + 1.0
    total = total + w ** (1.0 - s) / (s - 1.0) + 0.5 * w**-s
    rising = s.copy()  # s (s + 1) ... (s + 2j - 2)
    for j, c in enumerate(_EM):
        total = total + c * rising * w ** (-s - 2 * j - 1)
        rising = rising * (s + 2 * j + 1) * (s + 2 * j + 2)
    factorial = xp.round(xp.exp(_lgamma(xp, s)))
    sign = xp.where(a64 % 2 == 1, 1.0, -1.0)
    out = sign * factorial * total
    pole = (x64 <= 0) & (x64 == xp.floor(x64))
    out = xp.where(pole, xp.where(a64 % 2 == 1, xp.inf, xp.nan), out)
    out = xp.where(a64 == 0, _digamma64(xp, x64), out)
    bad = (a64 < 0) | (a64 != xp.floor(a64))
    return xp.where(bad, xp.nan, out).astype(x.dtype)


def _div_no_nan(xp, x, y):
    zero = y == 0
    return xp.where(zero, 0, x / xp.where(zero, 1, y)).astype(x.dtype)


def _xdivy(xp, x, y):
    return xp.where(x == 0, 0, x / y).astype(x.dtype)


def _xlogy(xp, x, y):
    return xp.where(x == 0, 0, x * xp.log(y)).astype(x.dtype)


def _truncate_div(xp, x, y):
    if x.dtype.kind in "iu":
        return _realdiv(xp, x, y)
    return xp.trunc(x / y)


def _truncate_mod(xp, x, y):
    # C's remainder: the sign of the dividend.
    _check_int_divisor(x, y)
    return xp.fmod(x, y)


# -- gradients (TF's math_grad.py) ---------------------------------------------------------


def _atan2_grad(o, g):
    y, x = o.inputs
    inv = realdiv(g, add(square(y), square(x)))
    return [_ub(multiply(x, inv), y), _ub(multiply(negative(y), inv), x)]


def _div_no_nan_grad(o, g):
    x, y = o.inputs
    return [
        _ub(div_no_nan(g, y), x),
        _ub(multiply(g, div_no_nan(div_no_nan(negative(x), y), y)), y),
    ]


def _mul_no_nan_grad(o, g):
    x, y = o.inputs
    return [_ub(multiply_no_nan(g, y), x), _ub(multiply_no_nan(x, g), y)]


def _nonzero(x):
    return cast(not_equal(x, 0.0), base(x))


def _xlogy_grad(o, g):
    x, y = o.inputs
    return [_ub(multiply(xlogy(_nonzero(x), y), g), x), _ub(multiply(xdivy(x, y), g), y)]


def _xdivy_grad(o, g):
    x, y = o.inputs
    dy = xdivy(negative(x), square(y))
    return [_ub(multiply(xdivy(_nonzero(x), y), g), x), _ub(multiply(dy, g), y)]


def _polygamma_grad(o, g):
    a, x = o.inputs
    return [None, _ub(multiply(g, polygamma(add(a, 1.0), x)), x)]


def _inverse_sqrt_one_minus_square(o):
    return rsqrt(subtract(1.0, square(o.inputs[0])))


_UNARY = [
    (
        "Acos",
        lambda xp, x: xp.arccos(x),
        lambda o, g: [negative(multiply(g, _inverse_sqrt_one_minus_square(o)))],
    ),
    (
        "Asin",
        lambda xp, x: xp.arcsin(x),
        lambda o, g: [multiply(g, _inverse_sqrt_one_minus_square(o))],
    ),
    (
        "Atan",
        lambda xp, x: xp.arctan(x),
        lambda o, g: [multiply(g, reciprocal(add(1.0, square(o.inputs[0]))))],
    ),
    ("Sinh", lambda xp, x: xp.sinh(x), lambda o, g: [multiply(g, cosh(o.inputs[0]))]),
    ("Cosh", lambda xp, x: xp.cosh(x), lambda o, g: [multiply(g, sinh(o.inputs[0]))]),
    ("Asinh", lambda xp, x: xp.arcsinh(x), lambda o, g: [realdiv(g, cosh(o.outputs[0]))]),
    ("Acosh", lambda xp, x: xp.arccosh(x), lambda o, g: [realdiv(g, sinh(o.outputs[0]))]),
    (
        "Atanh",
        lambda xp, x: xp.arctanh(x),
        lambda o, g: [multiply(g, reciprocal(subtract(1.0, square(o.inputs[0]))))],
    ),
    (
        "Erfc",
        _erfc,
        lambda o, g: [multiply(multiply(g, -2 / _SQRT_PI), exp(negative(square(o.inputs[0]))))],
    ),
    ("Lgamma", _lgamma, lambda o, g: [multiply(g, digamma(o.inputs[0]))]),
    ("Digamma", _digamma, lambda o, g: [multiply(g, polygamma(1.0, o.inputs[0]))]),
    ("Rint", lambda xp, x: xp.rint(x), None),  # piecewise constant: TF's gradient is None
]

# (op type, allowed dtypes, input names, kernel, gradient)
_BINARY = [
    ("Atan2", FLOATS, ("y", "x"), lambda xp, y, x: xp.arctan2(y, x), _atan2_grad),
    ("DivNoNan", FLOATS, ("x", "y"), _div_no_nan, _div_no_nan_grad),
    (
        "MulNoNan",
        FLOATS,
        ("x", "y"),
        lambda xp, x, y: xp.where(y == 0, 0, x * y).astype(x.dtype),
        _mul_no_nan_grad,
    ),
    ("Xlogy", FLOATS, ("x", "y"), _xlogy, _xlogy_grad),
    ("Xdivy", FLOATS, ("x", "y"), _xdivy, _xdivy_grad),
    (
        "Polygamma",
        frozenset([dtypes.float32, dtypes.float64]),
        ("a", "x"),
        _polygamma,
        _polygamma_grad,
    ),
    ("TruncateDiv", NUMERIC, ("x", "y"), _truncate_div, None),
    (
        "TruncateMod",
        frozenset([dtypes.int32, dtypes.int64]) | FLOATS,
        ("x", "y"),
        _truncate_mod,
        None,
    ),
]

for _name, _kernel, _grad in _UNARY:
    op(_name, infer=unary(FLOATS), grad=_grad, differentiable=_grad is not None, inputs=("x",))(
        _kernel
    )
for _name, _allowed, _inputs, _kernel, _grad in _BINARY:
    op(
        _name,
        infer=binary(_allowed),
        grad=_grad,
        differentiable=_grad is not None,
        inputs=_inputs,
    )(_kernel)

acos = _unary_op("Acos", "Acos")
asin = _unary_op("Asin", "Asin")
atan = _unary_op("Atan", "Atan")
sinh = _unary_op("Sinh", "Sinh")
cosh = _unary_op("Cosh", "Cosh")
asinh = _unary_op("Asinh", "Asinh")
acosh = _unary_op("Acosh", "Acosh")
atanh = _unary_op("Atanh", "Atanh")
erfc = _unary_op("Erfc", "Erfc")
lgamma = _unary_op("Lgamma", "Lgamma")
digamma = _unary_op("Digamma", "Digamma")
rint = _unary_op("Rint", "Rint")
atan2 = _binary_op("Atan2", "Atan2")
div_no_nan = _binary_op("DivNoNan", "div_no_nan")
divide_no_nan = div_no_nan
multiply_no_nan = _binary_op("MulNoNan", "multiply_no_nan")
xlogy = _binary_op("Xlogy", "Xlogy")
xdivy = _binary_op("Xdivy", "Xdivy")
truncatediv = _binary_op("TruncateDiv", "TruncateDiv")
truncatemod = _binary_op("TruncateMod", "TruncateMod")
polygamma = _binary_op("Polygamma", "Polygamma")


def reciprocal_no_nan(x, name=None) -> Tensor:
    """``1 / x``, and 0 where ``x`` is 0 (TF's ``tf.math.reciprocal_no_nan``)."""
    with name_scope(name, "reciprocal_no_nan", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        one = convert_to_tensor(1, dtype=base(x), name="one")
        return create("DivNoNan", [one, x], {}, scope).outputs[0]
