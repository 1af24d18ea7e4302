"""Keras' ``Layer`` in TF1 graph mode: a callable object that creates its weights on the
first call (``build``), computes its outputs in ``call``, and records each call as a node so
functional models can be traced from their outputs back to their ``Input`` tensors.

>>> dense = Dense(10, activation="relu")
>>> y = dense(x)                 # variables dense/kernel, dense/bias
>>> z = dense(x2)                # the same variables
"""

from __future__ import annotations

import inspect
import re
import weakref

import numpy as np

from engine import dtypes
from engine.framework import graph as ops
from engine.framework.graph import Tensor
from engine.keras import backend, initializers, layer_config, regularizers
from engine.keras.input_spec_check import assert_input_compatibility
from engine.keras.layer_nodes import LayerNodes
from engine.ops import array as array_ops
from engine.ops import math as math_ops
from engine.tensor_shape import TensorShape
from engine.variables import Variable

__all__ = ["InputSpec", "Layer", "Node", "flatten", "keras_history", "keras_mask", "to_snake_case"]

# Keras' bookkeeping on tensors lives in side tables (engine tensors have fixed slots).
_HISTORY: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_MASKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

_LAYER_KWARGS = {
    "input_shape",
    "batch_input_shape",
    "batch_size",
    "weights",
    "activity_regularizer",
    "autocast",
    "input_dim",
    "input_length",
}


def to_snake_case(name: str) -> str:
    """``Conv2DTranspose`` -> ``conv2d_transpose``, as Keras names its layers."""
    s = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    s = re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower()
    return s if s[0] != "_" else "private" + s


def flatten(structure) -> list:
    """The tensors (leaves) of a nested list/tuple/dict, in order."""
    if isinstance(structure, (list, tuple)):
        return [t for s in structure for t in flatten(s)]
    if isinstance(structure, dict):
        return [t for k in sorted(structure) for t in flatten(structure[k])]
    return [structure]


def map_structure(fn, structure):
    if isinstance(structure, (list, tuple)):
        return type(structure)(map_structure(fn, s) for s in structure)
    if isinstance(structure, dict):
        return {k: map_structure(fn, v) for k, v in structure.items()}
    return fn(structure)


def keras_history(t):
    """``(layer, node_index, tensor_index)`` of a tensor a Keras layer produced, else None."""
    return _HISTORY.get(t) if isinstance(t, Tensor) else None


def keras_mask(t):
    return _MASKS.get(t) if isinstance(t, Tensor) else None


def set_keras_mask(t, mask) -> None:
    if isinstance(t, Tensor):
        if mask is None:
            _MASKS.pop(t, None)
        else:
            _MASKS[t] = mask


class InputSpec:
    """What a layer accepts (``ndim``, ``min_ndim``, ``dtype``, ``axes``); checked per call."""

    def __init__(self, dtype=None, shape=None, ndim=None, max_ndim=None, min_ndim=None, axes=None):
        self.dtype = dtype
        self.shape = shape
        self.ndim = len(shape) if shape is not None else ndim
        self.max_ndim = max_ndim
        self.min_ndim = min_ndim
        self.axes = axes or {}


class Node:
    """One call of a layer on Keras tensors: its inputs, outputs and call arguments."""

    def __init__(self, layer, inputs, outputs, arguments: dict):
        self.layer = layer
        self.inputs = inputs
        self.outputs = outputs
        self.arguments = arguments
        self.input_tensors = flatten(inputs)
        self.output_tensors = flatten(outputs)

    @property
    def parent_nodes(self) -> list:
        out = []
        for t in self.input_tensors:
            h = keras_history(t)
            if h is not None:
                out.append(h[0]._inbound_nodes[h[1]])
        return out


def _shape_of(x) -> TensorShape:
    if isinstance(x, (Tensor, Variable)):
        return x.shape
    return TensorShape(np.shape(x))


def _accepts(fn, arg: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return arg in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


class Layer(LayerNodes):
    """The base of every Keras layer. Subclasses create weights in ``build(input_shape)``
    with :meth:`add_weight` and compute outputs in ``call(inputs)``."""

    def __init__(self, trainable=True, name=None, dtype=None, dynamic=False, **kwargs):
        unknown = set(kwargs) - _LAYER_KWARGS
        if unknown:
            raise TypeError(f"Keyword argument not understood: {sorted(unknown)[0]}")
        object.__setattr__(self, "_layers", [])
        self._name = name or backend.unique_object_name(to_snake_case(type(self).__name__))
        self._trainable = bool(trainable)
        self._dtype = None if dtype is None else dtypes.as_dtype(dtype).base_dtype.name
        self.built = False
        self.supports_masking = False
        self.input_spec = None
        self.dynamic = dynamic
        self._trainable_weights: list = []
        self._non_trainable_weights: list = []
        self._losses: list = []
        self._updates: list = []
        self._inbound_nodes: list = []
        self._initial_weights = kwargs.get("weights")
        self.activity_regularizer = regularizers.get(kwargs.get("activity_regularizer"))
        if "batch_input_shape" in kwargs:
            self._batch_input_shape = tuple(kwargs["batch_input_shape"])
        elif "input_shape" in kwargs:
            shape = kwargs["input_shape"]
            shape = (shape,) if isinstance(shape, int) else tuple(shape)
            self._batch_input_shape = (kwargs.get("batch_size"), *shape)

    # -- attributes ------------------------------------------------------------------------

    def __setattr__(self, key, value):
        # Layers assigned as attributes (or in lists) are tracked: their weights are ours.
        layers = self.__dict__.get("_layers")
        if layers is not None and not key.startswith("_"):
            for v in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(v, Layer) and v is not self and all(v is not x for x in layers):
                    layers.append(v)
        object.__setattr__(self, key, value)

    @property
    def name(self) -> str:
        return self._name

    @property
    def dtype(self):
        return self._dtype or backend.floatx()

    @property
    def trainable(self) -> bool:
        return self._trainable

    @trainable.setter
    def trainable(self, value) -> None:
        self._trainable = bool(value)
        for layer in self._layers:
            layer.trainable = value

    @property
    def trainable_weights(self) -> list:
        if not self.trainable:
            return []
        out = list(self._trainable_weights)
        for layer in self._layers:
            out += layer.trainable_weights
        return _dedup(out)

    @property
    def non_trainable_weights(self) -> list:
        out = list(self._non_trainable_weights)
        if not self.trainable:
            out = list(self._trainable_weights) + out
        for layer in self._layers:
            out += layer.non_trainable_weights
        return _dedup(out)

    @property
    def weights(self) -> list:
        return _dedup(self.trainable_weights + self.non_trainable_weights)

    variables = weights
    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights

    @property
    def losses(self) -> list:
        out = list(self._losses)
        for layer in self._layers:
            out += layer.losses
        return out

    @property
    def updates(self) -> list:
        out = list(self._updates) if self.trainable else []
        for layer in self._layers:
            out += layer.updates
        return out

    def add_loss(self, losses, inputs=None) -> None:  # noqa: ARG002 - Keras' signature
        for loss in losses if isinstance(losses, (list, tuple)) else [losses]:
            self._losses.append(loss() if callable(loss) else loss)

    def add_update(self, updates, inputs=None) -> None:  # noqa: ARG002 - Keras' signature
        for u in updates if isinstance(updates, (list, tuple)) else [updates]:
            self._updates.append(u() if callable(u) else u)

    # -- weights ---------------------------------------------------------------------------

    def add_weight(
        self,
        name=None,
        shape=None,
        dtype=None,
        initializer=None,
        regularizer=None,
        trainable=None,
        constraint=None,
        **kwargs,  # noqa: ARG002 - Keras' extras (partitioner, use_resource, ...)
    ):
        """Creates a variable ``<layer scope>/<name>`` that Keras' session initializes."""
        shape = () if shape is None else tuple(int(d) for d in TensorShape(shape).as_list())
        dtype = dtypes.as_dtype(dtype or self.dtype).base_dtype
        init = initializers.get(initializer)
        if init is None:
            init = initializers.GlorotUniform() if dtype.is_floating else initializers.Zeros()
        trainable = True if trainable is None else bool(trainable)
        with ops.control_dependencies(None):
            v = Variable(
                lambda: init(shape, dtype=dtype),
                name=name,
                dtype=dtype,
                trainable=trainable,
                constraint=regularizers.get_constraint(constraint),
            )
        backend.track_variable(v)
        (self._trainable_weights if trainable else self._non_trainable_weights).append(v)
        regularizer = regularizers.get(regularizer)
        if regularizer is not None:
            with ops.name_scope(f"{name}/Regularizer"):
                self._losses.append(regularizer(v))
        return v

    def get_weights(self) -> list:
        return backend.batch_get_value(self.weights)

    def set_weights(self, weights) -> None:
        params = self.weights
        if len(params) != len(weights):
            raise ValueError(
                f'You called `set_weights(weights)` on layer "{self.name}" with a weight list '
                f"of length {len(weights)}, but the layer was expecting {len(params)} weights."
            )
        pairs = []
        for p, w in zip(params, weights):
            w = np.asarray(w)
            if tuple(p.shape.as_list()) != w.shape:
                raise ValueError(
                    f"Layer weight shape {tuple(p.shape.as_list())} not compatible with "
                    f"provided weight shape {w.shape}"
                )
            pairs.append((p, w))
        backend.batch_set_value(pairs)

    def count_params(self) -> int:
        if not self.built:
            raise ValueError(
                f"You tried to call `count_params` on {self.name}, but the layer isn't built. "
                "You can build it manually via: `layer.build(batch_input_shape)`."
            )
        return int(sum(np.prod(w.shape.as_list(), dtype=np.int64) for w in self.weights))

    # -- calling ---------------------------------------------------------------------------

    def build(self, input_shape) -> None:  # noqa: ARG002 - subclasses use it
        self.built = True

    def call(self, inputs, **kwargs):  # noqa: ARG002 - subclasses use them
        return inputs

    def compute_mask(self, inputs, mask=None):  # noqa: ARG002 - subclasses use inputs
        return mask if self.supports_masking else None

    def compute_output_shape(self, input_shape):  # noqa: ARG002 - traced from the first call
        if self._inbound_nodes:
            outs = self._inbound_nodes[0].output_tensors
            shapes = [TensorShape(backend.int_shape(t)) for t in outs]
            return shapes[0] if len(shapes) == 1 else shapes
        raise NotImplementedError(
            f"Layer {type(self).__name__} does not implement compute_output_shape"
        )

    def _maybe_build(self, inputs) -> None:
        if self.built:
            return
        if self._dtype is None:
            first = flatten(inputs)[0]
            if isinstance(first, (Tensor, Variable)) and first.dtype.base_dtype.is_floating:
                self._dtype = first.dtype.base_dtype.name
        shapes = map_structure(_shape_of, inputs)
        self.build(shapes)
        self.built = True
        if self._initial_weights is not None:
            self.set_weights(self._initial_weights)
            self._initial_weights = None

    def __call__(self, inputs, *args, **kwargs):
        if isinstance(inputs, (list, tuple)):
            inputs = type(inputs)(_to_tensor(x) for x in inputs)
        elif not isinstance(inputs, dict):
            inputs = _to_tensor(inputs)
        previous_mask = _collect_mask(inputs)
        if "mask" not in kwargs and _accepts(self.call, "mask") and previous_mask is not None:
            kwargs["mask"] = previous_mask
        if "training" in kwargs and not _accepts(self.call, "training"):
            kwargs.pop("training")  # as Keras: layers that do not take it are called without
        assert_input_compatibility(self.input_spec, inputs, self.name)
        with ops.name_scope(self._name):
            self._maybe_build(inputs)
            outputs = self.call(inputs, *args, **kwargs)
            # An output that is an input gets its own tensor (its history is this layer's).
            ids = {id(t) for t in flatten(inputs)}
            outputs = map_structure(lambda t: array_ops.identity(t) if id(t) in ids else t, outputs)
            if self.activity_regularizer is not None:
                with ops.name_scope("ActivityRegularizer"):
                    for out in flatten(outputs):
                        # TF1 divides by the batch size (batch-agnostic strength).
                        loss = self.activity_regularizer(out)
                        batch = math_ops.cast(array_ops.shape(out)[0], loss.dtype)
                        self._losses.append(loss / batch)
            mask = self.compute_mask(inputs, kwargs.get("mask", previous_mask))
        for out, m in zip(
            flatten(outputs),
            flatten(mask) if isinstance(mask, list) else [mask] * len(flatten(outputs)),
        ):
            set_keras_mask(out, m)
        self._record_node(inputs, outputs, args, kwargs)
        return outputs

    apply = __call__

    def _record_node(self, inputs, outputs, args, kwargs) -> None:
        if args or not all(keras_history(t) is not None for t in flatten(inputs)):
            return
        arguments = {k: v for k, v in kwargs.items() if k != "mask"}
        node = Node(self, inputs, outputs, arguments)
        self._inbound_nodes.append(node)
        for i, t in enumerate(flatten(outputs)):
            if isinstance(t, Tensor):
                _HISTORY[t] = (self, len(self._inbound_nodes) - 1, i)

    # -- inputs and outputs of the first call ----------------------------------------------

    def _node(self, attr):
        if not self._inbound_nodes:
            raise AttributeError(f"Layer {self.name} is not connected, no {attr} to return.")
        return self._inbound_nodes[0]

    @property
    def input(self):
        return self._node("input").inputs

    @property
    def output(self):
        return self._node("output").outputs

    @property
    def input_shape(self):
        return self._same_shape_of_all_nodes("input")  # TF1: one shape for every call

    @property
    def output_shape(self):
        return self._same_shape_of_all_nodes("output")

    def get_config(self) -> dict:
        config = {"name": self.name, "trainable": self.trainable, "dtype": self.dtype}
        if hasattr(self, "_batch_input_shape"):
            config["batch_input_shape"] = self._batch_input_shape
        return {**config, **layer_config.init_arg_config(self)}

    @classmethod
    def from_config(cls, config: dict):
        return cls(**layer_config.deserialize_args(config))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name}>"


def _dedup(weights: list) -> list:
    seen, out = set(), []
    for w in weights:
        if id(w) not in seen:
            seen.add(id(w))
            out.append(w)
    return out


def _to_tensor(x):
    if isinstance(x, (Tensor, Variable)) or x is None:
        return x
    return backend.as_tensor(x)


def _collect_mask(inputs):
    masks = [keras_mask(t) for t in flatten(inputs)]
    if all(m is None for m in masks):
        return None
    return masks[0] if len(masks) == 1 else masks
