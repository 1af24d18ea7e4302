"""ParseExample / ParseExampleV2: serialized tf.Examples (built with our compiled copy of
TensorFlow's example.proto) to dense tensors, defaults, TF's error texts, and sparse
features refused."""

import re

import numpy as np
import pytest

import engine as tf
from engine import errors
from engine.formats.tensorflow.proto import example_pb2
from engine.ops.parsing_ops import decode_example


def example(**features) -> bytes:
    ex = example_pb2.Example()
    for key, values in features.items():
        f = ex.features.feature[key]
        values = values if isinstance(values, list) else [values]
        if isinstance(values[0], bytes):
            f.bytes_list.value.extend(values)
        elif isinstance(values[0], float):
            f.float_list.value.extend(values)
        else:
            f.int64_list.value.extend(values)
    return ex.SerializeToString()


FEATURES = {
    "x": tf.FixedLenFeature([2], tf.float32),
    "n": tf.FixedLenFeature([], tf.int64, default_value=-1),
    "s": tf.FixedLenFeature([1], tf.string, default_value=[b"none"]),
}


def parse(batch, features=FEATURES):
    s = tf.placeholder(tf.string, [None])
    parsed = tf.parse_example(s, features)
    with tf.Session() as sess:
        return sess.run(parsed, {s: np.array(batch, dtype=object)})


def test_dense_features_with_defaults():
    with tf.Graph().as_default():
        out = parse(
            [
                example(x=[1.5, -2.0], n=7, s=b"a"),
                example(x=[0.25, 3.0], other=[1, 2, 3]),
                example(x=[1.0, 2.0], n=-(2**40), s=b"\x00\xff"),
            ]
        )
    np.testing.assert_array_equal(out["x"], np.array([[1.5, -2.0], [0.25, 3.0], [1.0, 2.0]], "f4"))
    assert out["x"].dtype == np.float32 and out["n"].dtype == np.int64
    assert out["n"].tolist() == [7, -1, -(2**40)]
    assert out["s"].tolist() == [[b"a"], [b"none"], [b"\x00\xff"]]


def test_static_shapes_and_op_type():
    with tf.Graph().as_default() as g:
        parsed = tf.parse_example(tf.placeholder(tf.string, [None]), FEATURES)
        assert parsed["x"].shape.as_list() == [None, 2]
        assert parsed["n"].shape.as_list() == [None]
        assert [o.type for o in g.get_operations() if o.type.startswith("Parse")] == [
            "ParseExampleV2"
        ]


@pytest.mark.parametrize(
    "batch,message",
    [
        ([example(n=1)], "Feature: x (data type: float) is required but could not be found"),
        ([example(x=[1, 2])], "Key: x, Index: 0.  Data types don't match. Data type: int64"),
        ([example(x=[1.0])], "Number of float values != expected.  Values size: 1"),
        ([b"\x0a\xff"], "Could not parse example input"),
    ],
)
def test_bad_examples_are_invalid_argument(batch, message):
    with (
        tf.Graph().as_default(),
        pytest.raises(errors.InvalidArgumentError, match=re.escape(message)),
    ):
        parse(batch)


def test_ragged_features_are_refused_clearly():
    with tf.Graph().as_default() as g, pytest.raises(errors.UnimplementedError, match="ragged"):
        s = tf.placeholder(tf.string, [None])
        none = tf.constant(np.empty(0, object), tf.string)
        g._create_op(
            "ParseExampleV2",
            [s, none, none, none, tf.constant(["r"])],
            {
                "num_sparse": 0,
                "sparse_types": [],
                "Tdense": [],
                "dense_shapes": [],
                "ragged_value_types": [tf.int64],
                "ragged_split_types": [tf.int64],
            },
            "parse",
        )


def test_tf1_parse_example_v1_op_with_sparse_keys_matches_v2():
    """ParseExample (v1) with sparse keys as scalar inputs: the same sparse outputs as the
    ParseExampleV2 that tf.parse_example builds (checked against TF in
    test_sparse_segment_ops)."""
    batch = np.array([example(v=[5, 6, 7], b=1), example(b=2), example(v=[-3], b=3)], object)
    with tf.Graph().as_default() as g:
        s = tf.placeholder(tf.string, [None])
        names = tf.constant(np.empty(0, object), tf.string)
        keys = [tf.constant("v"), tf.constant("b")]
        default = tf.constant(np.empty(0, np.int64), tf.int64)
        attrs = {
            "Nsparse": 1,
            "Ndense": 1,
            "sparse_types": [tf.int64],
            "Tdense": [tf.int64],
            "dense_shapes": [tf.TensorShape([])],
        }
        v1 = g._create_op("ParseExample", [s, names, *keys, default], attrs, "parse").outputs
        assert [t.shape.as_list() for t in v1] == [[None, 2], [None], [2], [None]]
        v2 = tf.parse_example(
            s, {"v": tf.VarLenFeature(tf.int64), "b": tf.FixedLenFeature([], tf.int64)}
        )
        with tf.Session() as sess:
            got1, got2 = sess.run([v1, v2], {s: batch})
    sp = got2["v"]
    for a, b in zip(got1, [sp.indices, sp.values, sp.dense_shape, got2["b"]]):
        np.testing.assert_array_equal(a, b)
    assert sp.dense_shape.tolist() == [3, 3]


def _v1_op(g, s):
    names = tf.constant(np.empty(0, object), tf.string)
    return g._create_op(
        "ParseExample",
        [
            s,
            names,
            tf.constant("a"),
            tf.constant("b"),
            tf.constant([0.0, 0.0]),
            tf.constant(np.empty(0, np.int64), tf.int64),
        ],
        {
            "Nsparse": 0,
            "Ndense": 2,
            "sparse_types": [],
            "Tdense": [tf.float32, tf.int64],
            "dense_shapes": [tf.TensorShape([2]), tf.TensorShape([])],
        },
        "parse_v1",
    )


def round_trip_builder():
    """ParseExample and ParseExampleV2 for test_graph_def's round-trip table."""
    g = tf.get_default_graph()
    s = tf.placeholder(tf.string, [None], name="examples")
    v1 = _v1_op(g, s).outputs
    v2 = tf.parse_example(s, FEATURES)
    batch = np.array([example(a=[1.0, 2.0], b=3, x=[0.5, 1.0]), example(b=4, x=[2.0, 3.0])], object)
    return [*v1, v2["x"], v2["n"], v2["s"]], {"examples:0": batch}, []


def test_tf1_parse_example_v1_op():
    """The ParseExample (v1) form TF 1.x graphs hold: keys as scalar inputs."""
    with tf.Graph().as_default() as g:
        s = tf.placeholder(tf.string, [None])
        op = _v1_op(g, s)
        assert [t.shape.as_list() for t in op.outputs] == [[None, 2], [None]]
        with tf.Session() as sess:
            batch = np.array([example(b=3), example(a=[1.0, 2.0], b=4)], object)
            a, b = sess.run(op.outputs, {s: batch})
    np.testing.assert_array_equal(a, [[0.0, 0.0], [1.0, 2.0]])
    assert b.tolist() == [3, 4]


def test_wire_format_merge_rules():
    # Unpacked float and int64 values, a list field seen twice, a repeated map key (the last
    # wins) and two Features messages (merged), as protobuf parsers accept them.
    def ld(field, payload):  # a length-delimited field
        return bytes([field << 3 | 2, len(payload)]) + payload

    unpacked_floats = ld(2, bytes([1 << 3 | 5]) + np.float32(1.5).tobytes()) + ld(
        2, bytes([1 << 3 | 5]) + np.float32(2.5).tobytes()
    )
    unpacked_int = ld(3, bytes([1 << 3 | 0, 5]))
    entry = lambda key, feature: ld(1, ld(1, key) + ld(2, feature))  # noqa: E731
    blob = ld(1, entry(b"f", unpacked_floats) + entry(b"i", ld(3, b"\x08\x01"))) + ld(
        1, entry(b"i", unpacked_int)
    )
    assert example_pb2.Example.FromString(blob).features.feature["f"].float_list.value == [1.5, 2.5]
    got = decode_example(blob)
    assert got[b"f"] == (tf.float32, [1.5, 2.5])
    assert got[b"i"] == (tf.int64, [5])
    assert decode_example(example(b=[b"x", b"yz"]))[b"b"] == (tf.string, [b"x", b"yz"])
    for bad in (b"\x0a\x05\x0a", b"\x0b", b"\x0a\x80"):
        with pytest.raises(ValueError):
            decode_example(bad)


def test_one_scalar_string_feature_parses_to_its_bytes():
    """The fully_connected_reader recipe: one FixedLenFeature([], tf.string) feature (a
    single-output parse) whose bytes decode_raw reads."""
    raw = np.arange(3, dtype=np.float32).tobytes()
    example = tf.train.Example(
        features=tf.train.Features(
            feature={"raw": tf.train.Feature(bytes_list=tf.train.BytesList(value=[raw]))}
        )
    )
    s = tf.constant(example.SerializeToString())
    one = tf.parse_single_example(s, {"raw": tf.FixedLenFeature([], tf.string)})["raw"]
    many = tf.parse_example(tf.stack([s, s]), {"raw": tf.FixedLenFeature([], tf.string)})["raw"]
    with tf.Session() as sess:
        got_one, got_many, decoded = sess.run([one, many, tf.decode_raw(one, tf.float32)])
    assert got_one == raw and got_many.tolist() == [raw, raw]
    np.testing.assert_array_equal(decoded, [0.0, 1.0, 2.0])
