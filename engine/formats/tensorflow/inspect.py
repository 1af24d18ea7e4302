"""What ``python -m engine inspect`` shows of a TensorFlow SavedModel, as
``saved_model_cli show --all`` does: per meta graph its tags, signatures (TensorInfo names,
dtypes, shapes), an op histogram (function bodies included) and the op types this engine
lacks. Nothing is imported or run, so a model with missing ops can still be inspected."""

from __future__ import annotations

import collections
import os

from engine.formats.tensorflow import graph_def as tfg
from engine.formats.tensorflow import meta_graph as tfm
from engine.formats.tensorflow.saved_model import SAVED_MODEL_PB, parse_saved_model
from engine.formats.tensorflow.tensors import TFFormatError, dtype_from_enum, shape_from_proto

__all__ = ["describe"]


def _info(i, where) -> dict:
    if i.WhichOneof("encoding") != "name":
        return {"name": f"<{i.WhichOneof('encoding')}>", "dtype": "?", "shape": "?"}
    try:
        dtype = dtype_from_enum(i.dtype, where).name if i.dtype else "-"
    except TFFormatError:
        dtype = f"enum {i.dtype}"
    dims = shape_from_proto(i.tensor_shape, where)
    shape = "unknown rank" if dims is None else str([None if d == -1 else d for d in dims])
    return {"name": i.name, "dtype": dtype, "shape": shape}


def describe(export_dir: str) -> list[dict]:
    """One dict per meta graph: tags, signatures, op counts, missing ops, TF version."""
    path = os.path.join(export_dir, SAVED_MODEL_PB)
    sm = parse_saved_model(path)
    out = []
    for i, mg in enumerate(sm.meta_graphs):
        where = f"{path} meta graph {i}"
        counts = collections.Counter(n.op for n in mg.graph_def.node)
        for f in mg.graph_def.library.function:
            counts.update(n.op for n in f.node_def)
        try:
            nodes = tfg.inline_functions(mg.graph_def, where)
            dropped = tfm.saver_nodes(nodes)
            kept = tfg.functionalize([n for n in nodes if n.name not in dropped], where)
            missing = tfg.missing_ops(kept)
            error = None
        except TFFormatError as e:
            missing, error = {}, str(e)
        out.append(
            {
                "tags": list(mg.meta_info_def.tags),
                "tensorflow_version": mg.meta_info_def.tensorflow_version,
                "signatures": {
                    key: {
                        "method_name": sig.method_name,
                        "inputs": {a: _info(t, where) for a, t in sorted(sig.inputs.items())},
                        "outputs": {a: _info(t, where) for a, t in sorted(sig.outputs.items())},
                    }
                    for key, sig in sorted(mg.signature_def.items())
                },
                "op_counts": dict(sorted(counts.items())),
                "functions": len(mg.graph_def.library.function),
                "missing_ops": missing,
                "error": error,
            }
        )
    return out
