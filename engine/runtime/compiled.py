"""Compiled callables: a plan's steps as one straight-line Python function.

``Session.make_callable`` runs a plan many times; the interpreter pays, per step, for its
loop, the slot list and argument lists. ``compile_callable`` instead writes the plan as the
body of one function: each value a local variable, each step one call, each value dropped
after its last reader, fed values checked inline (``FeedSpec.convert`` only when the fast
check fails, so its errors are unchanged), fetches collected as ``collect`` does. Steps that
``memplan`` turns into recipes write into reused or in-place buffers.

What it keeps from the interpreter: a failing step raises the same typed ``OpError`` naming
the op (``_k`` holds the step running); kernels run under ``np.errstate(all="ignore")``;
variables are read when their step runs; checked mode (``CHECK_KERNELS``) verifies every
output as ``execute_checked`` does. A call with ``options`` or a ``cancellation`` token
(timeouts, tracing, memory limits) takes the interpreter, which checks between steps.

Safety: the source holds only names made here (``v<slot>``, ``k<index>``, ``a<feed>``) and
fixed text; every object it uses (kernels, constants, variables, ops, feed specs, static
dims) is bound by index from a list, so nothing from a graph (op names, attr values, shapes)
is ever part of the source, and a hostile saved graph cannot inject code.
"""

from __future__ import annotations

import operator
from functools import partial

import numpy as np

from engine.ops.few_rows import few_rows, rows_product
from engine.ops.split_product import _state as split_state
from engine.ops.split_product import product as split_product
from engine.runtime.feeds import FeedSpec
from engine.runtime.interpreter import (
    CHECK_KERNELS,
    _cause,
    _coerce_outputs,
    _is_read,
    _step_error,
    _verify_outputs,
    activated,
    active_cancellation,
    coerce_output,
    copy_error,
)
from engine.runtime.memplan import Decision, c_buffers, dot_operand, plan_memory
from engine.runtime.values import Copy, VariableSlot, deref, to_host

try:  # numpy's error-state context variable: setting it costs a tenth of np.errstate()
    from numpy._core.umath import _extobj_contextvar as _errstate_var
except ImportError:  # pragma: no cover - another numpy layout: np.errstate() it is
    _errstate_var = None

__all__ = ["compile_callable", "compile_function", "compile_run"]

_ndarray = np.ndarray
# Past this many steps the interpreter runs the plan (compiling would take longer than the
# calls it saves for a plan run a few times).
MAX_STEPS = 20000


class _Source:
    """The function being written: its lines and the objects its names refer to."""

    def __init__(self, plan):
        self.plan = plan
        self.lines: list[str] = []
        self.objects: list = []
        self._index: dict[int, int] = {}
        self.own: set[int] = set()
        self.written: set[int] = set(plan.feed_slots)
        for _, _, out, nout, _, _ in plan.steps:
            self.written.update(range(out, out + nout))

    def ref(self, obj) -> str:
        """The name under which the function sees ``obj`` (bound by index, never inlined)."""
        i = self._index.get(id(obj))
        if i is None:
            i = self._index[id(obj)] = len(self.objects)
            self.objects.append(obj)
        return f"k{i}"

    def slot(self, s: int) -> str:
        """The expression for the value in slot ``s``: a local, or a hoisted constant."""
        return f"v{s}" if s in self.written else self.ref(self.plan.template[s])

    def add(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)


def compile_callable(session, plan, n_feeds, build, slow, accept_options: bool, describe):
    """``plan`` as a function of ``n_feeds`` positional values returning ``build(fetched)``,
    or None when the interpreter should run it. ``slow`` is the interpreter's callable (run
    for calls with options); ``describe(n)`` the TypeError for a call with ``n`` values.
    With ``accept_options``, a call given a ``cancellation`` token runs a second compiled
    body that checks the token before every step, as the interpreter does."""
    if len(plan.steps) > MAX_STEPS:
        return None
    decisions = plan_memory(plan.steps, plan.fetch_slots) if plan.placement is None else {}
    src = _Source(plan)
    body = (session, n_feeds, build, describe, decisions, [], _failure_factory(plan))
    if accept_options:
        src.add(1, "def run_checked(c, *args):")
        _body(src, body, checked=True)
        src.add(1, "def run(*args, options=None, run_metadata=None, cancellation=None):")
        src.add(2, "if options is not None:")
        src.add(
            3,
            f"return {src.ref(slow)}(*args, options=options, run_metadata=run_metadata, "
            "cancellation=cancellation)",
        )
        src.add(2, "if cancellation is not None:")
        src.add(3, "return run_checked(cancellation, *args)")
    else:
        src.add(1, "def run(*args):")
    _body(src, body, checked=False)
    return _finish(src)


def compile_run(session, plan):
    """``plan`` as ``f(feed_values) -> fetched values`` (a list, as ``collect`` returns it)
    for ``Session.run``, or None when the interpreter should run it."""
    if len(plan.steps) > MAX_STEPS:
        return None
    decisions = plan_memory(plan.steps, plan.fetch_slots) if plan.placement is None else {}
    src = _Source(plan)
    src.add(1, "def run(args):")
    _body(src, (session, None, None, None, decisions, [], _failure_factory(plan)), False)
    return _finish(src)


def compile_function(plan, n_out: int, slow):
    """A control-flow body's plan (a while_loop's cond or body, a cond branch) as straight-line
    code: ``f(*inputs) -> [outputs]`` on raw runtime values, as ``function_callable`` runs it,
    or None when the interpreter should. Each iteration of a loop calls it, so the per-step
    cost of the interpreter's loop is paid once per step of the plan instead of per call.
    A call while the thread has an active cancellation token (a deadline, a memory limit)
    runs ``slow`` (the interpreter's callable), which checks between steps. The caller's
    ``Session.run`` has set numpy's error state; values are not memory-planned (a loop hands
    each call's outputs to the next call)."""
    if len(plan.steps) > MAX_STEPS:
        return None
    src = _Source(plan)
    src.add(1, "def run(*args):")
    src.add(2, f"if {src.ref(active_cancellation)}() is not None:")
    src.add(3, f"return {src.ref(slow)}(*args)")
    if plan.feed_slots:
        src.add(2, "".join(f"v{int(s)}, " for s in plan.feed_slots) + "= args")
    src.add(2, "_k = -1")
    src.add(2, "try:")
    src.add(3, "pass")
    for k, step in enumerate(plan.steps):
        _step(src, k, step, None, False)
    src.add(2, "except Exception as exc:")
    fail = src.ref(_failure_factory(plan))
    src.add(3, f"raise {fail}(_k, locals(), exc) from {src.ref(_cause)}(exc)")
    outs = ", ".join(src.slot(s) for s in plan.fetch_slots[:n_out])
    src.add(2, f"return [{outs}]")
    return _finish(src)


def _body(src: _Source, body, checked: bool) -> None:
    """A function's body: feeds, the steps (with ``checked``, each after a check of the
    token ``c``, which is the thread's active one meanwhile), fetches."""
    session, n_feeds, build, describe, decisions, pool, fail = body
    plan = src.plan
    src.own = c_buffers(plan.steps, decisions)
    if n_feeds is not None:  # a callable's; Session.run has checked both
        src.add(2, f"if {src.ref(session)}._closed:")
        src.add(3, "raise RuntimeError('Attempted to use a closed Session.')")
        src.add(2, f"if len(args) != {int(n_feeds)}:")
        src.add(3, f"raise {src.ref(describe)}(len(args))")
    if plan.feed_slots:
        src.add(2, "".join(f"a{i}, " for i in range(len(plan.feed_slots))) + "= args")
    _feeds(src, plan)
    n_arena = sum(d.arena is not None for d in decisions.values())
    if n_arena:
        src.add(2, "try:")
        src.add(3, f"A = {src.ref(pool.pop)}()")
        src.add(2, "except IndexError:")
        src.add(3, f"A = [None] * {int(n_arena)} + [{{}} for _ in range({int(n_arena)})]")
    _errstate_enter(src)
    if checked:  # control-flow bodies find the token as the thread's active one
        src.add(2, f"act = {src.ref(activated)}(c)")
        src.add(2, "act.__enter__()")
    src.add(2, "_k = -1")
    src.add(2, "try:")
    src.add(3, "pass")
    for k, step in enumerate(plan.steps):
        _step(src, k, step, decisions.get(k), checked)
    src.add(2, "except Exception as exc:")
    src.add(3, f"raise {src.ref(fail)}(_k, locals(), exc) from {src.ref(_cause)}(exc)")
    src.add(2, "finally:")
    _errstate_exit(src)
    if checked:
        src.add(3, "act.__exit__(None, None, None)")
    if n_arena:
        src.add(2, f"{src.ref(pool.append)}(A)")
    _fetches(src, plan, build)


def _feeds(src: _Source, plan) -> None:
    """Each fed value checked inline as ``FeedSpec.convert`` would pass it unchanged, else
    converted (or refused) by ``convert`` itself."""
    nd = src.ref(_ndarray)
    for i, (spec, slot) in enumerate(zip(plan.feed_specs, plan.feed_slots)):
        spec: FeedSpec
        convert = src.ref(spec.convert)
        if spec.is_string:
            src.add(2, f"v{slot} = {convert}(a{i})")
            continue
        src.add(2, f"if a{i}.__class__ is {nd} and a{i}.dtype is {src.ref(spec.np_dtype)}:")
        if spec.dims is not None:
            tests = [f"len(s) != {len(spec.dims)}"]
            tests += [
                f"s[{j}] != {src.ref(int(d))}" for j, d in enumerate(spec.dims) if d is not None
            ]
            src.add(3, f"s = a{i}.shape")
            src.add(3, f"if {' or '.join(tests)}:")
            src.add(4, f"a{i} = {convert}(a{i})")
        else:
            src.add(3, "pass")
        src.add(2, "else:")
        src.add(3, f"a{i} = {convert}(a{i})")
        src.add(2, f"v{slot} = a{i}")


def _errstate_enter(src: _Source) -> None:
    if _errstate_var is not None:
        with np.errstate(all="ignore"):
            ignore = _errstate_var.get()
        src.add(2, f"tok = {src.ref(_errstate_var.set)}({src.ref(ignore)})")
    else:  # pragma: no cover
        src.add(2, f"tok = {src.ref(np.errstate)}(all='ignore')")
        src.add(2, "tok.__enter__()")


def _errstate_exit(src: _Source) -> None:
    if _errstate_var is not None:
        src.add(3, f"{src.ref(_errstate_var.reset)}(tok)")
    else:  # pragma: no cover
        src.add(3, "tok.__exit__(None, None, None)")


def _step(src: _Source, k: int, step, decision: Decision | None, checked: bool) -> None:
    fn, ins, out, nout, free, op = step
    src.add(3, f"_k = {int(k)}")
    if checked:  # Cancellation.check() when it could raise: cancelled, or with a deadline
        src.add(3, "if c.cancelled or c.deadline is not None: c.check()")
    args = ", ".join(src.slot(s) for s in ins)
    target = f"v{out}"
    verify = CHECK_KERNELS and op is not None and fn.__class__ is not Copy and not _is_read(fn, op)
    if decision is not None:
        _recipe(src, decision, ins, target)
        if not decision.inplace and decision.recipe.kind not in ("matmul", "softmax"):
            # A ufunc of 0-d arrays returns a numpy scalar: a 0-d array, as coerce_output makes
            src.add(3, f"if {target}.__class__ is not {src.ref(_ndarray)}:")
            src.add(4, f"{target} = {src.ref(coerce_output)}({target}, {src.ref(op)}, 0)")
    elif fn is deref and ins[0] not in src.written and _is_slot(src, ins[0]):
        var = src.slot(ins[0])
        src.add(3, f"{target} = {var}.value")
        src.add(3, f"if {target} is None: {target} = {var}.read()")
    elif nout == 1 and _is_identity(fn, op):  # the kernel returns its input: no call
        src.add(3, f"{target} = {args}")
        src.add(3, f"if {target}.__class__ is not {src.ref(_ndarray)}:")
        src.add(4, f"{target} = {src.ref(coerce_output)}({target}, {src.ref(op)}, 0)")
    elif nout == 1:
        src.add(3, f"{target} = {src.ref(fn)}({args})")
        src.add(3, f"if {target}.__class__ is not {src.ref(_ndarray)}:")
        src.add(4, f"{target} = {src.ref(coerce_output)}({target}, {src.ref(op)}, 0)")
    elif nout == 0:
        src.add(3, f"{src.ref(fn)}({args})")
    else:
        src.add(3, f"r = {src.ref(fn)}({args})")
        src.add(3, f"if r.__class__ is not tuple or len(r) != {int(nout)}:")
        src.add(4, f"r = {src.ref(_coerce_outputs)}(r, {src.ref(op)}, {int(nout)})")
        src.add(3, "".join(f"v{s}, " for s in range(out, out + nout)) + "= r")
    if verify and nout:
        outs = "".join(f"v{s}, " for s in range(out, out + nout))
        src.add(3, f"{src.ref(_verify_outputs)}({src.ref(op)}, ({outs}))")
    kept = ins[0] if decision is not None and decision.inplace else None
    for s in free:
        if s in src.written and s != kept:
            src.add(3, f"v{s} = None")


def _is_identity(fn, op) -> bool:
    """An Identity step running its host kernel (``return x``) as it is, not wrapped."""
    return (
        op is not None
        and op._type == "Identity"
        and fn.__class__ is partial
        and fn.func is op._opdef.kernel
        and fn.args == (np,)
        and not fn.keywords
    )


def _is_slot(src: _Source, s: int) -> bool:
    return src.plan.template[s].__class__ is VariableSlot


def _recipe(src: _Source, d: Decision, ins, target: str) -> None:
    """A recipe step: the numpy call writing a fresh, an in-place or an arena buffer."""
    r = d.recipe
    fn = src.ref(r.fn)
    x = src.slot(ins[0])
    if r.kind == "ufunc":
        y = src.slot(ins[1])
        src.add(3, f"{target} = {fn}({x}, {y}, {x})" if d.inplace else f"{target} = {fn}({x}, {y})")
    elif r.kind == "ufunc_row":
        y = src.slot(ins[1])
        if not d.inplace:
            src.add(3, f"{target} = {fn}({x}, {y})")
        else:
            row = f"{src.ref(r.const)}({y})"
            src.add(3, f"{target} = {fn}({x}, {row} if {x}.shape[0] == 1 else {y}, {x})")
    elif r.kind == "ufunc_kw":
        y = src.slot(ins[1])
        tail = f", out={x})" if d.inplace else ")"
        src.add(3, f"{target} = {fn}({x}, {y}{tail}")
    elif r.kind == "relu":
        tail = f", out={x})" if d.inplace else ")"
        src.add(3, f"{target} = {fn}({x}, {src.ref(r.const)}({x}){tail}")
    elif r.kind == "softmax":
        src.add(3, f"{target} = {fn}({x}, {x if d.inplace else 'None'})")
    else:
        _matmul(src, d, ins, target)


def _matmul(src: _Source, d: Decision, ins, target: str) -> None:
    """A MatMul recipe: ``np.dot`` where it makes ``np.matmul``'s very BLAS call (checked
    per call, see ``memplan.dot_operand``; it spares matmul's ufunc dispatch), else
    ``np.matmul``; into the arena buffer when the step has one."""
    r = d.recipe
    x = src.slot(ins[0])
    a = x + (".T" if r.transpose[0] else "")
    b = src.slot(ins[1]) + (".T" if r.transpose[1] else "")
    out = None
    if d.arena is not None:
        # The kept buffer for as many rows as this call's product has (batch sizes coming
        # and going each keep theirs: no failed out= and new buffer on every change)
        i, rows = int(d.arena), f"{x}.shape[{1 if r.transpose[0] else 0}]"
        out = "o"
        src.add(3, f"o = A[{i}]")
        src.add(3, f"if o is None or o.shape[0] != {rows}:")
        src.add(4, f"o = {src.ref(_swap_buffer)}(A, {i}, {rows})")
    guard = _dot_guard(src, ins, r.const)
    indent = 3
    if not r.transpose[0] and _may_have_few_rows(src, ins[1], r.transpose[1]):
        # 2-3 rows: one gemv per row, as the kernel does (see engine.ops.few_rows)
        src.add(3, f"if {x}.ndim == 2 and 1 < {x}.shape[0] < 4 and {src.ref(few_rows)}({a}, {b}):")
        src.add(4, f"{target} = {src.ref(rows_product)}({a}, {b}, {out or 'None'})")
        src.add(3, "else:")
        indent = 4
    # A large product split across the intra-op threads (see engine.ops.split_product)
    src.add(indent, f"if {src.ref(split_state)}.threads > 1 and (")
    src.add(indent + 1, f"{target} := {src.ref(split_product)}({a}, {b}, {out or 'None'})")
    src.add(indent, ") is not None:")
    src.add(indent + 1, "pass")
    src.add(indent, "else:")
    indent += 1
    if guard is None:
        _product(src, indent, src.ref(np.matmul), a, b, out, target)
    else:
        src.add(indent, f"if {guard}:")
        _product(src, indent + 1, src.ref(np.dot), a, b, out, target)
        src.add(indent, "else:")
        _product(src, indent + 1, src.ref(np.matmul), a, b, out, target)
    if d.arena is not None:
        src.add(3, f"A[{int(d.arena)}] = {target}")


def _may_have_few_rows(src: _Source, s: int, transposed: bool) -> bool:
    """Whether the right operand in slot ``s`` may pass ``few_rows``: any computed value,
    or a hoisted constant that does (its shape and dtype are known now)."""
    if s in src.written:
        return True
    b = src.plan.template[s]
    if b.__class__ is not np.ndarray or b.ndim != 2:
        return False
    b = b.T if transposed else b
    probe = np.zeros((2, b.shape[0]), b.dtype)
    return few_rows(probe, b)


def _swap_buffer(arena: list, i: int, rows: int):
    """Arena entry ``i`` (in use: the last product's buffer) set aside among the kept
    buffers of entry ``i`` (``arena[n + i]``, by rows), and the one kept for ``rows`` taken
    out (None: the product allocates one). At most 8 sizes are kept per entry."""
    kept = arena[len(arena) // 2 + i]
    current = arena[i]
    if current is not None:
        if len(kept) >= 8:
            kept.clear()
        kept[current.shape[0]] = current
    return kept.pop(rows, None)


def _product(src: _Source, indent: int, fn: str, a: str, b: str, out, target: str) -> None:
    # Any ValueError (a shape the product refuses, or an out= of another shape) retries
    # with matmul allocating, which raises the kernel's error if it is one.
    mm = src.ref(np.matmul)
    if out is None and fn == mm:
        src.add(indent, f"{target} = {fn}({a}, {b})")
        return
    src.add(indent, "try:")
    src.add(indent + 1, f"{target} = {fn}({a}, {b}{', ' + out if out else ''})")
    src.add(indent, "except ValueError:")
    src.add(indent + 1, f"{target} = {mm}({a}, {b})")


def _dot_guard(src: _Source, ins, dtype) -> str | None:
    """The per-call condition for ``np.dot`` (``memplan.dot_operand`` inline on each operand
    not known to be one), or None where it never holds (a constant failing it)."""
    tests = []
    nd, dt = src.ref(_ndarray), src.ref(dtype)
    for i, s in enumerate(ins):
        if s not in src.written:  # a hoisted constant: checked once, here
            if not dot_operand(src.plan.template[s], dtype, right=i == 1):
                return None
            continue
        v = f"v{s}"
        if s in src.own:  # a matmul's own C buffer (see memplan.c_buffers)
            tests.append(f"{v}.dtype is {dt}")
        else:
            tests.append(
                f"{v}.__class__ is {nd} and {v}.dtype is {dt} and (f := {v}.flags).c_contiguous "
                f"and f.aligned and {v}.ndim == 2"
            )
        if i == 1:
            tests.append(f"1 not in {v}.shape")
    return " and ".join(tests) if tests else "True"


def _fetches(src: _Source, plan, build) -> None:
    """The fetched values as ``collect`` returns them, then the caller's structure."""
    nd = src.ref(_ndarray)
    names = []
    for i, (slot, copy, device) in enumerate(
        zip(plan.fetch_slots, plan.fetch_copy, plan.fetch_host)
    ):
        if slot is None:
            names.append("None")
            continue
        r = f"r{i}"
        names.append(r)
        src.add(2, f"{r} = {src.slot(slot)}")
        if device is not None:
            src.add(2, f"{r} = {src.ref(_from_device)}({r}, {src.ref(device)})")
            continue
        src.add(2, f"if {r}.__class__ is {nd}:")
        src.add(3, f"if {r}.ndim == 0:")
        src.add(4, f"{r} = {r}[()]")
        if copy:
            src.add(3, "else:")
            src.add(4, f"{r} = {r}.copy()")
        src.add(2, "else:")
        src.add(3, f"{r} = {src.ref(to_host)}({r})")
    markers = [object() for _ in names]
    built = build(list(markers)) if build is not None else None
    flat = built.__class__ is list and len(built) == len(markers)
    if build is None or (flat and all(map(operator.is_, built, markers))):
        # (a flat list of distinct fetches: the list itself, with no builder calls)
        src.add(2, f"return [{', '.join(names)}]")
    elif len(names) == 1 and built is markers[0]:
        src.add(2, f"return {names[0]}")  # a single fetch, not in a list
    else:
        src.add(2, f"return {src.ref(build)}([{', '.join(names)}])")


def _from_device(v, device):
    """A fetch living on ``device``, as ``collect`` downloads it (a private host copy)."""
    try:
        v = device.to_host(v)
    except Exception as exc:  # noqa: BLE001 - typed for the caller
        raise copy_error(exc, f"fetching a value from {device.name}") from exc
    if v.__class__ is _ndarray:
        return v[()] if v.ndim == 0 else v
    return to_host(v)


def _finish(src: _Source):
    header = ["def _bind(K):"]
    if src.objects:
        header.append("    " + "".join(f"k{i}, " for i in range(len(src.objects))) + "= K")
    code = "\n".join(header + src.lines + ["    return run", ""])
    namespace: dict = {}
    exec(compile(code, "<compiled plan>", "exec"), namespace)  # noqa: S102 - see the docstring
    run = namespace["_bind"](src.objects)
    run.plan_source = code  # for debugging and for the test that no graph text is in it
    return run


def _failure_factory(plan):
    """``fail(k, local_values, exc)``: the typed error of step ``k`` failing with ``exc``,
    as the interpreter would raise it (naming the op and its inputs)."""
    steps, template = plan.steps, plan.template

    def fail(k, local_values, exc):
        if k < 0:
            return _step_error(None, exc, [], ())
        fn, ins, _, _, _, op = steps[k]
        vals = [local_values.get(f"v{i}", template[i]) for i in range(len(template))]
        return _step_error(op, exc, vals, ins, fn)

    return fail
