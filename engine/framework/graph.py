"""Graphs, operations and tensors with TensorFlow 1.x semantics.

A ``Graph`` owns ``Operation``s in creation order. A ``Tensor`` is one output of an operation,
named ``"op:index"``, with a dtype and a partially known static shape. Name scopes, control
dependency scopes and device scopes are per thread; names and collections are per graph.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
from collections.abc import Iterable

import numpy as np

from engine import dtypes as _dtypes
from engine.framework import registry
from engine.framework.device_spec import DeviceSpec, merge_device
from engine.tensor_shape import TensorShape, as_shape

__all__ = [
    "Graph",
    "Operation",
    "Tensor",
    "NodeDef",
    "get_default_graph",
    "reset_default_graph",
    "name_scope",
    "control_dependencies",
    "device",
    "add_to_collection",
    "add_to_collections",
    "get_collection",
    "get_collection_ref",
    "GraphKeys",
    "get_name_scope",
]

_VALID_OP_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\\/>-]*$")
_VALID_SCOPE_NAME = re.compile(r"^[A-Za-z0-9_.\\/>-]*$")
_ENGINE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _defined_at() -> str:
    """``file:line`` of the first caller frame outside the engine package (for errors)."""
    f = sys._getframe(2)
    while f is not None:
        fn = f.f_code.co_filename
        if not fn.startswith(_ENGINE_DIR):
            return f"{fn}:{f.f_lineno}"
        f = f.f_back
    return ""


class GraphKeys:
    """Standard names for graph collections."""

    GLOBAL_VARIABLES = "variables"
    VARIABLES = "variables"
    LOCAL_VARIABLES = "local_variables"
    METRIC_VARIABLES = "metric_variables"
    MODEL_VARIABLES = "model_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    SUMMARIES = "summaries"
    QUEUE_RUNNERS = "queue_runners"
    TABLE_INITIALIZERS = "table_initializer"
    ASSET_FILEPATHS = "asset_filepaths"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    REGULARIZATION_LOSSES = "regularization_losses"
    CONCATENATED_VARIABLES = "concatenated_variables"
    SAVERS = "savers"
    WEIGHTS = "weights"
    BIASES = "biases"
    ACTIVATIONS = "activations"
    UPDATE_OPS = "update_ops"
    LOSSES = "losses"
    SAVEABLE_OBJECTS = "saveable_objects"
    RESOURCES = "resources"
    LOCAL_RESOURCES = "local_resources"
    TRAINABLE_RESOURCE_VARIABLES = "trainable_resource_variables"
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    SUMMARY_OP = "summary_op"
    GLOBAL_STEP = "global_step"
    EVAL_STEP = "eval_step"
    TRAIN_OP = "train_op"
    COND_CONTEXT = "cond_context"
    WHILE_CONTEXT = "while_context"


class NodeDef:
    """A plain description of an operation: name, type, inputs, device and attributes."""

    __slots__ = ("name", "op", "input", "device", "attr")

    def __init__(self, name, op, input, device, attr):  # noqa: A002 - TF's field name
        self.name, self.op, self.input, self.device, self.attr = name, op, input, device, attr

    def __repr__(self) -> str:
        parts = [f'name: "{self.name}"', f'op: "{self.op}"']
        parts += [f'input: "{i}"' for i in self.input]
        if self.device:
            parts.append(f'device: "{self.device}"')
        for k in sorted(self.attr):
            v = self.attr[k]
            if hasattr(v, "shape") and hasattr(v, "dtype") and not isinstance(v, TensorShape):
                v = f"<tensor dtype={v.dtype} shape={list(v.shape)}>"
            parts.append(f"attr {{ {k}: {v} }}")
        return "\n".join(parts)

    __str__ = __repr__


# -----------------------------------------------------------------------------------------
# Tensor
# -----------------------------------------------------------------------------------------


class Tensor:
    """A symbolic handle to one output of an ``Operation``.

    Tensors hash and compare by identity; the value exists only when a ``Session`` runs it.
    """

    __slots__ = ("_op", "_value_index", "_dtype", "_shape", "_consumers", "__weakref__")

    # Makes numpy defer to our reflected operators (np_array + tensor -> Tensor.__radd__).
    __array_priority__ = 100

    def __init__(self, op: Operation, value_index: int, dtype: _dtypes.DType, shape: TensorShape):
        self._op = op
        self._value_index = value_index
        self._dtype = dtype
        self._shape = shape
        self._consumers: list[Operation] = []

    @property
    def op(self) -> Operation:
        return self._op

    @property
    def graph(self) -> Graph:
        return self._op._graph

    @property
    def name(self) -> str:
        return f"{self._op._name}:{self._value_index}"

    @property
    def value_index(self) -> int:
        return self._value_index

    @property
    def dtype(self) -> _dtypes.DType:
        return self._dtype

    @property
    def device(self) -> str:
        return self._op._device

    @property
    def shape(self) -> TensorShape:
        return self._shape

    def get_shape(self) -> TensorShape:
        return self._shape

    def set_shape(self, shape) -> None:
        """Refines the static shape; raises ValueError when ``shape`` contradicts it."""
        shape = as_shape(shape)
        try:
            self._shape = self._shape.merge_with(shape)
        except ValueError:
            raise ValueError(
                f"Tensor {self.name} has shape {self._shape} which is not "
                f"compatible with the requested shape {shape}"
            ) from None

    def consumers(self) -> list[Operation]:
        return list(self._consumers)

    def eval(self, feed_dict=None, session=None):
        """Runs this tensor in ``session`` (default: the default session) and returns its value."""
        return session_for(self, session, "eval").run(self, feed_dict)

    def _as_graph_element(self) -> Tensor:
        return self

    def __repr__(self) -> str:
        return f'<Tensor "{self.name}" shape={self._shape} dtype={self._dtype.name}>'

    def __str__(self) -> str:
        return f'Tensor("{self.name}", shape={self._shape}, dtype={self._dtype.name})'

    def __hash__(self) -> int:
        return id(self)

    def __bool__(self):
        raise TypeError(
            "Using a `Tensor` as a Python `bool` is not allowed. Use `if t is not "
            "None:` instead of `if t:` to test if a tensor is defined, and use ops "
            "such as `cond` to execute subgraphs conditioned on a tensor's value."
        )

    def __iter__(self):
        raise TypeError(
            f"Tensor {self.name} is not iterable in graph mode; use unstack() or "
            "a while_loop to iterate over its elements."
        )

    def __len__(self):
        raise TypeError(
            f"len is not well defined for symbolic Tensors ({self.name}); use "
            "tensor.shape or the shape() op instead."
        )

    def __array__(self, dtype=None, copy=None):
        raise NotImplementedError(
            f"Cannot convert a symbolic Tensor ({self.name}) to a numpy "
            "array; run it in a Session to get its value."
        )

    @classmethod
    def _override_operator(cls, operator: str, func) -> None:
        setattr(cls, operator, func)


# -----------------------------------------------------------------------------------------
# Operation
# -----------------------------------------------------------------------------------------


class Operation:
    """A node of the graph: an op type applied to input tensors, producing output tensors."""

    __slots__ = (
        "_graph",
        "_name",
        "_type",
        "_inputs",
        "_outputs",
        "_control_inputs",
        "_device",
        "_attrs",
        "_id",
        "_defined_at",
        "_opdef",
        "_control_outputs",
        "__weakref__",
    )

    def __init__(self, graph, name, op_type, opdef, inputs, control_inputs, attrs, device):
        self._graph = graph
        self._name = name
        self._type = op_type
        self._opdef = opdef
        self._inputs = tuple(inputs)
        self._control_inputs = list(control_inputs)
        self._attrs = attrs
        self._device = device
        self._outputs: tuple[Tensor, ...] = ()
        self._id = 0
        self._defined_at = ""
        self._control_outputs: list[Operation] = []

    @property
    def name(self) -> str:
        return self._name

    @property
    def type(self) -> str:
        return self._type

    @property
    def graph(self) -> Graph:
        return self._graph

    @property
    def inputs(self) -> tuple[Tensor, ...]:
        return self._inputs

    @property
    def outputs(self) -> tuple[Tensor, ...]:
        return self._outputs

    def values(self) -> tuple[Tensor, ...]:
        return self._outputs

    @property
    def control_inputs(self) -> list[Operation]:
        return list(self._control_inputs)

    @property
    def device(self) -> str:
        """The device requested for this op (canonical string, '' when none)."""
        return self._device

    @property
    def attrs(self) -> dict:
        return dict(self._attrs)

    @property
    def node_def(self) -> NodeDef:
        inputs = [t.name if t._value_index else t._op._name for t in self._inputs]
        inputs += ["^" + c._name for c in self._control_inputs]
        return NodeDef(self._name, self._type, inputs, self._device, dict(self._attrs))

    @property
    def traceback(self) -> str:
        return self._defined_at

    def get_attr(self, name: str):
        try:
            return self._attrs[name]
        except KeyError:
            raise ValueError(f"Operation '{self._name}' has no attr named '{name}'.") from None

    def run(self, feed_dict=None, session=None) -> None:
        """Runs this operation in ``session`` (default: the default session)."""
        session_for(self, session, "run").run(self, feed_dict)

    def _as_graph_element(self) -> Operation:
        return self

    def _set_attr(self, name: str, value) -> None:
        self._attrs[name] = _check_attr(self._name, name, value)
        self._graph._version += 1

    def _set_device(self, device) -> None:
        self._device = (
            DeviceSpec.from_string(device).to_string()
            if isinstance(device, str)
            else (device.to_string() if device is not None else "")
        )

    def _add_control_input(self, op: Operation) -> None:
        self._add_control_inputs([op])

    def _add_control_inputs(self, ops: Iterable[Operation]) -> None:
        for op in ops:
            if not isinstance(op, Operation):
                raise TypeError(f"op must be an Operation, got {type(op).__name__}")
            if op._graph is not self._graph:
                raise ValueError(
                    f"Control input {op._name!r} is from a different graph than {self._name!r}"
                )
            if op not in self._control_inputs:
                self._control_inputs.append(op)
                op._control_outputs.append(self)
        self._graph._version += 1

    def __repr__(self) -> str:
        return f'<Operation "{self._name}" type={self._type}>'

    def __str__(self) -> str:
        return str(self.node_def)

    def __hash__(self) -> int:
        return id(self)


_ATTR_SCALARS = (bool, int, float, str, bytes, _dtypes.DType, TensorShape)


def _check_attr(op_name: str, key: str, value):
    """Attributes are restricted to plain, serializable kinds so every graph can be saved."""

    if value is None or isinstance(value, _ATTR_SCALARS) or isinstance(value, np.ndarray):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        out = []
        for v in value:
            if isinstance(v, np.generic):
                v = v.item()
            if not isinstance(v, _ATTR_SCALARS):
                raise TypeError(
                    f"Attr '{key}' of op '{op_name}' has an element of unsupported "
                    f"type {type(v).__name__}"
                )
            out.append(v)
        return tuple(out)
    if getattr(value, "_is_function_graph", False):
        return value
    raise TypeError(
        f"Attr '{key}' of op '{op_name}' has unsupported type "
        f"{type(value).__name__} (expected bool, int, float, str, bytes, DType, "
        "TensorShape, ndarray, or a list of those)"
    )


# -----------------------------------------------------------------------------------------
# Graph
# -----------------------------------------------------------------------------------------


class _ControlScope:
    __slots__ = ("control_inputs", "seen", "clear")

    def __init__(self, control_inputs, clear=False):
        self.control_inputs = control_inputs
        self.seen: set[int] = set()
        self.clear = clear


class _ThreadState(threading.local):
    def __init__(self):
        self.name_stack = ""
        self.control_scopes: list[_ControlScope] = []
        self.device_stack: list = []


class Graph:
    """A dataflow graph: operations in creation order, their names and collections.

    >>> g = Graph()
    >>> with g.as_default():
    ...     c = constant(1.0, name="c")
    >>> c.graph is g
    True
    """

    _is_function_graph = False

    def __init__(self):
        self._lock = threading.RLock()
        self._ops: list[Operation] = []
        self._ops_by_name: dict[str, Operation] = {}
        self._names_in_use: dict[str, int] = {}
        self._collections: dict[str, list] = {}
        self._finalized = False
        self._version = 0
        self._next_id = 1
        self._seed = None
        self._thread = _ThreadState()
        self._gradient_override_map: dict[str, str] = {}

    # -- default graph --------------------------------------------------------------------
    def as_default(self):
        """Context manager making this graph the default graph of the current thread."""
        return _default_graph_stack.get_controller(self)

    @property
    def building_function(self) -> bool:
        return self._is_function_graph

    # -- version / finalization -----------------------------------------------------------
    @property
    def version(self) -> int:
        return self._version

    @property
    def finalized(self) -> bool:
        return self._finalized

    def finalize(self) -> None:
        """Makes the graph read-only: creating an op afterwards raises RuntimeError."""
        self._finalized = True

    def _unsafe_unfinalize(self) -> None:
        self._finalized = False

    def _check_not_finalized(self) -> None:
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")

    @property
    def seed(self):
        return self._seed

    @seed.setter
    def seed(self, value) -> None:
        self._seed = value

    # -- names ----------------------------------------------------------------------------
    def get_name_scope(self) -> str:
        return self._thread.name_stack

    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        """``name`` prefixed by the current name scope and made unique (``c``, ``c_1``, ...)."""
        stack = self._thread.name_stack
        if stack:
            name = stack + "/" + name
        with self._lock:
            name_key = name.lower()
            i = self._names_in_use.get(name_key, 0)
            if mark_as_used:
                self._names_in_use[name_key] = i + 1
            if i > 0:
                base_key = name_key
                while name_key in self._names_in_use:
                    name_key = f"{base_key}_{i}"
                    i += 1
                if mark_as_used:
                    self._names_in_use[name_key] = 1
                name = f"{name}_{i - 1}"
        return name

    @contextlib.contextmanager
    def name_scope(self, name):
        """Opens a name scope; yields the scope prefix ending in '/'."""
        state = self._thread
        if name:
            if isinstance(name, bytes):
                name = name.decode()
            if not isinstance(name, str):
                raise TypeError(f"name_scope expects a string name, got {type(name).__name__}")
            regex = _VALID_SCOPE_NAME if state.name_stack else _VALID_OP_NAME
            if not regex.match(name):
                raise ValueError(f"'{name}' is not a valid scope name")
        old = state.name_stack
        if not name:
            new = ""
        elif name[-1] == "/":
            new = name[:-1]
        else:
            new = self.unique_name(name)
        state.name_stack = new
        try:
            yield new + "/" if new else ""
        finally:
            state.name_stack = old

    # -- control dependencies -------------------------------------------------------------
    @contextlib.contextmanager
    def control_dependencies(self, control_inputs):
        """Ops created inside run only after ``control_inputs``; ``None`` clears the scope."""
        state = self._thread
        if control_inputs is None:
            scope = _ControlScope([], clear=True)
        else:
            ops = []
            for c in control_inputs:
                op = self._as_control_op(c)
                if op is not None and op not in ops:
                    ops.append(op)
            scope = _ControlScope(ops)
        state.control_scopes.append(scope)
        try:
            yield
        finally:
            state.control_scopes.pop()

    def _as_control_op(self, c) -> Operation:
        if hasattr(c, "_as_graph_element") and not isinstance(c, (Tensor, Operation)):
            c = c._as_graph_element()
        if isinstance(c, Tensor):
            c = c._op
        if not isinstance(c, Operation):
            raise TypeError(
                f"Can not convert a {type(c).__name__} into a Tensor or Operation "
                "(control_dependencies takes operations and tensors)."
            )
        if c._graph is not self and not self._is_function_graph:
            raise ValueError(
                f"Control input {c._name!r} must be from the same graph as the "
                "ops that depend on it."
            )
        return c

    def _control_inputs_for(self, input_ops: list[Operation]) -> list[Operation]:
        result: list[Operation] = []
        input_ids = {id(o) for o in input_ops}
        for scope in reversed(self._thread.control_scopes):
            if scope.clear:
                break
            if input_ids & scope.seen:
                continue  # an input was created in this scope: the dependency is implied
            for c in scope.control_inputs:
                if c not in result and id(c) not in input_ids:
                    result.append(c)
        return result

    def _record_seen(self, op: Operation) -> None:
        for scope in reversed(self._thread.control_scopes):
            if scope.clear:
                break
            scope.seen.add(id(op))

    # -- devices ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def device(self, device_name_or_function):
        """Requests a device for ops created inside; partial specs merge with outer scopes."""
        d = device_name_or_function
        if d is not None and not callable(d) and not isinstance(d, (str, DeviceSpec)):
            raise TypeError(
                f"device() expects a device string, DeviceSpec, function or None, "
                f"got {type(d).__name__}"
            )
        if isinstance(d, str):
            DeviceSpec.from_string(d)  # validate now, where the user wrote it
        self._thread.device_stack.append(d)
        try:
            yield
        finally:
            self._thread.device_stack.pop()

    def _device_for(self, op: Operation) -> str:
        dev = ""
        for entry in self._thread.device_stack:
            if entry is None:
                dev = ""
            elif isinstance(entry, (str, DeviceSpec)):
                dev = merge_device(dev, entry)
            else:
                r = entry(op)
                if r is not None:
                    dev = merge_device(dev, r)
        return dev

    @contextlib.contextmanager
    def colocate_with(self, op, ignore_existing=False):  # noqa: ARG002 - TF API compatibility
        """Places ops created inside on the device of ``op`` (TF's colocation, simplified)."""
        if op is None:
            yield
            return
        if hasattr(op, "_as_graph_element"):
            op = op._as_graph_element()
        if isinstance(op, Tensor):
            op = op._op
        with self.device(op._device or None):
            yield

    @contextlib.contextmanager
    def gradient_override_map(self, op_type_map: dict):
        """Ops of the mapped types created inside use the gradient registered under the mapped
        name (``tf.RegisterGradient`` or another op type) instead of their own."""
        if not isinstance(op_type_map, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in op_type_map.items()
        ):
            raise TypeError("op_type_map must be a dictionary mapping strings to strings")
        saved = dict(self._gradient_override_map)
        self._gradient_override_map.update(op_type_map)
        try:
            yield
        finally:
            self._gradient_override_map = saved

    # -- op creation ----------------------------------------------------------------------
    def create_op(
        self,
        op_type,
        inputs,
        dtypes=None,
        input_types=None,  # noqa: ARG002 - TF API compatibility
        name=None,
        attrs=None,
        op_def=None,  # noqa: ARG002 - TF API compatibility
        compute_shapes=True,  # noqa: ARG002 - TF API compatibility
        compute_device=True,  # noqa: ARG002 - TF API compatibility
    ) -> Operation:
        """Creates an op of a registered type (TF's ``Graph.create_op``).

        Output dtypes and shapes come from the op's inference function; when ``dtypes`` is
        given it must agree with them.
        """
        op = self._create_op(op_type, list(inputs), attrs or {}, name or op_type)
        if dtypes is not None:
            got = [t.dtype for t in op.outputs]
            if [_dtypes.as_dtype(d) for d in dtypes] != got:
                raise TypeError(
                    f"Op '{op.name}' of type {op_type} produces "
                    f"{[d.name for d in got]}, not the requested dtypes {dtypes}"
                )
        return op

    def _create_op(self, op_type: str, inputs: list, attrs: dict, name: str) -> Operation:
        self._check_not_finalized()
        opdef = registry.get(op_type)
        if name[-1:] == "/":
            name = name[:-1]
            if not _VALID_OP_NAME.match(name):
                raise ValueError(f"'{name}' is not a valid node name")
            with self._lock:
                if name in self._ops_by_name:
                    raise ValueError(f"Duplicate node name in graph: '{name}'")
                self._names_in_use.setdefault(name.lower(), 1)
        else:
            if not _VALID_OP_NAME.match(name):
                raise ValueError(
                    f"'{name}' is not a valid node name (names match {_VALID_OP_NAME.pattern})"
                )
            name = self.unique_name(name)
        for i, t in enumerate(inputs):
            if not isinstance(t, Tensor):
                raise TypeError(
                    f"Input {i} of op '{name}' must be a Tensor, got {type(t).__name__}"
                )
            if t._op._graph is not self:
                inputs[i] = self._capture(t, name)
        checked = {k: _check_attr(name, k, v) for k, v in attrs.items()}
        opdef.check_attrs(name, checked)
        control_inputs = self._control_inputs_for([t._op for t in inputs])
        op = Operation(self, name, op_type, opdef, inputs, control_inputs, checked, "")
        op._device = self._device_for(op) if self._thread.device_stack else ""
        try:
            specs = opdef.infer(op)
        except registry.ShapeError as e:
            shapes = ", ".join(t._shape._short() for t in inputs)
            raise ValueError(
                f"{e} for '{name}' (op: '{op_type}') with input shapes: {shapes}."
            ) from None
        outputs = []
        for i, (dtype, shape) in enumerate(specs):
            outputs.append(
                Tensor(op, i, dtype, shape if isinstance(shape, TensorShape) else as_shape(shape))
            )
        op._outputs = tuple(outputs)
        op._defined_at = _defined_at()
        if self._gradient_override_map and op_type in self._gradient_override_map:
            op._attrs["_gradient_op_type"] = self._gradient_override_map[op_type]
        with self._lock:
            self._check_not_finalized()
            if name in self._ops_by_name:
                raise ValueError(f"Duplicate node name in graph: '{name}'")
            op._id = self._next_id
            self._next_id += 1
            self._ops.append(op)
            self._ops_by_name[name] = op
            self._version += 1
        for t in inputs:
            t._consumers.append(op)
        for c in control_inputs:
            c._control_outputs.append(op)
        self._record_seen(op)
        return op

    def _capture(self, tensor: Tensor, op_name: str) -> Tensor:
        raise ValueError(
            f"Tensor {tensor.name!r} must be from the same graph as the op "
            f"{op_name!r} that uses it (it belongs to another Graph)."
        )

    # -- lookup -----------------------------------------------------------------------------
    def get_operations(self) -> list[Operation]:
        with self._lock:
            return list(self._ops)

    def get_operation_by_name(self, name: str) -> Operation:
        if not isinstance(name, str):
            raise TypeError(f"Operation names are strings (or similar), not {type(name).__name__}.")
        return self.as_graph_element(name, allow_tensor=False, allow_operation=True)

    def get_tensor_by_name(self, name: str) -> Tensor:
        if not isinstance(name, str):
            raise TypeError(f"Tensor names are strings (or similar), not {type(name).__name__}.")
        return self.as_graph_element(name, allow_tensor=True, allow_operation=False)

    def as_graph_element(self, obj, allow_tensor: bool = True, allow_operation: bool = True):
        """Resolves a Tensor, Operation or name (``"op:0"`` / ``"op"``) to an element."""
        if allow_tensor and allow_operation:
            types_str = "Tensor or Operation"
        elif allow_tensor:
            types_str = "Tensor"
        else:
            types_str = "Operation"
        if isinstance(obj, str):
            if ":" in obj:
                if not allow_tensor:
                    raise ValueError(
                        f"Name '{obj}' appears to refer to a Tensor, not a {types_str}."
                    )
                op_name, _, idx = obj.partition(":")
                try:
                    out_n = int(idx)
                except ValueError:
                    raise ValueError(
                        f"The name {obj!r} looks a like a Tensor name, but is not "
                        "a valid one. Tensor names must be of the form "
                        '"<op_name>:<output_index>".'
                    ) from None
                op = self._ops_by_name.get(op_name)
                if op is None:
                    raise KeyError(
                        f"The name {obj!r} refers to a Tensor which does not exist. "
                        f"The operation, {op_name!r}, does not exist in the graph."
                    )
                if out_n < 0 or out_n >= len(op._outputs):
                    raise KeyError(
                        f"The name {obj!r} refers to a Tensor which does not exist. "
                        f"The operation, {op_name!r}, exists but only has "
                        f"{len(op._outputs)} outputs."
                    )
                return op._outputs[out_n]
            if not allow_operation:
                if obj in self._ops_by_name:
                    raise ValueError(
                        f"The name {obj!r} refers to an Operation, not a "
                        f"{types_str}. Tensor names must be of the form "
                        '"<op_name>:<output_index>".'
                    )
                raise ValueError(
                    f"The name {obj!r} looks like an (invalid) Operation name, not a {types_str}."
                )
            op = self._ops_by_name.get(obj)
            if op is None:
                raise KeyError(f"The name {obj!r} refers to an Operation not in the graph.")
            return op
        if hasattr(obj, "_as_graph_element") and not isinstance(obj, (Tensor, Operation)):
            obj = obj._as_graph_element()
        if isinstance(obj, Tensor) and allow_tensor:
            if obj.graph is not self:
                raise ValueError(f"Tensor {obj} is not an element of this graph.")
            return obj
        if isinstance(obj, Operation) and allow_operation:
            if obj._graph is not self:
                raise ValueError(f"Operation {obj} is not an element of this graph.")
            return obj
        raise TypeError(f"Can not convert a {type(obj).__name__} into a {types_str}.")

    def _op_by_name(self, name: str) -> Operation | None:
        return self._ops_by_name.get(name)

    # -- collections ----------------------------------------------------------------------
    def add_to_collection(self, name, value) -> None:
        with self._lock:
            self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names, value) -> None:
        names = (names,) if isinstance(names, str) else set(names)
        for name in names:
            self.add_to_collection(name, value)

    def get_collection_ref(self, name) -> list:
        with self._lock:
            return self._collections.setdefault(name, [])

    def get_collection(self, name, scope=None) -> list:
        """A copy of the collection; with ``scope``, items whose name matches it (re.match)."""
        with self._lock:
            items = self._collections.get(name)
            if items is None:
                return []
            if scope is None:
                return list(items)
            regex = re.compile(scope)
            out = []
            for item in items:
                try:
                    if regex.match(item.name):
                        out.append(item)
                except AttributeError:
                    pass
            return out

    def get_all_collection_keys(self) -> list:
        with self._lock:
            return [k for k, v in self._collections.items() if isinstance(v, list)]

    def clear_collection(self, name) -> None:
        with self._lock:
            self._collections.pop(name, None)

    # -- serialization --------------------------------------------------------------------
    def as_graph_def(self, from_version=None, add_shapes=False):  # noqa: ARG002 - TF API compatibility
        """The graph as a serializable ``GraphDef`` (see ``engine/saving/graph_def.py``)."""
        if _graph_def_writer is None:
            raise RuntimeError("engine.saving.graph_def is not imported")
        return _graph_def_writer(self)

    # -- misc -------------------------------------------------------------------------------
    def is_feedable(self, tensor) -> bool:  # noqa: ARG002 - nothing is prevented from feeding
        return True

    def is_fetchable(self, tensor_or_op) -> bool:  # noqa: ARG002 - or from fetching
        return True

    def __contains__(self, name: str) -> bool:
        return name in self._ops_by_name

    def __repr__(self) -> str:
        return f"<Graph {id(self):#x} ops={len(self._ops)}>"


# -----------------------------------------------------------------------------------------
# Default graph stack (per thread)
# -----------------------------------------------------------------------------------------


class _DefaultStack(threading.local):
    def __init__(self):
        self.stack: list = []

    def get_default(self):
        return self.stack[-1] if self.stack else None

    @contextlib.contextmanager
    def get_controller(self, obj):
        self.stack.append(obj)
        try:
            yield obj
        finally:
            # Tolerate out-of-order exits from generators, as TF does.
            if self.stack and self.stack[-1] is obj:
                self.stack.pop()
            elif obj in self.stack:
                self.stack.remove(obj)


_default_session_stack = _DefaultStack()

# The serializer sits above the graph (engine.saving.graph_def) and installs its writer here
# when imported, so that this module does not import upward.
_graph_def_writer = None


def set_graph_def_writer(writer) -> None:
    """Installs ``writer(graph) -> GraphDef`` used by ``Graph.as_graph_def``."""
    global _graph_def_writer
    _graph_def_writer = writer


def get_default_session():
    """The innermost session entered with ``with sess:`` or ``sess.as_default()``, or None."""
    return _default_session_stack.get_default()


def session_for(elem, session, method: str):
    """The session that ``Tensor.eval()`` / ``Operation.run()`` should use."""
    kind = "evaluate tensor" if isinstance(elem, Tensor) else "execute operation"
    if session is None:
        session = get_default_session()
        if session is None:
            raise ValueError(
                f"Cannot {kind} using `{method}()`: No default session is "
                "registered. Use `with sess.as_default()` or pass an explicit "
                f"session to `{method}(session=sess)`"
            )
    if session.graph is not elem.graph:
        what = "tensor" if isinstance(elem, Tensor) else "operation"
        raise ValueError(
            f"Cannot use the given session to {kind}: the {what}'s graph is "
            "different from the session's graph."
        )
    return session


class _DefaultGraphStack(_DefaultStack):
    _global_default: Graph | None = None
    _global_lock = threading.Lock()

    def get_default(self) -> Graph:
        if self.stack:
            return self.stack[-1]
        g = _DefaultGraphStack._global_default
        if g is None:
            with _DefaultGraphStack._global_lock:
                if _DefaultGraphStack._global_default is None:
                    _DefaultGraphStack._global_default = Graph()
                g = _DefaultGraphStack._global_default
        return g

    def reset(self) -> None:
        if self.stack:
            raise AssertionError(
                "Do not use reset_default_graph() to clear nested graphs. If "
                "you need a cleared graph, exit the nesting and create a new "
                "graph."
            )
        _DefaultGraphStack._global_default = None


_default_graph_stack = _DefaultGraphStack()


def get_default_graph() -> Graph:
    """The default graph of the current thread (a global graph, created lazily, by default)."""
    return _default_graph_stack.get_default()


def reset_default_graph() -> None:
    """Clears the global default graph; must not be called inside ``Graph.as_default()``."""
    _default_graph_stack.reset()


def _get_graph_from_inputs(values) -> Graph:
    default = get_default_graph()
    if default._is_function_graph:
        return default
    graph = None
    first = None
    for v in values:
        if hasattr(v, "_as_graph_element") and not isinstance(v, (Tensor, Operation)):
            try:
                v = v._as_graph_element()
            except Exception:  # noqa: BLE001 - objects that cannot resolve are not inputs
                continue
        if isinstance(v, (Tensor, Operation)):
            g = v.graph
            if graph is None:
                graph, first = g, v
            elif g is not graph:
                raise ValueError(f"{v} must be from the same graph as {first}.")
    return graph if graph is not None else default


@contextlib.contextmanager
def name_scope(name, default_name=None, values=None):
    """TF1's ``name_scope(name, default_name, values)``: a scope in the inputs' graph."""
    n = default_name if name is None else name
    if values is not None:
        if isinstance(values, (Tensor, Operation)) or not isinstance(values, (list, tuple)):
            values = [values]
        g = _get_graph_from_inputs(values)
    else:
        g = get_default_graph()
    if g is get_default_graph():
        with g.name_scope(n) as scope:
            yield scope
    else:
        with g.as_default(), g.name_scope(n) as scope:
            yield scope


def get_name_scope() -> str:
    return get_default_graph().get_name_scope()


def control_dependencies(control_inputs):
    """Ops created inside the context run after ``control_inputs`` (``None`` clears)."""
    return get_default_graph().control_dependencies(control_inputs)


def device(device_name_or_function):
    """Requests a device (``"/gpu:0"``, a ``DeviceSpec``, a function or None) for new ops."""
    return get_default_graph().device(device_name_or_function)


def colocate_with(op, ignore_existing=False):
    return get_default_graph().colocate_with(op, ignore_existing)


def add_to_collection(name, value) -> None:
    get_default_graph().add_to_collection(name, value)


def add_to_collections(names, value) -> None:
    get_default_graph().add_to_collections(names, value)


def get_collection(key, scope=None) -> list:
    return get_default_graph().get_collection(key, scope)


def get_collection_ref(key) -> list:
    return get_default_graph().get_collection_ref(key)
