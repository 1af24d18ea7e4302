"""Model configs as TF's Keras writes them: ``model.get_config()``, ``model.to_json()``,
``model_from_json``, ``model_from_config``, ``Model.from_config`` and ``clone_model``.

A Sequential model's config lists its layers; a functional model's also gives each layer's
``inbound_nodes`` (``[layer_name, node_index, tensor_index, call_kwargs]`` per input of each
call) and the ``input_layers``/``output_layers`` references, so the model is rebuilt by
replaying the calls. A config never holds code: ``Lambda`` layers, whose configs carry
marshalled Python bytecode, are refused.

>>> model2 = tf.keras.models.model_from_json(model.to_json())
"""

from __future__ import annotations

import json

from engine.keras import hdf5_weights, layer_config, layers
from engine.keras.base_layer import Layer, keras_history
from engine.keras.input_layer import InputLayer
from engine.keras.network import Model, Sequential

__all__ = [
    "KERAS_VERSION",
    "clone_model",
    "deserialize_layer",
    "from_config",
    "get_config",
    "model_from_config",
    "model_from_json",
    "serialize_layer",
    "to_json",
]

KERAS_VERSION = hdf5_weights.KERAS_VERSION
MAX_JSON_CHARS = hdf5_weights.MAX_CONFIG_CHARS
MAX_NODES = 100_000

_NESTED_LAYER_KEYS = ("layer", "backward_layer", "cell")


def _layer_classes() -> dict:
    table = {name: getattr(layers, name) for name in layers.__all__}
    table = {k: v for k, v in table.items() if isinstance(v, type) and issubclass(v, Layer)}
    table.update(Model=Model, Functional=Model, Sequential=Sequential)
    return table


LAYER_CLASSES = _layer_classes()


def _class_name(layer) -> str:
    if type(layer) is Model:
        return "Functional"
    return type(layer).__name__


def serialize_layer(layer) -> dict:
    """``{"class_name": ..., "config": ...}`` of a layer or a model, JSON-ready."""
    return {
        "class_name": _class_name(layer),
        "config": layer_config.to_json_value(layer.get_config()),
    }


def _dtype_name(dtype):
    """Keras writes a dtype as its name, or (mixed precision) as a Policy config."""
    if isinstance(dtype, dict):
        return dtype.get("config", {}).get("name")
    return dtype


def _layer_kwargs(class_name: str, config: dict, custom_objects) -> dict:
    config = dict(config)
    if "dtype" in config:
        config["dtype"] = _dtype_name(config["dtype"])
    if class_name == "InputLayer":
        for flag in ("ragged", "optional"):
            if config.pop(flag, False):
                raise ValueError(f"InputLayer({flag}=True) is not supported by the engine")
    for key in _NESTED_LAYER_KEYS:
        if isinstance(config.get(key), dict):
            config[key] = deserialize_layer(config[key], custom_objects)
    if isinstance(config.get("cells"), list):
        config["cells"] = [deserialize_layer(c, custom_objects) for c in config["cells"]]
    return layer_config.deserialize_args(config, custom_objects)


def deserialize_layer(spec, custom_objects=None):
    """The layer (or model) ``{"class_name": ..., "config": ...}`` describes."""
    if not isinstance(spec, dict) or not isinstance(spec.get("class_name"), str):
        raise ValueError(
            f"A layer config must be a dict with a 'class_name' string, got {type(spec).__name__}"
        )
    class_name, config = spec["class_name"], spec.get("config", {})
    if not isinstance(config, (dict, list)):
        raise ValueError(f"The config of layer class {class_name!r} must be a dict")
    custom = (custom_objects or {}).get(class_name)
    if class_name == "Lambda" and custom is None:
        raise ValueError(
            "Refusing to load a Lambda layer: its config holds marshalled Python bytecode, "
            "which the engine never runs. Rebuild the model in code (with the Lambda's "
            "function) and load its weights with load_weights, or pass your own layer class "
            "as custom_objects={'Lambda': ...}"
        )
    cls = custom or LAYER_CLASSES.get(class_name)
    if cls is None:
        raise layer_config.unknown_object_error("layer", class_name)
    if isinstance(cls, type) and issubclass(cls, Model):
        return from_config(cls, config, custom_objects)
    return cls.from_config(_layer_kwargs(class_name, config, custom_objects))


# -- writing -------------------------------------------------------------------------------


def get_config(model) -> dict:
    """``model.get_config()`` of a Sequential or functional model."""
    if isinstance(model, Sequential):
        return {
            "name": model.name,
            "layers": [serialize_layer(x) for x in model._layers],
        }
    if not model._is_graph_network:
        raise NotImplementedError(
            f"get_config of the subclassed model {model.name}: a subclassed model's config "
            "is its Python code; override get_config (and from_config) to serialize it"
        )
    return _functional_config(model)


def _functional_config(model) -> dict:
    kept = {id(n) for n in model._nodes}
    index = {}  # id(node) -> its index among the layer's nodes in this model
    for layer in model.layers:
        mine = [n for n in layer._inbound_nodes if id(n) in kept]
        index.update({id(n): i for i, n in enumerate(mine)})

    def ref(t) -> list:
        layer, node_index, tensor_index = keras_history(t)
        return [layer.name, index[id(layer._inbound_nodes[node_index])], tensor_index]

    layer_configs = []
    for layer in model.layers:
        nodes = [n for n in layer._inbound_nodes if id(n) in kept]
        inbound = [
            [[*ref(t), layer_config.to_json_value(n.arguments)] for t in n.input_tensors]
            for n in nodes
            if n.input_tensors
        ]
        layer_configs.append(
            {**serialize_layer(layer), "name": layer.name, "inbound_nodes": inbound}
        )
    return {
        "name": model.name,
        "trainable": model.trainable,
        "layers": layer_configs,
        "input_layers": [ref(t) for t in model.inputs],
        "output_layers": [ref(t) for t in model.outputs],
    }


def to_json(model, **kwargs) -> str:
    """``model.to_json()``: the config with ``keras_version`` and ``backend``."""
    return json.dumps(
        {
            "class_name": _class_name(model),
            "config": get_config(model),
            "keras_version": KERAS_VERSION,
            "backend": "tensorflow",
        },
        **kwargs,
    )


# -- reading -------------------------------------------------------------------------------


def from_config(cls, config, custom_objects=None):
    """``Model.from_config``/``Sequential.from_config``: a model with fresh weights."""
    if isinstance(config, list) or (isinstance(cls, type) and issubclass(cls, Sequential)):
        return _sequential_from_config(config, custom_objects)
    if not isinstance(config, dict) or not isinstance(config.get("layers"), list):
        raise ValueError("A functional model config must be a dict with a 'layers' list")
    return _functional_from_config(config, custom_objects)


def _sequential_from_config(config, custom_objects):
    if isinstance(config, list):  # Keras 2.0's layout: the layer list alone
        name, layer_specs = None, config
    elif isinstance(config, dict) and isinstance(config.get("layers"), list):
        name, layer_specs = config.get("name"), config["layers"]
    else:
        raise ValueError("A Sequential config must be a dict with a 'layers' list")
    model = Sequential(name=name)
    for spec in layer_specs:
        model.add(deserialize_layer(spec, custom_objects))
    return model


def _node_inputs(node_data, outputs_by_layer: dict):
    """The tensors one inbound node reads, or None while one of them is not made yet."""
    tensors, kwargs = [], {}
    if not isinstance(node_data, list):
        raise ValueError(f"An inbound node must be a list of tensor references, got {node_data!r}")
    for item in node_data:
        if not isinstance(item, list) or len(item) not in (3, 4):
            raise ValueError(
                f"A tensor reference must be [layer, node, tensor(, kwargs)]: {item!r}"
            )
        name, node_index, tensor_index = item[:3]
        made = outputs_by_layer.get(name)
        if made is None or not isinstance(node_index, int) or node_index >= len(made):
            return None
        tensors.append(made[node_index][tensor_index])
        kwargs = item[3] if len(item) == 4 and isinstance(item[3], dict) else kwargs
    return tensors, kwargs


def _functional_from_config(config: dict, custom_objects):
    created, pending = {}, []
    outputs_by_layer: dict[str, list] = {}
    for spec in config["layers"]:
        layer = deserialize_layer(spec, custom_objects)
        name = spec.get("name", layer.name)
        created[name] = layer
        if isinstance(layer, InputLayer):
            outputs_by_layer[name] = [[layer._inbound_nodes[0].outputs[0]]]
        nodes = spec.get("inbound_nodes", [])
        if not isinstance(nodes, list) or len(nodes) > MAX_NODES:
            raise ValueError(f"Layer {name!r}: 'inbound_nodes' must be a list")
        pending += [(name, node) for node in nodes]
    while pending:
        waiting = []
        for name, node in pending:
            found = _node_inputs(node, outputs_by_layer)
            if found is None:
                waiting.append((name, node))
                continue
            tensors, kwargs = found
            out = created[name](tensors[0] if len(tensors) == 1 else tensors, **kwargs)
            outs = out if isinstance(out, (list, tuple)) else [out]
            outputs_by_layer.setdefault(name, []).append(list(outs))
        if len(waiting) == len(pending):
            names = sorted({n for n, _ in waiting})
            raise ValueError(
                f"The model config's layer graph cannot be built: the inputs of {names} are "
                "never made"
            )
        pending = waiting

    def tensor(ref):
        if not isinstance(ref, list) or len(ref) < 3 or ref[0] not in outputs_by_layer:
            raise ValueError(f"The model config names an unknown tensor {ref!r}")
        return outputs_by_layer[ref[0]][ref[1]][ref[2]]

    inputs = [tensor(r) for r in config.get("input_layers", [])]
    outputs = [tensor(r) for r in config.get("output_layers", [])]
    return Model(
        inputs[0] if len(inputs) == 1 else inputs,
        outputs[0] if len(outputs) == 1 else outputs,
        name=config.get("name"),
    )


def model_from_config(config, custom_objects=None):
    """``tf.keras.models.model_from_config``: ``{"class_name", "config"}`` -> model."""
    if isinstance(config, list):
        raise TypeError(
            "`model_from_config` expects a dictionary, not a list. Maybe you meant to use "
            "`Sequential.from_config(config)`?"
        )
    return deserialize_layer(config, custom_objects)


def model_from_json(json_string, custom_objects=None):
    """``tf.keras.models.model_from_json``: a model (fresh weights) from ``to_json()``."""
    if isinstance(json_string, bytes):
        json_string = json_string.decode("utf-8")
    if not isinstance(json_string, str) or len(json_string) > MAX_JSON_CHARS:
        raise ValueError(f"model_from_json takes a JSON string of at most {MAX_JSON_CHARS} chars")
    try:
        config = json.loads(json_string)
    except json.JSONDecodeError as e:
        raise ValueError(f"model_from_json: not valid JSON ({e})") from None
    return model_from_config(config, custom_objects)


def clone_model(model, input_tensors=None, clone_function=None):
    """``tf.keras.models.clone_model``: the same architecture with new, freshly initialized
    weights (Sequential and functional models)."""
    if input_tensors is not None or clone_function is not None:
        raise ValueError("clone_model(input_tensors=..., clone_function=...) is not supported")
    if not isinstance(model, Model) or not model._is_graph_network:
        raise ValueError(
            "Expected `model` argument to be a functional `Model` instance, but got a "
            f"subclass model instead: {model!r}"
        )
    return from_config(type(model), get_config(model))
