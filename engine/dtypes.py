"""Data types of tensors, with TensorFlow 1.x names and semantics.

Each ``DType`` maps to one numpy dtype. ``string`` tensors hold ``bytes`` objects in numpy
object arrays, as TF's Python API returns them. Every value type has a reference twin
(``float32_ref``) used for the output of variable ops, as in TF1 graphs.
"""

from __future__ import annotations

import builtins

import numpy as np

__all__ = [
    "DType",
    "as_dtype",
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "half",
    "float32",
    "float",
    "float64",
    "double",
    "string",
    "resource",
    "variant",
]


class DType:
    """A tensor element type, e.g. ``engine.float32``.

    Instances are interned: compare with ``==`` or ``is``.
    """

    __slots__ = ("_name", "_np", "_enum", "_is_ref", "_base", "_ref")

    def __init__(self, name: str, np_dtype, enum: int, is_ref: bool = False):
        self._name = name
        self._np = np_dtype
        self._enum = enum
        self._is_ref = is_ref
        self._base = self
        self._ref = None

    # -- identity -----------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def as_datatype_enum(self) -> int:
        return self._enum

    @property
    def base_dtype(self) -> DType:
        """The value type of a reference type (``float32_ref`` -> ``float32``)."""
        return self._base

    @property
    def real_dtype(self) -> DType:
        return self._base

    @property
    def is_ref_dtype(self) -> bool:
        return self._is_ref

    @property
    def _as_ref(self) -> DType:
        return self._base._ref

    # -- numpy --------------------------------------------------------------------------
    @property
    def as_numpy_dtype(self):
        """The numpy scalar type (``np.float32``; ``object`` for strings)."""
        return self._base._np.type if self._base._np is not None else None

    @property
    def np(self) -> np.dtype | None:
        """The numpy ``dtype`` object values of this type are stored as."""
        return self._base._np

    # -- classification -----------------------------------------------------------------
    @property
    def is_floating(self) -> bool:
        return self._base in _FLOATS

    @property
    def is_integer(self) -> bool:
        return self._base in _INTS

    @property
    def is_unsigned(self) -> bool:
        return self._base in _UNSIGNED

    @property
    def is_bool(self) -> bool:
        return self._base is bool

    @property
    def is_numeric(self) -> bool:
        return self._base in _NUMERIC

    @property
    def is_complex(self) -> bool:
        return False

    @property
    def is_quantized(self) -> bool:
        return False

    @property
    def size(self) -> int:
        b = self._base
        return b._np.itemsize if b._np is not None and b is not string else 1

    @property
    def min(self):
        b = self._base
        if b in _FLOATS:
            return b._np.type(np.finfo(b._np).min)
        if b in _INTS:
            return b._np.type(np.iinfo(b._np).min)
        if b is bool:
            return False
        raise TypeError(f"Cannot find minimum value of {self}.")

    @property
    def max(self):
        b = self._base
        if b in _FLOATS:
            return b._np.type(np.finfo(b._np).max)
        if b in _INTS:
            return b._np.type(np.iinfo(b._np).max)
        if b is bool:
            return True
        raise TypeError(f"Cannot find maximum value of {self}.")

    def is_compatible_with(self, other) -> bool:
        """True when a value of ``other`` may be used where this type is expected."""
        other = as_dtype(other)
        return self is other or self is other._base

    def __repr__(self) -> str:
        return f"tf.{self._name}"

    def __str__(self) -> str:
        return f"<dtype: '{self._name}'>"

    def __reduce__(self):
        return as_dtype, (self._name,)

    def __hash__(self) -> int:
        return self._enum

    def __eq__(self, other) -> bool:
        if other is self:
            return True
        if other is None:
            return False
        try:
            return as_dtype(other) is self
        except TypeError:
            return False

    def __ne__(self, other) -> bool:
        return not self.__eq__(other)


def _make(name: str, np_dtype, enum: int) -> DType:
    d = DType(name, np.dtype(np_dtype) if np_dtype is not None else None, enum)
    r = DType(name + "_ref", d._np, enum + 100, is_ref=True)
    r._base = d
    d._ref = r
    r._ref = r
    return d


float32 = _make("float32", np.float32, 1)
float64 = _make("float64", np.float64, 2)
int32 = _make("int32", np.int32, 3)
uint8 = _make("uint8", np.uint8, 4)
int16 = _make("int16", np.int16, 5)
int8 = _make("int8", np.int8, 6)
string = _make("string", object, 7)
int64 = _make("int64", np.int64, 9)
bool = _make("bool", np.bool_, 10)  # noqa: A001 - TF's public name
uint16 = _make("uint16", np.uint16, 17)
float16 = _make("float16", np.float16, 19)
resource = _make("resource", object, 20)
variant = _make("variant", object, 21)
uint32 = _make("uint32", np.uint32, 22)
uint64 = _make("uint64", np.uint64, 23)

half = float16
float = float32  # noqa: A001 - TF's public alias
double = float64

_FLOATS = frozenset([float16, float32, float64])
_UNSIGNED = frozenset([uint8, uint16, uint32, uint64])
_INTS = frozenset([int8, int16, int32, int64]) | _UNSIGNED
_NUMERIC = _FLOATS | _INTS

ALL_VALUE_TYPES = (
    bool,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
    float16,
    float32,
    float64,
    string,
)

_BY_NAME: dict[str, DType] = {}
for _d in ALL_VALUE_TYPES + (resource, variant):
    _BY_NAME[_d.name] = _d
    _BY_NAME[_d._ref.name] = _d._ref
_BY_NAME.update({"half": float16, "float": float32, "double": float64})

_BY_ENUM: dict[int, DType] = {d.as_datatype_enum: d for d in _BY_NAME.values()}

_BY_NUMPY: dict[np.dtype, DType] = {
    np.dtype(np.float16): float16,
    np.dtype(np.float32): float32,
    np.dtype(np.float64): float64,
    np.dtype(np.int8): int8,
    np.dtype(np.int16): int16,
    np.dtype(np.int32): int32,
    np.dtype(np.int64): int64,
    np.dtype(np.uint8): uint8,
    np.dtype(np.uint16): uint16,
    np.dtype(np.uint32): uint32,
    np.dtype(np.uint64): uint64,
    np.dtype(np.bool_): bool,
    np.dtype(object): string,
}


def as_dtype(type_value) -> DType:
    """Converts a DType, a name (``"float32"``), a numpy dtype or scalar type to a ``DType``.

    Raises ``TypeError`` naming the value when it has no engine counterpart.
    """
    if isinstance(type_value, DType):
        return type_value
    if isinstance(type_value, str):
        d = _BY_NAME.get(type_value)
        if d is not None:
            return d
    elif isinstance(type_value, int) and not isinstance(type_value, builtins.bool):
        d = _BY_ENUM.get(type_value)
        if d is not None:
            return d
    else:
        if type_value is builtins.float:
            return float32
        if type_value is builtins.bool:
            return bool
        try:
            npd = np.dtype(type_value)
        except (TypeError, ValueError):
            npd = None
        if npd is not None:
            if npd.kind in ("S", "U"):
                return string
            d = _BY_NUMPY.get(npd)
            if d is not None and type_value is not int and type_value is not object:
                return d
    raise TypeError(
        f"Cannot convert the argument `type_value`: {type_value!r} to a DType "
        f"(expected one of {', '.join(d.name for d in ALL_VALUE_TYPES)})."
    )
