"""``Bitcast`` (``tf.bitcast``): a tensor's bytes read as another numeric type, no value
conversion. Equal widths keep the shape; a narrower type adds a last dimension of
``in width / out width``; a wider one needs that many elements in the last dimension and
removes it (TF's rule). Bytes are read little-endian, as TF and ONNX's BitCast do."""

from __future__ import annotations

import numpy as np

from engine import dtypes, errors
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.registry import Attr, op
from engine.ops._common import create
from engine.tensor_shape import TensorShape

__all__ = ["bitcast"]

_ALLOWED = (
    dtypes.float16,
    dtypes.float32,
    dtypes.float64,
    dtypes.int64,
    dtypes.int32,
    dtypes.uint8,
    dtypes.uint16,
    dtypes.uint32,
    dtypes.uint64,
    dtypes.int8,
    dtypes.int16,
)


def _check(dt: dtypes.DType, what: str) -> dtypes.DType:
    if dt not in _ALLOWED:
        names = ", ".join(t.name for t in _ALLOWED)
        raise TypeError(
            f"Value passed to parameter '{what}' has DataType {dt.name} not in list of "
            f"allowed values: {names}"
        )
    return dt


def _out_shape(shape: TensorShape, src: dtypes.DType, dst: dtypes.DType, name: str):
    """TF's shape rule; its messages name the types by their DataType numbers."""
    a, b = src.size, dst.size
    if a == b or shape.ndims is None:
        return shape if a == b else TensorShape(None)
    dims = shape.as_list()
    if a > b:
        return TensorShape(dims + [a // b])
    if not dims or (dims[-1] is not None and dims[-1] != b // a):
        last = dims[-1] if dims else "a scalar"
        raise ValueError(
            f"Cannot bitcast from {src.as_datatype_enum} to {dst.as_datatype_enum} due to "
            f"shape. {last} does not match {b // a} for '{name}' with input shapes: {dims}."
        )
    return TensorShape(dims[:-1])


def _infer(o):
    src = _check(o._inputs[0]._dtype.base_dtype, "input")
    dst = _check(o._attrs["type"], "type")
    return [(dst, _out_shape(o._inputs[0]._shape, src, dst, o._name))]


@op("Bitcast", infer=_infer, inputs=("input",), attrs=(Attr("type", "type"),), differentiable=False)
def _bitcast(xp, x, *, type):  # noqa: A002 - TF's attribute name
    dst = np.dtype(type.as_numpy_dtype).newbyteorder("<")
    src = x.dtype.itemsize
    if src < dst.itemsize:
        ratio = dst.itemsize // src
        if x.ndim == 0 or x.shape[-1] != ratio:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"Cannot bitcast from {dtypes.as_dtype(x.dtype).as_datatype_enum} to "
                f"{type.as_datatype_enum}",
            )
    data = xp.ascontiguousarray(x)
    if data.dtype.byteorder == ">":  # pragma: no cover - arrays here are native little-endian
        data = data.astype(data.dtype.newbyteorder("<"))
    out = data.view(dst)
    if src > dst.itemsize:
        return out.reshape(x.shape + (src // dst.itemsize,))
    if src < dst.itemsize:
        return out.reshape(x.shape[:-1])
    return out.reshape(x.shape)


def bitcast(input, type, name=None) -> Tensor:  # noqa: A002 - TF's names
    """``input``'s bytes as ``type`` (TF's ``tf.bitcast``)."""
    with name_scope(name, "Bitcast", [input]) as scope:
        x = convert_to_tensor(input, name="input")
        return create("Bitcast", [x], {"type": dtypes.as_dtype(type)}, scope).outputs[0]
