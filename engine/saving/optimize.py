"""Graph optimization for serving: ``optimize(graph_def, keep=[names])``.

Passes, in order:
1. prune: drop ops that no kept tensor or op depends on (data or control edges);
2. fold constants: replace stateless single-output ops whose inputs are all constants by a
   constant holding their value (computed with the same numpy kernel the runtime uses, so
   results are bit-identical);
3. merge duplicates: ops with the same type, inputs, attrs, control inputs and device are one
   op (the "many identical ops" anti-pattern, e.g. repeated constants);
4. remove identity chains: consumers of a plain ``Identity`` read its input directly.

Stateful ops (variables, assignments, random draws, prints, asserts, control flow) are never
folded or merged, and ops named in ``keep`` keep their names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

import numpy as np

from engine import dtypes
from engine.framework.graph import Graph, Operation, Tensor
from engine.saving.graph_def import GraphDef, _encode_attr, import_graph_def

__all__ = ["optimize", "OptimizeReport"]

_MAX_FOLDED_BYTES = 16 << 20
_NEVER_FOLD = frozenset(["Placeholder", "PlaceholderWithDefault", "Arg", "Const"])


@dataclass
class OptimizeReport:
    nodes_before: int = 0
    nodes_after: int = 0
    pruned: int = 0
    folded: int = 0
    merged: int = 0
    identities_removed: int = 0
    op_counts_before: dict = field(default_factory=dict)
    op_counts_after: dict = field(default_factory=dict)

    def __str__(self) -> str:
        lines = [
            f"nodes: {self.nodes_before} -> {self.nodes_after} (pruned {self.pruned}, "
            f"folded {self.folded}, merged {self.merged}, identities removed "
            f"{self.identities_removed})",
            f"{'op type':28} {'before':>7} {'after':>7}",
        ]
        for t in sorted(set(self.op_counts_before) | set(self.op_counts_after)):
            lines.append(
                f"{t:28} {self.op_counts_before.get(t, 0):>7} {self.op_counts_after.get(t, 0):>7}"
            )
        return "\n".join(lines)


class _Node:
    """A mutable op description the passes rewrite: inputs point at other nodes' outputs."""

    __slots__ = ("name", "type", "inputs", "controls", "attrs", "device", "op", "stateful")

    def __init__(self, op: Operation):
        self.name = op.name
        self.type = op.type
        self.inputs = [(t.op.name, t.value_index) for t in op.inputs]
        self.controls = [c.name for c in op.control_inputs]
        self.attrs = dict(op._attrs)
        self.device = op.device
        self.op = op
        self.stateful = op._opdef.flags.stateful


def _attr_key(v):
    if isinstance(v, np.ndarray):
        return (
            "nd",
            v.dtype.str,
            v.shape,
            v.tobytes() if v.dtype.kind != "O" else tuple(v.reshape(-1).tolist()),
        )
    if isinstance(v, (list, tuple)):
        return ("seq", tuple(_attr_key(x) for x in v))
    if getattr(v, "_is_function_graph", False):
        return ("func", id(v))
    return (type(v).__name__, v if not hasattr(v, "as_tuple") else ("shape", v.as_tuple()))


def _parse_keep(keep):
    tensors, op_names = set(), set()
    for k in keep or ():
        if isinstance(k, Tensor):
            tensors.add((k.op.name, k.value_index))
        elif isinstance(k, Operation):
            op_names.add(k.name)
        elif isinstance(k, str):
            if k.startswith("^"):
                op_names.add(k[1:])
            elif ":" in k:
                name, _, idx = k.rpartition(":")
                tensors.add((name, int(idx)))
            else:
                op_names.add(k)
        else:
            raise TypeError(f"keep entries must be tensor or op names, got {k!r}")
    return tensors, op_names


def optimize(graph_def, keep) -> tuple[GraphDef, OptimizeReport]:
    """Returns an optimized copy of ``graph_def`` computing the ``keep`` tensors/ops, and a
    report of op counts before and after."""
    if isinstance(graph_def, Graph):
        graph_def = graph_def.as_graph_def()
    keep_tensors, keep_ops = _parse_keep(keep)
    if not keep_tensors and not keep_ops:
        raise ValueError("optimize() needs at least one tensor or op name to keep")
    scratch = Graph()
    with scratch.as_default():
        import_graph_def(graph_def, name="")
    nodes = {op.name: _Node(op) for op in scratch.get_operations()}
    order = [op.name for op in scratch.get_operations()]
    report = OptimizeReport(nodes_before=len(nodes), op_counts_before=graph_def.op_counts())
    for name in keep_ops | {n for n, _ in keep_tensors}:
        if name not in nodes:
            raise ValueError(f"optimize(): {name!r} is not an op of the graph")
    pinned = keep_ops | {n for n, _ in keep_tensors}

    live = _reachable(nodes, pinned)
    report.pruned = len(nodes) - len(live)
    order = [n for n in order if n in live]
    report.folded = _fold_constants(nodes, order)
    report.merged = _merge_duplicates(nodes, order, pinned)
    report.identities_removed = _remove_identities(nodes, order, pinned)
    live = _reachable(nodes, pinned)
    order = [n for n in order if n in live]

    doc_nodes = []
    for name in order:
        n = nodes[name]
        doc_nodes.append(
            {
                "name": n.name,
                "op": n.type,
                "inputs": [f"{src}:{i}" for src, i in n.inputs] + ["^" + c for c in n.controls],
                "device": n.device,
                "attrs": {k: _encode_attr(v) for k, v in sorted(n.attrs.items())},
            }
        )
    out = GraphDef(
        {"format": graph_def._doc["format"], "version": graph_def.version, "nodes": doc_nodes}
    )
    report.nodes_after = len(doc_nodes)
    report.op_counts_after = out.op_counts()
    return out, report


def _reachable(nodes, roots) -> set[str]:
    seen, stack = set(), list(roots)
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        n = nodes[name]
        stack.extend(src for src, _ in n.inputs)
        stack.extend(n.controls)
    return seen


def _fold_constants(nodes, order) -> int:
    folded = 0
    for name in order:
        n = nodes[name]
        if n.stateful or n.type in _NEVER_FOLD or len(n.op.outputs) != 1 or n.controls:
            continue
        opdef = n.op._opdef
        if opdef.kernel is None or opdef.bind is not None or not n.inputs:
            continue
        srcs = [nodes[src] for src, _ in n.inputs]
        if any(s.type != "Const" or s.controls for s in srcs):
            continue
        out = n.op.outputs[0]
        itemsize = 8 if out.dtype.base_dtype is dtypes.string else out.dtype.base_dtype.size
        if (
            not out.shape.is_fully_defined()
            or out.shape.num_elements() * itemsize > _MAX_FOLDED_BYTES
        ):
            # Folding runs the kernel while the model loads: only for a known, small result
            # (a file's Fill or Tile of constants could otherwise ask for any amount).
            continue
        args = [s.attrs["value"] for s in srcs]
        attrs = {k: v for k, v in n.attrs.items() if k[0] != "_"}
        try:
            with np.errstate(all="ignore"):
                value = partial(opdef.kernel, np, **attrs)(*args)
        except Exception:  # noqa: BLE001 - leave it to fail (or not) at run time
            continue
        value = np.asarray(value)
        out = n.op.outputs[0]
        if value.dtype != out.dtype.base_dtype.np or value.nbytes > _MAX_FOLDED_BYTES:
            continue
        value = value.copy()
        value.flags.writeable = False
        n.type = "Const"
        n.inputs = []
        n.attrs = {"value": value, "dtype": out.dtype.base_dtype}
        n.stateful = False
        folded += 1
    return folded


def _merge_duplicates(nodes, order, pinned) -> int:
    seen: dict = {}
    replace: dict[str, str] = {}
    merged = 0
    for name in order:
        n = nodes[name]
        n.inputs = [(replace.get(src, src), i) for src, i in n.inputs]
        n.controls = list(dict.fromkeys(replace.get(c, c) for c in n.controls))
        if n.stateful or n.type in ("Placeholder", "Arg"):
            continue
        key = (
            n.type,
            tuple(n.inputs),
            tuple(sorted(n.controls)),
            n.device,
            tuple(sorted((k, _attr_key(v)) for k, v in n.attrs.items())),
        )
        survivor = seen.get(key)
        if survivor is None:
            seen[key] = name
        elif name not in pinned:
            replace[name] = survivor
            merged += 1
    return merged


def _remove_identities(nodes, order, pinned) -> int:
    forward: dict[tuple[str, int], tuple[str, int]] = {}
    removed = 0
    for name in order:
        n = nodes[name]
        n.inputs = [forward.get((src, i), (src, i)) for src, i in n.inputs]
        if n.type == "Identity" and name not in pinned and not n.controls:
            forward[(name, 0)] = n.inputs[0]
            removed += 1
    if not removed:
        return 0
    dropped = {src for src, _ in forward}
    for name in order:
        n = nodes[name]
        n.controls = list(
            dict.fromkeys(nodes[c].inputs[0][0] if c in dropped else c for c in n.controls)
        )
    return removed
