"""Reverse-mode differentiation: ``gradients(ys, xs)`` builds gradient ops in the graph.

The gradient of each op is built by the function registered next to the op's definition
(``@op(..., grad=fn)``), or under another name with ``@RegisterGradient("name")`` and chosen
per op with ``Graph.gradient_override_map``; one registry holds both
(``engine.framework.registry``). It is called as
``fn(op, *output_grads) -> [input_grad or None, ...]``. Only ops on a path from ``xs`` to
``ys`` are visited; gradients reaching a tensor along several paths are summed; an ``x`` that
does not influence ``ys`` gets None. Because gradients are ordinary ops they serialize and run
on any device like the rest of the graph.
"""

from __future__ import annotations

import collections

from engine import dtypes
from engine.framework import graph as ops
from engine.framework import registry
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Operation, Tensor, name_scope
from engine.ops import array as array_ops
from engine.ops import array_transform
from engine.ops import math as math_ops

__all__ = [
    "gradients",
    "RegisterGradient",
    "get_gradient_function",
    "AggregationMethod",
    "hessians",
]


class AggregationMethod:
    ADD_N = 0
    DEFAULT = ADD_N
    EXPERIMENTAL_TREE = 1
    EXPERIMENTAL_ACCUMULATE_N = 2


class RegisterGradient:
    """Decorator registering a gradient function under ``op_type``.

    As in TensorFlow a name is registered once: registering a gradient for an op type that
    already has one (every built-in differentiable op) raises KeyError. Register under a new
    name and map op types to it with ``Graph.gradient_override_map``::

        @tf.RegisterGradient("ClippedIdentity")
        def _clipped(op, grad):
            return [tf.clip_by_value(grad, -1.0, 1.0)]

        with g.gradient_override_map({"Identity": "ClippedIdentity"}):
            y = tf.identity(x)
    """

    def __init__(self, op_type: str):
        if not isinstance(op_type, str):
            raise TypeError("op_type must be a string")
        self._op_type = op_type

    def __call__(self, fn):
        registry.add_gradient(self._op_type, fn)
        return fn


def get_gradient_function(op: Operation):
    """The gradient function for ``op``, or None when the op is not differentiable.

    An op created inside ``Graph.gradient_override_map`` uses the gradient registered under
    the mapped name. Raises LookupError when nothing is registered for the op.
    """
    override = op._attrs.get("_gradient_op_type")
    name = op.type if override is None else override
    if registry.has_gradient(name):
        return registry.gradient(name)
    how = "" if override is None else f", overridden as {override}"
    raise LookupError(f"No gradient defined for operation '{op.name}' (op type: {op.type}{how})")


def _is_trainable(t: Tensor) -> bool:
    return t.dtype.base_dtype.is_floating


def _is_flow(t: Tensor) -> bool:
    """A variant tensor (a TensorArray flow): its gradient is the gradient array's flow."""
    return t.dtype.base_dtype is dtypes.variant


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _pending_count(to_ops, from_ops):
    """Ops between ``from_ops`` and ``to_ops`` and, for each, how many consumers it has there."""
    reached = set()
    queue = collections.deque(from_ops)
    while queue:
        op = queue.popleft()
        if op in reached:
            continue
        reached.add(op)
        for t in op._outputs:
            queue.extend(t._consumers)
    between: set[Operation] = set()
    between_list: list[Operation] = []
    queue = collections.deque(to_ops)
    while queue:
        op = queue.popleft()
        if op in reached:
            between.add(op)
            between_list.append(op)
            reached.discard(op)
            queue.extend(t._op for t in op._inputs)
    pending: dict[Operation, int] = collections.defaultdict(int)
    for op in between_list:
        for t in op._inputs:
            if t._op in between:
                pending[t._op] += 1
    return between, pending


def _stop_ops(from_ops, stop_gradient_ops, pending, xs_set):
    """From-ops with no between inputs end the backward walk, as do explicit stops."""
    stops = set()
    for op in from_ops:
        if not any(pending[t._op] > 0 for t in op._inputs if t not in xs_set):
            stops.add(op)
    stops.update(stop_gradient_ops)
    return stops


def _aggregate(grad_list):
    grads = [g for g in grad_list if g is not None]
    if not grads:
        return None
    if len(grads) == 1:
        return grads[0]
    if _is_flow(grads[0]):
        # flows of one gradient array: any one of them, once every write has happened
        with ops.control_dependencies([g.op for g in grads[1:]]):
            return array_ops.identity(grads[0])

    return math_ops.add_n(grads)


def _default_grad_y(y: Tensor, i: int) -> Tensor:
    with name_scope(f"grad_ys_{i}"):
        if y.shape.is_fully_defined():
            return array_ops.ones(
                y.shape.as_list(), y.dtype.base_dtype, name=ops.get_name_scope() + "/"
            )
        return array_ops.ones_like(y, name=ops.get_name_scope() + "/")


def gradients(
    ys,
    xs,
    grad_ys=None,
    name="gradients",
    colocate_gradients_with_ops=False,  # noqa: ARG001 - TF API compatibility
    gate_gradients=False,  # noqa: ARG001 - TF API compatibility
    aggregation_method=None,  # noqa: ARG001 - TF API compatibility
    stop_gradients=None,
    unconnected_gradients="none",
):
    """Symbolic partial derivatives of ``sum(ys)`` with respect to each of ``xs``.

    Returns one tensor per x (None where x does not affect ys, or zeros with
    ``unconnected_gradients="zero"``).
    """
    if unconnected_gradients not in ("none", "zero"):
        raise ValueError(f"Unknown value for unconnected_gradients: {unconnected_gradients!r}")
    ys = _as_list(ys)
    xs = _as_list(xs)
    grad_ys = [None] * len(ys) if grad_ys is None else _as_list(grad_ys)
    if len(grad_ys) != len(ys):
        raise ValueError(f"Passed {len(grad_ys)} grad_ys for {len(ys)} ys")
    stop_tensors = _as_list(stop_gradients) if stop_gradients is not None else []
    values = ys + xs + [g for g in grad_ys if g is not None] + stop_tensors
    with name_scope(name, "gradients", values):
        ys = [convert_to_tensor(y, name="y") for y in ys]
        xs = [
            x._ref()
            if hasattr(x, "_ref") and not isinstance(x, Tensor)
            else convert_to_tensor(x, name="x")
            for x in xs
        ]
        stop_ops = {convert_to_tensor(t).op for t in stop_tensors}
        for i, (y, g) in enumerate(zip(ys, grad_ys)):
            if g is None:
                if not _is_trainable(y):
                    raise TypeError(
                        f"Gradients of {y.dtype.base_dtype.name} tensor {y.name} "
                        "are not defined; ys must be floating point."
                    )
                grad_ys[i] = _default_grad_y(y, i)
            else:
                g = convert_to_tensor(g, dtype=y.dtype.base_dtype)
                if not y.shape.is_compatible_with(g.shape):
                    raise ValueError(
                        f"Incompatible shapes between y {y.name} {y.shape} and "
                        f"its gradient grad_ys[{i}] {g.shape}"
                    )
                grad_ys[i] = g
        to_ops = [y.op for y in ys]
        from_ops = [x.op for x in xs]
        between, pending = _pending_count(to_ops, from_ops)
        xs_set = set(xs)
        stops = _stop_ops(from_ops, stop_ops, pending, xs_set)
        grads: dict[Tensor, list] = collections.defaultdict(list)
        for y, g in zip(ys, grad_ys):
            grads[y].append(g)
        queue = collections.deque()
        queued = set()
        for op in to_ops:
            if pending[op] == 0 and op in between and op not in queued:
                queued.add(op)
                queue.append(op)
        while queue:
            op = queue.popleft()
            out_grads = [_aggregate(grads.get(t, ())) for t in op._outputs]
            has_grads = any(g is not None for g in out_grads)
            in_grads = [None] * len(op._inputs)
            if has_grads and op not in stops:
                grad_fn = get_gradient_function(op)
                if grad_fn is not None:
                    with name_scope(op.name + "_grad"):
                        for i, g in enumerate(out_grads):
                            if g is None and _is_trainable(op._outputs[i]):
                                out_grads[i] = array_ops.zeros_like(op._outputs[i])
                        result = grad_fn(op, *out_grads)
                    result = _as_list(result) if result is not None else [None]
                    if len(result) != len(op._inputs):
                        raise ValueError(
                            f"Num gradients {len(result)} generated for op "
                            f"{op.node_def.name} do not match num inputs "
                            f"{len(op._inputs)}"
                        )
                    in_grads = result
            for i, (t_in, g) in enumerate(zip(op._inputs, in_grads)):
                if g is None:
                    continue
                if not isinstance(g, Tensor):
                    g = convert_to_tensor(g, dtype=t_in.dtype.base_dtype)
                if _is_trainable(t_in) or t_in.dtype._is_ref:
                    try:
                        g.set_shape(t_in.shape)
                    except ValueError:
                        raise ValueError(
                            f"Incompatible shapes between op input and calculated input "
                            f"gradient. Forward operation: {op.name}. Input index: {i}. "
                            f"Original input shape: {t_in.shape}. Calculated input gradient "
                            f"shape: {g.shape}"
                        ) from None
                    grads[t_in].append(g)
                elif _is_flow(t_in):
                    grads[t_in].append(g)
            for t_in in op._inputs:
                src = t_in.op
                if src in between:
                    pending[src] -= 1
                    if pending[src] == 0 and src not in queued:
                        queued.add(src)
                        queue.append(src)
        out = []
        for x in xs:
            g = _aggregate(grads.get(x, ()))
            if g is None and unconnected_gradients == "zero":
                g = array_ops.zeros_like(x if not x.dtype._is_ref else array_ops.identity(x))
            if g is not None and g.dtype.base_dtype is not x.dtype.base_dtype:
                raise TypeError(
                    f"Gradient for {x.name} has dtype {g.dtype.name}, expected "
                    f"{x.dtype.base_dtype.name}"
                )
            out.append(g)
        return out


def hessians(ys, xs, name="hessians", **kwargs):
    """Second derivatives of ``sum(ys)`` for each x (x flattened to a vector)."""

    xs = _as_list(xs)
    out = []
    with name_scope(name, "hessians", _as_list(ys) + xs):
        for g, x in zip(gradients(ys, xs, **kwargs), xs):
            if g is None:
                out.append(None)
                continue
            n = x.shape.num_elements()
            if n is None:
                raise ValueError("hessians needs xs with fully defined shapes")
            flat = array_ops.reshape(g, [-1])
            rows = [gradients(flat[i], x)[0] for i in range(n)]
            rows = [array_ops.zeros_like(x) if r is None else r for r in rows]
            out.append(
                array_ops.reshape(
                    array_transform.stack(rows), x.shape.as_list() + x.shape.as_list()
                )
            )
    return out
