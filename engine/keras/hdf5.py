"""Keras HDF5 files as tf_keras writes them: ``model.save("m.h5")``, ``load_model("m.h5")``,
``save_weights("w.h5")`` and ``load_weights("w.h5", by_name=...)``.

Layout: the root's attributes hold ``model_config`` (the model's JSON), ``training_config``
(compile's loss, metrics and optimizer config), ``keras_version`` and ``backend``; the group
``model_weights`` (the root itself in a weights file) lists ``layer_names``, and each layer's
group lists its ``weight_names``, one dataset per weight. Weights are matched layer by layer
(those with weights, in order) or by layer name, and each dataset's shape and dtype are
checked against the layer's variable before it is read; strings read from the file are
bounded. Nothing in a file is run: a model whose config holds a ``Lambda`` is refused.

>>> model.save("m.h5")
>>> model2 = tf.keras.models.load_model("m.h5")   # compiled as it was, if it was
"""

from __future__ import annotations

import inspect
import json
import os

from engine.keras import hdf5_weights, losses, metrics, model_config, optimizers
from engine.keras.hdf5_weights import LOG, is_hdf5_path, load_weights_from_group, open_file

__all__ = ["is_hdf5_path", "load_model", "save_model"]


# -- whole models --------------------------------------------------------------------------


def _serialize_loss_like(value):
    if value is None or isinstance(value, (str, int, float)):
        return value
    if isinstance(value, (list, tuple)):
        return [_serialize_loss_like(v) for v in value]
    if isinstance(value, dict):
        return {k: _serialize_loss_like(v) for k, v in value.items()}
    if hasattr(value, "get_config"):
        return {"class_name": type(value).__name__, "config": value.get_config()}
    if getattr(value, "__name__", "<lambda>") != "<lambda>":
        return value.__name__
    raise TypeError(f"Cannot serialize {value!r} in a training config")


def _optimizer_config(opt) -> dict:
    if type(opt).__name__ not in optimizers.__all__ or type(opt) is optimizers.TFOptimizer:
        raise TypeError(f"Cannot serialize the optimizer {opt!r} in a training config")
    config = dict(opt.get_config())
    for name in inspect.signature(type(opt).__init__).parameters:
        if name not in config and hasattr(opt, name) and not callable(getattr(opt, name)):
            config[name] = getattr(opt, name)
    return {"class_name": type(opt).__name__, "config": config}


def training_config(model) -> dict | None:
    """compile's arguments as Keras writes them, or None (not compiled, or not writable)."""
    compiled = getattr(model, "_compiled", None)
    if not compiled:
        return None
    try:
        return {
            "loss": _serialize_loss_like(compiled["loss"]),
            "metrics": _serialize_loss_like(compiled["metrics"]),
            "weighted_metrics": _serialize_loss_like(compiled["weighted_metrics"]),
            "loss_weights": _serialize_loss_like(compiled["loss_weights"]),
            "sample_weight_mode": compiled.get("sample_weight_mode"),
            "optimizer_config": _optimizer_config(model.optimizer),
        }
    except TypeError as e:
        LOG.warning("The model is saved without its training config: %s", e)
        return None


def save_model(model, filepath, overwrite=True, include_optimizer=True) -> None:
    """``model.save("m.h5")``: config, weights and (compiled) training config. The
    optimizer's slot values are not written; a loaded model starts them afresh."""
    hdf5_weights.require_h5py()
    path = os.fspath(filepath)
    if not overwrite and os.path.exists(path):
        raise FileExistsError(f"{path} exists and overwrite=False")
    config = json.loads(model.to_json())
    with open_file(path, "w") as f:
        f.attrs["backend"] = "tensorflow"
        f.attrs["keras_version"] = hdf5_weights.KERAS_VERSION
        f.attrs["model_config"] = json.dumps(
            {"class_name": config["class_name"], "config": config["config"]}
        )
        train = training_config(model) if include_optimizer else None
        if train is not None:
            f.attrs["training_config"] = json.dumps(train)
        hdf5_weights.save_weights_to_group(f.create_group("model_weights"), model)


def _json_attr(f, key: str, what: str):
    text = hdf5_weights.str_attr(f, key)
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"The {what} in {f.filename} is not valid JSON: {e}") from None


def load_model(filepath, custom_objects=None, compile=True):  # noqa: A002 - Keras' name
    """``tf.keras.models.load_model("m.h5")``: the model with its weights, compiled as it was
    saved when ``compile`` and the file's loss, metrics and optimizer are ones the engine has
    (the optimizer's saved slot values are skipped, with a warning)."""
    if not is_hdf5_path(filepath) and not (os.path.isfile(filepath) and _looks_hdf5(filepath)):
        raise ValueError(
            f"load_model reads Keras HDF5 files (.h5, .hdf5, .keras); {os.fspath(filepath)} is "
            "not one (serve a SavedModel directory with the model server instead)"
        )
    with open_file(filepath, "r") as f:
        config = _json_attr(f, "model_config", "model config")
        if config is None:
            raise ValueError(f"No model config found in the file at {os.fspath(filepath)}")
        model = model_config.model_from_config(config, custom_objects)
        if "model_weights" not in f:
            raise ValueError(f"{os.fspath(filepath)} has no 'model_weights' group")
        load_weights_from_group(f["model_weights"], model)
        train = _json_attr(f, "training_config", "training config") if compile else None
        if train is not None:
            _compile_from_config(model, train, custom_objects)
            if "optimizer_weights" in f:
                LOG.warning(
                    "Skipping the optimizer weights in %s: a loaded model's optimizer starts "
                    "afresh",
                    os.fspath(filepath),
                )
    return model


def _looks_hdf5(filepath) -> bool:
    with open(filepath, "rb") as fh:
        return fh.read(8) == b"\x89HDF\r\n\x1a\n"


def _deserialize(value, module, custom_objects, kind: str):
    if isinstance(value, list):
        return [_deserialize(v, module, custom_objects, kind) for v in value]
    if not isinstance(value, dict):
        return value
    if "class_name" not in value:  # per-output {name: loss}
        return {k: _deserialize(v, module, custom_objects, kind) for k, v in value.items()}
    class_name = value["class_name"]
    cls = (custom_objects or {}).get(class_name)
    if cls is None and class_name in getattr(module, "__all__", ()):
        cls = getattr(module, class_name)
    if cls is None:
        raise ValueError(f"Unknown {kind}: {class_name!r}")
    config = value.get("config", {})
    return cls(**{k: v for k, v in config.items() if k in inspect.signature(cls).parameters})


def _compile_from_config(model, train: dict, custom_objects) -> None:
    """Compiles ``model`` as ``train`` says, or warns and leaves it uncompiled."""
    try:
        opt_spec = train.get("optimizer_config") or {}
        cls = optimizers.__dict__.get(opt_spec.get("class_name"))
        if cls is None or cls.__name__ not in optimizers.__all__:
            raise ValueError(f"Unknown optimizer: {opt_spec.get('class_name')!r}")
        params = inspect.signature(cls).parameters
        opt = cls(
            **{
                k: v
                for k, v in (opt_spec.get("config") or {}).items()
                if k in params or k == "decay"
            }
        )
        model.compile(
            optimizer=opt,
            loss=_deserialize(train.get("loss"), losses, custom_objects, "loss"),
            metrics=_deserialize(train.get("metrics"), metrics, custom_objects, "metric"),
            loss_weights=train.get("loss_weights"),
            weighted_metrics=_deserialize(
                train.get("weighted_metrics"), metrics, custom_objects, "metric"
            ),
            sample_weight_mode=train.get("sample_weight_mode"),
        )
    except (ValueError, TypeError) as e:
        LOG.warning("The model is loaded uncompiled: its training config %s", e)
