"""Text functions against TensorFlow: values, static shapes and names recorded by
``fixtures/make_strings_more_fixtures.py`` from the same graphs (``build``)."""

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures.make_strings_more_fixtures import (
    GRID,
    WORDS,
    as_saved,
    build,
    static_shapes,
)
from tests.engine.fixtures.oracle import (
    assert_recorded,
    assert_recorded_names,
    load,
    recorded_keys,
    run_graph,
)

TF = load("strings_more_tf.npz")
SHAPES = load("strings_more_shapes_tf.npz")


@pytest.fixture(scope="module")
def ours():
    return run_graph(tf, build)


@pytest.mark.parametrize("key", recorded_keys(TF))
def test_string_functions_match_tensorflow(ours, key):
    got = as_saved({key: ours[key]})[key]
    if got.dtype.kind == "S":  # fixed-width bytes: widths follow the longest value
        got = got.astype(TF[key].dtype)
    assert_recorded(got, TF[key], key, rtol=0)


def test_string_results_are_object_arrays(ours):
    assert ours["join_pair"].dtype == object and ours["split_chars_values"].dtype == object


def test_static_shapes_match_tensorflow():
    got = static_shapes(tf)
    for key in recorded_keys(SHAPES):
        np.testing.assert_array_equal(got[key], SHAPES[key], err_msg=key)


def test_tensor_names_match_tensorflow(ours):
    assert_recorded_names(ours, TF)


def test_string_split_is_a_sparse_tensor():
    with tf.Graph().as_default():
        sp = tf.string_split(["a b", "c"])
        assert isinstance(sp, tf.SparseTensor)
        dense = tf.sparse_tensor_to_dense(sp, default_value="")
        with tf.Session() as sess:
            assert sess.run(dense).tolist() == [[b"a", b"b"], [b"c", b""]]


def test_errors_are_tensorflows():
    with tf.Graph().as_default():
        grid, words = tf.constant(GRID), tf.constant(WORDS)
        with pytest.raises(ValueError, match="Duplicate reduction dimension"):
            tf.strings.reduce_join(grid, axis=[0, 0])
        with pytest.raises(ValueError, match="Invalid reduction dimension 3"):
            tf.strings.reduce_join(grid, axis=[3])
        with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'reduction_indices'"):
            tf.reduce_join(grid, axis=0, reduction_indices=0)
        with pytest.raises(ValueError, match="RaggedTensor"):
            tf.string_split(words, result_type="RaggedTensor")
        with pytest.raises(ValueError, match="rank 1"):
            tf.string_split(grid)
        with pytest.raises(ValueError, match="num_buckets must be >= 1"):
            tf.strings.to_hash_bucket(words, 0)
        with pytest.raises(ValueError, match="unit must be one of"):
            tf.strings.length(words, unit="CHAR")
        with pytest.raises(ValueError, match="dtype string for Tensor with dtype int32"):
            tf.strings.join([tf.constant([1, 2])])
        with pytest.raises(ValueError, match="rank 0"):
            tf.strings.regex_full_match(words, tf.constant(["a", "b"]))
        bad = tf.strings.regex_replace(words, "(", "x")
        with pytest.raises(ValueError, match="Dimensions must be equal"):
            tf.strings.join([words, tf.constant([b"a", b"b"])])
        unknown = tf.placeholder(tf.string, [None])
        mismatch = tf.strings.join([words, unknown])
        axis = tf.placeholder(tf.int32, [None])
        dynamic = tf.strings.reduce_join(grid, axis=axis)
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid pattern"):
                sess.run(bad)
            with pytest.raises(tf.errors.InvalidArgumentError, match="StringJoin"):
                sess.run(mismatch, {unknown: np.array([b"a", b"b"], object)})
            with pytest.raises(tf.errors.OutOfRangeError, match="Invalid reduction dimension"):
                sess.run(dynamic, {axis: [5]})
            with pytest.raises(tf.errors.InvalidArgumentError, match="Duplicate reduction"):
                sess.run(dynamic, {axis: [1, -2]})
            assert sess.run(dynamic, {axis: [2, 1]}).tolist() == [b"abcd", b"efgh"]


def round_trip_builder():
    """The string kernels of ``engine/ops/string_more.py`` for the GraphDef round-trip test."""
    words, grid = tf.constant(WORDS), tf.constant(GRID)
    split = tf.string_split(words, " ,")
    fetches = [
        tf.strings.join([words, words], separator="/"),
        tf.strings.reduce_join(grid, axis=[1, 0], separator="."),
        tf.strings.length(words, unit="UTF8_CHAR"),
        tf.strings.lower(words),
        tf.strings.upper(words, encoding="utf-8"),
        tf.strings.strip(words),
        tf.strings.regex_replace(words, "o+", "0", replace_global=False),
        tf.strings.regex_replace(words, tf.constant("l"), tf.constant("L")),
        tf.strings.regex_full_match(words, ".*o.*"),
        tf.strings.regex_full_match(words, tf.constant("H.*")),
        tf.strings.to_hash_bucket(words, 10),
        split.indices,
        split.values,
        split.dense_shape,
    ]
    return fetches, {}, []
