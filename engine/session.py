"""Sessions: the state that graphs do not hold, and the entry points that run them.

A ``Session`` owns variable values, random generator state and a cache of compiled plans.
``run(fetches, feed_dict)`` turns (feeds, fetches) into a plan once -- pruned to the
computation path, topologically ordered, kernels bound to their device's array module, each
value freed after its last use -- and afterwards only executes it. ``make_callable`` hands the
plan back as a function, skipping all per-call analysis. The machinery lives in
``engine.runtime``: plan compilation (``plan``), the interpreter, placement, feeds/fetches.
"""

from __future__ import annotations

import functools
import threading
import time

import numpy as np

from engine import errors, threads
from engine.config import (
    ConfigProto,
    DeviceStepStats,
    NodeExecStats,
    RunMetadata,
    StepStats,
)
from engine.devices import Device, local_devices
from engine.framework.graph import (
    Graph,
    Operation,
    _default_session_stack,
    get_default_graph,
    get_default_session,
)
from engine.framework.sparse_tensor import SparseTensor, expand_feed, sparse_feed_callable
from engine.runtime.compiled import compile_callable, compile_function, compile_run
from engine.runtime.feeds import FetchStructure, collect
from engine.runtime.interpreter import (
    CHECK_KERNELS,
    Cancellation,
    MemoryBudget,
    activated,
    execute,
    execute_bounded,
    execute_checked,
)
from engine.runtime.placement import Placer
from engine.runtime.plan import Plan, compile_plan, function_callable
from engine.runtime.values import Copy, VariableSlot
from engine.util import nest

__all__ = ["Session", "InteractiveSession", "get_default_session", "VariableSlot"]


class BaseSession:
    def __init__(
        self, target: str = "", graph: Graph | None = None, config: ConfigProto | None = None
    ):
        if graph is None:
            graph = get_default_graph()
        if not isinstance(graph, Graph):
            raise TypeError(f"graph must be a Graph; got {type(graph).__name__}")
        if target and not isinstance(target, str):
            raise TypeError(f"target must be a string, but got {type(target).__name__}")
        if target:
            raise errors.UnimplementedError(
                None,
                None,
                f"Session target {target!r}: only in-process sessions (target='') are supported",
            )
        if config is not None and not isinstance(config, ConfigProto):
            raise TypeError(f"config must be a ConfigProto, but got {type(config).__name__}")
        self._graph = graph
        self._config = config or ConfigProto()
        self._max_intermediate_bytes = _check_limit(
            self._config.max_intermediate_bytes, "ConfigProto.max_intermediate_bytes"
        )
        self._target = target
        self._closed = False
        self._lock = threading.RLock()
        self._plans: dict = {}
        self._slots: dict[str, VariableSlot] = {}
        self._rngs: dict[Operation, object] = {}
        self._close_hooks: list = []  # session state woken on close (blocked queue ops)
        self._devices = local_devices(self._config)
        self._host = self._devices[0]
        # Several devices: plans place ops and copy values between devices. One device
        # (CPU only): plans skip placement entirely, so the CPU path pays nothing for it.
        self._multi = len(self._devices) > 1
        self._placer = Placer(self._devices, self._config.allow_soft_placement)
        self._default_graph_cm = None
        self._default_session_cm = None
        # Last: a session that failed to build fixes no process-wide thread count.
        threads.apply_session_config(self._config)

    # -- properties -------------------------------------------------------------------------
    @property
    def graph(self) -> Graph:
        return self._graph

    @property
    def graph_def(self):
        return self._graph.as_graph_def()

    @property
    def sess_str(self) -> str:
        return self._target

    def list_devices(self) -> list[Device]:
        return list(self._devices)

    # -- lifecycle ------------------------------------------------------------------------
    def close(self) -> None:
        """Frees the session's state; running it afterwards raises RuntimeError."""
        with self._lock:
            self._closed = True
            self._plans.clear()
            self._slots.clear()
            self._rngs.clear()
            hooks, self._close_hooks = self._close_hooks, []
        for hook in hooks:
            hook()

    def _add_close_hook(self, hook) -> None:
        """Calls ``hook()`` when the session closes (at once if it already has)."""
        with self._lock:
            if not self._closed:
                self._close_hooks.append(hook)
                return
        hook()

    def as_default(self):
        """Context manager making this the default session (for ``eval()``/``run()``)."""
        return _default_session_stack.get_controller(self)

    def __enter__(self):
        self._default_graph_cm = self._graph.as_default()
        self._default_graph_cm.__enter__()
        self._default_session_cm = self.as_default()
        self._default_session_cm.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            self._default_session_cm.__exit__(exc_type, exc, tb)
            self._default_graph_cm.__exit__(exc_type, exc, tb)
        finally:
            self._default_session_cm = self._default_graph_cm = None
            self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")

    # -- state (reached by ops through their BindContext) ---------------------------------
    def _slot_for(self, op: Operation, device: Device | None = None) -> VariableSlot:
        key = op._attrs.get("shared_name") or op._name
        with self._lock:
            slot = self._slots.get(key)
            if slot is None:
                shape = op._attrs.get("shape")
                slot = VariableSlot(
                    op._name, op._outputs[0]._dtype.base_dtype, shape, device or self._host
                )
                self._slots[key] = slot
            return slot

    def _rng_for(self, op: Operation, seeds):
        """The random generator of ``op`` in this session: each run draws the next values."""
        with self._lock:
            rng = self._rngs.get(op)
            if rng is None:
                seed, seed2 = seeds
                if seed == 0 and seed2 == 0:
                    rng = np.random.default_rng()
                else:
                    rng = np.random.default_rng([seed, seed2])
                self._rngs[op] = rng
            return rng

    def _compile_function(self, fg, device=None, input_devices=None):
        """A callable running function graph ``fg`` (a control-flow body): ``f(*inputs) ->
        list of outputs``, on raw runtime values (arrays, variable references, handles) on
        ``device``; ``input_devices`` (per input, optional) tells where the variables passed
        by reference live."""
        fetches = tuple(fg.outputs) + tuple(fg.control_outputs)
        with self._lock:
            plan = compile_plan(
                self,
                tuple(fg.inputs),
                fetches,
                function=True,
                default_device=device,
                input_devices=input_devices,
            )
        slow = function_callable(plan, len(fg.outputs))
        return compile_function(plan, len(fg.outputs), slow) or slow

    # -- running --------------------------------------------------------------------------
    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs the ops and evaluates the tensors in ``fetches``; returns their values.

        ``fetches`` may be a Tensor, Operation, Variable or name, or any nesting of lists,
        tuples, namedtuples and dicts of those; the result has the same structure (None for
        operations). ``feed_dict`` maps tensors (or names) to values that replace them.
        ``options=RunOptions(timeout_in_ms=N)`` stops the run after N ms with
        ``DeadlineExceededError`` (checked between ops and per while_loop iteration).
        ``RunOptions(max_intermediate_bytes=N)`` (default: the session's
        ``ConfigProto.max_intermediate_bytes``; 0: no limit) fails the run with
        ``ResourceExhaustedError``, naming the op, when its live intermediates would exceed N
        bytes.
        """
        self._check_open()
        structure = FetchStructure(self._graph, fetches)
        feed_tensors, feed_values = self._resolve_feeds(feed_dict)
        plan = self._plan_for(feed_tensors, tuple(structure.elements))
        trace = (
            options is not None
            and getattr(options, "trace_level", 0) > 0
            and run_metadata is not None
        )
        token = _cancellation(options)
        budget = _memory_budget(options, self._max_intermediate_bytes)
        if budget is not None and token is None:
            token = Cancellation()
        values = self._run_plan(plan, feed_values, trace, run_metadata, token, budget)
        return structure.build(values)

    def _resolve_feeds(self, feed_dict):
        if not feed_dict:
            return (), ()
        if not isinstance(feed_dict, dict):
            raise TypeError(f"feed_dict must be a dictionary, got {type(feed_dict).__name__}")
        tensors, values = [], []
        for key, value in self._flat_feeds(feed_dict):
            try:
                t = self._graph.as_graph_element(key, allow_tensor=True, allow_operation=False)
            except (TypeError, ValueError, KeyError) as e:
                msg = e.args[0] if e.args else str(e)
                raise TypeError(f"Cannot interpret feed_dict key as Tensor: {msg}") from None
            tensors.append(t)
            values.append(value)
        return tuple(tensors), values

    @staticmethod
    def _flat_feeds(feed_dict):
        """(key, value) pairs; a key that is a tuple or namedtuple of tensors (an RNN state,
        say) feeds each of its tensors from the value of the same structure, as TF does."""
        for key, value in feed_dict.items():
            if isinstance(key, SparseTensor):
                yield from expand_feed(key, value)
            elif isinstance(key, tuple):
                keys = nest.flatten(key)
                try:
                    nest.assert_same_structure(key, value, check_types=False)
                except (TypeError, ValueError):
                    raise ValueError(
                        f"The feed value for the structure {key!r} must have the same structure"
                    ) from None
                yield from zip(keys, nest.flatten(value))
            else:
                yield key, value

    def _plan_for(self, feeds: tuple, fetches: tuple, owned_feeds: bool = False) -> Plan:
        key = (feeds, fetches, owned_feeds)
        plan = self._plans.get(key)
        if plan is None:
            with self._lock:
                self._check_open()
                plan = self._plans.get(key)
                if plan is None:
                    plan = compile_plan(self, feeds, fetches, owned_feeds=owned_feeds)
                    self._plans[key] = plan
        return plan

    def _run_owned(self, fetches, feed_dict):
        """Runs with feeds the caller hands over (never used again by it): ops that store a
        fed value, such as the Assigns of a restore, keep it without copying."""
        self._check_open()
        structure = FetchStructure(self._graph, fetches)
        feed_tensors, feed_values = self._resolve_feeds(feed_dict)
        plan = self._plan_for(feed_tensors, tuple(structure.elements), owned_feeds=True)
        return structure.build(self._run_plan(plan, feed_values))

    def _run_plan(
        self, plan: Plan, feed_values, trace=False, run_metadata=None, token=None, budget=None
    ):
        if not trace and token is None and budget is None:
            run = plan.compiled
            if run is None:
                # A plan run once (an initializer, a restore) is not worth compiling.
                plan.runs += 1
                if plan.runs > 1:
                    run = plan.compiled = compile_run(self, plan) or False
            if run:
                return run(feed_values)
        vals = plan.template.copy()
        specs = plan.feed_specs
        for spec, slot, value in zip(specs, plan.feed_slots, feed_values):
            vals[slot] = spec.convert(value)
        self._execute_plan(plan, vals, trace, run_metadata, token, budget)
        return collect(plan, vals)

    def _execute_plan(
        self, plan, vals, trace=False, run_metadata=None, token=None, budget=None, verify=True
    ):
        """Runs ``plan`` over ``vals``; ``verify=False`` skips ``CHECK_KERNELS``' comparison
        of outputs with static shapes (feeds whose shapes were not checked)."""
        steps = plan.steps
        if budget is not None:
            # A memory limit: its own loop (with a token, which it always comes with).
            events = [] if trace else None
            start, base = time.time_ns(), time.perf_counter_ns()
            with np.errstate(all="ignore"), activated(token, budget):
                execute_bounded(steps, vals, token, budget, events, verify)
            if trace:
                self._fill_metadata(run_metadata, events, start, base, plan.placement)
            return
        if token is not None:
            # Function bodies (while_loop iterations) find the token as the thread's active one.
            events = [] if trace else None
            start, base = time.time_ns(), time.perf_counter_ns()
            with np.errstate(all="ignore"), activated(token):
                execute_checked(steps, vals, events, token, verify)
            if trace:
                self._fill_metadata(run_metadata, events, start, base, plan.placement)
            return
        with np.errstate(all="ignore"):
            if trace:
                events = []
                start = time.time_ns()
                base = time.perf_counter_ns()
                execute_checked(steps, vals, events, None, verify)
                self._fill_metadata(run_metadata, events, start, base, plan.placement)
            elif CHECK_KERNELS and verify:
                execute_checked(steps, vals)
            else:
                execute(steps, vals)

    def _fill_metadata(self, md: RunMetadata, events, start_ns, base_ns, placement) -> None:
        by_device: dict[str, list] = {}
        for op, fn, t0, t1 in events:
            if op is None:
                continue
            if fn.__class__ is Copy:
                dev = fn.dst.name
                name, op_type = f"{fn.tensor_name}/_copy_to_{fn.dst.short_name}", "_Copy"
            else:
                dev = placement[op].name if placement is not None else self._host.name
                name, op_type = op._name, op._type
            rel0 = t0 - base_ns
            stats = NodeExecStats(
                node_name=name,
                op_type=op_type,
                device=dev,
                all_start_micros=(start_ns + rel0) // 1000,
                op_start_rel_micros=0,
                op_end_rel_micros=(t1 - t0) // 1000,
                all_end_rel_micros=(t1 - t0) // 1000,
                all_start_nanos=start_ns + rel0,
                all_end_rel_nanos=t1 - t0,
                timeline_label=f"{op._name} = {op._type}({', '.join(t.name for t in op._inputs)})",
            )
            by_device.setdefault(dev, []).append(stats)
        md.step_stats = StepStats(
            dev_stats=[DeviceStepStats(device=d, node_stats=s) for d, s in by_device.items()]
        )

    # -- callables ----------------------------------------------------------------------
    def make_callable(self, fetches, feed_list=None, accept_options=False, check_feed_shapes=True):
        """Returns ``f(*feed_values)`` running ``fetches`` with no per-call analysis.

        ``feed_list`` names the tensors whose values are passed positionally. With
        ``check_feed_shapes=False`` (a flowserve extension) a fed value of another shape than
        its tensor's static one runs as TF's C++ session runs it, the graph's ops deciding
        (on the interpreter, which plans nothing from static shapes).
        """
        self._check_open()
        if feed_list and any(isinstance(k, SparseTensor) for k in feed_list):
            return sparse_feed_callable(self.make_callable, fetches, feed_list, accept_options)
        structure = FetchStructure(self._graph, fetches)
        feeds = []
        for key in feed_list or ():
            try:
                feeds.append(
                    self._graph.as_graph_element(key, allow_tensor=True, allow_operation=False)
                )
            except (TypeError, ValueError, KeyError) as e:
                raise TypeError(
                    f"Cannot interpret feed_list key as Tensor: {e.args[0] if e.args else e}"
                ) from None
        feeds = tuple(feeds)
        plan = self._plan_for(feeds, tuple(structure.elements))
        n_feeds = len(feeds)
        specs = plan.feed_specs
        if not check_feed_shapes:
            specs = tuple(spec.without_shape_check() for spec in specs)
        feed_slots = plan.feed_slots
        template = plan.template
        execute_plan = self._execute_plan
        if not check_feed_shapes:
            execute_plan = functools.partial(self._execute_plan, verify=False)
        build = structure.build
        session = self
        default_limit = self._max_intermediate_bytes

        def run_callable(*feed_values, options=None, run_metadata=None, cancellation=None):
            if session._closed:
                raise RuntimeError("Attempted to use a closed Session.")
            if len(feed_values) != n_feeds:
                raise _arity_error(feeds)(len(feed_values))
            vals = template.copy()
            for spec, slot, value in zip(specs, feed_slots, feed_values):
                vals[slot] = spec.convert(value)
            trace = options is not None and options.trace_level > 0 and run_metadata is not None
            token = cancellation if cancellation is not None else _cancellation(options)
            budget = None
            if default_limit or options is not None:  # no call at all on the plain path
                budget = _memory_budget(options, default_limit)
                if budget is not None and token is None:
                    token = Cancellation()
            execute_plan(plan, vals, trace, run_metadata, token, budget)
            return build(collect(plan, vals))

        # A memory limit counts every call's bytes, and unchecked feed shapes must not meet
        # plans made from static shapes: both take the interpreter.
        if not default_limit and check_feed_shapes:
            compiled = compile_callable(
                self, plan, n_feeds, build, run_callable, accept_options, _arity_error(feeds)
            )
            if compiled is not None:
                return compiled
        if accept_options:
            return run_callable
        return lambda *feed_values: run_callable(*feed_values)


def _arity_error(feeds: tuple):
    """The TypeError of a callable taking ``feeds`` called with ``n`` values."""

    def describe(n: int) -> TypeError:
        return TypeError(
            f"This callable takes {len(feeds)} feed value(s) "
            f"({', '.join(t.name for t in feeds)}), got {n}"
        )

    return describe


def _cancellation(options) -> Cancellation | None:
    """The token of a run with ``RunOptions(timeout_in_ms=N)`` (N > 0), else None."""
    timeout_ms = getattr(options, "timeout_in_ms", 0) if options is not None else 0
    if timeout_ms and timeout_ms > 0:
        return Cancellation.after(timeout_ms / 1000.0)
    return None


def _memory_budget(options, default: int) -> MemoryBudget | None:
    """The budget of a run limited to ``RunOptions.max_intermediate_bytes`` (else the
    session's default) bytes of live intermediates; None when neither sets one."""
    limit = getattr(options, "max_intermediate_bytes", 0) if options is not None else 0
    limit = limit or default
    return MemoryBudget(limit) if limit else None


def _check_limit(value, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{where} must be a non-negative integer (0: no limit), got {value!r}")
    return value


class Session(BaseSession):
    """A connection to the engine's runtime for one graph.

    >>> with Session() as sess:
    ...     sess.run(constant(2) + 3)
    5
    """


class InteractiveSession(BaseSession):
    """A session that installs itself as the default session when created."""

    def __init__(
        self, target: str = "", graph: Graph | None = None, config: ConfigProto | None = None
    ):
        super().__init__(target, graph, config)
        self._default_session_cm = self.as_default()
        self._default_session_cm.__enter__()
        self._default_graph_cm = self._graph.as_default()
        self._default_graph_cm.__enter__()
        self._explicitly_closed = False

    def close(self) -> None:
        super().close()
        if not self._explicitly_closed:
            self._explicitly_closed = True
            if self._default_graph_cm is not None:
                self._default_graph_cm.__exit__(None, None, None)
            if self._default_session_cm is not None:
                self._default_session_cm.__exit__(None, None, None)
            self._default_graph_cm = self._default_session_cm = None
