"""ONNX model -> engine Graph + signature.

``import_model`` reads the file with our own wire codec (``proto.py``), checks every operator
against the mapping table first (so an unsupported model fails at load naming *all* its
unsupported operators), then converts node by node in the file's (topological) order.
Initializers become constants, or variables with ``initializers_as_variables=True``.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from engine import dtypes
from engine.formats.onnx import _tf as tf
from engine.formats.onnx import mapping_detection as _detection  # noqa: F401 - table rows
from engine.formats.onnx import mapping_misc as _misc  # noqa: F401 - registers table rows
from engine.formats.onnx import mapping_ml as _ml  # noqa: F401 - registers ai.onnx.ml rows
from engine.formats.onnx import mapping_ml_svm as _ml_svm  # noqa: F401 - and its SVMs
from engine.formats.onnx import mapping_ml_trees as _ml_trees  # noqa: F401 - and its trees
from engine.formats.onnx import mapping_more as _more  # noqa: F401 - registers table rows
from engine.formats.onnx import mapping_ms as _ms  # noqa: F401 - registers com.microsoft rows
from engine.formats.onnx import mapping_ms_quant as _ms_quant  # noqa: F401 - and its quantized ones
from engine.formats.onnx import mapping_quant as _quant  # noqa: F401 - registers table rows
from engine.formats.onnx import mapping_rnn as _rnn  # noqa: F401 - registers table rows
from engine.formats.onnx import mapping_signal as _signal  # noqa: F401 - registers table rows
from engine.formats.onnx import mapping_text as _text  # noqa: F401 - and the text ops
from engine.formats.onnx import mapping_vision as _vision  # noqa: F401 - registers table rows
from engine.formats.onnx import ops as _onnx_ops  # noqa: F401 - registers the ONNX op family
from engine.formats.onnx import ops_more as _onnx_ops_more  # noqa: F401 - and the rest of it
from engine.formats.onnx.functions import inline_functions
from engine.formats.onnx.mapping import UnsupportedModelError, converter_for
from engine.formats.onnx.proto import ATTR_GRAPH, ATTR_GRAPHS, ProtoError, decode
from engine.formats.onnx.tensors import (
    OnnxFormatError,
    array_to_tensor,
    engine_dtype,
    tensor_to_array,
)
from engine.framework.graph import Graph, Tensor
from engine.framework.tensor_util import constant_value
from engine.saving.meta_graph import SignatureDef, TensorInfo
from engine.tensor_shape import TensorShape, unknown_shape

__all__ = [
    "MAX_MODEL_BYTES",
    "OnnxModel",
    "ModelSummary",
    "import_model",
    "read_model",
    "summarize",
]

# Any opset reads: operators of older opsets import when the table has their version (rows
# start at each operator's real first since_version); the rest are reported as unsupported.
MAX_MODEL_BYTES = 2 << 30  # protobuf's own limit for one message
MAX_NODES = 1_000_000
_DEFAULT_DOMAINS = ("", "ai.onnx")
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.\-/]")


@dataclass
class OnnxModel:
    """An imported model: its graph, its serving signature and what the file said."""

    graph: Graph
    signature: SignatureDef
    opset: int
    ir_version: int
    producer: str
    # Initializer variables (``initializers_as_variables=True``): run ``initializer`` once.
    initializer: object | None = None
    op_histogram: dict[str, int] = field(default_factory=dict)


@dataclass
class ModelSummary:
    """What ``python -m engine inspect`` shows about a model.onnx without importing it."""

    ir_version: int
    opset: int
    producer: str
    inputs: list[tuple[str, str, list]]
    outputs: list[tuple[str, str, list]]
    op_histogram: dict[str, int]
    unsupported: dict[str, int]
    initializer_bytes: int


def read_model(path_or_bytes) -> tuple[dict, str | None]:
    """Decodes a model (path or bytes); returns the ModelProto dict and its directory."""
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        data, model_dir = bytes(path_or_bytes), None
    else:
        path = os.fspath(path_or_bytes)
        if os.path.isdir(path):
            path = os.path.join(path, "model.onnx")
        try:
            size = os.path.getsize(path)
            if size > MAX_MODEL_BYTES:
                raise OnnxFormatError(f"{path}: {size} bytes is more than the 2 GiB limit")
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise OnnxFormatError(f"cannot read ONNX model {path}: {e.strerror}") from None
        model_dir = os.path.dirname(os.path.abspath(path))
    if not data:
        raise OnnxFormatError("empty ONNX model")
    try:
        model = decode(data, "ModelProto")
    except ProtoError as e:
        raise OnnxFormatError(f"damaged ONNX model: {e}") from None
    if "graph" not in model:
        raise OnnxFormatError("not an ONNX model: no graph")
    if len(model["graph"].get("node", [])) > MAX_NODES:
        raise OnnxFormatError(f"model has more than {MAX_NODES} nodes")
    inline_functions(model)
    return model, model_dir


def _domain(node_or_opset: dict) -> str:
    domain = node_or_opset.get("domain", "")
    return "" if domain in _DEFAULT_DOMAINS else domain


def _opsets(model: dict) -> dict[str, int]:
    """Each imported domain's opset version, the default domain ("ai.onnx" too) as ""."""
    out: dict[str, int] = {}
    for o in model.get("opset_import", []):
        out.setdefault(_domain(o), int(o.get("version", 0)))
    if not out and model.get("ir_version", 0) < 3:
        out[""] = 1
    return out


def _opset(model: dict) -> int:
    # Without a default-domain import (e.g. only ai.onnx.ml), default-domain nodes are
    # reported as unsupported.
    return _opsets(model).get("", 0)


def _node_opset(node: dict, opsets: dict[str, int]) -> int:
    domain = _domain(node)
    # Nodes inlined from a model-local function carry that function's (default) opset.
    return opsets.get(domain, 0) if domain else node.get("_opset", opsets.get("", 0))


def _unsupported(graph: dict, opsets: dict[str, int], found: Counter) -> None:
    for node in graph.get("node", []):
        domain = _domain(node)
        op_type = node.get("op_type", "")
        if converter_for(op_type, _node_opset(node, opsets), domain) is None:
            found[f"{domain}.{op_type}" if domain else op_type] += 1
        for attr in node.get("attribute", []):
            if "g" in attr:
                _unsupported(attr["g"], opsets, found)


def unsupported_ops(model: dict) -> dict[str, int]:
    found: Counter = Counter()
    _unsupported(model["graph"], _opsets(model), found)
    return dict(sorted(found.items()))


def _value_infos(infos: list, maps_ok: bool = False) -> list[tuple[str, int | None, list | None]]:
    out = []
    for vi in infos:
        ttype = vi.get("type", {}).get("tensor_type")
        name = vi.get("name", "")
        if ttype is None:
            # ZipMap's sequence of maps is served as its probability tensor (mapping_ml.py).
            if vi.get("type") and not (maps_ok and "sequence_type" in vi["type"]):
                raise UnsupportedModelError(
                    f"graph input/output {name!r} is not a tensor (sequences, maps and "
                    "optionals are not supported)"
                )
            out.append((name, None, None))
            continue
        shape = None
        if "shape" in ttype:
            shape = [
                int(d["dim_value"]) if "dim_value" in d and d["dim_value"] >= 0 else None
                for d in ttype["shape"].get("dim", [])
            ]
        out.append((name, ttype.get("elem_type"), shape))
    return out


def _type_name(elem_type) -> str:
    if elem_type is None:  # a ZipMap's sequence of maps, imported as its float32 tensor
        return "float32 (ZipMap probabilities)"
    try:
        return engine_dtype(elem_type, "").name
    except OnnxFormatError as e:
        return str(e).split(": ")[-1]


def summarize(path_or_bytes) -> ModelSummary:
    model, model_dir = read_model(path_or_bytes)
    graph = model["graph"]
    inits = {t.get("name") for t in graph.get("initializer", [])}
    nbytes = sum(len(t.get("raw_data", b"")) for t in graph.get("initializer", []))
    hist = Counter(n.get("op_type", "") for n in graph.get("node", []))
    return ModelSummary(
        ir_version=int(model.get("ir_version", 0)),
        opset=_opset(model),
        producer=" ".join(
            x for x in (model.get("producer_name"), model.get("producer_version")) if x
        ),
        inputs=[
            (n, _type_name(t), s)
            for n, t, s in _value_infos(graph.get("input", []))
            if n not in inits
        ],
        outputs=[
            (n, _type_name(t), s) for n, t, s in _value_infos(graph.get("output", []), maps_ok=True)
        ],
        op_histogram=dict(hist.most_common()),
        unsupported=unsupported_ops(model),
        initializer_bytes=nbytes,
    )


class _Context:
    """What converters see: the values built so far and the node's attributes."""

    def __init__(
        self, opset: int, model_dir: str | None, parent: _Context | None = None, opsets=None
    ):
        self.opset = opset
        # Per-domain opset versions ("" the default domain); subgraphs share their parent's.
        self.opsets = opsets or (parent.opsets if parent is not None else {"": opset})
        self.model_dir = model_dir
        self.parent = parent
        self.values: dict[str, Tensor] = {}
        self.known: dict[str, np.ndarray] = {}
        self.depth = 0 if parent is None else parent.depth + 1

    # -- inputs ---------------------------------------------------------------------------
    def input(self, node: dict, i: int) -> Tensor:
        names = node.get("input", [])
        if i >= len(names) or not names[i]:
            raise UnsupportedModelError(
                f"{node.get('op_type')} node {node.get('name', '')!r} is missing input {i}"
            )
        return self.value(names[i])

    def optional(self, node: dict, i: int) -> Tensor | None:
        names = node.get("input", [])
        if i >= len(names) or not names[i]:
            return None
        return self.value(names[i])

    def value(self, name: str) -> Tensor:
        scope = self
        while scope is not None:
            if name in scope.values:
                return scope.values[name]
            scope = scope.parent
        if True:
            raise OnnxFormatError(
                f"value {name!r} is used before it is produced (the graph is not in "
                "topological order, or the name is undefined)"
            ) from None

    def const(self, node: dict, i: int) -> np.ndarray | None:
        names = node.get("input", [])
        if i >= len(names) or not names[i]:
            return None
        name = names[i]
        scope = self
        while scope is not None:
            if name in scope.values:
                if name in scope.known:
                    return scope.known[name]
                break
            scope = scope.parent
        v = constant_value(self.value(name))
        return None if v is None else np.asarray(v)

    def ints(self, node: dict, i: int, what: str) -> list[int]:
        v = self.const(node, i)
        if v is None:
            raise UnsupportedModelError(
                f"{node.get('op_type')} with a computed (non-constant) {what} input"
            )
        return [int(a) for a in np.asarray(v).reshape(-1)]

    def rank(self, x: Tensor, node: dict) -> int:
        if x.shape.ndims is None:
            raise UnsupportedModelError(
                f"{node.get('op_type')} node {node.get('name', '')!r} needs its input's rank"
            )
        return x.shape.ndims

    def opset_of(self, node: dict) -> int:
        return _node_opset(node, self.opsets)

    def constant(self, array: np.ndarray, name: str) -> Tensor:
        t = tf.constant(array, name=_op_name(name))
        self.known[name] = array
        return t

    # -- attributes -----------------------------------------------------------------------
    def attr(self, node: dict, name: str, default=...):
        attrs = node.get("_attrs")
        if attrs is None:
            attrs = node["_attrs"] = self._read_attrs(node)
        if name in attrs:
            return attrs[name]
        if default is ...:
            raise UnsupportedModelError(
                f"{node.get('op_type')} node {node.get('name', '')!r} lacks attribute {name!r}"
            )
        return default

    def _read_attrs(self, node: dict) -> dict:
        out = {}
        for a in node.get("attribute", []):
            if "ref_attr_name" in a:
                raise UnsupportedModelError("attribute references (functions) are not supported")
            out[a.get("name", "")] = self._attr_value(a)
        return out

    def _attr_value(self, a: dict):
        kind = a.get("type", 0)
        if kind == 1 or (not kind and "f" in a):
            return float(a.get("f", 0.0))
        if kind == 2 or (not kind and "i" in a):
            return int(a.get("i", 0))
        if kind == 3 or (not kind and "s" in a):
            raw = bytes(a.get("s", b""))
            try:
                return raw.decode("utf-8")
            except UnicodeDecodeError:
                return raw
        if kind == 4 or (not kind and "t" in a):
            return tensor_to_array(a["t"], self.model_dir)
        if kind == 6:
            return [float(v) for v in a.get("floats", [])]
        if kind == 7:
            return [int(v) for v in a.get("ints", [])]
        if kind == 8:
            return [bytes(s).decode("utf-8", "replace") for s in a.get("strings", [])]
        if kind == 9:
            return [tensor_to_array(t, self.model_dir) for t in a.get("tensors", [])]
        if kind == ATTR_GRAPH:
            return a.get("g", {})
        if kind == ATTR_GRAPHS:
            raise UnsupportedModelError("graph-list attributes are not supported")
        return None

    # -- subgraphs (If, Loop) ---------------------------------------------------------------
    def subgraph(self, g: dict, inputs: list[Tensor]) -> list[Tensor]:
        """Builds subgraph ``g`` in the current (function) graph: its inputs bound to
        ``inputs``, names it does not define looked up in the enclosing graphs."""
        if self.depth >= 16:
            raise UnsupportedModelError("subgraphs nested deeper than 16")
        child = _Context(self.opset, self.model_dir, parent=self)
        declared = g.get("input", [])
        if len(declared) != len(inputs):
            raise OnnxFormatError(
                f"subgraph {g.get('name', '')!r} declares {len(declared)} inputs, "
                f"gets {len(inputs)}"
            )
        for vi, t in zip(declared, inputs):
            child.values[vi.get("name", "")] = t
        for t in g.get("initializer", []):
            child.values[t.get("name", "")] = child.constant(
                tensor_to_array(t, self.model_dir), t.get("name", "")
            )
        for node in g.get("node", []):
            _convert_node(child, node)
        return [child.value(o.get("name", "")) for o in g.get("output", [])]


def _op_name(name: str) -> str:
    clean = _NAME_CHARS.sub("_", name).lstrip("_-/") or "value"
    if not clean[0].isalnum() and clean[0] != ".":
        clean = "v" + clean
    return clean


def _declared_shape(shape: list | None) -> TensorShape:
    return unknown_shape() if shape is None else TensorShape(shape)


def import_model(
    path_or_bytes, *, initializers_as_variables: bool = False, graph: Graph | None = None
) -> OnnxModel:
    """Imports an ONNX model (a path, a directory holding ``model.onnx``, or bytes).

    Returns an :class:`OnnxModel` whose ``signature`` names inputs and outputs by their ONNX
    names. Raises ``UnsupportedModelError`` naming every unsupported operator at once, and
    ``OnnxFormatError`` for damaged files.

    >>> m = engine.onnx.import_model("model.onnx")
    >>> with tf.Session(graph=m.graph) as sess:
    ...     sess.run(m.signature.outputs["y"].name, {m.signature.inputs["x"].name: x})
    """
    model, model_dir = read_model(path_or_bytes)
    opsets = _opsets(model)
    found: Counter = Counter()
    _unsupported(model["graph"], opsets, found)
    if found:
        listed = ", ".join(f"{k} (x{v})" if v > 1 else k for k, v in sorted(found.items()))
        raise UnsupportedModelError(f"model uses {len(found)} unsupported operator(s): {listed}")
    graph = graph if graph is not None else Graph()
    with graph.as_default():
        return _build(model, model_dir, opsets, graph, initializers_as_variables)


def _fold_batch_norms(g: dict, model_dir) -> None:
    """Folds inference BatchNormalization into the Conv feeding it (constant weights, the
    Conv's output used by nothing else): one op instead of five per layer, as onnxruntime
    does. Values change only by float rounding."""
    inits = {t.get("name"): t for t in g.get("initializer", [])}
    uses: Counter = Counter(i for n in g.get("node", []) for i in n.get("input", []) if i)
    uses.update(o.get("name") for o in g.get("output", []))
    producers = {o: n for n in g.get("node", []) for o in n.get("output", [])}
    dropped = set()
    for bn in g.get("node", []):
        if bn.get("op_type") != "BatchNormalization" or bn.get("domain", "") not in ("", "ai.onnx"):
            continue
        ins, outs = bn.get("input", []), bn.get("output", [])
        conv = producers.get(ins[0]) if ins else None
        if (
            conv is None
            or conv.get("op_type") != "Conv"
            or len(ins) != 5
            or not all(i in inits for i in ins[1:])
            or len([o for o in outs if o]) != 1
            or uses[ins[0]] != 1
            or len(conv.get("input", [])) < 2
            or conv["input"][1] not in inits
            or any(a.get("name") == "training_mode" and a.get("i") for a in bn.get("attribute", []))
        ):
            continue
        eps = next(
            (a.get("f", 1e-5) for a in bn.get("attribute", []) if a.get("name") == "epsilon"), 1e-5
        )
        w = tensor_to_array(inits[conv["input"][1]], model_dir)
        scale, beta, mean, var = (tensor_to_array(inits[i], model_dir) for i in ins[1:])
        if w.dtype.kind != "f" or w.shape[:1] != scale.shape:
            continue
        factor = scale.astype(np.float64) / np.sqrt(var.astype(np.float64) + eps)
        bias = np.zeros(w.shape[0]) if len(conv["input"]) < 3 or not conv["input"][2] else None
        if bias is None:
            if conv["input"][2] not in inits:
                continue
            bias = tensor_to_array(inits[conv["input"][2]], model_dir).astype(np.float64)
        new_w = (w * factor.reshape((-1,) + (1,) * (w.ndim - 1))).astype(w.dtype)
        new_b = ((bias - mean) * factor + beta).astype(w.dtype)
        wname, bname = f"{outs[0]}__folded_w", f"{outs[0]}__folded_b"
        g["initializer"] += [array_to_tensor(new_w, wname), array_to_tensor(new_b, bname)]
        conv["input"] = [conv["input"][0], wname, bname]
        conv["output"] = [outs[0]]
        dropped.add(id(bn))
    if dropped:
        g["node"] = [n for n in g["node"] if id(n) not in dropped]


def _build(model, model_dir, opsets, graph, as_variables) -> OnnxModel:
    g = model["graph"]
    _fold_batch_norms(g, model_dir)
    opset = opsets.get("", 0)
    ctx = _Context(opset, model_dir, opsets=opsets)
    variables = []
    for t in g.get("initializer", []):
        name = t.get("name", "")
        array = tensor_to_array(t, model_dir)
        if as_variables and array.dtype.kind != "O":
            var = tf.Variable(array, name=_op_name(name), trainable=False)
            variables.append(var)
            ctx.values[name] = var.value() if hasattr(var, "value") else tf.identity(var)
        else:
            ctx.values[name] = ctx.constant(array, name)
    inputs = {}
    for name, elem_type, shape in _value_infos(g.get("input", [])):
        if name in ctx.values:
            continue
        if elem_type is None:
            raise OnnxFormatError(f"graph input {name!r} has no type")
        dt = engine_dtype(elem_type, f"graph input {name!r}")
        ph = tf.placeholder(dt, shape=_declared_shape(shape), name=_op_name(name))
        ctx.values[name] = ph
        inputs[name] = TensorInfo(ph.name, dt, ph.shape)
    hist = Counter()
    for node in g.get("node", []):
        hist[node.get("op_type", "")] += 1
        _convert_node(ctx, node)
    outputs = {}
    for name, _elem_type, shape in _value_infos(g.get("output", []), maps_ok=True):
        t = ctx.value(name)
        if t.op.type in ("Placeholder", "Const"):
            t = tf.identity(t, name=_op_name(name) + "_output")
        declared = _declared_shape(shape)
        static = t.shape if t.shape.ndims is not None else declared
        outputs[name] = TensorInfo(t.name, t.dtype.base_dtype, static)
    init = tf.variables_initializer(variables) if variables else None
    return OnnxModel(
        graph=graph,
        signature=SignatureDef(inputs, outputs),
        opset=opset,
        ir_version=int(model.get("ir_version", 0)),
        producer=model.get("producer_name", ""),
        initializer=init,
        op_histogram=dict(hist.most_common()),
    )


def _convert_node(ctx: _Context, node: dict) -> None:
    op_type = node.get("op_type", "")
    fn = converter_for(op_type, ctx.opset_of(node), _domain(node))
    scope = _op_name(node.get("name") or op_type)
    try:
        with tf.name_scope(scope):
            outs = fn(ctx, node)
    except (OnnxFormatError, ProtoError):
        raise
    except (ValueError, TypeError, KeyError, IndexError) as e:
        raise OnnxFormatError(
            f"cannot import {op_type} node {node.get('name', '')!r} "
            f"(inputs {node.get('input', [])}): {e}"
        ) from None
    names = node.get("output", [])
    for i, name in enumerate(names):
        if not name:
            continue
        if i >= len(outs) or outs[i] is None:
            raise UnsupportedModelError(
                f"{op_type} node {node.get('name', '')!r}: output {i} is not supported"
            )
        if outs[i].dtype.base_dtype == dtypes.resource:
            raise UnsupportedModelError(f"{op_type} produced a resource")
        ctx.values[name] = outs[i]
