"""TensorFlow ``MetaGraphDef``s (SavedModel meta graphs, ``.meta`` files) to the engine's.

The graph is translated by ``graph_def``; this module adds what a meta graph carries
around it, each step a function:

- ``restore_keys``: reads the graph's saver to learn which checkpoint key restores which
  variable, as TF does when it runs the saver's restore op: every ``RestoreV2`` node's
  ``tensor_names`` constant, each output followed (through ``Identity``) to the
  ``Assign``/``AssignVariableOp`` that stores it into a variable. TF1 savers have these nodes
  in the graph; TF2 SavedModels have them in the restore function, inlined first.
- ``saver_nodes``: the saver's own subgraph (save/restore ops and what depends on them). The
  loader restores from the checkpoint itself with the keys above, so the saver is not
  imported.
- ``convert_meta_graph``: variables (from the ``variables`` collections' ``VariableDef``s),
  signatures (``TensorInfo`` names, dtypes, shapes), init ops (``main_op``,
  ``legacy_init_op``, TF2's ``__saved_model_init_op``) and assets (the asset tensors become
  constants holding the file's path in this export directory).
"""

from __future__ import annotations

import os

import numpy as np
from google.protobuf import message as pb_message

from engine.formats.tensorflow import graph_def as tfg
from engine.formats.tensorflow import op_table
from engine.formats.tensorflow.proto import (
    attr_value_pb2,
    meta_graph_pb2,
    types_pb2,
    variable_pb2,
)
from engine.formats.tensorflow.tensors import (
    TFFormatError,
    array_from_proto,
    array_to_proto,
    dtype_from_enum,
    shape_from_proto,
)

__all__ = [
    "ConvertedMetaGraph",
    "restore_keys",
    "saver_nodes",
    "convert_meta_graph",
    "INIT_OP_SIGNATURE_KEY",
]

INIT_OP_SIGNATURE_KEY = "__saved_model_init_op"
_ASSIGN_OPS = frozenset(["Assign", "AssignVariableOp"])
_PASS_THROUGH = frozenset(["Identity", "IdentityN", "Snapshot"])


class ConvertedMetaGraph:
    """What the engine needs from one TF meta graph."""

    def __init__(self):
        self.document: dict = {}
        self.tags: list[str] = []
        self.signatures: dict[str, dict] = {}
        self.variables: list[dict] = []
        self.restore_keys: dict[str, str] = {}
        self.init_op: str | None = None
        self.collections: dict[str, list[str]] = {}
        self.assets: list[str] = []


def _const_value(node: tfg.Node, by_name, where):
    seen = 0
    while node.op in _PASS_THROUGH and node.inputs and seen < 64:
        node = by_name.get(tfg.source_node(node.inputs[0]))
        seen += 1
        if node is None:
            return None
    if node.op != "Const" or "value" not in node.attrs:
        return None
    return array_from_proto(node.attrs["value"].tensor, where)


def _consumers(nodes):
    out: dict[str, list[tuple[tfg.Node, int]]] = {}
    for n in nodes:
        for pos, ref in enumerate(n.inputs):
            if not ref.startswith("^"):
                out.setdefault(ref if ":" in ref else ref + ":0", []).append((n, pos))
    return out


def _variable_of(ref: str, by_name) -> str | None:
    """The variable node a handle/ref tensor comes from, through pass-through ops."""
    for _ in range(64):
        node = by_name.get(tfg.source_node(ref))
        if node is None:
            return None
        if node.op in ("VarHandleOp", "VariableV2"):
            return node.name
        if node.op not in _PASS_THROUGH or not node.inputs:
            return None
        idx = ref.split(":")[1] if ":" in ref else "0"
        ref = node.inputs[int(idx)] if node.op == "IdentityN" else node.inputs[0]
    return None


def restore_keys(nodes: list[tfg.Node], where: str) -> dict[str, str]:
    """``{variable node name: checkpoint key}`` as the graph's RestoreV2 ops assign them."""
    by_name = {n.name: n for n in nodes}
    consumers = _consumers(nodes)
    keys: dict[str, str] = {}
    for n in nodes:
        if n.op != "RestoreV2" or len(n.inputs) < 2:
            continue
        names = _const_value(by_name.get(tfg.source_node(n.inputs[1])), by_name, where)
        if names is None:
            raise TFFormatError(f"{where}: RestoreV2 {n.name!r} has no constant tensor names")
        for i, key in enumerate(names.reshape(-1)):
            frontier = [f"{n.name}:{i}"]
            for _ in range(64):
                nxt = []
                for ref in frontier:
                    for c, pos in consumers.get(ref, []):
                        if c.op in _ASSIGN_OPS and pos == 1:
                            var = _variable_of(c.inputs[0], by_name)
                            if var is not None:
                                keys[var] = key.decode("utf-8")
                        elif c.op in _PASS_THROUGH:
                            nxt.append(f"{c.name}:{pos if c.op == 'IdentityN' else 0}")
                frontier = nxt
                if not frontier:
                    break
    return keys


def saver_nodes(nodes: list[tfg.Node]) -> set[str]:
    """Names of the saver ops and of every node that depends on one."""
    dependents: dict[str, list[str]] = {}
    for n in nodes:
        for ref in n.inputs:
            dependents.setdefault(tfg.source_node(ref), []).append(n.name)
    out: set[str] = set()
    stack = [n.name for n in nodes if n.op in op_table.SAVER_OPS]
    while stack:
        name = stack.pop()
        if name in out:
            continue
        out.add(name)
        stack.extend(dependents.get(name, []))
    return out


def _node_names(col: meta_graph_pb2.CollectionDef) -> list[str]:
    return list(col.node_list.value) if col.WhichOneof("kind") == "node_list" else []


def _variables(mg, where) -> list[dict]:
    records, seen = [], set()
    trainable = set()
    for key in ("trainable_variables",):
        col = mg.collection_def.get(key)
        if col is not None and col.WhichOneof("kind") == "bytes_list":
            for raw in col.bytes_list.value:
                try:
                    trainable.add(variable_pb2.VariableDef.FromString(raw).variable_name)
                except pb_message.DecodeError:
                    raise TFFormatError(f"{where}: bad VariableDef in {key}") from None
    for key, local in (("variables", False), ("local_variables", True)):
        col = mg.collection_def.get(key)
        if col is None or col.WhichOneof("kind") != "bytes_list":
            continue
        for raw in col.bytes_list.value:
            try:
                vd = variable_pb2.VariableDef.FromString(raw)
            except pb_message.DecodeError:
                raise TFFormatError(f"{where}: bad VariableDef in {key}") from None
            name = vd.variable_name.split(":")[0]
            if name in seen or not (vd.initializer_name and vd.snapshot_name):
                continue
            seen.add(name)
            records.append(
                {
                    "name": name,
                    "initializer": vd.initializer_name,
                    "snapshot": vd.snapshot_name,
                    "initial_value": vd.initial_value_name or vd.snapshot_name,
                    "trainable": vd.variable_name in trainable,
                    "local": local,
                }
            )
    return records


def _tensor_info(info: meta_graph_pb2.TensorInfo, where: str) -> dict:
    if info.WhichOneof("encoding") != "name":
        raise TFFormatError(f"{where}: sparse and composite signature tensors are not supported")
    dtype = dtype_from_enum(info.dtype, where)
    dims = shape_from_proto(info.tensor_shape, where) if info.HasField("tensor_shape") else None
    return {"name": info.name, "dtype": dtype.name, "shape": dims}


def _init_op(mg) -> str | None:
    for key in ("saved_model_main_op", "legacy_init_op"):
        col = mg.collection_def.get(key)
        names = _node_names(col) if col is not None else []
        if names:
            return names[0]
    sig = mg.signature_def.get(INIT_OP_SIGNATURE_KEY)
    if sig is not None:
        for info in sig.outputs.values():
            return info.name.split(":")[0]
    return None


def _asset_file_defs(mg, where) -> list:
    """TF2 keeps asset files in ``asset_file_def``; TF1's Builder in the ``saved_model_assets``
    collection, as ``Any``-wrapped ``AssetFileDef``s."""
    out = list(mg.asset_file_def)
    col = mg.collection_def.get("saved_model_assets")
    if col is not None and col.WhichOneof("kind") == "any_list":
        for any_value in col.any_list.value:
            if not any_value.type_url.endswith("AssetFileDef"):
                continue
            try:
                out.append(meta_graph_pb2.AssetFileDef.FromString(any_value.value))
            except pb_message.DecodeError:
                raise TFFormatError(f"{where}: bad AssetFileDef in saved_model_assets") from None
    return out


def _bind_assets(nodes, mg, export_dir, where) -> list[tfg.Node]:
    """Asset tensors become constants holding the asset's path under ``export_dir``."""
    assets = _asset_file_defs(mg, where)
    if not assets:
        return nodes
    paths = {}
    for a in assets:
        name = os.path.basename(a.filename)
        if name != a.filename or name in ("", ".", ".."):
            raise TFFormatError(f"{where}: asset file name {a.filename!r} is not a plain name")
        paths[tfg.source_node(a.tensor_info.name)] = os.path.join(export_dir, "assets", name)
    out = []
    for n in nodes:
        if n.name in paths:
            value = attr_value_pb2.AttrValue(
                tensor=array_to_proto(np.array(paths[n.name].encode("utf-8"), dtype=object))
            )
            n = tfg.Node(
                n.name,
                "Const",
                [i for i in n.inputs if i.startswith("^")],
                {"value": value, "dtype": attr_value_pb2.AttrValue(type=types_pb2.DT_STRING)},
            )
        out.append(n)
    return out


def convert_meta_graph(
    mg: meta_graph_pb2.MetaGraphDef, where: str, export_dir: str | None = None, prune=False
) -> ConvertedMetaGraph:
    """The engine's view of ``mg``. With ``prune``, only what the signatures, the init op and
    the variables need is kept (so unused training or summary ops need no kernel)."""
    out = ConvertedMetaGraph()
    out.tags = list(mg.meta_info_def.tags)
    nodes = tfg.inline_functions(mg.graph_def, where)
    out.restore_keys = restore_keys(nodes, where)
    dropped = saver_nodes(nodes)
    nodes = [n for n in nodes if n.name not in dropped]
    if export_dir is not None:
        nodes = _bind_assets(nodes, mg, export_dir, where)
    out.variables = [v for v in _variables(mg, where) if v["name"] not in dropped]
    out.init_op = _init_op(mg)
    for key, sig in mg.signature_def.items():
        if key == INIT_OP_SIGNATURE_KEY:
            continue
        out.signatures[key] = {
            "method_name": sig.method_name,
            "inputs": {
                a: _tensor_info(i, f"{where} signature {key!r}") for a, i in sig.inputs.items()
            },
            "outputs": {
                a: _tensor_info(i, f"{where} signature {key!r}") for a, i in sig.outputs.items()
            },
        }
    names = {n.name for n in nodes}
    for key, col in mg.collection_def.items():
        kept = [v for v in _node_names(col) if tfg.source_node(v) in names]
        if kept:
            out.collections[key] = kept
    if prune:
        keep = [i["name"] for s in out.signatures.values() for i in s["inputs"].values()]
        keep += [i["name"] for s in out.signatures.values() for i in s["outputs"].values()]
        keep += [out.init_op] if out.init_op else []
        keep += list(out.restore_keys)
        for v in out.variables:
            keep += [v["name"], v["initializer"], v["snapshot"], v["initial_value"]]
        keep += out.collections.get("table_initializer", [])
        nodes = tfg.prune(nodes, keep)
        names = {n.name for n in nodes}
        out.collections = {
            k: [v for v in vs if tfg.source_node(v) in names] for k, vs in out.collections.items()
        }
    op_defaults = tfg.op_defaults_from(mg.meta_info_def.stripped_op_list, where)
    nodes = tfg.functionalize(nodes, where)
    out.document = tfg.to_document(nodes, where, op_defaults)
    _add_variable_records(out, nodes, where)
    return out


def _add_variable_records(out: ConvertedMetaGraph, nodes, where: str) -> None:
    """TF2 graphs have variables (``VarHandleOp``) but no ``VariableDef``s: give each one the
    engine needs to treat it as a Variable (a zeros initializer and a read), so re-exporting
    and ``tf.global_variables()`` see it. Its value still comes from the checkpoint."""
    have = {r["name"] for r in out.variables}
    by_name = {n.name: n for n in nodes}
    names = {d["name"] for d in out.document["nodes"]}
    extra = []
    for var in out.restore_keys:
        node = by_name.get(var)
        if var in have or node is None or node.op not in ("VarHandleOp", "VariableV2"):
            continue
        dims = shape_from_proto(node.attrs["shape"].shape, where) if "shape" in node.attrs else None
        if dims is None or any(d < 0 for d in dims):
            continue
        dtype = dtype_from_enum(node.attrs["dtype"].type, where)
        base = f"{var}/flowserve"
        if any(n.startswith(base) for n in names):
            continue
        shape_const = tfg.encode_array(np.array(dims, np.int64))
        zero = tfg.encode_array(np.zeros((), dtype.np))
        extra += [
            _doc_node(
                f"{base}/shape",
                "Const",
                [],
                value=["tensor", shape_const],
                dtype=["dtype", "int64"],
            ),
            _doc_node(
                f"{base}/zero", "Const", [], value=["tensor", zero], dtype=["dtype", dtype.name]
            ),
            _doc_node(f"{base}/initial_value", "Fill", [f"{base}/shape:0", f"{base}/zero:0"]),
            _doc_node(
                f"{base}/Assign",
                "Assign",
                [f"{var}:0", f"{base}/initial_value:0"],
                validate_shape=["b", True],
                use_locking=["b", False],
            ),
            _doc_node(f"{base}/read", "Identity", [f"{var}:0"]),
        ]
        out.variables.append(
            {
                "name": var,
                "initializer": f"{base}/Assign",
                "snapshot": f"{base}/read:0",
                "initial_value": f"{base}/initial_value:0",
                "trainable": True,
                "local": False,
            }
        )
    out.document["nodes"].extend(extra)


def _doc_node(name, op_type, inputs, **attrs) -> dict:
    return {"name": name, "op": op_type, "inputs": inputs, "device": "", "attrs": attrs}
