"""``model.summary()``: the table of layers, output shapes and parameter counts, laid out as
TF 1.15's Keras prints it."""

from __future__ import annotations

import numpy as np

from engine.keras.base_layer import keras_history

__all__ = ["print_summary"]


def _row(fields, positions, print_fn) -> None:
    line = ""
    for i, field in enumerate(fields):
        if i > 0:  # a field that filled its column keeps one space before the next
            line = line[:-1] + " "
        line = (line + str(field))[: positions[i]]
        line += " " * (positions[i] - len(line))
    print_fn(line)


def _count(weights) -> int:
    return int(sum(np.prod(w.shape.as_list(), dtype=np.int64) for w in weights))


def _shape_text(layer) -> str:
    try:
        shape = layer.output_shape
    except AttributeError:
        return "multiple"
    return (
        str(shape).replace("[", "(").replace("]", ")") if isinstance(shape, tuple) else str(shape)
    )


def _is_sequential_like(model) -> bool:
    for layer in model.layers:
        if len(layer._inbound_nodes) > 1 and type(layer).__name__ != "InputLayer":
            return False
        for node in layer._inbound_nodes:
            if len(node.input_tensors) > 1:
                return False
    return True


def print_summary(model, line_length=None, positions=None, print_fn=None) -> None:
    print_fn = print_fn or print
    if not model.built or not model.layers:
        raise ValueError(
            "This model has not yet been built. Build the model first by calling `build()` "
            "or calling `fit()` with some data, or specify an `input_shape` argument in the "
            "first layer(s) for automatic build."
        )
    sequential = type(model).__name__ == "Sequential" or _is_sequential_like(model)
    if sequential:
        line_length = line_length or 65
        positions = positions or [0.45, 0.85, 1.0]
        headers = ["Layer (type)", "Output Shape", "Param #"]
    else:
        line_length = line_length or 98
        positions = positions or [0.33, 0.55, 0.67, 1.0]
        headers = ["Layer (type)", "Output Shape", "Param #", "Connected to"]
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]
    print_fn(f'Model: "{model.name}"')
    print_fn("_" * line_length)
    _row(headers, positions, print_fn)
    print_fn("=" * line_length)
    layers = model.layers
    for i, layer in enumerate(layers):
        name = f"{layer.name} ({type(layer).__name__})"
        params = layer.count_params() if layer.built else 0
        if sequential:
            _row([name, _shape_text(layer), params], positions, print_fn)
        else:
            parents = _connections(layer)
            _row(
                [name, _shape_text(layer), params, parents[0] if parents else ""],
                positions,
                print_fn,
            )
            for extra in parents[1:]:
                _row(["", "", "", extra], positions, print_fn)
        print_fn("=" * line_length if i == len(layers) - 1 else "_" * line_length)
    trainable = _count(model.trainable_weights)
    total = _count(model.weights)
    print_fn(f"Total params: {total:,}")
    print_fn(f"Trainable params: {trainable:,}")
    print_fn(f"Non-trainable params: {total - trainable:,}")
    print_fn("_" * line_length)


def _connections(layer) -> list:
    out = []
    for node in layer._inbound_nodes:
        for t in node.input_tensors:
            h = keras_history(t)
            if h is not None:
                out.append(f"{h[0].name}[{h[1]}][{h[2]}]")
    return out
