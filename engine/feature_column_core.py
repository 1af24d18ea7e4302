"""TF 1.15's ``tf.feature_column`` (v1): the column base classes, the builder that caches
transformed features, and the numeric and bucketized columns.

A column is an immutable namedtuple (hashable, comparable, usable as a dict key as in TF).
``_LazyBuilder(features).get(key)`` returns a raw feature (rank 1 expanded to rank 2) for a
string key, or a column's transformed feature (computed once per builder) for a column key.
The categorical columns are in ``engine/feature_column_categorical.py``; the dense
columns and the layers built on these are in ``engine/feature_column_dense.py``.
"""

from __future__ import annotations

import collections

from engine import dtypes
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import name_scope
from engine.framework.sparse_tensor import SparseTensor, SparseTensorValue
from engine.ops import array as array_ops
from engine.ops import array_transform, slicing
from engine.ops import math as math_ops
from engine.ops._common import create
from engine.ops.segment_ops import gather_nd
from engine.parsing import FixedLenFeature
from engine.sparse_api import sparse_reshape
from engine.tensor_shape import TensorShape

__all__ = [
    "IdWeightPair",
    "bucketize",
    "bucketized_column",
    "numeric_column",
    "sparse_rows",
    "to_sparse_input",
]


class _FeatureColumn:
    """A feature column: ``name``, ``_parse_example_spec`` and ``_transform_feature``.
    Columns sort by their string form, as TF's do (``sorted(columns)`` works)."""

    __slots__ = ()

    @property
    def _var_scope_name(self) -> str:
        return self.name

    def __lt__(self, other):
        return str(self) < str(other)

    def __gt__(self, other):
        return str(self) > str(other)


class _DenseColumn(_FeatureColumn):
    """A column ``input_layer`` accepts: ``_variable_shape`` and ``_get_dense_tensor``."""

    __slots__ = ()


IdWeightPair = collections.namedtuple("IdWeightPair", ["id_tensor", "weight_tensor"])


class _CategoricalColumn(_FeatureColumn):
    """A column of sparse int64 ids in ``[0, _num_buckets)``: ``_get_sparse_tensors``."""

    __slots__ = ()
    IdWeightPair = IdWeightPair

    def _get_sparse_tensors(self, inputs, weight_collections=None, trainable=None):
        del weight_collections, trainable
        return IdWeightPair(inputs.get(self), None)


def _convert_feature(value):
    """A feature as a Tensor or SparseTensor (SparseTensorValues and arrays converted)."""
    if isinstance(value, SparseTensorValue):
        return SparseTensor.from_value(value)
    if isinstance(value, SparseTensor):
        return value
    return convert_to_tensor(value)


class _LazyBuilder:
    """Caches raw features (rank 1 expanded to ``[batch, 1]``) and transformed columns."""

    def __init__(self, features):
        self._features = dict(features)
        self._feature_tensors = {}

    def get(self, key):
        """The raw feature ``key`` (a str) or the transformed column ``key``."""
        if key in self._feature_tensors:
            return self._feature_tensors[key]
        if key in self._features:
            tensor = self._raw_feature(key)
            self._feature_tensors[key] = tensor
            return tensor
        if isinstance(key, str):
            raise ValueError(f"Feature {key} is not in features dictionary.")
        if not isinstance(key, _FeatureColumn):
            raise TypeError(f'"key" must be either a "str" or "_FeatureColumn". Provided: {key}')
        transformed = key._transform_feature(self)
        if transformed is None:
            raise ValueError(f"Column {key.name} is not supported.")
        self._feature_tensors[key] = transformed
        return transformed

    def _raw_feature(self, key):
        tensor = _convert_feature(self._features[key])
        if isinstance(tensor, SparseTensor):
            shape_shape = tensor.dense_shape.shape
            rank = None if shape_shape.rank is None else shape_shape.as_list()[0]
        else:
            rank = tensor.shape.rank
        if rank == 0:
            raise ValueError(f"Feature (key: {key}) cannot have rank 0. Given: {tensor}")
        if rank is None:
            return _at_least_rank_2(tensor)
        if rank != 1:
            return tensor
        if isinstance(tensor, SparseTensor):
            return sparse_rows(tensor, 1)
        return array_ops.expand_dims(tensor, -1)


def _at_least_rank_2(tensor):
    """A feature of unknown rank with a unit dimension appended when its rank is 1 (TF's
    ``cond(rank == 1, expand_dims, identity)``): its shape padded with ones to rank 2."""
    is_sparse = isinstance(tensor, SparseTensor)
    shape = tensor.dense_shape if is_sparse else array_ops.shape(tensor, out_type=dtypes.int64)
    missing = math_ops.maximum(2 - array_ops.size(shape), 0)
    padded = array_transform.concat([shape, array_ops.ones([missing], dtypes.int64)], 0)
    return sparse_reshape(tensor, padded) if is_sparse else array_ops.reshape(tensor, padded)


def sparse_rows(sp: SparseTensor, width: int = -1) -> SparseTensor:
    """``sp`` reshaped to ``[its first dimension, width]`` (TF's
    ``sparse_reshape(sp, [shape(sp)[0], width])``)."""
    rows = slicing.gather(sp.dense_shape, 0)
    return sparse_reshape(sp, array_transform.stack([rows, math_ops.cast(width, dtypes.int64)]))


def to_sparse_input(input_tensor, ignore_value=None):
    """``input_tensor`` as a SparseTensor: unchanged when sparse, else its cells that are not
    ``ignore_value`` ('' for strings, -1 for integers, 0 otherwise)."""
    input_tensor = _convert_feature(input_tensor)
    if isinstance(input_tensor, SparseTensor):
        return input_tensor
    with name_scope(None, "to_sparse_input", [input_tensor]):
        dtype = input_tensor.dtype.base_dtype
        if ignore_value is None:
            ignore_value = "" if dtype is dtypes.string else (-1 if dtype.is_integer else 0)
        if dtype is dtypes.string:
            ignore = convert_to_tensor(ignore_value, dtype=dtype, name="ignore_value")
        else:
            ignore = math_ops.cast(ignore_value, dtype, name="ignore_value")
        indices = math_ops.where(math_ops.not_equal(input_tensor, ignore), name="indices")
        return SparseTensor(
            indices=indices,
            values=gather_nd(input_tensor, indices, name="values"),
            dense_shape=array_ops.shape(input_tensor, out_type=dtypes.int64, name="dense_shape"),
        )


def _assert_key_is_string(key) -> None:
    if not isinstance(key, str):
        raise ValueError(f"key must be a string. Got: type {type(key)}. Given key: {key}.")


# -- numeric and bucketized --------------------------------------------------------------


class _NumericColumn(
    _DenseColumn,
    collections.namedtuple(
        "_NumericColumn", ["key", "shape", "default_value", "dtype", "normalizer_fn"]
    ),
):
    """See ``numeric_column``."""

    @property
    def name(self) -> str:
        return self.key

    @property
    def _parse_example_spec(self) -> dict:
        return {self.key: FixedLenFeature(self.shape, self.dtype, self.default_value)}

    def _transform_feature(self, inputs):
        input_tensor = inputs.get(self.key)
        if isinstance(input_tensor, SparseTensor):
            raise ValueError(
                "The corresponding Tensor of numerical column must be a Tensor. "
                f"SparseTensor is not supported. key: {self.key}"
            )
        if self.normalizer_fn is not None:
            input_tensor = self.normalizer_fn(input_tensor)
        return math_ops.cast(input_tensor, dtypes.float32)

    @property
    def _variable_shape(self) -> TensorShape:
        return TensorShape(self.shape)

    def _get_dense_tensor(self, inputs, weight_collections=None, trainable=None):
        del weight_collections, trainable
        return inputs.get(self)


def _check_shape(shape, key) -> tuple:
    if not isinstance(shape, (list, tuple)):
        shape = [shape]
    shape = tuple(shape)
    for dim in shape:
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise TypeError(f"shape dimensions must be integer. shape: {shape}, key: {key}")
        if dim < 1:
            raise ValueError(f"shape dimensions must be greater than 0. shape: {shape}, key: {key}")
    return shape


def _nested_shape(value) -> tuple:
    if isinstance(value, (list, tuple)):
        inner = {_nested_shape(v) for v in value}
        return (len(value), *inner.pop()) if len(inner) == 1 else (len(value), -1)
    return ()


def _flatten(value) -> list:
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flatten(v)]
    return [value]


def _as_tuple(value):
    return tuple(_as_tuple(v) for v in value) if isinstance(value, (list, tuple)) else value


def _check_default_value(shape: tuple, default_value, dtype, key):
    """TF's ``check_default_value``: a scalar fills ``shape``; a nested list must have it."""
    if default_value is None:
        return None
    scalar_ok = isinstance(default_value, int) or (
        isinstance(default_value, float) and dtype.is_floating
    )
    if scalar_ok and not isinstance(default_value, bool):
        value = default_value
        for dim in reversed(shape):
            value = tuple([value] * dim)
        return value
    if callable(getattr(default_value, "tolist", None)):
        default_value = default_value.tolist()
    if isinstance(default_value, (list, tuple)):
        if _nested_shape(default_value) != tuple(shape):
            raise ValueError(
                "The shape of default_value must be equal to given shape. "
                f"default_value: {default_value}, shape: {shape}, key: {key}"
            )
        flat = _flatten(default_value)
        if all(isinstance(v, int) for v in flat) or (
            any(isinstance(v, float) for v in flat) and dtype.is_floating
        ):
            return _as_tuple(default_value)
    raise TypeError(
        "default_value must be compatible with dtype. "
        f"default_value: {default_value}, dtype: {dtype}, key: {key}"
    )


def numeric_column(key, shape=(1,), default_value=None, dtype=dtypes.float32, normalizer_fn=None):
    """A dense float feature of ``shape`` per example (cast to float32 after
    ``normalizer_fn``); parsed as ``FixedLenFeature(shape, dtype, default_value)``.

    >>> price = numeric_column("price", shape=(2,), default_value=0.0)
    """
    shape = _check_shape(shape, key)
    dtype = dtypes.as_dtype(dtype)
    if not (dtype.is_integer or dtype.is_floating):
        raise ValueError(f"dtype must be convertible to float. dtype: {dtype}, key: {key}")
    default_value = _check_default_value(shape, default_value, dtype, key)
    if normalizer_fn is not None and not callable(normalizer_fn):
        raise TypeError(f"normalizer_fn must be a callable. Given: {normalizer_fn}")
    _assert_key_is_string(key)
    return _NumericColumn(key, shape, default_value, dtype, normalizer_fn)


def bucketize(input_tensor, boundaries, name=None):
    """TF's ``Bucketize``: the number of ``boundaries`` <= each value (int32)."""
    with name_scope(name, "Bucketize", [input_tensor]) as scope:
        x = convert_to_tensor(input_tensor)
        attrs = {"boundaries": [float(b) for b in boundaries]}
        return create("Bucketize", [x], attrs, scope).outputs[0]


class _BucketizedColumn(
    _DenseColumn,
    _CategoricalColumn,
    collections.namedtuple("_BucketizedColumn", ["source_column", "boundaries"]),
):
    """See ``bucketized_column``."""

    @property
    def name(self) -> str:
        return f"{self.source_column.name}_bucketized"

    @property
    def _parse_example_spec(self) -> dict:
        return self.source_column._parse_example_spec

    def _transform_feature(self, inputs):
        return bucketize(inputs.get(self.source_column), self.boundaries)

    @property
    def _variable_shape(self) -> TensorShape:
        return TensorShape(tuple(self.source_column.shape) + (len(self.boundaries) + 1,))

    def _get_dense_tensor(self, inputs, weight_collections=None, trainable=None):
        del weight_collections, trainable
        ids = math_ops.cast(inputs.get(self), dtypes.int64)
        return array_ops.one_hot(ids, depth=len(self.boundaries) + 1, on_value=1.0, off_value=0.0)

    @property
    def _num_buckets(self) -> int:
        return (len(self.boundaries) + 1) * self.source_column.shape[0]

    def _get_sparse_tensors(self, inputs, weight_collections=None, trainable=None):
        """Bucket ids offset by ``(len(boundaries) + 1) * position`` per source value."""
        del weight_collections, trainable
        input_tensor = inputs.get(self)
        batch_size = array_ops.shape(input_tensor)[0]
        source_dimension = self.source_column.shape[0]
        rows = array_ops.expand_dims(array_ops.range(0, batch_size), 1)
        i1 = array_ops.reshape(array_transform.tile(rows, [1, source_dimension]), (-1,))
        i2 = array_transform.tile(array_ops.range(0, source_dimension), [batch_size])
        bucket_indices = array_ops.reshape(input_tensor, (-1,)) + (len(self.boundaries) + 1) * i2
        indices = math_ops.cast(array_ops.transpose(array_transform.stack((i1, i2))), dtypes.int64)
        dense_shape = math_ops.cast(
            array_transform.stack([batch_size, source_dimension]), dtypes.int64
        )
        return IdWeightPair(SparseTensor(indices, bucket_indices, dense_shape), None)


def bucketized_column(source_column, boundaries):
    """The bucket (among sorted ``boundaries``) of each value of a numeric column: one-hot
    in ``input_layer``, ids ``bucket + (len(boundaries) + 1) * position`` when categorical.

    >>> age_buckets = bucketized_column(numeric_column("age"), [18, 25, 30])
    """
    if not isinstance(source_column, _NumericColumn):
        raise ValueError(
            "source_column must be a column generated with numeric_column(). "
            f"Given: {source_column}"
        )
    if len(source_column.shape) > 1:
        raise ValueError(f"source_column must be one-dimensional column. Given: {source_column}")
    if not boundaries:
        raise ValueError("boundaries must not be empty.")
    if not isinstance(boundaries, (list, tuple)):
        raise ValueError("boundaries must be a sorted list.")
    if any(a >= b for a, b in zip(boundaries, boundaries[1:])):
        raise ValueError("boundaries must be a sorted list.")
    return _BucketizedColumn(source_column, tuple(boundaries))
