"""TF 1.15's ``tf.feature_column`` (v1): the categorical columns -- hash buckets,
vocabulary lists and files, identity, weighted and crossed columns.

Each turns its input into a ``SparseTensor`` of int64 ids with the ops TF composes, so ids
(and so trained weights) are TF's to the bit: ``StringToHashBucketFast`` (FarmHash
``Fingerprint64``; integers hashed as their decimal strings) for hash buckets, hash tables
(``HashTableV2`` + ``LookupTableFindV2``, out-of-vocabulary values hashed into
``num_oov_buckets`` after the vocabulary) for vocabularies, and ``SparseCross`` with
``FingerprintCat64`` chains for crosses. Dense inputs become sparse by dropping '' (strings)
or -1 (integers).
"""

from __future__ import annotations

import collections

from engine import dtypes
from engine.feature_column_core import (
    IdWeightPair,
    _assert_key_is_string,
    _CategoricalColumn,
    _convert_feature,
    _FeatureColumn,
    to_sparse_input,
)
from engine.file_io import GFile, exists
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import name_scope
from engine.framework.sparse_tensor import SparseTensor
from engine.ops import array as array_ops
from engine.ops import math as math_ops
from engine.ops._common import create
from engine.ops.lookup import (
    KeyValueTensorInitializer,
    StaticHashTable,
    TextFileIndex,
    TextFileInitializer,
)
from engine.ops.string_hash import string_to_hash_bucket_fast
from engine.ops.string_ops import as_string
from engine.parsing import VarLenFeature

__all__ = [
    "categorical_column_with_hash_bucket",
    "categorical_column_with_identity",
    "categorical_column_with_vocabulary_file",
    "categorical_column_with_vocabulary_list",
    "crossed_column",
    "sparse_cross_hashed",
    "weighted_categorical_column",
]

_DEFAULT_HASH_KEY = 0xDECAFCAFFE  # TF's sparse_cross_hashed default


def _assert_string_or_int(dtype, prefix: str) -> None:
    if dtype is not dtypes.string and not dtype.is_integer:
        raise ValueError(f"{prefix} dtype must be string or integer. dtype: {dtype}.")


def _check_compatible(column, input_tensor) -> None:
    if column.dtype.is_integer != input_tensor.dtype.is_integer:
        raise ValueError(
            "Column dtype and SparseTensors dtype must be compatible. key: "
            f"{column.key}, column dtype: {column.dtype}, tensor dtype: {input_tensor.dtype}"
        )
    _assert_string_or_int(input_tensor.dtype, f"column_name: {column.key} input_tensor")


def _with_values(sp: SparseTensor, values) -> SparseTensor:
    return SparseTensor(sp.indices, values, sp.dense_shape)


# -- hashed, vocabulary and identity columns ------------------------------------------------


class _HashedCategoricalColumn(
    _CategoricalColumn,
    collections.namedtuple("_HashedCategoricalColumn", ["key", "hash_bucket_size", "dtype"]),
):
    """See ``categorical_column_with_hash_bucket``."""

    @property
    def name(self) -> str:
        return self.key

    @property
    def _parse_example_spec(self) -> dict:
        return {self.key: VarLenFeature(self.dtype)}

    def _transform_feature(self, inputs):
        input_tensor = to_sparse_input(inputs.get(self.key))
        _assert_string_or_int(input_tensor.dtype, f"column_name: {self.key} input_tensor")
        _check_compatible(self, input_tensor)
        values = input_tensor.values
        if self.dtype is not dtypes.string:
            values = as_string(values)
        ids = string_to_hash_bucket_fast(values, self.hash_bucket_size, name="lookup")
        return _with_values(input_tensor, ids)

    @property
    def _num_buckets(self) -> int:
        return self.hash_bucket_size


def categorical_column_with_hash_bucket(key, hash_bucket_size, dtype=dtypes.string):
    """Ids ``Fingerprint64(value) % hash_bucket_size`` (ints hashed as their decimal strings).

    >>> words = categorical_column_with_hash_bucket("words", 1000)
    """
    if hash_bucket_size is None:
        raise ValueError(f"hash_bucket_size must be set. key: {key}")
    if hash_bucket_size < 1:
        raise ValueError(
            f"hash_bucket_size must be at least 1. hash_bucket_size: {hash_bucket_size}, key: {key}"
        )
    _assert_key_is_string(key)
    dtype = dtypes.as_dtype(dtype)
    _assert_string_or_int(dtype, f"column_name: {key}")
    return _HashedCategoricalColumn(key, hash_bucket_size, dtype)


def _index_lookup(table, values, num_oov_buckets: int, vocab_size: int, name: str):
    """TF's ``IdTableWithHashBuckets.lookup``: the table's id, else (with OOV buckets)
    ``vocab_size + Fingerprint64(str(value)) % num_oov_buckets``."""
    if not num_oov_buckets:
        return table.lookup(values)
    with name_scope(None, f"{name}_Lookup"):
        text = values if values.dtype.base_dtype is dtypes.string else as_string(values)
        buckets = string_to_hash_bucket_fast(text, num_oov_buckets, name="hash_bucket")
        ids = table.lookup(values)
        buckets = math_ops.add(buckets, math_ops.cast(vocab_size, dtypes.int64))
        known = math_ops.not_equal(ids, math_ops.cast(-1, dtypes.int64))
        return math_ops.where(known, ids, buckets)


def _lookup_input(column, inputs):
    input_tensor = to_sparse_input(inputs.get(column.key))
    _check_compatible(column, input_tensor)
    key_dtype = column.dtype
    if input_tensor.dtype.is_integer:
        key_dtype = dtypes.int64
        input_tensor = _with_values(input_tensor, math_ops.cast(input_tensor.values, dtypes.int64))
    return input_tensor, key_dtype


class _VocabularyListCategoricalColumn(
    _CategoricalColumn,
    collections.namedtuple(
        "_VocabularyListCategoricalColumn",
        ("key", "vocabulary_list", "dtype", "default_value", "num_oov_buckets"),
    ),
):
    """See ``categorical_column_with_vocabulary_list``."""

    @property
    def name(self) -> str:
        return self.key

    @property
    def _parse_example_spec(self) -> dict:
        return {self.key: VarLenFeature(self.dtype)}

    def _transform_feature(self, inputs):
        input_tensor, key_dtype = _lookup_input(self, inputs)
        name = f"{self.key}_lookup"
        with name_scope(None, name):
            keys = convert_to_tensor(list(self.vocabulary_list), dtype=key_dtype)
            ids = math_ops.cast(array_ops.range(len(self.vocabulary_list)), dtypes.int64)
            default = -1 if self.num_oov_buckets else self.default_value
            table = StaticHashTable(KeyValueTensorInitializer(keys, ids), default)
        values = _index_lookup(
            table, input_tensor.values, self.num_oov_buckets, len(self.vocabulary_list), name
        )
        return _with_values(input_tensor, values)

    @property
    def _num_buckets(self) -> int:
        return len(self.vocabulary_list) + self.num_oov_buckets


def _vocabulary_dtype(vocabulary_list, key) -> dtypes.DType:
    if all(isinstance(v, (str, bytes)) for v in vocabulary_list):
        return dtypes.string
    if all(isinstance(v, int) and not isinstance(v, bool) for v in vocabulary_list):
        return dtypes.int64
    # TF's message names the dtype numpy gives the list (float64 for floats).
    kinds = {type(v) for v in vocabulary_list}
    kind = "float64" if kinds <= {int, float} else ("bool" if kinds == {bool} else "mixed")
    raise ValueError(
        f"column_name: {key} vocabulary dtype must be string or integer. dtype: <dtype: '{kind}'>."
    )


def _check_oov(num_oov_buckets, default_value, no_default, key) -> None:
    if num_oov_buckets:
        if default_value != no_default:
            raise ValueError(f"Can't specify both num_oov_buckets and default_value in {key}.")
        if num_oov_buckets < 0:
            raise ValueError(f"Invalid num_oov_buckets {num_oov_buckets} in {key}.")


def categorical_column_with_vocabulary_list(
    key, vocabulary_list, dtype=None, default_value=-1, num_oov_buckets=0
):
    """Ids of values in ``vocabulary_list`` (their positions); other values get
    ``default_value``, or with ``num_oov_buckets`` a hash bucket after the vocabulary.

    >>> colors = categorical_column_with_vocabulary_list("color", ["red", "green"])
    """
    if vocabulary_list is None or len(vocabulary_list) < 1:
        raise ValueError(f"vocabulary_list {vocabulary_list} must be non-empty, column_name: {key}")
    if len(set(vocabulary_list)) != len(vocabulary_list):
        raise ValueError(f"Duplicate keys in vocabulary_list {vocabulary_list}, column_name: {key}")
    vocabulary_dtype = _vocabulary_dtype(vocabulary_list, key)
    _check_oov(num_oov_buckets, default_value, -1, key)
    if dtype is None:
        dtype = vocabulary_dtype
    else:
        dtype = dtypes.as_dtype(dtype)
        if dtype.is_integer != vocabulary_dtype.is_integer:
            raise ValueError(
                f"dtype {dtype} and vocabulary dtype {vocabulary_dtype} do not match, "
                f"column_name: {key}"
            )
    _assert_string_or_int(dtype, f"column_name: {key}")
    _assert_key_is_string(key)
    return _VocabularyListCategoricalColumn(
        key, tuple(vocabulary_list), dtype, default_value, num_oov_buckets
    )


class _VocabularyFileCategoricalColumn(
    _CategoricalColumn,
    collections.namedtuple(
        "_VocabularyFileCategoricalColumn",
        ("key", "vocabulary_file", "vocabulary_size", "num_oov_buckets", "dtype", "default_value"),
    ),
):
    """See ``categorical_column_with_vocabulary_file``."""

    @property
    def name(self) -> str:
        return self.key

    @property
    def _parse_example_spec(self) -> dict:
        return {self.key: VarLenFeature(self.dtype)}

    def _transform_feature(self, inputs):
        input_tensor, key_dtype = _lookup_input(self, inputs)
        name = f"{self.key}_lookup"
        with name_scope(None, name):
            init = TextFileInitializer(
                self.vocabulary_file,
                key_dtype,
                TextFileIndex.WHOLE_LINE,
                dtypes.int64,
                TextFileIndex.LINE_NUMBER,
                vocab_size=self.vocabulary_size,
            )
            default = -1 if self.num_oov_buckets else self.default_value
            table = StaticHashTable(init, default)
        values = _index_lookup(
            table, input_tensor.values, self.num_oov_buckets, self.vocabulary_size, name
        )
        return _with_values(input_tensor, values)

    @property
    def _num_buckets(self) -> int:
        return self.vocabulary_size + self.num_oov_buckets


def categorical_column_with_vocabulary_file(
    key,
    vocabulary_file,
    vocabulary_size=None,
    num_oov_buckets=0,
    default_value=None,
    dtype=dtypes.string,
):
    """``categorical_column_with_vocabulary_list`` over the lines of ``vocabulary_file``
    (the first ``vocabulary_size`` of them; all when None)."""
    if not vocabulary_file:
        raise ValueError(f"Missing vocabulary_file in {key}.")
    if vocabulary_size is None:
        if not exists(vocabulary_file):
            raise ValueError(f"vocabulary_file in {key} does not exist.")
        with GFile(vocabulary_file, mode="rb") as f:
            vocabulary_size = sum(1 for _ in f)
    if vocabulary_size < 1:
        raise ValueError(f"Invalid vocabulary_size in {key}.")
    _check_oov(num_oov_buckets, default_value, None, key)
    dtype = dtypes.as_dtype(dtype)
    _assert_string_or_int(dtype, f"column_name: {key}")
    _assert_key_is_string(key)
    return _VocabularyFileCategoricalColumn(
        key,
        vocabulary_file,
        vocabulary_size,
        0 if num_oov_buckets is None else num_oov_buckets,
        dtype,
        -1 if default_value is None else default_value,
    )


class _IdentityCategoricalColumn(
    _CategoricalColumn,
    collections.namedtuple("_IdentityCategoricalColumn", ("key", "num_buckets", "default_value")),
):
    """See ``categorical_column_with_identity``."""

    @property
    def name(self) -> str:
        return self.key

    @property
    def _parse_example_spec(self) -> dict:
        return {self.key: VarLenFeature(dtypes.int64)}

    def _transform_feature(self, inputs):
        input_tensor = to_sparse_input(inputs.get(self.key))
        if not input_tensor.dtype.is_integer:
            raise ValueError(
                f"Invalid input, not integer. key: {self.key} dtype: {input_tensor.dtype}"
            )
        values = input_tensor.values
        if values.dtype.base_dtype is not dtypes.int64:
            values = math_ops.cast(values, dtypes.int64, name="values")
        if self.default_value is not None:
            num_buckets = math_ops.cast(self.num_buckets, dtypes.int64, name="num_buckets")
            zero = math_ops.cast(0, dtypes.int64, name="zero")
            out_of_range = math_ops.logical_or(
                values < zero, values >= num_buckets, name="out_of_range"
            )
            default = array_ops.fill(
                array_ops.shape(values),
                math_ops.cast(self.default_value, dtypes.int64),
                name="default_values",
            )
            values = math_ops.where(out_of_range, default, values)
        return _with_values(input_tensor, values)

    @property
    def _num_buckets(self) -> int:
        return self.num_buckets


def categorical_column_with_identity(key, num_buckets, default_value=None):
    """Integer ids used as they are, in ``[0, num_buckets)``; out-of-range ids become
    ``default_value`` when given (else they fail the lookups that use them)."""
    if num_buckets < 1:
        raise ValueError(f"num_buckets {num_buckets} < 1, column_name {key}")
    if default_value is not None and (default_value < 0 or default_value >= num_buckets):
        raise ValueError(
            f"default_value {default_value} not in range [0, {num_buckets}), column_name {key}"
        )
    _assert_key_is_string(key)
    return _IdentityCategoricalColumn(key, num_buckets, default_value)


# -- weighted and crossed columns ------------------------------------------------------------


class _WeightedCategoricalColumn(
    _CategoricalColumn,
    collections.namedtuple(
        "_WeightedCategoricalColumn", ("categorical_column", "weight_feature_key", "dtype")
    ),
):
    """See ``weighted_categorical_column``."""

    @property
    def name(self) -> str:
        return f"{self.categorical_column.name}_weighted_by_{self.weight_feature_key}"

    @property
    def _parse_example_spec(self) -> dict:
        config = dict(self.categorical_column._parse_example_spec)
        if self.weight_feature_key in config:
            raise ValueError(
                f"Parse config {config[self.weight_feature_key]} already exists for "
                f"{self.weight_feature_key}."
            )
        config[self.weight_feature_key] = VarLenFeature(self.dtype)
        return config

    @property
    def _num_buckets(self) -> int:
        return self.categorical_column._num_buckets

    def _transform_feature(self, inputs):
        weight_tensor = _convert_feature(inputs.get(self.weight_feature_key))
        if self.dtype != weight_tensor.dtype.base_dtype:
            raise ValueError(f"Bad dtype, expected {self.dtype}, but got {weight_tensor.dtype}.")
        if not isinstance(weight_tensor, SparseTensor):
            weight_tensor = to_sparse_input(weight_tensor, ignore_value=0.0)
        if not weight_tensor.dtype.is_floating:
            values = math_ops.cast(weight_tensor.values, dtypes.float32)
            weight_tensor = _with_values(weight_tensor, values)
        return (inputs.get(self.categorical_column), weight_tensor)

    def _get_sparse_tensors(self, inputs, weight_collections=None, trainable=None):
        del weight_collections, trainable
        ids, weights = inputs.get(self)
        return IdWeightPair(ids, weights)


def weighted_categorical_column(categorical_column, weight_feature_key, dtype=dtypes.float32):
    """``categorical_column``'s ids weighted by the feature ``weight_feature_key`` (same
    indices): weighted sums in ``linear_model``, weighted combiners in embeddings."""
    dtype = None if dtype is None else dtypes.as_dtype(dtype)
    if dtype is None or not (dtype.is_integer or dtype.is_floating):
        raise ValueError(f"dtype {dtype} is not convertible to float.")
    return _WeightedCategoricalColumn(categorical_column, weight_feature_key, dtype)


def sparse_cross_hashed(inputs, num_buckets=0, hash_key=None, name=None) -> SparseTensor:
    """TF's ``sparse_cross_hashed``: the crosses of the sparse and dense ``inputs``, each
    ``FingerprintCat64``-chained from ``hash_key`` then modulo ``num_buckets``."""
    sparse = [i for i in inputs if isinstance(i, SparseTensor)]
    dense = [convert_to_tensor(i) for i in inputs if not isinstance(i, SparseTensor)]
    values = [s.values for s in sparse]
    internal = dtypes.string
    for group in (values, dense):
        for i, v in enumerate(group):
            if v.dtype.base_dtype is not dtypes.string:
                group[i] = math_ops.cast(v, dtypes.int64)
                internal = dtypes.int64
    attrs = {
        "N": len(sparse),
        "hashed_output": True,
        "num_buckets": int(num_buckets),
        "hash_key": int(hash_key or _DEFAULT_HASH_KEY),
        "sparse_types": [v.dtype.base_dtype for v in values],
        "dense_types": [d.dtype.base_dtype for d in dense],
        "out_type": dtypes.int64,
        "internal_type": internal,
    }
    parts = [s.indices for s in sparse] + values + [s.dense_shape for s in sparse] + dense
    with name_scope(name, "SparseCross", parts) as scope:
        op = create("SparseCross", parts, attrs, scope)
    return SparseTensor(*op.outputs)


def _collect_leaf_level_keys(cross) -> list:
    keys = []
    for k in cross.keys:
        keys.extend(_collect_leaf_level_keys(k) if isinstance(k, _CrossedColumn) else [k])
    return keys


class _CrossedColumn(
    _CategoricalColumn,
    collections.namedtuple("_CrossedColumn", ["keys", "hash_bucket_size", "hash_key"]),
):
    """See ``crossed_column``."""

    @property
    def name(self) -> str:
        names = [
            k.name if isinstance(k, _FeatureColumn) else k for k in _collect_leaf_level_keys(self)
        ]
        return "_X_".join(sorted(names))

    @property
    def _parse_example_spec(self) -> dict:
        config = {}
        for key in self.keys:
            if isinstance(key, _FeatureColumn):
                config.update(key._parse_example_spec)
            else:
                config[key] = VarLenFeature(dtypes.string)
        return config

    def _transform_feature(self, inputs):
        feature_tensors = []
        for key in _collect_leaf_level_keys(self):
            if isinstance(key, str):
                feature_tensors.append(inputs.get(key))
            elif isinstance(key, _CategoricalColumn):
                pair = key._get_sparse_tensors(inputs)
                if pair.weight_tensor is not None:
                    raise ValueError(
                        "crossed_column does not support weight_tensor, but the given "
                        f"column populates weight_tensor. Given column: {key.name}"
                    )
                feature_tensors.append(pair.id_tensor)
            else:
                raise ValueError(f"Unsupported column type. Given: {key}")
        return sparse_cross_hashed(feature_tensors, self.hash_bucket_size, self.hash_key)

    @property
    def _num_buckets(self) -> int:
        return self.hash_bucket_size


def crossed_column(keys, hash_bucket_size, hash_key=None):
    """The hashed cross of ``keys`` (feature names or categorical columns, not hash-bucket
    ones): ids ``FingerprintCat64`` chain of the crossed values ``% hash_bucket_size``.

    >>> crossed_column(["country", bucketized_column(numeric_column("age"), [30])], 1000)
    """
    if not hash_bucket_size or hash_bucket_size < 1:
        raise ValueError(f"hash_bucket_size must be > 1. hash_bucket_size: {hash_bucket_size}")
    if not keys or len(keys) < 2:
        raise ValueError(f"keys must be a list with length > 1. Given: {keys}")
    for key in keys:
        if not isinstance(key, (str, _CategoricalColumn)):
            raise ValueError(
                "Unsupported key type. All keys must be either string, or categorical column "
                f"except _HashedCategoricalColumn. Given: {key}"
            )
        if isinstance(key, _HashedCategoricalColumn):
            raise ValueError(
                "categorical_column_with_hash_bucket is not supported for crossing. Hashing "
                "before crossing will increase probability of collision. Instead, use the "
                f"feature name as a string. Given: {key}"
            )
    return _CrossedColumn(tuple(keys), hash_bucket_size, hash_key)
