"""TF1's ``tf.data`` in graph mode: ``Dataset`` pipelines of dataset ops and iterators.

>>> ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(100, seed=1).batch(32).repeat(2)
>>> features, labels = ds.make_one_shot_iterator().get_next()
>>> while True:
...     try:
...         sess.run(train, ...)        # each run takes the next batch
...     except tf.errors.OutOfRangeError:
...         break
"""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.framework.constant_op import convert_to_tensor
from engine.framework.func_graph import FuncGraph
from engine.framework.graph import Tensor, get_default_graph, name_scope
from engine.framework.tensor_util import constant_value
from engine.ops import dataset_ops  # noqa: F401 - registers the ops
from engine.ops._common import create
from engine.ops.control_flow import _as_output
from engine.ops.random import get_seed
from engine.tensor_shape import TensorShape, unknown_shape
from engine.util import nest

__all__ = [
    "Dataset",
    "Iterator",
    "make_one_shot_iterator",
    "make_initializable_iterator",
]


def _normalize(value):
    """As tf.data reads an element: tuples, namedtuples and dicts are structure; anything
    else (lists included) is one tensor."""
    if isinstance(value, dict):
        return {k: _normalize(v) for k, v in value.items()}
    if isinstance(value, tuple):
        items = [_normalize(v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    return convert_to_tensor(value)


def _structure_tensors(value):
    """``value`` (a nest of tensors/arrays) as (structure, flat tensors)."""
    structure = _normalize(value)
    return structure, nest.flatten(structure)


class Dataset:
    """A pipeline stage: a variant tensor plus the structure, dtypes and shapes of its
    elements. Build with ``from_tensor_slices``, ``from_tensors``, ``range`` or ``zip``."""

    def __init__(self, variant: Tensor, structure, types, shapes):
        self._variant = variant
        self._structure = structure
        self._types = list(types)
        self._shapes = [TensorShape(s) if not isinstance(s, TensorShape) else s for s in shapes]

    # -- element specs --------------------------------------------------------------------
    @property
    def output_types(self):
        return nest.pack_sequence_as(self._structure, self._types)

    @property
    def output_shapes(self):
        return nest.pack_sequence_as(self._structure, self._shapes)

    @property
    def output_classes(self):
        return nest.pack_sequence_as(self._structure, [Tensor] * len(self._types))

    def _attrs(self, types=None, shapes=None):
        return {
            "output_types": list(types if types is not None else self._types),
            "output_shapes": list(shapes if shapes is not None else self._shapes),
        }

    def _derive(self, op_type, inputs, attrs=None, structure=None, types=None, shapes=None):
        a = self._attrs(types, shapes)
        a.update(attrs or {})
        o = create(op_type, inputs, a, op_type)
        return Dataset(
            o.outputs[0],
            self._structure if structure is None else structure,
            self._types if types is None else types,
            self._shapes if shapes is None else shapes,
        )

    # -- sources --------------------------------------------------------------------------
    @staticmethod
    def from_tensor_slices(tensors) -> Dataset:
        """One element per row (first dimension) of every component of ``tensors``."""
        with name_scope(None, "TensorSliceDataset"):
            structure, flat = _structure_tensors(tensors)
            if not flat:
                raise ValueError("from_tensor_slices needs at least one component")
            shapes = []
            for t in flat:
                if t.shape.rank == 0:
                    raise ValueError(f"Unbatching a tensor is only supported for rank >= 1: {t}")
                shapes.append(t.shape[1:] if t.shape.rank is not None else unknown_shape())
            first = {t.shape.as_tuple()[0] for t in flat if t.shape.rank is not None}
            first.discard(None)
            if len(first) > 1:
                raise ValueError(f"Dimensions {sorted(first)} of the components must all be equal")
            types = [t.dtype.base_dtype for t in flat]
            o = create(
                "TensorSliceDataset",
                flat,
                {"output_types": types, "output_shapes": shapes},
                "TensorSliceDataset",
            )
            return Dataset(o.outputs[0], structure, types, shapes)

    @staticmethod
    def from_tensors(tensors) -> Dataset:
        """One element: ``tensors`` itself."""
        structure, flat = _structure_tensors(tensors)
        types = [t.dtype.base_dtype for t in flat]
        shapes = [t.shape for t in flat]
        o = create(
            "TensorDataset", flat, {"output_types": types, "output_shapes": shapes}, "TensorDataset"
        )
        return Dataset(o.outputs[0], structure, types, shapes)

    @staticmethod
    def range(*args) -> Dataset:  # noqa: A003 - TF's name
        """int64 scalars like Python's ``range(start, stop, step)``."""
        if not 1 <= len(args) <= 3:
            raise ValueError(f"range takes 1 to 3 arguments, got {len(args)}")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (*args, 1)[:3]
        ins = [convert_to_tensor(v, dtype=dtypes.int64) for v in (start, stop, step)]
        o = create(
            "RangeDataset",
            ins,
            {"output_types": [dtypes.int64], "output_shapes": [TensorShape([])]},
            "RangeDataset",
        )
        return Dataset(o.outputs[0], dtypes.int64, [dtypes.int64], [TensorShape([])])

    @staticmethod
    def zip(datasets) -> Dataset:  # noqa: A003
        """Elements of each dataset side by side, as the structure of ``datasets``."""
        parts = nest.flatten(datasets) if not isinstance(datasets, Dataset) else [datasets]
        if not all(isinstance(d, Dataset) for d in parts):
            raise TypeError("zip expects a (nested) structure of Datasets")
        types = [t for d in parts for t in d._types]
        shapes = [s for d in parts for s in d._shapes]
        structure = nest.map_structure(lambda d: d._structure, datasets)
        o = create(
            "ZipDataset",
            [d._variant for d in parts],
            {"output_types": types, "output_shapes": shapes},
            "ZipDataset",
        )
        return Dataset(o.outputs[0], structure, types, shapes)

    # -- transformations ------------------------------------------------------------------
    def map(self, map_func, num_parallel_calls=None) -> Dataset:  # noqa: A003
        """Applies ``map_func`` (a graph-building function of one element) to each element."""
        del num_parallel_calls
        outer = get_default_graph()
        fg = FuncGraph("dataset_map_fn", outer)
        with fg.as_default():
            args = [fg.add_arg(t, s, "element") for t, s in zip(self._types, self._shapes)]
            elem = nest.pack_sequence_as(self._structure, args)
            if isinstance(self._structure, tuple) and not hasattr(self._structure, "_fields"):
                result = map_func(*elem)
            else:
                result = map_func(elem)
            flat = [_as_output(v, fg, "output") for v in nest.flatten(result)]
            fg.outputs = flat
        types = [t.dtype.base_dtype for t in flat]
        shapes = [t.shape for t in flat]
        return self._derive(
            "MapDataset",
            [self._variant] + list(fg.external_captures),
            {"f": fg},
            structure=result,
            types=types,
            shapes=shapes,
        )

    def _element_function(self, name, fn):
        """``fn`` of one element built as a function graph: (graph, result)."""
        fg = FuncGraph(name, get_default_graph())
        with fg.as_default():
            args = [fg.add_arg(t, s, "element") for t, s in zip(self._types, self._shapes)]
            elem = nest.pack_sequence_as(self._structure, args)
            if isinstance(self._structure, tuple) and not hasattr(self._structure, "_fields"):
                result = fn(*elem)
            else:
                result = fn(elem)
        return fg, result

    def filter(self, predicate) -> Dataset:  # noqa: A003 - TF's name
        """The elements for which ``predicate`` (a function of one element returning a scalar
        bool tensor) is true."""
        fg, result = self._element_function("dataset_filter_fn", predicate)
        with fg.as_default():
            keep = convert_to_tensor(result)
            if keep.dtype.base_dtype is not dtypes.bool or keep.shape.rank not in (None, 0):
                raise ValueError(
                    f"`predicate` return type must be convertible to a scalar boolean tensor. "
                    f"Was {keep.dtype.base_dtype.name} of shape {keep.shape}."
                )
            fg.outputs = [_as_output(keep, fg, "keep")]
        return self._derive(
            "FilterDataset", [self._variant] + list(fg.external_captures), {"predicate": fg}
        )

    def flat_map(self, map_func) -> Dataset:
        """The elements of the datasets ``map_func`` returns for each element, in order."""
        fg, inner = self._element_function("dataset_flat_map_fn", map_func)
        if not isinstance(inner, Dataset):
            raise TypeError(f"`map_func` must return a `Dataset` object. Got {type(inner)}")
        with fg.as_default():
            fg.outputs = [inner._variant]
        return self._derive(
            "FlatMapDataset",
            [self._variant] + list(fg.external_captures),
            {"f": fg},
            structure=inner._structure,
            types=inner._types,
            shapes=inner._shapes,
        )

    def padded_batch(
        self, batch_size, padded_shapes=None, padding_values=None, drop_remainder=False
    ) -> Dataset:
        """Batches of ``batch_size`` whose components are padded to ``padded_shapes`` (a
        structure like the elements' of shapes; None or -1 dims pad to the longest in each
        batch; default: every dim) with ``padding_values`` (default 0)."""
        n = len(self._types)
        if padded_shapes is None:
            shape_list = [unknown_shape(s.rank) if s.rank is not None else None
                          for s in self._shapes]  # fmt: skip
            if any(s is None for s in shape_list):
                raise ValueError("padded_batch needs padded_shapes for elements of unknown rank")
        else:
            shape_list = _flatten_like(self._structure, padded_shapes, "padded_shapes")
        pads, static = [], []
        for k, (ps, have) in enumerate(zip(shape_list, self._shapes)):
            ps = TensorShape(ps) if not isinstance(ps, TensorShape) else ps
            if ps.rank is None or (have.rank is not None and have.rank != ps.rank):
                raise ValueError(
                    f"The padded shape {ps} is not compatible with the shape {have} of the "
                    f"corresponding input component {k}."
                )
            dims = [-1 if d is None else int(d) for d in ps.as_list()]
            for d, h in zip(dims, have.as_list() if have.rank is not None else [None] * ps.rank):
                if d >= 0 and h is not None and h > d:
                    raise ValueError(
                        f"The padded shape {ps} is not compatible with the shape {have} of the "
                        f"corresponding input component {k}."
                    )
            pads.append(convert_to_tensor(np.array(dims, np.int64), name="padded_shape"))
            static.append(ps)
        if padding_values is None:
            values = [convert_to_tensor(np.zeros((), t.np), name="padding_value")
                      for t in self._types]  # fmt: skip
        else:
            flat = _flatten_like(self._structure, padding_values, "padding_values")
            values = [
                convert_to_tensor(np.zeros((), t.np) if v is None else v, dtype=t,
                                  name="padding_value")
                for v, t in zip(flat, self._types)
            ]  # fmt: skip
        size = convert_to_tensor(batch_size, dtype=dtypes.int64, name="batch_size")
        drop = convert_to_tensor(bool(drop_remainder), name="drop_remainder")
        known = constant_value(size)
        lead = int(known) if drop_remainder and known is not None else None
        shapes = [TensorShape([lead]).concatenate(s) for s in static]
        del n
        return self._derive(
            "PaddedBatchDatasetV2", [self._variant, size, drop] + pads + values, shapes=shapes
        )

    def cache(self, filename="") -> Dataset:
        """The elements, computed on the first complete pass and replayed from memory after.
        Only the in-memory cache is supported: a ``filename`` raises ValueError."""
        if filename:
            raise ValueError(
                "Dataset.cache(filename) is not supported: the engine caches in memory only "
                "(call cache() without a filename)"
            )
        f = convert_to_tensor("", dtype=dtypes.string, name="filename")
        return self._derive("CacheDataset", [self._variant, f])

    def batch(self, batch_size, drop_remainder=False) -> Dataset:
        """Consecutive elements stacked into batches of ``batch_size``."""
        size = convert_to_tensor(batch_size, dtype=dtypes.int64, name="batch_size")
        drop = convert_to_tensor(bool(drop_remainder), name="drop_remainder")
        static = constant_value(size)
        lead = int(static) if drop_remainder and static is not None else None
        shapes = [TensorShape([lead]).concatenate(s) for s in self._shapes]
        return self._derive("BatchDatasetV2", [self._variant, size, drop], shapes=shapes)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None) -> Dataset:
        """Elements drawn at random from a buffer of ``buffer_size``."""
        s1, s2 = get_seed(seed)
        ins = [
            self._variant,
            convert_to_tensor(buffer_size, dtype=dtypes.int64, name="buffer_size"),
            convert_to_tensor(s1 or 0, dtype=dtypes.int64, name="seed"),
            convert_to_tensor(s2 or 0, dtype=dtypes.int64, name="seed2"),
        ]
        reshuffle = True if reshuffle_each_iteration is None else bool(reshuffle_each_iteration)
        return self._derive("ShuffleDataset", ins, {"reshuffle_each_iteration": reshuffle})

    def repeat(self, count=None) -> Dataset:
        """The dataset ``count`` times (forever when None or -1)."""
        c = convert_to_tensor(-1 if count is None else count, dtype=dtypes.int64, name="count")
        return self._derive("RepeatDataset", [self._variant, c])

    def take(self, count) -> Dataset:
        c = convert_to_tensor(count, dtype=dtypes.int64, name="count")
        return self._derive("TakeDataset", [self._variant, c])

    def skip(self, count) -> Dataset:
        c = convert_to_tensor(count, dtype=dtypes.int64, name="count")
        return self._derive("SkipDataset", [self._variant, c])

    def prefetch(self, buffer_size) -> Dataset:
        """The same elements (the engine computes them on demand)."""
        b = convert_to_tensor(buffer_size, dtype=dtypes.int64, name="buffer_size")
        return self._derive("PrefetchDataset", [self._variant, b])

    # -- iterators ------------------------------------------------------------------------
    def make_one_shot_iterator(self) -> Iterator:
        """An iterator that starts on its first ``get_next`` and cannot be re-initialized."""
        o = create("OneShotIterator", [self._variant], self._attrs(), "OneShotIterator")
        return Iterator(o.outputs[0], None, self)

    def make_initializable_iterator(self, shared_name=None) -> Iterator:
        """An iterator started (and restarted) by running ``iterator.initializer``."""
        attrs = self._attrs()
        attrs["shared_name"] = shared_name or ""
        handle = create("IteratorV2", [], attrs, "Iterator").outputs[0]
        init = create("MakeIterator", [self._variant, handle], {}, "MakeIterator")
        return Iterator(handle, init, self)


def _flatten_like(structure, value, what):
    """``value``, shaped like the element ``structure`` (whose lists are leaves, as padded
    shapes are lists), flattened in ``nest.flatten``'s order."""
    if isinstance(structure, dict):
        if not isinstance(value, dict) or set(value) != set(structure):
            raise ValueError(f"`{what}` must have the structure of the dataset's elements")
        return [v for k in sorted(structure) for v in _flatten_like(structure[k], value[k], what)]
    if isinstance(structure, tuple):
        if not isinstance(value, (tuple, list)) or len(value) != len(structure):
            raise ValueError(f"`{what}` must have the structure of the dataset's elements")
        return [v for s, x in zip(structure, value) for v in _flatten_like(s, x, what)]
    return [value]


class Iterator:
    """TF1's ``tf.data.Iterator``: ``get_next()`` and, when initializable, ``initializer``."""

    def __init__(self, handle, initializer, dataset: Dataset):
        self._handle = handle
        self._initializer = initializer
        self._dataset = dataset

    @property
    def initializer(self):
        if self._initializer is None:
            raise ValueError("Iterator does not have an initializer (it is one-shot).")
        return self._initializer

    @property
    def output_types(self):
        return self._dataset.output_types

    @property
    def output_shapes(self):
        return self._dataset.output_shapes

    def get_next(self, name=None):
        """The next element (a structure of tensors); running it past the end raises
        ``OutOfRangeError``."""
        d = self._dataset
        o = create("IteratorGetNext", [self._handle], d._attrs(), name or "IteratorGetNext")
        return nest.pack_sequence_as(d._structure, list(o.outputs))


def make_one_shot_iterator(dataset: Dataset) -> Iterator:
    return dataset.make_one_shot_iterator()


def make_initializable_iterator(dataset: Dataset, shared_name=None) -> Iterator:
    return dataset.make_initializable_iterator(shared_name)


class experimental:  # noqa: N801 - TF's namespace
    AUTOTUNE = -1
