"""``tf.keras`` as TF1's Keras runs it in graph mode (``tf.compat.v1.keras``): layers that
create their variables on first call, ``Sequential`` and functional models that train with
``compile``/``fit`` in Keras' own session, and the backend, losses, metrics, optimizers and
callbacks around them.
"""

from types import SimpleNamespace

from engine.keras import (
    activations,
    applications,
    backend,
    backend_ops,
    callbacks,
    datasets,
    hdf5,
    initializers,
    layers,
    losses,
    metrics,
    model_config,
    optimizers,
    regularizers,
    saving,
    utils,
)
from engine.keras.input_layer import Input
from engine.keras.network import Model, Sequential

__all__ = [
    "Input",
    "Model",
    "Sequential",
    "activations",
    "applications",
    "backend",
    "callbacks",
    "constraints",
    "datasets",
    "experimental",
    "initializers",
    "layers",
    "losses",
    "metrics",
    "models",
    "optimizers",
    "preprocessing",
    "regularizers",
    "utils",
]

for _name in backend_ops.__all__:
    setattr(backend, _name, getattr(backend_ops, _name))

Model.save = saving.save_model
Model.get_config = model_config.get_config
Model.to_json = model_config.to_json
Model.from_config = classmethod(model_config.from_config)
models = SimpleNamespace(
    Model=Model,
    Sequential=Sequential,
    save_model=saving.save_model,
    load_model=hdf5.load_model,
    model_from_json=model_config.model_from_json,
    model_from_config=model_config.model_from_config,
    clone_model=model_config.clone_model,
)
constraints = SimpleNamespace(
    MaxNorm=regularizers.MaxNorm,
    NonNeg=regularizers.NonNeg,
    UnitNorm=regularizers.UnitNorm,
    MinMaxNorm=regularizers.MinMaxNorm,
    max_norm=regularizers.MaxNorm,
    non_neg=regularizers.NonNeg,
    unit_norm=regularizers.UnitNorm,
    min_max_norm=regularizers.MinMaxNorm,
    get=regularizers.get_constraint,
)
experimental = SimpleNamespace(export_saved_model=saving.export_saved_model)
preprocessing = SimpleNamespace(sequence=SimpleNamespace(pad_sequences=utils.pad_sequences))
