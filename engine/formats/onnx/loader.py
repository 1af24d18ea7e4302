"""Loading a ``model.onnx`` into a session, shaped like ``saved_model.load``'s result."""

from __future__ import annotations

import os

from engine.formats.onnx.importer import import_model
from engine.saving.meta_graph import MetaGraphDef

__all__ = ["MODEL_FILENAME", "load"]

MODEL_FILENAME = "model.onnx"
DEFAULT_SIGNATURE = "serving_default"


def load(sess, export_dir: str, *, initializers_as_variables: bool = False) -> MetaGraphDef:
    """Imports ``export_dir/model.onnx`` (or the file ``export_dir``) into ``sess.graph``.

    Returns a MetaGraphDef whose ``signature_def["serving_default"]`` names the model's
    inputs and outputs by their ONNX names, as ``saved_model.load`` does for SavedModels.
    """
    path = export_dir
    if os.path.isdir(path):
        path = os.path.join(path, MODEL_FILENAME)
    model = import_model(
        path, initializers_as_variables=initializers_as_variables, graph=sess.graph
    )
    if model.initializer is not None:
        sess.run(model.initializer)
    return MetaGraphDef(
        graph_def=None, tags=["serve"], signature_def={DEFAULT_SIGNATURE: model.signature}
    )
