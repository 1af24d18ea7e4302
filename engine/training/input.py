"""TF1's queue-based input pipelines (TF 1.15's ``tensorflow/python/training/input.py``):
the producers ``input_producer``, ``string_input_producer``, ``range_input_producer`` and
``slice_input_producer``, the batchers ``batch``, ``batch_join``, ``shuffle_batch`` and
``shuffle_batch_join`` with their ``maybe_`` variants, and ``limit_epochs``.

Each function builds a queue (``engine/queues.py``), the ops that fill it, a ``QueueRunner``
in the graph's ``QUEUE_RUNNERS`` collection and a scalar summary of how full the queue is,
with TF's op names, name scopes, static shapes and errors; what it returns dequeues. The
threads that run the enqueue ops start with ``tf.train.start_queue_runners``::

    filenames = tf.train.string_input_producer(["a.csv", "b.csv"], num_epochs=2)
    label, features = decode(reader.read(filenames))
    labels, batch = tf.train.shuffle_batch([label, features], 32, 1000, 100)
    ...
    sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess, coord)
    try:
        while True:
            sess.run(train_op)
    except tf.errors.OutOfRangeError:    # num_epochs done, every queue drained
        pass
    finally:
        coord.request_stop()
    coord.join(threads)

``num_epochs`` counts with a local ``epochs`` variable (``limit_epochs``), so the local
variables must be initialized. ``SparseTensor`` inputs, which TF passes through a
``SparseTensorsMap``, are not supported.
"""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine import summary as _summary
from engine.framework.constant_op import constant, convert_to_tensor
from engine.framework.graph import GraphKeys, Tensor, control_dependencies, name_scope
from engine.framework.sparse_tensor import SparseTensor
from engine.framework.tensor_util import constant_value
from engine.ops import array as array_ops
from engine.ops import control_flow as control_flow_ops
from engine.ops import math as math_ops
from engine.ops.logging_ops import Assert
from engine.ops.partition_ops import dynamic_partition
from engine.ops.random_more import random_shuffle
from engine.ops.slicing import gather
from engine.queues import FIFOQueue, PaddingFIFOQueue, RandomShuffleQueue
from engine.tensor_shape import as_shape
from engine.training.queue_runner import QueueRunner, add_queue_runner
from engine.variables import Variable

__all__ = [
    "limit_epochs",
    "input_producer",
    "string_input_producer",
    "range_input_producer",
    "slice_input_producer",
    "batch",
    "maybe_batch",
    "batch_join",
    "maybe_batch_join",
    "shuffle_batch",
    "maybe_shuffle_batch",
    "shuffle_batch_join",
    "maybe_shuffle_batch_join",
]


# -- producers ---------------------------------------------------------------------------


def limit_epochs(tensor, num_epochs=None, name=None):
    """``tensor``, which may be evaluated ``num_epochs`` times; the next evaluation raises
    ``OutOfRangeError``. Counts with a local variable ``epochs`` (initialize it with
    ``tf.local_variables_initializer()``)."""
    if num_epochs is None:
        return tensor
    if num_epochs <= 0:
        raise ValueError(f"num_epochs must be > 0 not {int(num_epochs)}.")
    with name_scope(name, "limit_epochs", [tensor]) as name:
        zero64 = constant(0, dtype=dtypes.int64)
        epochs = Variable(
            zero64, name="epochs", trainable=False, collections=[GraphKeys.LOCAL_VARIABLES]
        )
        counter = epochs.count_up_to(num_epochs)
        with control_dependencies([counter]):
            return array_ops.identity(tensor, name=name)


def input_producer(
    input_tensor,
    element_shape=None,
    num_epochs=None,
    shuffle=True,
    seed=None,
    capacity=32,
    shared_name=None,
    summary_name=None,
    name=None,
    cancel_op=None,
):
    """A ``FIFOQueue`` fed with the rows of ``input_tensor`` (shuffled within each epoch when
    ``shuffle``), ``num_epochs`` times or forever; its ``QueueRunner`` is in the graph's
    ``QUEUE_RUNNERS`` collection.

    >>> q = tf.train.input_producer(tf.constant([[1, 2], [3, 4]]), shuffle=False)
    >>> row = q.dequeue()     # [1, 2], then [3, 4], [1, 2], ...
    """
    with name_scope(name, "input_producer", [input_tensor]):
        input_tensor = convert_to_tensor(input_tensor, name="input_tensor")
        element_shape = input_tensor.shape[1:].merge_with(as_shape(element_shape))
        if not element_shape.is_fully_defined():
            raise ValueError(
                "Either `input_tensor` must have a fully defined shape or `element_shape` "
                "must be specified"
            )
        if shuffle:
            input_tensor = random_shuffle(input_tensor, seed=seed)
        input_tensor = limit_epochs(input_tensor, num_epochs)
        q = FIFOQueue(
            capacity=capacity,
            dtypes=[input_tensor.dtype.base_dtype],
            shapes=[element_shape],
            shared_name=shared_name,
            name=name,
        )
        enq = q.enqueue_many([input_tensor])
        add_queue_runner(QueueRunner(q, [enq], cancel_op=cancel_op))
        if summary_name is not None:
            _summary.scalar(
                summary_name, math_ops.cast(q.size(), dtypes.float32) * (1.0 / capacity)
            )
        return q


def string_input_producer(
    string_tensor,
    num_epochs=None,
    shuffle=True,
    seed=None,
    capacity=32,
    shared_name=None,
    name=None,
    cancel_op=None,
):
    """A queue of the strings of the 1-D ``string_tensor`` (file names, typically), each epoch
    shuffled when ``shuffle``. An empty list is refused here, an empty tensor when the
    queue runner first runs (an ``InvalidArgumentError`` the coordinator re-raises)."""
    not_null_err = "string_input_producer requires a non-null input tensor"
    if not isinstance(string_tensor, Tensor) and (
        string_tensor is None or np.size(string_tensor) == 0
    ):
        raise ValueError(not_null_err)
    with name_scope(name, "input_producer", [string_tensor]) as name:
        string_tensor = convert_to_tensor(string_tensor, dtype=dtypes.string)
        with control_dependencies(
            [Assert(math_ops.greater(array_ops.size(string_tensor), 0), [not_null_err])]
        ):
            string_tensor = array_ops.identity(string_tensor)
        return input_producer(
            input_tensor=string_tensor,
            element_shape=[],
            num_epochs=num_epochs,
            shuffle=shuffle,
            seed=seed,
            capacity=capacity,
            shared_name=shared_name,
            name=name,
            summary_name=f"fraction_of_{capacity}_full",
            cancel_op=cancel_op,
        )


def range_input_producer(
    limit, num_epochs=None, shuffle=True, seed=None, capacity=32, shared_name=None, name=None
):
    """A queue of the int32 scalars ``0 .. limit - 1``, each epoch shuffled when ``shuffle``."""
    with name_scope(name, "input_producer", [limit]) as name:
        range_tensor = array_ops.range(limit)
        return input_producer(
            range_tensor,
            [],
            num_epochs,
            shuffle,
            seed,
            capacity,
            shared_name,
            f"fraction_of_{capacity}_full",
            name,
        )


def slice_input_producer(
    tensor_list, num_epochs=None, shuffle=True, seed=None, capacity=32, shared_name=None, name=None
):
    """One slice (along dimension 0) of each tensor of ``tensor_list``, the same row of each:
    a list of tensors, each the shape of its input without the first dimension. The row
    numbers come from a ``range_input_producer``."""
    with name_scope(name, "input_producer", list(tensor_list)):
        tensor_list = _convert_n(tensor_list)
        if not tensor_list:
            raise ValueError("Expected at least one tensor in slice_input_producer().")
        range_size = array_ops.shape(tensor_list[0])[0]
        queue = range_input_producer(
            range_size,
            num_epochs=num_epochs,
            shuffle=shuffle,
            seed=seed,
            capacity=capacity,
            shared_name=shared_name,
        )
        index = queue.dequeue()
        return [gather(t, index) for t in tensor_list]


# -- batching helpers --------------------------------------------------------------------


def _convert_n(tensors) -> list:
    out = []
    for t in tensors:
        if isinstance(t, SparseTensor):
            raise NotImplementedError(
                "SparseTensor inputs to the queue-based input pipelines (TF stores them in a "
                "SparseTensorsMap) are not supported; batch the dense tensors, or use tf.data"
            )
        out.append(convert_to_tensor(t))
    return out


def _as_tensor_list(tensors) -> list:
    if isinstance(tensors, dict):
        return [tensors[k] for k in sorted(tensors, key=str)]
    if isinstance(tensors, (Tensor, SparseTensor)):
        return [tensors]  # TF refuses a bare tensor (it would iterate it); batch it whole
    return list(tensors)


def _as_tensor_list_list(tensors_list) -> list:
    if not tensors_list:
        raise ValueError("Expected at least one set of tensors")
    if isinstance(tensors_list[0], dict):
        expected_keys = set(tensors_list[0].keys())
        for tensors in tensors_list[1:]:
            if set(tensors.keys()) != expected_keys:
                raise ValueError("All dictionaries in tensors_list must have the same keys")
    return [_as_tensor_list(tensors) for tensors in tensors_list]


def _as_original_type(original_tensors, dequeued):
    """``dequeued`` in the structure of the input: a dict by the same keys, else a list, or
    one tensor for one component (as TF: a list of one tensor comes back as the tensor)."""
    if isinstance(original_tensors, dict):
        if len(original_tensors) == 1:
            dequeued = [dequeued]
        return {k: dequeued[i] for i, k in enumerate(sorted(original_tensors, key=str))}
    return dequeued


def _validate_keep_input(keep_input, enqueue_many) -> Tensor:
    keep_input = convert_to_tensor(keep_input)
    rank = keep_input.shape.rank
    if rank is None:
        raise ValueError("`keep_input` dimensions must be known at graph construction.")
    if not enqueue_many and rank == 1:
        raise ValueError("`keep_input` cannot be a vector when `enqueue_many=False`.")
    if rank > 1:
        raise ValueError("`keep_input` must be 0 or 1 dimensions.")
    return keep_input


def _dtypes(tensor_list_list) -> list:
    all_types = [[t.dtype for t in tl] for tl in tensor_list_list]
    types = all_types[0]
    for other_types in all_types[1:]:
        if other_types != types:
            raise TypeError(
                "Expected types to be consistent: "
                f"{', '.join(x.name for x in types)} vs. {', '.join(x.name for x in other_types)}."
            )
    return types


def _merge_shapes(shape_list, enqueue_many) -> list:
    shape_list = [as_shape(s) for s in shape_list]
    if enqueue_many:
        shape_list = [s.with_rank_at_least(1)[1:] for s in shape_list]
    merged_shape = shape_list[0]
    for s in shape_list[1:]:
        merged_shape.merge_with(s)  # as TF: checks compatibility, keeps the first shape
    return merged_shape.as_list()


def _shapes(tensor_list_list, shapes, enqueue_many):
    """``shapes``, or the components' shapes inferred from the tensors (the first list's,
    checked against the others')."""
    if shapes is not None:
        return shapes
    len0 = len(tensor_list_list[0])
    for tl in tensor_list_list:
        for i in range(len0):
            if tl[i].shape.rank is None:
                raise ValueError(f"Cannot infer Tensor's rank: {tl[i]}")
    return [
        _merge_shapes([tl[i].shape.as_list() for tl in tensor_list_list], enqueue_many)
        for i in range(len0)
    ]


def _smart_cond(pred, true_fn, false_fn):
    """``true_fn()`` or ``false_fn()`` when ``pred`` is known when the graph is built, else
    a ``cond`` (TF's ``smart_cond``)."""
    value = constant_value(pred)
    if value is not None:
        return true_fn() if bool(value) else false_fn()
    return control_flow_ops.cond(pred, true_fn, false_fn)


def _select_which_to_enqueue(tensor_list, keep_input) -> list:
    """The examples (rows) whose ``keep_input`` entry is true."""
    select_i = math_ops.cast(keep_input, dtypes.int32)
    return [dynamic_partition(x, select_i, num_partitions=2)[1] for x in tensor_list]


def _enqueue_ops(queue, tensor_list_list, enqueue_many, keep_input) -> list:
    """One enqueue op per tensor list, each adding it (or, for a vector ``keep_input``, the
    kept examples) when ``keep_input`` holds."""
    enqueue_fn = queue.enqueue_many if enqueue_many else queue.enqueue
    if keep_input.shape.rank == 1:
        return [enqueue_fn(_select_which_to_enqueue(tl, keep_input)) for tl in tensor_list_list]
    return [
        _smart_cond(keep_input, lambda tl=tl: enqueue_fn(tl), control_flow_ops.no_op)
        for tl in tensor_list_list
    ]


def _batch_pipeline(
    tensor_list_list,
    batch_size,
    keep_input,
    make_queue,
    fullness,
    num_threads,
    enqueue_many,
    shapes,
    allow_smaller_final_batch,
    name,
):
    """The body of every batcher, inside its name scope ``name``: the queue of the tensors'
    types and shapes (``make_queue(types, shapes)``), its enqueue ops (``num_threads`` runs
    of one op, or one op per tensor list when ``num_threads`` is None: the ``_join``
    batchers), the queue runner, the summary (``fullness(queue) -> (tag, value)``) and the
    dequeue named ``name``."""
    tensor_list_list = [_convert_n(tl) for tl in tensor_list_list]
    keep_input = _validate_keep_input(keep_input, enqueue_many)
    types = _dtypes(tensor_list_list)
    shapes = _shapes(tensor_list_list, shapes, enqueue_many)
    queue = make_queue(types, shapes)
    enqueue_ops = _enqueue_ops(queue, tensor_list_list, enqueue_many, keep_input)
    if num_threads is not None:
        enqueue_ops = enqueue_ops * num_threads
    add_queue_runner(QueueRunner(queue, enqueue_ops))
    _summary.scalar(*fullness(queue))
    if allow_smaller_final_batch:
        return queue.dequeue_up_to(batch_size, name=name)
    return queue.dequeue_many(batch_size, name=name)


def _fifo(dynamic_pad, capacity, shared_name):
    queue_class = PaddingFIFOQueue if dynamic_pad else FIFOQueue

    def make(types, shapes):
        return queue_class(capacity=capacity, dtypes=types, shapes=shapes, shared_name=shared_name)

    def fullness(queue):
        return (
            f"fraction_of_{capacity}_full",
            math_ops.cast(queue.size(), dtypes.float32) * (1.0 / capacity),
        )

    return make, fullness


def _shuffling(capacity, min_after_dequeue, seed, shared_name, check_capacity=True):
    # As TF, only shuffle_batch checks: shuffle_batch_join takes any capacity.
    if check_capacity and capacity <= min_after_dequeue:
        raise ValueError(
            f"capacity {capacity} must be bigger than min_after_dequeue {min_after_dequeue}."
        )

    def make(types, shapes):
        return RandomShuffleQueue(
            capacity=capacity,
            min_after_dequeue=min_after_dequeue,
            seed=seed,
            dtypes=types,
            shapes=shapes,
            shared_name=shared_name,
        )

    def fullness(queue):
        over = math_ops.maximum(0, queue.size() - min_after_dequeue)
        value = math_ops.cast(over, dtypes.float32) * (1.0 / (capacity - min_after_dequeue))
        return f"fraction_over_{min_after_dequeue}_of_{capacity - min_after_dequeue}_full", value

    return make, fullness


def _batch(tensors, batch_size, keep_input, num_threads, default_name, name, queue, **kwargs):
    """``batch``/``maybe_batch``/``shuffle_batch``/``maybe_shuffle_batch``: ``queue()`` gives
    the queue maker and summary (called in the name scope: its checks come first)."""
    tensor_list = _as_tensor_list(tensors)
    with name_scope(name, default_name, [*tensor_list, keep_input]) as name:
        make, fullness = queue()
        if not tensor_list:
            raise ValueError("Expected at least one tensor in batch().")
        dequeued = _batch_pipeline(
            [tensor_list], batch_size, keep_input, make, fullness, num_threads, name=name, **kwargs
        )
        return _as_original_type(tensors, dequeued)


def _batch_join(tensors_list, batch_size, keep_input, default_name, name, queue, **kwargs):
    """The ``_join`` batchers: one enqueue op (thread) per entry of ``tensors_list``."""
    tensor_list_list = _as_tensor_list_list(tensors_list)
    flat = [t for tl in tensor_list_list for t in tl]
    with name_scope(name, default_name, [*flat, keep_input]) as name:
        make, fullness = queue()
        dequeued = _batch_pipeline(
            tensor_list_list, batch_size, keep_input, make, fullness, None, name=name, **kwargs
        )
        return _as_original_type(tensors_list[0], dequeued)


# -- batchers ----------------------------------------------------------------------------


def batch(
    tensors,
    batch_size,
    num_threads=1,
    capacity=32,
    enqueue_many=False,
    shapes=None,
    dynamic_pad=False,
    allow_smaller_final_batch=False,
    shared_name=None,
    name=None,
):
    """Batches of ``batch_size`` examples of ``tensors`` (a list or dict of tensors; the
    result has its structure, a list of one tensor coming back as the tensor), through a
    ``FIFOQueue`` of ``capacity`` filled by ``num_threads`` threads.

    ``enqueue_many``: each tensor is a batch of examples (dimension 0). ``dynamic_pad``: a
    ``PaddingFIFOQueue`` pads unknown dimensions to the longest in each batch.
    ``allow_smaller_final_batch``: the last batch may be smaller (the batch dimension is
    then statically unknown); otherwise the examples left over at the end are dropped.

    >>> images, labels = tf.train.batch([image, label], batch_size=32)
    """
    return maybe_batch(
        tensors,
        True,
        batch_size,
        num_threads=num_threads,
        capacity=capacity,
        enqueue_many=enqueue_many,
        shapes=shapes,
        dynamic_pad=dynamic_pad,
        allow_smaller_final_batch=allow_smaller_final_batch,
        shared_name=shared_name,
        name=name,
    )


def maybe_batch(
    tensors,
    keep_input,
    batch_size,
    num_threads=1,
    capacity=32,
    enqueue_many=False,
    shapes=None,
    dynamic_pad=False,
    allow_smaller_final_batch=False,
    shared_name=None,
    name=None,
):
    """``batch`` of the examples ``keep_input`` keeps: a bool scalar (the whole input) or,
    with ``enqueue_many``, a bool vector (one per example)."""
    return _batch(
        tensors,
        batch_size,
        keep_input,
        num_threads,
        "batch",
        name,
        lambda: _fifo(dynamic_pad, capacity, shared_name),
        enqueue_many=enqueue_many,
        shapes=shapes,
        allow_smaller_final_batch=allow_smaller_final_batch,
    )


def batch_join(
    tensors_list,
    batch_size,
    capacity=32,
    enqueue_many=False,
    shapes=None,
    dynamic_pad=False,
    allow_smaller_final_batch=False,
    shared_name=None,
    name=None,
):
    """``batch`` of several inputs of the same types and shapes (``tensors_list``, lists or
    dicts), each enqueued by a thread of its own: examples mix in arrival order."""
    return maybe_batch_join(
        tensors_list,
        True,
        batch_size,
        capacity=capacity,
        enqueue_many=enqueue_many,
        shapes=shapes,
        dynamic_pad=dynamic_pad,
        allow_smaller_final_batch=allow_smaller_final_batch,
        shared_name=shared_name,
        name=name,
    )


def maybe_batch_join(
    tensors_list,
    keep_input,
    batch_size,
    capacity=32,
    enqueue_many=False,
    shapes=None,
    dynamic_pad=False,
    allow_smaller_final_batch=False,
    shared_name=None,
    name=None,
):
    """``batch_join`` of the examples ``keep_input`` keeps (see ``maybe_batch``)."""
    return _batch_join(
        tensors_list,
        batch_size,
        keep_input,
        "batch_join",
        name,
        lambda: _fifo(dynamic_pad, capacity, shared_name),
        enqueue_many=enqueue_many,
        shapes=shapes,
        allow_smaller_final_batch=allow_smaller_final_batch,
    )


def shuffle_batch(
    tensors,
    batch_size,
    capacity,
    min_after_dequeue,
    num_threads=1,
    seed=None,
    enqueue_many=False,
    shapes=None,
    allow_smaller_final_batch=False,
    shared_name=None,
    name=None,
):
    """``batch`` through a ``RandomShuffleQueue``: each batch is drawn at random from the
    queue, which keeps at least ``min_after_dequeue`` examples (until its input ends) so
    that they mix.

    >>> images, labels = tf.train.shuffle_batch(
    ...     [image, label], batch_size=32, capacity=50000, min_after_dequeue=10000)
    """
    return maybe_shuffle_batch(
        tensors,
        batch_size,
        capacity,
        min_after_dequeue,
        True,
        num_threads=num_threads,
        seed=seed,
        enqueue_many=enqueue_many,
        shapes=shapes,
        allow_smaller_final_batch=allow_smaller_final_batch,
        shared_name=shared_name,
        name=name,
    )


def maybe_shuffle_batch(
    tensors,
    batch_size,
    capacity,
    min_after_dequeue,
    keep_input,
    num_threads=1,
    seed=None,
    enqueue_many=False,
    shapes=None,
    allow_smaller_final_batch=False,
    shared_name=None,
    name=None,
):
    """``shuffle_batch`` of the examples ``keep_input`` keeps (see ``maybe_batch``)."""
    return _batch(
        tensors,
        batch_size,
        keep_input,
        num_threads,
        "shuffle_batch",
        name,
        lambda: _shuffling(capacity, min_after_dequeue, seed, shared_name),
        enqueue_many=enqueue_many,
        shapes=shapes,
        allow_smaller_final_batch=allow_smaller_final_batch,
    )


def shuffle_batch_join(
    tensors_list,
    batch_size,
    capacity,
    min_after_dequeue,
    seed=None,
    enqueue_many=False,
    shapes=None,
    allow_smaller_final_batch=False,
    shared_name=None,
    name=None,
):
    """``shuffle_batch`` of several inputs, each enqueued by a thread of its own."""
    return maybe_shuffle_batch_join(
        tensors_list,
        batch_size,
        capacity,
        min_after_dequeue,
        True,
        seed=seed,
        enqueue_many=enqueue_many,
        shapes=shapes,
        allow_smaller_final_batch=allow_smaller_final_batch,
        shared_name=shared_name,
        name=name,
    )


def maybe_shuffle_batch_join(
    tensors_list,
    batch_size,
    capacity,
    min_after_dequeue,
    keep_input,
    seed=None,
    enqueue_many=False,
    shapes=None,
    allow_smaller_final_batch=False,
    shared_name=None,
    name=None,
):
    """``shuffle_batch_join`` of the examples ``keep_input`` keeps (see ``maybe_batch``)."""
    return _batch_join(
        tensors_list,
        batch_size,
        keep_input,
        "shuffle_batch_join",
        name,
        lambda: _shuffling(capacity, min_after_dequeue, seed, shared_name, check_capacity=False),
        enqueue_many=enqueue_many,
        shapes=shapes,
        allow_smaller_final_batch=allow_smaller_final_batch,
    )
