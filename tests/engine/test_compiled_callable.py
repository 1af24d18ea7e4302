"""``make_callable`` compiles its plan into straight-line code with planned memory
(``engine.runtime.compiled`` / ``memplan``): results are bit-identical to the interpreter's,
reused buffers never leak into results or between threads, and every semantic of a call
(feed checks, typed op errors, variables read per call, fallbacks) is kept."""

from __future__ import annotations

import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

import engine as tf
from engine.runtime import Cancellation
from engine.runtime.memplan import plan_memory

ROOT = Path(__file__).resolve().parents[2]
# Memory planning is for the CPU: tests of its decisions pin their sessions there (no GPU,
# nor the TEST devices of FLOWSERVE_TEST_DEVICE=test).
CPU_ONLY = tf.ConfigProto(device_count={"GPU": 0, "TEST": 0})


def interpreted(sess, fetches, feeds):
    """The same computation through the interpreter (a call with options takes it)."""
    fn = sess.make_callable(fetches, feeds, accept_options=True)
    opts = tf.RunOptions()
    return lambda *values: fn(*values, options=opts)


def mlp(dtype, layers=(784, 256, 128, 10), seed=0):
    rng = np.random.default_rng(seed)
    x = tf.placeholder(dtype, [None, layers[0]], name="x")
    h = x
    for i, (n_in, n_out) in enumerate(zip(layers[:-1], layers[1:])):
        w = tf.Variable((rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(dtype))
        b = tf.Variable((rng.standard_normal(n_out) * 0.1).astype(dtype))
        h = tf.matmul(h, w) + b
        if i < len(layers) - 2:
            h = tf.nn.relu(h)
    return x, tf.nn.softmax(h)


def batches(dtype, width=784, sizes=(1, 64, 3, 64, 1, 0)):
    rng = np.random.default_rng(1)
    return [rng.standard_normal((n, width)).astype(dtype) for n in sizes]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mlp_bit_identical_to_interpreter_and_to_numpy(dtype):
    x, y = mlp(dtype)
    with tf.Session(config=CPU_ONLY) as sess:
        sess.run(tf.global_variables_initializer())
        fast, slow = sess.make_callable(y, [x]), interpreted(sess, y, [x])
        plan = sess._plan_for((x,), (y,))
        decisions = plan_memory(plan.steps, plan.fetch_slots).values()
        # Two matmul chains write kept buffers, bias adds and relus run in place.
        assert sum(d.arena is not None for d in decisions) == 2
        assert sum(d.inplace for d in decisions) == 6
        for xb in batches(dtype):  # the batch size changes between calls
            got = fast(xb)
            assert got.dtype == dtype and got.shape == (len(xb), 10)
            np.testing.assert_array_equal(got, slow(xb), strict=True)


def test_broadcasting_adds_in_place_only_when_the_shape_is_kept():
    rng = np.random.default_rng(2)
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    col = tf.matmul(x, tf.constant(rng.standard_normal((3, 1)).astype(np.float32)))  # (n, 1)
    wide = col + tf.constant(rng.standard_normal(4).astype(np.float32))  # grows to (n, 4)
    row = tf.matmul(x, tf.constant(rng.standard_normal((3, 4)).astype(np.float32)))
    kept = row * tf.constant(rng.standard_normal((1, 4)).astype(np.float32))  # stays (n, 4)
    out = tf.nn.relu(wide - kept) / tf.constant(np.float32(3.0))
    with tf.Session() as sess:
        fast, slow = sess.make_callable(out, [x]), interpreted(sess, out, [x])
        for n in (1, 5, 2):
            xb = rng.standard_normal((n, 3)).astype(np.float32)
            got = fast(xb)
            assert got.shape == (n, 4)
            np.testing.assert_array_equal(got, slow(xb), strict=True)


def test_fetched_intermediate_and_two_consumers_are_not_clobbered():
    rng = np.random.default_rng(3)
    x = tf.placeholder(tf.float64, [None, 8], name="x")
    h = tf.matmul(x, tf.constant(rng.standard_normal((8, 8))))
    a = tf.nn.relu(h)  # h has two readers: neither may write it in place
    b = h * tf.constant(2.0, tf.float64)
    c = a + b
    act = tf.nn.relu(tf.matmul(c, tf.constant(rng.standard_normal((8, 8)))))
    out = tf.nn.softmax(act + tf.constant(1.0, tf.float64))
    xb = rng.standard_normal((4, 8))
    with tf.Session() as sess:
        for fetches in ({"out": out}, {"act": act, "out": out, "h": h}):
            fast, slow = sess.make_callable(fetches, [x]), interpreted(sess, fetches, [x])
            got, want = fast(xb), slow(xb)
            for key in fetches:
                np.testing.assert_array_equal(got[key], want[key], strict=True)
        np.testing.assert_array_equal(got["act"], np.maximum(want["act"], 0))
        assert not np.shares_memory(got["act"], got["out"])


def test_outputs_kept_across_later_calls_stay_unchanged():
    x, y = mlp(np.float32, layers=(16, 32, 32, 4))
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((2, 16), np.float32), rng.standard_normal((2, 16), np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        logits = y.op.inputs[0]  # fetch an intermediate too: it must not be a kept buffer
        fn = sess.make_callable([y, logits], [x])
        first = fn(a)
        saved = [v.copy() for v in first]
        for _ in range(3):
            fn(b)
        for v, s in zip(first, saved):
            np.testing.assert_array_equal(v, s)


def test_threads_calling_one_callable_get_their_own_results():
    x, y = mlp(np.float32, layers=(32, 64, 64, 8))
    rng = np.random.default_rng(5)
    inputs = [rng.standard_normal((1 + i % 5, 32)).astype(np.float32) for i in range(8)]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        fn, slow = sess.make_callable(y, [x]), interpreted(sess, y, [x])
        want = [slow(v) for v in inputs]
        failures = []

        def hammer(k):
            for i in range(300):
                j = (k + i) % len(inputs)
                if not np.array_equal(fn(inputs[j]), want[j]):
                    failures.append((k, i))

        threads = [threading.Thread(target=hammer, args=(k,)) for k in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert failures == []


def test_hostile_op_names_and_strings_never_reach_the_source():
    hostile = "a'\"\n__import__('os').system('exit 3')#\\"
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    s = tf.placeholder(tf.string, [None], name="s")
    h = tf.nn.relu(tf.matmul(x, tf.constant([[1.0, -1.0], [2.0, 0.5]])))
    joined = s + tf.constant(hostile.encode())
    for op in (h.op, h.op.inputs[0].op, joined.op):
        op._name = hostile + op._name  # as a saved graph that skipped validation might
    with tf.Session() as sess:
        fn = sess.make_callable([h, joined], [x, s])
        got_h, got_s = fn(np.array([[1.0, 2.0]], np.float32), [b"z"])
        assert hostile not in fn.plan_source and "__import__" not in fn.plan_source
        np.testing.assert_array_equal(got_h, [[5.0, 0.0]])
        assert got_s.tolist() == [b"z" + hostile.encode()]


def test_errors_name_the_failing_op_as_the_interpreter_does():
    x = tf.placeholder(tf.float32, [None, None], name="x")
    y = tf.matmul(tf.nn.relu(x), tf.constant(np.ones((3, 2), np.float32)), name="project")
    with tf.Session() as sess:
        fast, slow = sess.make_callable(y, [x]), interpreted(sess, y, [x])
        bad = np.ones((2, 4), np.float32)
        with pytest.raises(tf.errors.InvalidArgumentError) as fast_err:
            fast(bad)
        with pytest.raises(tf.errors.InvalidArgumentError) as slow_err:
            slow(bad)
        assert str(fast_err.value) == str(slow_err.value)
        assert "'project'" in str(fast_err.value) and "float32[2, 4]" in str(fast_err.value)
        assert fast_err.value.op is y.op
        np.testing.assert_array_equal(fast(np.ones((1, 3), np.float32)), [[3.0, 3.0]])


def test_feed_errors_are_the_interpreters():
    x, y = mlp(np.float32, layers=(4, 3, 2))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        fast, slow = sess.make_callable(y, [x]), interpreted(sess, y, [x])
        for bad, kind in (
            (np.ones((2, 5), np.float32), ValueError),
            (np.ones(4, np.float32), ValueError),
            ([["a", "b", "c", "d"]], ValueError),
        ):
            with pytest.raises(kind) as a:
                fast(bad)
            with pytest.raises(kind) as b:
                slow(bad)
            assert str(a.value) == str(b.value)
        with pytest.raises(TypeError, match=r"takes 1 feed value\(s\) \(x:0\), got 2"):
            fast(np.ones((1, 4)), np.ones((1, 4)))
        # Lists and other dtypes are converted as before: the same bits.
        xs = [[0.5, -1.0, 2.0, 0.25]]
        np.testing.assert_array_equal(fast(xs), slow(np.asarray(xs, np.float32)))
        np.testing.assert_array_equal(fast(np.asarray(xs)), slow(np.asarray(xs)))


def test_variables_are_read_when_the_call_runs():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    w = tf.Variable(np.eye(2, dtype=np.float32))
    y = tf.nn.relu(tf.matmul(x, w))
    assign = w.assign(2 * np.eye(2, dtype=np.float32))
    with tf.Session() as sess:
        fn = sess.make_callable(y, [x])
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized"):
            fn(np.ones((1, 2), np.float32))
        sess.run(w.initializer)
        np.testing.assert_array_equal(fn(np.ones((1, 2), np.float32)), [[1.0, 1.0]])
        sess.run(assign)
        np.testing.assert_array_equal(fn(np.ones((1, 2), np.float32)), [[2.0, 2.0]])


def test_floating_point_warnings_stay_silenced_and_closed_sessions_refuse():
    x = tf.placeholder(tf.float32, [None], name="x")
    y = x / tf.constant(0.0)
    sess = tf.Session()
    fn = sess.make_callable(y, [x])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = fn(np.array([1.0, 0.0], np.float32))
    assert got[0] == np.inf and np.isnan(got[1])
    sess.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        fn(np.array([1.0], np.float32))


def test_options_and_memory_limits_take_the_interpreter():
    x = tf.placeholder(tf.float32, [None], name="x")
    y = tf.reduce_sum(x * 2.0 + 1.0)
    with tf.Session() as sess:
        fn = sess.make_callable(y, [x], accept_options=True)
        assert hasattr(fn, "plan_source")
        big = np.ones(1 << 16, np.float32)
        opts = tf.RunOptions(max_intermediate_bytes=1024)
        with pytest.raises(tf.errors.ResourceExhaustedError):
            fn(big, options=opts)
        assert fn(big) == 3.0 * (1 << 16)
    limited = tf.Session(config=tf.ConfigProto(max_intermediate_bytes=1024))
    with limited:
        fn = limited.make_callable(y, [x])
        assert not hasattr(fn, "plan_source")
        with pytest.raises(tf.errors.ResourceExhaustedError):
            fn(big)


def test_digits_cnn_bit_identical_to_interpreter():
    export = ROOT / "models" / "digits_cnn" / "1"
    sess = tf.Session(graph=tf.Graph())
    with sess:
        meta = tf.saved_model.load(sess, [tf.saved_model.SERVING], str(export))
        sig = meta.signature_def["serving_default"]
        (alias,) = sig.inputs
        feed = sess.graph.get_tensor_by_name(sig.inputs[alias].name)
        outs = [sess.graph.get_tensor_by_name(sig.outputs[k].name) for k in sorted(sig.outputs)]
        fast, slow = sess.make_callable(outs, [feed]), interpreted(sess, outs, [feed])
        dims = [d if d is not None else 5 for d in feed.shape.as_list()]
        xb = np.random.default_rng(6).random(dims).astype(np.float32)
        for got, want in zip(fast(xb), slow(xb)):
            np.testing.assert_array_equal(got, want, strict=True)


def test_a_cancellation_token_takes_the_checked_compiled_body():
    x, y = mlp(np.float32, layers=(8, 6, 3))
    xb = np.random.default_rng(7).standard_normal((3, 8)).astype(np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        fn, slow = sess.make_callable(y, [x], accept_options=True), interpreted(sess, y, [x])
        assert "c.check()" in fn.plan_source  # before every step
        np.testing.assert_array_equal(fn(xb, cancellation=Cancellation()), slow(xb))
        token = Cancellation()
        token.cancel("client went away")
        with pytest.raises(tf.errors.CancelledError) as fast_err:
            fn(xb, cancellation=token)
        with pytest.raises(tf.errors.CancelledError) as slow_err:
            fn(xb, options=tf.RunOptions(), cancellation=token)
        assert str(fast_err.value) == str(slow_err.value)
        assert "client went away" in str(fast_err.value)
        late = Cancellation(deadline=0.0)
        with pytest.raises(tf.errors.DeadlineExceededError):
            fn(xb, cancellation=late)
        np.testing.assert_array_equal(fn(xb), slow(xb))


def test_session_run_compiles_a_plan_on_its_second_run():
    x, y = mlp(np.float64, layers=(12, 9, 4))
    xb = np.random.default_rng(8).standard_normal((5, 12))
    interpreter = tf.RunOptions(timeout_in_ms=10**7)  # a token: the interpreter's loop
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        want = sess.run(y, {x: xb}, options=interpreter)
        plan = sess._plan_for((x,), (y,))
        first = sess.run(y, {x: xb})
        assert plan.compiled is None  # run once: not compiled
        for _ in range(3):
            np.testing.assert_array_equal(sess.run(y, {x: xb}), want, strict=True)
        assert callable(plan.compiled)
        np.testing.assert_array_equal(first, want, strict=True)
        with pytest.raises(ValueError, match="Cannot feed value of shape"):
            sess.run(y, {x: xb[:, :5]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="You must feed"):
            sess.run(y)


def test_a_reassigned_bias_is_seen_by_the_one_row_fast_path():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    b = tf.Variable(np.zeros(2, np.float32))
    y = tf.matmul(x, tf.constant(np.ones((3, 2), np.float32))) + b
    out = tf.nn.relu(y)
    with tf.Session() as sess:
        sess.run(b.initializer)
        fn, slow = sess.make_callable(out, [x]), interpreted(sess, out, [x])
        xb = np.array([[1.0, -2.0, 0.5]], np.float32)
        np.testing.assert_array_equal(fn(xb), [[0.0, 0.0]])
        for value in ([1.0, 2.0], [3.0, -4.0]):
            sess.run(b.assign(np.array(value, np.float32)))
            np.testing.assert_array_equal(fn(xb), slow(xb), strict=True)
            np.testing.assert_array_equal(fn(xb), [np.maximum(np.float32(-0.5) + value, 0)])


def test_zero_d_values_stay_arrays_between_steps():
    x = tf.placeholder(tf.float32, [], name="x")
    y = tf.nn.relu(x * tf.constant(3.0) + tf.constant(1.0)) - tf.constant(0.5)
    with tf.Session() as sess:
        fn, slow = sess.make_callable(y, [x]), interpreted(sess, y, [x])
        for v in (2.0, -4.0):
            got = fn(np.float32(v))
            assert got == slow(np.float32(v)) and got.dtype == np.float32
            assert sess.run(y, {x: v}) == got and sess.run(y, {x: v}) == got


def test_a_flat_list_of_fetches_comes_back_as_a_new_list_every_call():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None])
        y, z = x + 1.0, x * 2.0
        init = tf.no_op()
    with tf.Session(graph=g) as sess:
        flat = sess.make_callable([y, z], feed_list=[x])
        twice = sess.make_callable([y, y, z], feed_list=[x])
        with_op = sess.make_callable([z, init], feed_list=[x])
        a = flat(np.array([1.0], np.float32))
        a.append("mutated")
        b = flat(np.array([2.0], np.float32))
        assert b.__class__ is list and len(b) == 2 and b is not a
        assert b[0].tolist() == [3.0] and b[1].tolist() == [4.0]
        d = twice(np.array([1.0], np.float32))
        assert [v.tolist() for v in d] == [[2.0], [2.0], [2.0]]
        r, none = with_op(np.array([3.0], np.float32))
        assert r.tolist() == [6.0] and none is None


def test_loop_bodies_run_compiled_with_the_interpreters_values_and_errors():
    # A while_loop's cond and body run as compiled functions; a run with a deadline takes
    # the interpreter (which checks between steps): both give the same values and the
    # same typed error naming the op inside the body.
    from engine.runtime.compiled import compile_function

    n = tf.placeholder(tf.int32, [], name="n")
    x = tf.placeholder(tf.float32, [None, None], name="x")
    w = tf.placeholder(tf.float32, [None, None], name="w")
    wv = np.full((3, 3), 0.5, np.float32)

    def body(i, h):
        h = tf.tanh(tf.matmul(h, w, name="step_product") + 0.1)
        return i + 1, h

    _, out = tf.while_loop(lambda i, h: i < n, body, [tf.constant(0), x])
    sess = tf.Session()
    compiled = []
    real = compile_function

    def spy(plan, n_out, slow):
        f = real(plan, n_out, slow)
        compiled.append(f)
        return f

    import engine.session as session_module

    session_module.compile_function, saved = spy, session_module.compile_function
    try:
        xv = np.arange(6, dtype=np.float32).reshape(2, 3) / 6
        fast = sess.run(out, {n: 7, x: xv, w: wv})
    finally:
        session_module.compile_function = saved
    assert compiled and all(f is not None and hasattr(f, "plan_source") for f in compiled)
    options = tf.RunOptions(timeout_in_ms=60_000)
    slow = sess.run(out, {n: 7, x: xv, w: wv}, options=options)
    want = xv
    for _ in range(7):
        want = np.tanh(want @ wv + np.float32(0.1))
    np.testing.assert_array_equal(fast, slow)
    np.testing.assert_allclose(fast, want, rtol=1e-6)
    errors = []
    for opts in (None, options):  # a [2, 3] @ [4, 4] product inside the body
        with pytest.raises(tf.errors.InvalidArgumentError) as err:
            sess.run(out, {n: 3, x: xv, w: np.ones((4, 4), np.float32)}, options=opts)
        errors.append(str(err.value))
    assert errors[0] == errors[1] and "step_product" in errors[0]
