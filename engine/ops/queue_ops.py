"""Queue ops: TF1's ``FIFOQueueV2``, ``RandomShuffleQueueV2``, ``PaddingFIFOQueueV2`` and
``PriorityQueueV2`` with their enqueue, dequeue, close and size ops.

A queue lives in each ``Session`` (like a variable's value): the queue op yields a handle to
the session's queue, and the other ops take that handle. Enqueues block while the queue is
full and dequeues while it holds too few elements, so producer threads (``QueueRunner``)
and the training loop meet through it. Waiters are served in arrival order, as TF's are. A
blocked op wakes with ``CancelledError`` when the queue is closed with
``cancel_pending_enqueues`` (enqueues), when the session closes, or when the run's
``RunOptions.timeout_in_ms`` passes (``DeadlineExceededError``); a dequeue that can never be
satisfied after ``close`` raises ``OutOfRangeError``, the end of input for a training loop.
Host (CPU) kernels only.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import weakref
from collections import deque

import numpy as np

from engine import dtypes, errors
from engine.framework.registry import Attr, OpFlags, op
from engine.tensor_shape import TensorShape, unknown_shape
from engine.util.run_state import active_cancellation

__all__ = ["QueueState"]

_HOST = OpFlags(stateful=True, device_types=("CPU",))
_RESOURCE = [(dtypes.resource, TensorShape([]))]
_KINDS = {
    "FIFOQueueV2": "FIFOQueue",
    "RandomShuffleQueueV2": "RandomShuffleQueue",
    "PaddingFIFOQueueV2": "PaddingFIFOQueue",
    "PriorityQueueV2": "PriorityQueue",
}
# How often a waiter with a deadline or a cancellable run looks at its token.
_POLL_SECONDS = 0.05


def _host(a) -> np.ndarray:
    return np.asarray(a.get() if hasattr(a, "get") else a)


def _dims(shape: TensorShape) -> str:
    """A shape as TF's messages write it: ``[?,2]``."""
    return "[" + ",".join("?" if d is None else str(d) for d in shape.as_list()) + "]"


_C_NAMES = {"float32": "float", "float64": "double", "float16": "half"}


def _c_name(dtype) -> str:
    """A dtype as TF's kernel messages name it (``float``, ``double``, ``int32``)."""
    name = dtypes.as_dtype(dtype).name
    return _C_NAMES.get(name, name)


class QueueState:
    """One queue in one session. ``enqueue``/``dequeue`` are also what readers use: a
    reader takes its next work item (a file name) with ``dequeue()``."""

    def __init__(self, kind, name, component_types, shapes, capacity, min_after_dequeue, seeds):
        self.kind, self.name = kind, name
        self.component_types = list(component_types)
        self.shapes = [TensorShape(s) for s in shapes] if shapes else None
        self.capacity = int(capacity)
        self.min_after_dequeue = int(min_after_dequeue)
        self._cond = threading.Condition()
        self._items: deque | list = (
            [] if kind in ("RandomShuffleQueue", "PriorityQueue") else deque()
        )
        self._order = itertools.count()  # ties in a priority queue dequeue in arrival order
        self._closed = False
        self._cancelled = False  # close(cancel_pending_enqueues=True) or the session closed
        self._session_closed = False
        # Waiters are served in arrival order: each takes a ticket, and only the one whose
        # ticket is being served may act.
        self._enqueue_tickets, self._enqueue_serving = itertools.count(), 0
        self._dequeue_tickets, self._dequeue_serving = itertools.count(), 0
        self._abandoned: dict[str, set] = {"enqueue": set(), "dequeue": set()}
        seed, seed2 = seeds
        self._rng = (
            np.random.default_rng()
            if (seed, seed2) == (0, 0)
            else np.random.default_rng([seed, seed2])
        )

    # -- helpers -------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._items)

    @property
    def closed(self) -> bool:
        return self._closed

    def _full(self) -> bool:
        return 0 <= self.capacity <= len(self._items)

    def _wait(self, done) -> None:
        """Waits on the condition (held) until ``done()``; honours the run's token."""
        token = active_cancellation()
        while True:
            if self._session_closed:
                raise errors.CancelledError(None, None, "Session has been closed.")
            if done():
                return
            if token is not None:
                token.check()
                self._cond.wait(_POLL_SECONDS)
            else:
                self._cond.wait()

    def _closed_error(self) -> errors.CancelledError:
        return errors.CancelledError(None, None, f"{self.kind} '{self.name}' is closed.")

    def _check_component(self, i, value: np.ndarray, expected) -> np.ndarray:
        """``value`` as component ``i`` (``expected``: the shape it must have, or None)."""
        dtype = self.component_types[i]
        if dtype is dtypes.string:
            value = value.astype(object) if value.dtype.kind in "SU" else value
        elif value.dtype != dtype.np:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"Type mismatch in tuple component {i}. Expected {dtype.name}, got "
                f"{dtypes.as_dtype(value.dtype).name}",
            )
        if expected is not None and not expected.is_compatible_with(value.shape):
            raise errors.InvalidArgumentError(
                None,
                None,
                f"Shape mismatch in tuple component {i}. Expected {_dims(expected)}, got "
                f"{_dims(TensorShape(value.shape))}",
            )
        return value

    # -- enqueue -------------------------------------------------------------------------
    def _elements(self, components, many: bool) -> list[tuple]:
        if len(components) != len(self.component_types):
            have = ", ".join(["resource", *(_c_name(_host(c).dtype) for c in components)])
            want = ", ".join(["resource", *(_c_name(t) for t in self.component_types)])
            raise errors.InvalidArgumentError(
                None, None, f"Signature mismatch, have: {have}-> expected: {want}->"
            )
        values = [_host(c) for c in components]
        shapes = self.shapes or [None] * len(values)
        if not many:
            return [tuple(self._check_component(i, v, shapes[i]) for i, v in enumerate(values))]
        for i, v in enumerate(values):
            if v.ndim == 0:
                raise errors.InvalidArgumentError(
                    None,
                    None,
                    f"Shape mismatch in tuple component {i}. Expected a batch of at least rank "
                    "1, got []",
                )
        n = values[0].shape[0]
        if self.shapes is None:
            for i, v in enumerate(values[1:], 1):
                if v.shape[0] != n:
                    raise errors.InvalidArgumentError(
                        None,
                        None,
                        "All input tensors must have the same size in the 0th dimension. "
                        f"Component {i} has {v.shape[0]}, and should have {n}",
                    )
        values = [
            self._check_component(i, v, None if s is None else TensorShape([n]).concatenate(s))
            for i, (v, s) in enumerate(zip(values, shapes))
        ]
        return [tuple(np.array(v[j], dtype=v.dtype) for v in values) for j in range(n)]

    def _put(self, element: tuple) -> None:
        if self.kind == "PriorityQueue":
            priority = int(np.asarray(element[0]).reshape(-1)[0]) if element[0].size else 0
            heapq.heappush(self._items, (priority, next(self._order), element))
        else:
            self._items.append(element)

    def enqueue(self, components, many: bool = False) -> None:
        elements = self._elements(components, many)
        if self.kind == "PriorityQueue":
            for e in elements:
                if e[0].shape != ():
                    raise errors.InvalidArgumentError(
                        None,
                        None,
                        "Expected the priority element to be a scalar, got shape "
                        f"{list(e[0].shape)}",
                    )
        with self._cond:
            if self._closed:
                raise self._closed_error()
            ticket = next(self._enqueue_tickets)
            try:
                for element in elements:
                    self._wait(
                        lambda: (
                            self._cancelled
                            or (self._enqueue_serving == ticket and not self._full())
                        )
                    )
                    if self._cancelled:
                        raise self._closed_error()
                    self._put(element)
                    self._cond.notify_all()
                if not elements:  # still take the turn, so a later close waits for it
                    self._wait(lambda: self._cancelled or self._enqueue_serving == ticket)
            finally:
                self._finish_turn("enqueue", ticket)

    def _finish_turn(self, side: str, ticket: int) -> None:
        """Passes the turn on once ``ticket`` is served (or skips it if it gave up early)."""
        served = f"_{side}_serving"
        if getattr(self, served) == ticket:
            setattr(self, served, ticket + 1)
            # Tickets of waiters that gave up before their turn are skipped as they come.
            while getattr(self, served) in self._abandoned[side]:
                self._abandoned[side].discard(getattr(self, served))
                setattr(self, served, getattr(self, served) + 1)
        else:
            self._abandoned[side].add(ticket)
        self._cond.notify_all()

    # -- dequeue -------------------------------------------------------------------------
    def _available(self) -> int:
        """Elements a dequeue may take now (a shuffle queue keeps ``min_after_dequeue``
        until it is closed)."""
        n = len(self._items)
        if self.kind == "RandomShuffleQueue" and not self._closed:
            n -= self.min_after_dequeue
        return max(n, 0)

    def _restore(self, taken: list) -> None:
        """Puts elements a failed dequeue took back where they were (the front)."""
        if self.kind == "FIFOQueue" or self.kind == "PaddingFIFOQueue":
            self._items.extendleft(reversed(taken))
        else:
            for element in taken:
                self._put(element)
        self._cond.notify_all()

    def _take(self) -> tuple:
        if self.kind == "RandomShuffleQueue":
            i = int(self._rng.integers(len(self._items)))
            self._items[i], self._items[-1] = self._items[-1], self._items[i]
            return self._items.pop()
        if self.kind == "PriorityQueue":
            return heapq.heappop(self._items)[2]
        return self._items.popleft()

    def dequeue(self, n: int | None = None, up_to: bool = False) -> list:
        """One element (``n`` None: its components) or ``n`` elements stacked; ``up_to``
        returns fewer once the queue is closed."""
        if n is not None:
            if n < 0:
                raise errors.InvalidArgumentError(
                    None, None, f"Requested {n} elements; the count must be >= 0"
                )
            self._check_batchable()
        want = 1 if n is None else n
        taken: list[tuple] = []
        with self._cond:
            ticket = next(self._dequeue_tickets)
            try:
                # As TF's: take elements as they arrive (a batch may exceed the capacity);
                # once closed with too few, put them back and fail, or (up_to) take the rest.
                while len(taken) < want:
                    self._wait(
                        lambda: (
                            self._dequeue_serving == ticket
                            and (self._available() > 0 or self._closed)
                        )
                    )
                    if self._closed and len(self._items) + len(taken) < want:
                        self._restore(taken)
                        taken = []
                        if not (up_to and n and self._items):
                            raise errors.OutOfRangeError(
                                None,
                                None,
                                f"{self.kind} '{self.name}' is closed and has insufficient "
                                f"elements (requested {want}, current size {len(self._items)})",
                            )
                        want = len(self._items)
                    for _ in range(min(self._available(), want - len(taken))):
                        taken.append(self._take())
                    self._cond.notify_all()  # room for waiting enqueues
            except BaseException:
                self._restore(taken)
                raise
            finally:
                self._finish_turn("dequeue", ticket)
        if n is None:
            return list(taken[0])
        return [self._stack(i, [t[i] for t in taken]) for i in range(len(self.component_types))]

    def _check_batchable(self) -> None:
        if self.kind == "PaddingFIFOQueue":
            return
        if self.shapes is None or not all(s.is_fully_defined() for s in self.shapes):
            raise errors.InvalidArgumentError(
                None,
                None,
                f"{self.kind}'s DequeueMany and DequeueUpTo require the components to have "
                "specified shapes.",
            )

    def _stack(self, i: int, values: list) -> np.ndarray:
        dtype = self.component_types[i]
        np_dtype = object if dtype is dtypes.string else dtype.np
        if self.kind == "PaddingFIFOQueue":
            shape = self.shapes[i].as_list()
            rank = len(shape)
            size = [
                max([v.shape[d] for v in values], default=0) if shape[d] is None else shape[d]
                for d in range(rank)
            ]
            fill = b"" if dtype is dtypes.string else 0
            out = np.full([len(values), *size], fill, dtype=np_dtype)
            for j, v in enumerate(values):
                out[(j, *(slice(0, k) for k in v.shape))] = v
            return out
        if not values:
            return np.zeros([0, *self.shapes[i].as_list()], dtype=np_dtype)
        return np.stack(values).astype(np_dtype, copy=False)

    # -- close ---------------------------------------------------------------------------
    def close(self, cancel_pending_enqueues: bool) -> None:
        with self._cond:
            if cancel_pending_enqueues:
                self._closed = self._cancelled = True
                self._cond.notify_all()
                return
            if self._closed:
                raise errors.CancelledError(None, None, f"Queue '{self.name}' is already closed.")
            # TF queues a plain close behind the enqueues already waiting.
            ticket = next(self._enqueue_tickets)
            try:
                self._wait(lambda: self._cancelled or self._enqueue_serving == ticket)
                self._closed = True
            finally:
                self._finish_turn("enqueue", ticket)

    def session_closed(self) -> None:
        with self._cond:
            self._session_closed = self._closed = self._cancelled = True
            self._cond.notify_all()


_SESSION_QUEUES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_QUEUES_LOCK = threading.Lock()


def _queue_bind(o, ctx):
    key = o._attrs.get("shared_name") or o._name
    with _QUEUES_LOCK:
        queues = _SESSION_QUEUES.get(ctx.session)
        if queues is None:
            queues = _SESSION_QUEUES[ctx.session] = {}
            ctx.session._add_close_hook(lambda qs=queues: [q.session_closed() for q in qs.values()])
        state = queues.get(key)
        if state is None:
            a = o._attrs
            types, shapes = list(a["component_types"]), list(a.get("shapes") or [])
            if o._type == "PriorityQueueV2":  # the priority is an implicit first component
                types, shapes = [dtypes.int64, *types], ([[], *shapes] if shapes else [])
            state = QueueState(
                _KINDS[o._type],
                key,
                types,
                shapes,
                a.get("capacity", -1),
                a.get("min_after_dequeue", 0),
                (a.get("seed", 0), a.get("seed2", 0)),
            )
            queues[key] = state
    return {"queue": state}


def _queue_infer(o):
    types, shapes = o._attrs["component_types"], o._attrs.get("shapes") or []
    if not types:
        raise ValueError(f"{o._type} needs at least one component type")
    if shapes and len(shapes) != len(types):
        raise ValueError(
            f"{o._type}: shapes must have the same length as dtypes ({len(shapes)} vs {len(types)})"
        )
    if o._type == "PriorityQueueV2":
        if o._attrs.get("shapes") is None:
            raise ValueError("PriorityQueue needs shapes")
    if o._type == "PaddingFIFOQueueV2" and not shapes:
        raise ValueError("PaddingFIFOQueue needs the shapes of its components")
    return _RESOURCE


_COMMON = (
    Attr("component_types", "list(type)", default=()),
    Attr("shapes", "list(shape)", default=()),
    Attr("capacity", "int", default=-1),
    Attr("container", "string", default=""),
    Attr("shared_name", "string", default=""),
)


def _queue_kernel(
    xp, *, component_types=(), shapes=(), capacity=-1, container="", shared_name="", queue
):
    return queue


def _shuffle_queue_kernel(
    xp,
    *,
    component_types=(),
    shapes=(),
    capacity=-1,
    container="",
    shared_name="",
    min_after_dequeue=0,
    seed=0,
    seed2=0,
    queue,
):
    return queue


for _type in ("FIFOQueueV2", "PaddingFIFOQueueV2", "PriorityQueueV2"):
    op(
        _type,
        infer=_queue_infer,
        differentiable=False,
        attrs=_COMMON,
        bind=_queue_bind,
        flags=_HOST,
    )(_queue_kernel)
op(
    "RandomShuffleQueueV2",
    infer=_queue_infer,
    differentiable=False,
    attrs=_COMMON
    + (
        Attr("min_after_dequeue", "int", default=0),
        Attr("seed", "int", default=0),
        Attr("seed2", "int", default=0),
    ),
    bind=_queue_bind,
    flags=_HOST,
)(_shuffle_queue_kernel)


def _check_handle(o):
    if o._inputs[0]._dtype.base_dtype is not dtypes.resource:
        raise TypeError(f"{o._type} needs a queue handle as input 0")


def _enqueue_infer(o):
    _check_handle(o)
    return []


def _enqueue(many):
    def kernel(xp, queue, *components, Tcomponents=(), timeout_ms=-1):
        queue.enqueue(components, many=many)

    return kernel


_ENQUEUE_ATTRS = (
    Attr("Tcomponents", "list(type)", default=()),
    Attr("timeout_ms", "int", default=-1),
)
op(
    "QueueEnqueueV2",
    infer=_enqueue_infer,
    differentiable=False,
    inputs=("handle", "components*"),
    attrs=_ENQUEUE_ATTRS,
    flags=_HOST,
)(_enqueue(False))
op(
    "QueueEnqueueManyV2",
    infer=_enqueue_infer,
    differentiable=False,
    inputs=("handle", "components*"),
    attrs=_ENQUEUE_ATTRS,
    flags=_HOST,
)(_enqueue(True))


def _dequeue_infer(o):
    """Unknown shapes, as TF's op: the queue's Python object sets what it knows."""
    _check_handle(o)
    return [(t, unknown_shape()) for t in o._attrs["component_types"]]


_DEQUEUE_ATTRS = (
    Attr("component_types", "list(type)", default=()),
    Attr("timeout_ms", "int", default=-1),
)


def _out(values):
    return values[0] if len(values) == 1 else tuple(values)


op(
    "QueueDequeueV2",
    infer=_dequeue_infer,
    differentiable=False,
    inputs=("handle",),
    attrs=_DEQUEUE_ATTRS,
    flags=_HOST,
)(lambda xp, queue, *, component_types=(), timeout_ms=-1: _out(queue.dequeue()))
op(
    "QueueDequeueManyV2",
    infer=_dequeue_infer,
    differentiable=False,
    inputs=("handle", "n"),
    attrs=_DEQUEUE_ATTRS,
    flags=_HOST,
)(lambda xp, queue, n, *, component_types=(), timeout_ms=-1: _out(queue.dequeue(int(n))))
op(
    "QueueDequeueUpToV2",
    infer=_dequeue_infer,
    differentiable=False,
    inputs=("handle", "n"),
    attrs=_DEQUEUE_ATTRS,
    flags=_HOST,
)(
    lambda xp, queue, n, *, component_types=(), timeout_ms=-1: _out(
        queue.dequeue(int(n), up_to=True)
    )
)


@op(
    "QueueCloseV2",
    infer=_enqueue_infer,
    differentiable=False,
    inputs=("handle",),
    attrs=(Attr("cancel_pending_enqueues", "bool", default=False),),
    flags=_HOST,
)
def _close(xp, queue, *, cancel_pending_enqueues=False):
    queue.close(bool(cancel_pending_enqueues))


def _scalar_infer(dtype):
    def infer(o):
        _check_handle(o)
        return [(dtype, TensorShape([]))]

    return infer


op(
    "QueueSizeV2",
    infer=_scalar_infer(dtypes.int32),
    differentiable=False,
    inputs=("handle",),
    flags=_HOST,
)(lambda xp, queue: np.asarray(len(queue), np.int32))
op(
    "QueueIsClosedV2",
    infer=_scalar_infer(dtypes.bool),
    differentiable=False,
    inputs=("handle",),
    flags=_HOST,
)(lambda xp, queue: np.asarray(queue.closed))
