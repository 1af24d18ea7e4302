"""Math ops: elementwise arithmetic, comparisons, logic, casts, and the Tensor operator
overloads (``+ - * / // % ** @``, unary ``-``, ``abs``, ``< <= > >=``, ``& | ^ ~``).
"""

from __future__ import annotations

from engine import dtypes, errors
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.registry import Attr, OpFlags, ShapeError, op
from engine.ops import array as array_ops
from engine.ops._common import (
    BOOL,
    EQUALITY,
    FLOATS,
    INTS,
    NUMERIC,
    ORDERED,
    SIGNED_NUMERIC,
    base,
    binary,
    broadcast_shape,
    check_same_dtype,
    convert_pair,
    create,
    unary,
)
from engine.ops.grad_util import unbroadcast
from engine.ops.matmul import matmul  # TF's math_ops.matmul; also the ``@`` overload
from engine.tensor_shape import unknown_shape

# -----------------------------------------------------------------------------------------
# Elementwise ops, one row each: (op type, allowed dtypes, kernel)
# -----------------------------------------------------------------------------------------


def _check_int_divisor(x, y):
    if x.dtype.kind in "iu" and not y.all():
        raise errors.InvalidArgumentError(None, None, "Integer division by zero")


def _safe_floordiv(xp, x, y):
    _check_int_divisor(x, y)
    return xp.floor_divide(x, y)


def _safe_mod(xp, x, y):
    # Python/TF semantics: the result takes the sign of the divisor, for ints and floats.
    _check_int_divisor(x, y)
    if x.dtype.kind != "f" or type(x).__module__ == "numpy":
        return xp.mod(x, y)
    # cupy's float remainder is x - floor(x / y) * y, NaN for an infinite divisor; numpy's
    # (and Python's): fmod, moved into the divisor's sign, and a zero with the divisor's sign.
    r = xp.fmod(x, y)
    r = xp.where((r != 0) & ((r < 0) != (y < 0)), r + y, r)
    return xp.where(r == 0, xp.copysign(r, y), r).astype(x.dtype, copy=False)


def _int_pow(xp, x, y):
    if x.dtype.kind in "iu" and (y < 0).any():
        raise errors.InvalidArgumentError(
            None, None, "Integers to negative integer powers are not allowed"
        )
    return xp.power(x, y)


def _sigmoid(xp, x):
    # exp(-|x|) never overflows; 1 / (1 + e) where x >= 0, e / (1 + e) below (the two agree
    # at 0), computed in place: seven array passes and three buffers.
    e = xp.empty_like(x)  # an array even for 0-d x (ufuncs return scalars there)
    xp.abs(x, out=e)
    xp.negative(e, out=e)
    xp.exp(e, out=e)
    d = e + 1
    xp.copyto(e, 1, where=x >= 0)
    xp.divide(e, d, out=e)
    return e.astype(x.dtype, copy=False)


# -- gradients (TF's formulas; broadcasting is undone by grad_util.unbroadcast) -------------


def _ub(g, x):
    return unbroadcast(g, x)


def _add_grad(o, g):
    x, y = o.inputs
    return [_ub(g, x), _ub(g, y)]


def _sub_grad(o, g):
    x, y = o.inputs
    return [_ub(g, x), _ub(negative(g), y)]


def _mul_grad(o, g):
    x, y = o.inputs
    return [_ub(multiply(g, y), x), _ub(multiply(x, g), y)]


def _realdiv_grad(o, g):
    x, y = o.inputs
    if not base(x).is_floating:
        return [None, None]
    return [_ub(realdiv(g, y), x), _ub(multiply(g, realdiv(realdiv(negative(x), y), y)), y)]


def _floormod_grad(o, g):
    x, y = o.inputs
    if not base(x).is_floating:
        return [None, None]
    return [_ub(g, x), _ub(multiply(negative(g), floor(realdiv(x, y))), y)]


def _pow_grad(o, g):
    x, y = o.inputs
    if not base(x).is_floating:
        return [None, None]
    z = o.outputs[0]
    gx = multiply(g, multiply(y, pow(x, subtract(y, 1))))
    safe_log = where_v2(greater(x, 0), log(where_v2(greater(x, 0), x, 1)), 0)
    gy = multiply(g, multiply(z, safe_log))
    return [_ub(gx, x), _ub(gy, y)]


def _minmax_grad(select_x_when):
    def grad(o, g):
        x, y = o.inputs
        if not base(x).is_floating:
            return [None, None]
        mask = select_x_when(x, y)
        zeros = _zeros_like_rt(g)
        return [_ub(where_v2(mask, g, zeros), x), _ub(where_v2(mask, zeros, g), y)]

    return grad


def _sqdiff_grad(o, g):
    x, y = o.inputs
    d = multiply(multiply(g, 2.0 if base(x).is_floating else 2), subtract(x, y))
    return [_ub(d, x), _ub(negative(d), y)]


def _zeros_like_rt(t):
    return array_ops.zeros_like(t)


def _float_only(fn):
    def grad(o, g):
        if not base(o.inputs[0]).is_floating:
            return [None] * len(o.inputs)
        return fn(o, g)

    return grad


def _fused(op_type):
    """Gradient through a fused ``<Op>Grad(y, dy)`` kernel (one pass instead of several)."""

    def grad(o, g):
        return [create(op_type, [o.outputs[0], g], {}, None).outputs[0]]

    return _float_only(grad)


_BINARY = [
    ("AddV2", NUMERIC | frozenset([dtypes.string]), lambda xp, x, y: _add(xp, x, y), _add_grad),
    ("Sub", NUMERIC, lambda xp, x, y: xp.subtract(x, y), _sub_grad),
    ("Mul", NUMERIC, lambda xp, x, y: xp.multiply(x, y), _float_only(_mul_grad)),
    ("RealDiv", NUMERIC, lambda xp, x, y: _realdiv(xp, x, y), _realdiv_grad),
    ("FloorDiv", NUMERIC, _safe_floordiv, None),
    ("FloorMod", NUMERIC, _safe_mod, _floormod_grad),
    ("Pow", NUMERIC, _int_pow, _pow_grad),
    (
        "Maximum",
        NUMERIC,
        lambda xp, x, y: xp.maximum(x, y),
        _minmax_grad(lambda x, y: greater_equal(x, y)),
    ),
    (
        "Minimum",
        NUMERIC,
        lambda xp, x, y: xp.minimum(x, y),
        _minmax_grad(lambda x, y: less_equal(x, y)),
    ),
    (
        "SquaredDifference",
        NUMERIC,
        lambda xp, x, y: xp.square(xp.subtract(x, y)),
        _float_only(_sqdiff_grad),
    ),
    ("BitwiseAnd", INTS, lambda xp, x, y: xp.bitwise_and(x, y), None),
    ("BitwiseOr", INTS, lambda xp, x, y: xp.bitwise_or(x, y), None),
    ("BitwiseXor", INTS, lambda xp, x, y: xp.bitwise_xor(x, y), None),
]

_COMPARE = [
    ("Equal", EQUALITY, lambda xp, x, y: xp.equal(x, y)),
    ("NotEqual", EQUALITY, lambda xp, x, y: xp.not_equal(x, y)),
    ("Less", ORDERED, lambda xp, x, y: xp.less(x, y)),
    ("LessEqual", ORDERED, lambda xp, x, y: xp.less_equal(x, y)),
    ("Greater", ORDERED, lambda xp, x, y: xp.greater(x, y)),
    ("GreaterEqual", ORDERED, lambda xp, x, y: xp.greater_equal(x, y)),
    ("LogicalAnd", BOOL, lambda xp, x, y: xp.logical_and(x, y)),
    ("LogicalOr", BOOL, lambda xp, x, y: xp.logical_or(x, y)),
]

_UNARY = [
    ("Neg", SIGNED_NUMERIC, lambda xp, x: xp.negative(x), lambda o, g: [negative(g)]),
    (
        "Abs",
        SIGNED_NUMERIC,
        lambda xp, x: xp.abs(x),
        _float_only(lambda o, g: [multiply(g, sign(o.inputs[0]))]),
    ),
    (
        "Sign",
        SIGNED_NUMERIC,
        lambda xp, x: xp.sign(x),
        _float_only(lambda o, g: [_zeros_like_rt(o.inputs[0])]),
    ),
    (
        "Square",
        NUMERIC,
        lambda xp, x: xp.square(x),
        _float_only(lambda o, g: [multiply(g, multiply(o.inputs[0], 2.0))]),
    ),
    ("Sqrt", FLOATS, lambda xp, x: xp.sqrt(x), _fused("SqrtGrad")),
    ("Rsqrt", FLOATS, lambda xp, x: xp.reciprocal(xp.sqrt(x)), _fused("RsqrtGrad")),
    ("Reciprocal", FLOATS, lambda xp, x: xp.reciprocal(x), _fused("ReciprocalGrad")),
    ("Exp", FLOATS, lambda xp, x: xp.exp(x), lambda o, g: [multiply(g, o.outputs[0])]),
    ("Expm1", FLOATS, lambda xp, x: xp.expm1(x), lambda o, g: [multiply(g, exp(o.inputs[0]))]),
    ("Log", FLOATS, lambda xp, x: xp.log(x), lambda o, g: [multiply(g, reciprocal(o.inputs[0]))]),
    (
        "Log1p",
        FLOATS,
        lambda xp, x: xp.log1p(x),
        lambda o, g: [multiply(g, reciprocal(add(o.inputs[0], 1.0)))],
    ),
    ("Sin", FLOATS, lambda xp, x: xp.sin(x), lambda o, g: [multiply(g, cos(o.inputs[0]))]),
    (
        "Cos",
        FLOATS,
        lambda xp, x: xp.cos(x),
        lambda o, g: [negative(multiply(g, sin(o.inputs[0])))],
    ),
    (
        "Tan",
        FLOATS,
        lambda xp, x: xp.tan(x),
        lambda o, g: [multiply(g, square(reciprocal(cos(o.inputs[0]))))],
    ),
    ("Tanh", FLOATS, lambda xp, x: xp.tanh(x), _fused("TanhGrad")),
    ("Sigmoid", FLOATS, _sigmoid, _fused("SigmoidGrad")),
    # Piecewise constant: no gradient (TF registers these as returning None).
    ("Floor", FLOATS, lambda xp, x: xp.floor(x), None),
    ("Ceil", FLOATS, lambda xp, x: xp.ceil(x), None),
    ("Round", NUMERIC, lambda xp, x: xp.round(x), None),
    ("IsNan", FLOATS, lambda xp, x: xp.isnan(x), None),
    ("IsInf", FLOATS, lambda xp, x: xp.isinf(x), None),
    ("IsFinite", FLOATS, lambda xp, x: xp.isfinite(x), None),
    ("LogicalNot", BOOL, lambda xp, x: xp.logical_not(x), None),
    ("Invert", INTS, lambda xp, x: xp.invert(x), None),
]

# Fused gradient kernels: f(y, dy) where y is the forward output.
_FUSED_GRADS = [
    (
        "SqrtGrad",
        lambda xp, y, dy: dy * (y.dtype.type(0.5) / y),
        lambda o, g: [
            negative(multiply(g, realdiv(o.outputs[0], o.inputs[0]))),
            multiply(g, realdiv(0.5, o.inputs[0])),
        ],
    ),
    (
        "RsqrtGrad",
        lambda xp, y, dy: dy * (y * y * y) * y.dtype.type(-0.5),
        lambda o, g: [
            multiply(multiply(g, o.inputs[1]), multiply(square(o.inputs[0]), -1.5)),
            multiply(g, multiply(multiply(o.inputs[0], square(o.inputs[0])), -0.5)),
        ],
    ),
    (
        "ReciprocalGrad",
        lambda xp, y, dy: -dy * y * y,
        lambda o, g: [
            multiply(multiply(g, o.inputs[1]), multiply(o.inputs[0], -2.0)),
            negative(multiply(g, square(o.inputs[0]))),
        ],
    ),
    (
        "TanhGrad",
        lambda xp, y, dy: dy * (1 - y * y),
        lambda o, g: [
            multiply(multiply(g, o.inputs[1]), multiply(o.inputs[0], -2.0)),
            multiply(g, subtract(1.0, square(o.inputs[0]))),
        ],
    ),
    (
        "SigmoidGrad",
        lambda xp, y, dy: dy * y * (1 - y),
        lambda o, g: [
            multiply(multiply(g, o.inputs[1]), subtract(1.0, multiply(o.inputs[0], 2.0))),
            multiply(g, multiply(o.inputs[0], subtract(1.0, o.inputs[0]))),
        ],
    ),
]
_BOOL_RESULT = {"IsNan", "IsInf", "IsFinite"}


def _add(xp, x, y):
    if x.dtype.kind == "O":  # strings concatenate, as TF's Add does for tf.string
        return (
            xp.char.add(x.astype(bytes), y.astype(bytes)).astype(object)
            if x.size and y.size
            else xp.broadcast_arrays(x, y)[0].copy()
        )
    return xp.add(x, y)


def _realdiv(xp, x, y):
    if x.dtype.kind in "iu":
        # RealDiv on integers truncates toward zero, as C++ (and TF) integer division does.
        _check_int_divisor(x, y)
        q = xp.floor_divide(x, y)
        return q + ((xp.mod(x, y) != 0) & ((x < 0) != (y < 0))).astype(q.dtype)
    return xp.true_divide(x, y)


for _name, _allowed, _kernel, _grad in _BINARY:
    op(
        _name,
        infer=binary(_allowed),
        grad=_grad,
        differentiable=_grad is not None,
        inputs=("x", "y"),
    )(_kernel)
for _name, _allowed, _kernel in _COMPARE:
    op(
        _name,
        infer=binary(_allowed, out_dtype=dtypes.bool),
        differentiable=False,
        inputs=("x", "y"),
    )(_kernel)
for _name, _allowed, _kernel, _grad in _UNARY:
    op(
        _name,
        infer=unary(_allowed, dtypes.bool if _name in _BOOL_RESULT else None),
        grad=_grad,
        differentiable=_grad is not None,
        inputs=("x",),
    )(_kernel)
for _name, _kernel, _grad in _FUSED_GRADS:
    op(_name, infer=binary(FLOATS), grad=_grad, inputs=("y", "dy"))(_kernel)


def _binary_op(op_type: str, default_name: str):
    def fn(x, y, name=None):
        with name_scope(name, default_name, [x, y]) as scope:
            x, y = convert_pair(x, y)
            return create(op_type, [x, y], {}, scope).outputs[0]

    fn.__name__ = default_name
    fn.__doc__ = f"Elementwise {default_name} of ``x`` and ``y`` with numpy broadcasting."
    return fn


def _unary_op(op_type: str, default_name: str):
    def fn(x, name=None):
        with name_scope(name, default_name, [x]) as scope:
            x = convert_to_tensor(x, name="x")
            return create(op_type, [x], {}, scope).outputs[0]

    fn.__name__ = default_name
    fn.__doc__ = f"Elementwise {default_name} of ``x``."
    return fn


add = _binary_op("AddV2", "Add")
subtract = _binary_op("Sub", "Sub")
multiply = _binary_op("Mul", "Mul")
realdiv = _binary_op("RealDiv", "RealDiv")
floordiv = _binary_op("FloorDiv", "FloorDiv")
floormod = _binary_op("FloorMod", "FloorMod")
maximum = _binary_op("Maximum", "Maximum")
minimum = _binary_op("Minimum", "Minimum")
squared_difference = _binary_op("SquaredDifference", "SquaredDifference")
equal = _binary_op("Equal", "Equal")
not_equal = _binary_op("NotEqual", "NotEqual")
less = _binary_op("Less", "Less")
less_equal = _binary_op("LessEqual", "LessEqual")
greater = _binary_op("Greater", "Greater")
greater_equal = _binary_op("GreaterEqual", "GreaterEqual")
logical_and = _binary_op("LogicalAnd", "LogicalAnd")
logical_or = _binary_op("LogicalOr", "LogicalOr")
bitwise_and = _binary_op("BitwiseAnd", "BitwiseAnd")
bitwise_or = _binary_op("BitwiseOr", "BitwiseOr")
bitwise_xor = _binary_op("BitwiseXor", "BitwiseXor")
mod = floormod
sub = subtract
mul = multiply

negative = _unary_op("Neg", "Neg")
sign = _unary_op("Sign", "Sign")
square = _unary_op("Square", "Square")
sqrt = _unary_op("Sqrt", "Sqrt")
rsqrt = _unary_op("Rsqrt", "Rsqrt")
reciprocal = _unary_op("Reciprocal", "Reciprocal")
exp = _unary_op("Exp", "Exp")
expm1 = _unary_op("Expm1", "Expm1")
log = _unary_op("Log", "Log")
log1p = _unary_op("Log1p", "Log1p")
sin = _unary_op("Sin", "Sin")
cos = _unary_op("Cos", "Cos")
tan = _unary_op("Tan", "Tan")
tanh = _unary_op("Tanh", "Tanh")
sigmoid = _unary_op("Sigmoid", "Sigmoid")
floor = _unary_op("Floor", "Floor")
ceil = _unary_op("Ceil", "Ceil")
round = _unary_op("Round", "Round")  # noqa: A001 - TF's name
is_nan = _unary_op("IsNan", "IsNan")
is_inf = _unary_op("IsInf", "IsInf")
is_finite = _unary_op("IsFinite", "IsFinite")
logical_not = _unary_op("LogicalNot", "LogicalNot")
invert = _unary_op("Invert", "Invert")


def abs(x, name=None):  # noqa: A001 - TF's name
    """Elementwise absolute value."""
    with name_scope(name, "Abs", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        return create("Abs", [x], {}, scope).outputs[0]


def pow(x, y, name=None):  # noqa: A001 - TF's name
    """Elementwise ``x ** y``."""
    with name_scope(name, "Pow", [x, y]) as scope:
        x, y = convert_pair(x, y)
        return create("Pow", [x, y], {}, scope).outputs[0]


def logical_xor(x, y, name="LogicalXor"):
    """Elementwise exclusive or of two bool tensors (composed as TF composes it)."""
    with name_scope(name, "LogicalXor", [x, y]) as scope:
        x, y = convert_pair(x, y)
        return logical_and(logical_or(x, y), logical_not(logical_and(x, y)), name=scope)


_TRUEDIV_TARGET = {
    dtypes.int8: dtypes.float32,
    dtypes.uint8: dtypes.float32,
    dtypes.int16: dtypes.float32,
    dtypes.uint16: dtypes.float32,
    dtypes.int32: dtypes.float64,
    dtypes.int64: dtypes.float64,
    dtypes.uint32: dtypes.float64,
    dtypes.uint64: dtypes.float64,
}


def truediv(x, y, name=None):
    """Python 3 division: integer inputs are cast to float first (int32 -> float64)."""
    with name_scope(name, "truediv", [x, y]) as scope:
        x, y = convert_pair(x, y)
        check = check_same_dtype_pair(x, y, "RealDiv")
        target = _TRUEDIV_TARGET.get(check)
        if target is not None:
            x = cast(x, target)
            y = cast(y, target)
        return create("RealDiv", [x, y], {}, scope).outputs[0]


def check_same_dtype_pair(x, y, op_type):
    if x.dtype.base_dtype is not y.dtype.base_dtype:
        raise TypeError(
            f"Input 'y' of '{op_type}' Op has type {y.dtype.base_dtype.name} that "
            f"does not match type {x.dtype.base_dtype.name} of argument 'x'."
        )
    return x.dtype.base_dtype


divide = truediv


def div(x, y, name=None):
    """TF1's ``div``: floor division for integers, true division for floats."""
    with name_scope(name, "div", [x, y]) as scope:
        x, y = convert_pair(x, y)
        t = "FloorDiv" if check_same_dtype_pair(x, y, "Div").is_integer else "RealDiv"
        return create(t, [x, y], {}, scope).outputs[0]


def floor_div(x, y, name=None):
    return floordiv(x, y, name=name)


# -----------------------------------------------------------------------------------------
# Cast, select, add_n
# -----------------------------------------------------------------------------------------


def _cast_infer(o):
    src = base(o._inputs[0])
    dst = o._attrs["DstT"]
    if (src == dtypes.string) != (dst == dtypes.string):
        raise TypeError(f"Cast from {src.name} to {dst.name} is not supported")
    return [(dst, o._inputs[0]._shape)]


def _cast_grad(o, g):
    src, dst = base(o.inputs[0]), o.outputs[0].dtype.base_dtype
    if src.is_floating and dst.is_floating:
        return [cast(g, src)]
    return [None]


@op(
    "Cast",
    infer=_cast_infer,
    grad=_cast_grad,
    inputs=("x",),
    attrs=(
        Attr("DstT", "type"),
        Attr("Truncate", "bool", default=False),
    ),
    flags=OpFlags(aliases=True),
)
def _cast_kernel(xp, x, *, DstT, Truncate=False):  # noqa: N803 - TF's attr names
    if x.dtype == DstT.np:
        return x
    if DstT.is_bool:
        return x != 0
    return x.astype(DstT.np)


def cast(x, dtype, name=None):
    """``x`` converted elementwise to ``dtype`` (floats truncate toward zero to ints)."""
    dtype = dtypes.as_dtype(dtype).base_dtype
    if isinstance(x, Tensor) and x.dtype.base_dtype is dtype:
        return x
    with name_scope(name, "Cast", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        if x.dtype.base_dtype is dtype:
            return x
        return create("Cast", [x], {"DstT": dtype, "Truncate": False}, scope).outputs[0]


def to_float(x, name="ToFloat"):
    return cast(x, dtypes.float32, name=name)


def to_int32(x, name="ToInt32"):
    return cast(x, dtypes.int32, name=name)


def to_int64(x, name="ToInt64"):
    return cast(x, dtypes.int64, name=name)


def to_double(x, name="ToDouble"):
    return cast(x, dtypes.float64, name=name)


def _select_infer(o):
    cond, x, y = o._inputs
    if base(cond) is not dtypes.bool:
        raise TypeError(f"where's condition must be bool, got {base(cond).name}")
    d = check_same_dtype(o, (1, 2))
    shape = broadcast_shape(broadcast_shape(cond._shape, x._shape), y._shape)
    return [(d, shape)]


def _select_v2_grad(o, g):
    c, x, y = o.inputs
    zeros = _zeros_like_rt(g)
    return [None, _ub(where_v2(c, g, zeros), x), _ub(where_v2(c, zeros, g), y)]


@op("SelectV2", infer=_select_infer, grad=_select_v2_grad, inputs=("condition", "t", "e"))
def _select_kernel(xp, c, x, y):
    return xp.where(c, x, y)


def _select_v1_infer(o):
    cond, x, y = o._inputs
    if base(cond) is not dtypes.bool:
        raise TypeError(f"where's condition must be bool, got {base(cond).name}")
    d = check_same_dtype(o, (1, 2))
    try:
        shape = x._shape.merge_with(y._shape)
    except ValueError:
        raise ShapeError(
            f"Shapes must be equal rank, but are {x._shape.rank} and {y._shape.rank}"
        ) from None
    cs = cond._shape
    if cs.rank is not None and shape.rank is not None and cs.rank != shape.rank:
        if cs.rank != 1:
            raise ShapeError(
                "condition must be a scalar, a vector matching the first "
                "dimension of x, or the shape of x"
            )
    return [(d, shape)]


def _select_grad(o, g):
    c = o.inputs[0]
    zeros = _zeros_like_rt(g)
    return [
        None,
        create("Select", [c, g, zeros], {}, None).outputs[0],
        create("Select", [c, zeros, g], {}, None).outputs[0],
    ]


@op("Select", infer=_select_v1_infer, grad=_select_grad, inputs=("condition", "t", "e"))
def _select_v1_kernel(xp, c, x, y):
    if c.ndim == 1 and x.ndim > 1:
        c = c.reshape(c.shape + (1,) * (x.ndim - 1))
    return xp.where(c, x, y)


def where(condition, x=None, y=None, name=None):
    """TF1's ``where``: with x and y, picks elementwise from x where condition else y.

    ``condition`` may also be a vector selecting whole rows (TF1 semantics).
    """
    if x is None and y is None:
        # slicing builds on this module (it casts indices).
        from engine.ops import slicing  # noqa: PLC0415

        return slicing.where_indices(condition, name=name)
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    with name_scope(name, "Select", [condition, x, y]) as scope:
        c = convert_to_tensor(condition, name="condition")
        x, y = convert_pair(x, y)
        return create("Select", [c, x, y], {}, scope).outputs[0]


def where_v2(condition, x=None, y=None, name=None):
    """Elementwise select with full broadcasting of condition, x and y."""
    if x is None and y is None:
        # slicing builds on this module (it casts indices).
        from engine.ops import slicing  # noqa: PLC0415

        return slicing.where_indices(condition, name=name)
    with name_scope(name, "SelectV2", [condition, x, y]) as scope:
        c = convert_to_tensor(condition, name="condition")
        x, y = convert_pair(x, y)
        return create("SelectV2", [c, x, y], {}, scope).outputs[0]


def _add_n_infer(o):
    d = check_same_dtype(o)
    if d not in NUMERIC:
        raise TypeError(f"add_n does not support dtype {d.name}")
    merged = unknown_shape()
    for t in o._inputs:
        try:
            merged = merged.merge_with(t._shape)
        except ValueError:
            raise ShapeError(
                f"Shapes must be equal rank, but are {merged.rank} and {t._shape.rank}"
                if merged.rank != t._shape.rank
                else f"Dimensions must be equal: {merged} vs {t._shape}"
            ) from None
    return [(d, merged)]


@op("AddN", infer=_add_n_infer, grad=lambda o, g: [g] * len(o.inputs), inputs=("inputs*",))
def _add_n_kernel(xp, *inputs):
    out = inputs[0] + inputs[1] if len(inputs) > 1 else inputs[0].copy()
    for x in inputs[2:]:
        out += x
    return out


def add_n(inputs, name=None):
    """The elementwise sum of a list of tensors of one shape and dtype."""
    if not inputs or not isinstance(inputs, (list, tuple)):
        raise ValueError("inputs must be a non-empty list of tensors of one shape and dtype.")
    with name_scope(name, "AddN", list(inputs)) as scope:
        ts = [convert_to_tensor(x) for x in inputs]
        if len(ts) == 1:
            return array_ops.identity(ts[0], name=scope)
        return create("AddN", ts, {}, scope).outputs[0]


# -----------------------------------------------------------------------------------------
# Operator overloads
# -----------------------------------------------------------------------------------------


def _overload(fn, default_name, reverse=False):
    if reverse:

        def r(self, other):
            return fn(other, self, name=default_name)
    else:

        def r(self, other):
            return fn(self, other, name=default_name)

    return r


def _logical_or_bitwise(logical, bitwise):
    def fn(x, y, name=None):
        x, y = convert_pair(x, y)
        if x.dtype.base_dtype is dtypes.bool:
            return logical(x, y, name=name)
        return bitwise(x, y, name=name)

    return fn


def _xor(x, y, name=None):
    x, y = convert_pair(x, y)
    if x.dtype.base_dtype is dtypes.bool:
        return logical_xor(x, y, name=name)
    return bitwise_xor(x, y, name=name)


def _invert(x):
    if x.dtype.base_dtype is dtypes.bool:
        return logical_not(x)
    return invert(x)


def _binary_overloads():
    table = [
        ("add", add, "add"),
        ("sub", subtract, "sub"),
        ("mul", multiply, "mul"),
        ("truediv", truediv, "truediv"),
        ("floordiv", floordiv, "floordiv"),
        ("mod", floormod, "mod"),
        ("pow", pow, "pow"),
        ("matmul", matmul, "matmul"),
        ("lt", less, "Less"),
        ("le", less_equal, "LessEqual"),
        ("gt", greater, "Greater"),
        ("ge", greater_equal, "GreaterEqual"),
        ("and", _logical_or_bitwise(logical_and, bitwise_and), "and"),
        ("or", _logical_or_bitwise(logical_or, bitwise_or), "or"),
        ("xor", _xor, "xor"),
    ]
    out = {}
    for key, fn, default in table:
        out[f"__{key}__"] = _overload(fn, default)
        if key not in ("lt", "le", "gt", "ge"):
            out[f"__r{key}__"] = _overload(fn, default, reverse=True)
    out["__neg__"] = lambda self: negative(self)
    out["__abs__"] = lambda self: abs(self)
    out["__invert__"] = _invert
    return out


OVERLOADS = _binary_overloads()
for _k, _fn in OVERLOADS.items():
    Tensor._override_operator(_k, _fn)

# Silence "imported but unused" for names re-exported to engine's namespace.
