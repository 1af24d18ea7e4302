"""Keras models in TF1 graph mode: functional ``Model(inputs, outputs)``, ``Sequential``, and
subclassed models (``call`` written by the user). ``compile``/``fit`` come from
:mod:`engine.keras.training`.

A functional model keeps the layer calls (nodes) between its inputs and outputs in
topological order; calling it on new tensors replays them.
"""

from __future__ import annotations

import warnings

import numpy as np

from engine.framework import graph as ops
from engine.framework.graph import Tensor
from engine.keras import backend
from engine.keras.base_layer import Layer, flatten, keras_history, keras_mask
from engine.keras.input_layer import Input, InputLayer
from engine.keras.network_order import ordered_layers
from engine.keras.network_weights import NetworkWeights
from engine.keras.summary import print_summary
from engine.keras.training import Training

__all__ = ["Model", "Sequential"]


def _as_list(x) -> list:
    if x is None:
        return []
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _trace(outputs: list) -> list:
    """The nodes that compute ``outputs`` from Input tensors, in topological order."""
    order, seen = [], set()

    def visit(t, path):
        h = keras_history(t)
        if h is None:
            raise ValueError(
                f"Output tensors of a functional Model must be the output of a Keras Layer "
                f"(thus holding past layer metadata). Found: {t}"
            )
        node = h[0]._inbound_nodes[h[1]]
        if id(node) in seen:
            return
        if id(node) in path:
            raise ValueError("The model's layer graph has a cycle")
        path.add(id(node))
        for parent in node.input_tensors:
            visit(parent, path)
        path.discard(id(node))
        seen.add(id(node))
        order.append(node)

    for t in outputs:
        visit(t, set())
    return order


class Model(Training, NetworkWeights, Layer):
    """A model: ``Model(inputs, outputs)`` from Keras tensors, or a subclass that creates
    layers in ``__init__`` and computes in ``call``.

    >>> x = Input((784,))
    >>> model = Model(x, Dense(10, activation="softmax")(Dense(64)(x)))
    >>> model.compile("adam", "sparse_categorical_crossentropy", ["accuracy"])
    """

    def __init__(self, *args, **kwargs):
        inputs = kwargs.pop("inputs", args[0] if args else None)
        outputs = kwargs.pop("outputs", args[1] if len(args) > 1 else None)
        name = kwargs.pop("name", None)
        Layer.__init__(self, name=name, **kwargs)
        Training.__init__(self)
        self._is_graph_network = False
        self.inputs: list = []
        self.outputs: list = []
        self.stop_training = False
        if inputs is not None and outputs is not None:
            self._init_graph_network(inputs, outputs)
        elif (inputs is None) != (outputs is None):
            raise ValueError("A functional Model needs both `inputs` and `outputs`")

    def _init_graph_network(self, inputs, outputs) -> None:
        self._nested_inputs, self._nested_outputs = inputs, outputs
        self.inputs = _as_list(inputs)
        self.outputs = _as_list(outputs)
        for t in self.inputs:
            h = keras_history(t)
            if h is None or not isinstance(h[0], InputLayer):
                raise ValueError(
                    f"Input tensors to a Model must come from `tf.keras.Input`. Received: {t} "
                    "(missing previous layer metadata)."
                )
        self._nodes = _trace(self.outputs)
        known = {id(t) for t in self.inputs}
        for node in self._nodes:
            if isinstance(node.layer, InputLayer) and id(node.output_tensors[0]) not in known:
                raise _disconnected(self._nodes, node.output_tensors[0])
        self._input_layers = [keras_history(t)[0] for t in self.inputs]
        self._output_layers = [keras_history(t)[0] for t in self.outputs]
        object.__setattr__(self, "_layers", ordered_layers(self.inputs, self.outputs))
        self._is_graph_network = True
        self.built = True

    # -- structure -------------------------------------------------------------------------

    @property
    def layers(self) -> list:
        return list(self._layers)

    @property
    def input_names(self) -> list:
        return [layer.name for layer in self._input_layers]

    @property
    def output_names(self) -> list:
        if self._is_graph_network:
            return [layer.name for layer in self._output_layers]
        return [f"output_{i + 1}" for i in range(len(self.outputs))]

    @property
    def input(self):
        self._require_inputs("input")
        return self.inputs[0] if len(self.inputs) == 1 else self.inputs

    @property
    def output(self):
        self._require_inputs("output")
        return self.outputs[0] if len(self.outputs) == 1 else self.outputs

    @property
    def input_shape(self):
        shapes = [backend.int_shape(t) for t in self.inputs]
        return shapes[0] if len(shapes) == 1 else shapes

    @property
    def output_shape(self):
        shapes = [backend.int_shape(t) for t in self.outputs]
        return shapes[0] if len(shapes) == 1 else shapes

    @property
    def output_mask(self):
        """The Keras masks of the outputs (None where unmasked), as TF1's ``Network``."""
        masks = [keras_mask(t) for t in self.outputs]
        return masks[0] if len(masks) == 1 else masks

    def _require_inputs(self, what: str) -> None:
        if not self.inputs:
            raise AttributeError(
                f"The model {self.name} has not been built yet, so it has no {what}: call it "
                "on a tensor or fit it on data first"
            )

    def get_layer(self, name=None, index=None) -> Layer:
        if index is not None:
            if len(self.layers) <= index:
                raise ValueError(
                    f"Was asked to retrieve layer at index {index} but model "
                    f"only has {len(self.layers)} layers."
                )
            return self.layers[index]
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise ValueError(
            f"No such layer: {name}. Existing layers are: {[x.name for x in self.layers]}."
        )

    def summary(self, line_length=None, positions=None, print_fn=None) -> None:
        print_summary(self, line_length=line_length, positions=positions, print_fn=print_fn)

    # -- calling ---------------------------------------------------------------------------

    def call(self, inputs, training=None, mask=None):  # noqa: ARG002 - masks follow tensors
        if not self._is_graph_network:
            raise NotImplementedError(
                "A subclassed Model must implement call(inputs); this one does not"
            )
        new_inputs = flatten(inputs)
        if len(new_inputs) != len(self.inputs):
            raise ValueError(
                f"Model {self.name} expects {len(self.inputs)} input(s), but it "
                f"received {len(new_inputs)} input tensors."
            )
        values = {id(old): new for old, new in zip(self.inputs, new_inputs)}
        for node in self._nodes:
            if isinstance(node.layer, InputLayer):
                continue
            args = _replace(node.inputs, values)
            kwargs = dict(node.arguments)
            if training is not None and "training" in _call_params(node.layer):
                kwargs["training"] = training
            outs = node.layer(args, **kwargs)
            for old, new in zip(node.output_tensors, flatten(outs)):
                values[id(old)] = new
        result = [values[id(t)] for t in self.outputs]
        return result[0] if len(result) == 1 else result

    def build(self, input_shape) -> None:
        """Builds a subclassed model for inputs of ``input_shape`` (batch axis included)."""
        if self._is_graph_network or self.inputs:
            self.built = True
            return
        shapes = input_shape if isinstance(input_shape, list) else [input_shape]
        placeholders = [
            Input(batch_shape=tuple(getattr(s, "as_tuple", lambda s=s: s)())) for s in shapes
        ]
        self._set_inputs(placeholders[0] if len(placeholders) == 1 else placeholders)

    def _maybe_build(self, inputs) -> None:  # noqa: ARG002 - sublayers build on their calls
        self.built = True

    def _set_inputs(self, inputs) -> None:
        """A subclassed model's symbolic inputs and outputs (built from data or a shape)."""
        outputs = self(inputs)
        self.inputs = _as_list(inputs)
        self.outputs = _as_list(outputs)
        self._input_layers = [keras_history(t)[0] for t in self.inputs]
        self.built = True

    def _build_from_data(self, arrays: list) -> None:
        """Creates inputs shaped like ``arrays`` (a deferred Sequential or subclassed model)."""
        inputs = []
        for i, a in enumerate(arrays):
            a = np.asarray(a)
            dtype = a.dtype.name if a.dtype.kind in "iub" else backend.floatx()
            inputs.append(
                Input(
                    batch_shape=(None, *a.shape[1:]),
                    dtype=dtype,
                    name=f"input_{i + 1}" if len(arrays) > 1 else None,
                )
            )
        self._set_inputs(inputs[0] if len(inputs) == 1 else inputs)


def _first_input_layer(layer):
    """The layer whose ``_batch_input_shape`` gives a Sequential its input: ``layer``, or the
    first layer of the deepest functional/Sequential model it starts with (TF1's
    ``get_input_shape_and_dtype``); None when there is none."""
    while getattr(layer, "_is_graph_network", False) or isinstance(layer, Sequential):
        if not layer.layers:
            raise ValueError("An empty Model cannot be used as a Layer.")
        layer = layer.layers[0]
    return layer if getattr(layer, "_batch_input_shape", None) is not None else None


def _disconnected(nodes: list, missing) -> ValueError:
    """TF1's error for an Input the model does not list: it names the layer that needs it
    and the layers computed before that one."""
    i, consumer = next(
        (i, n) for i, n in enumerate(nodes) if any(t is missing for t in n.input_tensors)
    )
    done = [n.layer.name for n in nodes[:i] if not isinstance(n.layer, InputLayer)]
    return ValueError(
        f"Graph disconnected: cannot obtain value for tensor {missing} at layer "
        f'"{consumer.layer.name}". The following previous layers were accessed without '
        f"issue: {done}"
    )


def _call_params(layer) -> set:
    code = getattr(type(layer).call, "__code__", None)
    return set(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]) if code else set()


def _replace(structure, values):
    if isinstance(structure, (list, tuple)):
        return type(structure)(_replace(s, values) for s in structure)
    if isinstance(structure, Tensor):
        return values.get(id(structure), structure)
    return structure


class Sequential(Model):
    """A linear stack of layers.

    >>> model = Sequential([Flatten(input_shape=(28, 28)), Dense(10, activation="softmax")])
    """

    def __init__(self, layers=None, name=None):
        super().__init__(name=name)
        object.__setattr__(self, "_layers", [])
        self._pending: list = []
        for layer in layers or []:
            self.add(layer)

    @property
    def layers(self) -> list:
        return [x for x in self._layers if not isinstance(x, InputLayer)]

    def add(self, layer) -> None:
        """Appends ``layer`` (a Layer, or an ``Input`` tensor first)."""
        if isinstance(layer, Tensor):
            h = keras_history(layer)
            if h is None or not isinstance(h[0], InputLayer):
                raise TypeError(
                    f"The added layer must be an instance of class Layer. Found: {layer}"
                )
            layer = h[0]
        if not isinstance(layer, Layer):
            raise TypeError(f"The added layer must be an instance of class Layer. Found: {layer}")
        if any(x.name == layer.name for x in self._layers):
            raise ValueError(
                f"All layers added to a Sequential model should have unique "
                f'names. Name "{layer.name}" is already the name of a layer in '
                "this model."
            )
        self._layers.append(layer)
        if self.outputs:
            self._connect(layer(self.outputs[0]))
        elif isinstance(layer, InputLayer):
            self.inputs = [layer._inbound_nodes[0].outputs[0]]
            self._connect(self.inputs[0])
        elif _first_input_layer(layer) is not None:
            first = _first_input_layer(layer)
            x = Input(
                batch_shape=first._batch_input_shape, dtype=first._dtype, name=f"{layer.name}_input"
            )
            self._layers.insert(len(self._layers) - 1, keras_history(x)[0])
            self.inputs = [x]
            self._connect(layer(x))

    def predict_proba(self, x, batch_size=32, verbose=0):
        """``predict``'s output, checked to lie in [0, 1] (TF 1.x's ``Sequential``)."""
        preds = self.predict(x, batch_size=batch_size, verbose=verbose)
        if preds.min() < 0.0 or preds.max() > 1.0:
            warnings.warn(
                "Network returning invalid probability values. The last layer might not "
                "normalize predictions into probabilities (like softmax or sigmoid would).",
                stacklevel=2,
            )
        return preds

    def predict_classes(self, x, batch_size=32, verbose=0):
        """Class indices: the argmax of the last axis, or ``p > 0.5`` (int32) for one unit."""
        proba = self.predict(x, batch_size=batch_size, verbose=verbose)
        if proba.shape[-1] > 1:
            return proba.argmax(axis=-1)
        return (proba > 0.5).astype("int32")

    def _connect(self, output) -> None:
        if len(flatten(output)) != 1:
            raise ValueError(
                "All layers in a Sequential model should have a single output "
                "tensor. For multi-output layers, use the functional API."
            )
        self.outputs = [flatten(output)[0]]
        self._init_graph_network(self.inputs, self.outputs)

    def pop(self) -> None:
        if not self.layers:
            raise TypeError("There are no layers in the model.")
        last = self.layers[-1]
        self._layers.remove(last)
        if not self.layers:
            self.inputs, self.outputs, self._is_graph_network = [], [], False
            return
        self._connect(self.layers[-1]._inbound_nodes[-1].outputs)

    def _set_inputs(self, inputs) -> None:
        x = flatten(inputs)
        if len(x) != 1:
            raise ValueError("A Sequential model takes a single input")
        self._layers.insert(0, keras_history(x[0])[0])
        self.inputs = x
        out = x[0]
        with ops.name_scope(self._name):  # TF1 builds them as calls of the model itself
            for layer in self.layers:
                out = layer(out)
        self._connect(out)

    def call(self, inputs, training=None, mask=None):
        if self._is_graph_network:
            return super().call(inputs, training=training, mask=mask)
        out = inputs
        for layer in self.layers:
            kwargs = (
                {"training": training}
                if training is not None and "training" in _call_params(layer)
                else {}
            )
            out = layer(out, **kwargs)
        return out

    def build(self, input_shape=None) -> None:
        if self._is_graph_network:
            self.built = True
            return
        if input_shape is None:
            raise ValueError("You must provide an `input_shape` argument.")
        shape = tuple(getattr(input_shape, "as_tuple", lambda: input_shape)())
        self._set_inputs(Input(batch_shape=shape))
