"""``tf.feature_column`` (TF 1.15's v1 API): columns that turn a dict of raw features into
the dense inputs of a model.

    >>> import engine as tf
    >>> fc = tf.feature_column
    >>> age = fc.bucketized_column(fc.numeric_column("age"), [18, 30, 50])
    >>> words = fc.embedding_column(fc.categorical_column_with_hash_bucket("w", 1000), 8)
    >>> net = fc.input_layer(features, [age, words])           # [batch, 4 + 8]
    >>> logits = fc.linear_model(features, [age, fc.crossed_column([age, "w"], 5000)])

The columns live in ``engine/feature_column_core.py`` (base classes, numeric and
bucketized columns), ``engine/feature_column_categorical.py`` (categorical columns) and
``engine/feature_column_dense.py`` (indicator and embedding columns, ``input_layer``,
``linear_model``, ``make_parse_example_spec``).
"""

from __future__ import annotations

from engine.feature_column_categorical import (
    categorical_column_with_hash_bucket,
    categorical_column_with_identity,
    categorical_column_with_vocabulary_file,
    categorical_column_with_vocabulary_list,
    crossed_column,
    weighted_categorical_column,
)
from engine.feature_column_core import bucketized_column, numeric_column
from engine.feature_column_dense import (
    embedding_column,
    indicator_column,
    input_layer,
    linear_model,
    make_parse_example_spec,
    shared_embedding_columns,
)

__all__ = [
    "bucketized_column",
    "categorical_column_with_hash_bucket",
    "categorical_column_with_identity",
    "categorical_column_with_vocabulary_file",
    "categorical_column_with_vocabulary_list",
    "crossed_column",
    "embedding_column",
    "indicator_column",
    "input_layer",
    "linear_model",
    "make_parse_example_spec",
    "numeric_column",
    "shared_embedding_columns",
    "weighted_categorical_column",
]
