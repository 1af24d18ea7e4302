"""Logging and assertions: ``Print``, ``Assert`` and the ``assert_*`` checks of TF1.

The ``assert_*`` functions decide at build time when they can (constant inputs, static shapes
and dtypes) and raise where TF raises; otherwise they return an ``Assert`` op that raises
``InvalidArgumentError`` when it runs with a false condition. Like TF1, an assert op only
runs when it is fetched or is a control dependency of something that is.
"""

from __future__ import annotations

import sys
import threading
import weakref

import numpy as np

from engine import dtypes, errors
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Operation, Tensor, name_scope
from engine.framework.registry import Attr, OpFlags, op
from engine.framework.tensor_util import constant_value
from engine.ops import array as array_ops
from engine.ops import control_flow, reduction
from engine.ops import math as math_ops
from engine.ops._common import create

__all__ = [
    "Print",
    "Assert",
    "assert_equal",
    "assert_none_equal",
    "assert_less",
    "assert_less_equal",
    "assert_greater",
    "assert_greater_equal",
    "assert_negative",
    "assert_positive",
    "assert_non_negative",
    "assert_non_positive",
    "assert_rank",
    "assert_rank_at_least",
    "assert_type",
    "assert_scalar",
]


# -----------------------------------------------------------------------------------------
# Value summaries, formatted as TF's Tensor::SummarizeValue prints them
# -----------------------------------------------------------------------------------------


def _format_float(v, digits: int, np_type) -> str:
    # The shortest of C's %.{digits}g and %.{digits + 3}g that reads back as the same value.
    s = f"{v:.{digits}g}"
    if v == v and np_type(float(s)) != np_type(v):
        s = f"{v:.{digits + 3}g}"
    return s


_ESCAPES = {
    ord("\n"): "\\n",
    ord("\r"): "\\r",
    ord("\t"): "\\t",
    ord('"'): '\\"',
    ord("'"): "\\'",
    ord("\\"): "\\\\",
}


def _format_bytes(b: bytes) -> str:
    text = b.decode("utf-8", errors="backslashreplace")
    out = []
    for ch in text:
        code = ord(ch)
        if code in _ESCAPES:
            out.append(_ESCAPES[code])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\{code:03o}")
        else:
            out.append(ch)
    return "".join(out)


def _element_formatter(dtype: np.dtype):
    if dtype.kind == "f":
        if dtype.itemsize == 8:
            return lambda v: _format_float(float(v), 15, np.float64)
        # float16 prints as the float32 it converts to.
        return lambda v: _format_float(float(v), 6, np.float32)
    if dtype.kind == "b":
        return lambda v: "1" if v else "0"
    if dtype.kind == "O":
        return lambda v: _format_bytes(v if isinstance(v, bytes) else str(v).encode())
    return lambda v: str(int(v))


def summarize_value(value, max_entries: int) -> str:
    """The first ``max_entries`` values of an array, nested in brackets per dimension, with
    ``...`` where values were left out (all of them when ``max_entries`` is negative).
    """
    arr = (
        value.get()
        if hasattr(value, "get") and not isinstance(value, np.ndarray)
        else np.asarray(value)
    )
    num = arr.size
    limit = num if max_entries < 0 else min(max_entries, num)
    flat = arr.reshape(-1)
    fmt = _element_formatter(arr.dtype)
    if arr.ndim == 0:
        out = " ".join(fmt(flat[i]) for i in range(limit))
        return out + "..." if num > limit else out
    shape = arr.shape
    last = arr.ndim - 1
    parts: list[str] = []
    index = 0

    def one_dim(d: int) -> None:
        nonlocal index
        if index >= limit:
            return
        if d == last:
            for i in range(shape[d]):
                if index >= limit:
                    if d != 0:
                        parts.append("...")
                    return
                if i > 0:
                    parts.append(" ")
                parts.append(fmt(flat[index]))
                index += 1
            return
        for _ in range(shape[d]):
            opened = index < limit
            if opened:
                parts.append("[")
            one_dim(d + 1)
            if index < limit or opened:
                parts.append("]")

    one_dim(0)
    out = "".join(parts)
    return out + "..." if num > limit else out


# -----------------------------------------------------------------------------------------
# Print
# -----------------------------------------------------------------------------------------


class _CallCounter:
    __slots__ = ("count", "lock")

    def __init__(self):
        self.count = 0
        self.lock = threading.Lock()


# Session -> {op name -> counter}: first_n counts the runs of one op in one session, as
# TF's kernel does; the entry goes away with the session.
_print_counters: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_print_counters_lock = threading.Lock()


def _print_bind(o, ctx):
    with _print_counters_lock:
        counters = _print_counters.setdefault(ctx.session, {})
        counter = counters.setdefault(o._name, _CallCounter())
    return {"counter": counter}


def _print_infer(o):
    x = o._inputs[0]
    return [(x._dtype.base_dtype, x._shape)]


def _print_grad(o, g):
    # TF's _PrintGrad: the gradient passes through to ``input``; the printed data get none.
    return [g] + [None] * (len(o.inputs) - 1)


@op(
    "Print",
    infer=_print_infer,
    bind=_print_bind,
    grad=_print_grad,
    inputs=("input", "data*"),
    attrs=(
        Attr("message", "string"),
        Attr("first_n", "int"),
        Attr("summarize", "int"),
    ),
    flags=OpFlags(stateful=True, aliases=True, device_types=("CPU",)),
)
def _print_kernel(xp, x, *data, message, first_n, summarize, counter):
    if first_n >= 0:
        with counter.lock:
            if counter.count >= first_n:
                return x
            counter.count += 1
    text = message + "".join(f"[{summarize_value(d, summarize)}]" for d in data)
    sys.stderr.write(text + "\n")
    return x


def Print(input_, data, message=None, first_n=None, summarize=None, name=None) -> Tensor:
    """Identity on ``input_`` that prints ``message`` and the values of ``data`` to stderr
    each time it runs (TF1 format: ``message[v1][v2]``).

    ``summarize`` (default 3) caps the entries printed per tensor; ``first_n`` (default
    unlimited) caps the number of runs that print.

    >>> x = Print(x, [x, shape(x)], message="x: ")
    """
    with name_scope(name, "Print", [input_] + list(data)) as scope:
        x = convert_to_tensor(input_, name="input")
        ts = [convert_to_tensor(d, name=f"data_{i}") for i, d in enumerate(data)]
        attrs = {
            "message": "" if message is None else str(message),
            "first_n": -1 if first_n is None else int(first_n),
            "summarize": 3 if summarize is None else int(summarize),
        }
        return create("Print", [x, *ts], attrs, scope).outputs[0]


# -----------------------------------------------------------------------------------------
# Assert
# -----------------------------------------------------------------------------------------


def _assert_infer(o):
    cond = o._inputs[0]
    if cond._dtype.base_dtype is not dtypes.bool:
        raise TypeError(
            f"Input 'condition' of 'Assert' Op has type "
            f"{cond._dtype.base_dtype.name} that does not match expected type of "
            "bool."
        )
    return []


@op(
    "Assert",
    infer=_assert_infer,
    differentiable=False,
    inputs=("condition", "data*"),
    attrs=(Attr("summarize", "int"),),
    flags=OpFlags(stateful=True, device_types=("CPU",)),
)
def _assert_kernel(xp, cond, *data, summarize):
    if cond.ndim > 1 or cond.size != 1:
        raise errors.InvalidArgumentError(
            None, None, f"In[0] should be a scalar: [{','.join(str(d) for d in cond.shape)}]"
        )
    if bool(cond.reshape(-1)[0]):
        return None
    parts = " ".join(f"[{summarize_value(d, summarize)}]" for d in data)
    raise errors.InvalidArgumentError(None, None, f"assertion failed: {parts}")


def Assert(condition, data, summarize=None, name=None) -> Operation:
    """An op raising ``InvalidArgumentError`` when it runs and ``condition`` is false; the
    message shows the values of ``data`` (``summarize`` entries each, default 3).

    >>> check = Assert(reduce_all(x > 0), ["x must be positive:", x])
    >>> with control_dependencies([check]):
    ...     y = log(x)
    """
    data = list(data)
    with name_scope(name, "Assert", [condition] + data):
        with name_scope(None, "Assert") as op_scope:
            cond = convert_to_tensor(condition, name="condition")
            ts = [convert_to_tensor(d, name=f"data_{i}") for i, d in enumerate(data)]
            attrs = {"summarize": 3 if summarize is None else int(summarize)}
            return create("Assert", [cond, *ts], attrs, op_scope)


# -----------------------------------------------------------------------------------------
# assert_* checks
# -----------------------------------------------------------------------------------------


def _message_prefix(message) -> str:
    return f"{message}.  " if message else ""


def _static_string(item) -> str:
    value = constant_value(item) if isinstance(item, Tensor) else None
    if value is not None:
        return str(value)
    return str(item)


def _assert_static(condition, data) -> None:
    if not condition:
        raise errors.InvalidArgumentError(None, None, "\n".join(_static_string(d) for d in data))


def _binary_assert(sym, opname, op_func, static_func, x, y, data, summarize, message, name):
    with name_scope(name, opname, [x, y] + list(data or [])):
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, name="y")
        if data is None:
            data = [
                f"Condition x {sym} y did not hold element-wise:",
                f"x ({x.name}) = ",
                x,
                f"y ({y.name}) = ",
                y,
            ]
        if message is not None:
            data = [message] + list(data)
        condition = reduction.reduce_all(op_func(x, y))
        x_static = constant_value(x)
        y_static = constant_value(y)
        if x_static is not None and y_static is not None:
            _assert_static(bool(np.all(static_func(x_static, y_static))), data)
        return Assert(condition, data, summarize=summarize)


def assert_equal(x, y, data=None, summarize=None, message=None, name=None):
    """Asserts ``x == y`` elementwise (build-time InvalidArgumentError when both are known)."""
    with name_scope(name, "assert_equal", [x, y] + list(data or [])):
        if x is y:
            return control_flow.no_op()
    return _binary_assert(
        "==", "assert_equal", math_ops.equal, np.equal, x, y, data, summarize, message, name
    )


def assert_none_equal(x, y, data=None, summarize=None, message=None, name=None):
    """Asserts ``x != y`` elementwise."""
    return _binary_assert(
        "!=",
        "assert_none_equal",
        math_ops.not_equal,
        np.not_equal,
        x,
        y,
        data,
        summarize,
        message,
        name,
    )


def assert_less(x, y, data=None, summarize=None, message=None, name=None):
    """Asserts ``x < y`` elementwise."""
    return _binary_assert(
        "<", "assert_less", math_ops.less, np.less, x, y, data, summarize, message, name
    )


def assert_less_equal(x, y, data=None, summarize=None, message=None, name=None):
    """Asserts ``x <= y`` elementwise."""
    return _binary_assert(
        "<=",
        "assert_less_equal",
        math_ops.less_equal,
        np.less_equal,
        x,
        y,
        data,
        summarize,
        message,
        name,
    )


def assert_greater(x, y, data=None, summarize=None, message=None, name=None):
    """Asserts ``x > y`` elementwise."""
    return _binary_assert(
        ">", "assert_greater", math_ops.greater, np.greater, x, y, data, summarize, message, name
    )


def assert_greater_equal(x, y, data=None, summarize=None, message=None, name=None):
    """Asserts ``x >= y`` elementwise."""
    return _binary_assert(
        ">=",
        "assert_greater_equal",
        math_ops.greater_equal,
        np.greater_equal,
        x,
        y,
        data,
        summarize,
        message,
        name,
    )


def _unary_assert(sym, opname, against_zero, x, data, summarize, message, name):
    message = _message_prefix(message)
    with name_scope(name, opname, [x] + list(data or [])):
        x = convert_to_tensor(x, name="x")
        if data is None:
            data = [
                message,
                f"Condition x {sym} 0 did not hold element-wise:",
                f"x ({x.name}) = ",
                x,
            ]
        zero = convert_to_tensor(0, dtype=x.dtype.base_dtype)
        return against_zero(x, zero, data, summarize)


def assert_negative(x, data=None, summarize=None, message=None, name=None):
    """Asserts ``x < 0`` elementwise."""
    return _unary_assert(
        "<",
        "assert_negative",
        lambda x, z, d, s: assert_less(x, z, data=d, summarize=s),
        x,
        data,
        summarize,
        message,
        name,
    )


def assert_positive(x, data=None, summarize=None, message=None, name=None):
    """Asserts ``x > 0`` elementwise."""
    return _unary_assert(
        ">",
        "assert_positive",
        lambda x, z, d, s: assert_less(z, x, data=d, summarize=s),
        x,
        data,
        summarize,
        message,
        name,
    )


def assert_non_negative(x, data=None, summarize=None, message=None, name=None):
    """Asserts ``x >= 0`` elementwise."""
    return _unary_assert(
        ">=",
        "assert_non_negative",
        lambda x, z, d, s: assert_less_equal(z, x, data=d, summarize=s),
        x,
        data,
        summarize,
        message,
        name,
    )


def assert_non_positive(x, data=None, summarize=None, message=None, name=None):
    """Asserts ``x <= 0`` elementwise."""
    return _unary_assert(
        "<=",
        "assert_non_positive",
        lambda x, z, d, s: assert_less_equal(x, z, data=d, summarize=s),
        x,
        data,
        summarize,
        message,
        name,
    )


class _StaticRankError(ValueError):
    def __init__(self, actual, given):
        super().__init__("Static rank condition failed", actual, given)
        self.actual, self.given = actual, given


def _assert_rank_condition(x, rank, static_condition, dynamic_condition, data, summarize):
    assert_type(rank, dtypes.int32)
    rank_static = constant_value(rank)
    if rank_static is not None:
        if rank_static.ndim != 0:
            raise ValueError("Rank must be a scalar.")
        x_rank = x.shape.rank
        if x_rank is not None:
            if not static_condition(x_rank, int(rank_static)):
                raise _StaticRankError(x_rank, int(rank_static))
            return control_flow.no_op(name="static_checks_determined_all_ok")
    condition = dynamic_condition(array_ops.rank(x), rank)
    if rank_static is None:
        # Catches assert_rank(x, [n]) written for assert_rank(x, n).
        rank_check = assert_rank(rank, 0, data=["Rank must be a scalar. Received rank: ", rank])
        condition = control_flow.with_dependencies([rank_check], condition)
    return Assert(condition, data, summarize=summarize)


def _rank_assert(
    what, opname, static_condition, dynamic_name, x, rank, data, summarize, message, name
):
    with name_scope(name, opname, [x, rank] + list(data or [])):
        x = convert_to_tensor(x, name="x")
        rank = convert_to_tensor(rank, name="rank")
        message = _message_prefix(message)
        if data is None:
            data = [
                message,
                f"Tensor {x.name} must have {what}",
                rank,
                "Received shape: ",
                array_ops.shape(x),
            ]
        try:
            return _assert_rank_condition(
                x, rank, static_condition, getattr(math_ops, dynamic_name), data, summarize
            )
        except _StaticRankError as e:
            raise ValueError(
                f"{message}Tensor {x.name} must have {what} {e.given}.  Received "
                f"rank {e.actual}, shape {x.shape}"
            ) from None


def assert_rank(x, rank, data=None, summarize=None, message=None, name=None):
    """Asserts ``x`` has rank ``rank``: a ValueError at build time when the rank is static."""
    return _rank_assert(
        "rank", "assert_rank", lambda a, r: a == r, "equal", x, rank, data, summarize, message, name
    )


def assert_rank_at_least(x, rank, data=None, summarize=None, message=None, name=None):
    """Asserts ``x`` has rank ``rank`` or more."""
    return _rank_assert(
        "rank at least",
        "assert_rank_at_least",
        lambda a, r: a >= r,
        "greater_equal",
        x,
        rank,
        data,
        summarize,
        message,
        name,
    )


def assert_type(tensor, tf_type, message=None, name=None) -> Operation:
    """Asserts statically that ``tensor`` has dtype ``tf_type`` (TypeError otherwise)."""
    tf_type = dtypes.as_dtype(tf_type)
    with name_scope(name, "assert_type", [tensor]):
        tensor = convert_to_tensor(tensor, name="tensor")
        if tensor.dtype != tf_type:
            raise TypeError(
                f"{_message_prefix(message)}{tensor.name} must be of type "
                f"{tf_type!r}; got {tensor.dtype!r}"
            )
        return control_flow.no_op("statically_determined_correct_type")


def assert_scalar(tensor, name=None, message=None) -> Tensor:
    """Returns ``tensor`` (converted) if it is statically a scalar; ValueError otherwise."""
    with name_scope(name, "assert_scalar", [tensor]) as scope:
        tensor = convert_to_tensor(tensor, name=scope)
        shape = tensor.shape
        if shape.rank != 0:
            raise ValueError(
                f"{_message_prefix(message)}Expected scalar shape for "
                f"{tensor.name}, saw shape: {shape}."
            )
        return tensor
