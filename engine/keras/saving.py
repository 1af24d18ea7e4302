"""A Keras model as a SavedModel its servers load: ``tf.keras.experimental.export_saved_model``
and ``model.save(dir)``. The ``serving_default`` signature takes each input under its input
layer's name and returns each output under its output layer's name, as TF's Keras exports.

What is exported is the inference graph: the model replayed with ``training=False`` (so
Dropout and BatchNormalization take their inference paths without a learning-phase ``cond``)
with the current weights frozen into constants, in a graph of its own. TensorFlow's SavedModel
format then holds it, and TF Serving as well as flowserve serve it."""

from __future__ import annotations

import os

from engine.framework.graph import Graph
from engine.graph_util import convert_variables_to_constants
from engine.keras import backend, hdf5
from engine.saving.graph_def import import_graph_def
from engine.saving.saved_model import simple_save
from engine.session import Session

__all__ = ["export_saved_model", "save_model"]


def export_saved_model(
    model,
    saved_model_path,
    custom_objects=None,
    as_text=None,
    input_signature=None,
    serving_only=True,
    format="tensorflow",
):  # noqa: A002
    """Writes ``model`` (its graph with the current weights) as a SavedModel directory;
    ``format="flowserve"`` writes flowserve's own layout instead of TensorFlow's."""
    del custom_objects, as_text  # Keras' arguments with nothing to do here
    if input_signature is not None:
        raise ValueError(
            "export_saved_model(input_signature=...) is not supported: the "
            "model's own inputs are exported"
        )
    if not serving_only:
        raise ValueError("export_saved_model exports the serving graph only (serving_only=True)")
    if not model.inputs or not model.outputs:
        raise ValueError(
            f"The model {model.name} is not built: call it on data or give its "
            "first layer an input_shape before exporting it"
        )
    path = os.fspath(saved_model_path)
    if os.path.exists(path) and os.listdir(path):
        raise FileExistsError(f"Export directory already exists and is not empty: {path}")
    graph = model.outputs[0].graph
    with graph.as_default():
        replayed = model(model.inputs if len(model.inputs) > 1 else model.inputs[0], training=False)
        replayed = replayed if isinstance(replayed, list) else [replayed]
        frozen = convert_variables_to_constants(
            backend.get_session(), graph.as_graph_def(), [t.op.name for t in replayed]
        )
    export = Graph()
    with export.as_default():
        import_graph_def(frozen, name="")
        inputs = {
            n: export.get_tensor_by_name(t.name) for n, t in zip(model.input_names, model.inputs)
        }
        outputs = {
            n: export.get_tensor_by_name(t.name) for n, t in zip(model.output_names, replayed)
        }
        with Session(graph=export) as session:
            return simple_save(session, path, inputs=inputs, outputs=outputs, format=format)


def save_model(
    model,
    filepath,
    overwrite=True,
    include_optimizer=True,
    save_format=None,
    **kwargs,
):
    """``model.save``: a SavedModel directory, or a Keras HDF5 file (``.h5``, ``.hdf5``,
    ``.keras`` or ``save_format="h5"``)."""
    del kwargs
    filepath = os.fspath(filepath)
    if hdf5.is_hdf5_path(filepath, save_format):
        return hdf5.save_model(model, filepath, overwrite, include_optimizer)
    if os.path.exists(filepath) and os.listdir(filepath):
        if not overwrite:
            raise FileExistsError(f"{filepath} exists and overwrite=False")
        raise FileExistsError(f"Export directory already exists and is not empty: {filepath}")
    return export_saved_model(model, filepath)
