"""The order of a functional model's ``layers`` as Keras lists them (and so the order in which
``save_weights`` writes them and ``load_weights`` reads them by position): by decreasing depth
(the longest path from the layer to an output), layers of the same depth in the order a
depth-first walk from the outputs first meets them. Inputs not connected to an output come
first among the layers of depth 0."""

from __future__ import annotations

from collections import defaultdict

__all__ = ["keras_layer_order"]


def _first_visits(outputs_nodes: list) -> dict:
    """layer id -> when a depth-first walk from the outputs (parents in input order) first
    meets it."""
    index: dict = {}
    seen: set = set()
    stack = list(reversed(outputs_nodes))
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        index.setdefault(id(node.layer), len(index))
        stack.extend(reversed(node.parent_nodes))
    return index


def keras_layer_order(nodes: list, output_nodes: list, input_layers: list) -> list:
    """``nodes`` (topologically ordered, as the model computes them) to Keras' layer list."""
    node_depth: dict = {}
    layer_depth: dict = {}
    layers: dict = {}
    for node in reversed(nodes):
        depth = max(node_depth.setdefault(id(node), 0), layer_depth.get(id(node.layer), 0))
        layer_depth[id(node.layer)] = depth
        layers[id(node.layer)] = node.layer
        node_depth[id(node)] = depth
        for parent in node.parent_nodes:
            node_depth[id(parent)] = max(depth + 1, node_depth.get(id(parent), 0))
    index = _first_visits(output_nodes)
    for layer in input_layers:
        if id(layer) not in layer_depth:
            layer_depth[id(layer)] = 0
            layers[id(layer)] = layer
            index[id(layer)] = -1
    by_depth = defaultdict(list)
    for key, depth in layer_depth.items():
        by_depth[depth].append(key)
    return [
        layers[key]
        for depth in sorted(by_depth, reverse=True)
        for key in sorted(by_depth[depth], key=index.__getitem__)
    ]
