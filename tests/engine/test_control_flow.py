"""cond, while_loop and TensorArray: semantics, errors and gradients."""

import collections

import numpy as np
import pytest

import engine as tf
from engine import errors


def run(fetches, feed=None, init=False):
    with tf.Session() as sess:
        if init:
            sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


# -- cond -----------------------------------------------------------------------------------


def test_cond_runs_only_the_taken_branch_including_side_effects():
    x = tf.placeholder(tf.float32, [], name="x")
    v = tf.Variable(0.0)
    r = tf.cond(x > 0, lambda: tf.assign_add(v, 1.0) * 10, lambda: tf.assign_add(v, -5.0))
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(r, {x: 1.0}) == 10.0
        assert sess.run(v) == 1.0
        assert sess.run(r, {x: 1.0}) == 20.0
        assert sess.run(r, {x: -1.0}) == -3.0
        assert sess.run(v) == -3.0


def test_ops_created_outside_the_branches_always_run():
    # The classic TF1 pitfall, kept: the assign is created outside the branch functions.
    v = tf.Variable(0.0)
    inc = tf.assign_add(v, 1.0)
    p = tf.placeholder(tf.bool, [])
    r = tf.cond(p, lambda: inc, lambda: tf.constant(0.0))
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(r, {p: False})
        assert sess.run(v) == 1.0


def test_cond_structures_strict_and_ops():
    p = tf.placeholder(tf.bool, [])
    a, b = tf.constant(1), tf.constant(2.0)
    out = tf.cond(p, lambda: {"x": a, "y": (b, b * 2)}, lambda: {"x": a * 3, "y": (b, b)})
    single = tf.cond(p, lambda: [a], lambda: [a + 1])
    strict = tf.cond(p, lambda: [a], lambda: [a + 1], strict=True)
    v = tf.Variable(0)
    op_out = tf.cond(p, lambda: tf.assign(v, 7).op, lambda: tf.assign(v, 9).op)
    assert isinstance(single, tf.Tensor) and isinstance(strict, list)
    with tf.Session() as sess:
        sess.run(v.initializer)
        r = sess.run(out, {p: True})
        assert r["x"] == 1 and r["y"] == (2.0, 4.0)
        r = sess.run(out, {p: False})
        assert r["x"] == 3 and r["y"] == (2.0, 2.0)
        assert sess.run(single, {p: False}) == 2
        sess.run(op_out, {p: False})
        assert sess.run(v) == 9


def test_cond_errors():
    x = tf.constant(1.0)
    with pytest.raises(TypeError, match="must not be a Python bool"):
        tf.cond(True, lambda: x, lambda: x)
    with pytest.raises(TypeError, match="must be callable"):
        tf.cond(tf.constant(True), x, lambda: x)
    with pytest.raises(ValueError, match="same type"):
        tf.cond(tf.constant(True), lambda: x, lambda: tf.constant(1))
    with pytest.raises(ValueError, match="same structure"):
        tf.cond(tf.constant(True), lambda: [x, x], lambda: x)
    with pytest.raises(ValueError, match="rank 0"):
        tf.cond(tf.constant([True]), lambda: x, lambda: x)
    with pytest.raises(TypeError, match="bool"):
        tf.cond(tf.constant(1), lambda: x, lambda: x)


def test_cond_captures_placeholders_and_shapes_merge():
    p = tf.placeholder(tf.bool, [])
    a = tf.placeholder(tf.float32, [2, 3])
    b = tf.placeholder(tf.float32, [2, None])
    r = tf.cond(p, lambda: a * 2, lambda: b)
    assert r.shape.as_list() == [2, None]
    ones = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(run(r, {p: True, a: ones, b: ones}), ones * 2)
    with pytest.raises(errors.InvalidArgumentError, match="must feed"):
        run(r, {p: True, a: ones})


def test_cond_inside_while_and_while_inside_cond():
    def body(i, acc):
        return i + 1, tf.cond(tf.equal(i % 2, 0), lambda: acc + i, lambda: acc - i)

    _, acc = tf.while_loop(lambda i, acc: i < 6, body, [tf.constant(0), tf.constant(0)])
    p = tf.placeholder(tf.bool, [])
    w = tf.cond(
        p,
        lambda: tf.while_loop(lambda k: k < 5, lambda k: k + 2, [tf.constant(0)]),
        lambda: tf.constant(-1),
    )
    assert run(acc) == 0 - 1 + 2 - 3 + 4 - 5
    assert run(w, {p: True}) == 6 and run(w, {p: False}) == -1


def test_cond_control_dependency_on_outer_op_inside_branch():
    v = tf.Variable(1.0)
    assign = tf.assign(v, 5.0)

    def branch():
        with tf.control_dependencies([assign]):
            return v.read_value() * 2

    r = tf.cond(tf.constant(True), branch, lambda: tf.constant(0.0))
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(r) == 10.0


def test_gradients_through_cond_and_where():
    x = tf.placeholder(tf.float64, [3])
    p = tf.placeholder(tf.bool, [])
    y = tf.cond(p, lambda: x * x * 3.0, lambda: tf.sin(x))
    g = tf.gradients(y, x)[0]
    xv = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(run(g, {x: xv, p: True}), 6 * xv)
    np.testing.assert_allclose(run(g, {x: xv, p: False}), np.cos(xv))
    w = tf.where(x > 0, x * x, -x)
    gw = tf.gradients(w, x)[0]
    np.testing.assert_allclose(run(gw, {x: xv}), np.where(xv > 0, 2 * xv, -1))
    err = tf.test.compute_gradient_error(x, [3], y, [3], x_init_value=xv, extra_feed_dict={p: True})
    assert err < 1e-6


def test_gradient_through_cond_reaches_variables():
    w = tf.Variable([1.0, 2.0])
    p = tf.placeholder(tf.bool, [])
    loss = tf.cond(p, lambda: tf.reduce_sum(w * w), lambda: tf.reduce_sum(w))
    g = tf.gradients(loss, w)[0]
    with tf.Session() as sess:
        sess.run(w.initializer)
        np.testing.assert_array_equal(sess.run(g, {p: True}), [2.0, 4.0])
        np.testing.assert_array_equal(sess.run(g, {p: False}), [1.0, 1.0])


# -- while_loop -----------------------------------------------------------------------------


def test_fibonacci_with_while_loop():
    def body(i, a, b):
        return i + 1, b, a + b

    _, fib, _ = tf.while_loop(
        lambda i, a, b: i < 20,
        body,
        [tf.constant(0), tf.constant(0, tf.int64), tf.constant(1, tf.int64)],
    )
    assert run(fib) == 6765


def test_fibonacci_with_tensor_array():
    n = 12
    ta = tf.TensorArray(tf.int32, size=n)
    ta = ta.write(0, 0).write(1, 1)

    def body(i, ta):
        return i + 1, ta.write(i, ta.read(i - 1) + ta.read(i - 2))

    _, ta = tf.while_loop(lambda i, ta: i < n, body, [2, ta])
    out = ta.stack()
    assert out.shape.as_list() == [12]  # a constant size is the leading dimension, as in TF
    np.testing.assert_array_equal(run(out), [0, 1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89])


def test_single_loop_var_returns_tensor_and_structures():
    r = tf.while_loop(lambda i: i < 10, lambda i: i + 3, [tf.constant(0)])
    assert isinstance(r, tf.Tensor)
    assert run(r) == 12
    Pair = collections.namedtuple("Pair", "i total")
    out = tf.while_loop(
        lambda p: p.i < 4,
        lambda p: Pair(p.i + 1, p.total + p.i),
        Pair(tf.constant(0), tf.constant(0)),
    )
    assert isinstance(out, Pair) and run(out) == Pair(4, 6)
    d = tf.while_loop(
        lambda s: s["a"] < 3,
        lambda s: {"a": s["a"] + 1, "b": s["b"] * 2.0},
        [{"a": tf.constant(0), "b": tf.constant(1.0)}],
        return_same_structure=True,
    )
    assert run(d) == [{"a": 3, "b": 8.0}]


def test_maximum_iterations():
    r = tf.while_loop(lambda i: i < 100, lambda i: i + 1, [tf.constant(0)], maximum_iterations=7)
    assert run(r) == 7
    m = tf.placeholder(tf.int32, [])
    r2 = tf.while_loop(
        lambda i: tf.constant(True),  # never stops by itself: the limit stops it
        lambda i: i + 2,
        [tf.constant(0)],
        maximum_iterations=m,
    )
    assert run(r2, {m: 4}) == 8


def test_shape_invariants():
    x = tf.constant([1.0])
    with pytest.raises(
        ValueError,
        match="enters the loop with shape \\(1,\\), but has shape \\(2,\\) after one iteration",
    ):
        tf.while_loop(lambda t: tf.size(t) < 8, lambda t: tf.concat([t, t], 0), [x])
    r = tf.while_loop(
        lambda t: tf.size(t) < 8,
        lambda t: tf.concat([t, t], 0),
        [x],
        shape_invariants=[tf.TensorShape([None])],
    )
    assert r.shape.as_list() == [None]
    np.testing.assert_array_equal(run(r), np.ones(8))
    with pytest.raises(ValueError, match="not compatible with the initial shape"):
        tf.while_loop(lambda t: True, lambda t: t, [x], shape_invariants=[tf.TensorShape([2])])


def test_while_loop_errors():
    with pytest.raises(TypeError, match="'cond' must be callable"):
        tf.while_loop(1, lambda i: i, [0])
    with pytest.raises(ValueError, match="must return the structure"):
        tf.while_loop(lambda i: i < 10, lambda i: (i + 1, i), [tf.constant(0)])
    with pytest.raises(TypeError, match="enters the loop with dtype int32, but has dtype float32"):
        tf.while_loop(lambda i: i < 10, lambda i: tf.cast(i, tf.float32), [tf.constant(0)])
    with pytest.raises(ValueError, match="boolean scalar"):
        tf.while_loop(lambda i: i, lambda i: i, [tf.constant(0)])
    with pytest.raises(ValueError, match="Variables cannot be created"):
        tf.while_loop(lambda i: i < 1, lambda i: i + tf.cast(tf.Variable(1.0), tf.int32), [0])


def test_loops_add_no_ops_per_iteration():
    n = tf.placeholder(tf.int32, [])
    r = tf.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s + i), [0, 0])
    g = tf.get_default_graph()
    before = len(g.get_operations())
    with tf.Session() as sess:
        assert sess.run(r, {n: 10}) == [10, 45]
        assert sess.run(r, {n: 10000}) == [10000, 49995000]
    assert len(g.get_operations()) == before


def test_while_loop_side_effects_and_variables_inside():
    v = tf.Variable(0)

    def body(i):
        with tf.control_dependencies([tf.assign_add(v, i)]):
            return i + 1

    r = tf.while_loop(lambda i: i < 5, body, [tf.constant(0)])
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(r)
        assert sess.run(v) == 0 + 1 + 2 + 3 + 4


def test_get_variable_reuse_inside_loop_body():
    with tf.variable_scope("m"):
        w = tf.get_variable("w", [], initializer=tf.constant_initializer(2.0))

    def body(i, x):
        with tf.variable_scope("m", reuse=True):
            return i + 1, x * tf.get_variable("w")

    _, out = tf.while_loop(lambda i, x: i < 3, body, [0, tf.constant(1.0)])
    assert run(out, init=True) == 8.0 and w.name == "m/w:0"


def test_gradient_of_power_computed_by_loop():
    x = tf.placeholder(tf.float64, [])
    n = 7
    _, y = tf.while_loop(
        lambda i, y: i < n, lambda i, y: (i + 1, y * x), [0, tf.constant(1.0, tf.float64)]
    )
    g = tf.gradients(y, x)[0]
    for xv in (0.5, 1.5, -2.0):
        np.testing.assert_allclose(run(g, {x: xv}), n * xv ** (n - 1))
    # the loop-variable path too: d/dx of (x**2 repeated k times)
    _, z = tf.while_loop(lambda i, z: i < 3, lambda i, z: (i + 1, z * z), [0, x])
    gz = tf.gradients(z, x)[0]
    np.testing.assert_allclose(run(gz, {x: 1.1}), 8 * 1.1**7)


def test_gradient_through_loop_to_variable_and_training():
    w = tf.Variable(0.5)
    _, y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * w), [0, tf.constant(1.0)])
    loss = tf.square(y - 0.125 * 8)  # w**3 = 1 -> w = 1
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session() as sess:
        sess.run(w.initializer)
        for _ in range(200):
            sess.run(train)
        assert abs(sess.run(w) - 1.0) < 1e-3


# -- TensorArray ----------------------------------------------------------------------------


def test_tensor_array_api():
    ta = tf.TensorArray(tf.float32, size=3)
    ta = ta.unstack(tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
    assert ta.element_shape.as_list() == [2]
    read = ta.read(1)
    gathered = ta.gather([2, 0])
    size = ta.size()
    concat = ta.concat()
    grow = tf.TensorArray(tf.int32, size=0, dynamic_size=True).write(3, 7)
    split = tf.TensorArray(tf.float32, size=2).split(tf.constant([1.0, 2.0, 3.0]), [1, 2])
    r = run([read, gathered, size, concat, grow.size(), grow.read(3), split.read(1)])
    np.testing.assert_array_equal(r[0], [3.0, 4.0])
    np.testing.assert_array_equal(r[1], [[5.0, 6.0], [1.0, 2.0]])
    assert r[2] == 3 and r[4] == 4 and r[5] == 7
    np.testing.assert_array_equal(r[3], [1, 2, 3, 4, 5, 6])
    np.testing.assert_array_equal(r[6], [2.0, 3.0])


def test_tensor_array_errors():
    ta = tf.TensorArray(tf.float32, size=2)
    with pytest.raises(TypeError, match="TensorArray dtype is float32"):
        ta.write(0, tf.constant(1))
    with pytest.raises(errors.InvalidArgumentError, match="not resizeable"):
        run(ta.write(5, 1.0).flow)
    with pytest.raises(errors.InvalidArgumentError, match="already been written"):
        run(ta.write(0, 1.0).write(0, 2.0).flow)
    with pytest.raises(errors.InvalidArgumentError, match="not yet been written"):
        run(tf.TensorArray(tf.float32, size=2).read(1))
    with pytest.raises(ValueError, match="Inconsistent shapes"):
        tf.TensorArray(tf.float32, size=2).write(0, [1.0]).write(1, [1.0, 2.0])


def test_tensor_array_is_fresh_each_run():
    ta = tf.TensorArray(tf.float32, size=1).write(0, tf.random_uniform([]))
    with tf.Session() as sess:
        a = sess.run(ta.read(0))
        b = sess.run(ta.read(0))
    assert a != b
