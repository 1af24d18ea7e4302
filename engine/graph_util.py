"""TF1's ``tf.graph_util``: freezing a trained graph for deployment.

``convert_variables_to_constants`` turns every variable the outputs need into a ``Const``
holding the session's current value and prunes the graph to what the outputs need, so the
result runs without a checkpoint::

    frozen = tf.graph_util.convert_variables_to_constants(sess, sess.graph.as_graph_def(), ["y"])
    with tf.Graph().as_default():
        tf.import_graph_def(frozen, name="")

The functions work on the engine's ``GraphDef`` (a TensorFlow ``graph_pb2.GraphDef`` given
instead is converted first); nodes keep their order, names, devices and attributes, as in
TensorFlow. Engine documents name every data input ``"node:index"`` and control inputs
``"^node"``.
"""

from __future__ import annotations

import copy

import numpy as np

from engine.formats.tensorflow.graph_def import encode_array
from engine.formats.tensorflow.proto import graph_pb2 as tf_graph_pb2
from engine.framework.graph import NodeDef, Operation
from engine.saving.graph_def import GraphDef

__all__ = [
    "convert_variables_to_constants",
    "extract_sub_graph",
    "must_run_on_cpu",
    "remove_training_nodes",
    "tensor_shape_from_node_def_name",
]

_VARIABLE_OPS = ("Variable", "VariableV2", "VarHandleOp")  # as TF names them


def _as_graph_def(graph_def, what: str = "graph_def") -> GraphDef:
    if isinstance(graph_def, tf_graph_pb2.GraphDef):
        return GraphDef.from_tensorflow(graph_def)
    if not isinstance(graph_def, GraphDef):
        raise TypeError(f"{what} must be a GraphDef, but got type {type(graph_def)}.")
    return graph_def


def _node_name(ref: str) -> str:
    return ref[1:] if ref.startswith("^") else ref.split(":")[0]


def _with_nodes(graph_def: GraphDef, nodes: list[dict]) -> GraphDef:
    doc = {k: v for k, v in graph_def._doc.items() if k != "nodes"}
    doc["nodes"] = nodes
    return GraphDef(doc)


def extract_sub_graph(graph_def, dest_nodes) -> GraphDef:
    """The nodes of ``graph_def`` that ``dest_nodes`` (node names) reach through data and
    control inputs, in their original order. AssertionError names a missing node."""
    graph_def = _as_graph_def(graph_def)
    if isinstance(dest_nodes, str):
        raise TypeError(
            f"dest_nodes must be an iterable of strings, but got type {type(dest_nodes)}."
        )
    nodes = graph_def._doc["nodes"]
    by_name = {n["name"]: n for n in nodes}
    for d in dest_nodes:
        assert d in by_name, f"{d} is not in graph"
    keep: set[str] = set()
    pending = list(dest_nodes)
    while pending:
        name = pending.pop()
        if name in keep:
            continue
        keep.add(name)
        if name in by_name:
            pending.extend(_node_name(ref) for ref in by_name[name]["inputs"])
    return _with_nodes(graph_def, [copy.deepcopy(n) for n in nodes if n["name"] in keep])


def _variables_to_freeze(nodes, whitelist, blacklist) -> list[dict]:
    out = []
    for n in nodes:
        if n["op"] not in _VARIABLE_OPS:
            continue
        if whitelist is not None and n["name"] not in whitelist:
            continue
        if blacklist is not None and n["name"] in blacklist:
            continue
        out.append(n)
    return out


def _const_node(node: dict, value: np.ndarray) -> dict:
    dtype = node["attrs"]["dtype"]
    return {
        "name": node["name"],
        "op": "Const",
        "inputs": [],
        "device": node["device"],
        "attrs": {"dtype": dtype, "value": ["tensor", encode_array(np.asarray(value))]},
    }


def convert_variables_to_constants(
    sess,
    input_graph_def,
    output_node_names,
    variable_names_whitelist=None,
    variable_names_blacklist=None,
) -> GraphDef:
    """``input_graph_def`` pruned to what ``output_node_names`` need, with each variable in
    it (``VariableV2``) replaced by a ``Const`` of its value in ``sess`` (same name, device
    and dtype). ``variable_names_whitelist`` limits the variables frozen,
    ``variable_names_blacklist`` excludes some. (A TensorFlow graph's resource variables,
    ``VarHandleOp`` + ``ReadVariableOp``, are ``VariableV2`` + ``Identity`` in the engine's
    GraphDef.)"""
    sub = extract_sub_graph(_as_graph_def(input_graph_def, "input_graph_def"), output_node_names)
    nodes = sub._doc["nodes"]
    white = None if variable_names_whitelist is None else set(variable_names_whitelist)
    black = None if variable_names_blacklist is None else set(variable_names_blacklist)
    frozen = [n["name"] for n in _variables_to_freeze(nodes, white, black)]
    values = dict(zip(frozen, sess.run([f"{name}:0" for name in frozen]))) if frozen else {}
    out = [_const_node(n, values[n["name"]]) if n["name"] in values else n for n in nodes]
    return _with_nodes(sub, out)


def remove_training_nodes(input_graph, protected_nodes=None) -> GraphDef:
    """``input_graph`` without ``CheckNumerics`` nodes and with ``Identity``/``StopGradient``
    nodes spliced out (their consumers read their input), except nodes in
    ``protected_nodes`` and nodes with or used as control inputs, as TensorFlow does."""
    graph = _as_graph_def(input_graph, "input_graph")
    protected = set(protected_nodes or ())
    nodes = graph._doc["nodes"]
    removed = {
        n["name"] for n in nodes if n["op"] == "CheckNumerics" and n["name"] not in protected
    }
    kept = []
    for n in nodes:
        if n["name"] in removed:
            continue
        m = copy.deepcopy(n)
        m["inputs"] = [ref for ref in n["inputs"] if _node_name(ref) not in removed]
        kept.append(m)
    control_sources = {ref[1:] for n in kept for ref in n["inputs"] if ref.startswith("^")}
    with_control = {n["name"] for n in kept if any(r.startswith("^") for r in n["inputs"])}
    splice = {
        n["name"]: n["inputs"][0]
        for n in kept
        if n["op"] in ("Identity", "StopGradient")
        and n["name"] not in protected
        and n["name"] not in with_control
        and n["name"] not in control_sources
        and n["inputs"]
    }
    for n in kept:
        n["inputs"] = [_spliced(ref, splice) for ref in n["inputs"]]
    return _with_nodes(graph, [n for n in kept if n["name"] not in splice])


def _spliced(ref: str, splice: dict[str, str]) -> str:
    """``ref`` followed through spliced-out nodes to the tensor it really reads."""
    while not ref.startswith("^") and ref.split(":")[0] in splice and ref.endswith(":0"):
        ref = splice[ref.split(":")[0]]
    return ref


def must_run_on_cpu(node, pin_variables_on_cpu=False) -> bool:
    """Whether TensorFlow pins ``node`` (an Operation or NodeDef) to the CPU: int32/string
    constants, int32 ``DynamicStitch``/``Cast``, and variables with
    ``pin_variables_on_cpu``."""
    node_def = node.node_def if isinstance(node, Operation) else node
    if not isinstance(node_def, NodeDef):
        raise TypeError(f"node must be an Operation or a NodeDef, got {type(node).__name__}")
    if pin_variables_on_cpu and node_def.op in (*_VARIABLE_OPS, "AutoReloadVariable"):
        return True
    attr = {"Const": "dtype", "DynamicStitch": "T", "ParallelDynamicStitch": "T", "Cast": "SrcT"}
    key = attr.get(node_def.op)
    if key is None:
        return False
    dtype = node_def.attr.get(key)
    if dtype is None and isinstance(node, Operation):
        # The engine derives type attrs from the tensors instead of storing them.
        dtype = (node.inputs[0] if node_def.op == "Cast" else node.outputs[0]).dtype
    dtype = getattr(dtype, "name", dtype)
    return dtype == "int32" or (node_def.op == "Const" and dtype == "string")


def tensor_shape_from_node_def_name(graph, input_name):
    """The static shape of tensor ``input_name`` (``"node"`` means ``"node:0"``) of
    ``graph``."""
    name = input_name if ":" in input_name else input_name + ":0"
    return graph.get_tensor_by_name(name).get_shape()
