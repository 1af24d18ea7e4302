"""TensorFlow ``GraphDef`` protobufs to the engine's graph document, and back.

A TF graph becomes the engine's own serialized-graph document (see
``engine.saving.graph_def``), which the engine then imports like any graph it wrote itself:
every op is re-created through its constructor, so dtypes and shapes are inferred and checked,
not trusted from the file. The steps, each a function:

1. ``parse_graph_def``: bytes (binary protobuf) or text (``.pbtxt``) to a ``GraphDef`` message.
2. ``inline_functions``: ``StatefulPartitionedCall``/``PartitionedCall`` nodes (TF2's
   ``tf.function`` calls) are replaced by the called ``FunctionDef``'s body, nested calls
   included; the call node becomes an ``IdentityN`` of the function's results, so
   ``call:0`` and ``^call`` keep working.
3. ``prune``: optionally keep only what some nodes need (a SavedModel's signatures).
4. ``functionalize``: TF1's dataflow control flow (``Switch``/``Merge``, ``Enter``/``Exit``/
   ``NextIteration``) becomes functional If/While (see ``functionalize.py``).
5. ``to_document``: op types and attrs translated by ``op_table``; every op type the engine
   lacks is reported at once (``UnsupportedOpsError``), never discovered on the first request.
"""

from __future__ import annotations

import msgpack
import numpy as np
from google.protobuf import message as pb_message
from google.protobuf import text_format

from engine import dtypes
from engine.formats.tensorflow import op_table
from engine.formats.tensorflow.functionalize import V1_CONTROL_OPS, WHY_ATTR, functionalize
from engine.formats.tensorflow.nodes import ARG, FunctionBody, Node
from engine.formats.tensorflow.proto import attr_value_pb2, graph_pb2
from engine.formats.tensorflow.tensors import (
    TFFormatError,
    array_from_proto,
    dtype_from_enum,
    shape_from_proto,
)
from engine.framework import registry

__all__ = [
    "UnsupportedOpsError",
    "GraphLimits",
    "parse_graph_def",
    "is_tf_graph_def_bytes",
    "inline_functions",
    "prune",
    "to_document",
    "graph_def_to_document",
    "missing_ops",
    "op_defaults_from",
    "source_node",
    "encode_array",
    "functionalize",
]

DOC_FORMAT = "flowserve.graph"
DOC_VERSION = 1


class GraphLimits:
    max_bytes = 2 << 30
    max_nodes = 1 << 20
    max_call_depth = 32
    max_list = 1 << 20


class UnsupportedOpsError(TFFormatError):
    """The graph needs op types (or attr values) the engine does not implement."""

    def __init__(self, missing: dict[str, list[str]], unsupported_attrs: list[str] = ()):
        self.missing = dict(sorted(missing.items()))
        self.unsupported_attrs = list(unsupported_attrs)
        parts = []
        if self.missing:
            listed = ", ".join(
                f"{t} ({len(names)} node{'s' if len(names) > 1 else ''}, e.g. {names[0]!r})"
                for t, names in self.missing.items()
            )
            parts.append(f"op types not implemented by flowserve: {listed}")
        if self.unsupported_attrs:
            parts.append("unsupported attr values: " + "; ".join(self.unsupported_attrs))
        super().__init__("; ".join(parts))


# -----------------------------------------------------------------------------------------
# 1. Parsing
# -----------------------------------------------------------------------------------------


def is_tf_graph_def_bytes(data: bytes) -> bool:
    """True unless ``data`` starts like a msgpack map (the engine's own graph documents)."""
    if not data:
        return True
    first = data[0]
    return not (0x80 <= first <= 0x8F or first in (0xDE, 0xDF))


def parse_graph_def(data, where: str = "graph") -> graph_pb2.GraphDef:
    """A ``GraphDef`` from binary protobuf bytes, or from text format when given a str."""
    gd = graph_pb2.GraphDef()
    if isinstance(data, str):
        if len(data) > GraphLimits.max_bytes:
            raise TFFormatError(f"{where}: text graph is over {GraphLimits.max_bytes} bytes")
        try:
            text_format.Parse(data, gd)
        except text_format.ParseError as e:
            raise TFFormatError(f"{where}: not a text GraphDef ({e})") from None
        return gd
    data = bytes(data)
    if len(data) > GraphLimits.max_bytes:
        raise TFFormatError(f"{where}: graph is {len(data)} bytes, over {GraphLimits.max_bytes}")
    try:
        gd.ParseFromString(data)
    except (pb_message.DecodeError, RecursionError, ValueError) as e:
        raise TFFormatError(f"{where}: not a valid GraphDef protobuf ({e})") from None
    return gd


# -----------------------------------------------------------------------------------------
# 2. Function inlining
# -----------------------------------------------------------------------------------------


def _output_offset(op_type: str, arg: str, where: str, attrs=None) -> int:
    """The flat output number where output arg ``arg`` starts. A list-valued arg (an
    ``(arg, attr)`` entry of ``OUTPUT_ARGS``) is as long as its number or type-list attr."""
    args = op_table.OUTPUT_ARGS.get(op_type)
    if args is None:
        return 0
    offset = 0
    for entry in args:
        name, count_attr = entry if isinstance(entry, tuple) else (entry, None)
        if name == arg:
            return offset
        if count_attr is None:
            offset += 1
            continue
        av = (attrs or {}).get(count_attr)
        if av is None:
            raise TFFormatError(f"{where}: op {op_type} lacks attr {count_attr!r}")
        offset += len(av.list.type) if av.WhichOneof("value") == "list" else int(av.i)
    raise TFFormatError(f"{where}: op {op_type} has no output arg {arg!r}")


def _inline_call(node: Node, functions, depth: int, where: str, out: list, budget=None) -> None:
    """Appends ``node``'s function body (renamed under ``node.name/``) and the IdentityN
    standing for the call to ``out``."""
    if depth > GraphLimits.max_call_depth:
        raise TFFormatError(f"{where}: function calls nested over {GraphLimits.max_call_depth}")
    f_attr = node.attrs.get("f")
    fname = f_attr.func.name if f_attr is not None else node.op
    fdef = functions.get(fname)
    if fdef is None:
        raise TFFormatError(f"{where}: node {node.name!r} calls unknown function {fname!r}")
    sig = fdef.signature
    data_inputs = [i for i in node.inputs if not i.startswith("^")]
    controls = [i for i in node.inputs if i.startswith("^")]
    for a in sig.input_arg:
        if a.number_attr or a.type_list_attr:
            raise TFFormatError(f"{where}: function {fname!r} has list argument {a.name!r}")
    if len(data_inputs) != len(sig.input_arg):
        raise TFFormatError(
            f"{where}: node {node.name!r} passes {len(data_inputs)} inputs to "
            f"{fname!r}, which takes {len(sig.input_arg)}"
        )
    args = {a.name: data_inputs[i] for i, a in enumerate(sig.input_arg)}
    body_ops = {n.name: n.op for n in fdef.node_def}
    body_attrs = {n.name: n.attr for n in fdef.node_def}
    prefix = node.name + "/"

    def resolve(ref: str) -> str:
        if ref.startswith("^"):
            inner = ref[1:]
            if inner in args:
                src = args[inner]
                return "^" + src.lstrip("^").split(":")[0]
            return "^" + prefix + inner
        parts = ref.split(":")
        if len(parts) == 1:
            if ref not in args:
                raise TFFormatError(f"{where}: function {fname!r} reads unknown input {ref!r}")
            return args[ref]
        if len(parts) != 3 or parts[0] not in body_ops:
            raise TFFormatError(f"{where}: function {fname!r} has a bad reference {ref!r}")
        try:
            idx = int(parts[2])
        except ValueError:
            raise TFFormatError(
                f"{where}: function {fname!r} has a bad reference {ref!r}"
            ) from None
        op_type = body_ops[parts[0]]
        if op_type in functions and op_type not in op_table.CALL_OPS:
            op_type = "IdentityN"
        offset = _output_offset(op_type, parts[1], where, body_attrs[parts[0]])
        return f"{prefix}{parts[0]}:{offset + idx}"

    for n in fdef.node_def:
        inputs = [resolve(i) for i in n.input]
        if not inputs and controls:
            inputs = list(controls)
        body = Node(prefix + n.name, n.op, inputs, dict(n.attr))
        for av in body.attrs.values():
            if av.WhichOneof("value") == "placeholder":
                raise TFFormatError(f"{where}: function {fname!r} is generic (attr placeholders)")
        _expand(body, functions, depth + 1, where, out, budget)
    rets = [resolve(fdef.ret[a.name]) for a in sig.output_arg]
    ctrl = ["^" + prefix + fdef.control_ret[k] for k in sorted(fdef.control_ret)]
    if rets:
        out.append(Node(node.name, "IdentityN", rets + ctrl + controls, {}))
    else:
        out.append(Node(node.name, "NoOp", ctrl + controls, {}))


# TF2's functional control flow: op type -> (engine op, its function attrs).
CONTROL_FLOW = {
    "If": ("If", ("then_branch", "else_branch")),
    "StatelessIf": ("If", ("then_branch", "else_branch")),
    "While": ("While", ("cond", "body")),
    "StatelessWhile": ("While", ("cond", "body")),
}
_ARG = ARG
_RESOURCE = 20  # DT_RESOURCE


def _function_body(fname: str, functions, depth: int, where: str, budget) -> FunctionBody:
    fdef = functions.get(fname)
    if fdef is None:
        raise TFFormatError(f"{where}: control flow calls unknown function {fname!r}")
    args = []
    for i, a in enumerate(fdef.signature.input_arg):
        if a.number_attr or a.type_list_attr or a.type_attr:
            raise TFFormatError(f"{where}: function {fname!r} has generic argument {a.name!r}")
        shape = None
        arg_attrs = fdef.arg_attr.get(i)
        if arg_attrs is not None and "_output_shapes" in arg_attrs.attr:
            shapes = arg_attrs.attr["_output_shapes"].list.shape
            if len(shapes) == 1:
                shape = shape_from_proto(shapes[0], f"{where}: function {fname!r} arg {i}")
        attrs = {"type": int(a.type), "shape": shape, "index": i}
        args.append(Node(f"arg/{a.name}", _ARG, [], attrs))
    call = Node(
        "body",
        "PartitionedCall",
        [f"{n.name}:0" for n in args],
        {"f": attr_value_pb2.AttrValue(func=attr_value_pb2.NameAttrList(name=fname))},
    )
    nodes: list[Node] = []
    _inline_call(call, functions, depth + 1, where, nodes, budget)
    n_out = len(fdef.signature.output_arg)
    outputs = [f"body:{k}" for k in range(n_out)]
    return FunctionBody(fname, args, nodes, outputs, [] if n_out else ["body"])


def _expand(node: Node, functions, depth: int, where: str, out: list, budget=None) -> None:
    """Appends ``node`` to ``out``: calls inlined, control flow with its function bodies.
    ``budget`` counts the nodes of the whole conversion, function bodies included, so that
    functions referenced many times over cannot multiply past ``GraphLimits.max_nodes``."""
    budget = budget if budget is not None else [0]
    if node.op in op_table.CALL_OPS or node.op in functions:
        _inline_call(node, functions, depth, where, out, budget)
    elif node.op in CONTROL_FLOW:
        if depth > GraphLimits.max_call_depth:
            raise TFFormatError(f"{where}: control flow nested over {GraphLimits.max_call_depth}")
        attrs = dict(node.attrs)
        for key in CONTROL_FLOW[node.op][1]:
            av = attrs.get(key)
            if av is None or av.WhichOneof("value") != "func":
                raise TFFormatError(f"{where}: node {node.name!r} ({node.op}) lacks {key!r}")
            attrs[key] = _function_body(av.func.name, functions, depth, where, budget)
        out.append(Node(node.name, node.op, node.inputs, attrs))
    else:
        out.append(node)
    budget[0] += 1
    if len(out) > GraphLimits.max_nodes or budget[0] > GraphLimits.max_nodes:
        raise TFFormatError(f"{where}: more than {GraphLimits.max_nodes} nodes after inlining")


def inline_functions(gd: graph_pb2.GraphDef, where: str = "graph") -> list[Node]:
    """The graph's nodes with every function call replaced by the function's body."""
    if len(gd.node) > GraphLimits.max_nodes:
        raise TFFormatError(f"{where}: more than {GraphLimits.max_nodes} nodes")
    functions = {f.signature.name: f for f in gd.library.function}
    out: list[Node] = []
    budget = [0]
    for n in gd.node:
        _expand(Node(n.name, n.op, list(n.input), dict(n.attr)), functions, 0, where, out, budget)
    return out


# -----------------------------------------------------------------------------------------
# 3. Pruning
# -----------------------------------------------------------------------------------------


def source_node(ref: str) -> str:
    """The node name of an input reference (``name``, ``name:i`` or ``^name``)."""
    ref = ref[1:] if ref.startswith("^") else ref
    return ref.split(":")[0]


def prune(nodes: list[Node], keep) -> list[Node]:
    """The nodes that the nodes named in ``keep`` (names or ``name:i``) depend on."""
    by_name = {n.name: n for n in nodes}
    wanted = set()
    stack = [source_node(k) for k in keep]
    while stack:
        name = stack.pop()
        if name in wanted or name not in by_name:
            continue
        wanted.add(name)
        stack.extend(source_node(i) for i in by_name[name].inputs)
    return [n for n in nodes if n.name in wanted]


# -----------------------------------------------------------------------------------------
# 4. Translation to the engine's document
# -----------------------------------------------------------------------------------------


def encode_array(arr: np.ndarray) -> dict:
    """An array as the engine document's tensor value."""
    if arr.dtype == object:
        data = msgpack.packb([bytes(v) for v in arr.reshape(-1)], use_bin_type=True)
        return {"dtype": "string", "shape": list(arr.shape), "data": data}
    name = dtypes.as_dtype(arr.dtype).name
    data = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<")).tobytes()
    return {"dtype": name, "shape": list(arr.shape), "data": data}


def _text(b: bytes):
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return b


def _shape_tag(shape, where):
    dims = shape_from_proto(shape, where)
    return ["shape", dims]


def attr_to_tagged(av: attr_value_pb2.AttrValue, where: str):
    """One AttrValue as the engine document's ``[tag, value]``."""
    kind = av.WhichOneof("value")
    if kind == "s":
        v = _text(av.s)
        return ["s", v] if isinstance(v, str) else ["B", v]
    if kind == "i":
        return ["i", int(av.i)]
    if kind == "f":
        return ["f", float(av.f)]
    if kind == "b":
        return ["b", bool(av.b)]
    if kind == "type":
        return ["dtype", dtype_from_enum(av.type, where).name]
    if kind == "shape":
        return _shape_tag(av.shape, where)
    if kind == "tensor":
        return ["tensor", encode_array(array_from_proto(av.tensor, where))]
    if kind == "list":
        lv = av.list
        total = sum(
            len(getattr(lv, f)) for f in ("s", "i", "f", "b", "type", "shape", "tensor", "func")
        )
        if total > GraphLimits.max_list:
            raise TFFormatError(f"{where}: list attr too long")
        if lv.tensor or lv.func:
            raise TFFormatError(f"{where}: list attrs of tensors or functions are not supported")
        items = (
            [["s", v] if isinstance(v, str) else ["B", v] for v in map(_text, lv.s)]
            + [["i", int(v)] for v in lv.i]
            + [["f", float(v)] for v in lv.f]
            + [["b", bool(v)] for v in lv.b]
            + [["dtype", dtype_from_enum(v, where).name] for v in lv.type]
            + [_shape_tag(s, where) for s in lv.shape]
        )
        return ["list", items]
    if kind == "func":
        raise TFFormatError(f"{where}: function attrs are only supported on call ops")
    if kind is None:
        return ["none", None]
    raise TFFormatError(f"{where}: attr placeholders are only valid inside generic functions")


def _plain(tagged):
    """The Python value of a tagged attr, to compare with a default."""
    tag, v = tagged
    if tag == "list":
        return tuple(_plain(x) for x in v)
    return v


def _engine_attrs(op_type: str) -> tuple[frozenset, frozenset]:
    """(declared, required) attr names of the engine op (its registered declaration)."""
    opdef = registry.get(op_type)
    return (
        frozenset(opdef.attr_by_name),
        frozenset(a.name for a in opdef.attrs if a.required),
    )


def _tag_plain(v):
    if isinstance(v, bool):
        return ["b", v]
    if isinstance(v, int):
        return ["i", v]
    if isinstance(v, float):
        return ["f", v]
    if isinstance(v, str):
        return ["dtype", v] if v in ("int32", "int64") else ["s", v]
    if isinstance(v, tuple):
        return ["list", [_tag_plain(x) for x in v]]
    raise TypeError(f"no tag for {v!r}")


def _plain_defaults(tagged: dict | None) -> dict:
    return {k: _plain(v) for k, v in (tagged or {}).items()}


def _tolerated(op_type: str, key: str, value, op_defaults) -> bool:
    per_op = op_table.OP_DEFAULT_ATTRS.get(op_type, {})
    if key in per_op:
        return per_op[key] is None or per_op[key] == value
    if key in op_table.DEFAULT_ATTRS:
        default = op_table.DEFAULT_ATTRS[key]
        return default is None or default == value
    if op_defaults and key in op_defaults:
        return op_defaults[key] == value
    return False


def _special(node: Node, by_name: dict[str, Node], where: str, op_defaults) -> list[dict] | None:
    """Nodes needing more than a rename: extra constant inputs or attrs from elsewhere."""
    if node.op == _ARG:
        shape = node.attrs["shape"]
        return [
            {
                "name": node.name,
                "op": "Arg",
                "inputs": [],
                "device": "",
                "attrs": {
                    "dtype": ["dtype", node.attrs["dtype"]],
                    "shape": ["none", None]
                    if shape is None
                    else ["shape", [-1 if d is None or d < 0 else d for d in shape]],
                    "index": ["i", node.attrs["index"]],
                },
            }
        ]
    if node.op in CONTROL_FLOW:
        return [_control_flow(node, by_name, where, op_defaults)]
    if node.op == "ResourceGather":
        axis = {
            "name": node.name + "/axis",
            "op": "Const",
            "inputs": [i for i in node.inputs if i.startswith("^")],
            "device": "",
            "attrs": {
                "value": ["tensor", encode_array(np.array(0, np.int32))],
                "dtype": ["dtype", "int32"],
            },
        }
        data = [i for i in node.inputs if not i.startswith("^")]
        ctrl = [i for i in node.inputs if i.startswith("^")]
        batch_dims = node.attrs.get("batch_dims")
        return [
            axis,
            {
                "name": node.name,
                "op": "GatherV2",
                "inputs": data + [axis["name"] + ":0"] + ctrl,
                "device": "",
                "attrs": {"batch_dims": ["i", int(batch_dims.i) if batch_dims else 0]},
            },
        ]
    if node.op == "VarIsInitializedOp":
        src = by_name.get(source_node(node.inputs[0])) if node.inputs else None
        dtype_attr = src.attrs.get("dtype") if src is not None else None
        if dtype_attr is None:
            raise TFFormatError(f"{where}: node {node.name!r} checks a value that is no variable")
        return [
            {
                "name": node.name,
                "op": "IsVariableInitialized",
                "inputs": list(node.inputs),
                "device": "",
                "attrs": {"dtype": ["dtype", dtype_from_enum(dtype_attr.type, where).name]},
            }
        ]
    return None


def _input_dtype(ref: str, by_name: dict[str, Node], where: str) -> str | None:
    """The engine dtype name of a reference to a resource: the variable it reaches through
    identities and function arguments (a ref dtype, as the engine's variables have)."""
    seen = 0
    while seen < 64:
        seen += 1
        src = by_name.get(source_node(ref))
        if src is None:
            return None
        if src.op == _ARG:
            return src.attrs.get("dtype")
        if src.op == "VarHandleOp" and "dtype" in src.attrs:
            return dtype_from_enum(src.attrs["dtype"].type, where).name + "_ref"
        if src.op in ("Identity", "IdentityN") and src.inputs:
            data = [i for i in src.inputs if not i.startswith("^")]
            index = int(ref.split(":")[1]) if ":" in ref and src.op == "IdentityN" else 0
            if index >= len(data):
                return None
            ref = data[index]
            continue
        return None
    return None


def _function_doc(body: FunctionBody, inputs: list[str], by_name, where, op_defaults) -> dict:
    """The engine's function document for ``body`` called with the data ``inputs``."""
    where = f"{where} function {body.name!r}"
    if len(inputs) != len(body.args):
        raise TFFormatError(f"{where}: called with {len(inputs)} inputs, takes {len(body.args)}")
    args = []
    for arg, ref in zip(body.args, inputs):
        attrs = dict(arg.attrs)
        if attrs["type"] == _RESOURCE:
            dtype = _input_dtype(ref, by_name, where)
            if dtype is None:
                raise TFFormatError(f"{where}: cannot tell which variable input {ref!r} is")
        else:
            dtype = dtype_from_enum(attrs["type"], where).name
        attrs["dtype"] = dtype
        args.append(Node(arg.name, _ARG, [], attrs))
    doc = to_document(args + body.nodes, where, op_defaults)
    return {
        "name": body.name,
        "nodes": doc["nodes"],
        "inputs": [f"{a.name}:0" for a in args],
        "outputs": list(body.outputs),
        "control_outputs": list(body.control_outputs),
    }


def _control_flow(node: Node, by_name, where: str, op_defaults=None) -> dict:
    """TF2's If/While (and Stateless forms) as the engine's If/While: their functions
    become the engine's function attrs; TF's type and shape attrs are re-inferred."""
    engine_op, keys = CONTROL_FLOW[node.op]
    data = [i for i in node.inputs if not i.startswith("^")]
    node_where = f"{where}: node {node.name!r} ({node.op})"
    if engine_op == "If":
        if not data:
            raise TFFormatError(f"{node_where} has no condition input")
        attrs = {
            k: ["func", _function_doc(node.attrs[k], data[1:], by_name, node_where, op_defaults)]
            for k in keys
        }
    else:
        attrs = {
            k: ["func", _function_doc(node.attrs[k], data, by_name, node_where, op_defaults)]
            for k in keys
        }
        pi = node.attrs.get("parallel_iterations")
        attrs["num_loop_vars"] = ["i", len(data)]
        attrs["parallel_iterations"] = ["i", int(pi.i) if pi is not None else 10]
    return {
        "name": node.name,
        "op": engine_op,
        "inputs": list(node.inputs),
        "device": "",
        "attrs": attrs,
    }


def op_defaults_from(op_list, where: str) -> dict:
    """``{op type: {attr: tagged default}}`` from a meta graph's ``stripped_op_list``."""
    out = {}
    for od in op_list.op:
        defaults = {}
        for a in od.attr:
            if a.HasField("default_value"):
                try:
                    defaults[a.name] = attr_to_tagged(a.default_value, f"{where}: op {od.name}")
                except TFFormatError:
                    continue
        out[od.name] = defaults
    return out


def to_document(nodes: list[Node], where: str = "graph", op_defaults=None) -> dict:
    """The engine's graph document for ``nodes``; ``UnsupportedOpsError`` lists every op type
    (and attr value) the engine cannot run, all at once. ``op_defaults`` (from
    ``op_defaults_from``) fills attrs TF stripped because they held their default."""
    op_defaults = op_defaults or {}
    by_name = {n.name: n for n in nodes}
    missing: dict[str, list[str]] = {}
    bad_attrs: list[str] = []
    out = []
    for n in nodes:
        try:
            special = _special(n, by_name, where, op_defaults)
        except UnsupportedOpsError as e:  # inside a function: reported with the rest
            for op_type, names in e.missing.items():
                missing.setdefault(op_type, []).extend(names)
            bad_attrs.extend(e.unsupported_attrs)
            continue
        if special is not None:
            out.extend(special)
            continue
        engine_op = op_table.RENAMES.get(n.op, n.op)
        if registry.lookup(engine_op) is None:
            missing.setdefault(n.op, []).append(n.name)
            why = n.attrs.get(WHY_ATTR) if n.op in V1_CONTROL_OPS else None
            if why is not None:
                note = f"TF1 control flow at {n.name!r} not converted: {why.s.decode()}"
                if note not in bad_attrs:
                    bad_attrs.append(note)
            continue
        accepted, required = _engine_attrs(engine_op)
        attrs = {}
        for key in sorted(n.attrs):
            if key.startswith("_") or key in op_table.DROPPED_ALWAYS:
                continue
            if key in op_table.DERIVED_ATTRS and key not in accepted:
                continue
            node_where = f"{where}: node {n.name!r} ({n.op}) attr {key!r}"
            tagged = attr_to_tagged(n.attrs[key], node_where)
            if key in accepted:
                attrs[key] = tagged
            elif not _tolerated(
                engine_op, key, _plain(tagged), _plain_defaults(op_defaults.get(n.op))
            ):
                bad_attrs.append(f"node {n.name!r} ({n.op}) has {key}={_plain(tagged)!r}")
        for key in required.difference(attrs):
            defaults = op_defaults.get(n.op, {})
            if key in defaults:
                attrs[key] = defaults[key]
            elif key in op_table.TF_DEFAULTS:
                attrs[key] = _tag_plain(op_table.TF_DEFAULTS[key])
        out.append(
            {
                "name": n.name,
                "op": engine_op,
                "inputs": list(n.inputs),
                "device": "",
                "attrs": attrs,
            }
        )
    if missing or bad_attrs:
        raise UnsupportedOpsError(missing, bad_attrs)
    return {"format": DOC_FORMAT, "version": DOC_VERSION, "nodes": out}


def missing_ops(nodes: list[Node]) -> dict[str, int]:
    """Op types (after renames) the engine lacks, with their node counts."""
    counts: dict[str, int] = {}
    for n in nodes:
        if n.op in CONTROL_FLOW:
            for key in CONTROL_FLOW[n.op][1]:
                for op_type, k in missing_ops(n.attrs[key].nodes).items():
                    counts[op_type] = counts.get(op_type, 0) + k
            continue
        if n.op in ("ResourceGather", "VarIsInitializedOp", _ARG):
            continue
        if registry.lookup(op_table.RENAMES.get(n.op, n.op)) is None:
            counts[n.op] = counts.get(n.op, 0) + 1
    return dict(sorted(counts.items()))


def graph_def_to_document(
    gd: graph_pb2.GraphDef, where: str = "graph", keep=None, op_defaults=None
) -> dict:
    """Parse-tree to engine document: inline calls, prune to ``keep`` if given, translate."""
    nodes = inline_functions(gd, where)
    if keep is not None:
        nodes = prune(nodes, keep)
    return to_document(functionalize(nodes, where), where, op_defaults)
