"""tf.nn.ctc_loss and its gradient against TensorFlow 2.21 (tests/fixtures/tensorflow/
ctc_loss.npz, make_flow_fixtures.py part ctc_loss): merged and unmerged repeats, collapsed
labels, too-long targets ignored, and the errors."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import engine as tf

IO = np.load(pathlib.Path(__file__).parents[1] / "fixtures" / "tensorflow" / "ctc_loss.npz")
CASES = {
    "default": {},
    "unmerged": {"ctc_merge_repeated": False},
    "collapsed": {"preprocess_collapse_repeated": True},
}


@pytest.mark.parametrize("key", sorted(CASES))
def test_ctc_loss_and_gradient_match_tensorflow(key):
    with tf.Graph().as_default(), tf.Session() as sess:
        x = tf.constant(IO["logits"])
        labels = tf.SparseTensor(IO["indices"], IO["values"], [3, 4])
        loss = tf.nn.ctc_loss(labels, x, IO["lengths"], **CASES[key])
        grad = tf.gradients(tf.reduce_sum(loss * [1.0, 2.0, 0.5]), x)[0]
        got_loss, got_grad = sess.run([loss, grad])
    np.testing.assert_allclose(got_loss, IO[f"{key}_loss"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_grad, IO[f"{key}_grad"], rtol=1e-5, atol=1e-5)


def test_batch_major_inputs_and_ignored_long_targets():
    with tf.Graph().as_default(), tf.Session() as sess:
        labels = tf.SparseTensor(IO["indices"], IO["values"], [3, 4])
        major = tf.nn.ctc_loss(labels, tf.constant(IO["logits"].transpose(1, 0, 2)), IO["lengths"],
                               time_major=False)  # fmt: skip
        short = tf.SparseTensor([[0, 0], [0, 1], [0, 2]], [1, 1, 2], [1, 3])
        ignored = tf.nn.ctc_loss(short, tf.constant(IO["logits"][:, :1]), [2],
                                 ignore_longer_outputs_than_inputs=True)  # fmt: skip
        got, skipped = sess.run([major, ignored])
    np.testing.assert_allclose(got, IO["default_loss"], rtol=1e-5)
    np.testing.assert_array_equal(skipped, IO["ignored_loss"])


def test_ctc_errors_name_the_problem():
    short = tf.SparseTensor([[0, 0], [0, 1], [0, 2]], [1, 1, 2], [1, 3])
    x = tf.constant(IO["logits"][:2, :1])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Not enough time for target"):
            sess.run(tf.nn.ctc_loss(short, x, [2]))
        bad = tf.SparseTensor([[0, 0]], [4], [1, 1])  # class 4 is the blank of 5
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"labels must be in \[0, 4\)"):
            sess.run(tf.nn.ctc_loss(bad, x, [2]))
    with pytest.raises(TypeError, match="Expected labels .* SparseTensor"):
        tf.nn.ctc_loss([[1]], x, [2])
