"""The node form a TF graph takes while it is converted (``graph_def.py``,
``functionalize.py``): a ``Node`` per NodeDef, ``FunctionBody`` for a function that control
flow runs, and helpers over TF's input references (``name``, ``name:i``, ``^name``)."""

from __future__ import annotations

import collections
import dataclasses

__all__ = [
    "ARG",
    "Node",
    "FunctionBody",
    "source",
    "output_index",
    "data_inputs",
    "control_inputs",
    "canonical",
]

# A node while converting: name, op, inputs, attrs (name -> AttrValue).
Node = collections.namedtuple("Node", "name op inputs attrs")

ARG = "_FunctionArg"  # a function input while converting (becomes the engine's Arg)


@dataclasses.dataclass
class FunctionBody:
    """A function a control-flow op runs, converted to nodes: one ``ARG`` node per input
    (``args``, attrs ``type`` (TF's enum), ``shape`` and ``index``), the body and its
    results (``name:i`` references) and control results (node names)."""

    name: str
    args: list[Node]
    nodes: list[Node]
    outputs: list[str]
    control_outputs: list[str]


def source(ref: str) -> str:
    """The node name of an input reference."""
    return (ref[1:] if ref.startswith("^") else ref).split(":")[0]


def output_index(ref: str) -> int:
    parts = ref.split(":")
    return int(parts[1]) if len(parts) > 1 else 0


def data_inputs(node: Node) -> list[str]:
    return [i for i in node.inputs if not i.startswith("^")]


def control_inputs(node: Node) -> list[str]:
    return [i for i in node.inputs if i.startswith("^")]


def canonical(ref: str) -> str:
    """``name:0`` for ``name``; control references unchanged."""
    if ref.startswith("^"):
        return ref
    return ref if ":" in ref else ref + ":0"
