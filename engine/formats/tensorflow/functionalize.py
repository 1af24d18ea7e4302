"""TF1's dataflow control flow as the engine's functional ``If`` and ``While``.

TensorFlow 1.x builds ``tf.cond`` and ``tf.while_loop`` (and everything made of them:
``dynamic_rnn``, ``map_fn``, batch norm on a training flag) from dataflow primitives:
``Switch`` forwards its input to one of two outputs and marks the other "dead"; an op with a
dead input is dead; ``Merge`` forwards whichever input is alive. Loops add frames: ``Enter``
moves a value into a loop's frame, ``NextIteration`` carries it to the next iteration,
``LoopCond`` decides, ``Exit`` leaves. Frozen graphs and TF1 SavedModels keep this form.

The engine has TF2's functional form instead, so a graph is rewritten before import, as TF's
own ``functionalize_control_flow`` pass does for XLA:

1. ``tensor_arrays``: TF1 TensorArray ops take a handle and a "flow" and output both; the
   engine's TensorArray is one value threaded through its ops, so ``TensorArrayV3:0`` and
   ``:1`` both become that value and each op reads the flow it was given (which orders it).
2. Loops, innermost frame first: the frame's ``Merge`` nodes are the loop variables; the
   nodes that compute ``LoopCond``'s input from them become the ``cond`` function, the nodes
   from ``Switch``'s true output to each ``NextIteration`` the ``body``; constant ``Enter``
   nodes (loop invariants) and values read from outside are captured. Each ``Exit`` becomes
   an ``Identity`` of the ``While`` output, so its name keeps working.
3. Conds, innermost first: every node gets its branch condition, the set of (predicate,
   branch) pairs of the ``Switch`` outputs it depends on; a ``Merge`` joins two inputs whose
   conditions differ in one predicate's branch. The nodes under each branch become an ``If``
   function; values entering through a ``Switch`` (or read directly) are its inputs; each
   ``Merge`` becomes an ``Identity`` of an ``If`` output. Conds that share nodes (one
   ``tf.cond`` with several outputs) become one ``If``.

What cannot be converted (reference-variable forms like ``RefEnter``, the stacks of TF1 loop
gradients, a ``Merge`` of something other than two branches) is left in place with the reason
attached, and the import reports it with the op types the engine lacks.
"""

from __future__ import annotations

from engine.formats.tensorflow.legacy import rewrite_legacy_ops
from engine.formats.tensorflow.nodes import Node, control_inputs, output_index, source
from engine.formats.tensorflow.proto import attr_value_pb2
from engine.formats.tensorflow.tensors import TFFormatError
from engine.formats.tensorflow.v1_flow_common import V1_CONTROL_OPS, WHY_ATTR
from engine.formats.tensorflow.v1_flow_conds import functionalize_conds
from engine.formats.tensorflow.v1_flow_loops import functionalize_loops

__all__ = ["V1_CONTROL_OPS", "WHY_ATTR", "functionalize", "tensor_arrays"]

# TF op -> (positions of TF's inputs the engine op takes, in order; TF's flow input first)
_TA_INPUTS = {
    "TensorArrayWriteV3": (3, 1, 2),  # (handle, index, value, flow_in)
    "TensorArrayReadV3": (2, 1),  # (handle, index, flow_in)
    "TensorArrayGatherV3": (2, 1),  # (handle, indices, flow_in)
    "TensorArrayScatterV3": (3, 1, 2),  # (handle, indices, value, flow_in)
    "TensorArraySplitV3": (3, 1, 2),  # (handle, value, lengths, flow_in)
    "TensorArraySizeV3": (1,),  # (handle, flow_in)
    "TensorArrayConcatV3": (1,),  # (handle, flow_in) -> (value, lengths)
}


def tensor_arrays(nodes: list) -> list:
    """TF1 TensorArray ops (handle + flow) as the engine's (one threaded value)."""
    if not any(n.op.startswith("TensorArray") for n in nodes):
        return nodes
    created = {n.name for n in nodes if n.op == "TensorArrayV3"}
    concat = {n.name for n in nodes if n.op == "TensorArrayConcatV3"}

    def fix(ref: str, user: str) -> str:
        if ref.startswith("^"):
            return ref
        src = source(ref)
        if src in created:
            return src + ":0"  # handle and flow are the same value
        if src in concat and output_index(ref) == 1:
            raise TFFormatError(
                f"node {user!r} reads the lengths output of TensorArrayConcatV3 {src!r}, "
                "which flowserve does not produce"
            )
        return ref

    out = []
    for n in nodes:
        inputs = [fix(i, n.name) for i in n.inputs]
        if n.op == "TensorArrayCloseV3":
            out.append(Node(n.name, "NoOp", control_inputs(n), {}))
            continue
        if n.op == "TensorArrayGradV3":
            raise TFFormatError(
                f"node {n.name!r}: TF1 TensorArray gradients (TensorArrayGradV3) are not "
                "supported in imported graphs"
            )
        order = _TA_INPUTS.get(n.op)
        if order is not None:
            data = [i for i in inputs if not i.startswith("^")]
            if len(data) != max(order) + 1:
                raise TFFormatError(
                    f"node {n.name!r} ({n.op}) has {len(data)} inputs, expected {max(order) + 1}"
                )
            inputs = [data[k] for k in order] + [i for i in inputs if i.startswith("^")]
        attrs = n.attrs
        if n.op in ("TensorArrayReadV3", "TensorArrayGatherV3") and "element_shape" not in attrs:
            unknown = attr_value_pb2.AttrValue()
            unknown.shape.unknown_rank = True
            attrs = {**attrs, "element_shape": unknown}  # TF's read has none: any shape
        out.append(Node(n.name, n.op, inputs, attrs))
    return out


def functionalize(nodes: list, where: str = "graph") -> list:
    """``nodes`` with TF1 control flow as If/While nodes whose branch and loop functions are
    ``nodes.FunctionBody`` values (as TF2's If/While are after inlining), TF1 TensorArrays
    as the engine's, and older op types rewritten onto the engine's (``legacy.py``)."""
    nodes = rewrite_legacy_ops(tensor_arrays(nodes))
    if not any(n.op in V1_CONTROL_OPS for n in nodes):
        return nodes
    return functionalize_conds(functionalize_loops(nodes, where))
