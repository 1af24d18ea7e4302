"""``CheckNumerics`` (``tf.check_numerics``, ``tf.debugging.check_numerics``) and the shifts
``LeftShift``/``RightShift`` (``tf.bitwise``), as TensorFlow defines them: CheckNumerics
passes its input through and fails the run naming NaN and/or Inf values (its gradient is the
gradient checked the same way); a shift amount is clamped to ``[0, bits - 1]``."""

from __future__ import annotations

from engine import errors
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, control_dependencies, name_scope
from engine.framework.registry import Attr, op
from engine.ops import array as array_ops
from engine.ops._common import FLOATS, INTS, binary, create, unary

__all__ = ["check_numerics", "left_shift", "right_shift", "verify_tensor_all_finite"]


def _check_numerics_grad(o, g):
    message = o.get_attr("message")
    return [create("CheckNumerics", [g], {"message": message}, None).outputs[0]]


@op(
    "CheckNumerics",
    infer=unary(FLOATS),
    inputs=("tensor",),
    attrs=(Attr("message", "string"),),
    grad=_check_numerics_grad,
)
def _check_numerics(xp, x, *, message):
    nan = bool(xp.isnan(x).any())
    inf = bool(xp.isinf(x).any())
    if nan or inf:
        what = "Inf and NaN" if nan and inf else ("NaN" if nan else "Inf")
        text = message.decode("utf-8", "replace") if isinstance(message, bytes) else message
        raise errors.InvalidArgumentError(None, None, f"{text} : Tensor had {what} values")
    return x


def _shift(kind: str):
    def kernel(xp, x, y):
        bits = x.dtype.itemsize * 8
        amount = xp.clip(y, 0, bits - 1).astype(x.dtype)
        out = xp.left_shift(x, amount) if kind == "left" else xp.right_shift(x, amount)
        return out.astype(x.dtype, copy=False)

    return kernel


op("LeftShift", infer=binary(INTS), inputs=("x", "y"), differentiable=False)(_shift("left"))
op("RightShift", infer=binary(INTS), inputs=("x", "y"), differentiable=False)(_shift("right"))


def check_numerics(tensor, message, name=None) -> Tensor:
    """``tensor`` unchanged; the run fails with ``message`` if it holds NaN or Inf."""
    with name_scope(name, "CheckNumerics", [tensor]) as scope:
        x = convert_to_tensor(tensor, name="tensor")
        text = message.decode("utf-8") if isinstance(message, bytes) else str(message)
        return create("CheckNumerics", [x], {"message": text}, scope).outputs[0]


def _shift_op(op_type: str, x, y, name) -> Tensor:
    with name_scope(name, op_type, [x, y]) as scope:
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, dtype=x.dtype.base_dtype, name="y")
        return create(op_type, [x, y], {}, scope).outputs[0]


def left_shift(x, y, name=None) -> Tensor:
    """``x << y`` elementwise (the shift clamped to ``[0, bits - 1]``)."""
    return _shift_op("LeftShift", x, y, name)


def right_shift(x, y, name=None) -> Tensor:
    """``x >> y`` elementwise, arithmetic for signed types (the shift clamped)."""
    return _shift_op("RightShift", x, y, name)


def verify_tensor_all_finite(t, msg, name=None) -> Tensor:
    """``t``, after a ``CheckNumerics`` of it has passed (``tf.verify_tensor_all_finite``,
    ``tf.debugging.assert_all_finite``)."""
    with name_scope(name, "VerifyFinite", [t]):
        t = convert_to_tensor(t, name="t")
        with control_dependencies([check_numerics(t, msg)]):
            return array_ops.identity(t, name="control_dependency")
