"""TensorList: TF2's functional list of tensors (``TensorListReserve``, ``TensorListSetItem``,
``TensorListGetItem``, ``TensorListFromTensor``, ``TensorListStack``).

TF2 writes these where TF1 had TensorArrays, most often as ``While`` loop variables (Keras
RNN layers). A list is a value (dtype variant), never mutated: ``SetItem`` returns a new list
that shares the elements of the old one, so a value read earlier never changes. Elements
never set read as zeros when the element shape is fully known, as in TF, else they are an
error. Served, not trained: the ops are not differentiable here.
"""

from __future__ import annotations

import numpy as np

from engine import dtypes, errors
from engine.framework.registry import Attr, ShapeError, op
from engine.framework.tensor_util import constant_value
from engine.ops._common import INDEX, check_dtype
from engine.tensor_shape import TensorShape, unknown_shape

__all__ = ["TensorListValue", "MAX_LIST_ELEMENTS"]

MAX_LIST_ELEMENTS = 1 << 24


class TensorListValue:
    """An immutable list of arrays (``None`` for an element never set)."""

    __slots__ = ("items", "element_dtype", "element_shape")

    def __init__(self, items: tuple, element_dtype, element_shape: tuple | None):
        self.items = items
        self.element_dtype = element_dtype
        self.element_shape = element_shape  # dims with None unknown, or None: unknown rank

    def __repr__(self) -> str:
        return f"<TensorList {len(self.items)} x {self.element_dtype.name}>"


def _bad(msg: str):
    return errors.InvalidArgumentError(None, None, msg)


def _host(v):
    return np.asarray(v.get() if hasattr(v, "get") else v)


def _shape_value(v) -> tuple | None:
    """A run-time element_shape operand: -1 scalar for unknown rank, -1 dims unknown."""
    a = _host(v)
    if a.ndim == 0:
        if int(a) != -1:
            raise _bad(f"element_shape must be -1 or a vector, got {int(a)}")
        return None
    return tuple(None if int(d) < 0 else int(d) for d in a.reshape(-1))


def _static_shape(t) -> TensorShape:
    value = constant_value(t)
    if value is None:
        return unknown_shape()
    value = np.asarray(value)
    if value.ndim == 0:
        return unknown_shape()
    return TensorShape([None if int(d) < 0 else int(d) for d in value.reshape(-1)])


def _merge(a: tuple | None, b: tuple | None, what: str) -> tuple | None:
    if a is None:
        return b
    if b is None:
        return a
    if len(a) != len(b):
        raise _bad(f"{what}: element shapes {list(a)} and {list(b)} differ in rank")
    out = []
    for x, y in zip(a, b):
        if x is not None and y is not None and x != y:
            raise _bad(f"{what}: element shapes {list(a)} and {list(b)} are incompatible")
        out.append(x if x is not None else y)
    return tuple(out)


def _check_item(lst: TensorListValue, item, what: str) -> None:
    if item.dtype != lst.element_dtype.np:
        raise _bad(f"{what}: item dtype {item.dtype} is not the list's {lst.element_dtype.name}")
    _merge(lst.element_shape, tuple(item.shape), what)


def _index(lst: TensorListValue, index, what: str) -> int:
    i = int(_host(index))
    if not 0 <= i < len(lst.items):
        raise _bad(f"{what}: index {i} out of range for a list of {len(lst.items)} elements")
    return i


def _fill(xp, lst: TensorListValue, shape: tuple | None, what: str):
    """Zeros standing for an element never set, when its shape is fully known."""
    if shape is None or any(d is None for d in shape):
        raise _bad(f"{what}: element never set and its shape {shape} is not fully known")
    return xp.zeros(shape, dtype=lst.element_dtype.np)


def _list_infer(o):
    return [(dtypes.variant, TensorShape([]))]


def _variant_input(o, i: int) -> None:
    if o._inputs[i]._dtype.base_dtype is not dtypes.variant:
        raise TypeError(f"{o.type} input {i} must be a TensorList (variant)")


def _reserve_infer(o):
    check_dtype(o, 0, INDEX, "shape_type")
    check_dtype(o, 1, (dtypes.int32,), "num_elements")
    return _list_infer(o)


@op(
    "TensorListReserve",
    infer=_reserve_infer,
    differentiable=False,
    inputs=("element_shape", "num_elements"),
    attrs=(Attr("element_dtype", "type"),),
)
def _reserve(xp, element_shape, num_elements, *, element_dtype):
    n = int(_host(num_elements))
    if not 0 <= n <= MAX_LIST_ELEMENTS:
        raise _bad(f"TensorListReserve: num_elements {n} not in [0, {MAX_LIST_ELEMENTS}]")
    return TensorListValue((None,) * n, element_dtype, _shape_value(element_shape))


def _from_tensor_infer(o):
    check_dtype(o, 1, INDEX, "shape_type")
    if o._inputs[0]._shape.rank == 0:
        raise ShapeError("TensorListFromTensor needs a tensor of rank at least 1")
    return _list_infer(o)


@op(
    "TensorListFromTensor",
    infer=_from_tensor_infer,
    differentiable=False,
    inputs=("tensor", "element_shape"),
    attrs=(Attr("element_dtype", "type"),),
)
def _from_tensor(xp, tensor, element_shape, *, element_dtype):
    if tensor.ndim == 0:
        raise _bad("TensorListFromTensor needs a tensor of rank at least 1")
    shape = _merge(_shape_value(element_shape), tuple(tensor.shape[1:]), "TensorListFromTensor")
    items = tuple(tensor[i, ...].copy() for i in range(tensor.shape[0]))  # 0-d for strings too
    return TensorListValue(items, dtypes.as_dtype(tensor.dtype), shape)


def _get_item_infer(o):
    _variant_input(o, 0)
    check_dtype(o, 1, (dtypes.int32,), "index")
    return [(o._attrs["element_dtype"], _static_shape(o._inputs[2]))]


@op(
    "TensorListGetItem",
    infer=_get_item_infer,
    differentiable=False,
    inputs=("input_handle", "index", "element_shape"),
    attrs=(Attr("element_dtype", "type"),),
)
def _get_item(xp, lst, index, element_shape, *, element_dtype):
    what = "TensorListGetItem"
    i = _index(lst, index, what)
    item = lst.items[i]
    if item is None:
        shape = _merge(lst.element_shape, _shape_value(element_shape), what)
        return _fill(xp, lst, shape, what)
    return item.copy()


def _set_item_infer(o):
    _variant_input(o, 0)
    check_dtype(o, 1, (dtypes.int32,), "index")
    if o._inputs[2]._dtype.base_dtype is not o._attrs["element_dtype"]:
        raise TypeError(
            f"TensorListSetItem item is {o._inputs[2]._dtype.base_dtype.name}, the list holds "
            f"{o._attrs['element_dtype'].name}"
        )
    return _list_infer(o)


@op(
    "TensorListSetItem",
    infer=_set_item_infer,
    differentiable=False,
    inputs=("input_handle", "index", "item"),
    attrs=(
        Attr("element_dtype", "type"),
        Attr("resize_if_index_out_of_bounds", "bool", default=False),
    ),
)
def _set_item(xp, lst, index, item, *, element_dtype, resize_if_index_out_of_bounds=False):
    what = "TensorListSetItem"
    i = int(_host(index))
    items = lst.items
    if resize_if_index_out_of_bounds and i >= len(items):
        if i >= MAX_LIST_ELEMENTS:
            raise _bad(f"{what}: index {i} over {MAX_LIST_ELEMENTS} elements")
        items = items + (None,) * (i + 1 - len(items))
    if not 0 <= i < len(items):
        raise _bad(f"{what}: index {i} out of range for a list of {len(items)} elements")
    _check_item(lst, item, what)
    return TensorListValue(
        items[:i] + (item,) + items[i + 1 :], lst.element_dtype, lst.element_shape
    )


def _stack_infer(o):
    _variant_input(o, 0)
    n = o._attrs["num_elements"]
    return [
        (
            o._attrs["element_dtype"],
            TensorShape([n if n >= 0 else None]).concatenate(_static_shape(o._inputs[1])),
        )
    ]


@op(
    "TensorListStack",
    infer=_stack_infer,
    differentiable=False,
    inputs=("input_handle", "element_shape"),
    attrs=(Attr("element_dtype", "type"), Attr("num_elements", "int", default=-1)),
)
def _stack(xp, lst, element_shape, *, element_dtype, num_elements=-1):
    what = "TensorListStack"
    if lst.element_dtype is not element_dtype:
        raise _bad(f"{what}: the list holds {lst.element_dtype.name}, not {element_dtype.name}")
    if num_elements >= 0 and num_elements != len(lst.items):
        raise _bad(f"{what}: the list has {len(lst.items)} elements, expected {num_elements}")
    shape = _merge(lst.element_shape, _shape_value(element_shape), what)
    for item in lst.items:
        if item is not None:
            shape = _merge(shape, tuple(item.shape), what)
    if not lst.items:
        if shape is None or any(d is None for d in shape):
            raise _bad(f"{what}: an empty list with element shape {shape} not fully known")
        return xp.zeros((0, *shape), dtype=element_dtype.np)
    return xp.stack([it if it is not None else _fill(xp, lst, shape, what) for it in lst.items])
