"""Control flow: ``no_op``, ``group``, ``tuple``, ``with_dependencies``."""

from __future__ import annotations

import builtins

from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Operation, Tensor, control_dependencies, name_scope
from engine.framework.registry import op
from engine.ops._common import create


@op("NoOp", infer=lambda o: [], differentiable=False)
def _no_op_kernel(xp):
    return None


def no_op(name=None) -> Operation:
    """An op that does nothing; useful as a target that carries control dependencies."""
    with name_scope(name, "NoOp") as scope:
        return create("NoOp", [], {}, scope)


def _as_op(x) -> Operation:
    if hasattr(x, "_as_graph_element") and not isinstance(x, (Tensor, Operation)):
        x = x._as_graph_element()
    if isinstance(x, Tensor):
        return x.op
    if isinstance(x, Operation):
        return x
    raise TypeError(f"Expected a Tensor or Operation, got {type(x).__name__}")


def group(*inputs, name=None) -> Operation:
    """An op that runs all of ``inputs`` (tensors or operations, or lists of them)."""
    flat = []
    for x in inputs:
        if isinstance(x, (list, builtins.tuple)):
            flat.extend(x)
        elif isinstance(x, dict):
            flat.extend(x.values())
        else:
            flat.append(x)
    ops = [_as_op(x) for x in flat if x is not None]
    with name_scope(name, "group_deps", ops) as scope:
        with control_dependencies(ops):
            return no_op(name=scope)


def tuple(tensors, name=None, control_inputs=None):  # noqa: A001 - TF's name
    """Identities of ``tensors`` that are each available only when all of them are."""
    from engine.ops import array as array_ops

    with name_scope(name, "tuple", [t for t in tensors if t is not None]) as scope:
        ts = [convert_to_tensor(t) if t is not None and not isinstance(t, Operation) else t
              for t in tensors]
        gating = [t for t in ts if t is not None]
        if control_inputs:
            gating += list(control_inputs)
        gate = group(*gating, name="gate") if gating else None
        out = []
        for t in ts:
            if t is None or isinstance(t, Operation):
                out.append(t if t is None else group(t, gate))
            else:
                with control_dependencies([gate]):
                    out.append(array_ops.identity(t))
        del scope
        return out


def with_dependencies(dependencies, output_tensor, name=None):
    """``output_tensor``'s value, produced only after ``dependencies`` have run."""
    from engine.ops import array as array_ops

    with name_scope(name, "control_dependency", list(dependencies) + [output_tensor]) as scope:
        with control_dependencies(dependencies):
            t = convert_to_tensor(output_tensor) if not isinstance(output_tensor, Operation) \
                else output_tensor
            if isinstance(t, Operation):
                return group(t, name=scope)
            return array_ops.identity(t, name=scope)
