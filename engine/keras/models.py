"""``tf.keras.models``: the model classes and the functions that save, load and rebuild
models (``from tensorflow.keras.models import Sequential`` works as ``engine.keras.models``)."""

from engine.keras.hdf5 import load_model
from engine.keras.model_config import clone_model, model_from_config, model_from_json
from engine.keras.network import Model, Sequential
from engine.keras.saving import save_model

__all__ = [
    "Model",
    "Sequential",
    "clone_model",
    "load_model",
    "model_from_config",
    "model_from_json",
    "save_model",
]
