"""Meta graphs: a graph plus what is needed to use it -- variables, signatures, tags.

``MetaGraphDef`` is what ``saved_model.load`` returns and what ``Saver.save`` writes next to a
checkpoint (``<prefix>.meta``, readable with ``train.import_meta_graph``). Encoded with msgpack
like the graph itself; decoding validates every field.
"""

from __future__ import annotations

import os

import msgpack

from engine import dtypes, errors
from engine.framework import graph as ops
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import GraphKeys, Tensor
from engine.saving.graph_def import GraphDef, GraphDefError, graph_to_def, import_graph_def
from engine.tensor_shape import TensorShape
from engine.training.saver import Saver
from engine.variables import Variable
from engine.version import __version__

__all__ = [
    "MetaGraphDef",
    "SignatureDef",
    "TensorInfo",
    "TensorShapeProto",
    "export_meta_graph",
    "import_meta_graph",
    "build_tensor_info",
    "meta_graph_from_graph",
    "PREDICT_METHOD_NAME",
    "CLASSIFY_METHOD_NAME",
    "REGRESS_METHOD_NAME",
]

PREDICT_METHOD_NAME = "tensorflow/serving/predict"
CLASSIFY_METHOD_NAME = "tensorflow/serving/classify"
REGRESS_METHOD_NAME = "tensorflow/serving/regress"
META_FORMAT = "flowserve.meta_graph"
META_VERSION = 1
_MAX_META_BYTES = 2 << 30
_VARIABLE_TENSORS = ("initializer", "snapshot", "initial_value")


class _Dim:
    __slots__ = ("size",)

    def __init__(self, size: int):
        self.size = size

    def __repr__(self) -> str:
        return f"dim {{ size: {self.size} }}"


class TensorShapeProto:
    """A shape as TF's proto shows it: ``dim[i].size`` (-1 unknown) and ``unknown_rank``."""

    def __init__(self, shape: TensorShape):
        self._shape = shape
        dims = shape.as_tuple()
        self.unknown_rank = dims is None
        self.dim = [] if dims is None else [_Dim(-1 if d is None else d) for d in dims]

    def as_shape(self) -> TensorShape:
        return self._shape

    def __repr__(self) -> str:
        if self.unknown_rank:
            return "unknown_rank: true"
        return " ".join(repr(d) for d in self.dim)


class TensorInfo:
    """A signature entry: tensor ``name``, ``dtype`` (TF's enum number) and ``tensor_shape``."""

    def __init__(self, name: str, dtype: dtypes.DType, shape: TensorShape):
        self.name = name
        self._dtype = dtype
        self._shape = shape
        self.tensor_shape = TensorShapeProto(shape)

    @property
    def dtype(self) -> int:
        return self._dtype.as_datatype_enum

    @property
    def engine_dtype(self) -> dtypes.DType:
        return self._dtype

    @property
    def shape(self) -> TensorShape:
        return self._shape

    def _to_doc(self) -> dict:
        dims = self._shape.as_tuple()
        return {
            "name": self.name,
            "dtype": self._dtype.name,
            "shape": None if dims is None else [-1 if d is None else d for d in dims],
        }

    def __repr__(self) -> str:
        return f"TensorInfo(name={self.name!r}, dtype={self._dtype.name}, shape={self._shape})"


class SignatureDef:
    """Named inputs and outputs of a computation (``method_name`` as in TF Serving)."""

    def __init__(self, inputs: dict, outputs: dict, method_name: str = PREDICT_METHOD_NAME):
        self.inputs = dict(inputs)
        self.outputs = dict(outputs)
        self.method_name = method_name

    def _to_doc(self) -> dict:
        return {
            "method_name": self.method_name,
            "inputs": {k: v._to_doc() for k, v in self.inputs.items()},
            "outputs": {k: v._to_doc() for k, v in self.outputs.items()},
        }

    def __repr__(self) -> str:
        return (
            f"SignatureDef(method_name={self.method_name!r}, inputs={self.inputs}, "
            f"outputs={self.outputs})"
        )


def build_tensor_info(tensor) -> TensorInfo:
    """The signature entry describing ``tensor``."""
    if not isinstance(tensor, Tensor):
        tensor = convert_to_tensor(tensor)
    return TensorInfo(tensor.name, tensor.dtype.base_dtype, tensor.shape)


class MetaGraphDef:
    """A graph, its tags, signatures and variables."""

    def __init__(
        self,
        graph_def: GraphDef,
        tags=(),
        signature_def=None,
        variables=None,
        init_op: str | None = None,
        collections=None,
        assets=None,
    ):
        self.graph_def = graph_def
        self.tags = list(tags)
        self.signature_def: dict[str, SignatureDef] = dict(signature_def or {})
        self.variables: list[dict] = list(variables or [])
        self.init_op = init_op
        self.collections: dict[str, list[str]] = dict(collections or {})
        self.assets: list[str] = list(assets or [])

    class _Info:
        def __init__(self, tags):
            self.tags = tags

    @property
    def meta_info_def(self):
        return MetaGraphDef._Info(self.tags)

    def _to_doc(self) -> dict:
        return {
            "tags": self.tags,
            "graph": self.graph_def._doc,
            "signatures": {k: v._to_doc() for k, v in self.signature_def.items()},
            "variables": self.variables,
            "init_op": self.init_op,
            "collections": self.collections,
            "assets": self.assets,
        }

    @classmethod
    def _from_doc(cls, d, where: str) -> MetaGraphDef:
        if not isinstance(d, dict):
            raise GraphDefError(f"{where}: meta graph must be a map")
        tags = d.get("tags")
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise GraphDefError(f"{where}: tags must be a list of strings")
        graph_def = GraphDef._from_doc(d.get("graph"))
        sigs = {}
        raw_sigs = d.get("signatures", {})
        if not isinstance(raw_sigs, dict):
            raise GraphDefError(f"{where}: signatures must be a map")
        for key, s in raw_sigs.items():
            if not isinstance(key, str) or not isinstance(s, dict):
                raise GraphDefError(f"{where}: malformed signature {key!r}")
            sigs[key] = SignatureDef(
                _infos(s.get("inputs"), f"{where} signature {key!r}"),
                _infos(s.get("outputs"), f"{where} signature {key!r}"),
                s.get("method_name")
                if isinstance(s.get("method_name"), str)
                else PREDICT_METHOD_NAME,
            )
        variables = d.get("variables", [])
        if not isinstance(variables, list) or not all(
            isinstance(v, dict) and isinstance(v.get("name"), str) for v in variables
        ):
            raise GraphDefError(f"{where}: variables must be a list of maps with names")
        for v in variables:
            if not all(isinstance(v.get(k), str) for k in _VARIABLE_TENSORS) or not all(
                isinstance(v.get(k, False), bool) for k in ("trainable", "local")
            ):
                raise GraphDefError(f"{where}: variable {v['name']!r} has a malformed record")
        if len({v["name"] for v in variables}) != len(variables):
            raise GraphDefError(f"{where}: a variable is listed twice")
        init_op = d.get("init_op")
        if init_op is not None and not isinstance(init_op, str):
            raise GraphDefError(f"{where}: init_op must be an op name")
        collections = d.get("collections", {})
        if not isinstance(collections, dict) or not all(
            isinstance(k, str) and isinstance(v, list) and all(isinstance(x, str) for x in v)
            for k, v in collections.items()
        ):
            raise GraphDefError(f"{where}: collections must map names to lists of names")
        assets = d.get("assets", [])
        if not isinstance(assets, list) or not all(isinstance(a, str) for a in assets):
            raise GraphDefError(f"{where}: assets must be a list of file names")
        return cls(graph_def, tags, sigs, variables, init_op, collections, assets)

    def __repr__(self) -> str:
        return (
            f"<MetaGraphDef tags={self.tags} signatures={sorted(self.signature_def)} "
            f"nodes={len(self.graph_def)}>"
        )


def _infos(d, where) -> dict:
    if not isinstance(d, dict):
        raise GraphDefError(f"{where}: inputs/outputs must be maps")
    out = {}
    for alias, info in d.items():
        if (
            not isinstance(alias, str)
            or not isinstance(info, dict)
            or not isinstance(info.get("name"), str)
        ):
            raise GraphDefError(f"{where}: malformed tensor info {alias!r}")
        try:
            dtype = dtypes.as_dtype(info.get("dtype"))
        except TypeError:
            raise GraphDefError(
                f"{where}: tensor {alias!r} has unknown dtype {info.get('dtype')!r}"
            ) from None
        shape = info.get("shape")
        if shape is None:
            ts = TensorShape(None)
        elif (
            isinstance(shape, list)
            and len(shape) <= 32
            and all(isinstance(x, int) and not isinstance(x, bool) and x >= -1 for x in shape)
        ):
            ts = TensorShape([None if x == -1 else x for x in shape])
        else:
            raise GraphDefError(f"{where}: tensor {alias!r} has a malformed shape")
        out[alias] = TensorInfo(info["name"], dtype, ts)
    return out


# -----------------------------------------------------------------------------------------
# Building meta graphs from a live graph
# -----------------------------------------------------------------------------------------


def _variable_records(graph, var_list=None) -> list[dict]:
    if var_list is None:
        var_list = graph.get_collection(GraphKeys.GLOBAL_VARIABLES) + graph.get_collection(
            GraphKeys.LOCAL_VARIABLES
        )
    trainable = set(id(v) for v in graph.get_collection(GraphKeys.TRAINABLE_VARIABLES))
    local = set(id(v) for v in graph.get_collection(GraphKeys.LOCAL_VARIABLES))
    records, seen = [], set()
    for v in var_list:
        if not hasattr(v, "_ref") or v.op.name in seen:
            continue
        seen.add(v.op.name)
        records.append(
            {
                "name": v.op.name,
                "initializer": v.initializer.name,
                "snapshot": v.value().name,
                "initial_value": v.initial_value.name,
                "trainable": id(v) in trainable,
                "local": id(v) in local,
            }
        )
    return records


def meta_graph_from_graph(
    graph, tags=(), signature_def_map=None, init_op=None, var_list=None, assets=None
) -> MetaGraphDef:
    sigs = dict(signature_def_map or {})
    for key, sig in sigs.items():
        if not isinstance(sig, SignatureDef):
            raise TypeError(
                f"signature_def_map[{key!r}] must be a SignatureDef, got {type(sig).__name__}"
            )
        for alias, info in list(sig.inputs.items()) + list(sig.outputs.items()):
            try:
                graph.get_tensor_by_name(info.name)
            except (KeyError, ValueError):
                raise ValueError(
                    f"Signature {key!r} refers to tensor {info.name!r} "
                    f"({alias!r}), which is not in the graph"
                ) from None
    collections = {}
    for key in (GraphKeys.TRAIN_OP, GraphKeys.UPDATE_OPS, GraphKeys.LOSSES):
        items = graph.get_collection(key)
        names = [x.name for x in items if hasattr(x, "name")]
        if names:
            collections[key] = names
    return MetaGraphDef(
        graph_to_def(graph),
        tags,
        sigs,
        _variable_records(graph, var_list),
        init_op.name if init_op is not None else None,
        collections,
        assets,
    )


def encode(meta_graphs: list[MetaGraphDef], kind: str) -> bytes:
    return msgpack.packb(
        {
            "format": META_FORMAT,
            "version": META_VERSION,
            "kind": kind,
            "engine_version": __version__,
            "meta_graphs": [m._to_doc() for m in meta_graphs],
        },
        use_bin_type=True,
    )


def decode(data: bytes, path: str) -> list[MetaGraphDef]:
    """Meta graphs from bytes read from ``path``; DataLossError naming the file if malformed."""
    if len(data) > _MAX_META_BYTES:
        raise errors.DataLossError(None, None, f"{path} is {len(data)} bytes, over the limit")
    try:
        doc = msgpack.unpackb(
            data,
            raw=False,
            strict_map_key=True,
            max_str_len=1 << 24,
            max_bin_len=len(data),
            max_array_len=1 << 20,
            max_map_len=1 << 20,
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
        raise errors.DataLossError(
            None, None, f"{path} is not a valid flowserve model file (msgpack decoding failed: {e})"
        ) from None
    if not isinstance(doc, dict) or doc.get("format") != META_FORMAT:
        raise errors.DataLossError(None, None, f"{path} is not a flowserve model file")
    version = doc.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise errors.DataLossError(None, None, f"{path} has no format version")
    if version > META_VERSION:
        raise errors.DataLossError(
            None,
            None,
            f"{path} has format version {version}, newer "
            f"than the supported {META_VERSION}; upgrade "
            "flowserve to load it",
        )
    graphs = doc.get("meta_graphs")
    if not isinstance(graphs, list) or not graphs:
        raise errors.DataLossError(None, None, f"{path} holds no meta graphs")
    try:
        return [MetaGraphDef._from_doc(g, f"meta graph {i}") for i, g in enumerate(graphs)]
    except GraphDefError as e:
        raise errors.DataLossError(None, None, f"{path}: {e}") from None


def read_file(path: str, limit: int = _MAX_META_BYTES) -> bytes:
    try:
        size = os.path.getsize(path)
        if size > limit:
            raise errors.DataLossError(
                None, None, f"{path} is {size} bytes, over the {limit}-byte limit"
            )
        with open(path, "rb") as f:
            # read(n) allocates n bytes up front: ask for what the file holds, not the limit
            data = f.read(size + 1)
        if len(data) > size:
            raise errors.DataLossError(None, None, f"{path} changed while it was read")
        return data
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"{path} does not exist") from None
    except IsADirectoryError:
        raise errors.NotFoundError(None, None, f"{path} is a directory, not a file") from None
    except OSError as e:
        raise errors.DataLossError(None, None, f"Cannot read {path}: {e}") from None


# -----------------------------------------------------------------------------------------
# Importing a meta graph into the default graph
# -----------------------------------------------------------------------------------------


def import_into_default_graph(meta: MetaGraphDef, path: str, import_scope=None):
    """Imports ``meta``'s graph and rebuilds its Variable objects and collections."""

    graph = ops.get_default_graph()
    try:
        import_graph_def(meta.graph_def, name=import_scope or "")
    except GraphDefError as e:
        raise errors.DataLossError(None, None, f"{path}: {e}") from None
    except ValueError as e:
        raise errors.InvalidArgumentError(None, None, f"{path}: {e}") from None
    prefix = f"{import_scope}/" if import_scope else ""
    variables = []
    for rec in meta.variables:
        try:
            v = Variable._from_graph(
                graph,
                prefix + rec["name"],
                prefix + rec["initializer"],
                prefix + rec["snapshot"],
                prefix + rec["initial_value"],
                bool(rec.get("trainable", True)),
            )
        except (KeyError, ValueError, TypeError) as e:
            raise errors.DataLossError(
                None,
                None,
                f"{path}: variable {rec['name']!r} does not match its ops in the graph ({e})",
            ) from None
        keys = [GraphKeys.LOCAL_VARIABLES if rec.get("local") else GraphKeys.GLOBAL_VARIABLES]
        if rec.get("trainable", True):
            keys.append(GraphKeys.TRAINABLE_VARIABLES)
        for k in keys:
            graph.add_to_collection(k, v)
        variables.append(v)
    for key, names in meta.collections.items():
        for n in names:
            try:
                graph.add_to_collection(key, graph.as_graph_element(prefix + n))
            except (KeyError, ValueError):
                pass
    return variables


def export_meta_graph(filename=None, graph=None, saver=None, **kwargs) -> MetaGraphDef:  # noqa: ARG001 - TF API compatibility
    """Writes the graph with its variables as a meta graph file (``Saver`` writes ``.meta``)."""
    graph = graph or ops.get_default_graph()
    meta = meta_graph_from_graph(graph)
    if filename:
        tmp = filename + ".tmp"
        with open(tmp, "wb") as f:
            f.write(encode([meta], "meta_graph"))
        os.replace(tmp, filename)
    return meta


def import_meta_graph(meta_graph_or_file, clear_devices=False, import_scope=None, **kwargs):  # noqa: ARG001 - TF API compatibility
    """Imports a ``.meta`` file into the default graph; returns a Saver for its variables."""

    if isinstance(meta_graph_or_file, MetaGraphDef):
        meta, path = meta_graph_or_file, "<MetaGraphDef>"
    else:
        path = meta_graph_or_file
        meta = decode(read_file(path), path)[0]
    variables = import_into_default_graph(meta, path, import_scope)
    if clear_devices:
        for op in ops.get_default_graph().get_operations():
            op._set_device("")
    return Saver(var_list=variables) if variables else None
