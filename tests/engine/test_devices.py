"""Placement, soft placement, cross-device copies and device errors, on any machine.

The TEST devices of ``tests/fake_device.py`` stand in for GPUs: they run numpy kernels on
their own array type, take ops that have a GPU kernel, refuse string tensors, and (in
checked mode, on in the test suite) reject any kernel that reads or returns arrays of
another device. Every session here sees CPU:0 plus TEST:0..n-1.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import engine as tf
from engine import devices, errors
from engine.framework import registry
from tests import fake_device
from tests.fake_device import TestArray

CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
TEST0 = "/job:localhost/replica:0/task:0/device:TEST:0"
TEST1 = "/job:localhost/replica:0/task:0/device:TEST:1"


@pytest.fixture(autouse=True)
def _test_devices():
    with fake_device.registered(2):
        yield


def _placements(sess, fetches, feed_dict=None):
    """{op name: device name} of the ops a run of ``fetches`` executes, and its result."""
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    md = tf.RunMetadata()
    result = sess.run(fetches, feed_dict, options=options, run_metadata=md)
    where = {}
    for dev in md.step_stats.dev_stats:
        for node in dev.node_stats:
            where.setdefault(node.node_name, set()).add(dev.device)
    return {k: (v.pop() if len(v) == 1 else v) for k, v in where.items()}, result


def _copies(placements):
    return {k: v for k, v in placements.items() if "/_copy_to_" in k}


def test_sessions_list_the_registered_devices():
    with tf.Session() as sess:
        names = [d.name for d in sess.list_devices()]
    assert names[0] == CPU and TEST0 in names and TEST1 in names
    with tf.Session(config=tf.ConfigProto(device_count={"TEST": 1})) as sess:
        assert [d.short_name for d in sess.list_devices()] == ["CPU:0", "TEST:0"]
    with tf.Session(config=tf.ConfigProto(device_count={"TEST": 0})) as sess:
        assert [d.short_name for d in sess.list_devices()] == ["CPU:0"]


def test_ops_without_a_request_go_to_the_accelerator_and_fetches_come_back_as_numpy():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    w = tf.constant(np.arange(6, dtype=np.float32).reshape(3, 2), name="w")
    y = tf.nn.relu(tf.matmul(x, w, name="mm") - 4.0, name="y")
    feed = np.array([[1, 2, 3], [-1, 0, 1]], np.float32)
    with tf.Session() as sess:
        where, got = _placements(sess, y, {x: feed})
    assert where["mm"] == TEST0 and where["y"] == TEST0
    # The feed arrives on the host and is copied once to its consumer's device.
    assert _copies(where) == {"x:0/_copy_to_TEST:0": TEST0}
    assert type(got) is np.ndarray and not isinstance(got, TestArray)
    np.testing.assert_array_equal(got, np.maximum(feed @ np.arange(6).reshape(3, 2) - 4, 0))


def test_explicit_devices_and_copies_between_them():
    x = tf.placeholder(tf.float32, [4], name="x")
    with tf.device("/device:TEST:1"):
        a = tf.square(x, name="a")
    with tf.device("/cpu:0"):
        b = tf.add(a, 1.0, name="b")
    c = tf.multiply(b, a, name="c")  # default: TEST:0, reading b (CPU) and a (TEST:1)
    feed = np.array([1, 2, 3, 4], np.float32)
    with tf.Session() as sess:
        where, got = _placements(sess, [a, b, c], {x: feed})
    assert (where["a"], where["b"], where["c"]) == (TEST1, CPU, TEST0)
    assert set(_copies(where)) == {
        "x:0/_copy_to_TEST:1",
        "a:0/_copy_to_CPU:0",
        "a:0/_copy_to_TEST:0",
        "b:0/_copy_to_TEST:0",
    }
    np.testing.assert_array_equal(got[0], feed**2)
    np.testing.assert_array_equal(got[1], feed**2 + 1)
    np.testing.assert_array_equal(got[2], (feed**2 + 1) * feed**2)
    assert all(type(v) is np.ndarray for v in got)


def test_a_value_is_copied_once_per_destination_device():
    x = tf.placeholder(tf.float32, [2], name="x")
    with tf.device("/device:TEST:1"):
        outs = [tf.add(x, float(i), name=f"o{i}") for i in range(3)]
    with tf.Session() as sess:
        where, got = _placements(sess, outs, {x: np.ones(2, np.float32)})
    assert list(_copies(where)) == ["x:0/_copy_to_TEST:1"]
    assert [v.tolist() for v in got] == [[1, 1], [2, 2], [3, 3]]


def test_partial_device_specs_and_scopes_merge():
    with tf.device("/device:TEST:1"):
        with tf.device("/cpu:0"):
            on_cpu = tf.constant(1.0, name="on_cpu") * 2
        with tf.device(None):
            default = tf.constant(2.0, name="c") * 3
        with tf.device("/job:localhost/replica:0/task:0"):
            inherited = tf.multiply(tf.constant(3.0), 4.0, name="inherited")
    assert inherited.op.device == "/job:localhost/replica:0/task:0/device:TEST:1"
    with tf.Session() as sess:
        where, got = _placements(sess, [on_cpu, default, inherited])
    assert where[on_cpu.op.name] == CPU
    assert where[default.op.name] == TEST0
    assert where["inherited"] == TEST1
    assert got == [2.0, 6.0, 12.0]


def test_missing_device_is_an_error_naming_op_and_device():
    one = tf.constant(1.0)
    with tf.device("/device:TEST:7"):
        y = tf.add(one, one, name="far_away")
    with tf.Session() as sess, pytest.raises(errors.InvalidArgumentError) as e:
        sess.run(y)
    msg = str(e.value)
    assert "Cannot assign a device for operation far_away" in msg
    assert "/device:TEST:7" in msg and TEST0 in msg and "allow_soft_placement" in msg


def test_a_gpu_request_without_a_gpu_explains_why():
    if devices.gpu_count():
        pytest.skip("this machine has a GPU")
    one = tf.constant(1.0)
    with tf.device("/gpu:0"):
        y = tf.add(one, one, name="wants_gpu")
    with tf.Session() as sess, pytest.raises(errors.InvalidArgumentError) as e:
        sess.run(y)
    assert "Cannot assign a device for operation wants_gpu" in str(e.value)
    assert "appears to be a GPU, but" in str(e.value)
    # Soft placement: the op's default device (TEST:0 here, the CPU on a plain machine).
    with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
        where, got = _placements(sess, y)
    assert where["wants_gpu"] == TEST0 and got == 2.0
    with tf.Session(
        config=tf.ConfigProto(allow_soft_placement=True, device_count={"TEST": 0})
    ) as sess:
        where, got = _placements(sess, y)
    assert where["wants_gpu"] == CPU and got == 2.0


def test_soft_placement_keeps_the_device_type_when_the_index_is_missing():
    with tf.device("/device:TEST:5"):
        y = tf.multiply(tf.constant(2.0), 5.0, name="y")
    with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
        where, got = _placements(sess, y)
    assert where["y"] == TEST0 and got == 10.0


def test_ops_without_a_kernel_for_the_device():
    x = tf.constant([1.0, 2.0])
    with tf.device("/device:TEST:0"):
        y = tf.py_func(lambda v: v * 10, [x], tf.float32, name="host_only")
    with tf.Session() as sess, pytest.raises(errors.InvalidArgumentError) as e:
        sess.run(y)
    assert (
        "Cannot assign a device for operation host_only: Could not satisfy explicit "
        "device specification '/device:TEST:0' because no supported kernel for TEST "
        "devices is available."
    ) in str(e.value)
    with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
        where, got = _placements(sess, y)
    assert where["host_only"] == CPU
    np.testing.assert_array_equal(got, [10.0, 20.0])


def test_string_tensors_stay_on_the_host():
    words = tf.placeholder(tf.string, [None], name="words")
    s = tf.reshape(words, [-1, 1], name="s")  # no request: CPU, since TEST holds no strings
    n = tf.multiply(tf.size(words, name="n"), 2, name="twice")  # int: goes to TEST:0
    with tf.device("/device:TEST:0"):
        bad = tf.identity(words, name="bad")
    feed = {words: [b"a", b"bc"]}
    with tf.Session() as sess:
        where, got = _placements(sess, [s, n], feed)
        assert where["s"] == CPU and where["twice"] == TEST0
        assert got[0].tolist() == [[b"a"], [b"bc"]] and got[1] == 4
        with pytest.raises(errors.InvalidArgumentError, match="String tensors live in host"):
            sess.run(bad, feed)


def test_variables_live_on_their_device_and_readers_writers_colocate():
    with tf.device("/device:TEST:1"):
        v = tf.Variable(np.array([1.0, 2.0], np.float32), name="v")
    with tf.device("/cpu:0"):
        # Asked for the CPU, but an assignment runs where its variable is.
        assign = tf.assign(v, tf.constant([5.0, 7.0], name="new"), name="assign")
    y = tf.multiply(v, 2.0, name="y")  # reads on TEST:1, computes on TEST:0
    with tf.Session() as sess:
        sess.run(v.initializer)
        slot = sess._slots["v"]
        assert slot.device.name == TEST1
        assert isinstance(slot.value, TestArray) and slot.value.device_index == 1
        where, got = _placements(sess, [y, v])
        assert where["v/read"] == TEST1 and where["y"] == TEST0
        np.testing.assert_array_equal(got[0], [2.0, 4.0])
        assert type(got[1]) is np.ndarray
        where, _ = _placements(sess, assign)
        # The constant "new" stays on the CPU it asked for and is copied to the variable.
        assert where["assign"] == TEST1 and "new:0/_copy_to_TEST:1" in _copies(where)
        np.testing.assert_array_equal(sess.run(v), [5.0, 7.0])
        assert sess._slots["v"].value.device_index == 1
        # Fed values assigned to a device variable are copied there.
        p = tf.placeholder(tf.float32, [2])
        sess.run(tf.assign(v, p), {p: np.array([9.0, 9.0], np.float32)})
        assert isinstance(sess._slots["v"].value, TestArray)
        np.testing.assert_array_equal(sess.run(y), [18.0, 18.0])


def test_training_on_device_matches_the_cpu():
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(32, 4)).astype(np.float32)
    ys = (xs @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)).astype(np.float32)

    def train(config):
        g = tf.Graph()
        with g.as_default():
            tf.set_random_seed(1)
            x = tf.placeholder(tf.float32, [None, 4])
            y = tf.placeholder(tf.float32, [None, 1])
            w = tf.get_variable("w", [4, 1], initializer=tf.zeros_initializer())
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
            step = tf.train.AdamOptimizer(0.1).minimize(loss)
            with tf.Session(config=config) as sess:
                sess.run(tf.global_variables_initializer())
                for _ in range(20):
                    sess.run(step, {x: xs, y: ys})
                return sess.run([w, loss], {x: xs, y: ys}), sess._slots["w"].device.short_name

    (w_dev, loss_dev), where = train(tf.ConfigProto())
    (w_cpu, loss_cpu), where_cpu = train(tf.ConfigProto(device_count={"TEST": 0}))
    assert where == "TEST:0" and where_cpu == "CPU:0"
    np.testing.assert_allclose(w_dev, w_cpu, rtol=1e-6)
    np.testing.assert_allclose(loss_dev, loss_cpu, rtol=1e-6)


def test_control_flow_on_a_device_with_ops_pinned_elsewhere_inside():
    x = tf.placeholder(tf.float32, [None], name="x")

    def then():
        with tf.device("/cpu:0"):
            return tf.multiply(x, 2.0)

    c = tf.cond(tf.reduce_sum(x) > 0, then, lambda: tf.subtract(x, 1.0))
    i0 = tf.constant(0)
    total = tf.while_loop(
        lambda i, s: i < 4, lambda i, s: (i + 1, s + tf.cast(i, tf.float32)), [i0, tf.constant(0.0)]
    )[1]
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(c, {x: [1.0, 2.0]}), [2.0, 4.0])
        np.testing.assert_array_equal(sess.run(c, {x: [-1.0, -2.0]}), [-2.0, -3.0])
        assert sess.run(total) == 6.0


def test_a_loop_updates_a_variable_on_another_device():
    with tf.device("/device:TEST:1"):
        v = tf.Variable(1.0, name="v")

    def body(i):
        with tf.control_dependencies([tf.assign_add(v, 2.0)]):
            return i + 1

    loop = tf.while_loop(lambda i: i < 3, body, [tf.constant(0)])
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(loop) == 3
        assert sess.run(v) == 7.0
        assert sess._slots["v"].value.device_index == 1


def _make_parallel(fn, num_devices, **kwargs):
    """The classic data-parallel pattern: split the batch, one tower per device, concat."""
    in_splits = {k: tf.split(v, num_devices) for k, v in kwargs.items()}
    outs = []
    for i in range(num_devices):
        with tf.device(tf.DeviceSpec(device_type="TEST", device_index=i)):
            with tf.variable_scope(tf.get_variable_scope(), reuse=tf.AUTO_REUSE):
                outs.append(fn(**{k: v[i] for k, v in in_splits.items()}))
    return tf.concat(outs, axis=0)


def _model(x):
    w = tf.get_variable(
        "w",
        [3, 2],
        initializer=tf.constant_initializer(np.arange(6, dtype=np.float32).reshape(3, 2) / 10),
    )
    b = tf.get_variable("b", [2], initializer=tf.constant_initializer(0.5))
    return tf.nn.tanh(tf.matmul(x, w) + b)


@pytest.mark.parametrize("num_devices", [1, 2, 3])
def test_make_parallel_splits_a_batch_over_any_number_of_devices(num_devices):
    batch = np.arange(36, dtype=np.float32).reshape(12, 3) / 12
    with fake_device.registered(num_devices):
        x = tf.placeholder(tf.float32, [None, 3])
        y = _make_parallel(_model, num_devices, x=x)
        loss = tf.reduce_sum(tf.square(y))
        step = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
        assert len(tf.trainable_variables()) == 2  # the towers share one set of variables
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            where, got = _placements(sess, y, {x: batch})
            towers = {where[n] for n in where if n.endswith("MatMul") or "MatMul_" in n}
            assert towers == {
                f"/job:localhost/replica:0/task:0/device:TEST:{i}" for i in range(num_devices)
            }
            w = np.arange(6, dtype=np.float32).reshape(3, 2) / 10
            np.testing.assert_allclose(got, np.tanh(batch @ w + 0.5), rtol=1e-6)
            before = sess.run(loss, {x: batch})
            for _ in range(3):
                sess.run(step, {x: batch})
            assert sess.run(loss, {x: batch}) < before


def test_log_device_placement_shows_real_placement(capfd):
    with tf.device("/cpu:0"):
        a = tf.constant(1.0, name="a")
    b = tf.multiply(a, 2.0, name="b")
    with tf.Session(config=tf.ConfigProto(log_device_placement=True)) as sess:
        sess.run(b)
        sess.run(b)
    err = capfd.readouterr().err
    assert err.count(f"b: (Mul): {TEST0}") == 1
    assert f"a: (Const): {CPU}" in err


def test_out_of_device_memory_is_resource_exhausted_and_the_session_survives():
    config = tf.ConfigProto(gpu_options=tf.GPUOptions(per_process_gpu_memory_fraction=0.01))
    n = tf.placeholder(tf.int32, [])
    big = tf.fill(tf.stack([n, 1024]), 1.0, name="big")  # n KiB of float32 x 4
    total = tf.reduce_sum(big)
    with tf.Session(config=config) as sess:
        assert sess.list_devices()[1].memory_limit_bytes == int(fake_device.CAPACITY_BYTES * 0.01)
        assert sess.run(total, {n: 4}) == 4096.0
        with pytest.raises(errors.ResourceExhaustedError) as e:
            sess.run(total, {n: 1024})  # 4 MiB > 0.64 MiB
        assert "big" in str(e.value) and "TEST:0" in str(e.value)
        assert sess.run(total, {n: 8}) == 8192.0


def test_checked_mode_rejects_kernels_that_leave_their_device(monkeypatch):
    relu = registry.get("Relu")
    monkeypatch.setitem(
        registry._REGISTRY,
        "Relu",
        dataclasses.replace(relu, kernel=lambda xp, features: np.maximum(np.asarray(features), 0)),
    )
    y = tf.nn.relu(tf.constant([-1.0, 2.0]), name="leaky")
    with tf.Session() as sess, pytest.raises(errors.InternalError) as e:
        sess.run(y)
    assert "Relu kernel placed on" in str(e.value) and "TEST:0" in str(e.value)
    with tf.Session(config=tf.ConfigProto(device_count={"TEST": 0})) as sess:
        np.testing.assert_array_equal(sess.run(y), [0.0, 2.0])


def test_cpu_only_sessions_compile_plans_without_placement():
    y = tf.constant(1.0) + 1
    with tf.Session(config=tf.ConfigProto(device_count={"TEST": 0})) as sess:
        assert sess.run(y) == 2.0
        plan = next(iter(sess._plans.values()))
        assert plan.placement is None and plan.fetch_host == (None,)


def _count_host_reads(monkeypatch) -> list:
    """Records every read of a TEST array's values on the host (what waits for a GPU)."""
    reads = []
    for name in ("tolist", "item", "__int__", "__index__", "__float__", "__bool__"):
        original = getattr(np.ndarray, name)

        def read(self, *args, _original=original, _name=name):
            reads.append(_name)
            return _original(self, *args)

        monkeypatch.setattr(TestArray, name, read)
    return reads


def test_shape_inputs_are_read_on_the_host_without_waiting_for_the_device(monkeypatch):
    x = tf.placeholder(tf.float32, [None, 4, 6], name="x")
    flat = tf.reshape(x, [-1, 24], name="flat")
    turned = tf.transpose(tf.reshape(flat, [-1, 6, 4]), [0, 2, 1], name="turned")
    summed = tf.reduce_sum(turned, axis=[1, 2], name="summed")
    both = tf.concat([summed, summed], axis=0, name="both")
    filled = tf.fill(tf.stack([2, 3], name="dims"), 1.5, name="filled")  # dims packed on host
    part = tf.slice(tf.tile(flat, [1, 2]), [0, 1], [-1, 5], name="part")
    x_val = np.arange(48, dtype=np.float32).reshape(2, 4, 6)
    with tf.Session() as sess:
        sess.run([both, filled, part], {x: x_val})  # compiles the plan
        reads = _count_host_reads(monkeypatch)
        where, (b, f, p) = _placements(sess, [both, filled, part], {x: x_val})
    assert reads == []
    for name in ("flat", "turned", "summed", "both", "filled", "part"):
        assert where[name] == TEST0, name
    assert where["dims"] == CPU  # packed from constants: on the host, as Fill reads it
    s = x_val.reshape(-1, 6, 4).transpose(0, 2, 1).sum(axis=(1, 2))
    np.testing.assert_array_equal(b, np.concatenate([s, s]))
    np.testing.assert_array_equal(f, np.full((2, 3), 1.5, np.float32))
    np.testing.assert_array_equal(p, np.tile(x_val.reshape(-1, 24), [1, 2])[:, 1:6])


def test_a_shape_computed_on_the_device_is_copied_to_the_host_once():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    twice = tf.multiply(x, 2.0, name="twice")
    n = tf.shape(twice, name="n")  # reads a value on TEST:0 there
    y = tf.reshape(twice, tf.stack([n[0] * 3]), name="y")
    m = tf.shape(x, name="m")  # a feed lives on the host: read there, no copy
    z = tf.reshape(twice, tf.stack([m[0], 3, 1]), name="z")
    with tf.Session() as sess:
        where, (got, got_z) = _placements(sess, [y, z], {x: np.ones((2, 3), np.float32)})
    assert where["n"] == TEST0 and where["y"] == TEST0 and where["z"] == TEST0
    assert where["m"] == CPU and where["twice"] == TEST0
    np.testing.assert_array_equal(got, np.full(6, 2.0, np.float32))
    np.testing.assert_array_equal(got_z, np.full((2, 3, 1), 2.0, np.float32))
