"""The runtime's phases and interpreter, each on its own."""

import numpy as np
import pytest

import engine as tf
from engine import errors
from engine.runtime.interpreter import execute
from engine.runtime.plan import order_ops, schedule_frees


def test_order_ops_prunes_at_feeds_and_orders_dependencies():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [], name="x")
        a = tf.add(x, 1.0, name="a")
        b = tf.multiply(a, 2.0, name="b")
        tf.subtract(b, 3.0, name="unused")
    order = order_ops((b,), {a: 0})
    assert [op.name for op in order] == ["b/y", "b"]
    names = [op.name for op in order_ops((b,), {x: 0})]
    assert names.index("a") < names.index("b") and "x" not in names and "unused" not in names
    with pytest.raises(errors.InvalidArgumentError, match="must feed a value for placeholder"):
        order_ops((b,), {})


def test_schedule_frees_after_the_last_reader_and_keeps_fetches():
    steps = [
        ("f0", (0,), 1, 1, (), None),  # reads slot 0, writes 1
        ("f1", (0, 1), 2, 1, (), None),  # last reader of 0 and 1, writes 2
        ("f2", (2,), 3, 1, (), None),  # last reader of 2, writes 3 (fetched)
    ]
    freed = [s[4] for s in schedule_frees(steps, keep={3})]
    assert [sorted(f) for f in freed] == [[], [0, 1], [2]]


def test_the_interpreter_names_the_failing_step():
    def boom(_v):
        raise ValueError("bad value")

    g = tf.Graph()
    with g.as_default():
        op = tf.add(tf.constant(1.0), 1.0, name="culprit").op
    vals = [np.float32(1.0), None, None]
    steps = [
        (lambda v: np.asarray(v), (0,), 1, 1, (), None),
        (boom, (1,), 2, 1, (), op),
    ]
    with pytest.raises(errors.InvalidArgumentError) as e:
        execute(steps, vals)
    msg = str(e.value)
    assert e.value.op is op and "AddV2 op 'culprit' failed on inputs (float32[])" in msg
    assert "ValueError: bad value" in msg and isinstance(e.value.__cause__, ValueError)


def test_a_failure_inside_a_loop_body_names_the_inner_op():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.int32, [None])

        def body(i, v):
            return i + 1, tf.reshape(v, [3], name="inner_reshape")

        _, out = tf.while_loop(lambda i, v: i < 2, body, [tf.constant(0), x])
        with tf.Session() as sess:
            assert list(sess.run(out, {x: [1, 2, 3]})) == [1, 2, 3]
            with pytest.raises(errors.InvalidArgumentError, match="inner_reshape"):
                sess.run(out, {x: [1, 2]})


def test_bind_context_gives_one_variable_slot_per_session():
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable([1.0, 2.0], name="v")
        inc = v.assign_add([1.0, 1.0])
        with tf.Session() as s1, tf.Session() as s2:
            s1.run(v.initializer)
            s2.run(v.initializer)
            s1.run(inc)
            s1.run(inc)
            np.testing.assert_array_equal(s1.run(v), [3.0, 4.0])
            np.testing.assert_array_equal(s2.run(v), [1.0, 2.0])
