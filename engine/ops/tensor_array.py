"""TensorArray: a list of tensors built up element by element, usable as a loop variable.

At run time a ``TensorArrayV3`` op creates a fresh array each time it runs; its output (the
"flow", dtype variant) is a handle that writes update in place and pass along, so writing in
a loop costs O(1) per element. Reads of unwritten elements, writes past a fixed size and
double writes are run-time errors, as in TF.

Gradients follow TF's design: each forward array owns, per gradient computation (its
"source"), a gradient array of the same size created on first use by ``TensorArrayGradV3``.
The gradient of a flow is the flow of that gradient array: a read's gradient writes into it
(writes there add up), a write's gradient reads from it (an element never written reads as
zeros shaped like the forward element), stack/gather and scatter/unstack mirror each other.
The While gradient carries gradient flows as loop variables, so a TensorArray filled and read
inside ``while_loop`` (``dynamic_rnn``) trains.
"""

from __future__ import annotations

import contextlib
import threading

import numpy as np

from engine import dtypes, errors
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, get_name_scope, name_scope
from engine.framework.registry import Attr, OpFlags, op
from engine.framework.tensor_util import constant_value
from engine.ops import array as array_ops
from engine.ops._common import create
from engine.tensor_shape import TensorShape, as_shape, unknown_shape

__all__ = ["TensorArray"]


class TensorArrayValue:
    """The run-time state of one TensorArray."""

    __slots__ = (
        "items",
        "dtype",
        "dynamic_size",
        "element_shape",
        "name",
        "grads",
        "forward",
        "identical",
    )

    def __init__(
        self, size, dtype, dynamic_size, element_shape, name, forward=None, identical=False
    ):
        self.items = [None] * size
        # every element has one shape: the first write fixes a partly known element_shape,
        # so that unwritten elements read as zeros of it (as TF's identical_element_shapes)
        self.identical = identical
        self.dtype = dtype
        self.dynamic_size = dynamic_size
        self.element_shape = element_shape
        self.name = name
        self.grads: dict[str, TensorArrayValue] = {}
        # set on a gradient array: the forward array it belongs to; its writes add up
        self.forward = forward

    def __repr__(self) -> str:
        return f"<TensorArray {self.name} size={len(self.items)} dtype={self.dtype.name}>"


def _flow_infer(o):
    return [(dtypes.variant, TensorShape([]))]


def _index(i, ta: TensorArrayValue, what: str) -> int:
    i = int(i)
    if i < 0:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"Tried to {what} index {i} of TensorArray {ta.name}; indices must be non-negative",
        )
    return i


def _write(ta: TensorArrayValue, i: int, value) -> None:
    if value.dtype != ta.dtype.np:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"TensorArray dtype is {ta.dtype.name} but op is trying to write dtype {value.dtype}",
        )
    if ta.element_shape is not None and not ta.element_shape.is_compatible_with(value.shape):
        raise errors.InvalidArgumentError(
            None,
            None,
            f"Could not write to TensorArray index {i}: expected element shape "
            f"{ta.element_shape}, got {list(value.shape)}",
        )
    if i >= len(ta.items):
        if not ta.dynamic_size:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"Tried to write to index {i} but array is not resizeable and "
                f"size is: {len(ta.items)}",
            )
        ta.items.extend([None] * (i + 1 - len(ta.items)))
    if ta.items[i] is not None:
        if ta.forward is not None:
            ta.items[i] = ta.items[i] + value
            return
        raise errors.InvalidArgumentError(
            None,
            None,
            f"Could not write to TensorArray index {i} because it has already been written to.",
        )
    ta.items[i] = value


def _fix_element_shape(ta: TensorArrayValue, shape) -> None:
    """With identical element shapes, the first write or scatter fixes the shape."""
    if ta.identical and (ta.element_shape is None or not ta.element_shape.is_fully_defined()):
        ta.element_shape = TensorShape(shape)


def _read(ta: TensorArrayValue, i: int, xp):
    if ta.forward is not None and (i >= len(ta.items) or ta.items[i] is None):
        fwd = ta.forward.items[i] if i < len(ta.forward.items) else None
        if fwd is not None:
            return xp.zeros_like(fwd)
    if i >= len(ta.items):
        raise errors.InvalidArgumentError(
            None, None, f"Tried to read from index {i} but array size is: {len(ta.items)}"
        )
    v = ta.items[i]
    if v is None:
        if ta.element_shape is not None and ta.element_shape.is_fully_defined():
            return xp.zeros(ta.element_shape.as_list(), ta.dtype.np)
        raise errors.InvalidArgumentError(
            None,
            None,
            f"Could not read from TensorArray index {i} because it has not yet been written to.",
        )
    return v


# -- gradients --------------------------------------------------------------------------

_source_stack = threading.local()


@contextlib.contextmanager
def gradient_source(source: str):
    """Gradient arrays created inside belong to ``source`` (a While gradient body builds its
    gradient under the gradient computation of the loop, not a fresh one)."""
    stack = _source_stack.__dict__.setdefault("stack", [])
    stack.append(source)
    try:
        yield
    finally:
        stack.pop()


def current_gradient_source() -> str:
    """The gradient computation being built: its outermost name scope (``gradients``,
    ``gradients_1``, ...), so two computations fetched together do not share arrays."""
    stack = _source_stack.__dict__.get("stack")
    if stack:
        return stack[-1]
    return get_name_scope().split("/")[0]


def grad_array(flow) -> Tensor:
    """The flow of the gradient array of the forward array whose flow is ``flow``."""
    return create(
        "TensorArrayGradV3", [flow], {"source": current_gradient_source()}, "TensorArrayGrad"
    ).outputs[0]


def _read_from(flow, index, like):
    return create(
        "TensorArrayReadV3",
        [flow, index],
        {"dtype": like.dtype.base_dtype, "element_shape": like.shape},
        "TensorArrayRead",
    ).outputs[0]


def _write_grad(o, dflow):
    return [dflow, None, _read_from(dflow, o.inputs[1], o.inputs[2])]


def _read_grad(o, dv):
    g = grad_array(o.inputs[0])
    return [
        create("TensorArrayWriteV3", [g, o.inputs[1], dv], {}, "TensorArrayWrite").outputs[0],
        None,
    ]


def _gather_grad(o, dy):
    g = grad_array(o.inputs[0])
    flow = create("TensorArrayScatterV3", [g, o.inputs[1], dy], {}, "TensorArrayScatter")
    return [flow.outputs[0], None]


def _stack_grad(o, dy):
    g = grad_array(o.inputs[0])
    indices = array_ops.range(array_ops.shape(dy)[0])
    flow = create("TensorArrayScatterV3", [g, indices, dy], {}, "TensorArrayScatter")
    return [flow.outputs[0]]


def _scatter_grad(o, dflow):
    value = o.inputs[2]
    return [
        dflow,
        None,
        create(
            "TensorArrayGatherV3",
            [dflow, o.inputs[1]],
            {"dtype": value.dtype.base_dtype, "element_shape": value.shape[1:]},
            "TensorArrayGather",
        ).outputs[0],
    ]


def _split_grad(o, dflow):
    value = o.inputs[1]
    rest = value.shape[1:] if value.shape.rank else unknown_shape()
    concat = create(
        "TensorArrayConcatV3",
        [dflow],
        {"dtype": value.dtype.base_dtype, "element_shape_except0": rest},
        "TensorArrayConcat",
    )
    return [dflow, concat.outputs[0], None]


@op(
    "TensorArrayGradV3",
    infer=_flow_infer,
    differentiable=False,
    inputs=("handle",),
    attrs=(Attr("source", "string"),),
    flags=OpFlags(stateful=True),
)
def _ta_grad(xp, ta, *, source):
    if not isinstance(ta, TensorArrayValue):
        raise errors.InvalidArgumentError(
            None, None, f"TensorArrayGradV3 expects a TensorArray handle, got {type(ta).__name__}"
        )
    g = ta.grads.get(source)
    if g is None:
        g = TensorArrayValue(
            len(ta.items), ta.dtype, True, ta.element_shape, f"{ta.name}@{source}", forward=ta
        )
        ta.grads[source] = g
    return g


@op(
    "TensorArrayV3",
    infer=_flow_infer,
    differentiable=False,
    inputs=("size",),
    attrs=(
        Attr("dtype", "type"),
        Attr("element_shape", "shape?"),
        Attr("dynamic_size", "bool"),
        Attr("tensor_array_name", "string"),
        Attr("identical_element_shapes", "bool", default=False),
    ),
    flags=OpFlags(stateful=True),
)
def _ta_create(
    xp,
    size,
    *,
    dtype,
    element_shape,
    dynamic_size,
    tensor_array_name,
    identical_element_shapes=False,
):
    n = int(size)
    if n < 0:
        raise errors.InvalidArgumentError(None, None, f"TensorArray size must be >= 0, got {n}")
    shape = element_shape if element_shape is not None and element_shape.rank is not None else None
    return TensorArrayValue(
        n, dtype, dynamic_size, shape, tensor_array_name, identical=identical_element_shapes
    )


@op(
    "TensorArrayWriteV3",
    infer=_flow_infer,
    grad=_write_grad,
    inputs=("handle", "index", "value"),
    flags=OpFlags(stateful=True, aliases=True),
)
def _ta_write(xp, ta, index, value):
    _write(ta, _index(index, ta, "write to"), value)
    _fix_element_shape(ta, value.shape)
    return ta


def _read_infer(o):
    return [(o._attrs["dtype"], o._attrs["element_shape"] or unknown_shape())]


@op(
    "TensorArrayReadV3",
    infer=_read_infer,
    grad=_read_grad,
    inputs=("handle", "index"),
    attrs=(
        Attr("dtype", "type"),
        Attr("element_shape", "shape?"),
    ),
    flags=OpFlags(stateful=True, aliases=True),
)
def _ta_read(xp, ta, index, *, dtype, element_shape):
    return _read(ta, _index(index, ta, "read from"), xp)


def _gather_infer(o):
    es = o._attrs["element_shape"] or unknown_shape()
    n = None
    if len(o._inputs) > 1:
        idx = o._inputs[1]._shape
        n = idx.as_tuple()[0] if idx.rank == 1 else None
    return [(o._attrs["dtype"], TensorShape([n]).concatenate(es))]


def _stack(ta, indices, xp, element_shape=None):
    """The elements at ``indices``, stacked. An empty result takes its element shape from
    the array or, as TF's TensorArrayGather does, from the op's ``element_shape`` (inferred
    while building the graph: map_fn over zero elements)."""
    values = [_read(ta, i, xp) for i in indices]
    if not values:
        for shape in (ta.element_shape, element_shape):
            if shape is not None and shape.is_fully_defined():
                return xp.zeros([0] + shape.as_list(), ta.dtype.np)
        raise errors.InvalidArgumentError(
            None,
            None,
            "TensorArray has size zero, but element "
            "shape is not fully defined. Currently "
            "only static shapes are supported when "
            "packing zero-size TensorArrays.",
        )
    first = values[0].shape
    for i, v in zip(indices, values):
        if v.shape != first:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"TensorArray has inconsistent shapes. Index 0 has shape "
                f"{list(first)} but index {i} has shape {list(v.shape)}",
            )
    return xp.stack(values)


@op(
    "TensorArrayGatherV3",
    infer=_gather_infer,
    grad=_gather_grad,
    inputs=("handle", "indices"),
    attrs=(
        Attr("dtype", "type"),
        Attr("element_shape", "shape?"),
    ),
    flags=OpFlags(stateful=True),
)
def _ta_gather(xp, ta, indices, *, dtype, element_shape):
    idx = [_index(i, ta, "gather") for i in indices.reshape(-1).tolist()]
    return _stack(ta, idx, xp, element_shape)


@op(
    "TensorArrayStackV3",
    infer=_gather_infer,
    grad=_stack_grad,
    inputs=("handle",),
    attrs=(
        Attr("dtype", "type"),
        Attr("element_shape", "shape?"),
    ),
    flags=OpFlags(stateful=True),
)
def _ta_stack(xp, ta, *, dtype, element_shape):
    return _stack(ta, range(len(ta.items)), xp, element_shape)


@op(
    "TensorArrayScatterV3",
    infer=_flow_infer,
    grad=_scatter_grad,
    inputs=("handle", "indices", "value"),
    flags=OpFlags(stateful=True, aliases=True),
)
def _ta_scatter(xp, ta, indices, value):
    idx = [int(i) for i in indices.reshape(-1).tolist()]
    if value.ndim == 0 or value.shape[0] != len(idx):
        raise errors.InvalidArgumentError(
            None,
            None,
            f"Expected len(indices) == "
            f"value.shape[0], but saw: {len(idx)} vs. "
            f"{value.shape[0] if value.ndim else 0}",
        )
    for k, i in enumerate(idx):
        _write(ta, _index(i, ta, "scatter to"), value[k])
    _fix_element_shape(ta, value.shape[1:])
    return ta


@op(
    "TensorArraySizeV3",
    infer=lambda o: [(dtypes.int32, TensorShape([]))],
    differentiable=False,
    inputs=("handle",),
    flags=OpFlags(stateful=True),
)
def _ta_size(xp, ta):
    return xp.asarray(len(ta.items), np.int32)


def _concat_infer(o):
    es = o._attrs["element_shape_except0"]
    return [(o._attrs["dtype"], TensorShape([None]).concatenate(es or unknown_shape()))]


@op(
    "TensorArrayConcatV3",
    infer=_concat_infer,
    differentiable=False,
    inputs=("handle",),
    attrs=(
        Attr("dtype", "type"),
        Attr("element_shape_except0", "shape?"),
    ),
    flags=OpFlags(stateful=True),
)
def _ta_concat(xp, ta, *, dtype, element_shape_except0):
    values = [_read(ta, i, xp) for i in range(len(ta.items))]
    if not values:
        return xp.zeros(
            [0]
            + (
                element_shape_except0.as_list()
                if element_shape_except0 is not None and element_shape_except0.is_fully_defined()
                else []
            ),
            dtype.np,
        )
    return xp.concatenate(values, axis=0)


@op(
    "TensorArraySplitV3",
    infer=_flow_infer,
    grad=_split_grad,
    inputs=("handle", "value", "lengths"),
    flags=OpFlags(stateful=True, aliases=True),
)
def _ta_split(xp, ta, value, lengths):
    lens = [int(n) for n in lengths.reshape(-1).tolist()]
    if sum(lens) != (value.shape[0] if value.ndim else 0):
        raise errors.InvalidArgumentError(
            None,
            None,
            f"Expected sum of lengths to be equal to "
            f"values.shape[0], but sum of lengths is "
            f"{sum(lens)} and value's shape is "
            f"{list(value.shape)}",
        )
    start = 0
    for i, n in enumerate(lens):
        _write(ta, i, value[start : start + n])
        start += n
    return ta


class TensorArray:
    """TF1's ``TensorArray``: ``write``/``read``/``stack``/``unstack``/``gather``/``size``.

    Each write returns a new TensorArray object sharing the same storage; use the returned
    object (``ta = ta.write(i, x)``) so data dependencies order the reads after the writes.
    """

    def __init__(
        self,
        dtype,
        size=None,
        dynamic_size=None,
        clear_after_read=None,
        tensor_array_name=None,
        handle=None,
        flow=None,
        infer_shape=True,
        element_shape=None,
        colocate_with_first_write_call=True,
        name=None,
    ):
        self._dtype = dtypes.as_dtype(dtype).base_dtype
        self._dynamic_size = bool(dynamic_size)
        self._infer_shape = infer_shape
        self._element_shape = [
            as_shape(element_shape) if element_shape is not None else unknown_shape()
        ]
        self._static_size = None
        if flow is not None or handle is not None:
            self._flow = flow if flow is not None else handle
            return
        if size is None:
            raise ValueError("Size must be provided if handle is not provided")
        with name_scope(name, "TensorArray", [size]) as scope:
            size_t = convert_to_tensor(size, dtype=dtypes.int32, name="size")
            known = constant_value(size_t)
            if known is not None and not self._dynamic_size:
                self._static_size = int(known)  # stack() knows its leading dimension, as TF's
            self._flow = create(
                "TensorArrayV3",
                [size_t],
                {
                    "dtype": self._dtype,
                    "element_shape": self._element_shape[0],
                    "dynamic_size": self._dynamic_size,
                    "tensor_array_name": tensor_array_name or scope.rstrip("/"),
                    "identical_element_shapes": bool(self._infer_shape),
                },
                scope,
            ).outputs[0]

    # -- properties -------------------------------------------------------------------------
    @property
    def flow(self):
        return self._flow

    @property
    def handle(self):
        return self._flow

    @property
    def dtype(self):
        return self._dtype

    @property
    def element_shape(self) -> TensorShape:
        return self._element_shape[0]

    @property
    def dynamic_size(self) -> bool:
        return self._dynamic_size

    def _with_flow(self, flow) -> TensorArray:
        ta = TensorArray.__new__(TensorArray)
        ta._dtype, ta._dynamic_size, ta._infer_shape = (
            self._dtype,
            self._dynamic_size,
            self._infer_shape,
        )
        ta._element_shape = self._element_shape  # shared: shape knowledge accumulates
        ta._static_size = self._static_size
        ta._flow = flow
        return ta

    def _merge_element_shape(self, shape) -> None:
        shape = as_shape(shape)
        if not self._infer_shape:
            return
        try:
            self._element_shape[0] = self._element_shape[0].merge_with(shape)
        except ValueError:
            raise ValueError(
                f"Inconsistent shapes: saw {shape} but expected "
                f"{self._element_shape[0]} (and infer_shape=True)"
            ) from None

    def _check_value(self, value, what):
        v = convert_to_tensor(value, name="value")
        if v.dtype.base_dtype is not self._dtype:
            raise TypeError(
                f"TensorArray dtype is {self._dtype.name} but Op is trying to "
                f"{what} dtype {v.dtype.base_dtype.name}"
            )
        return v

    # -- operations -----------------------------------------------------------------------
    def write(self, index, value, name=None) -> TensorArray:
        with name_scope(name, "TensorArrayWrite", [self._flow, index, value]) as scope:
            v = self._check_value(value, "write")
            self._merge_element_shape(v.shape)
            i = convert_to_tensor(index, dtype=dtypes.int32, name="index")
            flow = create("TensorArrayWriteV3", [self._flow, i, v], {}, scope).outputs[0]
        return self._with_flow(flow)

    def read(self, index, name=None):
        with name_scope(name, "TensorArrayRead", [self._flow, index]) as scope:
            i = convert_to_tensor(index, dtype=dtypes.int32, name="index")
            return create(
                "TensorArrayReadV3",
                [self._flow, i],
                {"dtype": self._dtype, "element_shape": self.element_shape},
                scope,
            ).outputs[0]

    def stack(self, name=None):
        with name_scope(name, "TensorArrayStack", [self._flow]) as scope:
            value = create(
                "TensorArrayStackV3",
                [self._flow],
                {"dtype": self._dtype, "element_shape": self.element_shape},
                scope,
            ).outputs[0]
            if self._static_size is not None:
                value.set_shape(TensorShape([self._static_size]).concatenate(self.element_shape))
            return value

    def gather(self, indices, name=None):
        with name_scope(name, "TensorArrayGather", [self._flow, indices]) as scope:
            idx = convert_to_tensor(indices, dtype=dtypes.int32, name="indices")
            return create(
                "TensorArrayGatherV3",
                [self._flow, idx],
                {"dtype": self._dtype, "element_shape": self.element_shape},
                scope,
            ).outputs[0]

    def concat(self, name=None):
        with name_scope(name, "TensorArrayConcat", [self._flow]) as scope:
            es = self.element_shape
            rest = es[1:] if es.rank is not None and es.rank > 0 else unknown_shape()
            return create(
                "TensorArrayConcatV3",
                [self._flow],
                {"dtype": self._dtype, "element_shape_except0": rest},
                scope,
            ).outputs[0]

    def scatter(self, indices, value, name=None) -> TensorArray:
        with name_scope(name, "TensorArrayScatter", [self._flow, indices, value]) as scope:
            v = self._check_value(value, "scatter")
            if v.shape.rank is not None and v.shape.rank > 0:
                self._merge_element_shape(v.shape[1:])
            idx = convert_to_tensor(indices, dtype=dtypes.int32, name="indices")
            flow = create("TensorArrayScatterV3", [self._flow, idx, v], {}, scope).outputs[0]
        return self._with_flow(flow)

    def unstack(self, value, name=None) -> TensorArray:
        with name_scope(name, "TensorArrayUnstack", [self._flow, value]):
            v = self._check_value(value, "unstack")
            n = v.shape.as_tuple()[0] if v.shape.rank else None
            if n is not None:
                indices = convert_to_tensor(np.arange(n, dtype=np.int32))
            else:
                indices = array_ops.range(array_ops.shape(v)[0])
            return self.scatter(indices, v)

    def split(self, value, lengths, name=None) -> TensorArray:
        with name_scope(name, "TensorArraySplit", [self._flow, value, lengths]) as scope:
            v = self._check_value(value, "split")
            lens = convert_to_tensor(lengths, dtype=dtypes.int64, name="lengths")
            lv = constant_value(lens)
            if v.shape.rank is not None and v.shape.rank > 0:
                known = lv is not None and len(set(np.asarray(lv).tolist())) == 1
                first = int(np.asarray(lv).reshape(-1)[0]) if known and np.size(lv) else None
                self._merge_element_shape(TensorShape([first]).concatenate(v.shape[1:]))
            flow = create("TensorArraySplitV3", [self._flow, v, lens], {}, scope).outputs[0]
        return self._with_flow(flow)

    def size(self, name=None):
        with name_scope(name, "TensorArraySize", [self._flow]) as scope:
            return create("TensorArraySizeV3", [self._flow], {}, scope).outputs[0]

    def identity(self) -> TensorArray:
        return self._with_flow(array_ops.identity(self._flow))

    def close(self, name=None):
        # A NoOp, built here as control_flow.no_op builds it (control_flow builds on this
        # module: while_loop accumulates into TensorArrays).
        with name_scope(name, "NoOp") as scope:
            return create("NoOp", [], {}, scope)

    def grad(self, source, flow=None, name=None):  # noqa: ARG002 - TF API compatibility
        """The gradient array of this array for gradient computation ``source``."""
        with name_scope(name, "TensorArrayGrad", [self._flow]) as scope:
            g = create("TensorArrayGradV3", [self._flow], {"source": source}, scope).outputs[0]
        return self._with_flow(g)

    def __repr__(self) -> str:
        return f"<TensorArray dtype={self._dtype.name} element_shape={self.element_shape}>"
