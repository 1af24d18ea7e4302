"""Decoding ops against TensorFlow's recording: ``DecodeRaw``, ``DecodeCSV``,
``EncodeBase64``, ``SerializeTensor`` and ``ParseTensor`` (values, names, errors)."""

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures import make_decode_fixtures as fx
from tests.engine.fixtures.oracle import (
    assert_recorded,
    assert_recorded_names,
    load,
    recorded_keys,
    run_graph,
)

REC = load("decode_tf.npz")
GOT = run_graph(tf, fx.build)
VALUE_KEYS = [k for k in recorded_keys(REC) if not k.startswith("error_")]


@pytest.mark.parametrize("key", VALUE_KEYS)
def test_values_match_tensorflow(key):
    got = fx.storable(GOT[key])
    if isinstance(got, np.void):
        assert got.tobytes() == REC[key].tobytes(), key
    else:
        assert_recorded(got, REC[key], key, rtol=0)


def test_names_match_tensorflow():
    assert_recorded_names(GOT, REC)


@pytest.mark.parametrize("key", sorted(fx.ERRORS))
def test_errors_match_tensorflow(key):
    assert fx.run_error(tf, fx.ERRORS[key]) == str(REC[f"error_{key}"])


def test_error_messages_name_the_problem():
    def message(make):
        with tf.Graph().as_default(), tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError) as e:
                sess.run(make(tf))
        return str(e.value)

    assert "length 3 that is not a multiple of 2" in message(fx.ERRORS["raw_length"])
    assert "element 1 has size 4 != 2" in message(fx.ERRORS["raw_ragged"])
    assert "Expect 1 fields but have 2 in record 0" in message(fx.ERRORS["csv_count"])
    assert "is not a valid int32: x" in message(fx.ERRORS["csv_int"])
    assert "Field 0 is required but missing in record 0" in message(fx.ERRORS["csv_required"])
    assert "parsed tensor (float32) and dtype (int32)" in message(fx.ERRORS["parse_dtype"])


def test_static_shapes_and_build_time_errors():
    with tf.Graph().as_default():
        s = tf.placeholder(tf.string, [None, 3])
        assert tf.io.decode_raw(s, tf.float32).shape.as_list() == [None, 3, None]
        cols = tf.io.decode_csv(s, [[1], [""]])
        assert [c.shape.as_list() for c in cols] == [[None, 3], [None, 3]]
        assert [c.dtype for c in cols] == [tf.int32, tf.string]
        assert tf.io.parse_tensor(s[0, 0], tf.int64).shape.rank is None
        assert tf.io.serialize_tensor(s).shape.as_list() == []
        with pytest.raises(ValueError, match="strictly increasing"):
            tf.io.decode_csv(s, [[1], [2]], select_cols=[2, 1])
        with pytest.raises(ValueError, match="do not match"):
            tf.io.decode_csv(s, [[1]], select_cols=[0, 1])
        with pytest.raises(ValueError, match="only 1 char"):
            tf.io.decode_csv(s, [[1]], field_delim="::")
        with pytest.raises(TypeError, match="string"):
            tf.io.decode_raw(tf.constant([1]), tf.int32)
        with pytest.raises(TypeError, match="cannot produce"):
            tf.io.decode_raw(s, tf.string)


def round_trip_builder():
    """The decoding ops for test_graph_def's round-trip table."""
    raw = tf.placeholder(tf.string, [None], name="raw")
    csv = tf.placeholder(tf.string, [None], name="csv")
    cols = tf.io.decode_csv(csv, [[0], [""], [0.5]], na_value="NA", select_cols=[0, 1, 3])
    ser = tf.io.serialize_tensor(tf.io.decode_raw(raw, tf.int16, little_endian=False))
    fetches = [*cols, tf.io.encode_base64(raw, pad=True), ser, tf.io.parse_tensor(ser, tf.int16)]
    feed = {"raw:0": np.array(fx.RAW, object), "csv:0": np.array(["1,a,x,2", "2,NA,,"], object)}
    return fetches, feed, []
