"""TF1's queues: ``tf.FIFOQueue``, ``tf.RandomShuffleQueue``, ``tf.PaddingFIFOQueue``,
``tf.PriorityQueue`` and ``tf.QueueBase`` (also under ``tf.queue``), as TF 1.15's
``data_flow_ops`` builds them: the same op types, tensor names, static shapes and errors.

A queue's contents live in each session (``engine/ops/queue_ops.py``); producer threads
fill it (``tf.train.QueueRunner``) while the training loop dequeues::

    q = tf.FIFOQueue(32, [tf.float32], shapes=[[784]])
    enqueue = q.enqueue_many([images])
    batch = q.dequeue_many(100)          # static shape [100, 784]
"""

from __future__ import annotations

from engine import dtypes as _dtypes
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import name_scope
from engine.framework.tensor_util import constant_value
from engine.ops import queue_ops  # noqa: F401 - registers the queue op types
from engine.ops._common import create
from engine.ops.random import get_seed
from engine.tensor_shape import Dimension, TensorShape, unknown_shape

__all__ = ["QueueBase", "FIFOQueue", "RandomShuffleQueue", "PaddingFIFOQueue", "PriorityQueue"]


def _as_type_list(dtypes) -> list:
    if isinstance(dtypes, (list, tuple)):
        return [_dtypes.as_dtype(d) for d in dtypes]
    return [_dtypes.as_dtype(dtypes)]


def _as_shape_list(shapes, dtypes, unknown_dim_allowed=False, unknown_rank_allowed=False):  # noqa: ARG001 - TF's signature
    """TF's rules: None means unknown shapes; one shape for one dtype may be given bare."""
    if unknown_dim_allowed and (
        not isinstance(shapes, (list, tuple))
        or not shapes
        or any(s is None or isinstance(s, int) for s in shapes)
    ):
        raise ValueError("When providing partial shapes, a list of shapes must be provided.")
    if shapes is None:
        return None
    if isinstance(shapes, TensorShape):
        shapes = [shapes]
    if not isinstance(shapes, (tuple, list)):
        raise TypeError(
            f"Shapes must be a TensorShape or a list or tuple of TensorShapes, got {type(shapes)}"
        )
    if all(s is None or isinstance(s, int) for s in shapes):
        shapes = [shapes]  # one shape given as a list of ints
    shapes = [TensorShape(s) for s in shapes]
    if not unknown_dim_allowed and any(not s.is_fully_defined() for s in shapes):
        raise ValueError(f"All shapes must be fully defined: {shapes}")
    if not unknown_rank_allowed and any(s.rank is None for s in shapes):
        raise ValueError(f"All shapes must have a defined rank: {shapes}")
    return shapes


def _as_name_list(names, dtypes):
    if names is None:
        return None
    if not isinstance(names, (list, tuple)):
        names = [names]
    if len(names) != len(dtypes):
        raise ValueError("List of names must have the same length as the list of dtypes")
    return list(names)


def _shared_name(shared_name):
    return shared_name or ""


class QueueBase:
    """What every queue does: enqueue, dequeue, close, size (TF1's ``tf.QueueBase``)."""

    def __init__(self, dtypes, shapes, names, queue_ref):
        self._dtypes = list(dtypes)
        if shapes is not None:
            if len(shapes) != len(self._dtypes):
                raise ValueError(
                    "Queue shapes must have the same length as dtypes, received "
                    f"len(shapes)={len(shapes)}, len(dtypes)={len(self._dtypes)}"
                )
            self._shapes = [TensorShape(s) for s in shapes]
        else:
            self._shapes = [unknown_shape() for _ in self._dtypes]
        if names is not None:
            if len(names) != len(self._dtypes):
                raise ValueError(
                    "Queue names must have the same length as dtypes, received "
                    f"len(names)={len(names)}, len(dtypes)={len(self._dtypes)}"
                )
            self._names = list(names)
        else:
            self._names = None
        self._queue_ref = queue_ref
        self._name = queue_ref.op.name.split("/")[-1]

    @staticmethod
    def from_list(index, queues):
        raise NotImplementedError(
            "QueueBase.from_list (a queue picked at run time through a ref select) is not "
            "supported; choose the queue in Python"
        )

    queue_ref = property(lambda self: self._queue_ref)
    name = property(lambda self: self._queue_ref.op.name)
    dtypes = property(lambda self: self._dtypes)
    shapes = property(lambda self: self._shapes)
    names = property(lambda self: self._names)

    # -- enqueue -------------------------------------------------------------------------
    def _check_enqueue_dtypes(self, vals) -> list:
        if isinstance(vals, dict):
            if not self._names:
                raise ValueError("Queue must have names to enqueue a dictionary")
            if sorted(self._names, key=str) != sorted(vals.keys(), key=str):
                raise ValueError(
                    f"Keys in dictionary to enqueue do not match names of Queue.  Dictionary: "
                    f"{sorted(vals.keys())},Queue: {sorted(self._names)}"
                )
            vals = [vals.get(k) for k in self._names]
        else:
            if self._names:
                raise ValueError("You must enqueue a dictionary in a Queue with names")
            if not isinstance(vals, (list, tuple)):
                vals = [vals]
        return [
            convert_to_tensor(v, dtype=d, name=f"component_{i}")
            for i, (v, d) in enumerate(zip(vals, self._dtypes))
        ]

    def enqueue(self, vals, name=None):
        """An op adding one element (a tensor, a list/tuple, or a dict with ``names``)."""
        with name_scope(name, f"{self._name}_enqueue", [self._queue_ref]) as scope:
            vals = self._check_enqueue_dtypes(vals)
            for val, shape in zip(vals, self._shapes):
                val.shape.assert_is_compatible_with(shape)
            return create(
                "QueueEnqueueV2",
                [self._queue_ref, *vals],
                {"Tcomponents": [v.dtype.base_dtype for v in vals], "timeout_ms": -1},
                scope,
            )

    def enqueue_many(self, vals, name=None):
        """An op adding the elements of ``vals`` sliced along dimension 0."""
        with name_scope(name, f"{self._name}_EnqueueMany", [self._queue_ref]) as scope:
            vals = self._check_enqueue_dtypes(vals)
            batch_dim = Dimension(None)
            for val in vals:
                batch_dim = batch_dim.merge_with(val.shape.with_rank_at_least(1)[0])
            for val, shape in zip(vals, self._shapes):
                val.shape[1:].assert_is_compatible_with(shape)
            return create(
                "QueueEnqueueManyV2",
                [self._queue_ref, *vals],
                {"Tcomponents": [v.dtype.base_dtype for v in vals], "timeout_ms": -1},
                scope,
            )

    # -- dequeue -------------------------------------------------------------------------
    def _dequeue_return_value(self, tensors):
        if self._names:
            return {n: tensors[i] for i, n in enumerate(self._names)}
        if len(tensors) == 1:
            return tensors[0]
        return list(tensors)

    def _dequeue_op(self, op_type, suffix, n, name, lead):
        with name_scope(name, f"{self._name}_{suffix}", [self._queue_ref]) as scope:
            inputs = [self._queue_ref]
            if n is not None:
                n = convert_to_tensor(n, dtype=_dtypes.int32, name="n")
                inputs.append(n)
            attrs = {"component_types": list(self._dtypes), "timeout_ms": -1}
            op = create(op_type, inputs, attrs, scope)
        if lead == "n":
            value = constant_value(n)
            lead = [None if value is None else int(value)]
        for out, shape in zip(op.outputs, self._shapes):
            if lead is None:
                out.set_shape(shape)
            elif shape.rank is not None:
                out.set_shape(TensorShape(lead).concatenate(shape))
        return self._dequeue_return_value(op.outputs)

    def dequeue(self, name=None):
        """One element, waiting while the queue is empty; ``OutOfRangeError`` once it is
        closed and empty."""
        return self._dequeue_op("QueueDequeueV2", "Dequeue", None, name, None)

    def dequeue_many(self, n, name=None):
        """``n`` elements stacked along a new dimension 0 (waits for all ``n``)."""
        return self._dequeue_op("QueueDequeueManyV2", "DequeueMany", n, name, "n")

    def dequeue_up_to(self, n, name=None):
        """Like ``dequeue_many``, but once the queue is closed it returns the fewer than
        ``n`` elements left (``OutOfRangeError`` when none are)."""
        return self._dequeue_op("QueueDequeueUpToV2", "DequeueUpTo", n, name, [None])

    # -- state ---------------------------------------------------------------------------
    def close(self, cancel_pending_enqueues=False, name=None):
        """An op closing the queue: later enqueues fail, dequeues drain what is left."""
        with name_scope(name, f"{self._name}_Close", [self._queue_ref]) as scope:
            attrs = {"cancel_pending_enqueues": bool(cancel_pending_enqueues)}
            return create("QueueCloseV2", [self._queue_ref], attrs, scope)

    def is_closed(self, name=None):
        with name_scope(name, f"{self._name}_Is_Closed", [self._queue_ref]) as scope:
            return create("QueueIsClosedV2", [self._queue_ref], {}, scope).outputs[0]

    def size(self, name=None):
        """An int32 scalar: how many elements the queue holds."""
        with name_scope(name, f"{self._name}_Size", [self._queue_ref]) as scope:
            return create("QueueSizeV2", [self._queue_ref], {}, scope).outputs[0]


def _make(op_type, name, attrs):
    """The queue op; the lengths are checked first, with QueueBase's words."""
    dtypes, shapes = attrs["component_types"], attrs["shapes"]
    if shapes and len(shapes) != len(dtypes):
        raise ValueError(
            "Queue shapes must have the same length as dtypes, received "
            f"len(shapes)={len(shapes)}, len(dtypes)={len(dtypes)}"
        )
    return create(op_type, [], attrs, name).outputs[0]


class FIFOQueue(QueueBase):
    """Elements leave in the order they came (TF1's ``tf.FIFOQueue``)."""

    def __init__(
        self, capacity, dtypes, shapes=None, names=None, shared_name=None, name="fifo_queue"
    ):
        dtypes = _as_type_list(dtypes)
        shapes = _as_shape_list(shapes, dtypes)
        names = _as_name_list(names, dtypes)
        ref = _make("FIFOQueueV2", name, _attrs(dtypes, shapes, capacity, shared_name))
        super().__init__(dtypes, shapes, names, ref)


class PaddingFIFOQueue(QueueBase):
    """A FIFO queue whose shapes may have unknown dimensions: ``dequeue_many`` pads each
    component to the largest in the batch with zeros (or empty strings)."""

    def __init__(
        self, capacity, dtypes, shapes, names=None, shared_name=None, name="padding_fifo_queue"
    ):
        dtypes = _as_type_list(dtypes)
        shapes = _as_shape_list(shapes, dtypes, unknown_dim_allowed=True)
        names = _as_name_list(names, dtypes)
        if len(dtypes) != len(shapes):
            raise ValueError(
                "Shapes must be provided for all components, but received "
                f"{len(dtypes)} dtypes and {len(shapes)} shapes."
            )
        ref = _make("PaddingFIFOQueueV2", name, _attrs(dtypes, shapes, capacity, shared_name))
        super().__init__(dtypes, shapes, names, ref)


class RandomShuffleQueue(QueueBase):
    """Dequeues a random element, keeping at least ``min_after_dequeue`` until closed."""

    def __init__(
        self,
        capacity,
        min_after_dequeue,
        dtypes,
        shapes=None,
        names=None,
        seed=None,
        shared_name=None,
        name="random_shuffle_queue",
    ):
        dtypes = _as_type_list(dtypes)
        shapes = _as_shape_list(shapes, dtypes)
        names = _as_name_list(names, dtypes)
        seed1, seed2 = get_seed(seed)
        if seed1 is None and seed2 is None:
            seed1, seed2 = 0, 0
        attrs = _attrs(dtypes, shapes, capacity, shared_name)
        attrs.update(min_after_dequeue=int(min_after_dequeue), seed=int(seed1), seed2=int(seed2))
        ref = _make("RandomShuffleQueueV2", name, attrs)
        super().__init__(dtypes, shapes, names, ref)


class PriorityQueue(QueueBase):
    """Dequeues the element with the smallest int64 priority first; an element is
    ``(priority, *components)``."""

    def __init__(
        self, capacity, types, shapes=None, names=None, shared_name=None, name="priority_queue"
    ):
        types = _as_type_list(types)
        shapes = _as_shape_list(shapes, types)
        ref = _make("PriorityQueueV2", name, _attrs(types, shapes, capacity, shared_name))
        priority_dtypes = [_dtypes.int64, *types]
        priority_shapes = [TensorShape([]), *shapes] if shapes else shapes
        super().__init__(priority_dtypes, priority_shapes, names, ref)


def _attrs(dtypes, shapes, capacity, shared_name) -> dict:
    return {
        "component_types": list(dtypes),
        "shapes": list(shapes or []),
        "capacity": int(capacity),
        "container": "",
        "shared_name": _shared_name(shared_name),
    }
