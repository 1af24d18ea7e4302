"""``tf.keras`` as TF1's Keras runs it in graph mode (``tf.compat.v1.keras``): layers that
create their variables on first call, ``Sequential`` and functional models that train with
``compile``/``fit`` in Keras' own session, and the backend, losses, metrics, optimizers and
callbacks around them.
"""

from engine.keras import (
    activations,
    applications,
    backend,
    backend_ops,
    callbacks,
    constraints,
    datasets,
    estimator,
    experimental,
    initializers,
    layers,
    losses,
    metrics,
    model_config,
    models,
    optimizers,
    preprocessing,
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
