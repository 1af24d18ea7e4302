"""Op types of older TF graphs rewritten onto the engine's ops at import, where TF itself
has a newer op for the same computation (``Concat`` is ``ConcatV2`` with the axis first,
``Gather`` is ``GatherV2`` on axis 0, ``TopK`` is ``TopKV2`` with ``k`` an attr, ...).
Each rewrite keeps the node's name, so ``name:i`` references and fetches keep working; an
input that must be a constant (``Reverse``'s dims, ``MaxPoolV2``'s ``ksize``) is read from
its ``Const`` node, and refused with the reason when it is computed."""

from __future__ import annotations

import numpy as np

from engine.formats.tensorflow.nodes import Node, control_inputs, data_inputs, source
from engine.formats.tensorflow.proto import attr_value_pb2
from engine.formats.tensorflow.tensors import TFFormatError, array_from_proto, array_to_proto

__all__ = ["LEGACY_OPS", "rewrite_legacy_ops"]

_INT_TYPES = frozenset([3, 9, 4, 6, 5, 17, 22, 23])  # int32 int64 uint8 int8 int16 uint16/32/64
_FLOAT_ONE = {1: np.float32, 2: np.float64, 19: np.float16}


def _const(name: str, value: np.ndarray, controls) -> Node:
    tensor = array_to_proto(np.asarray(value))
    return Node(
        name,
        "Const",
        list(controls),
        {
            "value": attr_value_pb2.AttrValue(tensor=tensor),
            "dtype": attr_value_pb2.AttrValue(type=tensor.dtype),
        },
    )


def _const_value(ref: str, by_name: dict, user: Node, what: str) -> np.ndarray:
    src = by_name.get(source(ref))
    while src is not None and src.op == "Identity" and data_inputs(src):
        src = by_name.get(source(data_inputs(src)[0]))
    if src is None or src.op != "Const" or "value" not in src.attrs:
        raise TFFormatError(
            f"node {user.name!r} ({user.op}): its {what} must be a constant for flowserve"
        )
    return array_from_proto(src.attrs["value"].tensor, f"node {src.name!r}")


def _attr_type(n: Node) -> int:
    av = n.attrs.get("T")
    return int(av.type) if av is not None else 1


def _concat(n, _by_name):
    data = data_inputs(n)
    return [Node(n.name, "ConcatV2", data[1:] + data[:1] + control_inputs(n), n.attrs)]


def _gather(n, _by_name):
    axis = _const(n.name + "/axis", np.int32(0), control_inputs(n))
    attrs = {k: v for k, v in n.attrs.items() if k != "validate_indices"}
    ins = data_inputs(n)[:2] + [axis.name + ":0"] + control_inputs(n)
    return [axis, Node(n.name, "GatherV2", ins, attrs)]


def _reverse(n, by_name):
    x, dims = data_inputs(n)[:2]
    mask = _const_value(dims, by_name, n, "dims").astype(bool).reshape(-1)
    axes = _const(n.name + "/axis", np.flatnonzero(mask).astype(np.int32), control_inputs(n))
    ins = [x, axes.name + ":0"] + control_inputs(n)
    return [axes, Node(n.name, "ReverseV2", ins, {"T": n.attrs["T"]} if "T" in n.attrs else {})]


def _top_k(n, _by_name):
    k = _const(n.name + "/k", np.int32(n.attrs["k"].i), control_inputs(n))
    attrs = {key: v for key, v in n.attrs.items() if key != "k"}
    return [
        k,
        Node(n.name, "TopKV2", data_inputs(n)[:1] + [k.name + ":0"] + control_inputs(n), attrs),
    ]


def _div(n, _by_name):
    op = "TruncateDiv" if _attr_type(n) in _INT_TYPES else "RealDiv"
    return [Node(n.name, op, n.inputs, n.attrs)]


def _shape_n(n, _by_name):
    attrs = {"out_type": n.attrs["out_type"]} if "out_type" in n.attrs else {}
    shapes = [
        Node(f"{n.name}/shape_{i}", "Shape", [x] + control_inputs(n), dict(attrs))
        for i, x in enumerate(data_inputs(n))
    ]
    return shapes + [Node(n.name, "IdentityN", [f"{s.name}:0" for s in shapes], {})]


def _max_pool_v2(n, by_name):
    x, ksize, strides = data_inputs(n)[:3]
    attrs = {k: v for k, v in n.attrs.items()}
    for key, ref in (("ksize", ksize), ("strides", strides)):
        vals = _const_value(ref, by_name, n, key).reshape(-1).tolist()
        attrs[key] = attr_value_pb2.AttrValue(
            list=attr_value_pb2.AttrValue.ListValue(i=[int(v) for v in vals])
        )
    return [Node(n.name, "MaxPool", [x] + control_inputs(n), attrs)]


def _softsign(n, _by_name):
    t = _attr_type(n)
    if t not in _FLOAT_ONE:
        raise TFFormatError(f"node {n.name!r} (Softsign) needs a float input")
    (x,) = data_inputs(n)[:1]
    one = _const(n.name + "/one", _FLOAT_ONE[t](1), control_inputs(n))
    keep = {"T": n.attrs["T"]}
    return [
        one,
        Node(n.name + "/abs", "Abs", [x], keep),
        Node(n.name + "/denominator", "AddV2", [n.name + "/abs:0", one.name + ":0"], keep),
        Node(n.name, "RealDiv", [x, n.name + "/denominator:0"] + control_inputs(n), keep),
    ]


LEGACY_OPS = {
    "Concat": _concat,
    "Gather": _gather,
    "Reverse": _reverse,
    "TopK": _top_k,
    "Div": _div,
    "ShapeN": _shape_n,
    "MaxPoolV2": _max_pool_v2,
    "Softsign": _softsign,
}


def rewrite_legacy_ops(nodes: list) -> list:
    """``nodes`` with every ``LEGACY_OPS`` node rewritten onto the engine's ops."""
    if not any(n.op in LEGACY_OPS for n in nodes):
        return nodes
    by_name = {n.name: n for n in nodes}
    out = []
    for n in nodes:
        rewrite = LEGACY_OPS.get(n.op)
        out.extend(rewrite(n, by_name) if rewrite is not None else [n])
    return out
