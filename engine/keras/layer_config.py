"""Layer configs in the JSON form Keras writes, for every layer class at once.

A Keras layer's config holds its constructor arguments: initializers, regularizers and
constraints as ``{"class_name": ..., "config": ...}``, activations by name, shapes as lists.
Rather than each layer listing its arguments again in ``get_config``, :func:`init_arg_config`
reads them from the layer's ``__init__`` signature and the attributes of the same names (what
Keras layers keep); a layer's own ``get_config`` adds or overrides the keys it computes.
:func:`deserialize_args` turns the JSON values back into objects for ``from_config``, and
:func:`to_json_value` makes any config JSON-ready (nested layers included).

>>> Dense(3, kernel_initializer="he_normal").get_config()["kernel_initializer"]
{'class_name': 'VarianceScaling', 'config': {'scale': 2.0, 'mode': 'fan_in', ...}}
"""

from __future__ import annotations

import inspect

import numpy as np

from engine import dtypes
from engine.keras import activations, initializers, regularizers

__all__ = [
    "deserialize_args",
    "deserialize_constraint",
    "deserialize_initializer",
    "init_arg_config",
    "to_json_value",
    "unknown_object_error",
]

# Arguments the base Layer writes itself, or that only shape the first call.
_BASE_ARGS = {
    "name",
    "trainable",
    "dtype",
    "dynamic",
    "input_shape",
    "batch_input_shape",
    "batch_size",
    "input_dim",
    "weights",
    "autocast",
    "rank",  # the spatial rank Conv, Pooling, ... pass up from Conv2D, MaxPooling1D, ...
    "kind",
    "fused",  # not in the config TF's Keras writes for BatchNormalization
}

# Keras' class names of the initializers TF1's Keras writes that the engine makes from a
# function (``he_normal()`` is a VarianceScaling).
_INITIALIZER_FACTORIES = {
    "HeNormal": initializers.he_normal,
    "HeUniform": initializers.he_uniform,
    "LecunNormal": initializers.lecun_normal,
    "LecunUniform": initializers.lecun_uniform,
}

_CONSTRAINTS = {
    "MaxNorm": regularizers.MaxNorm,
    "NonNeg": regularizers.NonNeg,
    "UnitNorm": regularizers.UnitNorm,
    "MinMaxNorm": regularizers.MinMaxNorm,
}


_MISSING = object()


def unknown_object_error(kind: str, class_name) -> ValueError:
    """The error for a class name the engine does not have."""
    return ValueError(
        f"Unknown {kind}: {class_name!r}. Please ensure this object is passed to the "
        "`custom_objects` argument (e.g. load_model(path, custom_objects={"
        f"{class_name!r}: {class_name}}})) or is a {kind} the engine has."
    )


def _init_params(cls) -> list[str]:
    """The constructor arguments of ``cls``: its own ``__init__``'s, then (while an
    ``__init__`` takes ``**kwargs``) those of the classes it passes them on to."""
    names: list[str] = []
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None or klass is object:
            continue
        params = inspect.signature(init).parameters.values()
        names += [
            p.name
            for p in params
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
            and p.name != "self"
            and p.name not in names
        ]
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            break
    return [n for n in names if n not in _BASE_ARGS]


def init_arg_config(layer) -> dict:
    """``{argument: value}`` for each constructor argument ``layer`` keeps as an attribute,
    in Keras' JSON form."""
    own = inspect.signature(type(layer).__init__).parameters
    config = {}
    for name in _init_params(type(layer)):
        if name == "cell" and name not in own:
            continue  # LSTM and the like build their own cell; they take none
        value = getattr(layer, name, _MISSING)
        if value is _MISSING or inspect.ismethod(value):
            continue
        try:
            config[name] = serialize_arg(name, value)
        except (TypeError, ValueError):
            pass  # an attribute that is not the argument (a custom layer's own get_config rules)
    return config


def serialize_arg(name: str, value):
    """One constructor argument in Keras' JSON form."""
    if isinstance(value, dict):  # already {"class_name": ..., "config": ...}
        return to_json_value(value)
    if value is None:
        return "linear" if name in ("activation", "recurrent_activation") else None
    if name in ("activation", "recurrent_activation"):
        return value if isinstance(value, str) else activations.serialize(value)
    if name.endswith("_initializer"):
        return _object_config(initializers.get(value))
    if name.endswith("_regularizer"):
        return _regularizer_config(regularizers.get(value))
    if name.endswith("_constraint"):
        return _object_config(regularizers.get_constraint(value))
    return to_json_value(value)


def _regularizer_config(reg) -> dict:
    if isinstance(reg, regularizers.L1L2):
        if reg.l1 and not reg.l2:
            return {"class_name": "L1", "config": {"l1": reg.l1}}
        if reg.l2 and not reg.l1:
            return {"class_name": "L2", "config": {"l2": reg.l2}}
    return _object_config(reg)


def _object_config(obj) -> dict:
    get_config = getattr(obj, "get_config", None)
    if callable(get_config):
        config = get_config()
    else:
        config = {k: v for k, v in vars(obj).items() if not k.startswith("_")}
    return {"class_name": type(obj).__name__, "config": to_json_value(config)}


def to_json_value(value):
    """``value`` with tuples as lists, numpy scalars as Python numbers, dtypes by name and
    layers (anything with ``get_config``) as ``{"class_name", "config"}``."""
    if isinstance(value, dict):
        return {str(k): serialize_arg(str(k), v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json_value(v) for v in value]
    if isinstance(value, (np.generic, np.ndarray)):
        return value.tolist()
    if isinstance(value, dtypes.DType):
        return value.name
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "get_config"):
        return {"class_name": type(value).__name__, "config": to_json_value(value.get_config())}
    raise TypeError(f"Cannot serialize {value!r} ({type(value).__name__}) in a Keras config")


def _lookup(custom_objects, class_name):
    return (custom_objects or {}).get(class_name)


def deserialize_initializer(value, custom_objects=None):
    """An initializer from Keras' JSON form (a name, or class_name and config)."""
    if not isinstance(value, dict):
        return initializers.get(value)
    class_name, config = _class_and_config(value, "initializer")
    custom = _lookup(custom_objects, class_name)
    if custom is not None:
        return custom(**config)
    if class_name in _INITIALIZER_FACTORIES:
        return _INITIALIZER_FACTORIES[class_name](seed=config.get("seed"))
    try:
        return initializers.get({"class_name": class_name, "config": config})
    except ValueError:
        raise unknown_object_error("initializer", class_name) from None


def deserialize_constraint(value, custom_objects=None):
    if not isinstance(value, dict):
        return regularizers.get_constraint(value)
    class_name, config = _class_and_config(value, "constraint")
    cls = _lookup(custom_objects, class_name) or _CONSTRAINTS.get(class_name)
    if cls is None:
        raise unknown_object_error("constraint", class_name)
    return cls(**config)


def _deserialize_regularizer(value, custom_objects=None):
    if not isinstance(value, dict):
        return regularizers.get(value)
    class_name, config = _class_and_config(value, "regularizer")
    custom = _lookup(custom_objects, class_name)
    if custom is not None:
        return custom(**config)
    if class_name not in ("L1", "L2", "L1L2", "l1", "l2", "l1_l2"):
        raise unknown_object_error("regularizer", class_name)
    return regularizers.L1L2(l1=config.get("l1", 0.0), l2=config.get("l2", 0.0))


def _deserialize_activation(value, custom_objects=None):
    name = value.get("class_name") if isinstance(value, dict) else value
    custom = _lookup(custom_objects, name) if isinstance(name, str) else None
    if custom is not None:
        return custom
    try:
        return activations.get(name)
    except ValueError:
        raise unknown_object_error("activation function", name) from None


def _class_and_config(value: dict, kind: str) -> tuple:
    class_name, config = value.get("class_name"), value.get("config", {})
    if not isinstance(class_name, str) or not isinstance(config, dict):
        raise ValueError(
            f"A serialized {kind} must be {{'class_name': str, 'config': dict}}, got {value!r}"
        )
    return class_name, config


def deserialize_args(config: dict, custom_objects=None) -> dict:
    """``config`` with its initializers, regularizers, constraints and activations as the
    objects a layer's constructor takes."""
    out = {}
    for name, value in config.items():
        if value is None or not isinstance(name, str):
            out[name] = value
        elif name in ("activation", "recurrent_activation"):
            out[name] = _deserialize_activation(value, custom_objects)
        elif name.endswith("_initializer"):
            out[name] = deserialize_initializer(value, custom_objects)
        elif name.endswith("_regularizer"):
            out[name] = _deserialize_regularizer(value, custom_objects)
        elif name.endswith("_constraint"):
            out[name] = deserialize_constraint(value, custom_objects)
        else:
            out[name] = value
    return out
