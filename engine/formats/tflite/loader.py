"""Loading a ``model.tflite`` into a session, shaped like ``saved_model.load``'s result."""

from __future__ import annotations

import os

from engine.formats.tflite.importer import import_model
from engine.saving.meta_graph import MetaGraphDef

__all__ = ["MODEL_FILENAME", "load"]

MODEL_FILENAME = "model.tflite"  # TF Serving's name (--prefer_tflite_model)


def load(sess, dir_or_file: str) -> MetaGraphDef:
    """Imports ``dir_or_file/model.tflite`` (or the file ``dir_or_file``) into ``sess.graph``.

    Returns a MetaGraphDef with ``signature_def["serving_default"]`` and one entry per
    SignatureDef of the model, keyed and named as the model names them; a model without
    SignatureDefs names subgraph 0's inputs and outputs by their tensor names.
    """
    path = os.fspath(dir_or_file)
    if os.path.isdir(path):
        path = os.path.join(path, MODEL_FILENAME)
    model = import_model(path, graph=sess.graph)
    return MetaGraphDef(graph_def=None, tags=["serve"], signature_def=dict(model.signatures))
