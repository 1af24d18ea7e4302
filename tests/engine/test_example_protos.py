"""``tf.train.Example`` and friends: the engine's messages serialize to TensorFlow's bytes."""

import numpy as np
import pytest

import engine as tf
from engine.formats.tensorflow.proto import example_pb2
from tests.engine.fixtures.make_tfrecord_fixtures import examples
from tests.engine.fixtures.oracle import load

REC = load("tfrecord_tf.npz")
MESSAGES = examples(tf.train)


@pytest.mark.parametrize("key", sorted(MESSAGES))
def test_serialized_bytes_are_tensorflows(key):
    message = MESSAGES[key]
    # Byte for byte with map keys in sorted order (deterministic serialization); TF's
    # ordinary bytes (map entries in hash order) parse to the same message.
    assert message.SerializeToString(deterministic=True) == REC[f"sorted_{key}"].tobytes()
    assert type(message).FromString(REC[f"bytes_{key}"].tobytes()) == message
    assert type(message).FromString(message.SerializeToString()) == message


def test_names_and_parsing_through_parse_single_example():
    assert tf.train.Example is example_pb2.Example
    names = (
        "Features Feature BytesList FloatList Int64List SequenceExample FeatureList FeatureLists"
    )
    for name in names.split():
        # TF's schema, in a package of the engine's own (no clash with TF's descriptors).
        assert getattr(tf.train, name).DESCRIPTOR.full_name.endswith(f"tensorflow.{name}")
    data = REC["bytes_example"].tobytes()
    with tf.Graph().as_default(), tf.Session() as sess:
        # Fed, not a tf.constant: the engine's constants drop a string's trailing NUL bytes.
        serialized = tf.placeholder(tf.string, [])
        parsed = tf.parse_single_example(
            serialized,
            {
                "label": tf.FixedLenFeature([3], tf.int64),
                "weights": tf.FixedLenFeature([3], tf.float32),
                "names": tf.VarLenFeature(tf.string),
            },
        )
        got = sess.run(parsed, {serialized: np.array(data, object)})
    assert got["label"].tolist() == [7, -1, 2**40]
    assert got["weights"].tolist() == [0.5, -2.25, pytest.approx(1e-3)]
    assert got["names"].values.tolist() == [b"a", b"", "\u00e9".encode()]


def test_feature_holds_one_kind_of_list():
    f = tf.train.Feature(int64_list=tf.train.Int64List(value=[1]))
    f.float_list.value.append(2.0)  # a oneof: setting one list clears the other
    assert f.WhichOneof("kind") == "float_list" and not f.int64_list.value
    with pytest.raises(TypeError):
        tf.train.Int64List(value=[1.5])
