"""String ops: values as TensorFlow defines them, typed errors on bad input."""

import numpy as np
import pytest

import engine as tf
from engine import errors


def _s(*items):
    return tf.constant(np.array([i.encode() if isinstance(i, str) else i for i in items], object))


def _run(t, feed=None):
    with tf.Session() as sess:
        return sess.run(t, feed)


def test_string_to_number():
    with tf.Graph().as_default():
        assert _run(tf.strings.to_number(_s("1.5", " -2e3 "))).tolist() == [1.5, -2000.0]
        out = tf.string_to_number(_s("7", "-42"), out_type=tf.int64)
        assert out.dtype == tf.int64 and _run(out).tolist() == [7, -42]
        with pytest.raises(errors.InvalidArgumentError, match="could not correctly convert"):
            _run(tf.string_to_number(_s("abc")))
        with pytest.raises(errors.InvalidArgumentError):
            _run(tf.string_to_number(_s("1.5"), out_type=tf.int32))


def test_as_string_formats():
    with tf.Graph().as_default():
        x = tf.constant([3.14159, -2.0], tf.float32)
        assert _run(tf.as_string(x)).tolist() == [b"3.141590", b"-2.000000"]
        assert _run(tf.as_string(x, precision=2)).tolist() == [b"3.14", b"-2.00"]
        assert _run(tf.as_string(x, scientific=True, precision=1)).tolist() == [
            b"3.1e+00",
            b"-2.0e+00",
        ]
        assert _run(tf.as_string(tf.constant([5, 42]), width=4, fill="0")).tolist() == [
            b"0005",
            b"0042",
        ]
        assert _run(tf.as_string(tf.constant([True, False]))).tolist() == [b"true", b"false"]


def test_decode_base64_web_safe():
    with tf.Graph().as_default():
        out = tf.decode_base64(_s("aGVsbG8", "_-8=", ""))
        assert _run(out).tolist() == [b"hello", b"\xff\xef", b""]
        with pytest.raises(errors.InvalidArgumentError, match="base64"):
            _run(tf.decode_base64(_s("a$b")))


def test_substr_bytes_utf8_negative_and_broadcast():
    with tf.Graph().as_default():
        s = _s("hello", "world")
        assert _run(tf.substr(s, 1, 3)).tolist() == [b"ell", b"orl"]
        assert _run(tf.substr(s, -3, 2)).tolist() == [b"ll", b"rl"]
        assert _run(tf.substr(s, [0, 2], [2, 10])).tolist() == [b"he", b"rld"]
        assert _run(tf.substr(_s("héllo"), 1, 2, unit="UTF8_CHAR")).tolist() == ["él".encode()]
        with pytest.raises(errors.InvalidArgumentError, match="out of range"):
            _run(tf.substr(s, 9, 1))
        with pytest.raises((TypeError, ValueError)):
            tf.substr(s, 1.0, 2.0)
