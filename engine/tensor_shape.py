"""Partially known static shapes: ``TensorShape`` and ``Dimension`` with TF1 semantics.

A shape has an unknown rank (``TensorShape(None)``) or a known rank whose dimensions are each
a non-negative int or unknown (``None``). Shape functions merge and broadcast these at graph
construction time, so shape errors surface when the op is built.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "Dimension",
    "TensorShape",
    "as_shape",
    "unknown_shape",
    "dimension_value",
    "as_dimension",
    "scalar",
    "vector",
    "matrix",
]


class Dimension:
    """One dimension of a shape: a known size or unknown (``value is None``).

    Behaves like an int where known (``int(d)``, arithmetic, comparisons); comparisons with an
    unknown dimension return None, as in TF1.
    """

    __slots__ = ("_value",)

    def __init__(self, value):
        if isinstance(value, Dimension):
            value = value._value
        if value is None:
            self._value = None
            return
        if isinstance(value, (str, bytes, float)) or isinstance(value, bool):
            raise TypeError(
                f"Dimension value must be integer or None, got {value!r} of type "
                f"{type(value).__name__}"
            )
        try:
            v = int(value.__index__())
        except (AttributeError, TypeError):
            raise TypeError(
                f"Dimension value must be integer or None, got {value!r} of type "
                f"{type(value).__name__}"
            ) from None
        if v < 0:
            raise ValueError(f"Dimension {v} must be >= 0")
        self._value = v

    @property
    def value(self):
        return self._value

    def __repr__(self) -> str:
        return f"Dimension({self._value!r})"

    def __str__(self) -> str:
        return "?" if self._value is None else str(self._value)

    def __int__(self) -> int:
        if self._value is None:
            raise TypeError("Cannot convert an unknown Dimension to an int")
        return self._value

    def __index__(self) -> int:
        return self.__int__()

    def __hash__(self) -> int:
        return hash(self._value)

    def __eq__(self, other):
        try:
            other = as_dimension(other)
        except (TypeError, ValueError):
            return NotImplemented
        if self._value is None or other._value is None:
            return None
        return self._value == other._value

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is None or r is NotImplemented else not r

    def _binary(self, other, fn):
        try:
            other = as_dimension(other)
        except (TypeError, ValueError):
            return NotImplemented
        if self._value is None or other._value is None:
            return Dimension(None)
        return Dimension(fn(self._value, other._value))

    def __add__(self, o):
        return self._binary(o, lambda a, b: a + b)  # noqa: E704

    def __radd__(self, o):
        return self._binary(o, lambda a, b: b + a)  # noqa: E704

    def __sub__(self, o):
        return self._binary(o, lambda a, b: a - b)  # noqa: E704

    def __rsub__(self, o):
        return self._binary(o, lambda a, b: b - a)  # noqa: E704

    def __mul__(self, o):
        return self._binary(o, lambda a, b: a * b)  # noqa: E704

    def __rmul__(self, o):
        return self._binary(o, lambda a, b: b * a)  # noqa: E704

    def __floordiv__(self, o):
        return self._binary(o, lambda a, b: a // b)  # noqa: E704

    def __mod__(self, o):
        return self._binary(o, lambda a, b: a % b)  # noqa: E704

    def _compare(self, other, fn):
        other = as_dimension(other)
        if self._value is None or other._value is None:
            return None
        return fn(self._value, other._value)

    def __lt__(self, o):
        return self._compare(o, lambda a, b: a < b)  # noqa: E704

    def __le__(self, o):
        return self._compare(o, lambda a, b: a <= b)  # noqa: E704

    def __gt__(self, o):
        return self._compare(o, lambda a, b: a > b)  # noqa: E704

    def __ge__(self, o):
        return self._compare(o, lambda a, b: a >= b)  # noqa: E704

    def is_compatible_with(self, other) -> bool:
        other = as_dimension(other)
        return self._value is None or other._value is None or self._value == other._value

    def assert_is_compatible_with(self, other) -> None:
        if not self.is_compatible_with(other):
            raise ValueError(f"Dimensions {self} and {other} are not compatible")

    def merge_with(self, other) -> Dimension:
        other = as_dimension(other)
        self.assert_is_compatible_with(other)
        return Dimension(self._value if self._value is not None else other._value)


def as_dimension(value) -> Dimension:
    return value if isinstance(value, Dimension) else Dimension(value)


def dimension_value(dim):
    """The int (or None) of a ``Dimension``, int or None."""
    return dim._value if isinstance(dim, Dimension) else dim


def _as_dim_value(d):
    if d is None:
        return None
    if isinstance(d, Dimension):
        return d._value
    return Dimension(d)._value


class TensorShape:
    """The static shape of a tensor; possibly partially known.

    >>> TensorShape([None, 3]).merge_with([2, None])
    TensorShape([Dimension(2), Dimension(3)])
    """

    __slots__ = ("_dims",)

    def __init__(self, dims=None):
        if dims is None:
            self._dims = None
        elif isinstance(dims, TensorShape):
            self._dims = dims._dims
        elif isinstance(dims, (str, bytes)):
            raise TypeError(f"A TensorShape cannot be built from the string {dims!r}")
        elif isinstance(dims, Iterable):
            self._dims = tuple(_as_dim_value(d) for d in dims)
        else:
            self._dims = (_as_dim_value(dims),)

    @classmethod
    def _from_tuple(cls, dims):
        s = cls.__new__(cls)
        s._dims = dims
        return s

    # -- inspection ---------------------------------------------------------------------
    @property
    def rank(self):
        return None if self._dims is None else len(self._dims)

    @property
    def ndims(self):
        return self.rank

    @property
    def dims(self):
        return None if self._dims is None else [Dimension(d) for d in self._dims]

    def as_tuple(self):
        """The dims as a tuple of int/None, or None for an unknown rank (engine extension)."""
        return self._dims

    def as_list(self) -> list:
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self._dims)

    def is_fully_defined(self) -> bool:
        return self._dims is not None and None not in self._dims

    def num_elements(self):
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self._dims:
            n *= d
        return n

    def __len__(self) -> int:
        if self._dims is None:
            raise ValueError("Cannot take the length of shape with unknown rank.")
        return len(self._dims)

    def __bool__(self) -> bool:
        return self._dims is not None

    def __iter__(self):
        if self._dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return iter(Dimension(d) for d in self._dims)

    def __getitem__(self, key):
        if self._dims is not None:
            if isinstance(key, slice):
                return TensorShape._from_tuple(self._dims[key])
            return Dimension(self._dims[key])
        if isinstance(key, slice):
            start, stop = key.start, key.stop
            if (
                key.step not in (None, 1)
                or (start is not None and start < 0)
                or stop is None
                or stop < 0
            ):
                return unknown_shape()
            return unknown_shape(rank=max(stop - (start or 0), 0))
        return Dimension(None)

    def __repr__(self) -> str:
        if self._dims is None:
            return "TensorShape(None)"
        return "TensorShape([" + ", ".join(f"Dimension({d!r})" for d in self._dims) + "])"

    def __str__(self) -> str:
        if self._dims is None:
            return "<unknown>"
        if len(self._dims) == 1:
            return "(%s,)" % ("?" if self._dims[0] is None else self._dims[0])
        return "(" + ", ".join("?" if d is None else str(d) for d in self._dims) + ")"

    def _short(self) -> str:
        """``[?,3]``: the form used inside error messages, as TF's runtime prints shapes."""
        if self._dims is None:
            return "<unknown>"
        return "[" + ",".join("?" if d is None else str(d) for d in self._dims) + "]"

    def __eq__(self, other) -> bool:
        try:
            other = as_shape(other)
        except TypeError:
            return NotImplemented
        return self._dims == other._dims

    def __ne__(self, other) -> bool:
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __hash__(self) -> int:
        return hash(self._dims)

    # -- algebra ------------------------------------------------------------------------
    def is_compatible_with(self, other) -> bool:
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return True
        if len(self._dims) != len(other._dims):
            return False
        return all(a is None or b is None or a == b for a, b in zip(self._dims, other._dims))

    def assert_is_compatible_with(self, other) -> None:
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are incompatible")

    def merge_with(self, other) -> TensorShape:
        other = as_shape(other)
        if self._dims is None:
            return other
        if other._dims is None:
            return self
        if len(self._dims) != len(other._dims):
            raise ValueError(f"Shapes {self} and {other} are not compatible")
        out = []
        for a, b in zip(self._dims, other._dims):
            if a is not None and b is not None and a != b:
                raise ValueError(f"Shapes {self} and {other} are not compatible")
            out.append(a if a is not None else b)
        return TensorShape._from_tuple(tuple(out))

    def most_specific_compatible_shape(self, other) -> TensorShape:
        other = as_shape(other)
        if self._dims is None or other._dims is None or len(self._dims) != len(other._dims):
            return unknown_shape()
        return TensorShape._from_tuple(
            tuple(a if a == b else None for a, b in zip(self._dims, other._dims))
        )

    def concatenate(self, other) -> TensorShape:
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return unknown_shape()
        return TensorShape._from_tuple(self._dims + other._dims)

    def assert_has_rank(self, rank: int) -> None:
        if self._dims is not None and len(self._dims) != rank:
            raise ValueError(f"Shape {self} must have rank {rank}")

    def with_rank(self, rank: int) -> TensorShape:
        if self._dims is None:
            return unknown_shape(rank=rank)
        if len(self._dims) != rank:
            raise ValueError(f"Shape {self} must have rank {rank}")
        return self

    def with_rank_at_least(self, rank: int) -> TensorShape:
        if self._dims is not None and len(self._dims) < rank:
            raise ValueError(f"Shape {self} must have rank at least {rank}")
        return self

    def with_rank_at_most(self, rank: int) -> TensorShape:
        if self._dims is not None and len(self._dims) > rank:
            raise ValueError(f"Shape {self} must have rank at most {rank}")
        return self

    def is_subtype_of(self, other) -> bool:
        """True when every value of this shape is also a value of ``other``."""
        other = as_shape(other)
        if other._dims is None:
            return True
        if self._dims is None or len(self._dims) != len(other._dims):
            return False
        return all(b is None or a == b for a, b in zip(self._dims, other._dims))


def as_shape(shape) -> TensorShape:
    return shape if isinstance(shape, TensorShape) else TensorShape(shape)


def unknown_shape(rank=None) -> TensorShape:
    if rank is None:
        return TensorShape(None)
    return TensorShape._from_tuple((None,) * rank)


def scalar() -> TensorShape:
    return TensorShape._from_tuple(())


def vector(length) -> TensorShape:
    return TensorShape([length])


def matrix(rows, cols) -> TensorShape:
    return TensorShape([rows, cols])
