"""The small TF1 names classic programs use: arg_max/arg_min, tf.logging, tf.contrib."""

import logging

import numpy as np
import pytest

import engine as tf


def test_arg_max_and_arg_min_aliases():
    x = tf.constant([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]])
    with tf.Session() as sess:
        a, b = sess.run([tf.arg_max(x, 1), tf.arg_min(x, 1)])
    np.testing.assert_array_equal(a, [1, 0])
    np.testing.assert_array_equal(b, [0, 1])


def test_tf_logging_uses_the_tensorflow_logger(caplog):
    tf.logging.set_verbosity(tf.logging.INFO)
    assert tf.logging.get_verbosity() == logging.INFO
    with caplog.at_level(logging.INFO, logger="tensorflow"):
        tf.logging.info("step %d", 3)
        for i in range(5):
            tf.logging.log_every_n(tf.logging.INFO, "every %d", 2, i)
    msgs = [r.getMessage() for r in caplog.records if r.name == "tensorflow"]
    assert msgs == ["step 3", "every 0", "every 2", "every 4"]


def test_contrib_rnn_and_layers():
    assert tf.contrib.rnn.BasicLSTMCell is tf.nn.rnn_cell.BasicLSTMCell
    x = tf.placeholder(tf.float32, [None, 2, 3])
    flat = tf.contrib.layers.flatten(x)
    h = tf.contrib.layers.fully_connected(
        flat, 4, weights_initializer=tf.contrib.layers.xavier_initializer()
    )
    reg = tf.contrib.layers.l2_regularizer(0.5)(tf.constant([3.0, 4.0]))
    assert flat.shape.as_list() == [None, 6] and h.name == "fully_connected/Relu:0"
    with tf.Session() as sess:
        assert sess.run(reg) == pytest.approx(0.5 * 25 / 2)


def test_contrib_names_what_it_lacks():
    with pytest.raises(AttributeError, match="tf.contrib.learn is not available.*out of its"):
        tf.contrib.learn  # noqa: B018
    with pytest.raises(AttributeError, match=r"contrib.slim is not available.*covers crf, distrib"):
        tf.contrib.slim  # noqa: B018
    with pytest.raises(AttributeError, match="tf.contrib.rnn.NASCell is not available"):
        tf.contrib.rnn.NASCell  # noqa: B018


def test_contrib_imports_as_tf1_programs_write_them():
    from engine.contrib import layers, rnn

    assert rnn is tf.contrib.rnn and layers is tf.contrib.layers
    assert rnn.static_rnn is tf.nn.static_rnn
    import engine.contrib.rnn as contrib_rnn

    assert contrib_rnn.BasicLSTMCell is tf.nn.rnn_cell.BasicLSTMCell
    with pytest.raises(ModuleNotFoundError, match="factorization is not available.*out of"):
        from engine.contrib.factorization import KMeans  # noqa: F401
    with pytest.raises(ModuleNotFoundError, match="eager is not available"):
        import engine.contrib.eager  # noqa: F401


def test_out_of_scope_tf1_names_say_so():
    assert tf.executing_eagerly() is False
    with pytest.raises(AttributeError, match="enable_eager_execution is not available.*eager"):
        tf.enable_eager_execution()
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        tf.no_such_name  # noqa: B018
    with pytest.raises(AttributeError, match="enable_v2_behavior is not available.*TF2"):
        tf.enable_v2_behavior()


def test_compat_v1_programs_first_lines_run():
    """``import tensorflow.compat.v1 as tf; tf.disable_v2_behavior()`` programs start with
    these calls; graphs and sessions work as before after them."""
    assert tf.disable_v2_behavior() is None
    assert tf.disable_eager_execution() is None
    assert tf.executing_eagerly() is False
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None])
        with tf.Session() as sess:
            assert sess.run(x * 2, {x: [1.5]}).tolist() == [3.0]
