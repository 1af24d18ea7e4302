"""What the TF1 control-flow rewrite (``functionalize.py``) shares between its loop and cond
passes: the op names, the failure marker, graph order, and the types of captured values."""

from __future__ import annotations

import collections

from engine.formats.tensorflow.nodes import ARG, Node, data_inputs, output_index, source
from engine.formats.tensorflow.proto import attr_value_pb2
from engine.formats.tensorflow.tensors import TFFormatError

__all__ = [
    "V1_CONTROL_OPS",
    "WHY_ATTR",
    "DT_VARIANT",
    "UnsupportedError",
    "Names",
    "base_op",
    "topological",
    "is_tensor_array",
    "arg_node",
    "type_enum",
    "out_type",
    "identity_attrs",
    "without_args",
    "mark",
]

V1_CONTROL_OPS = frozenset(
    [
        "Switch",
        "Merge",
        "Enter",
        "Exit",
        "NextIteration",
        "LoopCond",
        "RefSwitch",
        "RefMerge",
        "RefEnter",
        "RefExit",
        "RefNextIteration",
        "RefSelect",
    ]
)
WHY_ATTR = "_flowserve_not_functionalized"  # the reason a v1 control-flow node stayed
DT_VARIANT = 21
_DT_BOOL = 10
_MAX_TRACE = 256
_BOOL_OUT = frozenset(
    [
        "Less",
        "LessEqual",
        "Greater",
        "GreaterEqual",
        "Equal",
        "NotEqual",
        "LogicalAnd",
        "LogicalOr",
        "LogicalNot",
        "IsFinite",
        "IsNan",
        "IsInf",
        "LoopCond",
    ]
)


class UnsupportedError(Exception):
    """This loop or cond cannot be converted; its nodes stay, with the reason."""


class Names:
    """Fresh node names that collide with nothing in the graph."""

    def __init__(self, taken):
        self.taken = set(taken)

    def fresh(self, base: str) -> str:
        name, k = base, 1
        while name in self.taken:
            name = f"{base}_{k}"
            k += 1
        self.taken.add(name)
        return name


def base_op(op: str) -> str:
    """``Enter`` for ``RefEnter`` (and so on): the structure is the same."""
    return op[3:] if op.startswith("Ref") and op in V1_CONTROL_OPS else op


def topological(by_name: dict, skip_back_edges: bool) -> list[str]:
    """Node names with inputs first; a ``Merge``'s ``NextIteration`` inputs are back edges."""
    deps = {}
    users = collections.defaultdict(list)
    for name, n in by_name.items():
        ds = set()
        for ref in n.inputs:
            s = source(ref)
            if s not in by_name or s == name:
                continue
            back = base_op(n.op) == "Merge" and base_op(by_name[s].op) == "NextIteration"
            if skip_back_edges and back:
                continue
            ds.add(s)
        deps[name] = len(ds)
        for s in ds:
            users[s].append(name)
    ready = [name for name, k in deps.items() if k == 0]
    order = []
    while ready:
        name = ready.pop()
        order.append(name)
        for u in users[name]:
            deps[u] -= 1
            if deps[u] == 0:
                ready.append(u)
    if len(order) != len(by_name):
        stuck = sorted(name for name, k in deps.items() if k > 0)[:3]
        raise TFFormatError(f"the graph has a cycle outside while loops (e.g. at {stuck})")
    return order


def is_tensor_array(ref: str, by_name: dict) -> bool:
    """Whether ``ref`` carries a TensorArray (after ``functionalize.tensor_arrays``)."""
    for _ in range(_MAX_TRACE):
        n = by_name.get(source(ref))
        if n is None:
            return False
        if n.op in (
            "TensorArrayV3",
            "TensorArrayWriteV3",
            "TensorArrayScatterV3",
            "TensorArraySplitV3",
        ):
            return True
        if n.op == ARG:
            return n.attrs.get("type") == DT_VARIANT
        data = data_inputs(n)
        if n.op in ("Enter", "Exit", "Identity", "NextIteration", "Switch", "Merge") and data:
            ref = data[0]
            continue
        if n.op == "While" and output_index(ref) < len(data):
            ref = data[output_index(ref)]  # a loop variable keeps its kind
            continue
        return False
    return False


def arg_node(name: str, enum: int, index: int) -> Node:
    return Node(name, ARG, [], {"type": int(enum), "shape": None, "index": index})


def type_enum(node: Node) -> int:
    """TF's type enum in ``node``'s ``T`` attr (what Enter and Switch carry)."""
    av = node.attrs.get("T")
    if av is None or av.WhichOneof("value") != "type":
        raise UnsupportedError(f"node {node.name!r} ({node.op}) has no type attr T")
    if av.type > 100:
        raise UnsupportedError(f"node {node.name!r} carries a reference value")
    return int(av.type)


def out_type(node: Node | None) -> int:
    """TF's type enum of a value read from ``node``, from its attrs."""
    if node is None:
        raise UnsupportedError("a loop or cond reads a value from a node the graph lacks")
    if node.op == ARG:
        return int(node.attrs["type"])
    if node.op in _BOOL_OUT:
        return _DT_BOOL
    for key in ("T", "dtype", "out_type", "DstT"):
        av = node.attrs.get(key)
        if av is not None and av.WhichOneof("value") == "type" and av.type < 100:
            return int(av.type)
    raise UnsupportedError(
        f"cannot tell the dtype of {node.name!r} ({node.op}) read by control flow"
    )


def identity_attrs(node: Node) -> dict:
    """The ``T`` attr alone (what an Identity standing for ``node`` carries)."""
    return {"T": node.attrs["T"]} if "T" in node.attrs else {}


def without_args(nodes: list) -> list:
    return [n for n in nodes if n.op != ARG]


def mark(n: Node, why: str) -> Node:
    """``n`` with the reason it stays unconverted (reported by ``graph_def.to_document``)."""
    why_attr = attr_value_pb2.AttrValue(s=why.encode())
    return Node(n.name, n.op, n.inputs, {**n.attrs, WHY_ATTR: why_attr})
