"""Which of a model's updates and losses belong to its own inputs.

A layer records an update (BatchNormalization's moving averages) or a loss (an activity
regularizer) each time it is called. A model nested in another one was first called on its
own ``Input``; those first-call updates read a placeholder the outer model never feeds. TF1's
``Network.updates``/``losses`` keep only what is reachable from the model's inputs (plus what
needs no input at all); :func:`feedable_from` does the same by dropping the items that depend
on a ``Placeholder`` other than the model's inputs.
"""

from __future__ import annotations

from engine.framework.graph import Operation, Tensor

__all__ = ["feedable_from"]


def _placeholders(op: Operation, memo: dict) -> frozenset:
    """The ``Placeholder`` ops ``op`` depends on (through data and control inputs)."""
    found, stack, seen = set(), [op], set()
    while stack:
        cur = stack.pop()
        if id(cur) in seen:
            continue
        seen.add(id(cur))
        if id(cur) in memo:
            found |= memo[id(cur)]
            continue
        if cur.type == "Placeholder":
            found.add(cur)
        stack.extend(t.op for t in cur.inputs)
        stack.extend(cur.control_inputs)
    memo[id(op)] = frozenset(found)
    return memo[id(op)]


def feedable_from(items: list, inputs: list) -> list:
    """``items`` (tensors or ops) that can be computed by feeding only ``inputs``."""
    allowed = {id(t.op) for t in inputs if isinstance(t, Tensor)}
    memo: dict = {}
    out = []
    for item in items:
        op = item.op if isinstance(item, Tensor) else item
        if not isinstance(op, Operation) or all(id(p) in allowed for p in _placeholders(op, memo)):
            out.append(item)
    return out
