"""TF 1.15's ``tf.feature_column`` (v1): the dense columns (indicator, embedding, shared
embedding) and the functions that consume columns: ``input_layer`` (dense columns
concatenated in name order), ``linear_model`` (a weighted sum per column plus a bias) and
``make_parse_example_spec``.

Variables are named as TF names them, so TF1 checkpoints restore:
``input_layer/<col>_embedding/embedding_weights``, ``input_layer/<collection>/embedding_weights``
for shared embeddings (one variable per collection, found again through the graph collection
of that name), ``linear_model/<col>/weights`` (zeros, ``[num_buckets or width, units]``) and
``linear_model/bias_weights``. Embeddings and categorical weighted sums go through
``safe_embedding_lookup_sparse`` as TF's do (invalid ids dropped, empty rows zero).
"""

from __future__ import annotations

import collections
import math
from collections.abc import Iterator

from engine import dtypes
from engine.feature_column_categorical import _WeightedCategoricalColumn
from engine.feature_column_core import (
    IdWeightPair,
    _CategoricalColumn,
    _DenseColumn,
    _FeatureColumn,
    _LazyBuilder,
    sparse_rows,
)
from engine.framework.graph import GraphKeys, add_to_collection, get_collection, name_scope
from engine.framework.sparse_tensor import SparseTensor
from engine.init_ops import truncated_normal_initializer, zeros_initializer
from engine.ops import array as array_ops
from engine.ops import array_transform, reduction, slicing
from engine.ops import math as math_ops
from engine.ops.matmul import matmul
from engine.ops.nn import bias_add
from engine.ops.segment_ops import scatter_nd
from engine.sparse_api import sparse_slice, sparse_tensor_to_dense
from engine.sparse_embedding import safe_embedding_lookup_sparse
from engine.tensor_shape import TensorShape
from engine.variable_scope import get_variable, get_variable_scope, variable_scope

__all__ = [
    "embedding_column",
    "indicator_column",
    "input_layer",
    "linear_model",
    "make_parse_example_spec",
    "shared_embedding_columns",
]


def _sparse_merge(sp_ids: SparseTensor, sp_values: SparseTensor, vocab_size: int):
    """TF's ``sparse_merge`` then ``sparse_slice`` to the dense shape: values at
    ``[row..., id]``, ids outside ``[0, vocab_size)`` dropped."""
    ids = math_ops.cast(array_ops.reshape(sp_ids.values, [-1, 1]), dtypes.int64)
    leading = slicing.slice(sp_ids.indices, [0, 0], [-1, 1])
    indices = array_transform.concat([leading, ids], 1)
    shape = array_transform.stack(
        [slicing.gather(sp_ids.dense_shape, 0), math_ops.cast(vocab_size, dtypes.int64)]
    )
    merged = SparseTensor(indices, sp_values.values, shape)
    return sparse_slice(merged, [0, 0], merged.dense_shape)


class _IndicatorColumn(
    _DenseColumn, collections.namedtuple("_IndicatorColumn", ["categorical_column"])
):
    """See ``indicator_column``."""

    @property
    def name(self) -> str:
        return f"{self.categorical_column.name}_indicator"

    def _transform_feature(self, inputs):
        pair = self.categorical_column._get_sparse_tensors(inputs)
        depth = int(self._variable_shape[-1])
        if pair.weight_tensor is not None:
            merged = _sparse_merge(pair.id_tensor, pair.weight_tensor, depth)
            return scatter_nd(merged.indices, merged.values, merged.dense_shape)
        dense_ids = sparse_tensor_to_dense(pair.id_tensor, default_value=-1)
        one_hot = array_ops.one_hot(dense_ids, depth=depth, on_value=1.0, off_value=0.0)
        return reduction.reduce_sum(one_hot, axis=[-2])

    @property
    def _parse_example_spec(self) -> dict:
        return self.categorical_column._parse_example_spec

    @property
    def _variable_shape(self) -> TensorShape:
        return TensorShape([1, self.categorical_column._num_buckets])

    def _get_dense_tensor(self, inputs, weight_collections=None, trainable=None):
        del weight_collections, trainable
        return inputs.get(self)


def indicator_column(categorical_column):
    """The multi-hot (summed one-hot, or weights when weighted) of a categorical column's
    ids: ``[batch, num_buckets]`` in ``input_layer``."""
    if not isinstance(categorical_column, _CategoricalColumn):
        raise ValueError(
            "Unsupported input type. Input must be a CategoricalColumn. "
            f"Given: {categorical_column}"
        )
    return _IndicatorColumn(categorical_column)


def _embed(column, pair: IdWeightPair, embedding_weights):
    return safe_embedding_lookup_sparse(
        embedding_weights,
        pair.id_tensor,
        pair.weight_tensor,
        combiner=column.combiner,
        name=f"{column.name}_weights",
        max_norm=column.max_norm,
    )


class _EmbeddingColumn(
    _DenseColumn,
    collections.namedtuple(
        "_EmbeddingColumn",
        ("categorical_column", "dimension", "combiner", "initializer", "max_norm", "trainable"),
    ),
):
    """See ``embedding_column``."""

    @property
    def name(self) -> str:
        return f"{self.categorical_column.name}_embedding"

    @property
    def _parse_example_spec(self) -> dict:
        return self.categorical_column._parse_example_spec

    def _transform_feature(self, inputs):
        return inputs.get(self.categorical_column)

    @property
    def _variable_shape(self) -> TensorShape:
        return TensorShape([self.dimension])

    def _get_dense_tensor(self, inputs, weight_collections=None, trainable=None):
        pair = self.categorical_column._get_sparse_tensors(
            inputs, weight_collections=weight_collections, trainable=trainable
        )
        embedding_weights = get_variable(
            "embedding_weights",
            shape=(self.categorical_column._num_buckets, self.dimension),
            dtype=dtypes.float32,
            initializer=self.initializer,
            trainable=self.trainable and trainable,
            collections=weight_collections,
        )
        return _embed(self, pair, embedding_weights)


def _check_embedding_args(dimension, initializer, ckpt_to_load_from, tensor_name_in_ckpt):
    if dimension is None or dimension < 1:
        raise ValueError(f"Invalid dimension {dimension}.")
    if (ckpt_to_load_from is None) != (tensor_name_in_ckpt is None):
        raise ValueError(
            "Must specify both `ckpt_to_load_from` and `tensor_name_in_ckpt` or none of them."
        )
    if ckpt_to_load_from is not None:
        raise NotImplementedError(
            "embedding columns with ckpt_to_load_from are not supported by the engine: "
            "use tf.estimator.WarmStartSettings or a Saver to load the table"
        )
    if initializer is not None and not callable(initializer):
        raise ValueError("initializer must be callable if specified.")
    if initializer is None:
        return truncated_normal_initializer(mean=0.0, stddev=1 / math.sqrt(dimension))
    return initializer


def embedding_column(
    categorical_column,
    dimension,
    combiner="mean",
    initializer=None,
    ckpt_to_load_from=None,
    tensor_name_in_ckpt=None,
    max_norm=None,
    trainable=True,
):
    """A trainable ``[num_buckets, dimension]`` table of a categorical column, each row of
    ids reduced by ``combiner`` (mean, sqrtn or sum); initialized from
    ``truncated_normal(stddev=1/sqrt(dimension))`` unless ``initializer`` is given.

    >>> emb = embedding_column(categorical_column_with_hash_bucket("w", 100), 8)
    """
    initializer = _check_embedding_args(
        dimension, initializer, ckpt_to_load_from, tensor_name_in_ckpt
    )
    if combiner not in ("mean", "sqrtn", "sum"):
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner}")
    return _EmbeddingColumn(
        categorical_column, dimension, combiner, initializer, max_norm, trainable
    )


class _SharedEmbeddingColumn(
    _DenseColumn,
    collections.namedtuple(
        "_SharedEmbeddingColumn",
        (
            "categorical_column",
            "dimension",
            "combiner",
            "initializer",
            "shared_embedding_collection_name",
            "max_norm",
            "trainable",
        ),
    ),
):
    """See ``shared_embedding_columns``."""

    @property
    def name(self) -> str:
        return f"{self.categorical_column.name}_shared_embedding"

    @property
    def _var_scope_name(self) -> str:
        return self.shared_embedding_collection_name

    @property
    def _parse_example_spec(self) -> dict:
        return self.categorical_column._parse_example_spec

    def _transform_feature(self, inputs):
        return inputs.get(self.categorical_column)

    @property
    def _variable_shape(self) -> TensorShape:
        return TensorShape([self.dimension])

    def _shared_weights(self, weight_collections, trainable):
        shape = TensorShape([self.categorical_column._num_buckets, self.dimension])
        shared = get_collection(self.shared_embedding_collection_name)
        if not shared:
            weights = get_variable(
                "embedding_weights",
                shape=shape,
                dtype=dtypes.float32,
                initializer=self.initializer,
                trainable=self.trainable and trainable,
                collections=weight_collections,
            )
            add_to_collection(self.shared_embedding_collection_name, weights)
            return weights
        if len(shared) > 1:
            raise ValueError(
                f"Collection {shared} can only contain one variable. Suggested fix A: Choose "
                "a unique name for this collection. Suggested fix B: Do not add any variables "
                "to this collection. The feature_column library already adds a variable "
                "under the hood."
            )
        if shared[0].shape != shape:
            raise ValueError(
                f"Shared embedding collection {self.shared_embedding_collection_name} contains "
                f"variable {shared[0].name} of unexpected shape {shared[0].shape}. "
                f"Expected shape is {shape}."
            )
        return shared[0]

    def _get_dense_tensor(self, inputs, weight_collections=None, trainable=None):
        with name_scope(None, self.name):
            pair = self.categorical_column._get_sparse_tensors(
                inputs, weight_collections=weight_collections, trainable=trainable
            )
            return _embed(self, pair, self._shared_weights(weight_collections, trainable))


def _unweighted(column):
    while isinstance(column, _WeightedCategoricalColumn):
        column = column.categorical_column
    return column


def _check_shareable(sorted_columns) -> None:
    c0 = sorted_columns[0]
    if not isinstance(c0, _CategoricalColumn):
        raise ValueError(
            "All categorical_columns must be subclasses of _CategoricalColumn. "
            f"Given: {c0}, of type: {type(c0)}"
        )
    num_buckets, base = c0._num_buckets, _unweighted(c0)
    for c in sorted_columns[1:]:
        if not isinstance(_unweighted(c), type(base)):
            raise ValueError(
                "To use shared_embedding_column, all categorical_columns must have the same "
                "type, or be weighted_categorical_column of the same type. Given column: "
                f"{base} of type: {type(base)} does not match given column: {c} of type: {type(c)}"
            )
        if num_buckets != c._num_buckets:
            raise ValueError(
                "To use shared_embedding_column, all categorical_columns must have the same "
                f"number of buckets. Given column: {base} with buckets: {num_buckets} does not "
                f"match column: {c} with buckets: {c._num_buckets}"
            )


def shared_embedding_columns(
    categorical_columns,
    dimension,
    combiner="mean",
    initializer=None,
    shared_embedding_collection_name=None,
    ckpt_to_load_from=None,
    tensor_name_in_ckpt=None,
    max_norm=None,
    trainable=True,
):
    """Embedding columns of ``categorical_columns`` (same type and number of buckets) that
    share one table, named after the sorted columns (``a_b_shared_embedding``) unless
    ``shared_embedding_collection_name`` is given; one column per input, in input order."""
    initializer = _check_embedding_args(
        dimension, initializer, ckpt_to_load_from, tensor_name_in_ckpt
    )
    sorted_columns = sorted(categorical_columns, key=lambda x: x.name)
    if not sorted_columns:
        raise ValueError("categorical_columns must not be empty.")
    _check_shareable(sorted_columns)
    if not shared_embedding_collection_name:
        shared_embedding_collection_name = "_".join(c.name for c in sorted_columns)
        shared_embedding_collection_name += "_shared_embedding"
    return [
        _SharedEmbeddingColumn(
            column,
            dimension,
            combiner,
            initializer,
            shared_embedding_collection_name,
            max_norm,
            trainable,
        )
        for column in categorical_columns
    ]


# -- input_layer, linear_model, make_parse_example_spec -------------------------------------


def _normalize_feature_columns(feature_columns) -> list:
    if isinstance(feature_columns, _FeatureColumn):
        feature_columns = [feature_columns]
    if isinstance(feature_columns, Iterator):
        feature_columns = list(feature_columns)
    if isinstance(feature_columns, dict):
        raise ValueError("Expected feature_columns to be iterable, found dict.")
    for column in feature_columns:
        if not isinstance(column, _FeatureColumn):
            raise ValueError(
                "Items of feature_columns must be a _FeatureColumn. "
                f"Given (type {type(column)}): {column}."
            )
    if not feature_columns:
        raise ValueError("feature_columns must not be empty.")
    seen = {}
    for column in feature_columns:
        if column.name in seen:
            raise ValueError(
                f"Duplicate feature column name found for columns: {column} and "
                f"{seen[column.name]}. This usually means that these columns refer to same "
                "base feature. Either one must be discarded or a duplicated but renamed item "
                "must be inserted in features dict."
            )
        seen[column.name] = column
    return list(feature_columns)


def _verify_static_batch_size_equality(tensors, columns) -> None:
    expected, first = None, None
    for tensor, column in zip(tensors, columns):
        batch = tensor.shape[0] if tensor.shape.rank else None
        batch = getattr(batch, "value", batch)
        if batch is None:
            continue
        if expected is None:
            expected, first = batch, column
        elif batch != expected:
            raise ValueError(
                "Batch size (first dimension) of each feature must be same. Batch size of "
                f"columns ({first.name}, {column.name}): ({expected}, {batch})"
            )


def _weight_collections(weight_collections) -> list:
    collections_ = list(weight_collections or [])
    for key in (GraphKeys.GLOBAL_VARIABLES, GraphKeys.MODEL_VARIABLES):
        if key not in collections_:
            collections_.append(key)
    return collections_


def _flat(tensor, column):
    num_elements = column._variable_shape.num_elements()
    batch_size = array_ops.shape(tensor)[0]
    return array_ops.reshape(tensor, array_transform.stack([batch_size, num_elements]))


def input_layer(
    features, feature_columns, weight_collections=None, trainable=True, cols_to_vars=None
):
    """The dense ``feature_columns`` of ``features`` (sorted by name), each flattened to
    ``[batch, width]``, concatenated: ``[batch, sum of widths]`` float32.

    >>> net = input_layer(features, [numeric_column("x"), embedding_column(ids, 4)])
    """
    feature_columns = _normalize_feature_columns(feature_columns)
    for column in feature_columns:
        if not isinstance(column, _DenseColumn):
            raise ValueError(
                "Items of feature_columns must be a _DenseColumn. You can wrap a categorical "
                f"column with an embedding_column or indicator_column. Given: {column}"
            )
    weight_collections = _weight_collections(weight_collections)
    values = [v for v in features.values() if hasattr(v, "graph")]
    with variable_scope(None, default_name="input_layer", values=values):
        builder = _LazyBuilder(features)
        outputs, ordered = [], []
        for column in sorted(feature_columns, key=lambda x: x.name):
            ordered.append(column)
            with variable_scope(None, default_name=column._var_scope_name):
                tensor = column._get_dense_tensor(
                    builder, weight_collections=weight_collections, trainable=trainable
                )
                outputs.append(_flat(tensor, column))
                if cols_to_vars is not None:
                    scope = get_variable_scope().name
                    cols_to_vars[column] = get_collection(GraphKeys.GLOBAL_VARIABLES, scope=scope)
        _verify_static_batch_size_equality(outputs, ordered)
        return array_transform.concat(outputs, 1)


def _weighted_sum(column, builder, units, sparse_combiner, weight_collections, trainable):
    """TF's ``_create_weighted_sum``: ``tensor @ weights`` for a dense column, the
    ``sparse_combiner`` of the ids' weight rows for a categorical one."""
    if isinstance(column, _CategoricalColumn):
        shape = (column._num_buckets, units)
    else:
        shape = [column._variable_shape.num_elements(), units]
    weight = get_variable(
        "weights",
        shape=shape,
        initializer=zeros_initializer(),
        trainable=trainable,
        collections=weight_collections,
    )
    if not isinstance(column, _CategoricalColumn):
        tensor = column._get_dense_tensor(builder, weight_collections, trainable)
        return matmul(_flat(tensor, column), weight, name="weighted_sum")
    pair = column._get_sparse_tensors(builder, weight_collections, trainable)
    weights = None if pair.weight_tensor is None else sparse_rows(pair.weight_tensor)
    return safe_embedding_lookup_sparse(
        weight, sparse_rows(pair.id_tensor), weights, combiner=sparse_combiner, name="weighted_sum"
    )


def linear_model(
    features,
    feature_columns,
    units=1,
    sparse_combiner="sum",
    weight_collections=None,
    trainable=True,
    cols_to_vars=None,
):
    """A linear prediction ``[batch, units]``: per column (sorted by name) a weighted sum
    with zero-initialized ``linear_model/<col>/weights``, plus ``linear_model/bias_weights``.
    Categorical columns combine their ids' weight rows by ``sparse_combiner`` (sum, mean or
    sqrtn); dense columns multiply their flattened values by the weights.

    >>> logits = linear_model(features, [numeric_column("x"), crossed], units=3)
    """
    feature_columns = _normalize_feature_columns(feature_columns)
    for column in feature_columns:
        if not isinstance(column, (_DenseColumn, _CategoricalColumn)):
            raise ValueError(
                "Items of feature_columns must be either a _DenseColumn or "
                f"_CategoricalColumn. Given: {column}"
            )
    if sparse_combiner not in ("mean", "sqrtn", "sum"):
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {sparse_combiner}")
    weight_collections = _weight_collections(weight_collections)
    values = [v for v in features.values() if hasattr(v, "graph")]
    with variable_scope(None, default_name="linear_model", values=values):
        builder = _LazyBuilder(features)
        sums, ordered, found = [], [], {}
        for column in sorted(feature_columns, key=lambda x: x.name):
            ordered.append(column)
            with variable_scope(None, default_name=column._var_scope_name):
                sums.append(
                    _weighted_sum(
                        column, builder, units, sparse_combiner, weight_collections, trainable
                    )
                )
                scope = get_variable_scope().name
                found[column] = get_collection(GraphKeys.GLOBAL_VARIABLES, scope=scope)
        _verify_static_batch_size_equality(sums, ordered)
        no_bias = math_ops.add_n(sums, name="weighted_sum_no_bias")
        bias = get_variable(
            "bias_weights",
            shape=[units],
            initializer=zeros_initializer(),
            trainable=trainable,
            collections=weight_collections,
        )
        found["bias"] = [bias]
        predictions = bias_add(no_bias, bias, name="weighted_sum")
    if cols_to_vars is not None:
        cols_to_vars.update(found)
    return predictions


def make_parse_example_spec(feature_columns) -> dict:
    """The ``parse_example`` spec of ``feature_columns``: feature key -> ``FixedLenFeature``
    or ``VarLenFeature``; ValueError when two columns parse one key differently."""
    result = {}
    for column in feature_columns:
        if not isinstance(column, _FeatureColumn):
            raise ValueError(
                f"All feature_columns must be _FeatureColumn instances. Given: {column}"
            )
        config = column._parse_example_spec
        for key, value in config.items():
            if key in result and value != result[key]:
                raise ValueError(
                    f"feature_columns contain different parse_spec for key {key}. "
                    f"Given {value} and {result[key]}"
                )
        result.update(config)
    return result
