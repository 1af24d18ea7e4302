"""Control flow: ``no_op``, ``group``, ``tuple``, ``with_dependencies``."""

from __future__ import annotations

import builtins

from engine import dtypes
from engine import dtypes as _dt
from engine.framework.constant_op import constant, convert_to_tensor
from engine.framework.func_graph import FuncGraph, copy_function_ops
from engine.framework.graph import (
    Operation,
    Tensor,
    control_dependencies,
    get_default_graph,
    name_scope,
)
from engine.framework.registry import Attr, OpFlags, op
from engine.gradients import gradients
from engine.ops import array as array_ops
from engine.ops import math as math_ops
from engine.ops import tensor_array as tensor_array_ops
from engine.ops._common import create
from engine.ops.tensor_array import TensorArray
from engine.tensor_shape import as_shape
from engine.util import nest


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

    with name_scope(name, "tuple", [t for t in tensors if t is not None]) as scope:
        ts = [
            convert_to_tensor(t) if t is not None and not isinstance(t, Operation) else t
            for t in tensors
        ]
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

    with name_scope(name, "control_dependency", list(dependencies) + [output_tensor]) as scope:
        with control_dependencies(dependencies):
            t = (
                convert_to_tensor(output_tensor)
                if not isinstance(output_tensor, Operation)
                else output_tensor
            )
            if isinstance(t, Operation):
                return group(t, name=scope)
            return array_ops.identity(t, name=scope)


# -----------------------------------------------------------------------------------------
# cond: an If op calling one of two function graphs
# -----------------------------------------------------------------------------------------


def _is_float(t) -> bool:
    return t.dtype.base_dtype.is_floating


def _unify_captures(graphs, outer):
    """Makes every function capture the same outer tensors, in one order; returns them."""
    order: list[Tensor] = []
    for fg in graphs:
        for t, _ in fg.captures:
            if t not in order:
                order.append(t)
    for fg in graphs:
        for t in order:
            fg.capture(t)
    externals = []
    for t in order:
        externals.append(graphs[0].external_captures[list(graphs[0]._captures).index(t)])
    for fg in graphs:
        explicit = fg.inputs[: fg.num_explicit_inputs]
        fg.inputs = explicit + [fg._captures[t] for t in order]
        fg.external_captures = list(externals)
    return externals


def _control_captures(graphs, outer):
    """Outer ops the functions depend on: returned for ``outer``, forwarded beyond it."""
    here = []
    for fg in graphs:
        for c in fg.control_captures:
            if c._graph is outer:
                if c not in here:
                    here.append(c)
            else:
                outer._as_control_op(c)
    return here


def _as_output(value, graph, what):
    """A function's returned value as an output tensor of ``graph`` (refs become values)."""

    t = convert_to_tensor(value)
    if t.dtype._is_ref or t.graph is not graph:
        t = array_ops.identity(t)
    return t


def _build_branch(fn, outer, name):
    fg = FuncGraph(name, outer)
    with fg.as_default():
        result = fn()
    return fg, result


def _if_infer(o):
    then_g, else_g = o._attrs["then_branch"], o._attrs["else_branch"]
    return [
        (t.dtype.base_dtype, t.shape.most_specific_compatible_shape(e.shape))
        for t, e in zip(then_g.outputs, else_g.outputs)
    ]


def _if_bind(o, ctx):
    inner = ctx.input_devices[1:] if ctx.input_devices is not None else None
    return {
        "then_fn": ctx.compile_function(o._attrs["then_branch"], inner),
        "else_fn": ctx.compile_function(o._attrs["else_branch"], inner),
        "n_out": len(o._outputs),
    }


def _if_grad(o, *grads):
    then_g, else_g = o.get_attr("then_branch"), o.get_attr("else_branch")
    inputs = list(o.inputs[1:])
    trainable = [i for i, t in enumerate(inputs) if _is_float(t)]
    if not trainable:
        return [None] * len(o.inputs)
    outer = o.graph
    grad_graphs = []
    for branch in (then_g, else_g):
        gg = FuncGraph(branch.name + "_grad", outer)
        with gg.as_default():
            args = [gg.add_arg(t.dtype, t.shape, "arg") for t in branch.inputs]
            dys = [gg.add_arg(g.dtype, g.shape, "dy") for g in grads]
            mapping = copy_function_ops(branch, gg, dict(zip(branch.inputs, args)))
            outs = [mapping[t] for t in branch.outputs]
            pairs = [(y, dy) for y, dy in zip(outs, dys) if _is_float(y)]
            xs = [args[i] for i in trainable]
            gs = (
                gradients([p[0] for p in pairs], xs, grad_ys=[p[1] for p in pairs])
                if pairs
                else [None] * len(xs)
            )
            gg.outputs = [
                _as_output(g if g is not None else array_ops.zeros_like(x), gg, "grad")
                for g, x in zip(gs, xs)
            ]
        grad_graphs.append(gg)
    externals = _unify_captures(grad_graphs, outer)
    controls = _control_captures(grad_graphs, outer)
    op = create(
        "If",
        [o.inputs[0]] + inputs + list(grads) + externals,
        {"then_branch": grad_graphs[0], "else_branch": grad_graphs[1]},
        "If",
    )
    if controls:
        op._add_control_inputs(controls)
    result = [None] * len(o.inputs)
    for k, i in enumerate(trainable):
        result[1 + i] = op.outputs[k]
    return result


@op(
    "If",
    infer=_if_infer,
    bind=_if_bind,
    grad=_if_grad,
    inputs=("cond", "input*"),
    attrs=(
        Attr("then_branch", "func"),
        Attr("else_branch", "func"),
    ),
    flags=OpFlags(stateful=True, aliases=True, ref_inputs="all"),
)
def _if_kernel(xp, pred, *args, then_branch, else_branch, then_fn, else_fn, n_out):
    outs = (then_fn if pred else else_fn)(*args)
    if n_out == 1:
        return outs[0]
    return builtins.tuple(outs) if n_out else None


def cond(pred, true_fn=None, false_fn=None, strict=False, name=None, fn1=None, fn2=None):
    """Runs ``true_fn()`` if ``pred`` is true at run time, else ``false_fn()``.

    Only the taken branch executes, side effects included. Ops created *outside* the
    functions run whenever the cond runs, as in TF1. Both functions must return the same
    structure of tensors with matching dtypes.
    """

    true_fn = true_fn if true_fn is not None else fn1
    false_fn = false_fn if false_fn is not None else fn2
    if isinstance(pred, bool):
        raise TypeError("'pred' must not be a Python bool.")
    if not callable(true_fn):
        raise TypeError("'true_fn' must be callable.")
    if not callable(false_fn):
        raise TypeError("'false_fn' must be callable.")
    with name_scope(name, "cond", [pred]) as scope:
        pred = convert_to_tensor(pred, name="pred")
        if pred.dtype.base_dtype.name != "bool":
            raise TypeError(f"'pred' must be a bool tensor, got {pred.dtype.name}")
        if pred.shape.rank not in (None, 0):
            raise ValueError(
                f"Shape must be rank 0 but is rank {pred.shape.rank} for 'pred' "
                f"of cond {scope[:-1]!r} (shape {pred.shape})"
            )
        outer = pred.graph
        tg, t_out = _build_branch(true_fn, outer, "cond_true")
        fg, f_out = _build_branch(false_fn, outer, "cond_false")
        if not strict:
            if isinstance(t_out, (list, builtins.tuple)) and len(t_out) == 1:
                t_out = t_out[0]
            if isinstance(f_out, (list, builtins.tuple)) and len(f_out) == 1:
                f_out = f_out[0]
        try:
            nest.assert_same_structure(t_out, f_out)
        except ValueError:
            raise ValueError(
                f"Outputs of 'true_fn' and 'false_fn' must have the same "
                f"structure; true_fn returned {t_out!r} and false_fn returned "
                f"{f_out!r}."
            ) from None
        flat_t, flat_f = nest.flatten(t_out), nest.flatten(f_out)
        kinds = []  # per leaf: "tensor", "op" or "none"
        for a, b in zip(flat_t, flat_f):
            if a is None and b is None:
                kinds.append("none")
            elif isinstance(a, Operation) and isinstance(b, Operation):
                kinds.append("op")
            elif isinstance(a, Operation) or isinstance(b, Operation) or a is None or b is None:
                raise ValueError(
                    "Outputs of 'true_fn' and 'false_fn' must both be tensors, "
                    "both operations, or both None at each position."
                )
            else:
                kinds.append("tensor")
        for graph, flat in ((tg, flat_t), (fg, flat_f)):
            with graph.as_default():
                graph.outputs = [
                    _as_output(v, graph, "output") for v, k in zip(flat, kinds) if k == "tensor"
                ]
                graph.control_outputs = [
                    v if v.graph is graph else _as_output(v.outputs[0], graph, "op").op
                    for v, k in zip(flat, kinds)
                    if k == "op"
                ]
        for a, b in zip(tg.outputs, fg.outputs):
            if a.dtype.base_dtype is not b.dtype.base_dtype:
                raise ValueError(
                    f"Outputs of 'true_fn' and 'false_fn' must have the same "
                    f"type(s). Received {a.dtype.base_dtype.name} from 'true_fn' "
                    f"and {b.dtype.base_dtype.name} from 'false_fn'."
                )
        externals = _unify_captures([tg, fg], outer)
        controls = _control_captures([tg, fg], outer)
        if_op = create("If", [pred] + externals, {"then_branch": tg, "else_branch": fg}, scope)
        if controls:
            if_op._add_control_inputs(controls)
        outputs = iter(if_op.outputs)
        leaves = []
        for k in kinds:
            if k == "tensor":
                leaves.append(next(outputs))
            elif k == "op":
                leaves.append(if_op)
            else:
                leaves.append(None)
        return nest.pack_sequence_as(t_out, leaves)


# -----------------------------------------------------------------------------------------
# while_loop: a While op calling condition and body function graphs
# -----------------------------------------------------------------------------------------


def _shape_leq(shape, invariant) -> bool:
    """True when every value of ``shape`` is allowed by ``invariant``."""
    return shape.is_subtype_of(invariant)


def _while_infer(o):
    body = o._attrs["body"]
    n = o._attrs["num_loop_vars"]
    specs = [(t.dtype.base_dtype, t.shape) for t in body.inputs[:n]]

    return specs + [(_dt.variant, ())]


def _while_bind(o, ctx):
    inner = ctx.input_devices
    return {
        "cond_fn": ctx.compile_function(o._attrs["cond"], inner),
        "body_fn": ctx.compile_function(o._attrs["body"], inner),
        "record": bool(ctx.outputs_used[-1]),
    }


def _is_flow(t) -> bool:
    return t.dtype.base_dtype is dtypes.variant


def _while_grad(o, *grads):
    """The While gradient: a WhileGrad op runs the body's gradient backward over the recorded
    iterations. Float loop variables carry their gradient; TensorArray flows carry their
    gradient array's flow; captured floats accumulate, captured arrays' gradients are written
    into their gradient arrays."""
    body = o.get_attr("body")
    n = o.get_attr("num_loop_vars")
    loop_inputs = list(o.inputs[:n])
    caps = list(o.inputs[n:])
    tv = [i for i in range(n) if _is_float(loop_inputs[i]) or _is_flow(loop_inputs[i])]
    tc = [j for j, c in enumerate(caps) if _is_float(c) or _is_flow(c)]
    if not tv and not tc:
        return [None] * len(o.inputs)
    outer = o.graph
    source = tensor_array_ops.current_gradient_source()
    gb = FuncGraph(body.name + "_grad", outer)
    with gb.as_default(), tensor_array_ops.gradient_source(source):
        dv = [gb.add_arg(body.inputs[i].dtype.base_dtype, body.inputs[i].shape, "dv") for i in tv]
        acc = [gb.add_arg(caps[j].dtype.base_dtype, caps[j].shape, "acc") for j in tc]
        v = [gb.add_arg(t.dtype, t.shape, "v") for t in body.inputs[:n]]
        c = [gb.add_arg(t.dtype, t.shape, "c") for t in body.inputs[n:]]
        mapping = copy_function_ops(body, gb, dict(zip(body.inputs, v + c)))
        outs = [mapping[t] for t in body.outputs]
        xs = [v[i] for i in tv] + [c[j] for j in tc]
        gs = gradients([outs[i] for i in tv], xs, grad_ys=dv) if tv else [None] * len(xs)
        new_dv = [
            _as_output(
                g if g is not None else (d if _is_flow(x) else array_ops.zeros_like(x)), gb, "dv"
            )
            for g, x, d in zip(gs[: len(tv)], xs[: len(tv)], dv)
        ]
        new_acc = [
            _as_output(a if g is None else (g if _is_flow(a) else math_ops.add(a, g)), gb, "acc")
            for g, a in zip(gs[len(tv) :], acc)
        ]
        gb.outputs = new_dv + new_acc
    extra = list(gb.external_captures)
    controls = _control_captures([gb], outer)
    init_dv = [
        grads[i]
        if grads[i] is not None
        else (
            tensor_array_ops.grad_array(o.outputs[i])
            if _is_flow(o.outputs[i])
            else array_ops.zeros_like(o.outputs[i])
        )
        for i in tv
    ]
    init_acc = [
        tensor_array_ops.grad_array(caps[j]) if _is_flow(caps[j]) else array_ops.zeros_like(caps[j])
        for j in tc
    ]
    grad_op = create(
        "WhileGrad",
        [o.outputs[-1]] + init_dv + init_acc + caps + extra,
        {"grad_body": gb, "num_dv": len(tv), "num_acc": len(tc)},
        "WhileGrad",
    )
    if controls:
        grad_op._add_control_inputs(controls)
    result = [None] * len(o.inputs)
    for k, i in enumerate(tv):
        result[i] = grad_op.outputs[k]
    for k, j in enumerate(tc):
        result[n + j] = grad_op.outputs[len(tv) + k]
    return result


def _while_grad_infer(o):
    gb = o._attrs["grad_body"]
    return [(t.dtype.base_dtype, t.shape) for t in gb.outputs]


def _while_grad_bind(o, ctx):
    return {
        "grad_fn": ctx.compile_function(o._attrs["grad_body"]),
        "n_out": len(o._outputs),
    }


@op(
    "WhileGrad",
    infer=_while_grad_infer,
    bind=_while_grad_bind,
    differentiable=False,
    inputs=("record", "input*"),
    attrs=(
        Attr("grad_body", "func"),
        Attr("num_dv", "int"),
        Attr("num_acc", "int"),
    ),
    flags=OpFlags(stateful=True, aliases=True, ref_inputs="all"),
)
def _while_grad_kernel(xp, record, *args, grad_body, num_dv, num_acc, grad_fn, n_out):
    if record is None:
        raise RuntimeError("The forward while loop did not record its iterations")
    dv = list(args[:num_dv])
    acc = list(args[num_dv : num_dv + num_acc])
    captures = args[num_dv + num_acc :]
    for loop_vars in reversed(record):
        outs = grad_fn(*dv, *acc, *loop_vars, *captures)
        dv, acc = outs[:num_dv], outs[num_dv:]
    outs = list(dv) + list(acc)
    return outs[0] if n_out == 1 else builtins.tuple(outs)


@op(
    "While",
    infer=_while_infer,
    bind=_while_bind,
    grad=_while_grad,
    inputs=("input*",),
    attrs=(
        Attr("cond", "func"),
        Attr("body", "func"),
        Attr("num_loop_vars", "int"),
        Attr("parallel_iterations", "int"),
    ),
    flags=OpFlags(stateful=True, aliases=True, ref_inputs="all"),
)
def _while_kernel(
    xp, *args, cond, body, num_loop_vars, parallel_iterations, cond_fn, body_fn, record
):
    loop_vars = list(args[:num_loop_vars])
    captures = args[num_loop_vars:]
    history = [] if record else None
    while cond_fn(*loop_vars, *captures)[0]:
        if history is not None:
            history.append(loop_vars)
        loop_vars = body_fn(*loop_vars, *captures)
    return builtins.tuple(loop_vars) + (history,)


def while_loop(
    cond,
    body,
    loop_vars,
    shape_invariants=None,
    parallel_iterations=10,
    back_prop=True,
    swap_memory=False,
    name=None,
    maximum_iterations=None,
    return_same_structure=False,
):
    """Repeats ``body`` while ``cond`` is true, on the loop variables ``loop_vars``.

    ``loop_vars`` may be a nested structure of tensors and TensorArrays. A loop variable whose
    shape changes across iterations needs a less specific ``shape_invariants`` entry; without
    one, building the loop raises ValueError. The loop runs with no ops created per iteration.
    """

    if not callable(cond):
        raise TypeError("'cond' must be callable.")
    if not callable(body):
        raise TypeError("'body' must be callable.")
    if parallel_iterations < 1:
        raise TypeError("'parallel_iterations' must be a positive integer.")
    if loop_vars is None or (
        isinstance(loop_vars, (list, builtins.tuple, dict)) and not nest.flatten(loop_vars)
    ):
        raise ValueError("'loop_vars' must be provided.")
    structure = loop_vars
    with name_scope(
        name, "while", [v for v in nest.flatten(loop_vars) if not isinstance(v, TensorArray)]
    ) as scope:
        leaves = nest.flatten(loop_vars)
        tensors = []
        for v in leaves:
            if isinstance(v, TensorArray):
                tensors.append(v.flow)
            else:
                t = convert_to_tensor(v)
                if t.dtype._is_ref:
                    t = array_ops.identity(t)
                tensors.append(t)
        if shape_invariants is None:
            invariants = [t.shape for t in tensors]
        else:
            try:
                nest.assert_same_structure(loop_vars, shape_invariants)
            except ValueError:
                inv_leaves = nest.flatten(shape_invariants)
                if len(inv_leaves) != len(leaves):
                    raise ValueError(
                        "'shape_invariants' must have the same structure as 'loop_vars'."
                    ) from None
            invariants = []
            for v, t, inv in zip(leaves, tensors, nest.flatten(shape_invariants)):
                if isinstance(v, TensorArray):
                    invariants.append(t.shape)
                    continue
                inv = as_shape(inv)
                if not _shape_leq(t.shape, inv):
                    raise ValueError(
                        f"The shape invariant specified for {t.name} is not compatible with "
                        f"the initial shape of the loop variable. It enters the loop with "
                        f"shape {t.shape}, but the specified shape invariant is {inv}."
                    )
                invariants.append(inv)
        counter = None
        if maximum_iterations is not None:
            max_iter = convert_to_tensor(maximum_iterations, name="maximum_iterations")
            if max_iter.dtype.base_dtype not in (dtypes.int32, dtypes.int64):
                raise TypeError(
                    f"maximum_iterations must be an int32 or int64 scalar, got "
                    f"{max_iter.dtype.name}"
                )

            counter = constant(0, dtype=max_iter.dtype.base_dtype, name="iteration_counter")
        outer = get_default_graph()
        all_inputs = ([counter] if counter is not None else []) + tensors
        all_invariants = ([counter.shape] if counter is not None else []) + invariants

        def rebuild(args):
            vals = []
            for v, a in zip(leaves, args):
                vals.append(v._with_flow(a) if isinstance(v, TensorArray) else a)
            return nest.pack_sequence_as(structure, vals)

        def call(fn, packed):
            if isinstance(structure, (list, builtins.tuple)) and not hasattr(structure, "_fields"):
                return fn(*packed)
            return fn(packed)

        cg = FuncGraph("while_cond", outer)
        with cg.as_default():
            args = [cg.add_arg(t.dtype, s, "loop_var") for t, s in zip(all_inputs, all_invariants)]
            user_args = args[1:] if counter is not None else args
            c = convert_to_tensor(call(cond, rebuild(user_args)))
            if c.dtype.base_dtype is not dtypes.bool or c.shape.rank not in (None, 0):
                raise ValueError(f"'cond' must return a boolean scalar tensor, got {c!r}")
            if counter is not None:
                c = math_ops.logical_and(math_ops.less(args[0], cg.capture(max_iter)), c)
            cg.outputs = [_as_output(c, cg, "cond")]
        bg = FuncGraph("while_body", outer)
        with bg.as_default():
            args = [bg.add_arg(t.dtype, s, "loop_var") for t, s in zip(all_inputs, all_invariants)]
            user_args = args[1:] if counter is not None else args
            result = call(body, rebuild(user_args))
            if (
                isinstance(structure, (list, builtins.tuple))
                and len(structure) == 1
                and not isinstance(result, (list, builtins.tuple))
            ):
                result = type(structure)([result]) if not hasattr(structure, "_fields") else result
            try:
                nest.assert_same_structure(structure, result)
            except ValueError:
                raise ValueError(
                    f"The loop body must return the structure of 'loop_vars'; "
                    f"loop_vars is {structure!r} and body returned {result!r}."
                ) from None
            outs = []
            for i, (v, r) in enumerate(zip(leaves, nest.flatten(result))):
                if isinstance(v, TensorArray):
                    if not isinstance(r, TensorArray):
                        raise TypeError(
                            f"Loop variable {i} is a TensorArray; the body returned {r!r}"
                        )
                    outs.append(_as_output(r.flow, bg, "ta"))
                    v._merge_element_shape(r.element_shape)
                    continue
                out = _as_output(r, bg, "var")
                want, inv = (
                    all_inputs[i + (counter is not None)],
                    all_invariants[i + (counter is not None)],
                )
                if out.dtype.base_dtype is not want.dtype.base_dtype:
                    raise TypeError(
                        f"Loop variable {want.name} enters the loop with dtype "
                        f"{want.dtype.base_dtype.name}, but has dtype "
                        f"{out.dtype.base_dtype.name} after one iteration."
                    )
                if not _shape_leq(out.shape, inv):
                    raise ValueError(
                        f"Input tensor '{want.name}' enters the loop with shape {inv}, but "
                        f"has shape {out.shape} after one iteration. To allow the shape to "
                        "vary across iterations, use the `shape_invariants` argument of "
                        "while_loop to specify a less-specific shape."
                    )
                outs.append(out)
            if counter is not None:
                outs.insert(0, _as_output(math_ops.add(args[0], 1), bg, "counter"))
            bg.outputs = outs
        n = len(all_inputs)
        externals = _unify_captures([cg, bg], outer)
        controls = _control_captures([cg, bg], outer)
        w = create(
            "While",
            all_inputs + externals,
            {
                "cond": cg,
                "body": bg,
                "num_loop_vars": n,
                "parallel_iterations": int(parallel_iterations),
            },
            scope,
        )
        if controls:
            w._add_control_inputs(controls)
        results = list(w.outputs[:n])
        if counter is not None:
            results = results[1:]
        packed = rebuild(results)
        if (
            not return_same_structure
            and isinstance(structure, (list, builtins.tuple))
            and len(structure) == 1
            and not hasattr(structure, "_fields")
        ):
            return packed[0]
        return packed
