"""Constants and tensor conversion: ``constant``, ``convert_to_tensor`` and its registry.

Python values convert as in TF1: ints to int32 (int64 when too large), floats to float32,
bools to bool, str/bytes to string; numpy arrays keep their dtype. Lists holding tensors are
packed with a ``Pack`` op.
"""

from __future__ import annotations

import numbers

import numpy as np

from engine import dtypes
from engine.framework import registry
from engine.framework.graph import Operation, Tensor, get_default_graph, name_scope
from engine.tensor_shape import TensorShape

__all__ = [
    "constant",
    "convert_to_tensor",
    "register_tensor_conversion_function",
    "to_numpy",
    "convert_n_to_tensor",
    "is_tensor_like",
]

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MAX = 2**63 - 1


def _string_array(arr: np.ndarray) -> np.ndarray:
    out = np.empty(arr.shape, dtype=object)
    flat_out = out.reshape(-1)
    for i, v in enumerate(arr.reshape(-1)):
        if isinstance(v, str):
            v = v.encode("utf-8")
        elif isinstance(v, (bytes, np.bytes_)):
            v = bytes(v)
        else:
            raise TypeError(
                f"Failed to convert {v!r} of type {type(v).__name__} to a string "
                "tensor element (expected str or bytes)."
            )
        flat_out[i] = v
    return out


def _python_to_numpy(value, float_dtype=np.float32) -> np.ndarray:
    """A Python scalar or nested list as a numpy array with TF1's default dtypes (floats as
    ``float_dtype``: float64 keeps every digit for a conversion to another float type)."""
    if value is None:
        raise ValueError("None values not supported.")
    try:
        arr = np.array(value)
    except ValueError as e:
        raise ValueError(
            f"Can't convert a ragged or irregular Python sequence to a tensor: {e}"
        ) from None
    kind = arr.dtype.kind
    if kind == "b":
        return arr
    if kind in "iu":
        if kind == "u" and arr.size and arr.max() > _INT64_MAX:
            return arr  # above int64 (2**63 and up): uint64, as TF
        if arr.size and (arr.min() < _INT32_MIN or arr.max() > _INT32_MAX):
            return arr.astype(np.int64)
        return arr.astype(np.int32)
    if kind == "f":
        return arr.astype(float_dtype)
    if kind in "US":
        # numpy's fixed-width strings drop trailing NUL bytes (b"a\x00" reads back as b"a"):
        # the Python objects themselves, with the shape numpy found.
        exact = np.empty(arr.shape, dtype=object)
        if arr.ndim == 0:
            exact[()] = value
        else:
            exact[...] = np.array(value, dtype=object).reshape(arr.shape)
        return _string_array(exact)
    if kind == "O":
        flat = arr.reshape(-1)
        if any(v is None for v in flat):
            raise ValueError("None values not supported.")
        if all(isinstance(v, (str, bytes)) for v in flat):
            return _string_array(arr)
        if all(isinstance(v, numbers.Number) for v in flat) and arr.size:
            if all(isinstance(v, numbers.Integral) for v in flat):
                raise TypeError(
                    f"Failed to convert elements of {value!r} to Tensor: integers beyond the "
                    "int64 and uint64 ranges."
                )
            if all(isinstance(v, numbers.Real) for v in flat):  # e.g. Fraction, Decimal
                return np.array([float(v) for v in flat]).reshape(arr.shape).astype(float_dtype)
    raise TypeError(
        f"Failed to convert elements of {value!r} to Tensor (unsupported element "
        f"type {type(arr.reshape(-1)[0]).__name__ if arr.size else 'object'})."
    )


def to_numpy(value, dtype: dtypes.DType | None = None) -> np.ndarray:
    """Converts a Python or numpy value to the numpy array a constant of it would hold.

    With ``dtype``, numpy values are cast to it; Python values must be representable
    (a float where an int is requested raises TypeError, as in TF1).
    """
    if isinstance(value, (np.ndarray, np.generic)):
        arr = np.asarray(value)
        if arr.dtype.kind in "USO":
            arr = _string_array(arr)
        elif arr.dtype not in dtypes._BY_NUMPY:
            raise TypeError(f"Unsupported numpy dtype {arr.dtype} for a tensor")
        if dtype is None:
            return arr
        dtype = dtypes.as_dtype(dtype).base_dtype
        if (dtype == dtypes.string) != (arr.dtype.kind == "O"):
            raise TypeError(f"Expected {dtype.name}, but got array of {arr.dtype}.")
        return arr if arr.dtype == dtype.np else arr.astype(dtype.np)
    if dtype is None:
        return _python_to_numpy(value)
    dtype = dtypes.as_dtype(dtype).base_dtype
    # Python floats go straight to ``dtype`` from their float64 value, rounded once (through
    # float32 first, 0.1 as a float64 constant was 0.10000000149011612).
    arr = _python_to_numpy(value, np.float64 if dtype.is_floating else np.float32)
    kind = arr.dtype.kind
    ok = arr.size == 0 or (
        (dtype.is_floating and kind in "biuf")
        or (dtype.is_integer and kind in "biu")
        or (dtype.is_bool and kind == "b")
        or (dtype == dtypes.string and kind == "O")
    )
    if not ok:
        shown = value if not isinstance(value, (list, tuple)) or len(str(value)) < 60 else "..."
        raise TypeError(
            f"Expected {dtype.name}, but got {shown!r} of type '{type(value).__name__}'."
        )
    if dtype.is_integer and kind in "iu" and arr.size:
        info = np.iinfo(dtype.np)
        if arr.min() < info.min or arr.max() > info.max:
            if dtype not in (dtypes.uint8, dtypes.uint16):  # TF1 wraps these silently
                raise TypeError(f"Value {value!r} is out of range for {dtype.name}.")
            return arr.astype(np.int64).astype(dtype.np)
    return arr if arr.dtype == dtype.np else arr.astype(dtype.np)


# -----------------------------------------------------------------------------------------
# Const
# -----------------------------------------------------------------------------------------


def _const_infer(op):
    v = op._attrs["value"]
    return [(op._attrs["dtype"], TensorShape(v.shape))]


@registry.op(
    "Const",
    infer=_const_infer,
    attrs=(
        registry.Attr("value", "tensor"),
        registry.Attr("dtype", "type"),
    ),
    differentiable=False,
    flags=registry.OpFlags(aliases=True, hoist=True),
)
def _const_kernel(xp, *, value, dtype):  # noqa: ARG001 - attrs reach a kernel by keyword, used or not
    return value if xp is np else xp.asarray(value)


def constant(value, dtype=None, shape=None, name="Const", verify_shape=False) -> Tensor:
    """A constant tensor holding ``value`` (optionally cast to ``dtype``, shaped ``shape``).

    >>> constant([1, 2, 3, 4], shape=[2, 2]).shape
    TensorShape([Dimension(2), Dimension(2)])
    """
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype).base_dtype
    arr = to_numpy(value, dtype)
    if shape is not None:
        shape = [int(d) for d in TensorShape(shape).as_list()]
        n = int(np.prod(shape, dtype=np.int64))
        if arr.shape == tuple(shape):
            pass
        elif verify_shape:
            raise TypeError(f"Expected Tensor's shape: {tuple(shape)}, got {arr.shape}.")
        elif arr.size == 1:
            arr = (
                np.full(shape, arr.reshape(()), dtype=arr.dtype)
                if arr.dtype.kind != "O"
                else _fill_object(shape, arr.reshape(-1)[0])
            )
        elif arr.size == n:
            arr = arr.reshape(shape)
        else:
            raise TypeError(
                f"Eager execution of tf.constant with unsupported shape. Tensor "
                f"{value!r} (converted from {arr.shape}) has {arr.size} elements, "
                f"but got `shape` {tuple(shape)} with {n} elements)."
            )
    if arr.flags.writeable:
        arr = arr.copy() if arr.base is not None or isinstance(value, np.ndarray) else arr
        arr.flags.writeable = False  # constants are immutable; kernels may alias them
    dt = dtypes._BY_NUMPY[arr.dtype] if arr.dtype.kind != "O" else dtypes.string
    g = get_default_graph()
    return g._create_op("Const", [], {"value": arr, "dtype": dt}, name or "Const").outputs[0]


def _fill_object(shape, v):
    out = np.empty(shape, dtype=object)
    out.fill(v)
    return out


# -----------------------------------------------------------------------------------------
# Conversion registry
# -----------------------------------------------------------------------------------------

_conversion_funcs: list[tuple[int, int, type, object]] = []
_conversion_cache: dict[type, list] = {}


def register_tensor_conversion_function(base_type, conversion_func, priority: int = 100):
    """Registers ``conversion_func(value, dtype=None, name=None, as_ref=False)`` for a type.

    Lower priorities run first; a function may return NotImplemented to pass.
    """
    if not isinstance(base_type, type) and not (
        isinstance(base_type, tuple) and all(isinstance(t, type) for t in base_type)
    ):
        raise TypeError("base_type must be a type or a tuple of types.")
    if not callable(conversion_func):
        raise TypeError("conversion_func must be callable.")
    if base_type in (str, bytes, int, float, bool, np.ndarray, np.generic):
        raise TypeError(f"Cannot register conversions for Python or numpy base type {base_type}")
    _conversion_funcs.append((priority, len(_conversion_funcs), base_type, conversion_func))
    _conversion_funcs.sort(key=lambda e: (e[0], e[1]))
    _conversion_cache.clear()


def _funcs_for(cls):
    funcs = _conversion_cache.get(cls)
    if funcs is None:
        funcs = [f for _, _, base, f in _conversion_funcs if issubclass(cls, base)]
        _conversion_cache[cls] = funcs
    return funcs


def _contains_tensor(value) -> bool:
    if isinstance(value, Tensor) or _funcs_for(type(value)):
        return True
    if isinstance(value, (list, tuple)):
        return any(_contains_tensor(v) for v in value)
    return False


def convert_to_tensor(
    value, dtype=None, name=None, preferred_dtype=None, dtype_hint=None, as_ref=False
) -> Tensor:
    """Converts tensors, variables, arrays, lists and Python scalars/strings to a Tensor.

    ``dtype`` is required to match (tensors) or converted to (Python and numpy values);
    ``dtype_hint``/``preferred_dtype`` is tried first and dropped if conversion fails.
    """
    hint = dtype_hint if dtype_hint is not None else preferred_dtype
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
    if isinstance(value, Tensor):
        if dtype is not None and not dtype.base_dtype.is_compatible_with(value.dtype.base_dtype):
            raise ValueError(
                f"Tensor conversion requested dtype {dtype.base_dtype.name} for "
                f"Tensor with dtype {value.dtype.name}: {value!r}"
            )
        return value
    if isinstance(value, Operation):
        raise TypeError(
            f"Can't convert Operation '{value.name}' to Tensor (target dtype="
            f"{dtype}, name={name!r}, as_ref={as_ref})"
        )
    if dtype is None and hint is not None:
        try:
            return convert_to_tensor(value, dtype=hint, name=name, as_ref=as_ref)
        except (TypeError, ValueError):
            pass
    for func in _funcs_for(type(value)):
        t = func(value, dtype=dtype, name=name, as_ref=as_ref)
        if t is NotImplemented:
            continue
        if not isinstance(t, Tensor):
            raise RuntimeError(
                f"Conversion function {func!r} for type {type(value)} returned non-Tensor: {t!r}"
            )
        if dtype is not None and not dtype.base_dtype.is_compatible_with(t.dtype.base_dtype):
            raise RuntimeError(
                f"Conversion function {func!r} for type {type(value)} returned "
                f"incompatible dtype: requested = {dtype.name}, actual = "
                f"{t.dtype.name}"
            )
        return t
    if isinstance(value, (list, tuple)) and value and _contains_tensor(value):
        return _autopack(value, dtype, name)
    return constant(value, dtype=dtype, name=name or "Const")


def _autopack(value, dtype, name) -> Tensor:
    with name_scope(name, "packed") as scope:
        elems = []
        for v in value:
            if isinstance(v, (list, tuple)) and _contains_tensor(v):
                elems.append(_autopack(v, dtype, None))
            else:
                elems.append(v)
        first = next((e for e in elems if isinstance(e, Tensor)), None)
        target = dtype or (first.dtype.base_dtype if first is not None else None)
        elems = [convert_to_tensor(e, dtype=target) for e in elems]
        # A Pack of the elements, as ``tf.stack`` builds it (framework code builds the op
        # directly rather than importing the op families above it).
        return get_default_graph()._create_op("Pack", elems, {"axis": 0}, scope).outputs[0]


def convert_n_to_tensor(values, dtype=None, name=None, preferred_dtype=None) -> list[Tensor]:
    if not isinstance(values, (list, tuple)):
        raise TypeError("values must be a sequence.")
    return [
        convert_to_tensor(
            v,
            dtype=dtype,
            preferred_dtype=preferred_dtype,
            name=None if name is None else f"{name}_{i}",
        )
        for i, v in enumerate(values)
    ]


def is_tensor_like(value) -> bool:
    return isinstance(value, Tensor) or bool(_funcs_for(type(value)))
