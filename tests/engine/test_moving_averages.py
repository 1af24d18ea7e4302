"""tf.train.ExponentialMovingAverage: values and names as TensorFlow 2.21 gives them for the
same program (recorded with tf.compat.v1)."""

import numpy as np
import pytest

import engine as tf


def test_moving_averages_of_a_variable_and_a_tensor_match_tensorflow():
    w = tf.Variable([1.0, 2.0], name="w")
    x = tf.placeholder(tf.float32, [2])
    m = tf.reduce_mean(x * w, name="m")
    step = tf.Variable(0, trainable=False, name="step")
    ema = tf.train.ExponentialMovingAverage(0.9, num_updates=step)
    update = ema.apply([w, m])
    inc = tf.assign_add(w, [0.5, -0.5])
    bump = tf.assign_add(step, 3)
    assert ema.average_name(w) == "w/ExponentialMovingAverage"
    assert ema.average(m).op.name == "m/ExponentialMovingAverage"
    assert sorted(ema.variables_to_restore()) == [
        "m/ExponentialMovingAverage",
        "step",
        "w/ExponentialMovingAverage",
    ]
    assert ema.variables_to_restore()["w/ExponentialMovingAverage"] is w
    assert w in tf.moving_average_variables()
    got = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for i in range(4):
            sess.run(inc)
            sess.run(update, {x: [1.0 + i, 2.0]})
            sess.run(bump)
            got.append(sess.run([ema.average(w), ema.average(m)]))
    want = [  # TF 2.21
        ([1.45, 1.55], 2.025),
        ([1.8307689428329468, 1.1692310571670532], 2.7),
        ([2.207211971282959, 0.792788028717041], 3.571875),
        ([2.582742929458618, 0.41725701093673706], 4.722039),
    ]
    for (gw, gm), (ww, wm) in zip(got, want):
        np.testing.assert_allclose(gw, ww, rtol=1e-6)
        np.testing.assert_allclose(gm, wm, rtol=1e-6)


def test_moving_average_errors():
    ema = tf.train.ExponentialMovingAverage(0.5)
    v = tf.Variable(1.0)
    ema.apply([v])
    with pytest.raises(ValueError, match="already computed"):
        ema.apply([v])
    with pytest.raises(TypeError, match="half, float, or double"):
        ema.apply([tf.constant(1)])
    with pytest.raises(ValueError, match="fully defined shape"):
        ema.apply([tf.placeholder(tf.float32, [None])])
    with pytest.raises(ValueError, match="zero_debias"):
        tf.train.ExponentialMovingAverage(0.5, zero_debias=True)
