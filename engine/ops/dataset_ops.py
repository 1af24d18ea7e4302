"""Dataset and iterator ops (TF1's ``tf.data`` in graph mode).

A dataset op outputs a variant: a ``DatasetValue``, a recipe that can start any number of
passes over its elements (flat tuples of arrays). Sources (``TensorSliceDataset``,
``TensorDataset``, ``RangeDataset``) hold the arrays their inputs had when the op ran, so a
dataset built from placeholders takes its data from the feed of the run that initializes
the iterator. ``MapDataset`` calls its function graph, compiled for the session, per
element. An iterator's state lives in the session: ``MakeIterator`` starts a pass,
``IteratorGetNext`` advances it and raises ``OutOfRangeError`` at the end, and
``OneShotIterator`` starts its pass on first use. CPU kernels only.
"""

from __future__ import annotations

import weakref

import numpy as np

from engine import dtypes, errors
from engine.framework.registry import Attr, OpFlags, op
from engine.tensor_shape import TensorShape

_VARIANT = [(dtypes.variant, TensorShape([]))]
_RESOURCE = [(dtypes.resource, TensorShape([]))]
_CPU = OpFlags(device_types=("CPU",))
_STATEFUL_CPU = OpFlags(stateful=True, device_types=("CPU",))
_SPEC = (Attr("output_types", "list(type)"), Attr("output_shapes", "list(shape)"))


def _host(a) -> np.ndarray:
    return np.asarray(a.get() if hasattr(a, "get") else a)


class DatasetValue:
    """A dataset at run time: ``iterate(state)`` starts one pass (a generator of tuples)."""

    def iterate(self, state):
        raise NotImplementedError


class _Slices(DatasetValue):
    def __init__(self, components):
        self.components = [_host(c) for c in components]
        if any(c.ndim == 0 for c in self.components):
            raise errors.InvalidArgumentError(
                None, None, "Component to be sliced must have rank >= 1, got a scalar"
            )
        n = {c.shape[0] for c in self.components}
        if len(n) > 1:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"All components must have the same size in the 0th dimension, got {sorted(n)}",
            )
        self.n = n.pop() if n else 0

    def iterate(self, state):
        for i in range(self.n):
            yield tuple(np.array(c[i]) for c in self.components)


class _Tensors(DatasetValue):
    def __init__(self, components):
        self.components = [_host(c).copy() for c in components]

    def iterate(self, state):
        yield tuple(c.copy() for c in self.components)


class _Range(DatasetValue):
    def __init__(self, start, stop, step):
        self.args = int(start), int(stop), int(step)
        if self.args[2] == 0:
            raise errors.InvalidArgumentError(None, None, "step must be a non-zero integer.")

    def iterate(self, state):
        for v in range(*self.args):
            yield (np.array(v, dtype=np.int64),)


class _Map(DatasetValue):
    def __init__(self, source, fn, captures, types):
        self.source, self.fn, self.captures, self.types = source, fn, captures, types

    def iterate(self, state):
        for elem in self.source.iterate(state):
            out = self.fn(*elem, *self.captures)
            yield tuple(np.asarray(v) for v in out)


class _Batch(DatasetValue):
    def __init__(self, source, size, drop_remainder):
        if size <= 0:
            raise errors.InvalidArgumentError(None, None, "Batch size must be greater than zero.")
        self.source, self.size, self.drop = source, size, drop_remainder

    def _stack(self, group):
        out = []
        for k in range(len(group[0])):
            first = group[0][k].shape
            for j, e in enumerate(group):
                if e[k].shape != first:
                    raise errors.InvalidArgumentError(
                        None,
                        None,
                        f"Cannot batch tensors with different shapes in component {k}. First "
                        f"element had shape [{','.join(map(str, first))}] and element {j} had "
                        f"shape [{','.join(map(str, e[k].shape))}].",
                    )
            out.append(np.stack([e[k] for e in group]))
        return tuple(out)

    def iterate(self, state):
        group = []
        for elem in self.source.iterate(state):
            group.append(elem)
            if len(group) == self.size:
                yield self._stack(group)
                group = []
        if group and not self.drop:
            yield self._stack(group)


class _Shuffle(DatasetValue):
    def __init__(self, source, buffer_size, seeds, reshuffle):
        if buffer_size <= 0:
            raise errors.InvalidArgumentError(None, None, "buffer_size must be greater than zero.")
        self.source, self.buffer_size, self.seeds, self.reshuffle = (
            source,
            buffer_size,
            seeds,
            reshuffle,
        )

    def iterate(self, state):
        rng = state.shuffle_rng(self)
        buf = []
        for elem in self.source.iterate(state):
            buf.append(elem)
            if len(buf) >= self.buffer_size:
                i = int(rng.integers(len(buf)))
                buf[i], buf[-1] = buf[-1], buf[i]
                yield buf.pop()
        while buf:
            i = int(rng.integers(len(buf)))
            buf[i], buf[-1] = buf[-1], buf[i]
            yield buf.pop()


class _Repeat(DatasetValue):
    def __init__(self, source, count):
        self.source, self.count = source, count

    def iterate(self, state):
        k = 0
        while self.count < 0 or k < self.count:
            produced = False
            for elem in self.source.iterate(state):
                produced = True
                yield elem
            k += 1
            if not produced:
                return  # an empty dataset repeated forever is still empty


class _TakeSkip(DatasetValue):
    def __init__(self, source, count, take):
        self.source, self.count, self.take = source, count, take

    def iterate(self, state):
        for i, elem in enumerate(self.source.iterate(state)):
            if self.take:
                if 0 <= self.count <= i:
                    return
                yield elem
            elif self.count < 0:
                return
            elif i >= self.count:
                yield elem


class _Zip(DatasetValue):
    def __init__(self, sources):
        self.sources = sources

    def iterate(self, state):
        for parts in zip(*(s.iterate(state) for s in self.sources)):
            yield tuple(v for p in parts for v in p)


class _Filter(DatasetValue):
    def __init__(self, source, fn, captures):
        self.source, self.fn, self.captures = source, fn, captures

    def iterate(self, state):
        for elem in self.source.iterate(state):
            if bool(np.asarray(self.fn(*elem, *self.captures)[0])):
                yield elem


class _FlatMap(DatasetValue):
    def __init__(self, source, fn, captures):
        self.source, self.fn, self.captures = source, fn, captures

    def iterate(self, state):
        for elem in self.source.iterate(state):
            inner = self.fn(*elem, *self.captures)[0]
            if not isinstance(inner, DatasetValue):
                raise errors.InvalidArgumentError(
                    None, None, "flat_map's function must return a Dataset"
                )
            yield from inner.iterate(state)


class _PaddedBatch(_Batch):
    """Batches whose components are padded, per batch, to ``padded_shapes`` (-1: the
    largest in the batch) with ``padding_values``."""

    def __init__(self, source, size, shapes, values, drop_remainder):
        super().__init__(source, size, drop_remainder)
        self.shapes = [[int(d) for d in _host(s).reshape(-1)] for s in shapes]
        self.values = [_host(v) for v in values]

    def _stack(self, group):
        out = []
        for k, target in enumerate(self.shapes):
            elems = [e[k] for e in group]
            if any(e.ndim != len(target) for e in elems):
                raise errors.InvalidArgumentError(
                    None,
                    None,
                    f"All elements in a batch must have the same rank as the padded shape "
                    f"for component {k}: expected rank {len(target)}",
                )
            full = [d if d >= 0 else max(e.shape[a] for e in elems) for a, d in enumerate(target)]
            batch = np.full([len(elems)] + full, self.values[k], dtype=elems[0].dtype)
            for j, e in enumerate(elems):
                if any(n > m for n, m in zip(e.shape, full)):
                    raise errors.InvalidArgumentError(
                        None,
                        None,
                        f"Attempted to pad to a smaller size than the input element: component "
                        f"{k} has shape [{','.join(map(str, e.shape))}], padded shape "
                        f"[{','.join(map(str, full))}]",
                    )
                batch[(j,) + tuple(slice(0, n) for n in e.shape)] = e
            out.append(batch)
        return tuple(out)


class _Cache(DatasetValue):
    """In memory: the first complete pass is recorded, later passes replay it."""

    def __init__(self, source):
        self.source = source
        self.elements = None

    def iterate(self, state):
        if self.elements is not None:
            for e in self.elements:
                yield tuple(v.copy() for v in e)
            return
        seen = []
        for elem in self.source.iterate(state):
            seen.append(tuple(v.copy() for v in elem))
            yield elem
        self.elements = seen


# -----------------------------------------------------------------------------------------
# Dataset ops
# -----------------------------------------------------------------------------------------


def _variant_infer(o):
    return _VARIANT


def _dataset_op(op_type, inputs, kernel, bind=None, extra_attrs=()):
    op(
        op_type,
        infer=_variant_infer,
        inputs=inputs,
        attrs=tuple(extra_attrs) + _SPEC,
        differentiable=False,
        bind=bind,
        flags=_CPU,
    )(kernel)


_dataset_op(
    "TensorSliceDataset",
    ("components*",),
    lambda xp, *components, output_types, output_shapes: _Slices(components),
)
_dataset_op(
    "TensorDataset",
    ("components*",),
    lambda xp, *components, output_types, output_shapes: _Tensors(components),
)
_dataset_op(
    "RangeDataset",
    ("start", "stop", "step"),
    lambda xp, start, stop, step, *, output_types, output_shapes: _Range(start, stop, step),
)
_dataset_op(
    "BatchDatasetV2",
    ("input_dataset", "batch_size", "drop_remainder"),
    lambda xp, ds, size, drop, *, output_types, output_shapes: _Batch(ds, int(size), bool(drop)),
)
_dataset_op(
    "RepeatDataset",
    ("input_dataset", "count"),
    lambda xp, ds, count, *, output_types, output_shapes: _Repeat(ds, int(count)),
)
_dataset_op(
    "TakeDataset",
    ("input_dataset", "count"),
    lambda xp, ds, count, *, output_types, output_shapes: _TakeSkip(ds, int(count), True),
)
_dataset_op(
    "SkipDataset",
    ("input_dataset", "count"),
    lambda xp, ds, count, *, output_types, output_shapes: _TakeSkip(ds, int(count), False),
)
_dataset_op(
    "PrefetchDataset",
    ("input_dataset", "buffer_size"),
    lambda xp, ds, size, *, output_types, output_shapes: ds,
)
_dataset_op(
    "ZipDataset",
    ("input_datasets*",),
    lambda xp, *dss, output_types, output_shapes: _Zip(list(dss)),
)


def _shuffle_kernel(
    xp, ds, size, seed, seed2, *, output_types, output_shapes, reshuffle_each_iteration=True
):
    return _Shuffle(ds, int(size), (int(seed), int(seed2)), bool(reshuffle_each_iteration))


_dataset_op(
    "ShuffleDataset",
    ("input_dataset", "buffer_size", "seed", "seed2"),
    _shuffle_kernel,
    extra_attrs=(Attr("reshuffle_each_iteration", "bool", default=True),),
)


def _map_bind(o, ctx):
    return {"map_fn": ctx.compile_function(o._attrs["f"])}


_dataset_op(
    "MapDataset",
    ("input_dataset", "other_arguments*"),
    lambda xp, ds, *captures, f, output_types, output_shapes, map_fn: _Map(
        ds, map_fn, captures, output_types
    ),
    bind=_map_bind,
    extra_attrs=(Attr("f", "func"),),
)


def _predicate_bind(o, ctx):
    return {"fn": ctx.compile_function(o._attrs["predicate"])}


_dataset_op(
    "FilterDataset",
    ("input_dataset", "other_arguments*"),
    lambda xp, ds, *captures, predicate, output_types, output_shapes, fn: _Filter(ds, fn, captures),
    bind=_predicate_bind,
    extra_attrs=(Attr("predicate", "func"),),
)
_dataset_op(
    "FlatMapDataset",
    ("input_dataset", "other_arguments*"),
    lambda xp, ds, *captures, f, output_types, output_shapes, map_fn: _FlatMap(
        ds, map_fn, captures
    ),
    bind=_map_bind,
    extra_attrs=(Attr("f", "func"),),
)


def _padded_batch_kernel(xp, ds, size, drop, *rest, output_types, output_shapes):
    n = len(output_types)
    return _PaddedBatch(ds, int(size), rest[:n], rest[n:], bool(drop))


_dataset_op(
    "PaddedBatchDatasetV2",
    ("input_dataset", "batch_size", "drop_remainder", "padded_shapes_then_padding_values*"),
    _padded_batch_kernel,
)
_dataset_op(
    "CacheDataset",
    ("input_dataset", "filename"),
    lambda xp, ds, filename, *, output_types, output_shapes: _Cache(ds),
)


# -----------------------------------------------------------------------------------------
# Iterators: per-session state
# -----------------------------------------------------------------------------------------


class IteratorState:
    """One iterator in one session: the current pass and how often each shuffle ran."""

    def __init__(self, name):
        self.name = name
        self.generator = None
        self._epochs: dict[int, int] = {}

    def start(self, dataset: DatasetValue) -> None:
        self._epochs = {}
        self.generator = dataset.iterate(self)

    def shuffle_rng(self, shuffle: _Shuffle):
        """A seeded shuffle repeats its orders after each (re)initialization and, with
        ``reshuffle_each_iteration``, uses a new order in every epoch of a repeat, as TF's
        does; an unseeded one is fresh every time."""
        epoch = self._epochs.get(id(shuffle), 0)
        self._epochs[id(shuffle)] = epoch + 1
        seed, seed2 = shuffle.seeds
        if (seed, seed2) == (0, 0):
            return np.random.default_rng()
        return np.random.default_rng([seed, seed2, epoch if shuffle.reshuffle else 0])


_STATES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _state_bind(o, ctx):
    per_session = _STATES.setdefault(ctx.session, {})
    state = per_session.get(o)
    if state is None:
        state = per_session[o] = IteratorState(o.name)
    return {"iterator_state": state}


op(
    "IteratorV2",
    infer=lambda o: _RESOURCE,
    attrs=(Attr("shared_name", "string", default=""),) + _SPEC,
    differentiable=False,
    bind=_state_bind,
    flags=_STATEFUL_CPU,
)(lambda xp, *, shared_name="", output_types, output_shapes, iterator_state: iterator_state)


def _make_iterator(xp, dataset, state):
    state.start(dataset)


op(
    "MakeIterator",
    infer=lambda o: [],
    differentiable=False,
    inputs=("dataset", "iterator"),
    flags=_STATEFUL_CPU,
)(_make_iterator)


def _one_shot(xp, dataset, *, output_types, output_shapes, iterator_state):
    if iterator_state.generator is None:
        iterator_state.start(dataset)
    return iterator_state


op(
    "OneShotIterator",
    infer=lambda o: _RESOURCE,
    attrs=_SPEC,
    differentiable=False,
    bind=_state_bind,
    inputs=("dataset",),
    flags=_STATEFUL_CPU,
)(_one_shot)


def _get_next_infer(o):
    return [(t, s) for t, s in zip(o._attrs["output_types"], o._attrs["output_shapes"])]


def _get_next(xp, state, *, output_types, output_shapes):
    if state.generator is None:
        raise errors.FailedPreconditionError(
            None,
            None,
            "GetNext() failed because the iterator has not been initialized. Ensure that you "
            "have run the initializer operation for this iterator before getting the next "
            "element.",
        )
    try:
        elem = next(state.generator)
    except StopIteration:
        raise errors.OutOfRangeError(None, None, "End of sequence") from None
    out = []
    for v, t, s in zip(elem, output_types, output_shapes):
        v = np.asarray(v)
        if v.dtype != t.np and not (t is dtypes.string and v.dtype.kind in "OSU"):
            raise errors.InvalidArgumentError(
                None, None, f"Dataset element has dtype {v.dtype}, expected {t.name}"
            )
        if not s.is_compatible_with(v.shape):
            raise errors.InvalidArgumentError(
                None,
                None,
                f"Dataset element has shape {list(v.shape)}, incompatible with {s}",
            )
        out.append(v.astype(object) if t is dtypes.string else v)
    return out[0] if len(out) == 1 else tuple(out)


op(
    "IteratorGetNext",
    infer=_get_next_infer,
    attrs=_SPEC,
    differentiable=False,
    inputs=("iterator",),
    flags=_STATEFUL_CPU,
)(_get_next)
