"""A layer's calls (inbound nodes) as TF1 Keras exposes them: ``get_input_at(i)``,
``get_output_at(i)``, their shapes and masks, and ``input_shape``/``output_shape`` that are
defined only while every call saw the same shapes."""

from __future__ import annotations

from engine.keras import backend

__all__ = ["LayerNodes"]


def _int_shapes(structure):
    if isinstance(structure, (list, tuple)):
        return type(structure)(_int_shapes(s) for s in structure)
    if isinstance(structure, dict):
        return {k: _int_shapes(v) for k, v in structure.items()}
    return backend.int_shape(structure)


class LayerNodes:
    """Mixed into ``Layer``: reads ``self._inbound_nodes``."""

    def _node_attribute(self, index: int, values, what: str):
        if not self._inbound_nodes:
            raise RuntimeError(f"The layer has never been called and thus has no defined {what}.")
        if len(self._inbound_nodes) <= index:
            raise ValueError(
                f"Asked to get {what} at node {index}, but the layer has only "
                f"{len(self._inbound_nodes)} inbound nodes."
            )
        out = values(self._inbound_nodes[index])
        return out[0] if isinstance(out, list) and len(out) == 1 else out

    def get_input_at(self, node_index: int):
        return self._node_attribute(node_index, lambda n: n.inputs, "input")

    def get_output_at(self, node_index: int):
        return self._node_attribute(node_index, lambda n: n.outputs, "output")

    def get_input_shape_at(self, node_index: int):
        return self._node_attribute(node_index, lambda n: _int_shapes(n.inputs), "input shape")

    def get_output_shape_at(self, node_index: int):
        return self._node_attribute(node_index, lambda n: _int_shapes(n.outputs), "output shape")

    def _same_shape_of_all_nodes(self, kind: str):
        """The ``kind`` ("input"/"output") shape every call had; AttributeError otherwise."""
        if not self._inbound_nodes:
            raise AttributeError(
                f'The layer "{self.name}" has never been called and thus has no defined '
                f"{kind} shape."
            )
        shapes = [
            _int_shapes(n.inputs if kind == "input" else n.outputs) for n in self._inbound_nodes
        ]
        if any(str(s) != str(shapes[0]) for s in shapes[1:]):
            raise AttributeError(
                f'The layer "{self.name}" has multiple inbound nodes, with different {kind} '
                f'shapes. Hence the notion of "{kind} shape" is ill-defined for the layer. '
                f"Use `get_{kind}_shape_at(node_index)` instead."
            )
        return shapes[0]
