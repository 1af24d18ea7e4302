"""Session semantics: fetches, feeds, pruning, errors, callables, threads, tracing."""

import collections
import threading

import numpy as np
import pytest

import engine as tf
from engine import errors
from tests.fake_device import default_device_name


def test_guide_run_example_fetches_and_feeds():
    x = tf.constant([[37.0, -23.0], [1.0, 4.0]])
    w = tf.Variable(tf.random_uniform([2, 2], seed=7))
    y = tf.matmul(x, w)
    output = tf.nn.softmax(y)
    with tf.Session() as sess:
        sess.run(w.initializer)
        out1 = sess.run(output)
        y_val, output_val = sess.run([y, output])
        np.testing.assert_allclose(output_val, out1)
        # float32 products of terms up to 37 in size: an absolute bound too (37 * -23 terms
        # can cancel to a small result whose relative error is large in float32)
        np.testing.assert_allclose(
            y_val, np.asarray([[37.0, -23.0], [1.0, 4.0]]) @ sess.run(w), rtol=1e-5, atol=2e-5
        )


def test_guide_placeholder_example():
    x = tf.placeholder(tf.float32, shape=[3])
    y = tf.square(x)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {x: [1.0, 2.0, 3.0]}), [1.0, 4.0, 9.0])
        np.testing.assert_array_equal(sess.run(y, {x: [0.0, 0.0, 5.0]}), [0.0, 0.0, 25.0])
        with pytest.raises(
            errors.InvalidArgumentError,
            match="You must feed a value for placeholder tensor 'Placeholder' "
            r"with dtype float32 and shape \[3\]",
        ):
            sess.run(y)
        with pytest.raises(
            ValueError,
            match=r"Cannot feed value of shape \(\) for Tensor "
            r"'Placeholder:0', which has shape '\(3,\)'",
        ):
            sess.run(y, {x: 37.0})


def test_fetch_structures_are_rebuilt():
    a = tf.constant(1)
    b = tf.constant(2.0)
    Pair = collections.namedtuple("Pair", "first second")
    with tf.Session() as sess:
        out = sess.run({"a": a, "nested": [b, (a, Pair(a, b))], "op": a.op})
        assert out["a"] == 1 and out["op"] is None
        assert out["nested"][0] == 2.0
        assert isinstance(out["nested"][1], tuple)
        assert isinstance(out["nested"][1][1], Pair) and out["nested"][1][1].second == 2.0
        od = sess.run(collections.OrderedDict([("z", a), ("y", b)]))
        assert isinstance(od, collections.OrderedDict) and list(od) == ["z", "y"]
        assert sess.run(a.op) is None
        assert sess.run([]) == []


def test_fetch_scalars_are_numpy_scalars_and_strings_bytes():
    with tf.Session() as sess:
        v = sess.run(tf.constant(2.0))
        assert type(v) is np.float32 and v == 2.0
        assert type(sess.run(tf.constant("ab"))) is bytes
        arr = sess.run(tf.constant(["a", "bc"]))
        assert arr.dtype == object and list(arr) == [b"a", b"bc"]


def test_fetch_by_name_and_invalid_fetches():
    tf.constant(3, name="c")
    with tf.Session() as sess:
        assert sess.run("c:0") == 3
        assert sess.run("c") is None
        with pytest.raises(TypeError, match="Fetch argument None has invalid type"):
            sess.run(None)
        with pytest.raises(TypeError, match="has invalid type"):
            sess.run(3)
        with pytest.raises(ValueError, match="cannot be interpreted as a Tensor"):
            sess.run("missing:0")


def test_duplicate_fetch_is_computed_once():
    counter = tf.Variable(0, name="counter")
    inc = tf.assign_add(counter, 1)
    with tf.Session() as sess:
        sess.run(counter.initializer)
        r = sess.run([inc, inc, {"again": inc}])
        assert r[0] == r[1] == r[2]["again"] == 1
        assert sess.run(counter) == 1


def test_feeds_accept_names_lists_scalars_and_cast():
    x = tf.placeholder(tf.float32, [None], name="x")
    y = x * 2
    with tf.Session() as sess:
        out = sess.run(y, {"x:0": [1, 2]})
        assert out.dtype == np.float32
        np.testing.assert_array_equal(out, [2.0, 4.0])
        np.testing.assert_array_equal(sess.run(y, {x: np.array([1.5], np.float64)}), [3.0])
        with pytest.raises(TypeError, match="feed cannot be a Tensor"):
            sess.run(y, {x: tf.constant([1.0])})
        with pytest.raises(TypeError, match="Cannot interpret feed_dict key"):
            sess.run(y, {"nope:0": [1.0]})
        with pytest.raises(ValueError, match="Cannot feed value"):
            sess.run(y, {x: ["a"]})


def test_any_tensor_can_be_fed_and_feeds_prune():
    a = tf.placeholder(tf.float32, name="a")
    b = a * 3
    c = b + 1
    with tf.Session() as sess:
        # a need not be fed: b cuts the path.
        assert sess.run(c, {b: 10.0}) == 11.0
        assert sess.run(b, {b: 5.0}) == 5.0


def test_pruning_runs_only_the_fetch_path():
    v = tf.Variable(0.0)
    inc = tf.assign_add(v, 1.0)
    other = tf.constant(5.0) * 2  # unrelated
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(other) == 10.0
        assert sess.run(v) == 0.0  # inc was not on the path
        sess.run(inc)
        assert sess.run(v) == 1.0


def test_control_dependencies_run_in_order():
    v = tf.Variable(1.0)
    assign = tf.assign(v, 10.0)
    with tf.control_dependencies([assign]):
        read = v.read_value() * 2
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(read) == 20.0


def test_variables_are_per_session():
    v = tf.Variable(1.0)
    inc = v.assign_add(1.0)
    s1, s2 = tf.Session(), tf.Session()
    s1.run(v.initializer)
    s2.run(v.initializer)
    s1.run(inc)
    s1.run(inc)
    assert s1.run(v) == 3.0 and s2.run(v) == 1.0
    s1.close()
    s2.close()


def test_uninitialized_variable_error_names_it():
    w = tf.Variable(tf.zeros([2]), name="weights")
    y = w * 2
    with tf.Session() as sess:
        with pytest.raises(
            errors.FailedPreconditionError, match="Attempting to use uninitialized value weights"
        ):
            sess.run(y)


def test_kernel_failure_names_op_type_and_shapes():
    x = tf.placeholder(tf.float32, [None])
    y = tf.reshape(x, [2, 2])
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError) as e:
            sess.run(y, {x: [1.0, 2.0, 3.0]})
    msg = str(e.value)
    assert "Reshape" in msg and "float32[3]" in msg and e.value.op is y.op


def test_closed_session_raises():
    sess = tf.Session()
    sess.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(tf.constant(1))
    c = tf.constant(1)
    with tf.Session() as s2:
        f = s2.make_callable(c)
    with pytest.raises(RuntimeError, match="closed Session"):
        f()


def test_session_context_sets_default_session_and_graph():
    g = tf.Graph()
    with g.as_default():
        c = tf.constant(4)
    sess = tf.Session(graph=g)
    with sess:
        assert tf.get_default_session() is sess
        assert tf.get_default_graph() is g
        assert c.eval() == 4
        c.op.run()
    assert tf.get_default_session() is None


def test_eval_without_session_or_wrong_graph():
    c = tf.constant(1)
    with pytest.raises(ValueError, match="No default session is registered"):
        c.eval()
    with pytest.raises(ValueError, match="No default session"):
        c.op.run()
    other = tf.Session(graph=tf.Graph())
    with pytest.raises(ValueError, match="graph is different"):
        c.eval(session=other)


def test_interactive_session():
    c = tf.constant(6)
    sess = tf.InteractiveSession()
    try:
        assert tf.get_default_session() is sess
        assert c.eval() == 6
    finally:
        sess.close()
    assert tf.get_default_session() is None


def test_session_rejects_remote_targets_and_bad_config():
    with pytest.raises(errors.UnimplementedError, match="in-process"):
        tf.Session("grpc://example.org:2222")
    with pytest.raises(TypeError, match="ConfigProto"):
        tf.Session(config={"allow_soft_placement": True})
    # (intra_op_parallelism_threads is process-wide: tests/engine/test_intra_op_threads.py
    # sets it in a fresh interpreter of its own)
    cfg = tf.ConfigProto(
        allow_soft_placement=True, log_device_placement=False, inter_op_parallelism_threads=2
    )
    cfg.gpu_options.allow_growth = True
    with tf.Session(config=cfg) as sess:
        assert sess.run(tf.constant(1)) == 1


def test_plans_are_cached_and_running_adds_no_ops():
    x = tf.placeholder(tf.float32, [None, 2])
    y = tf.reduce_sum(x * 2)
    g = tf.get_default_graph()
    with tf.Session() as sess:
        sess.run(y, {x: [[1, 2]]})
        n_ops, n_plans = len(g.get_operations()), len(sess._plans)
        for _ in range(20):
            sess.run(y, {x: [[1, 2]]})
        assert len(g.get_operations()) == n_ops
        assert len(sess._plans) == n_plans


def test_make_callable():
    x = tf.placeholder(tf.float32, [None], name="x")
    y = x + 1
    z = y * 2
    with tf.Session() as sess:
        f = sess.make_callable(y, feed_list=[x])
        np.testing.assert_array_equal(f([1.0, 2.0]), [2.0, 3.0])
        g = sess.make_callable([y, {"z": z}], feed_list=["x:0"])
        out = g(np.array([1.0], np.float32))
        assert out[0][0] == 2.0 and out[1]["z"][0] == 4.0
        with pytest.raises(TypeError, match="takes 1 feed"):
            f()
        op_callable = sess.make_callable(y.op, feed_list=[x])
        assert op_callable([1.0]) is None
        with pytest.raises(ValueError, match="Cannot feed value of shape"):
            f([[1.0]])


def test_make_callable_can_feed_shapes_as_tfs_cpp_session_does():
    """``check_feed_shapes=False``: a value of another shape than the placeholder's runs,
    the ops deciding (TF's C++ session, which TF Serving calls, checks no fed shape)."""
    x = tf.placeholder(tf.float32, [None, 1], name="x")
    y = x * 0.5 + 2.0
    with tf.Session() as sess:
        strict = sess.make_callable(y, feed_list=[x])
        lenient = sess.make_callable(y, feed_list=[x], check_feed_shapes=False)
        with pytest.raises(ValueError, match="Cannot feed value of shape"):
            strict(np.array([1.0, 2.0, 5.0], np.float32))
        np.testing.assert_array_equal(lenient(np.array([1.0, 2.0, 5.0], np.float32)), [2.5, 3, 4.5])
        np.testing.assert_array_equal(lenient(np.array([[1.0]], np.float32)), [[2.5]])
        with pytest.raises(ValueError, match="could not convert string"):
            lenient(np.array(["a"]))  # dtypes are still converted and checked


def test_fetched_values_do_not_alias_state():
    c = tf.constant([1.0, 2.0])
    v = tf.Variable([1.0, 2.0])
    with tf.Session() as sess:
        sess.run(v.initializer)
        a = sess.run(c)
        a[0] = 100.0
        np.testing.assert_array_equal(sess.run(c), [1.0, 2.0])
        b = sess.run(v)
        b[0] = 100.0
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])


def test_fed_array_assigned_to_variable_is_copied():
    v = tf.Variable([0.0, 0.0])
    p = tf.placeholder(tf.float32, [2])
    assign = v.assign(p)
    with tf.Session() as sess:
        fed = np.array([1.0, 2.0], np.float32)
        sess.run(assign, {p: fed})
        fed[0] = 50.0
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])


def test_concurrent_runs_from_threads():
    x = tf.placeholder(tf.float32, [None])
    y = x * 2 + 1
    results = {}
    errs = []
    with tf.Session() as sess:

        def work(i):
            try:
                for _ in range(50):
                    out = sess.run(y, {x: np.full(4, i, np.float32)})
                    if not np.array_equal(out, np.full(4, 2 * i + 1, np.float32)):
                        raise AssertionError(f"thread {i} got {out}")
                results[i] = True
            except Exception as e:  # noqa: BLE001
                errs.append(e)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errs and len(results) == 8


def test_full_trace_step_stats():
    x = tf.constant([[37.0, -23.0], [1.0, 4.0]])
    y = tf.matmul(x, tf.random_uniform([2, 2]))
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    metadata = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(y, options=options, run_metadata=metadata)
        default = default_device_name(sess)
    stats = [n for d in metadata.step_stats.dev_stats for n in d.node_stats]
    by_name = {n.node_name: n for n in stats}
    assert y.op.name in by_name
    node = by_name[y.op.name]
    assert node.op_type == "MatMul" and node.device == default
    assert node.all_start_micros > 0 and node.op_end_rel_micros >= 0
    assert metadata.step_stats.dev_stats[0].device == default


def test_run_metadata_untouched_without_trace():
    metadata = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(tf.constant(1) + 1, run_metadata=metadata)
    assert metadata.step_stats.dev_stats == []


def test_log_device_placement_prints_once_per_plan(capfd):
    c = tf.constant(1.0, name="c") * 2
    with tf.Session(config=tf.ConfigProto(log_device_placement=True)) as sess:
        sess.run(c)
        sess.run(c)
        default = default_device_name(sess)
    err = capfd.readouterr().err
    assert err.count("mul: (Mul)") == 1 and f"mul: (Mul): {default}" in err


def test_random_ops_draw_new_values_each_run_and_are_seedable():
    r = tf.random_normal([4], seed=3)
    with tf.Session() as s1:
        a1, a2 = s1.run(r), s1.run(r)
    with tf.Session() as s2:
        b1 = s2.run(r)
    assert not np.array_equal(a1, a2)
    np.testing.assert_array_equal(a1, b1)
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(7)
        r2 = tf.random_uniform([3])
    with tf.Session(graph=g) as s3, tf.Session(graph=g) as s4:
        np.testing.assert_array_equal(s3.run(r2), s4.run(r2))


def test_feed_key_may_be_a_structure_of_tensors():
    # TF feeds a namedtuple of tensors (an RNN's initial state) from a value of the same
    # structure, e.g. the final state fetched by the previous run.
    cell = tf.nn.rnn_cell.BasicLSTMCell(2)
    state = cell.zero_state(1, tf.float32)
    total = tf.reduce_sum(state.c) + 10 * tf.reduce_sum(state.h)
    with tf.Session() as sess:
        assert sess.run(total) == 0
        fed = tf.nn.rnn_cell.LSTMStateTuple(np.ones([1, 2], np.float32), np.ones([1, 2]))
        assert sess.run(total, {state: fed}) == 22
        assert sess.run(total, {(state.c, state.h): (fed.c, 2 * fed.h)}) == 42
        with pytest.raises(ValueError, match="same structure"):
            sess.run(total, {state: np.ones([1, 2], np.float32)})


def test_a_control_dependency_on_a_fed_placeholder_is_met_by_the_feed():
    # TF moves a fed placeholder's control edges onto the feed, so the placeholder never
    # runs; another fed op keeps its control edges and still runs (its inputs too), as in
    # TF 2.21's tf.compat.v1 (checked there: counter 1.0 after the first run, 2.0 after the
    # second).
    x = tf.placeholder(tf.float32, [], name="x")
    counter = tf.Variable(0.0)
    bump = tf.assign_add(counter, 1.0)
    computed = tf.identity(bump, name="computed")
    with tf.control_dependencies([x, computed]):
        y = tf.identity(x) * 2
    with tf.Session() as sess:
        sess.run(counter.initializer)
        assert sess.run(y, {x: 1.5, computed: 7.0}) == 3.0
        assert sess.run(counter) == 1.0
        with pytest.raises(tf.errors.InvalidArgumentError, match="must feed a value.*'x'"):
            sess.run(y, {computed: 7.0})
        assert sess.run(y, {x: 2.0}) == 4.0 and sess.run(counter) == 2.0


def test_string_constants_keep_trailing_nul_bytes():
    # numpy's fixed-width bytes drop trailing NULs; a constant keeps the bytes given.
    with tf.Session() as sess:
        assert sess.run(tf.constant(b"a\x00")) == b"a\x00"
        got = sess.run(tf.constant([[b"x\x00\x00", b"y"], [b"", "z\x00"]]))
    assert got.tolist() == [[b"x\x00\x00", b"y"], [b"", b"z\x00"]]
