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

from engine.framework import registry
from engine.framework.graph import Graph, Operation, Tensor

__all__ = ["computation_ops", "op_types", "variable_writes"]


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
