"""Bounded execution: ``RunOptions(timeout_in_ms=...)`` and cancellation tokens stop a run
between ops and per while_loop iteration, as TF1's run timeouts do."""

import threading
import time

import numpy as np
import pytest

import engine as tf
from engine.runtime import Cancellation


def endless_loop():
    x = tf.placeholder(tf.float32, [None], name="x")
    n = tf.placeholder_with_default(tf.constant(10**9), [], name="n")
    _, y = tf.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, y * 1.0), [0, x])
    return x, n, y


def test_run_timeout_stops_a_while_loop_with_deadline_exceeded():
    x, n, y = endless_loop()
    with tf.Session() as sess:
        t0 = time.monotonic()
        with pytest.raises(tf.errors.DeadlineExceededError, match="Timed out"):
            sess.run(y, {x: [1.0]}, options=tf.RunOptions(timeout_in_ms=100))
        assert time.monotonic() - t0 < 5
        # The session is fine afterwards; a run within its timeout returns its value.
        out = sess.run(y, {x: [2.0], n: 3}, options=tf.RunOptions(timeout_in_ms=60_000))
        assert out.tolist() == [2.0]


def test_nested_loops_are_stopped_too():
    x = tf.placeholder(tf.float32, [], name="x")

    def outer_body(i, acc):
        _, inner = tf.while_loop(lambda j, a: j < 10**9, lambda j, a: (j + 1, a + 1.0), [0, acc])
        return i + 1, inner

    _, y = tf.while_loop(lambda i, a: i < 3, outer_body, [0, x])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(y, {x: 0.0}, options=tf.RunOptions(timeout_in_ms=100))


def test_a_callable_is_cancelled_from_another_thread():
    x, _, y = endless_loop()
    with tf.Session() as sess:
        f = sess.make_callable(y, feed_list=[x], accept_options=True)
        token = Cancellation()
        threading.Timer(0.1, token.cancel, args=("client went away",)).start()
        with pytest.raises(tf.errors.CancelledError, match="client went away"):
            f(np.array([1.0], np.float32), cancellation=token)
        f2 = sess.make_callable(y, feed_list=[x, "n:0"], accept_options=True)
        assert f2(np.array([5.0], np.float32), 2, cancellation=Cancellation()).tolist() == [5.0]
        # A callable with options takes RunOptions' timeout as well.
        with pytest.raises(tf.errors.DeadlineExceededError):
            f(np.array([1.0], np.float32), options=tf.RunOptions(timeout_in_ms=50))


def test_a_cancelled_token_stops_before_the_first_op():
    a = tf.constant(1.0) + 2.0
    token = Cancellation()
    token.cancel()
    with tf.Session() as sess:
        f = sess.make_callable(a, accept_options=True)
        with pytest.raises(tf.errors.CancelledError):
            f(cancellation=token)
        assert f() == 3.0
        assert sess.run(a, options=tf.RunOptions(timeout_in_ms=0)) == 3.0  # 0: no timeout
