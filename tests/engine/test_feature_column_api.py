"""``tf.feature_column``'s API beyond the recorded values: parse specs, names, ordering,
inputs as SparseTensorValues and parsed ``tf.Example``s, and TF's errors for bad columns
and bad inputs."""

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures.make_sparse_segment_fixtures import example

fc = tf.feature_column


def _run(fetch, feed=None):
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.tables_initializer()])
        return sess.run(fetch, feed)


def test_parse_example_spec_of_every_column_kind(tmp_path):
    vocab = tmp_path / "v.txt"
    vocab.write_text("a\nb\n")
    age = fc.bucketized_column(fc.numeric_column("age", default_value=0.0), [10.0])
    columns = [
        age,
        fc.numeric_column("price", shape=[2], dtype=tf.int64),
        fc.indicator_column(fc.categorical_column_with_vocabulary_file("f", str(vocab))),
        fc.embedding_column(fc.categorical_column_with_identity("ids", 4), 2),
        fc.weighted_categorical_column(fc.categorical_column_with_hash_bucket("w", 5), "ww"),
        fc.crossed_column([age, "c"], 10),
    ]
    spec = fc.make_parse_example_spec(columns)
    assert spec == {
        "age": tf.FixedLenFeature((1,), tf.float32, (0.0,)),
        "price": tf.FixedLenFeature((2,), tf.int64, None),
        "f": tf.VarLenFeature(tf.string),
        "ids": tf.VarLenFeature(tf.int64),
        "w": tf.VarLenFeature(tf.string),
        "ww": tf.VarLenFeature(tf.float32),
        "c": tf.VarLenFeature(tf.string),
    }
    assert columns[2].categorical_column.vocabulary_size == 2  # counted from the file
    with pytest.raises(ValueError, match="different parse_spec for key age"):
        fc.make_parse_example_spec([age, fc.numeric_column("age")])
    with pytest.raises(ValueError, match="must be _FeatureColumn instances"):
        fc.make_parse_example_spec(["age"])


def test_names_and_default_values():
    a = fc.categorical_column_with_vocabulary_list("a", ["x", "y"])
    b = fc.categorical_column_with_identity("b", 2)
    assert fc.crossed_column([b, fc.crossed_column(["z", a], 4)], 4).name == "a_X_b_X_z"
    assert fc.weighted_categorical_column(a, "aw").name == "a_weighted_by_aw"
    c = fc.categorical_column_with_identity("a", 2)
    assert [c.name for c in fc.shared_embedding_columns([b, c], 2)] == [
        "b_shared_embedding",
        "a_shared_embedding",
    ]
    assert fc.shared_embedding_columns([b, c], 2)[0].shared_embedding_collection_name == (
        "a_b_shared_embedding"
    )
    assert fc.numeric_column("n", shape=(2, 2), default_value=1).default_value == ((1, 1), (1, 1))
    assert fc.numeric_column("n", default_value=np.array([2.5])).default_value == (2.5,)
    assert sorted([fc.numeric_column("b"), fc.numeric_column("a")])[0].key == "a"


def test_parsed_examples_and_sparse_tensor_values_feed_input_layer():
    """Features parsed from tf.Examples with the columns' own spec, and SparseTensorValues
    fed to a sparse placeholder, give the multi-hot rows of their vocabulary ids."""
    color = fc.categorical_column_with_vocabulary_list("color", ["r", "g"], num_oov_buckets=1)
    columns = [fc.indicator_column(color), fc.numeric_column("age")]
    serialized = [example(age=[3.0], color=[b"r", b"q"]), example(age=[1.0], color=[b"g"])]
    parsed = tf.parse_example(tf.constant(serialized), fc.make_parse_example_spec(columns))
    out = fc.input_layer(parsed, columns)
    sp = tf.sparse_placeholder(tf.string)
    fed = fc.input_layer({"color": sp, "age": [[3.0], [1.0]]}, columns)
    value = tf.SparseTensorValue([[0, 0], [0, 1], [1, 0]], [b"r", b"q", b"g"], [2, 2])
    got, got_fed = _run([out, fed], {sp: value})
    expected = [[3.0, 1.0, 0.0, 1.0], [1.0, 0.0, 1.0, 0.0]]
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got_fed, expected)


def test_trainable_and_weight_collections():
    ids = fc.categorical_column_with_identity("ids", 3)
    frozen = fc.embedding_column(ids, 2, trainable=False)
    fc.input_layer({"ids": [[0], [2]]}, [frozen], weight_collections=["mine"])
    out = fc.linear_model({"ids": [[0], [2]]}, [ids], trainable=False)
    assert tf.trainable_variables() == []
    assert [v.op.name for v in tf.get_collection("mine")] == [
        "input_layer/ids_embedding/embedding_weights"
    ]
    assert len(tf.get_collection(tf.GraphKeys.MODEL_VARIABLES)) == 3
    np.testing.assert_array_equal(_run(out), [[0.0], [0.0]])


BAD_COLUMNS = [
    (lambda: fc.numeric_column("x", shape=(0,)), ValueError, "shape dimensions must be greater"),
    (lambda: fc.numeric_column("x", shape=(1.5,)), TypeError, "shape dimensions must be integer"),
    (lambda: fc.numeric_column("x", dtype=tf.string), ValueError, "convertible to float"),
    (lambda: fc.numeric_column("x", default_value=[1, 2]), ValueError, "shape of default_value"),
    (lambda: fc.numeric_column("x", default_value="a"), TypeError, "compatible with dtype"),
    (lambda: fc.numeric_column("x", normalizer_fn=3), TypeError, "must be a callable"),
    (lambda: fc.numeric_column(3), ValueError, "key must be a string"),
    (lambda: fc.bucketized_column("x", [1.0]), ValueError, "generated with numeric_column"),
    (lambda: fc.bucketized_column(fc.numeric_column("x"), []), ValueError, "not be empty"),
    (lambda: fc.bucketized_column(fc.numeric_column("x"), [2, 1]), ValueError, "sorted list"),
    (
        lambda: fc.bucketized_column(fc.numeric_column("x", shape=(2, 2)), [1]),
        ValueError,
        "one-dimensional",
    ),
    (lambda: fc.categorical_column_with_hash_bucket("x", 0), ValueError, "at least 1"),
    (
        lambda: fc.categorical_column_with_hash_bucket("x", 3, dtype=tf.float32),
        ValueError,
        "must be string or integer",
    ),
    (lambda: fc.categorical_column_with_vocabulary_list("x", []), ValueError, "non-empty"),
    (lambda: fc.categorical_column_with_vocabulary_list("x", ["a", "a"]), ValueError, "Duplicate"),
    (
        lambda: fc.categorical_column_with_vocabulary_list("x", [1.5, 2.5]),
        ValueError,
        "column_name: x vocabulary dtype must be string or integer. dtype: <dtype: 'float64'>",
    ),
    (
        lambda: fc.categorical_column_with_vocabulary_list(
            "x", ["a"], default_value=0, num_oov_buckets=1
        ),
        ValueError,
        "Can't specify both",
    ),
    (
        lambda: fc.categorical_column_with_vocabulary_list("x", ["a"], dtype=tf.int64),
        ValueError,
        "do not match",
    ),
    (
        lambda: fc.categorical_column_with_vocabulary_file("x", "/nonexistent/v.txt"),
        ValueError,
        "does not exist",
    ),
    (lambda: fc.categorical_column_with_identity("x", 0), ValueError, "< 1"),
    (lambda: fc.categorical_column_with_identity("x", 3, 3), ValueError, "not in range"),
    (lambda: fc.crossed_column(["a"], 10), ValueError, "length > 1"),
    (lambda: fc.crossed_column(["a", "b"], 0), ValueError, "must be > 1"),
    (
        lambda: fc.crossed_column(["a", fc.categorical_column_with_hash_bucket("b", 3)], 5),
        ValueError,
        "hash_bucket is not supported for crossing",
    ),
    (lambda: fc.crossed_column(["a", fc.numeric_column("b")], 5), ValueError, "Unsupported key"),
    (lambda: fc.indicator_column(fc.numeric_column("b")), ValueError, "CategoricalColumn"),
    (
        lambda: fc.embedding_column(fc.categorical_column_with_identity("b", 2), 0),
        ValueError,
        "Invalid dimension",
    ),
    (
        lambda: fc.embedding_column(fc.categorical_column_with_identity("b", 2), 2, initializer=1),
        ValueError,
        "initializer must be callable",
    ),
    (
        lambda: fc.shared_embedding_columns(
            [
                fc.categorical_column_with_identity("a", 2),
                fc.categorical_column_with_identity("b", 3),
            ],
            2,
        ),
        ValueError,
        "same number of buckets",
    ),
    (
        lambda: fc.shared_embedding_columns(
            [
                fc.categorical_column_with_identity("a", 2),
                fc.categorical_column_with_vocabulary_list("b", ["x", "y"]),
            ],
            2,
        ),
        ValueError,
        "same type",
    ),
    (
        lambda: fc.weighted_categorical_column(
            fc.categorical_column_with_identity("a", 2), "w", dtype=tf.string
        ),
        ValueError,
        "not convertible to float",
    ),
]


@pytest.mark.parametrize("make, error, message", BAD_COLUMNS)
def test_bad_columns_raise_tensorflows_errors(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_bad_inputs_raise_tensorflows_errors():
    ids = fc.categorical_column_with_identity("ids", 3)
    num = fc.numeric_column("n")
    with pytest.raises(ValueError, match="must be a _DenseColumn"):
        fc.input_layer({"ids": [[1]]}, [ids])
    with pytest.raises(ValueError, match="Feature n is not in features dictionary"):
        fc.input_layer({"ids": [[1]]}, [num])
    with pytest.raises(ValueError, match="cannot have rank 0"):
        fc.input_layer({"n": 1.0}, [num])
    with pytest.raises(ValueError, match="Duplicate feature column name"):
        fc.input_layer({"n": [1.0]}, [num, fc.numeric_column("n")])
    with pytest.raises(ValueError, match="must not be empty"):
        fc.linear_model({"n": [1.0]}, [])
    with pytest.raises(ValueError, match="found dict"):
        fc.linear_model({"n": [1.0]}, {"n": num})
    with pytest.raises(ValueError, match="Invalid input, not integer"):
        fc.linear_model({"ids": [["a"]]}, [ids])
    with pytest.raises(ValueError, match="SparseTensor is not supported"):
        sp = tf.SparseTensor([[0, 0]], [1.0], [1, 1])
        fc.input_layer({"n": sp}, [num])
    with pytest.raises(ValueError, match="Batch size \\(first dimension\\) of each feature"):
        fc.input_layer({"n": [[1.0]], "m": [[1.0], [2.0]]}, [num, fc.numeric_column("m")])
    hashed = fc.categorical_column_with_hash_bucket("h", 3)
    with pytest.raises(ValueError, match="Column dtype and SparseTensors dtype must be compatible"):
        fc.linear_model({"h": [[1]]}, [hashed])
    weighted = fc.weighted_categorical_column(ids, "w")
    with pytest.raises(ValueError, match="Bad dtype, expected"):
        fc.linear_model({"ids": [[1]], "w": [[1]]}, [weighted])
    cross = fc.crossed_column([weighted, "s"], 5)
    with pytest.raises(ValueError, match="does not support weight_tensor"):
        fc.linear_model({"ids": [[1]], "w": [[1.0]], "s": [["a"]]}, [cross])
