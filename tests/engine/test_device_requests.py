"""Explicit device requests on the single-device fast path: unsatisfiable ones fail as in TF
unless allow_soft_placement; satisfiable ones run."""

import pytest

import engine as tf
from engine import devices


@pytest.mark.skipif(devices.gpu_count() > 0, reason="needs a machine without a GPU")
def test_gpu_request_without_gpu_fails_unless_soft_placement():
    with tf.device("/gpu:0"):
        y = tf.multiply(tf.constant(2.0), 3.0, name="scaled")
    with tf.Session() as sess:
        with pytest.raises(
            tf.errors.InvalidArgumentError,
            match="Cannot assign a device for operation (Const|scaled).*GPU:0",
        ):
            sess.run(y)
    config = tf.ConfigProto(allow_soft_placement=True)
    with tf.Session(config=config) as sess:
        assert sess.run(y) == 6.0


def test_cpu_requests_and_unknown_devices():
    with tf.device("/job:localhost/replica:0/task:0/device:CPU:0"):
        a = tf.constant(1.0) + 1.0
    with tf.device("/cpu:3"):
        b = tf.constant(1.0) - 1.0
    with tf.Session() as sess:
        assert sess.run(a) == 2.0
        with pytest.raises(tf.errors.InvalidArgumentError, match="CPU:3"):
            sess.run(b)
