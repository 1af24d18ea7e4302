"""``tf.keras`` as TF1's Keras runs it in graph mode (``tf.compat.v1.keras``): layers that
create their variables on first call, ``Sequential`` and functional models that train with
``compile``/``fit`` in Keras' own session, and the backend, losses, metrics, optimizers and
callbacks around them.
"""

from types import SimpleNamespace

from engine.keras import (
    activations,
    backend,
    backend_ops,
    callbacks,
    datasets,
    hdf5,
    initializers,
    keras_estimator,
    layers,
    losses,
    metrics,
    model_config,
    optimizers,
    preprocessing_image,
    preprocessing_sequence,
    preprocessing_text,
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
    "backend",
    "callbacks",
    "constraints",
    "datasets",
    "estimator",
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
estimator = SimpleNamespace(model_to_estimator=keras_estimator.model_to_estimator)
preprocessing = SimpleNamespace(
    sequence=SimpleNamespace(
        **{n: getattr(preprocessing_sequence, n) for n in preprocessing_sequence.__all__}
    ),
    text=SimpleNamespace(**{n: getattr(preprocessing_text, n) for n in preprocessing_text.__all__}),
    image=SimpleNamespace(
        **{n: getattr(preprocessing_image, n) for n in preprocessing_image.__all__}
    ),
)
