"""SavedModel directories TensorFlow wrote (``saved_model.pb``) as the engine's meta graphs.

``read_meta_graphs`` parses ``saved_model.pb`` (bounded) and converts every meta graph with
``meta_graph.convert_meta_graph``; the engine's ``saved_model.load`` then imports, restores
(by the checkpoint keys the graph's saver uses) and runs the init op exactly as for its own
format. ``read_checkpoint_meta_graph`` does the same for a checkpoint's ``.meta`` file.
"""

from __future__ import annotations

import os

from google.protobuf import message as pb_message

from engine import dtypes, errors
from engine.formats.tensorflow.graph_def import UnsupportedOpsError
from engine.formats.tensorflow.meta_graph import convert_meta_graph
from engine.formats.tensorflow.proto import meta_graph_pb2, saved_model_pb2
from engine.formats.tensorflow.tensors import TFFormatError
from engine.saving import meta_graph as engine_meta_graph
from engine.saving.graph_def import GraphDef, GraphDefError
from engine.saving.meta_graph import MetaGraphDef, SignatureDef, TensorInfo
from engine.tensor_shape import TensorShape

__all__ = [
    "SAVED_MODEL_PB",
    "MAX_SAVED_MODEL_BYTES",
    "is_tf_saved_model",
    "parse_saved_model",
    "read_meta_graphs",
    "read_checkpoint_meta_graph",
    "import_meta_graph",
]

SAVED_MODEL_PB = "saved_model.pb"
MAX_SAVED_MODEL_BYTES = 2 << 30


def is_tf_saved_model(export_dir: str) -> bool:
    return os.path.isfile(os.path.join(export_dir, SAVED_MODEL_PB))


def _read(path: str) -> bytes:
    try:
        size = os.path.getsize(path)
        if size > MAX_SAVED_MODEL_BYTES:
            raise errors.ResourceExhaustedError(
                None, None, f"{path} is {size} bytes, over the {MAX_SAVED_MODEL_BYTES} limit"
            )
        with open(path, "rb") as f:
            return f.read(size + 1)
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"{path} does not exist") from None
    except OSError as e:
        raise errors.DataLossError(None, None, f"Cannot read {path}: {e}") from None


def parse_saved_model(path: str) -> saved_model_pb2.SavedModel:
    """The ``SavedModel`` message in ``path``; DataLossError when it does not parse."""
    try:
        return saved_model_pb2.SavedModel.FromString(_read(path))
    except (pb_message.DecodeError, RecursionError, ValueError) as e:
        raise errors.DataLossError(
            None, None, f"{path}: not a valid TensorFlow SavedModel ({e})"
        ) from None


def _shape(dims) -> TensorShape:
    return TensorShape(None if dims is None else [None if d == -1 else d for d in dims])


def _engine_meta(mg, where: str, export_dir: str | None, prune: bool) -> MetaGraphDef:
    try:
        conv = convert_meta_graph(mg, where, export_dir, prune=prune)
        graph_def = GraphDef._from_doc(conv.document)
    except UnsupportedOpsError as e:
        raise errors.UnimplementedError(None, None, f"{where}: {e}") from None
    except (TFFormatError, GraphDefError) as e:
        raise errors.DataLossError(None, None, f"{where}: {e}") from None

    def info(d):
        return TensorInfo(d["name"], dtypes.as_dtype(d["dtype"]), _shape(d["shape"]))

    signatures = {
        key: SignatureDef(
            {a: info(i) for a, i in s["inputs"].items()},
            {a: info(i) for a, i in s["outputs"].items()},
            s["method_name"],
        )
        for key, s in conv.signatures.items()
    }
    meta = MetaGraphDef(
        graph_def,
        tags=conv.tags,
        signature_def=signatures,
        variables=conv.variables,
        init_op=conv.init_op,
        collections=conv.collections,
    )
    meta.restore_keys = conv.restore_keys
    return meta


def read_meta_graphs(export_dir: str, tags=None) -> list[MetaGraphDef]:
    """The meta graphs of the TF SavedModel at ``export_dir`` (only those tagged exactly
    ``tags`` are converted when given), pruned to what their signatures and init ops need."""
    path = os.path.join(export_dir, SAVED_MODEL_PB)
    sm = parse_saved_model(path)
    out = []
    wanted = None if tags is None else set([tags] if isinstance(tags, str) else tags)
    for i, mg in enumerate(sm.meta_graphs):
        if wanted is not None and set(mg.meta_info_def.tags) != wanted:
            out.append(MetaGraphDef(GraphDef(), tags=list(mg.meta_info_def.tags)))
            continue
        out.append(_engine_meta(mg, f"{path} meta graph {i}", export_dir, prune=True))
    return out


def read_checkpoint_meta_graph(path: str, data: bytes | None = None) -> MetaGraphDef:
    """The ``.meta`` file TF's Saver wrote next to a checkpoint (its bytes ``data`` if already
    read), as the engine's meta graph."""
    try:
        mg = meta_graph_pb2.MetaGraphDef.FromString(_read(path) if data is None else data)
    except (pb_message.DecodeError, RecursionError, ValueError) as e:
        raise errors.DataLossError(None, None, f"{path}: not a valid MetaGraphDef ({e})") from None
    return _engine_meta(mg, path, None, prune=False)


def import_meta_graph(meta_graph_or_file, clear_devices=False, import_scope=None, **kwargs):
    """``tf.train.import_meta_graph`` for both formats: a ``.meta`` file TensorFlow's Saver
    wrote (a ``MetaGraphDef`` protobuf) or one this engine wrote (msgpack)."""
    if isinstance(meta_graph_or_file, (str, os.PathLike)):
        path = os.fspath(meta_graph_or_file)
        raw = engine_meta_graph.read_file(path)
        if raw[:1] and not (0x80 <= raw[0] <= 0x8F or raw[0] in (0xDE, 0xDF)):
            meta_graph_or_file = read_checkpoint_meta_graph(path, raw)
    return engine_meta_graph.import_meta_graph(
        meta_graph_or_file, clear_devices=clear_devices, import_scope=import_scope, **kwargs
    )
