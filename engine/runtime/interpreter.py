"""The interpreter: runs a plan's steps over a list of value slots.

A step is ``(fn, ins, out, nout, free, op)``: call ``fn`` on the values in slots ``ins``,
write its ``nout`` outputs from slot ``out`` on, then clear the slots in ``free`` (values
whose last reader this was). ``op`` is the graph op the step runs (for copies and variable
reads, the op they serve). A failure is re-raised, by the loop that knows the step, as a
typed ``OpError`` naming the op, its type and its inputs' dtypes and shapes.

Cancellation: a run may carry a ``Cancellation`` token (``RunOptions(timeout_in_ms=...)``, or
one the caller cancels from another thread). Its loop checks the token before every step, and
function bodies (each ``while_loop`` iteration's condition and body) check it too, through
the token the running thread has active; a cancelled run raises ``CancelledError``, one past
its deadline ``DeadlineExceededError``. A run without a token takes the loop without checks,
so the check costs nothing there. A single long kernel still runs to its end.

Memory limit: a run given a ``MemoryBudget`` (``max_intermediate_bytes``) takes a third loop,
``execute_bounded``, which counts the bytes of the live intermediates (each distinct buffer
once: a view or an Identity of a value adds nothing; feeds, constants and variable values, and
their copies onto another device, are not intermediates) as steps write and free them, and
fails the run with ``ResourceExhaustedError`` naming the op whose outputs take the total
above the limit. The check follows the kernel: that op's outputs are allocated once before the
run fails. Function bodies (while_loop iterations) count against the same budget while they
run.
"""

from __future__ import annotations

import os
import time

import numpy as np

from engine import errors
from engine.runtime.values import Copy, VariableSlot, deref, deref_to
from engine.util.run_state import ACTIVE, active_budget, active_cancellation

__all__ = [
    "CHECK_KERNELS",
    "Cancellation",
    "MemoryBudget",
    "active_cancellation",
    "active_budget",
    "execute",
    "execute_checked",
    "execute_bounded",
    "coerce_output",
    "copy_error",
]

_ndarray = np.ndarray
# FLOWSERVE_CHECK_KERNELS=1 verifies every kernel output against the op's static dtype and
# shape (the test suite turns it on); off, the interpreter only checks the container type.
CHECK_KERNELS = os.environ.get("FLOWSERVE_CHECK_KERNELS", "") not in ("", "0")


class Cancellation:
    """A run's cancellation token: ``cancel()`` (from any thread) stops the run at its next
    step or loop iteration with ``CancelledError``; past ``deadline`` (``time.monotonic()``
    seconds) it stops with ``DeadlineExceededError``."""

    __slots__ = ("cancelled", "deadline", "reason")

    def __init__(self, deadline: float | None = None):
        self.cancelled = False
        self.deadline = deadline
        self.reason = "Run cancelled"

    @classmethod
    def after(cls, seconds: float) -> Cancellation:
        return cls(time.monotonic() + seconds)

    def cancel(self, reason: str = "Run cancelled") -> None:
        self.reason = reason
        self.cancelled = True

    def check(self) -> None:
        if self.cancelled:
            raise errors.CancelledError(None, None, self.reason)
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise errors.DeadlineExceededError(None, None, "Timed out waiting for the run")


_active = ACTIVE


class activated:  # noqa: N801 - used as a context manager, like a function
    """Makes ``token`` (and ``budget``) the active cancellation (and memory budget) of this
    thread for the ``with`` block."""

    __slots__ = ("token", "budget", "previous")

    def __init__(self, token: Cancellation | None, budget: MemoryBudget | None = None):
        self.token = token
        self.budget = budget

    def __enter__(self) -> None:
        self.previous = (getattr(_active, "token", None), getattr(_active, "budget", None))
        _active.token = self.token
        _active.budget = self.budget

    def __exit__(self, *exc) -> None:
        _active.token, _active.budget = self.previous


def _root(v):
    """The array owning ``v``'s memory (``v`` itself unless it is a view)."""
    base = getattr(v, "base", None)
    while base is not None and hasattr(base, "nbytes"):
        v = base
        base = getattr(v, "base", None)
    return v


class MemoryBudget:
    """The live bytes of one run's intermediates against ``limit`` bytes.

    Each buffer is counted once, however many slots hold it or views of it, and uncounted
    when the last of them is freed. ``peak`` is the most the run held at once."""

    __slots__ = ("limit", "live", "peak", "_buffers", "_given")

    def __init__(self, limit: int):
        if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
            raise ValueError(f"max_intermediate_bytes must be a positive integer, got {limit!r}")
        self.limit = limit
        self.live = 0
        self.peak = 0
        self._buffers: dict[int, list] = {}  # id(buffer) -> [buffer, holders, nbytes]
        self._given: dict[int, object] = {}  # buffers not made by the run (feeds, constants)

    def give(self, value) -> None:
        """``value`` exists outside the run's steps (a feed, a constant, a variable's value,
        a function body's argument): neither it nor its views are intermediates."""
        if hasattr(value, "nbytes"):
            root = _root(value)
            if id(root) not in self._buffers:
                self._given[id(root)] = root

    def was_given(self, value) -> bool:
        """Is ``value`` (or the buffer it views) one of the given values?"""
        return hasattr(value, "nbytes") and id(_root(value)) in self._given

    def charge(self, value, op) -> int | None:
        """Counts ``value`` (an output ``op`` just wrote) as live; the key to ``release`` it
        with, or None when it adds nothing. ResourceExhaustedError when over the limit."""
        if not hasattr(value, "nbytes"):
            return None  # variable references, handles, Python objects
        root = _root(value)
        key = id(root)
        if key in self._given:
            return None
        entry = self._buffers.get(key)
        if entry is not None:
            entry[1] += 1
            return key
        nbytes = root.nbytes if hasattr(root, "nbytes") else value.nbytes
        live = self.live + nbytes
        if live > self.limit:
            raise errors.ResourceExhaustedError(
                None,
                op,
                f"OOM: {op._type if op else 'step'} op '{op._name if op else ''}' output "
                f"{value.dtype}{list(value.shape)} ({nbytes} bytes) would bring the run's "
                f"live intermediates to {live} bytes, above its limit of {self.limit} "
                "bytes (max_intermediate_bytes)",
            )
        self._buffers[key] = [root, 1, nbytes]
        self.live = live
        if live > self.peak:
            self.peak = live
        return key

    def release(self, key: int) -> None:
        entry = self._buffers[key]
        entry[1] -= 1
        if entry[1] == 0:
            del self._buffers[key]
            self.live -= entry[2]


def execute(steps, vals, token: Cancellation | None = None) -> None:
    """Read inputs, call the kernel, write outputs, free dead values."""
    if token is not None:
        return execute_checked(steps, vals, None, token, verify=CHECK_KERNELS)
    fn = op = None
    ins = ()
    try:
        for fn, ins, out, nout, free, op in steps:
            if nout == 1:
                r = fn(*[vals[i] for i in ins])
                if r.__class__ is not _ndarray:
                    r = coerce_output(r, op, 0)
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
    except Exception as exc:  # noqa: BLE001 - re-raised as a typed OpError
        raise _step_error(op, exc, vals, ins, fn) from _cause(exc)


def execute_checked(
    steps, vals, trace=None, token: Cancellation | None = None, verify: bool = True
) -> None:
    """The interpreter with output verification (``CHECK_KERNELS`` and ``verify``), given a
    ``trace`` list, per-step timing: ``(op, fn, start_ns, end_ns)`` appended for each step,
    and given a ``token``, a cancellation check before each step."""
    fn = op = None
    ins = ()
    verify = verify and CHECK_KERNELS
    try:
        for fn, ins, out, nout, free, op in steps:
            if token is not None:
                token.check()
            t0 = time.perf_counter_ns() if trace is not None else 0
            r = fn(*[vals[i] for i in ins])
            if nout == 1:
                r = (r if r.__class__ is _ndarray else coerce_output(r, op, 0),)
            elif nout and (r.__class__ is not tuple or len(r) != nout):
                r = _coerce_outputs(r, op, nout)
            if nout:
                if verify and op is not None and fn.__class__ is not Copy and not _is_read(fn, op):
                    _verify_outputs(op, r)
                vals[out : out + nout] = r
            if trace is not None:
                trace.append((op, fn, t0, time.perf_counter_ns()))
            for i in free:
                vals[i] = None
    except Exception as exc:  # noqa: BLE001 - re-raised as a typed OpError
        raise _step_error(op, exc, vals, ins, fn) from _cause(exc)


def execute_bounded(
    steps, vals, token: Cancellation, budget: MemoryBudget, trace=None, verify: bool = True
) -> None:
    """The checked interpreter counting live intermediates against ``budget`` (see the
    module docstring): a loop of its own, so runs without a memory limit pay nothing."""
    fn = op = None
    ins = ()
    verify = verify and CHECK_KERNELS
    give, charge, release = budget.give, budget.charge, budget.release
    for v in vals:
        if v is not None:
            give(v)
    held: dict[int, int] = {}  # slot -> its buffer's key in the budget
    try:
        for fn, ins, out, nout, free, op in steps:
            token.check()
            t0 = time.perf_counter_ns() if trace is not None else 0
            r = fn(*[vals[i] for i in ins])
            if nout == 1:
                r = (r if r.__class__ is _ndarray else coerce_output(r, op, 0),)
            elif nout and (r.__class__ is not tuple or len(r) != nout):
                r = _coerce_outputs(r, op, nout)
            if nout:
                if verify and op is not None and fn.__class__ is not Copy and not _is_read(fn, op):
                    _verify_outputs(op, r)
                if (
                    fn is deref
                    or getattr(fn, "func", None) is deref_to
                    or (fn.__class__ is Copy and budget.was_given(vals[ins[0]]))
                ):
                    for v in r:
                        give(v)  # a variable's value or a given value's copy: not an intermediate
                else:
                    for k, v in enumerate(r):
                        key = charge(v, op)
                        if key is not None:
                            held[out + k] = key
                vals[out : out + nout] = r
            if trace is not None:
                trace.append((op, fn, t0, time.perf_counter_ns()))
            for i in free:
                key = held.pop(i, None)
                if key is not None:
                    release(key)
                vals[i] = None
    except Exception as exc:  # noqa: BLE001 - re-raised as a typed OpError
        raise _step_error(op, exc, vals, ins, fn) from _cause(exc)
    finally:
        for key in held.values():  # what this frame still holds leaves its count with it
            release(key)


_DEVICE_ARRAYS: set = set()  # array types seen with __cuda_array_interface__ (cupy's)


def coerce_output(r, op, i):
    """Output ``i`` of ``op``'s kernel as a runtime value, or InternalError for a kernel that
    returned something else than an array (numpy scalars become 0-d arrays)."""
    if r.__class__ in _DEVICE_ARRAYS:
        return r
    if isinstance(r, np.generic):
        return np.asarray(r)
    if r.__class__ is VariableSlot or isinstance(r, _ndarray):
        return r
    if hasattr(r, "__cuda_array_interface__"):  # builds a dict: checked once per type
        _DEVICE_ARRAYS.add(r.__class__)
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
    return tuple(x if x.__class__ is _ndarray else coerce_output(x, op, i) for i, x in enumerate(r))


def _is_read(fn, op) -> bool:
    """A variable read made for a consumer op (attributed to it for error messages): its
    value is the variable's, not one of the consumer's outputs."""
    read = fn is deref or getattr(fn, "func", None) is deref_to
    return read and op._type != "Identity"


def _verify_outputs(op, values):
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


# -----------------------------------------------------------------------------------------
# Errors
# -----------------------------------------------------------------------------------------

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


def _cause(exc: BaseException):
    # An OpError is already typed and named (e.g. raised inside a control-flow body).
    return None if isinstance(exc, errors.OpError) else exc


def copy_error(exc: BaseException, what: str) -> errors.OpError:
    """A failure moving a value between devices, typed."""
    if isinstance(exc, errors.OpError):
        return exc
    return _error_class(exc)(None, None, f"{what} failed: {type(exc).__name__}: {exc}")


def op_error(op, exc: BaseException) -> errors.OpError:
    """A failure while compiling ``op`` (a bad attr or binding), typed and naming the op."""
    return _step_error(op, exc, [], ())


def _step_error(op, exc: BaseException, vals, ins, fn=None) -> errors.OpError:
    """``exc`` raised by the step running ``op`` on the values in slots ``ins``, as an
    OpError naming the op, its type and its inputs."""
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
    if fn.__class__ is Copy:
        return cls(
            None,
            None,
            f"Copying {fn.tensor_name} from {fn.src.name} to "
            f"{fn.dst.name} failed: {type(exc).__name__}: {exc}",
        )
    if op is None:
        return cls(None, None, f"{type(exc).__name__}: {exc}")
    desc = []
    for i in ins:
        v = vals[i] if i < len(vals) else None
        if hasattr(v, "shape") and hasattr(v, "dtype"):
            desc.append(f"{v.dtype}{list(v.shape)}")
        else:
            desc.append(type(v).__name__)
    msg = (
        f"{op._type} op '{op._name}' failed on inputs ({', '.join(desc)}): "
        f"{type(exc).__name__}: {exc}{where}"
    )
    return cls(op.node_def, op, msg)
