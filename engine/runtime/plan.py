"""Plans: a (feeds, fetches) computation compiled once into steps for the interpreter.

``compile_plan`` is a pipeline of phases, each a function below:

1. ``order_ops``: the ops the fetches need (pruned at the feeds), in dependency order, and
   every placeholder among them fed.
2. ``allocate_slots``: one value slot per feed and per op output, in a template list that
   each run copies.
3. placement (``Placer.place``, several devices only): a device for each op.
4. ``bind_steps``: each op's kernel bound to its device's array module, attrs and session
   state; variable reads and cross-device copies inserted before their consumers; hoisted
   ops (constants, variable slots) run now and their value stored in the template.
5. ``resolve_fetches``: the slot, device and copy-on-return rule of each fetch.
6. ``schedule_frees``: each value freed after its last reader (fetches are kept).
7. ``log_placement`` when the session's config asks for it.
"""

from __future__ import annotations

import sys
from functools import partial

import numpy as np

from engine import errors
from engine.devices import Device
from engine.framework.graph import Operation, Tensor
from engine.runtime.bind import BindContext, bind_kernel
from engine.runtime.feeds import FeedSpec
from engine.runtime.interpreter import (
    CHECK_KERNELS,
    active_budget,
    active_cancellation,
    coerce_output,
    execute,
    execute_bounded,
    execute_checked,
    op_error,
)
from engine.runtime.placement import host_input_positions, variable_device
from engine.runtime.values import (
    Copy,
    DeviceChecked,
    VariableSlot,
    deref,
    deref_to,
    guard_variable_device,
)

__all__ = ["Plan", "compile_plan", "function_callable", "order_ops"]

_ndarray = np.ndarray


class Plan:
    """A compiled (feeds, fetches) computation: slots, steps and what to return."""

    __slots__ = (
        "steps",
        "template",
        "feed_specs",
        "feed_slots",
        "fetch_slots",
        "fetch_copy",
        "fetch_host",
        "num_ops",
        "placement",
        "compiled",
        "runs",
    )

    def __init__(self):
        self.steps: list = []
        self.template: list = []
        self.feed_specs: list[FeedSpec] = []
        self.feed_slots: tuple[int, ...] = ()
        self.fetch_slots: tuple = ()
        self.fetch_copy: tuple[bool, ...] = ()
        # Per fetch: the device its value lives on when that is not the host (else None).
        self.fetch_host: tuple = ()
        self.num_ops = 0
        self.placement: dict | None = None  # op -> Device (None: single-device session)
        # Session.run's compiled form of the plan (compiled on its second run); False: none.
        self.compiled = None
        self.runs = 0


def compile_plan(
    session,
    feeds: tuple,
    fetches: tuple,
    *,
    function: bool = False,
    owned_feeds: bool = False,
    default_device: Device | None = None,
    input_devices: tuple | None = None,
) -> Plan:
    """Prunes, orders, places and binds the computation of ``fetches`` given ``feeds``.

    ``function`` compiles the body of a control-flow op placed on ``default_device``: fed
    tensors then may carry variable references (a captured variable) as well as values,
    inputs arrive and outputs leave on ``default_device``, and ops without a device request
    run there. ``input_devices`` gives, per fed tensor, the device of the variable it
    carries (when known), so that ops writing it are placed with it. ``owned_feeds``: the
    caller hands fed values over, so ops storing them need not copy.
    """
    host = session._host
    fed: dict[Tensor, int] = {}
    for t in feeds:
        fed.setdefault(t, len(fed))
    order = order_ops(fetches, fed)
    plan = Plan()
    plan.num_ops = len(order)
    read_slot, out_base = allocate_slots(plan, feeds, fed, order)
    # Where values live: feeds arrive on the host (inside a function body, on the
    # function's device); every other value on the device of the op producing it.
    home = (default_device if default_device is not None else host) if function else host
    ref_home = {
        t: (input_devices[k] if input_devices is not None and t._dtype._is_ref else None)
        for k, t in enumerate(fed)
    }
    placement = None
    if session._multi:
        default = home if function else session._placer.default_device
        placement = session._placer.place(order, ref_home, default)
    else:
        session._placer.check_requests(order)
    b = _StepBuilder(session, plan, read_slot, fed, placement, ref_home, home, function)
    if not owned_feeds:
        b.persistent.update(plan.feed_slots)
    bind_steps(b, order, out_base, fetches)
    resolve_fetches(b, fetches)
    keep = {s for s in plan.fetch_slots if s is not None}
    plan.steps = schedule_frees(b.steps, keep)
    plan.template = b.template
    plan.placement = placement
    if session._config.log_device_placement:
        log_placement(order, placement, host)
    return plan


def order_ops(fetches, fed) -> list[Operation]:
    """Ops needed for ``fetches`` in dependency order (iterative post-order DFS), none past
    a fed tensor; InvalidArgumentError for a cycle or a placeholder left unfed."""
    order: list[Operation] = []
    state: dict[Operation, int] = {}  # 1 = on the stack, 2 = done
    roots = []
    for f in fetches:
        if isinstance(f, Tensor):
            if f not in fed:
                roots.append(f._op)
        else:
            roots.append(f)
    for root in roots:
        if state.get(root) == 2:
            continue
        stack = [(root, _deps(root, fed))]
        state[root] = 1
        while stack:
            op, it = stack[-1]
            for dep in it:
                s = state.get(dep)
                if s is None:
                    state[dep] = 1
                    stack.append((dep, _deps(dep, fed)))
                    break
                if s == 1:
                    raise errors.InvalidArgumentError(
                        None, dep, f"Graph is invalid, contains a cycle through op '{dep._name}'"
                    )
            else:
                stack.pop()
                state[op] = 2
                order.append(op)
    for op in order:
        if op._type == "Placeholder":
            raise _unfed_placeholder(op)
    return order


_PLACEHOLDERS = frozenset({"Placeholder", "PlaceholderV2"})


def _deps(op: Operation, fed):
    for t in op._inputs:
        if t not in fed:
            yield t._op
    for c in op._control_inputs:
        # A fed placeholder's control edges move onto its feed (TF's FeedInputs does this for
        # Placeholder/PlaceholderV2 only): the dependency is met, the placeholder never runs.
        # Other fed ops keep theirs and run, as in TF.
        if c._type in _PLACEHOLDERS and fed and any(t in fed for t in c._outputs):
            continue
        yield c


def _unfed_placeholder(op: Operation) -> errors.InvalidArgumentError:
    shape = op._attrs.get("shape")
    shape_s = shape._short() if shape is not None and shape.rank is not None else "<unknown>"
    where = f"\n\t [[node {op._name} (defined at {op._defined_at})]]" if op._defined_at else ""
    return errors.InvalidArgumentError(
        op.node_def,
        op,
        f"You must feed a value for placeholder tensor '{op._name}' with dtype "
        f"{op._attrs['dtype'].name} and shape {shape_s}{where}",
    )


def allocate_slots(plan: Plan, feeds: tuple, fed: dict, order) -> tuple[dict, dict]:
    """Value slots: one per distinct fed tensor, then one per output of each op. Fills the
    plan's template and feed slots; returns (tensor -> slot holding its value, op -> slot
    of its first output)."""
    template = plan.template
    read_slot: dict[Tensor, int] = {}
    for t in fed:
        read_slot[t] = len(template)
        template.append(None)
    # Each feed as given (duplicates allowed) maps to its tensor's slot.
    plan.feed_specs = [FeedSpec(t) for t in feeds]
    plan.feed_slots = tuple(read_slot[t] for t in feeds)
    out_base: dict[Operation, int] = {}
    for op in order:
        out_base[op] = base = len(template)
        for t in op._outputs:
            template.append(None)
            if t not in fed:
                read_slot[t] = base + t._value_index
    return read_slot, out_base


class _StepBuilder:
    """The state of ``bind_steps`` and ``resolve_fetches``: slots, steps, where values are."""

    def __init__(self, session, plan, read_slot, fed, placement, ref_home, home, function):
        self.session = session
        self.plan = plan
        self.template = plan.template
        self.steps: list = []
        self.read_slot = read_slot
        self.fed = fed
        self.placement = placement
        self.multi = placement is not None
        self.ref_home = ref_home
        self.home = home
        self.function = function
        # Slots whose values may alias memory that outlives a run (constants, variables,
        # caller-owned feeds): fetching them copies, ops storing them copy.
        self.persistent: set[int] = set()
        self.on_device: dict[tuple, int] = {}  # (tensor, device) -> slot of its value there

    def device_of(self, t: Tensor) -> Device:
        """The device where the value in ``t``'s slot lives."""
        return self.home if (t in self.fed or self.placement is None) else self.placement[t._op]

    def variable_device(self, t: Tensor) -> Device | None:
        return variable_device(t, self.ref_home, self.placement)

    def add_step(self, fn, ins, consumer, is_persistent=False) -> int:
        """Appends a one-output step; returns its output slot."""
        new = len(self.template)
        self.template.append(None)
        self.steps.append((fn, ins, new, 1, (), consumer))
        if is_persistent:
            self.persistent.add(new)
        return new

    def value_on(self, t: Tensor, dev: Device | None, consumer) -> int:
        """The slot holding the value of ``t`` on ``dev`` (None: where it lives).

        A variable is read right before each consumer runs (each consumer gets its own read
        step), so a consumer ordered after an assignment sees the new value.
        """
        src = self.read_slot[t]
        if t._dtype._is_ref:
            if not self.multi:
                return self.add_step(deref, (src,), consumer, True)
            var_dev = self.variable_device(t)
            if var_dev is None:  # a variable captured by a function: unknown device
                return self.add_step(partial(deref_to, dev or self.home), (src,), consumer, True)
            s = self.add_step(deref, (src,), consumer, True)
            if dev is None or dev is var_dev:
                return s
            return self.add_step(Copy(var_dev, dev, t.name), (s,), t._op)
        if not self.multi:
            return src
        src_dev = self.device_of(t)
        if dev is None or dev is src_dev:
            return src
        key = (t, dev)
        c = self.on_device.get(key)
        if c is None:
            c = self.on_device[key] = self.add_step(Copy(src_dev, dev, t.name), (src,), t._op)
        return c


def bind_steps(b: _StepBuilder, order, out_base: dict, fetches) -> None:
    """One step per op (plus variable reads and copies before it), each kernel bound."""
    used: set[Tensor] = set()  # tensors read in the plan or fetched
    for op in order:
        used.update(op._inputs)
    used.update(f for f in fetches if isinstance(f, Tensor))
    for op in order:
        device = b.placement[op] if b.multi else b.session._host
        base = out_base[op]
        if op._type == "Identity" and op._inputs[0]._dtype._is_ref:
            _bind_variable_read(b, op, device, base)
        else:
            _bind_op(b, op, device, base, used)


def _bind_variable_read(b: _StepBuilder, op, device, base) -> None:
    """A variable's snapshot (``w/read``): the read itself is the whole step. Placement puts
    it on its variable's device; inside a function body the variable's device is unknown and
    the read moves the value if needed."""
    ref = op._inputs[0]
    read = deref if not b.multi or b.variable_device(ref) is not None else partial(deref_to, device)
    b.steps.append((read, (b.read_slot[ref],), base, 1, (), op))
    b.persistent.add(base)


def _bind_op(b: _StepBuilder, op, device, base, used) -> None:
    flags = op._opdef.flags
    ins, guard = _input_slots(b, op, device)
    ctx = BindContext(
        b.session,
        op,
        device,
        tuple(s in b.persistent for s in ins),
        tuple(t in used for t in op._outputs),
        tuple(b.variable_device(t) if t._dtype._is_ref else device for t in op._inputs)
        if b.multi
        else None,
    )
    try:
        kernel = bind_kernel(op, ctx)
        if guard:
            kernel = partial(guard_variable_device, kernel, device, tuple(guard))
        if CHECK_KERNELS and b.multi:
            kernel = DeviceChecked(
                kernel, device, op, ins, flags.ref_inputs, host_input_positions(op)
            )
        if device.context is not None:
            kernel = device.wrap(kernel)
        # Hoisted ops run once per plan: constants and session resources (slots).
        value = kernel() if flags.hoist else None
    except errors.OpError:
        raise
    except Exception as exc:  # noqa: BLE001 - a bad attr or binding, typed here
        raise op_error(op, exc) from exc
    if flags.hoist:
        if len(op._outputs) == 1:
            b.template[base] = (
                value
                if value.__class__ is _ndarray or value.__class__ is VariableSlot
                else coerce_output(value, op, 0)
            )
            b.persistent.add(base)
        return
    b.steps.append((kernel, tuple(ins), base, len(op._outputs), (), op))
    if flags.aliases and any(s in b.persistent for s in ins):
        b.persistent.update(range(base, base + len(op._outputs)))


def _input_slots(b: _StepBuilder, op, device) -> tuple[list[int], list[int]]:
    """The slots ``op`` reads (variable references passed as such where the op takes them)
    and the positions of references whose device is known only at run time among those it
    writes (guarded at run time)."""
    ins, guard = [], []
    ref_in = op._opdef.flags.ref_inputs
    writes = op._opdef.flags.writes_variables
    host_in = host_input_positions(op) if b.multi and not device.is_host else ()
    for i, t in enumerate(op._inputs):
        if t._dtype._is_ref and (ref_in == "all" or i in ref_in):
            if t in b.fed and not b.function:
                raise errors.InvalidArgumentError(
                    op.node_def,
                    op,
                    f"Input {i} of {op._type} op '{op._name}' needs "
                    f"the variable {t.name} itself, which cannot be fed",
                )
            if b.multi and writes and b.variable_device(t) is None:
                guard.append(len(ins))
            ins.append(b.read_slot[t])
        elif i in host_in:
            ins.append(b.value_on(t, b.session._host, op))
        else:
            ins.append(b.value_on(t, device, op))
    return ins, guard


def resolve_fetches(b: _StepBuilder, fetches) -> None:
    """Per fetch: its slot (None for an op), whether returning it copies (it may alias
    persistent state) and the device it is downloaded from (None: the host)."""
    host = b.session._host
    slots, copies, devices = [], [], []
    for f in fetches:
        if isinstance(f, Operation):
            slots.append(None)
            copies.append(False)
            devices.append(None)
            continue
        if f not in b.read_slot:
            raise errors.InternalError(None, None, f"No value for fetch {f.name}")
        if b.function:
            # Function outputs stay on the function's device; variables stay references.
            s = b.read_slot[f] if f._dtype._is_ref else b.value_on(f, b.home, f._op)
            where = None
        elif f._dtype._is_ref:
            s = b.value_on(f, None, f._op)
            where = b.variable_device(f) if b.multi else host
        else:
            s = b.read_slot[f]
            where = b.device_of(f)
        slots.append(s)
        copies.append(s in b.persistent)
        devices.append(where if where is not None and not where.is_host else None)
    b.plan.fetch_slots = tuple(slots)
    b.plan.fetch_copy = tuple(copies)
    b.plan.fetch_host = tuple(devices)


def schedule_frees(steps: list, keep: set) -> list:
    """The steps with, on each, the slots whose last reader (or, never read, whose writer)
    it is, so the interpreter frees every value as early as possible; ``keep`` (the
    fetched slots) is never freed."""
    last_use: dict[int, int] = {}
    for k, (_, ins, out, nout, _, _) in enumerate(steps):
        for s in ins:
            last_use[s] = k
        for s in range(out, out + nout):
            last_use.setdefault(s, k)
    frees: list[list[int]] = [[] for _ in steps]
    for s, k in last_use.items():
        if s not in keep:
            frees[k].append(s)
    return [
        (fn, ins, out, nout, tuple(frees[k]), op)
        for k, (fn, ins, out, nout, _, op) in enumerate(steps)
    ]


def log_placement(order, placement, host: Device) -> None:
    """``log_device_placement``: each op's device, on stderr as TF1 prints it."""
    lines = [
        f"{op._name}: ({op._type}): {(placement[op] if placement is not None else host).name}"
        for op in order
    ]
    print("\n".join(lines), file=sys.stderr)


def function_callable(plan: Plan, n_out: int):
    """``f(*inputs) -> [outputs]`` running a function body's plan on raw runtime values."""
    steps = plan.steps
    template = plan.template
    feed_slots = plan.feed_slots
    out_slots = plan.fetch_slots[:n_out]
    n_in = len(feed_slots)
    run = execute_checked if CHECK_KERNELS else execute

    def call(*args):
        vals = template.copy()
        for i in range(n_in):
            vals[feed_slots[i]] = args[i]
        # Once per call (each while_loop iteration): the run's cancellation, if it has one.
        token = active_cancellation()
        if token is None:
            run(steps, vals)
        else:
            token.check()
            budget = active_budget()  # a memory limit comes with a token
            if budget is None:
                execute_checked(steps, vals, None, token)
            else:
                execute_bounded(steps, vals, token, budget)
        return [vals[s] for s in out_slots]

    return call
