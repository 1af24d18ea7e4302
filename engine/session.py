"""Sessions: the state that graphs do not hold, and the interpreter that runs them.

A ``Session`` owns variable values, random generator state and a cache of compiled plans.
``run(fetches, feed_dict)`` turns (feeds, fetches) into a plan once -- pruned to the
computation path, topologically ordered, kernels bound to their device's array module, each
value freed after its last use -- and afterwards only executes it. ``make_callable`` hands the
plan back as a function, skipping all per-call analysis.
"""

from __future__ import annotations

import collections
import os
import sys
import threading
import time
from functools import partial

import numpy as np

from engine import errors
from engine.config import (
    ConfigProto,
    DeviceStepStats,
    NodeExecStats,
    RunMetadata,
    StepStats,
)
from engine.framework.graph import Graph, Operation, Tensor, _DefaultStack, get_default_graph

__all__ = ["Session", "InteractiveSession", "get_default_session", "VariableSlot"]

_ndarray = np.ndarray
# FLOWSERVE_CHECK_KERNELS=1 verifies every kernel output against the op's static dtype and
# shape (the test suite turns it on); off, the interpreter only checks the container type.
CHECK_KERNELS = os.environ.get("FLOWSERVE_CHECK_KERNELS", "") not in ("", "0")


# -----------------------------------------------------------------------------------------
# Per-session state
# -----------------------------------------------------------------------------------------


class VariableSlot:
    """The storage of one variable in one session (what a TF1 ref tensor points to)."""

    __slots__ = ("name", "value", "shape", "dtype", "device", "__weakref__")

    def __init__(self, name, dtype, shape, device):
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self.device = device
        self.value = None

    def read(self):
        v = self.value
        if v is None:
            raise errors.FailedPreconditionError(
                None, None, f"Attempting to use uninitialized value {self.name}")
        return v

    def __repr__(self) -> str:
        state = "uninitialized" if self.value is None else f"shape={self.value.shape}"
        return f"<VariableSlot {self.name} {state}>"


def _deref(ref):
    return ref.read() if ref.__class__ is VariableSlot else ref


class Device:
    """A device a session can place ops on: its name, type and array module."""

    __slots__ = ("name", "device_type", "index", "xp")

    def __init__(self, device_type, index, xp):
        self.device_type = device_type
        self.index = index
        self.xp = xp
        self.name = f"/job:localhost/replica:0/task:0/device:{device_type}:{index}"

    def __repr__(self) -> str:
        return f"<Device {self.name}>"


class BindContext:
    """What a kernel's ``bind`` hook may know when a plan is compiled."""

    __slots__ = ("session", "op", "device", "input_persistent", "outputs_used")

    def __init__(self, session, op, device, input_persistent, outputs_used):
        self.session = session
        self.op = op
        self.device = device
        # Per input: may the value alias memory that outlives the run (constants, variables,
        # caller-owned feeds)? Ops that store an input (Assign) copy it when True.
        self.input_persistent = input_persistent
        # Per output: is it consumed or fetched within this plan?
        self.outputs_used = outputs_used

    @property
    def xp(self):
        return self.device.xp


# -----------------------------------------------------------------------------------------
# Plans
# -----------------------------------------------------------------------------------------


class _FeedSpec:
    __slots__ = ("tensor", "np_dtype", "dims", "is_string", "name")

    def __init__(self, tensor: Tensor):
        self.tensor = tensor
        base = tensor.dtype.base_dtype
        self.np_dtype = base.np
        self.is_string = base.name == "string"
        self.dims = tensor.shape.as_tuple()
        self.name = tensor.name

    def convert(self, value):
        """The fed value as an array of the tensor's dtype, checked against its static shape."""
        if isinstance(value, Tensor):
            raise TypeError("The value of a feed cannot be a Tensor object. Acceptable feed "
                            "values include Python scalars, strings, lists, numpy ndarrays.")
        if self.is_string:
            arr = _as_string_array(value)
        elif value.__class__ is _ndarray and value.dtype is self.np_dtype:
            arr = value
        else:
            try:
                arr = np.asarray(value, dtype=self.np_dtype)
            except (TypeError, ValueError) as e:
                raise ValueError(f"Cannot feed value {_short_repr(value)} for Tensor "
                                 f"'{self.name}' of dtype {self.tensor.dtype.base_dtype.name}: "
                                 f"{e}") from None
        dims = self.dims
        if dims is not None:
            shape = arr.shape
            if len(shape) != len(dims) or any(
                    d is not None and d != s for d, s in zip(dims, shape)):
                raise ValueError(f"Cannot feed value of shape {shape} for Tensor "
                                 f"'{self.name}', which has shape '{self.tensor.shape}'")
        return arr


def _short_repr(value) -> str:
    r = repr(value)
    return r if len(r) <= 60 else r[:57] + "..."


def _as_string_array(value) -> np.ndarray:
    arr = np.asarray(value, dtype=object) if not isinstance(value, np.ndarray) else value
    if arr.dtype.kind == "O":
        flat = arr.reshape(-1)
        if all(isinstance(v, bytes) for v in flat):
            return arr
        out = np.empty(arr.shape, dtype=object)
        oflat = out.reshape(-1)
        for i, v in enumerate(flat):
            if isinstance(v, str):
                v = v.encode("utf-8")
            elif not isinstance(v, bytes):
                raise TypeError(f"Cannot feed {type(v).__name__} value {v!r} to a string tensor")
            oflat[i] = v
        return out
    if arr.dtype.kind in ("U", "S"):
        out = np.empty(arr.shape, dtype=object)
        oflat = out.reshape(-1)
        for i, v in enumerate(arr.reshape(-1)):
            oflat[i] = v.encode("utf-8") if isinstance(v, str) else bytes(v)
        return out
    raise TypeError(f"Cannot feed a value of numpy dtype {arr.dtype} to a string tensor")


class _Plan:
    """A compiled (feeds, fetches) computation: slots, steps and what to return."""

    __slots__ = ("steps", "template", "feed_specs", "feed_slots", "fetch_slots", "fetch_copy",
                 "num_ops", "logged")

    def __init__(self):
        self.steps: list = []
        self.template: list = []
        self.feed_specs: list[_FeedSpec] = []
        self.feed_slots: tuple[int, ...] = ()
        self.fetch_slots: tuple = ()
        self.fetch_copy: tuple[bool, ...] = ()
        self.num_ops = 0
        self.logged = False


def _execute(steps, vals):
    """The interpreter: read inputs, call kernel, write outputs, free dead values."""
    for fn, ins, out, nout, free, op in steps:
        if nout == 1:
            r = fn(*[vals[i] for i in ins])
            if r.__class__ is not _ndarray:
                r = _coerce_output(r, op, 0)
            vals[out] = r
        elif nout == 0:
            fn(*[vals[i] for i in ins])
        else:
            r = fn(*[vals[i] for i in ins])
            if r.__class__ is not tuple or len(r) != nout:
                r = _coerce_outputs(r, op, nout)
            vals[out:out + nout] = r
        for i in free:
            vals[i] = None


def _execute_checked(steps, vals, trace=None):
    """The interpreter with output verification and optional per-op timing."""
    for fn, ins, out, nout, free, op in steps:
        t0 = time.perf_counter_ns() if trace is not None else 0
        r = fn(*[vals[i] for i in ins])
        if nout == 1:
            r = (r if r.__class__ is _ndarray else _coerce_output(r, op, 0),)
        elif nout and (r.__class__ is not tuple or len(r) != nout):
            r = _coerce_outputs(r, op, nout)
        if nout:
            if CHECK_KERNELS and op is not None:
                _verify_outputs(op, r, out)
            vals[out:out + nout] = r
        if trace is not None:
            trace.append((op, t0, time.perf_counter_ns()))
        for i in free:
            vals[i] = None


def _coerce_output(r, op, i):
    if isinstance(r, np.generic):
        return np.asarray(r)
    if r.__class__ is VariableSlot or (hasattr(r, "__cuda_array_interface__")):
        return r
    if op is not None and op._outputs[i]._dtype.base_dtype.name in ("resource", "variant"):
        return r
    raise errors.InternalError(
        None, op, f"Kernel for {op._type if op else 'step'} op '{op._name if op else ''}' "
                  f"returned {type(r).__name__}, expected an array")


def _coerce_outputs(r, op, nout):
    if isinstance(r, list) and len(r) == nout:
        r = tuple(r)
    if r.__class__ is not tuple or len(r) != nout:
        raise errors.InternalError(
            None, op, f"Kernel for {op._type} op '{op._name}' returned "
                      f"{type(r).__name__}, expected a tuple of {nout} arrays")
    return tuple(x if x.__class__ is _ndarray else _coerce_output(x, op, i)
                 for i, x in enumerate(r))


def _verify_outputs(op, values, out):
    for t, v in zip(op._outputs, values):
        if t._dtype._is_ref or t._dtype.base_dtype.name in ("resource", "variant"):
            continue
        if not hasattr(v, "dtype"):
            raise errors.InternalError(None, op, f"{op._type} kernel returned "
                                       f"{type(v).__name__} for {t.name}")
        want = t._dtype.np
        if v.dtype != want:
            raise errors.InternalError(
                None, op, f"{op._type} kernel returned dtype {v.dtype} for {t.name}, "
                          f"expected {t._dtype.name}")
        if not t._shape.is_compatible_with(v.shape):
            raise errors.InternalError(
                None, op, f"{op._type} kernel returned shape {v.shape} for {t.name}, "
                          f"incompatible with its static shape {t._shape}")


_EXC_MAP = (
    (MemoryError, errors.ResourceExhaustedError),
    (NotImplementedError, errors.UnimplementedError),
    (StopIteration, errors.OutOfRangeError),
    ((ValueError, TypeError, IndexError, ZeroDivisionError, FloatingPointError, KeyError),
     errors.InvalidArgumentError),
)


def _op_error(op, exc: BaseException, vals, steps_inputs) -> errors.OpError:
    """Re-raises a kernel failure as an OpError naming the op, its type and its inputs."""
    where = ""
    if op is not None:
        where = f"\n\t [[node {op._name} (defined at {op._defined_at})]]" \
            if op._defined_at else f"\n\t [[node {op._name}]]"
    if isinstance(exc, errors.OpError):
        if exc.op is None and op is not None:
            return type(exc)(op.node_def, op, exc.message + where)
        return exc
    cls = errors.UnknownError
    for types, target in _EXC_MAP:
        if isinstance(exc, types):
            cls = target
            break
    desc = []
    for i in steps_inputs:
        v = vals[i] if i < len(vals) else None
        if hasattr(v, "shape") and hasattr(v, "dtype"):
            desc.append(f"{v.dtype}{list(v.shape)}")
        else:
            desc.append(type(v).__name__)
    if op is None:
        return cls(None, None, f"{type(exc).__name__}: {exc}")
    msg = (f"{op._type} op '{op._name}' failed on inputs ({', '.join(desc)}): "
           f"{type(exc).__name__}: {exc}{where}")
    return cls(op.node_def, op, msg)


# -----------------------------------------------------------------------------------------
# Fetch structures
# -----------------------------------------------------------------------------------------


class _FetchStructure:
    """Flattens a nested fetch argument once and rebuilds results in the caller's shape."""

    __slots__ = ("elements", "build")

    def __init__(self, graph: Graph, fetches):
        self.elements: list = []
        index: dict[int, int] = {}
        self.build = self._flatten(graph, fetches, index)

    def _add(self, elem) -> int:
        self.elements.append(elem)
        return len(self.elements) - 1

    def _flatten(self, graph, f, index):
        if f is None:
            raise TypeError(f"Fetch argument {f!r} has invalid type {type(f)}, must be a "
                            "string or Tensor. (Can not convert a NoneType into a Tensor or "
                            "Operation.)")
        if isinstance(f, (Tensor, Operation, str)) or (
                hasattr(f, "_as_graph_element") and not isinstance(f, (list, tuple, dict))):
            try:
                elem = graph.as_graph_element(f, allow_tensor=True, allow_operation=True)
            except TypeError as e:
                raise TypeError(f"Fetch argument {f!r} has invalid type {type(f)}, must be a "
                                f"string or Tensor. ({e})") from None
            except ValueError as e:
                raise ValueError(f"Fetch argument {f!r} cannot be interpreted as a Tensor. "
                                 f"({e})") from None
            except KeyError as e:
                raise ValueError(f"Fetch argument {f!r} cannot be interpreted as a Tensor. "
                                 f"({e.args[0]})") from None
            k = index.get(id(elem))
            if k is None:
                k = index[id(elem)] = self._add(elem)
            if isinstance(elem, Operation):
                return lambda vals: None
            return lambda vals, k=k: vals[k]
        if isinstance(f, dict):
            builders = [(key, self._flatten(graph, v, index)) for key, v in f.items()]
            cls = type(f)

            def build_dict(vals):
                if cls is collections.defaultdict:
                    out = collections.defaultdict(f.default_factory)
                else:
                    try:
                        out = cls()
                    except TypeError:
                        out = {}
                for key, b in builders:
                    out[key] = b(vals)
                return out

            return build_dict
        if isinstance(f, (list, tuple)):
            builders = [self._flatten(graph, v, index) for v in f]
            if isinstance(f, tuple) and hasattr(f, "_fields"):
                cls = type(f)
                return lambda vals: cls(*[b(vals) for b in builders])
            if isinstance(f, tuple):
                return lambda vals: tuple(b(vals) for b in builders)
            return lambda vals: [b(vals) for b in builders]
        raise TypeError(f"Fetch argument {f!r} has invalid type {type(f)}, must be a string or "
                        f"Tensor. (Can not convert a {type(f).__name__} into a Tensor or "
                        "Operation.)")


# -----------------------------------------------------------------------------------------
# Sessions
# -----------------------------------------------------------------------------------------


class _SessionStack(_DefaultStack):
    pass


_default_session_stack = _SessionStack()


def get_default_session():
    """The innermost session entered with ``with sess:`` or ``sess.as_default()``, or None."""
    return _default_session_stack.get_default()


def _session_for(elem, session, method: str):
    """The session that ``Tensor.eval()`` / ``Operation.run()`` should use."""
    kind = "evaluate tensor" if isinstance(elem, Tensor) else "execute operation"
    if session is None:
        session = get_default_session()
        if session is None:
            raise ValueError(f"Cannot {kind} using `{method}()`: No default session is "
                             "registered. Use `with sess.as_default()` or pass an explicit "
                             f"session to `{method}(session=sess)`")
    if session.graph is not elem.graph:
        what = "tensor" if isinstance(elem, Tensor) else "operation"
        raise ValueError(f"Cannot use the given session to {kind}: the {what}'s graph is "
                         "different from the session's graph.")
    return session


def _cpu_device() -> Device:
    return Device("CPU", 0, np)


class BaseSession:
    def __init__(self, target: str = "", graph: Graph | None = None,
                 config: ConfigProto | None = None):
        if graph is None:
            graph = get_default_graph()
        if not isinstance(graph, Graph):
            raise TypeError(f"graph must be a Graph; got {type(graph).__name__}")
        if target and not isinstance(target, str):
            raise TypeError(f"target must be a string, but got {type(target).__name__}")
        if target:
            raise errors.UnimplementedError(
                None, None, f"Session target {target!r}: only in-process sessions "
                            "(target='') are supported")
        if config is not None and not isinstance(config, ConfigProto):
            raise TypeError(f"config must be a ConfigProto, but got {type(config).__name__}")
        self._graph = graph
        self._config = config or ConfigProto()
        self._target = target
        self._closed = False
        self._lock = threading.RLock()
        self._plans: dict = {}
        self._slots: dict[str, VariableSlot] = {}
        self._rngs: dict[Operation, object] = {}
        self._devices = [_cpu_device()]
        self._default_graph_cm = None
        self._default_session_cm = None

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

    # -- state ------------------------------------------------------------------------------
    def _slot_for(self, op: Operation, device: Device | None = None) -> VariableSlot:
        key = op._attrs.get("shared_name") or op._name
        with self._lock:
            slot = self._slots.get(key)
            if slot is None:
                shape = op._attrs.get("shape")
                slot = VariableSlot(op._name, op._outputs[0]._dtype.base_dtype, shape,
                                    device or self._devices[0])
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

    # -- running --------------------------------------------------------------------------
    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs the ops and evaluates the tensors in ``fetches``; returns their values.

        ``fetches`` may be a Tensor, Operation, Variable or name, or any nesting of lists,
        tuples, namedtuples and dicts of those; the result has the same structure (None for
        operations). ``feed_dict`` maps tensors (or names) to values that replace them.
        """
        self._check_open()
        structure = _FetchStructure(self._graph, fetches)
        feed_tensors, feed_values = self._resolve_feeds(feed_dict)
        plan = self._plan_for(feed_tensors, tuple(structure.elements))
        trace = options is not None and getattr(options, "trace_level", 0) > 0 \
            and run_metadata is not None
        values = self._run_plan(plan, feed_values, trace, run_metadata)
        return structure.build(values)

    def _resolve_feeds(self, feed_dict):
        if not feed_dict:
            return (), ()
        if not isinstance(feed_dict, dict):
            raise TypeError(f"feed_dict must be a dictionary, got {type(feed_dict).__name__}")
        tensors, values = [], []
        for key, value in feed_dict.items():
            try:
                t = self._graph.as_graph_element(key, allow_tensor=True, allow_operation=False)
            except (TypeError, ValueError, KeyError) as e:
                msg = e.args[0] if e.args else str(e)
                raise TypeError(f"Cannot interpret feed_dict key as Tensor: {msg}") from None
            tensors.append(t)
            values.append(value)
        return tuple(tensors), values

    def _plan_for(self, feeds: tuple, fetches: tuple, owned_feeds: bool = False) -> _Plan:
        key = (feeds, fetches, owned_feeds)
        plan = self._plans.get(key)
        if plan is None:
            with self._lock:
                self._check_open()
                plan = self._plans.get(key)
                if plan is None:
                    plan = self._compile(feeds, fetches, owned_feeds=owned_feeds)
                    self._plans[key] = plan
        return plan

    def _run_owned(self, fetches, feed_dict):
        """Runs with feeds the caller hands over (never used again by it): ops that store a
        fed value, such as the Assigns of a restore, keep it without copying."""
        self._check_open()
        structure = _FetchStructure(self._graph, fetches)
        feed_tensors, feed_values = self._resolve_feeds(feed_dict)
        plan = self._plan_for(feed_tensors, tuple(structure.elements), owned_feeds=True)
        return structure.build(self._run_plan(plan, feed_values))

    def _run_plan(self, plan: _Plan, feed_values, trace=False, run_metadata=None):
        vals = plan.template.copy()
        specs = plan.feed_specs
        for spec, slot, value in zip(specs, plan.feed_slots, feed_values):
            vals[slot] = spec.convert(value)
        self._execute_plan(plan, vals, trace, run_metadata)
        return self._collect(plan, vals)

    def _execute_plan(self, plan, vals, trace=False, run_metadata=None):
        steps = plan.steps
        op = None
        try:
            with np.errstate(all="ignore"):
                if trace:
                    events = []
                    start = time.time_ns()
                    base = time.perf_counter_ns()
                    _execute_checked(steps, vals, events)
                    self._fill_metadata(run_metadata, events, start, base)
                elif CHECK_KERNELS:
                    _execute_checked(steps, vals)
                else:
                    _execute(steps, vals)
        except Exception as exc:  # noqa: BLE001 - re-raised as a typed OpError
            op, ins = _failing_step(exc, steps)
            raise _op_error(op, exc, vals, ins) from (
                None if isinstance(exc, errors.OpError) else exc)

    def _collect(self, plan, vals):
        out = []
        for slot, copy in zip(plan.fetch_slots, plan.fetch_copy):
            if slot is None:
                out.append(None)
                continue
            v = vals[slot]
            if v.__class__ is _ndarray:
                if v.ndim == 0:
                    v = v[()]
                elif copy:
                    v = v.copy()
            else:
                v = _to_host(v, copy)
            out.append(v)
        return out

    def _fill_metadata(self, md: RunMetadata, events, start_ns, base_ns) -> None:
        by_device: dict[str, list] = {}
        for op, t0, t1 in events:
            if op is None:
                continue
            dev = self._device_of(op).name
            rel0 = t0 - base_ns
            stats = NodeExecStats(
                node_name=op._name, op_type=op._type, device=dev,
                all_start_micros=(start_ns + rel0) // 1000, op_start_rel_micros=0,
                op_end_rel_micros=(t1 - t0) // 1000, all_end_rel_micros=(t1 - t0) // 1000,
                all_start_nanos=start_ns + rel0, all_end_rel_nanos=t1 - t0,
                timeline_label=f"{op._name} = {op._type}("
                               f"{', '.join(t.name for t in op._inputs)})")
            by_device.setdefault(dev, []).append(stats)
        md.step_stats = StepStats(dev_stats=[DeviceStepStats(device=d, node_stats=s)
                                             for d, s in by_device.items()])

    def _device_of(self, op: Operation) -> Device:
        return self._devices[0]

    # -- compilation ----------------------------------------------------------------------
    def _compile(self, feeds: tuple, fetches: tuple, function: bool = False,
                 owned_feeds: bool = False) -> _Plan:
        """Prunes, orders and binds the computation of ``fetches`` given ``feeds``.

        ``function`` compiles the body of a control-flow op: fed tensors then may carry
        variable references (a captured variable) as well as values.
        """
        fed: dict[Tensor, int] = {}
        for t in feeds:
            if t in fed:
                continue
            fed[t] = len(fed)
        order = _topological_order(fetches, fed)
        for op in order:
            if op._type == "Placeholder":
                shape = op._attrs.get("shape")
                shape_s = shape._short() if shape is not None and shape.rank is not None \
                    else "<unknown>"
                raise errors.InvalidArgumentError(
                    op.node_def, op,
                    f"You must feed a value for placeholder tensor '{op._name}' with dtype "
                    f"{op._attrs['dtype'].name} and shape {shape_s}"
                    + (f"\n\t [[node {op._name} (defined at {op._defined_at})]]"
                       if op._defined_at else ""))
        plan = _Plan()
        plan.num_ops = len(order)
        template: list = []
        feed_specs = []
        read_slot: dict[Tensor, int] = {}
        for t in fed:
            read_slot[t] = len(template)
            template.append(None)
            feed_specs.append(_FeedSpec(t))
        plan.feed_specs = feed_specs
        plan.feed_slots = tuple(range(len(fed)))
        # Map each feed as given (duplicates allowed) to its slot.
        if len(feeds) != len(fed):
            plan.feed_specs = [_FeedSpec(t) for t in feeds]
            plan.feed_slots = tuple(read_slot[t] for t in feeds)
        out_base: dict[Operation, int] = {}
        for op in order:
            out_base[op] = len(template)
            for t in op._outputs:
                template.append(None)
                if t not in fed:
                    read_slot[t] = out_base[op] + t._value_index

        # Which tensors are read, by anyone in the plan or as fetches?
        used: set[Tensor] = set()
        for op in order:
            used.update(op._inputs)
        for f in fetches:
            if isinstance(f, Tensor):
                used.add(f)

        persistent: set[int] = set() if owned_feeds else set(plan.feed_slots)
        steps: list = []
        device = self._devices[0]

        def deref_slot(src: int, consumer) -> int:
            new = len(template)
            template.append(None)
            steps.append((_deref, (src,), new, 1, (), consumer))
            persistent.add(new)
            return new

        for op in order:
            opdef = op._opdef
            base = out_base[op]
            if op._type == "Identity" and op._inputs[0]._dtype._is_ref:
                # A variable's snapshot (``w/read``): the read itself is the whole step.
                steps.append((_deref, (read_slot[op._inputs[0]],), base, 1, (), op))
                persistent.add(base)
                continue
            ins = []
            ref_in = opdef.ref_inputs
            for i, t in enumerate(op._inputs):
                s = read_slot[t]
                takes_ref = ref_in == "all" or i in ref_in
                if t._dtype._is_ref:
                    if takes_ref and t in fed and not function:
                        raise errors.InvalidArgumentError(
                            op.node_def, op, f"Input {i} of {op._type} op '{op._name}' needs "
                                             f"the variable {t.name} itself, which cannot be fed")
                    if not takes_ref:
                        s = deref_slot(s, op)
                ins.append(s)
            ctx = BindContext(self, op, device, tuple(s in persistent for s in ins),
                              tuple(t in used for t in op._outputs))
            try:
                kernel = _bind_kernel(op, ctx)
                # Hoisted ops run once per plan: constants and session resources (slots).
                value = kernel() if opdef.hoist else None
            except errors.OpError:
                raise
            except Exception as exc:  # noqa: BLE001 - a bad attr or binding, typed here
                raise _op_error(op, exc, [], ()) from exc
            if opdef.hoist:
                if len(op._outputs) == 1:
                    template[base] = value if value.__class__ is _ndarray or \
                        value.__class__ is VariableSlot else _coerce_output(value, op, 0)
                    persistent.add(base)
                continue
            steps.append((kernel, tuple(ins), base, len(op._outputs), (), op))
            if opdef.aliases and any(s in persistent for s in ins):
                persistent.update(range(base, base + len(op._outputs)))

        fetch_slots = []
        fetch_copy = []
        for f in fetches:
            if isinstance(f, Operation):
                fetch_slots.append(None)
                fetch_copy.append(False)
                continue
            s = read_slot[f] if f in read_slot else None
            if s is None:  # fetched but fed: read_slot covers it; keep the check explicit
                raise errors.InternalError(None, None, f"No value for fetch {f.name}")
            if f._dtype._is_ref and not function:
                s = deref_slot(s, f._op)
            fetch_slots.append(s)
            fetch_copy.append(s in persistent)
        plan.fetch_slots = tuple(fetch_slots)
        plan.fetch_copy = tuple(fetch_copy)

        # Free every value after its last reader (fetched values are kept).
        keep = {s for s in fetch_slots if s is not None}
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
        plan.steps = [(fn, ins, out, nout, tuple(frees[k]), op)
                      for k, (fn, ins, out, nout, _, op) in enumerate(steps)]
        plan.template = template
        if self._config.log_device_placement:
            for op in order:
                print(f"{op._name}: ({op._type}): {device.name}", file=sys.stderr)
        return plan

    # -- functions (control-flow bodies) --------------------------------------------------
    def _compile_function(self, fg, device=None):
        """A callable running function graph ``fg``: ``f(*inputs) -> list of outputs``.

        Inputs and outputs are raw runtime values (arrays, variable references, handles).
        """
        fetches = tuple(fg.outputs) + tuple(fg.control_outputs)
        n_out = len(fg.outputs)
        with self._lock:
            plan = self._compile(tuple(fg.inputs), fetches, function=True)
        steps = plan.steps
        template = plan.template
        feed_slots = plan.feed_slots
        out_slots = plan.fetch_slots[:n_out]
        n_in = len(feed_slots)

        def call(*args):
            vals = template.copy()
            for i in range(n_in):
                vals[feed_slots[i]] = args[i]
            try:
                if CHECK_KERNELS:
                    _execute_checked(steps, vals)
                else:
                    _execute(steps, vals)
            except errors.OpError as exc:
                if exc.op is None:
                    op, ins = _failing_step(exc, steps)
                    raise _op_error(op, exc, vals, ins) from None
                raise
            except Exception as exc:  # noqa: BLE001 - re-raised as a typed OpError
                op, ins = _failing_step(exc, steps)
                raise _op_error(op, exc, vals, ins) from exc
            return [vals[s] for s in out_slots]

        return call

    # -- callables ----------------------------------------------------------------------
    def make_callable(self, fetches, feed_list=None, accept_options=False):
        """Returns ``f(*feed_values)`` running ``fetches`` with no per-call analysis.

        ``feed_list`` names the tensors whose values are passed positionally.
        """
        self._check_open()
        structure = _FetchStructure(self._graph, fetches)
        feeds = []
        for key in feed_list or ():
            try:
                feeds.append(self._graph.as_graph_element(key, allow_tensor=True,
                                                          allow_operation=False))
            except (TypeError, ValueError, KeyError) as e:
                raise TypeError(f"Cannot interpret feed_list key as Tensor: "
                                f"{e.args[0] if e.args else e}") from None
        feeds = tuple(feeds)
        plan = self._plan_for(feeds, tuple(structure.elements))
        n_feeds = len(feeds)
        specs = plan.feed_specs
        feed_slots = plan.feed_slots
        template = plan.template
        execute = self._execute_plan
        collect = self._collect
        build = structure.build
        session = self

        def finish(vals):
            return build(collect(plan, vals))

        def run_callable(*feed_values, options=None, run_metadata=None):
            if session._closed:
                raise RuntimeError("Attempted to use a closed Session.")
            if len(feed_values) != n_feeds:
                raise TypeError(f"This callable takes {n_feeds} feed value(s) "
                                f"({', '.join(t.name for t in feeds)}), got {len(feed_values)}")
            vals = template.copy()
            for spec, slot, value in zip(specs, feed_slots, feed_values):
                vals[slot] = spec.convert(value)
            trace = options is not None and options.trace_level > 0 and run_metadata is not None
            execute(plan, vals, trace, run_metadata)
            return finish(vals)

        if accept_options:
            return run_callable
        return lambda *feed_values: run_callable(*feed_values)


def _failing_step(exc, steps):
    """The op whose kernel raised ``exc`` (the traceback's first interpreter frame)."""
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code in (_execute.__code__, _execute_checked.__code__):
            return frame.f_locals.get("op"), frame.f_locals.get("ins", ())
        tb = tb.tb_next
    return None, ()


def _to_host(v, copy):
    if hasattr(v, "get") and hasattr(v, "__cuda_array_interface__"):
        v = v.get()
        return v[()] if v.ndim == 0 else v
    if v.__class__ is VariableSlot:
        v = v.read()
        return v[()] if v.ndim == 0 else v.copy()
    if isinstance(v, np.generic):
        return v
    return v


def _bind_kernel(op: Operation, ctx: BindContext):
    opdef = op._opdef
    kernel = opdef.kernel
    if kernel is None:
        raise errors.UnimplementedError(op.node_def, op, f"No kernel for op type {op._type}")
    attrs = {k: v for k, v in op._attrs.items() if k[0] != "_"}
    if opdef.bind is not None:
        attrs.update(opdef.bind(op, ctx))
    return partial(kernel, ctx.device.xp, **attrs)


def _topological_order(fetches, fed) -> list[Operation]:
    """Ops needed for ``fetches`` in dependency order (iterative post-order DFS)."""
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
                        None, dep, f"Graph is invalid, contains a cycle through op "
                                   f"'{dep._name}'")
            else:
                stack.pop()
                state[op] = 2
                order.append(op)
    return order


def _deps(op: Operation, fed):
    for t in op._inputs:
        if t not in fed:
            yield t._op
    yield from op._control_inputs


class Session(BaseSession):
    """A connection to the engine's runtime for one graph.

    >>> with Session() as sess:
    ...     sess.run(constant(2) + 3)
    5
    """


class InteractiveSession(BaseSession):
    """A session that installs itself as the default session when created."""

    def __init__(self, target: str = "", graph: Graph | None = None,
                 config: ConfigProto | None = None):
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
