"""Lookup tables (tf.lookup): initialised from tensors or files, per session."""

import numpy as np
import pytest

import engine as tf
from engine import errors


def _words(*ws):
    return tf.constant(np.array([w.encode() for w in ws], dtype=object))


def test_key_value_table_lookup_default_and_size():
    with tf.Graph().as_default():
        t = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                np.array([b"a", b"b"], dtype=object), np.array([1.5, 2.5], np.float32)
            ),
            -1.0,
        )
        out = t.lookup(_words("b", "zz", "a"))
        assert out.dtype == tf.float32 and out.shape.as_list() == [3]
        with tf.Session() as sess:
            with pytest.raises(errors.FailedPreconditionError, match="not initialized"):
                sess.run(out)
            sess.run(tf.tables_initializer())
            assert sess.run(out).tolist() == [2.5, -1.0, 1.5]
            assert sess.run(t.size()) == 2
        with tf.Session() as other:  # tables live in each session
            with pytest.raises(errors.FailedPreconditionError):
                other.run(out)


def test_text_file_columns_line_numbers_and_vocab_size(tmp_path):
    path = tmp_path / "v.tsv"
    path.write_text("apple\t10\nbanana\t20\ncherry\t30\n")
    with tf.Graph().as_default():
        by_line = tf.lookup.StaticHashTable(
            tf.lookup.TextFileInitializer(
                str(path), tf.string, 0, tf.int64, tf.lookup.TextFileIndex.LINE_NUMBER
            ),
            -1,
        )
        by_col = tf.lookup.StaticHashTable(
            tf.lookup.TextFileInitializer(str(path), tf.string, 0, tf.int64, 1, vocab_size=2),
            0,
        )
        words = _words("cherry", "banana", "kiwi")
        with tf.Session() as sess:
            sess.run(tf.tables_initializer())
            assert sess.run(by_line.lookup(words)).tolist() == [2, 1, -1]
            assert sess.run(by_col.lookup(words)).tolist() == [0, 20, 0]


def test_text_file_errors(tmp_path):
    path = tmp_path / "v.tsv"
    path.write_text("a\tnot-a-number\n")
    with tf.Graph().as_default():
        bad = tf.lookup.StaticHashTable(
            tf.lookup.TextFileInitializer(str(path), tf.string, 0, tf.int64, 1), 0
        )
        missing = tf.lookup.StaticHashTable(
            tf.lookup.TextFileInitializer(str(tmp_path / "nope"), tf.string, -2, tf.int64, -1), 0
        )
        with tf.Session() as sess:
            with pytest.raises(errors.InvalidArgumentError, match="not a int64"):
                sess.run(bad.initializer)
            with pytest.raises(errors.NotFoundError, match="not found"):
                sess.run(missing.initializer)
        with pytest.raises((TypeError, ValueError)):
            bad.lookup(tf.constant([1.0]))
