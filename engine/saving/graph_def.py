"""Graph serialization: ``GraphDef`` (msgpack) and ``import_graph_def`` with TF1 semantics.

A serialized graph is a versioned plain structure::

    {"format": "flowserve.graph", "version": 1,
     "nodes": [{"name": "y", "op": "Mul", "inputs": ["x:0", "y/y:0", "^init"],
                "device": "", "attrs": {"key": ["tag", value], ...}}, ...]}

Attribute values carry a type tag (``i`` int, ``f`` float, ``b`` bool, ``s`` str, ``B`` bytes,
``dtype``, ``shape``, ``tensor``, ``list``, ``func``, ``none``); tensors are a dtype, a shape
and raw little-endian bytes. Function bodies (cond branches, loop bodies) nest as ``func``
attributes. Importing recreates every op through the normal op constructor, so each op's
dtypes and shapes are re-inferred and checked rather than trusted from the file.
"""

from __future__ import annotations

import os

import msgpack
import numpy as np
from google.protobuf import text_format

from engine import dtypes
from engine.formats.tensorflow import graph_def as tf_graph_def
from engine.formats.tensorflow import writer as tf_writer
from engine.formats.tensorflow.proto import graph_pb2 as tf_graph_pb2
from engine.formats.tensorflow.tensors import TFFormatError
from engine.framework import graph as ops
from engine.framework import registry
from engine.framework.constant_op import convert_to_tensor
from engine.framework.func_graph import FuncGraph
from engine.framework.graph import Graph, NodeDef, Operation, Tensor
from engine.tensor_shape import TensorShape

__all__ = [
    "GraphDef",
    "import_graph_def",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "GraphDefLimits",
    "graph_to_def",
    "write_graph",
]

FORMAT_NAME = "flowserve.graph"
FORMAT_VERSION = 1


class GraphDefLimits:
    """Bounds applied when decoding serialized graphs from untrusted bytes."""

    max_bytes = 2 << 30
    max_nodes = 1 << 20
    max_attr_list = 1 << 20
    max_rank = 32
    max_dim = 1 << 40
    max_tensor_bytes = 1 << 31
    max_nesting = 32


class GraphDefError(ValueError):
    """A serialized graph that is malformed (the loader maps it to DataLossError)."""


# -----------------------------------------------------------------------------------------
# Attribute encoding
# -----------------------------------------------------------------------------------------


def _encode_tensor(arr: np.ndarray) -> dict:
    if arr.dtype.kind in "OUS":
        items = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in arr.reshape(-1)]
        data = msgpack.packb(items, use_bin_type=True)
        dtype = "string"
    else:
        dtype = dtypes.as_dtype(arr.dtype).name
        data = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<")).tobytes()
    return {"dtype": dtype, "shape": list(arr.shape), "data": data}


def _encode_attr(value):
    if value is None:
        return ["none", None]
    if isinstance(value, bool):
        return ["b", value]
    if isinstance(value, int):
        return ["i", value]
    if isinstance(value, float):
        return ["f", value]
    if isinstance(value, str):
        return ["s", value]
    if isinstance(value, bytes):
        return ["B", value]
    if isinstance(value, dtypes.DType):
        return ["dtype", value.name]
    if isinstance(value, TensorShape):
        dims = value.as_tuple()
        return ["shape", None if dims is None else [-1 if d is None else d for d in dims]]
    if isinstance(value, np.ndarray):
        return ["tensor", _encode_tensor(value)]
    if isinstance(value, (list, tuple)):
        return ["list", [_encode_attr(v) for v in value]]
    if getattr(value, "_is_function_graph", False):
        return ["func", _function_to_dict(value)]
    raise TypeError(f"Cannot serialize attr value of type {type(value).__name__}")


def _decode_tensor(d, where: str) -> np.ndarray:
    if not isinstance(d, dict):
        raise GraphDefError(f"{where}: tensor attr must be a map")
    dtype_name, shape, data = d.get("dtype"), d.get("shape"), d.get("data")
    try:
        dtype = dtypes.as_dtype(dtype_name) if isinstance(dtype_name, str) else None
    except TypeError:
        dtype = None
    if dtype is None or dtype not in dtypes.ALL_VALUE_TYPES:
        raise GraphDefError(f"{where}: unsupported tensor dtype {dtype_name!r}")
    shape = _decode_dims(shape, where, allow_unknown=False)
    if not isinstance(data, bytes):
        raise GraphDefError(f"{where}: tensor data must be bytes")
    count = 1
    for dim in shape:
        count *= dim
    if dtype is dtypes.string:
        if count > GraphDefLimits.max_attr_list:
            raise GraphDefError(f"{where}: string tensor has too many elements")
        try:
            items = msgpack.unpackb(
                data,
                raw=True,
                max_bin_len=len(data),
                max_str_len=len(data),
                max_array_len=count,
                max_map_len=0,
                max_ext_len=0,
            )
        except (
            ValueError,
            msgpack.ExtraData,
            msgpack.FormatError,
            msgpack.StackError,
            TypeError,
        ) as e:
            raise GraphDefError(f"{where}: bad string tensor ({e})") from None
        if (
            not isinstance(items, list)
            or len(items) != count
            or not all(isinstance(v, bytes) for v in items)
        ):
            raise GraphDefError(f"{where}: string tensor does not hold {count} byte strings")
        arr = np.empty(count, dtype=object)
        arr[:] = items
        return arr.reshape(shape)
    if count * dtype.size != len(data):
        raise GraphDefError(
            f"{where}: tensor of dtype {dtype.name} and shape {list(shape)} "
            f"needs {count * dtype.size} bytes, got {len(data)}"
        )
    arr = np.frombuffer(data, dtype=dtype.np.newbyteorder("<")).reshape(shape)
    return arr.astype(dtype.np) if arr.dtype != dtype.np else arr.copy()


def _decode_dims(dims, where, allow_unknown=True):
    if not isinstance(dims, list) or len(dims) > GraphDefLimits.max_rank:
        raise GraphDefError(
            f"{where}: shape must be a list of at most {GraphDefLimits.max_rank} dimensions"
        )
    out = []
    for d in dims:
        if (
            not isinstance(d, int)
            or isinstance(d, bool)
            or d > GraphDefLimits.max_dim
            or d < (-1 if allow_unknown else 0)
        ):
            raise GraphDefError(f"{where}: invalid dimension {d!r}")
        out.append(d)
    return tuple(out)


def _decode_attr(tagged, where: str, outer: Graph, depth: int):
    if not isinstance(tagged, list) or len(tagged) != 2 or not isinstance(tagged[0], str):
        raise GraphDefError(f"{where}: attr must be a [tag, value] pair")
    tag, v = tagged
    if tag == "none":
        return None
    if tag == "b" and isinstance(v, bool):
        return v
    if tag == "i" and isinstance(v, int) and not isinstance(v, bool):
        return v
    if tag == "f" and isinstance(v, (float, int)) and not isinstance(v, bool):
        return float(v)
    if tag == "s" and isinstance(v, str):
        return v
    if tag == "B" and isinstance(v, bytes):
        return v
    if tag == "dtype" and isinstance(v, str):
        try:
            return dtypes.as_dtype(v)
        except TypeError:
            raise GraphDefError(f"{where}: unknown dtype {v!r}") from None
    if tag == "shape":
        if v is None:
            return TensorShape(None)
        return TensorShape([None if d == -1 else d for d in _decode_dims(v, where)])
    if tag == "tensor":
        return _decode_tensor(v, where)
    if tag == "list" and isinstance(v, list):
        if len(v) > GraphDefLimits.max_attr_list:
            raise GraphDefError(f"{where}: list attr too long")
        if any(isinstance(x, list) and x[:1] in (["list"], ["func"], ["tensor"]) for x in v):
            # Checked before decoding: nested lists would otherwise recurse once per level.
            raise GraphDefError(f"{where}: list attrs hold scalars only")
        items = [_decode_attr(x, where, outer, depth) for x in v]
        for x in items:
            if (
                isinstance(x, (list, tuple))
                or getattr(x, "_is_function_graph", False)
                or isinstance(x, np.ndarray)
            ):
                raise GraphDefError(f"{where}: list attrs hold scalars only")
        return tuple(items)
    if tag == "func" and isinstance(v, dict):
        if depth >= GraphDefLimits.max_nesting:
            raise GraphDefError(f"{where}: functions nested too deeply")
        return _function_from_dict(v, outer, where, depth + 1)
    raise GraphDefError(f"{where}: malformed attr value with tag {tag!r}")


# -----------------------------------------------------------------------------------------
# Graphs <-> plain structures
# -----------------------------------------------------------------------------------------


def _tensor_ref(t: Tensor) -> str:
    return f"{t.op.name}:{t.value_index}"


def _nodes_of(graph: Graph) -> list[dict]:
    nodes = []
    for op in graph.get_operations():
        if not op._opdef.flags.serializable:
            raise ValueError(
                f"Cannot serialize op '{op.name}' of type {op.type}: it runs "
                "Python code that cannot be saved (e.g. py_func). Remove it from "
                "the graph you export."
            )
        nodes.append(
            {
                "name": op.name,
                "op": op.type,
                "inputs": [_tensor_ref(t) for t in op.inputs]
                + ["^" + c.name for c in op.control_inputs],
                "device": op.device,
                "attrs": {k: _encode_attr(v) for k, v in sorted(op._attrs.items())},
            }
        )
    return nodes


def _function_to_dict(fg) -> dict:
    return {
        "name": fg.name,
        "nodes": _nodes_of(fg),
        "inputs": [_tensor_ref(t) for t in fg.inputs],
        "outputs": [_tensor_ref(t) for t in fg.outputs],
        "control_outputs": [op.name for op in fg.control_outputs],
    }


def _function_from_dict(d: dict, outer: Graph, where: str, depth: int):
    name = d.get("name")
    if not isinstance(name, str):
        raise GraphDefError(f"{where}: function without a name")
    fg = FuncGraph(name, outer)
    nodes = d.get("nodes")
    with fg.as_default():
        _build_nodes(fg, nodes, {}, f"{where} function {name!r}", depth, prefix="")
    try:
        fg.inputs = [fg.get_tensor_by_name(n) for n in _names(d.get("inputs"), where)]
        fg.outputs = [fg.get_tensor_by_name(n) for n in _names(d.get("outputs"), where)]
        fg.control_outputs = [
            fg.get_operation_by_name(n) for n in _names(d.get("control_outputs"), where)
        ]
    except (KeyError, ValueError, TypeError) as e:
        raise GraphDefError(f"{where} function {name!r}: {e}") from None
    for t in fg.inputs:
        if t.op.type != "Arg":
            raise GraphDefError(f"{where} function {name!r}: input {t.name} is not an Arg")
    args = [op for op in fg.get_operations() if op.type == "Arg"]
    if len(args) != len(fg.inputs) or set(args) != {t.op for t in fg.inputs}:
        raise GraphDefError(f"{where} function {name!r}: its Arg ops and its inputs differ")
    fg.finalize()
    return fg


def _names(v, where):
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise GraphDefError(f"{where}: expected a list of names")
    return v


def graph_to_def(graph: Graph) -> GraphDef:
    return GraphDef({"format": FORMAT_NAME, "version": FORMAT_VERSION, "nodes": _nodes_of(graph)})


ops.set_graph_def_writer(graph_to_def)  # Graph.as_graph_def writes through this module


class GraphDef:
    """A serialized graph: a list of node descriptions (see module docstring)."""

    def __init__(self, doc: dict | None = None):
        self._doc = doc or {"format": FORMAT_NAME, "version": FORMAT_VERSION, "nodes": []}

    @property
    def version(self) -> int:
        return self._doc["version"]

    @property
    def node(self) -> list[NodeDef]:
        """The nodes, decoded to ``NodeDef``s (function attrs shown as their names)."""
        out = []
        for n in self._doc["nodes"]:
            attrs = {}
            for k, v in n["attrs"].items():
                attrs[k] = (
                    v[1]["name"]
                    if v[0] == "func"
                    else _decode_attr(v, n["name"], None, 0)
                    if v[0] != "func"
                    else None
                )
            out.append(NodeDef(n["name"], n["op"], list(n["inputs"]), n["device"], attrs))
        return out

    def to_bytes(self) -> bytes:
        """This format's bytes (msgpack), which ``from_bytes`` reads back."""
        return msgpack.packb(self._doc, use_bin_type=True)

    def to_tensorflow(self):
        """The graph as TensorFlow's ``GraphDef`` message (``TFFormatError`` when an op
        cannot be expressed there, e.g. one running Python code)."""
        g = Graph()
        with g.as_default():
            import_graph_def(self, name="")
        return tf_writer.graph_to_tf(g)

    def SerializeToString(self) -> bytes:  # noqa: N802 - protobuf's name
        """TensorFlow's binary GraphDef, as TF1 programs write ``frozen.pb`` for TF and TF
        Serving to read; a graph TF cannot express (engine-only ops) comes back in this
        format's bytes instead. ``ParseFromString``/``FromString`` read both."""
        try:
            return self.to_tensorflow().SerializeToString()
        except (TFFormatError, ValueError, TypeError, KeyError):
            return self.to_bytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> GraphDef:
        """Decodes bytes written by ``to_bytes``; GraphDefError (a ValueError) if malformed."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"GraphDef.from_bytes expects bytes, got {type(data).__name__}")
        if len(data) > GraphDefLimits.max_bytes:
            raise GraphDefError(f"serialized graph is {len(data)} bytes, over the limit")
        if tf_graph_def.is_tf_graph_def_bytes(bytes(data[:1])):
            try:
                return cls.from_tensorflow(bytes(data))
            except tf_graph_def.UnsupportedOpsError:
                raise
            except ValueError as e:
                raise GraphDefError(
                    f"serialized graph is not valid msgpack, and not a TensorFlow GraphDef: {e}"
                ) from None
        try:
            doc = msgpack.unpackb(
                bytes(data),
                raw=False,
                strict_map_key=True,
                max_str_len=1 << 24,
                max_bin_len=len(data),
                max_array_len=GraphDefLimits.max_nodes,
                max_map_len=GraphDefLimits.max_nodes,
                max_ext_len=0,
            )
        except (
            ValueError,
            msgpack.ExtraData,
            msgpack.FormatError,
            msgpack.StackError,
            TypeError,
            UnicodeDecodeError,
        ) as e:
            raise GraphDefError(f"serialized graph is not valid msgpack ({e})") from None
        return cls._from_doc(doc)

    @classmethod
    def from_tensorflow(cls, graph_def, keep=None, op_defaults=None) -> GraphDef:
        """A graph TensorFlow wrote: binary ``GraphDef`` bytes, ``.pbtxt`` text, or a parsed
        ``engine.formats.tensorflow.proto.graph_pb2.GraphDef``. Function calls are inlined
        (``keep`` prunes to what those node names need); ops the engine lacks are all named
        in one ``UnsupportedOpsError``."""
        if not isinstance(graph_def, tf_graph_pb2.GraphDef):
            graph_def = tf_graph_def.parse_graph_def(graph_def)
        doc = tf_graph_def.graph_def_to_document(graph_def, keep=keep, op_defaults=op_defaults)
        return cls._from_doc(doc)

    @classmethod
    def FromString(cls, data: bytes) -> GraphDef:  # noqa: N802 - protobuf's name
        """``from_bytes``: this format's or TensorFlow's binary GraphDef."""
        return cls.from_bytes(data)

    @classmethod
    def from_text(cls, text: str) -> GraphDef:
        """A TensorFlow text-format graph (``.pbtxt``, as ``tf.io.write_graph`` writes it)."""
        return cls.from_tensorflow(str(text))

    @classmethod
    def _from_doc(cls, doc) -> GraphDef:
        if not isinstance(doc, dict) or doc.get("format") != FORMAT_NAME:
            raise GraphDefError(f"not a {FORMAT_NAME} document")
        version = doc.get("version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise GraphDefError("graph format version missing or invalid")
        if version > FORMAT_VERSION:
            raise GraphDefError(
                f"graph format version {version} is newer than the supported "
                f"version {FORMAT_VERSION}; upgrade flowserve to load it"
            )
        _check_nodes(doc.get("nodes"), "graph")
        return cls(doc)

    def ParseFromString(self, data: bytes) -> None:  # noqa: N802 - protobuf's name
        self._doc = GraphDef.from_bytes(data)._doc

    def op_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for n in self._doc["nodes"]:
            counts[n["op"]] = counts.get(n["op"], 0) + 1
        return dict(sorted(counts.items()))

    def __len__(self) -> int:
        return len(self._doc["nodes"])

    def __repr__(self) -> str:
        return f"<GraphDef version={self.version} nodes={len(self)}>"

    def to_text(self) -> str:
        """A human-readable listing of the nodes (not meant to be parsed back)."""
        return "\n\n".join(str(n) for n in self.node) + "\n"


def _check_nodes(nodes, where):
    if not isinstance(nodes, list) or len(nodes) > GraphDefLimits.max_nodes:
        raise GraphDefError(f"{where}: nodes must be a list")
    for i, n in enumerate(nodes):
        if not isinstance(n, dict):
            raise GraphDefError(f"{where}: node {i} is not a map")
        name, op_type = n.get("name"), n.get("op")
        if not isinstance(name, str) or not name or not isinstance(op_type, str):
            raise GraphDefError(f"{where}: node {i} lacks a name or op type")
        if not isinstance(n.get("inputs"), list) or not all(
            isinstance(x, str) for x in n["inputs"]
        ):
            raise GraphDefError(f"{where}: node {name!r} has malformed inputs")
        if not isinstance(n.get("device", ""), str):
            raise GraphDefError(f"{where}: node {name!r} has a malformed device")
        n.setdefault("device", "")
        attrs = n.setdefault("attrs", {})
        if not isinstance(attrs, dict) or not all(isinstance(k, str) for k in attrs):
            raise GraphDefError(f"{where}: node {name!r} has malformed attrs")
        for v in attrs.values():
            if isinstance(v, list) and len(v) == 2 and v[0] == "func":
                if not isinstance(v[1], dict):
                    raise GraphDefError(f"{where}: node {name!r} has a malformed function")
                _check_nodes(v[1].get("nodes"), f"{where} node {name!r}")


# -----------------------------------------------------------------------------------------
# Import
# -----------------------------------------------------------------------------------------


def _parse_input(ref: str):
    if ref.startswith("^"):
        return ref[1:], None
    name, sep, idx = ref.rpartition(":")
    if not sep:
        return ref, 0
    try:
        return name, int(idx)
    except ValueError:
        return ref, 0


def _topological(nodes: list[dict], where: str) -> list[dict]:
    by_name = {}
    for n in nodes:
        if n["name"] in by_name:
            raise GraphDefError(f"{where}: duplicate node name {n['name']!r}")
        by_name[n["name"]] = n
    order, state = [], {}
    for root in nodes:
        if root["name"] in state:
            continue
        stack = [(root, iter(root["inputs"]))]
        state[root["name"]] = 1
        while stack:
            node, it = stack[-1]
            for ref in it:
                src, _ = _parse_input(ref)
                dep = by_name.get(src)
                if dep is None:
                    continue  # resolved later against input_map or reported missing
                s = state.get(src)
                if s is None:
                    state[src] = 1
                    stack.append((dep, iter(dep["inputs"])))
                    break
                if s == 1:
                    raise GraphDefError(f"{where}: the graph contains a cycle through node {src!r}")
            else:
                stack.pop()
                state[node["name"]] = 2
                order.append(node)
    return order


def _check_attrs(opdef, attrs: dict, where: str) -> None:
    """The serialized ``attrs`` of a node against its op's declared attributes: no unknown
    names, every required one present, each of its declared kind. Checked before the op is
    created because some attrs are only read when a session compiles it (a While's ``cond``,
    a random op's seeds)."""
    declared = opdef.attr_by_name
    unknown = sorted(k for k in attrs if k[:1] != "_" and k not in declared)
    if unknown:
        raise GraphDefError(f"{where} has unknown attrs {unknown}")
    missing = sorted(a.name for a in opdef.attrs if a.required and a.name not in attrs)
    if missing:
        raise GraphDefError(f"{where} lacks the attrs {missing}")
    for k, v in attrs.items():
        a = declared.get(k)
        if a is None:
            continue
        if not (isinstance(v, list) and len(v) == 2 and isinstance(v[0], str)):
            continue  # malformed: decoding reports it
        if v[0] not in a.serialized_kinds():
            raise GraphDefError(f"{where}: attr {k!r} must be a {a.type} attr, got {v[0]!r}")
        elems = a.element_kinds()
        if elems is not None and v[0] == "list" and isinstance(v[1], list):
            if not all(isinstance(x, list) and x and x[0] in elems for x in v[1]):
                raise GraphDefError(f"{where}: attr {k!r} must be a {a.type} attr")


def _build_nodes(
    graph: Graph, nodes, input_map: dict, where: str, depth: int, prefix: str
) -> tuple[dict, dict]:
    """Creates ``nodes`` in ``graph`` (the default graph). Returns (tensor map, op map)."""
    tensors: dict[str, Tensor] = {}
    op_map: dict[str, Operation] = {}
    used_inputs: set[str] = set()
    for n in _topological(nodes, where):
        name, op_type = n["name"], n["op"]
        opdef = registry.lookup(op_type)
        if opdef is None:
            raise GraphDefError(
                f"{where}: node {name!r} uses op type not registered "
                f"'{op_type}' in this version of flowserve"
            )
        if not opdef.flags.serializable:
            raise GraphDefError(
                f"{where}: node {name!r} has op type '{op_type}', which runs "
                "Python code of this process and is never loaded from a file"
            )
        _check_attrs(opdef, n["attrs"], f"{where}: node {name!r} ({op_type})")
        attrs = {
            k: _decode_attr(v, f"{where} node {name!r} attr {k!r}", graph, depth)
            for k, v in n["attrs"].items()
        }
        inputs, controls = [], []
        for ref in n["inputs"]:
            src, idx = _parse_input(ref)
            if idx is None:
                key = "^" + src
                if key in input_map:
                    used_inputs.add(key)
                    controls.append(input_map[key])
                    continue
                if src not in op_map:
                    raise GraphDefError(f"{where}: node {name!r} has unknown control input {src!r}")
                controls.append(op_map[src])
                continue
            key = f"{src}:{idx}"
            if key in input_map:
                used_inputs.add(key)
                inputs.append(input_map[key])
                continue
            t = tensors.get(key)
            if t is None:
                if src in op_map:
                    raise GraphDefError(
                        f"{where}: node {name!r} reads output {idx} of "
                        f"{src!r}, which has only "
                        f"{len(op_map[src].outputs)} outputs"
                    )
                raise GraphDefError(f"{where}: node {name!r} has unknown input node {src!r}")
            inputs.append(t)
        try:
            op = graph._create_op(op_type, inputs, attrs, prefix + name + "/")
        except (
            TypeError,
            ValueError,
            KeyError,
            IndexError,
            AttributeError,
            ArithmeticError,
            RecursionError,
        ) as e:
            # Op construction re-infers dtypes and shapes from attrs that came from the file:
            # an attr of the wrong kind fails there, however the inference function trips.
            raise GraphDefError(
                f"{where}: node {name!r} ({op_type}) is invalid: {type(e).__name__}: {e}"
            ) from None
        for t in op.outputs:
            if not isinstance(t.dtype, dtypes.DType):
                raise GraphDefError(
                    f"{where}: node {name!r} ({op_type}) is invalid: output "
                    f"{t.value_index} has dtype {t.dtype!r}, not a DType (an "
                    "attr of the wrong type)"
                )
        if n["device"]:
            try:
                op._set_device(n["device"])
            except ValueError as e:
                raise GraphDefError(f"{where}: node {name!r} has an invalid device: {e}") from None
        if controls:
            op._add_control_inputs(controls)
        op_map[name] = op
        for t in op.outputs:
            tensors[f"{name}:{t.value_index}"] = t
    unused = [k for k in input_map if k not in used_inputs]
    return tensors, op_map, unused


def import_graph_def(
    graph_def,
    input_map=None,
    return_elements=None,
    name=None,
    op_dict=None,  # noqa: ARG001 - TF API compatibility
    producer_op_list=None,  # noqa: ARG001 - TF API compatibility
):
    """Imports ``graph_def`` into the default graph under the name scope ``name``.

    ``name`` defaults to "import" (ops become ``import/...``); ``name=""`` imports without a
    prefix. ``input_map`` replaces tensors of the imported graph (keys ``"op:i"`` or
    ``"^op"``) with tensors of the default graph. ``return_elements`` names tensors
    (``"op:0"``) or operations (``"op"``) to return.
    """
    if isinstance(graph_def, (bytes, bytearray, memoryview)):
        graph_def = GraphDef.from_bytes(graph_def)
    if isinstance(graph_def, tf_graph_pb2.GraphDef):
        graph_def = GraphDef.from_tensorflow(graph_def)
    if not isinstance(graph_def, GraphDef):
        raise TypeError(f"graph_def must be a GraphDef, got {type(graph_def).__name__}")
    input_map = dict(input_map or {})
    normalized = {}
    for k, v in input_map.items():
        if not isinstance(k, str):
            raise TypeError(f"input_map keys must be strings, got {k!r}")
        if k.startswith("^"):
            if not isinstance(v, Operation):
                raise TypeError(f"input_map[{k!r}] must be an Operation")
            normalized[k] = v
            continue
        key = k if ":" in k else k + ":0"

        normalized[key] = convert_to_tensor(v)
    graph = ops.get_default_graph()
    if return_elements is not None and not isinstance(return_elements, (list, tuple)):
        raise TypeError("return_elements must be a list of strings")
    with ops.name_scope(name, "import", list(normalized.values())) as scope:
        graph = ops.get_default_graph()
        _, op_map, unused = _build_nodes(
            graph, graph_def._doc["nodes"], normalized, "graph", 0, scope
        )
    if unused:
        raise ValueError(
            f"Attempted to map inputs that were not found in graph_def: "
            f"[{', '.join(sorted(unused))}]"
        )
    if return_elements is None:
        return None
    out = []
    for el in return_elements:
        if not isinstance(el, str):
            raise TypeError(f"return_elements must be strings, got {el!r}")
        if ":" in el:
            src, _, idx = el.rpartition(":")
            op = op_map.get(src)
            try:
                out.append(op.outputs[int(idx)])
            except (AttributeError, ValueError, IndexError):
                raise ValueError(f"Requested return tensor '{el}' not found in graph def") from None
        else:
            op = op_map.get(el)
            if op is None:
                raise ValueError(f"Requested return operation '{el}' not found in graph def")
            out.append(op)
    return out


def write_graph(graph_or_graph_def, logdir: str, name: str, as_text: bool = True) -> str:
    """Writes a graph to ``logdir/name`` as TF's ``tf.train.write_graph`` does: TensorFlow's
    text format (``.pbtxt``, what TensorBoard and ``GraphDef.from_text`` read) or, with
    ``as_text=False``, its binary GraphDef. A graph TF cannot express is written in this
    format instead (a readable listing, or msgpack bytes)."""
    gd = (
        graph_or_graph_def
        if isinstance(graph_or_graph_def, GraphDef)
        else graph_to_def(graph_or_graph_def)
    )
    try:
        message = gd.to_tensorflow()
    except (TFFormatError, ValueError, TypeError, KeyError):
        message = None
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, name)
    tmp = path + ".tmp"
    if as_text:
        text = gd.to_text() if message is None else text_format.MessageToString(message)
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        data = gd.to_bytes() if message is None else message.SerializeToString()
        with open(tmp, "wb") as f:
            f.write(data)
    os.replace(tmp, path)
    return path
