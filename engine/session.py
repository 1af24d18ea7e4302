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
from engine.devices import Device, gpu_unavailable_reason, local_devices
from engine.framework.device_spec import DeviceSpec
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
                None, None, f"Attempting to use uninitialized value {self.name}"
            )
        return v

    def __repr__(self) -> str:
        state = "uninitialized" if self.value is None else f"shape={self.value.shape}"
        return f"<VariableSlot {self.name} {state}>"


def _deref(ref):
    return ref.read() if ref.__class__ is VariableSlot else ref


def _deref_to(device, ref):
    """Reads a variable whose device is known only at run time, as a value on ``device``."""
    v = ref.read() if ref.__class__ is VariableSlot else ref
    return device.to_device(v)


def _guard_variable_device(kernel, device, ref_indices, *args):
    """Refuses to write a variable (captured by a control-flow body) from another device."""
    for i in ref_indices:
        slot = args[i]
        if slot.__class__ is VariableSlot and slot.device is not device:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"Variable {slot.name} lives on {slot.device.name}, but this op "
                f"writing it runs on {device.name} inside a control-flow body. "
                "Place the cond/while_loop on the variable's device "
                "(with tf.device(...)).",
            )
    return kernel(*args)


class _Copy:
    """A plan step moving a value from one device to another."""

    __slots__ = ("src", "dst", "tensor_name", "_fn")

    def __init__(self, src: Device, dst: Device, tensor_name: str):
        self.src = src
        self.dst = dst
        self.tensor_name = tensor_name
        self._fn = src.to_host if dst.is_host else dst.to_device

    def __call__(self, value):
        return self._fn(value)

    def __repr__(self) -> str:
        return f"<copy {self.tensor_name} {self.src.short_name} -> {self.dst.short_name}>"


def _on_device(device: Device, value) -> bool:
    if isinstance(value, (_ndarray, np.generic)) or hasattr(value, "__cuda_array_interface__"):
        return device.owns(value)
    return True  # not an array: variable references, handles and Python objects


def _describe(value) -> str:
    return f"{type(value).__module__}.{type(value).__name__}" + (
        f" on TEST:{value.device_index}" if hasattr(value, "device_index") else ""
    )


class _DeviceChecked:
    """Checked mode: a kernel must read and return arrays of the device it is placed on."""

    __slots__ = ("kernel", "device", "op", "refs")

    def __init__(self, kernel, device, op, ins, ref_in):
        self.kernel = kernel
        self.device = device
        self.op = op
        self.refs = frozenset(range(len(ins))) if ref_in == "all" else frozenset(ref_in)

    def __call__(self, *args):
        op, device = self.op, self.device
        for i, v in enumerate(args):
            if i not in self.refs and not _on_device(device, v):
                raise errors.InternalError(
                    None,
                    op,
                    f"{op._type} op '{op._name}' placed on {device.name} was given "
                    f"input {i} as {_describe(v)} (a missing copy)",
                )
        r = self.kernel(*args)
        for k, v in enumerate(r if isinstance(r, (tuple, list)) else (r,)):
            if not _on_device(device, v):
                raise errors.InternalError(
                    None,
                    op,
                    f"{op._type} kernel placed on {device.name} returned output {k} "
                    f"as {_describe(v)}: kernels must build results with xp, "
                    "not numpy",
                )
        return r


class BindContext:
    """What a kernel's ``bind`` hook may know when a plan is compiled."""

    __slots__ = ("session", "op", "device", "input_persistent", "outputs_used", "input_devices")

    def __init__(self, session, op, device, input_persistent, outputs_used, input_devices=None):
        self.session = session
        self.op = op
        self.device = device
        # Per input: may the value alias memory that outlives the run (constants, variables,
        # caller-owned feeds)? Ops that store an input (Assign) copy it when True.
        self.input_persistent = input_persistent
        # Per output: is it consumed or fetched within this plan?
        self.outputs_used = outputs_used
        # Per input: the device its value (or, for a reference, its variable) lives on;
        # None in single-device sessions.
        self.input_devices = input_devices

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
            raise TypeError(
                "The value of a feed cannot be a Tensor object. Acceptable feed "
                "values include Python scalars, strings, lists, numpy ndarrays."
            )
        if self.is_string:
            arr = _as_string_array(value)
        elif value.__class__ is _ndarray and value.dtype is self.np_dtype:
            arr = value
        else:
            try:
                arr = np.asarray(value, dtype=self.np_dtype)
            except (TypeError, ValueError) as e:
                raise ValueError(
                    f"Cannot feed value {_short_repr(value)} for Tensor "
                    f"'{self.name}' of dtype {self.tensor.dtype.base_dtype.name}: "
                    f"{e}"
                ) from None
        dims = self.dims
        if dims is not None:
            shape = arr.shape
            if len(shape) != len(dims) or any(
                d is not None and d != s for d, s in zip(dims, shape)
            ):
                raise ValueError(
                    f"Cannot feed value of shape {shape} for Tensor "
                    f"'{self.name}', which has shape '{self.tensor.shape}'"
                )
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
    )

    def __init__(self):
        self.steps: list = []
        self.template: list = []
        self.feed_specs: list[_FeedSpec] = []
        self.feed_slots: tuple[int, ...] = ()
        self.fetch_slots: tuple = ()
        self.fetch_copy: tuple[bool, ...] = ()
        # Per fetch: the device its value lives on when that is not the host (else None).
        self.fetch_host: tuple = ()
        self.num_ops = 0
        self.placement: dict | None = None  # op -> Device (None: single-device session)


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
            vals[out : out + nout] = r
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
            if CHECK_KERNELS and op is not None and fn.__class__ is not _Copy:
                _verify_outputs(op, r, out)
            vals[out : out + nout] = r
        if trace is not None:
            trace.append((op, fn, t0, time.perf_counter_ns()))
        for i in free:
            vals[i] = None


def _coerce_output(r, op, i):
    if isinstance(r, np.generic):
        return np.asarray(r)
    if (
        r.__class__ is VariableSlot
        or isinstance(r, _ndarray)
        or hasattr(r, "__cuda_array_interface__")
    ):
        return r
    if op is not None and op._outputs[i]._dtype.base_dtype.name in ("resource", "variant"):
        return r
    raise errors.InternalError(
        None,
        op,
        f"Kernel for {op._type if op else 'step'} op '{op._name if op else ''}' "
        f"returned {type(r).__name__}, expected an array",
    )


def _coerce_outputs(r, op, nout):
    if isinstance(r, list) and len(r) == nout:
        r = tuple(r)
    if r.__class__ is not tuple or len(r) != nout:
        raise errors.InternalError(
            None,
            op,
            f"Kernel for {op._type} op '{op._name}' returned "
            f"{type(r).__name__}, expected a tuple of {nout} arrays",
        )
    return tuple(
        x if x.__class__ is _ndarray else _coerce_output(x, op, i) for i, x in enumerate(r)
    )


def _verify_outputs(op, values, out):
    for t, v in zip(op._outputs, values):
        if t._dtype._is_ref or t._dtype.base_dtype.name in ("resource", "variant"):
            continue
        if not hasattr(v, "dtype"):
            raise errors.InternalError(
                None, op, f"{op._type} kernel returned {type(v).__name__} for {t.name}"
            )
        want = t._dtype.np
        if v.dtype != want:
            raise errors.InternalError(
                None,
                op,
                f"{op._type} kernel returned dtype {v.dtype} for {t.name}, "
                f"expected {t._dtype.name}",
            )
        if not t._shape.is_compatible_with(v.shape):
            raise errors.InternalError(
                None,
                op,
                f"{op._type} kernel returned shape {v.shape} for {t.name}, "
                f"incompatible with its static shape {t._shape}",
            )


_EXC_MAP = (
    (MemoryError, errors.ResourceExhaustedError),
    (NotImplementedError, errors.UnimplementedError),
    (StopIteration, errors.OutOfRangeError),
    (
        (ValueError, TypeError, IndexError, ZeroDivisionError, FloatingPointError, KeyError),
        errors.InvalidArgumentError,
    ),
)


def _error_class(exc: BaseException) -> type:
    name = type(exc).__name__
    if name == "OutOfMemoryError" or (
        name == "CUDARuntimeError" and "MemoryAllocation" in str(exc)
    ):
        return errors.ResourceExhaustedError  # cupy's device out-of-memory errors
    for types, target in _EXC_MAP:
        if isinstance(exc, types):
            return target
    return errors.UnknownError


def _copy_error(exc: BaseException, what: str) -> errors.OpError:
    if isinstance(exc, errors.OpError):
        return exc
    return _error_class(exc)(None, None, f"{what} failed: {type(exc).__name__}: {exc}")


def _op_error(op, exc: BaseException, vals, steps_inputs, fn=None) -> errors.OpError:
    """Re-raises a kernel failure as an OpError naming the op, its type and its inputs."""
    where = ""
    if op is not None:
        where = (
            f"\n\t [[node {op._name} (defined at {op._defined_at})]]"
            if op._defined_at
            else f"\n\t [[node {op._name}]]"
        )
    if isinstance(exc, errors.OpError):
        if exc.op is None and op is not None:
            return type(exc)(op.node_def, op, exc.message + where)
        return exc
    cls = _error_class(exc)
    desc = []
    for i in steps_inputs:
        v = vals[i] if i < len(vals) else None
        if hasattr(v, "shape") and hasattr(v, "dtype"):
            desc.append(f"{v.dtype}{list(v.shape)}")
        else:
            desc.append(type(v).__name__)
    if fn.__class__ is _Copy:
        return cls(
            None,
            None,
            f"Copying {fn.tensor_name} from {fn.src.name} to "
            f"{fn.dst.name} failed: {type(exc).__name__}: {exc}",
        )
    if op is None:
        return cls(None, None, f"{type(exc).__name__}: {exc}")
    msg = (
        f"{op._type} op '{op._name}' failed on inputs ({', '.join(desc)}): "
        f"{type(exc).__name__}: {exc}{where}"
    )
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
            raise TypeError(
                f"Fetch argument {f!r} has invalid type {type(f)}, must be a "
                "string or Tensor. (Can not convert a NoneType into a Tensor or "
                "Operation.)"
            )
        if isinstance(f, (Tensor, Operation, str)) or (
            hasattr(f, "_as_graph_element") and not isinstance(f, (list, tuple, dict))
        ):
            try:
                elem = graph.as_graph_element(f, allow_tensor=True, allow_operation=True)
            except TypeError as e:
                raise TypeError(
                    f"Fetch argument {f!r} has invalid type {type(f)}, must be a "
                    f"string or Tensor. ({e})"
                ) from None
            except ValueError as e:
                raise ValueError(
                    f"Fetch argument {f!r} cannot be interpreted as a Tensor. ({e})"
                ) from None
            except KeyError as e:
                raise ValueError(
                    f"Fetch argument {f!r} cannot be interpreted as a Tensor. ({e.args[0]})"
                ) from None
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
        raise TypeError(
            f"Fetch argument {f!r} has invalid type {type(f)}, must be a string or "
            f"Tensor. (Can not convert a {type(f).__name__} into a Tensor or "
            "Operation.)"
        )


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
            raise ValueError(
                f"Cannot {kind} using `{method}()`: No default session is "
                "registered. Use `with sess.as_default()` or pass an explicit "
                f"session to `{method}(session=sess)`"
            )
    if session.graph is not elem.graph:
        what = "tensor" if isinstance(elem, Tensor) else "operation"
        raise ValueError(
            f"Cannot use the given session to {kind}: the {what}'s graph is "
            "different from the session's graph."
        )
    return session


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
        self._target = target
        self._closed = False
        self._lock = threading.RLock()
        self._plans: dict = {}
        self._slots: dict[str, VariableSlot] = {}
        self._rngs: dict[Operation, object] = {}
        self._devices = local_devices(self._config)
        self._host = self._devices[0]
        # Several devices: plans place ops and copy values between devices. One device
        # (CPU only): plans skip placement entirely, so the CPU path pays nothing for it.
        self._multi = len(self._devices) > 1
        self._default_device = next(
            (d for d in self._devices if d.kernel_type == "GPU"), self._host
        )
        self._spec_cache: dict[str, tuple] = {}
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
        trace = (
            options is not None
            and getattr(options, "trace_level", 0) > 0
            and run_metadata is not None
        )
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
                    self._fill_metadata(run_metadata, events, start, base, plan.placement)
                elif CHECK_KERNELS:
                    _execute_checked(steps, vals)
                else:
                    _execute(steps, vals)
        except Exception as exc:  # noqa: BLE001 - re-raised as a typed OpError
            op, ins, fn = _failing_step(exc, steps)
            raise _op_error(op, exc, vals, ins, fn) from (
                None if isinstance(exc, errors.OpError) else exc
            )

    def _collect(self, plan, vals):
        """The fetched values as the caller gets them: host arrays (numpy scalars for 0-d),
        copied when they could alias state the session keeps."""
        out = []
        for slot, copy, device in zip(plan.fetch_slots, plan.fetch_copy, plan.fetch_host):
            if slot is None:
                out.append(None)
                continue
            v = vals[slot]
            if device is not None:  # on a device: the copy to host memory is private
                try:
                    v = device.to_host(v)
                except Exception as exc:  # noqa: BLE001 - typed for the caller
                    raise _copy_error(exc, f"fetching a value from {device.name}") from exc
                copy = False
            if v.__class__ is _ndarray:
                if v.ndim == 0:
                    v = v[()]
                elif copy:
                    v = v.copy()
            else:
                v = _to_host(v, copy)
            out.append(v)
        return out

    def _fill_metadata(self, md: RunMetadata, events, start_ns, base_ns, placement) -> None:
        by_device: dict[str, list] = {}
        for op, fn, t0, t1 in events:
            if op is None:
                continue
            if fn.__class__ is _Copy:
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

    # -- placement ------------------------------------------------------------------------
    def _supports(self, op: Operation, device: Device) -> bool:
        """Can ``op`` run on ``device``: a kernel for its type, and no string tensors off
        the host?"""
        if device.kernel_type not in op._opdef.flags.device_types:
            return False
        return device.is_host or not _touches_strings(op)

    def _matching_devices(self, requested: str) -> tuple[list[Device], DeviceSpec]:
        cached = self._spec_cache.get(requested)
        if cached is not None:
            return cached
        spec = DeviceSpec.from_string(requested)
        if (
            spec.job not in (None, "localhost")
            or spec.replica not in (None, 0)
            or spec.task not in (None, 0)
        ):
            found = []
        elif spec.device_type is None:
            found = [self._default_device] + [
                d for d in self._devices if d is not self._default_device
            ]
        else:
            found = [
                d
                for d in self._devices
                if d.device_type == spec.device_type
                and (spec.device_index in (None, "*") or d.index == spec.device_index)
            ]
        self._spec_cache[requested] = (found, spec)
        return found, spec

    def _place(self, order, ref_home, default: Device) -> dict:
        """Assigns each op of a plan a device (TF1's placer for one process).

        Ops reading or writing a variable through its reference go where the variable is;
        other ops go to their requested device when it exists and has a kernel for them,
        else -- without a request -- to ``default`` (GPU:0 when there is a GPU) when it can
        run them, else to the CPU. ``allow_soft_placement`` turns an unsatisfiable request
        into a device of the same type, else the op's default device.
        """
        placement: dict[Operation, Device] = {}
        soft = self._config.allow_soft_placement
        host = self._host
        for op in order:
            opdef = op._opdef
            colocate = None
            if op._type == "Identity" and op._inputs and op._inputs[0]._dtype._is_ref:
                colocate = _variable_device(op._inputs[0], ref_home, placement)
            elif opdef.flags.ref_inputs and opdef.flags.ref_inputs != "all":
                for i in opdef.flags.ref_inputs:
                    if i < len(op._inputs) and op._inputs[i]._dtype._is_ref:
                        colocate = _variable_device(op._inputs[i], ref_home, placement)
                        break
            if colocate is not None:
                if self._supports(op, colocate):
                    placement[op] = colocate
                    continue
                if opdef.flags.writes_variables:
                    raise errors.InvalidArgumentError(
                        op.node_def,
                        op,
                        f"Cannot assign a device for operation {op._name}: "
                        f"it writes a variable on {colocate.name}, and "
                        f"{op._type} has no {colocate.kernel_type} kernel",
                    )
            requested = op._device
            if not requested:
                placement[op] = default if self._supports(op, default) else host
                continue
            found, spec = self._matching_devices(requested)
            chosen = next((d for d in found if self._supports(op, d)), None)
            if chosen is None and soft:
                chosen = next(
                    (
                        d
                        for d in self._devices
                        if d.device_type == spec.device_type and self._supports(op, d)
                    ),
                    None,
                )
                if chosen is None:
                    chosen = default if self._supports(op, default) else host
            if chosen is None:
                raise self._placement_error(op, requested, found, spec)
            placement[op] = chosen
        return placement

    def _placement_error(self, op, requested, found, spec) -> errors.InvalidArgumentError:
        hint = (
            " Set allow_soft_placement=True in the session's ConfigProto to fall back to "
            "a device that can run it."
        )
        if not found:
            names = ", ".join(d.name for d in self._devices)
            msg = (
                f"Cannot assign a device for operation {op._name}: {{{{node {op._name}}}}} "
                f"was explicitly assigned to {requested} but available devices are "
                f"[ {names} ]. Make sure the device specification refers to a valid "
                "device."
            )
            if spec.device_type == "GPU" and not any(d.device_type == "GPU" for d in self._devices):
                reason = gpu_unavailable_reason() or "no GPU is configured for this session"
                msg += f" The requested device appears to be a GPU, but {reason}."
        else:
            msg = (
                f"Cannot assign a device for operation {op._name}: Could not satisfy "
                f"explicit device specification '{requested}' because no supported "
                f"kernel for {spec.device_type} devices is available."
            )
            if found[0].kernel_type in op._opdef.flags.device_types:
                msg += " String tensors live in host memory only."
        return errors.InvalidArgumentError(op.node_def, op, msg + hint)

    # -- compilation ----------------------------------------------------------------------
    def _compile(
        self,
        feeds: tuple,
        fetches: tuple,
        function: bool = False,
        owned_feeds: bool = False,
        default_device: Device | None = None,
        input_devices: tuple | None = None,
    ) -> _Plan:
        """Prunes, orders, places and binds the computation of ``fetches`` given ``feeds``.

        ``function`` compiles the body of a control-flow op placed on ``default_device``:
        fed tensors then may carry variable references (a captured variable) as well as
        values, inputs arrive and outputs leave on ``default_device``, and ops without a
        device request run there. ``input_devices`` gives, per fed tensor, the device of the
        variable it carries (when known), so that ops writing it are placed with it.
        """
        if default_device is None:
            default_device = self._host
        fed: dict[Tensor, int] = {}
        for t in feeds:
            if t in fed:
                continue
            fed[t] = len(fed)
        order = _topological_order(fetches, fed)
        for op in order:
            if op._type == "Placeholder":
                shape = op._attrs.get("shape")
                shape_s = (
                    shape._short() if shape is not None and shape.rank is not None else "<unknown>"
                )
                raise errors.InvalidArgumentError(
                    op.node_def,
                    op,
                    f"You must feed a value for placeholder tensor '{op._name}' with dtype "
                    f"{op._attrs['dtype'].name} and shape {shape_s}"
                    + (
                        f"\n\t [[node {op._name} (defined at {op._defined_at})]]"
                        if op._defined_at
                        else ""
                    ),
                )
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
        host = self._host
        multi = self._multi
        # Where values live: feeds arrive on the host (inside a function body, on the
        # function's device); every other value on the device of the op producing it.
        home = default_device if function else host
        ref_home = {
            t: (input_devices[k] if input_devices is not None and t._dtype._is_ref else None)
            for k, t in enumerate(fed)
        }
        placement = (
            self._place(order, ref_home, home if function else self._default_device)
            if multi
            else None
        )
        on_device: dict[tuple, int] = {}  # (tensor, device) -> slot holding its value there

        def device_of_slot_tensor(t: Tensor) -> Device:
            return home if (t in fed or placement is None) else placement[t._op]

        def add_step(fn, ins, consumer, is_persistent=False) -> int:
            new = len(template)
            template.append(None)
            steps.append((fn, ins, new, 1, (), consumer))
            if is_persistent:
                persistent.add(new)
            return new

        def value_on(t: Tensor, dev: Device | None, consumer) -> int:
            """The slot holding the value of ``t`` on ``dev`` (None: where it lives).

            A variable is read right before each consumer runs (each consumer gets its own
            read step), so a consumer ordered after an assignment sees the new value.
            """
            src = read_slot[t]
            if t._dtype._is_ref:
                if not multi:
                    return add_step(_deref, (src,), consumer, True)
                var_dev = _variable_device(t, ref_home, placement)
                if var_dev is None:  # a variable captured by a function: unknown device
                    return add_step(partial(_deref_to, dev or home), (src,), consumer, True)
                s = add_step(_deref, (src,), consumer, True)
                if dev is None or dev is var_dev:
                    return s
                return add_step(_Copy(var_dev, dev, t.name), (s,), t._op)
            if not multi:
                return src
            src_dev = device_of_slot_tensor(t)
            if dev is None or dev is src_dev:
                return src
            key = (t, dev)
            c = on_device.get(key)
            if c is None:
                c = on_device[key] = add_step(_Copy(src_dev, dev, t.name), (src,), t._op)
            return c

        for op in order:
            opdef = op._opdef
            base = out_base[op]
            device = placement[op] if multi else host
            if op._type == "Identity" and op._inputs[0]._dtype._is_ref:
                # A variable's snapshot (``w/read``): the read itself is the whole step.
                # Placement puts it on its variable's device; inside a function body the
                # variable's device is unknown and the read moves the value if needed.
                ref = op._inputs[0]
                read = (
                    _deref
                    if not multi or _variable_device(ref, ref_home, placement) is not None
                    else partial(_deref_to, device)
                )
                steps.append((read, (read_slot[ref],), base, 1, (), op))
                persistent.add(base)
                continue
            ins = []
            ref_in = opdef.flags.ref_inputs
            guard = []
            for i, t in enumerate(op._inputs):
                takes_ref = ref_in == "all" or i in ref_in
                if t._dtype._is_ref and takes_ref:
                    if t in fed and not function:
                        raise errors.InvalidArgumentError(
                            op.node_def,
                            op,
                            f"Input {i} of {op._type} op '{op._name}' needs "
                            f"the variable {t.name} itself, which cannot be fed",
                        )
                    s = read_slot[t]
                    if (
                        multi
                        and opdef.flags.writes_variables
                        and _variable_device(t, ref_home, placement) is None
                    ):
                        guard.append(len(ins))
                else:
                    s = value_on(t, device, op)
                ins.append(s)
            ctx = BindContext(
                self,
                op,
                device,
                tuple(s in persistent for s in ins),
                tuple(t in used for t in op._outputs),
                tuple(
                    _variable_device(t, ref_home, placement) if t._dtype._is_ref else device
                    for t in op._inputs
                )
                if multi
                else None,
            )
            try:
                kernel = _bind_kernel(op, ctx)
                if guard:
                    kernel = partial(_guard_variable_device, kernel, device, tuple(guard))
                if CHECK_KERNELS and multi:
                    kernel = _DeviceChecked(kernel, device, op, ins, ref_in)
                if device.context is not None:
                    kernel = device.wrap(kernel)
                # Hoisted ops run once per plan: constants and session resources (slots).
                value = kernel() if opdef.flags.hoist else None
            except errors.OpError:
                raise
            except Exception as exc:  # noqa: BLE001 - a bad attr or binding, typed here
                raise _op_error(op, exc, [], ()) from exc
            if opdef.flags.hoist:
                if len(op._outputs) == 1:
                    template[base] = (
                        value
                        if value.__class__ is _ndarray or value.__class__ is VariableSlot
                        else _coerce_output(value, op, 0)
                    )
                    persistent.add(base)
                continue
            steps.append((kernel, tuple(ins), base, len(op._outputs), (), op))
            if opdef.flags.aliases and any(s in persistent for s in ins):
                persistent.update(range(base, base + len(op._outputs)))

        fetch_slots = []
        fetch_copy = []
        fetch_host = []
        for f in fetches:
            if isinstance(f, Operation):
                fetch_slots.append(None)
                fetch_copy.append(False)
                fetch_host.append(None)
                continue
            if f not in read_slot:
                raise errors.InternalError(None, None, f"No value for fetch {f.name}")
            if function:
                # Function outputs stay on the function's device; variables stay references.
                s = read_slot[f] if f._dtype._is_ref else value_on(f, home, f._op)
                where = None
            elif f._dtype._is_ref:
                s = value_on(f, None, f._op)
                where = _variable_device(f, ref_home, placement) if multi else host
            else:
                s = read_slot[f]
                where = device_of_slot_tensor(f)
            fetch_slots.append(s)
            fetch_copy.append(s in persistent)
            fetch_host.append(where if where is not None and not where.is_host else None)
        plan.fetch_slots = tuple(fetch_slots)
        plan.fetch_copy = tuple(fetch_copy)
        plan.fetch_host = tuple(fetch_host)

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
        plan.steps = [
            (fn, ins, out, nout, tuple(frees[k]), op)
            for k, (fn, ins, out, nout, _, op) in enumerate(steps)
        ]
        plan.template = template
        plan.placement = placement
        if self._config.log_device_placement:
            lines = [
                f"{op._name}: ({op._type}): {(placement[op] if multi else host).name}"
                for op in order
            ]
            print("\n".join(lines), file=sys.stderr)
        return plan

    # -- functions (control-flow bodies) --------------------------------------------------
    def _compile_function(self, fg, device=None, input_devices=None):
        """A callable running function graph ``fg``: ``f(*inputs) -> list of outputs``.

        Inputs and outputs are raw runtime values (arrays, variable references, handles)
        on ``device``; ``input_devices`` (per input, optional) tells where the variables
        passed by reference live.
        """
        fetches = tuple(fg.outputs) + tuple(fg.control_outputs)
        n_out = len(fg.outputs)
        with self._lock:
            plan = self._compile(
                tuple(fg.inputs),
                fetches,
                function=True,
                default_device=device,
                input_devices=input_devices,
            )
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
                    op, ins, fn = _failing_step(exc, steps)
                    raise _op_error(op, exc, vals, ins, fn) from None
                raise
            except Exception as exc:  # noqa: BLE001 - re-raised as a typed OpError
                op, ins, fn = _failing_step(exc, steps)
                raise _op_error(op, exc, vals, ins, fn) from exc
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
                raise TypeError(
                    f"This callable takes {n_feeds} feed value(s) "
                    f"({', '.join(t.name for t in feeds)}), got {len(feed_values)}"
                )
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
            loc = frame.f_locals
            return loc.get("op"), loc.get("ins", ()), loc.get("fn")
        tb = tb.tb_next
    return None, (), None


def _touches_strings(op: Operation) -> bool:
    for t in op._inputs:
        if t._dtype.base_dtype.name == "string":
            return True
    for t in op._outputs:
        if t._dtype.base_dtype.name == "string":
            return True
    return False


def _variable_device(t: Tensor, ref_home: dict, placement) -> Device | None:
    """The device of the variable a reference tensor points to. ``ref_home`` maps the
    plan's fed tensors to the device of the variable they carry into a function body (None:
    not a variable, or known only at run time)."""
    while True:
        if t in ref_home:
            return ref_home[t]
        op = t._op
        nxt = None
        for x in op._inputs:
            if x._dtype._is_ref:
                nxt = x
                break
        if nxt is None:
            return placement.get(op)
        t = nxt


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
                        None, dep, f"Graph is invalid, contains a cycle through op '{dep._name}'"
                    )
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
