"""The order of a functional model's layers (``model.layers``), as TF1 Keras'
``_map_graph_network`` sets it: by depth from the outputs, deepest (the inputs) first, and
within one depth by the order a depth-first walk from the outputs first meets them. Two
inputs at different depths therefore need not be next to each other
(``[i1, seq, i2, concat, ...]``); ``weights``, ``get_weights``, ``summary`` and the saved
files follow this order.
"""

from __future__ import annotations

from engine.keras.base_layer import keras_history

__all__ = ["ordered_layers"]


def _walk(outputs: list) -> tuple[dict, list]:
    """The layers' first-seen indices (pre-order) and the nodes in post-order."""
    layer_index: dict = {}
    post: list = []
    finished: set = set()

    def visit(t) -> None:
        layer, node_index = keras_history(t)[:2]
        node = layer._inbound_nodes[node_index]
        if id(node) in finished:
            return
        layer_index.setdefault(id(layer), len(layer_index))
        for parent in node.input_tensors:
            visit(parent)
        finished.add(id(node))
        post.append(node)

    for t in outputs:
        visit(t)
    return layer_index, post


def ordered_layers(inputs: list, outputs: list) -> list:
    """The layers between ``inputs`` and ``outputs`` in TF1 Keras' order."""
    layer_index, post = _walk(outputs)
    node_depth: dict = {}
    layer_depth: dict = {}
    layers: dict = {}
    for node in reversed(post):
        depth = max(node_depth.setdefault(id(node), 0), layer_depth.get(id(node.layer), 0))
        layer_depth[id(node.layer)] = depth
        layers[id(node.layer)] = node.layer
        node_depth[id(node)] = depth
        for parent in node.parent_nodes:
            node_depth[id(parent)] = max(depth + 1, node_depth.get(id(parent), 0))
    for t in inputs:  # inputs the outputs do not use
        layer = keras_history(t)[0]
        if id(layer) not in layer_depth:
            layer_depth[id(layer)], layer_index[id(layer)] = 0, -1
            layers[id(layer)] = layer
    keys = sorted(layers, key=lambda k: (-layer_depth[k], layer_index[k]))
    return [layers[k] for k in keys]
