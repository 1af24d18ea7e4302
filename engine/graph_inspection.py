"""Questions about what a computation would do, answered without running it.

A server that loads a graph written by someone else asks these before serving it: which ops
would computing a signature's outputs from its inputs run (function bodies of ``cond`` and
``while_loop`` included), which op types are those, and would any of them change a
variable. The walk follows data and control inputs backwards from the fetches and stops at
fed ops, as ``Session.run`` prunes the graph; a function body (an attribute holding a
function graph) is included whole, since the calling op may run any of its ops.

>>> import engine as tf
>>> from engine import graph_inspection
>>> with tf.Graph().as_default():
...     x = tf.placeholder(tf.float32, name="x")
...     y = x * 2.0
>>> sorted(graph_inspection.op_types([y], feeds=[x]))
['Const', 'Mul']
>>> graph_inspection.variable_writes([y], feeds=[x])
[]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from engine.dtypes import DType
from engine.framework import registry
from engine.framework.graph import Graph, Operation, Tensor
from engine.tensor_shape import TensorShape

__all__ = ["computation_ops", "describe_graph", "op_types", "variable_writes"]


def computation_ops(
    fetches: Iterable[Tensor | Operation], feeds: Iterable[Tensor] = ()
) -> list[Operation]:
    """The ops that computing ``fetches`` with ``feeds`` fed would run, each once: those on
    the path from the fetches back to the feeds (an op with a fed output is not run), and
    every op of the function graphs that those ops hold as attributes (recursively)."""
    fed = {t.op for t in feeds}
    stack = [f.op if isinstance(f, Tensor) else f for f in fetches]
    seen: set[Operation] = set()
    found: list[Operation] = []
    while stack:
        op = stack.pop()
        if op in seen or op in fed:
            continue
        seen.add(op)
        found.append(op)
        found.extend(_function_ops(op, seen))
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
    return found


def op_types(fetches: Iterable[Tensor | Operation], feeds: Iterable[Tensor] = ()) -> set[str]:
    """The op types that computing ``fetches`` with ``feeds`` fed would run."""
    return {op.type for op in computation_ops(fetches, feeds)}


def variable_writes(
    fetches: Iterable[Tensor | Operation], feeds: Iterable[Tensor] = ()
) -> list[Operation]:
    """The ops among ``computation_ops(fetches, feeds)`` that change a variable's value
    (assignments, optimizer updates): a computation without any only reads the model."""
    return [op for op in computation_ops(fetches, feeds) if _writes_variables(op)]


def _function_ops(op: Operation, seen: set[Operation]) -> Iterator[Operation]:
    for value in op.attrs.values():
        if isinstance(value, Graph) and value.building_function:
            for inner in value.get_operations():
                if inner not in seen:
                    seen.add(inner)
                    yield inner
                    yield from _function_ops(inner, seen)


def _writes_variables(op: Operation) -> bool:
    opdef = registry.lookup(op.type)
    return opdef is not None and opdef.flags.writes_variables


# -- describing a graph (for drawing it) ---------------------------------------------------

_MAX_ATTR_TEXT = 200
_MAX_ATTR_ITEMS = 16


def describe_graph(graph: Graph) -> dict:
    """A JSON-ready description of ``graph`` for viewers (the server's graph endpoint and
    ``python -m engine inspect --html``): every op in creation order with its type, requested
    device, data inputs (tensor names), control inputs (op names), outputs (dtype and static
    shape, ``None`` for unknown dimensions or rank) and attributes summarized as plain
    values (large arrays and long strings abbreviated; a function graph as its op count);
    and the name scopes with their op counts.

    >>> import engine as tf
    >>> from engine import graph_inspection
    >>> g = tf.Graph()
    >>> with g.as_default():
    ...     x = tf.placeholder(tf.float32, [None, 3], name="x")
    ...     with tf.name_scope("layer"):
    ...         y = tf.identity(x, name="y")
    >>> [op["name"] for op in graph_inspection.describe_graph(g)["ops"]]
    ['x', 'layer/y']
    """
    ops = []
    for op in graph.get_operations():
        ops.append(
            {
                "name": op.name,
                "type": op.type,
                "device": op.device,
                "inputs": [t.name for t in op.inputs],
                "control_inputs": [c.name for c in op.control_inputs],
                "outputs": [{"dtype": t.dtype.name, "shape": _shape_of(t)} for t in op.outputs],
                "attrs": {k: _summarize(v) for k, v in sorted(op.attrs.items())},
            }
        )
    return {"op_count": len(ops), "ops": ops, "scopes": _scopes([op["name"] for op in ops])}


def _scopes(names: list[str]) -> list[dict]:
    """The name scopes (every name prefix other ops live under) with how many ops each holds
    (an op named like a scope belongs to it), outermost first."""
    counts: dict[str, int] = {}
    for name in names:
        parts = name.split("/")
        for i in range(1, len(parts)):
            prefix = "/".join(parts[:i])
            counts[prefix] = counts.get(prefix, 0) + 1
    for name in names:
        if name in counts:
            counts[name] += 1
    return [{"name": k, "ops": counts[k]} for k in sorted(counts, key=lambda k: (k.count("/"), k))]


def _shape_of(t: Tensor) -> list | None:
    dims = t.shape.as_list() if t.shape.ndims is not None else None
    return None if dims is None else [d if d is None else int(d) for d in dims]


def _summarize(value: object) -> object:
    """An attribute value as JSON: scalars as themselves, dtypes by name, shapes as lists,
    small arrays as nested lists, everything large abbreviated."""
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if np.isfinite(value) else str(value)
    if isinstance(value, str):
        return _clip(value)
    if isinstance(value, bytes):
        return _clip(value.decode("utf-8", "backslashreplace"))
    if isinstance(value, DType):
        return value.name
    if isinstance(value, TensorShape):
        return None if value.ndims is None else [d for d in value.as_list()]
    if isinstance(value, np.ndarray):
        head = f"{value.dtype.name} array of shape {list(value.shape)}"
        if value.size <= _MAX_ATTR_ITEMS and value.dtype.kind in "biuf":
            flat = [v if np.isfinite(v) else str(v) for v in value.ravel().tolist()]
            return {"array": head, "values": flat}
        return {"array": head}
    if isinstance(value, list | tuple):
        items = [_summarize(v) for v in value[:_MAX_ATTR_ITEMS]]
        if len(value) > _MAX_ATTR_ITEMS:
            items.append(f"... ({len(value)} items)")
        return items
    if isinstance(value, Graph):
        return f"function graph ({len(value.get_operations())} ops)"
    return _clip(repr(value))


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_ATTR_TEXT else text[:_MAX_ATTR_TEXT] + "..."
