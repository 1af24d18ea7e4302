"""``max_intermediate_bytes``: a run whose live intermediates would exceed the limit fails
with ResourceExhaustedError naming the op; each buffer counts once, freed values leave the
count, and feeds, constants and variables are not intermediates."""

import numpy as np
import pytest

import engine as tf
from engine.runtime import Cancellation, MemoryBudget

MB = 1 << 20


def chain():
    """x (fed, 1 MiB of float32) -> a = x*2 -> b = a+1 -> c = reduce_sum(b)."""
    x = tf.placeholder(tf.float32, [None], name="x")
    a = tf.multiply(x, 2.0, name="double")
    b = tf.add(a, 1.0, name="plus_one")
    c = tf.reduce_sum(b, name="total")
    return x, a, b, c


def ones(nbytes):
    return np.ones(nbytes // 4, np.float32)


def test_limit_names_the_op_that_exceeds_it():
    x, _, _, c = chain()
    with tf.Session() as sess:
        opts = tf.RunOptions(max_intermediate_bytes=MB + MB // 2)
        # double's output (1 MiB) fits; plus_one's adds another 1 MiB while double's is live.
        with pytest.raises(tf.errors.ResourceExhaustedError) as info:
            sess.run(c, {x: ones(MB)}, options=opts)
        msg = str(info.value)
        assert "plus_one" in msg and "Add" in msg
        assert "max_intermediate_bytes" in msg and str(MB + MB // 2) in msg
        assert info.value.op is not None and info.value.op.name == "plus_one"
        # Two live 1 MiB intermediates fit in 2 MiB: the same run succeeds, with the value.
        out = sess.run(c, {x: ones(MB)}, options=tf.RunOptions(max_intermediate_bytes=2 * MB))
        assert out == pytest.approx(3.0 * (MB // 4))
        # Without a limit, nothing is counted.
        assert sess.run(c, {x: ones(MB)}) == pytest.approx(3.0 * (MB // 4))


def test_the_first_op_over_the_limit_fails():
    x, _, _, c = chain()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.ResourceExhaustedError, match="'double'"):
            sess.run(c, {x: ones(MB)}, options=tf.RunOptions(max_intermediate_bytes=MB - 1))


def test_feeds_constants_and_variables_are_not_intermediates():
    big = tf.constant(np.ones(MB // 4, np.float32), name="big")
    v = tf.Variable(np.ones(MB // 4, np.float32), name="v")
    x = tf.placeholder(tf.float32, [None], name="x")
    # Identity and reshape views of them allocate nothing; reduce_sum's scalars are tiny.
    y = tf.reduce_sum(tf.identity(big)) + tf.reduce_sum(tf.reshape(v, [-1, 1]))
    y = y + tf.reduce_sum(tf.identity(x))
    with tf.Session() as sess:
        sess.run(v.initializer)
        out = sess.run(y, {x: ones(MB)}, options=tf.RunOptions(max_intermediate_bytes=1024))
        assert out == pytest.approx(3.0 * (MB // 4))


def test_freed_values_leave_the_count():
    # A chain of ten 1 MiB ops keeps at most two outputs live at once (each freed after its
    # only reader): 2 MiB is enough, though the run allocates 10 MiB in all.
    x = tf.placeholder(tf.float32, [None], name="x")
    y = x
    for i in range(10):
        y = tf.add(y, 1.0, name=f"step{i}")
    with tf.Session() as sess:
        out = sess.run(y, {x: ones(MB)}, options=tf.RunOptions(max_intermediate_bytes=2 * MB))
        assert out[:3].tolist() == [11.0, 11.0, 11.0]
        # A value still needed later stays counted: keep step0 alive to the end.
        z = tf.add(y, tf.get_default_graph().get_tensor_by_name("step0:0"), name="late")
        with pytest.raises(tf.errors.ResourceExhaustedError, match="'step"):
            sess.run(z, {x: ones(MB)}, options=tf.RunOptions(max_intermediate_bytes=2 * MB))
        assert sess.run(z, {x: ones(MB)}, options=tf.RunOptions(max_intermediate_bytes=3 * MB))[
            0
        ] == pytest.approx(13.0)


def test_session_default_and_callables():
    x, _, _, c = chain()
    config = tf.ConfigProto(max_intermediate_bytes=MB)
    with tf.Session(config=config) as sess:
        with pytest.raises(tf.errors.ResourceExhaustedError, match="plus_one"):
            sess.run(c, {x: ones(MB)})
        # RunOptions overrides the session's default.
        assert sess.run(
            c, {x: ones(MB)}, options=tf.RunOptions(max_intermediate_bytes=4 * MB)
        ) == pytest.approx(3.0 * (MB // 4))
        f = sess.make_callable(c, feed_list=[x], accept_options=True)
        with pytest.raises(tf.errors.ResourceExhaustedError, match="plus_one"):
            f(ones(MB))
        # With a caller's cancellation token too (as the server runs its callables).
        with pytest.raises(tf.errors.ResourceExhaustedError, match="plus_one"):
            f(ones(MB), cancellation=Cancellation())
        assert f(ones(1024)) == pytest.approx(3.0 * 256)
    with pytest.raises(ValueError, match="max_intermediate_bytes"):
        tf.Session(config=tf.ConfigProto(max_intermediate_bytes=-1))


def test_while_loop_bodies_count_against_the_limit():
    x = tf.placeholder(tf.float32, [], name="x")
    n = tf.placeholder(tf.int32, [], name="n")

    def body(i, acc):
        big = tf.fill([n], x, name="big")  # n float32s made inside each iteration
        return i + 1, acc + tf.reduce_sum(big)

    _, y = tf.while_loop(lambda i, acc: i < 3, body, [0, 0.0])
    with tf.Session() as sess:
        opts = tf.RunOptions(max_intermediate_bytes=MB)
        assert sess.run(y, {x: 1.0, n: 1000}, options=opts) == pytest.approx(3000.0)
        with pytest.raises(tf.errors.ResourceExhaustedError, match="big"):
            sess.run(y, {x: 1.0, n: MB // 4 + 1}, options=opts)


def test_budget_counts_each_buffer_once():
    budget = MemoryBudget(100)
    a = np.zeros(10, np.float64)  # 80 bytes
    k1 = budget.charge(a, None)
    k2 = budget.charge(a[2:], None)  # a view: the same buffer
    assert budget.live == 80 and k1 == k2
    budget.release(k1)
    assert budget.live == 80  # the view still holds it
    budget.release(k2)
    assert budget.live == 0 and budget.peak == 80
    with pytest.raises(tf.errors.ResourceExhaustedError, match="above its limit of 100"):
        budget.charge(np.zeros(13, np.float64), None)
    with pytest.raises(ValueError):
        MemoryBudget(0)
