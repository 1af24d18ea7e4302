"""Real GPUs through cupy: placement, values, memory limits, several GPUs, serving.

Skipped, with the reason, on machines without cupy or a CUDA device. The op tables run on
the GPU too with ``FLOWSERVE_TEST_DEVICE=gpu`` (every op compared with numpy).
"""

from __future__ import annotations

import numpy as np
import pytest

import engine as tf
from engine import devices, errors

REASON = devices.gpu_unavailable_reason()
pytestmark = pytest.mark.skipif(bool(REASON), reason=f"no GPU: {REASON}")

GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"


def _mlp_graph(batch):
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((32, 16)).astype(np.float32)
    w2 = rng.standard_normal((16, 4)).astype(np.float32)
    x_val = rng.standard_normal((batch, 32)).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 32])
    h = tf.nn.relu(tf.matmul(x, tf.Variable(w1)))
    y = tf.nn.softmax(tf.matmul(h, tf.Variable(w2)))
    h_np = np.maximum(x_val @ w1, 0) @ w2
    e = np.exp(h_np - h_np.max(axis=1, keepdims=True))
    return x, y, x_val, e / e.sum(axis=1, keepdims=True)


def test_ops_run_on_gpu0_by_default_and_fetches_are_numpy():
    x, y, x_val, want = _mlp_graph(8)
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    md = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run(y, {x: x_val}, options=options, run_metadata=md)
        slot = next(iter(sess._slots.values()))
        assert slot.device.name == GPU0 and type(slot.value).__module__.startswith("cupy")
    assert type(got) is np.ndarray
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    devices_used = {d.device for d in md.step_stats.dev_stats}
    assert GPU0 in devices_used


def test_training_on_gpu_matches_cpu():
    def train(config):
        g = tf.Graph()
        with g.as_default():
            x, y, x_val, _ = _mlp_graph(16)
            loss = tf.reduce_mean(tf.square(y - 0.25))
            step = tf.train.AdamOptimizer(0.01).minimize(loss)
            with tf.Session(config=config) as sess:
                sess.run(tf.global_variables_initializer())
                for _ in range(5):
                    sess.run(step, {x: x_val})
                return sess.run(loss, {x: x_val})

    np.testing.assert_allclose(
        train(tf.ConfigProto()), train(tf.ConfigProto(device_count={"GPU": 0})), rtol=1e-4
    )


def test_out_of_memory_is_resource_exhausted_and_the_session_survives():
    free, total = devices.cupy_or_none().cuda.runtime.memGetInfo()
    config = tf.ConfigProto(gpu_options=tf.GPUOptions(per_process_gpu_memory_fraction=0.05))
    n = tf.placeholder(tf.int64, [])
    big = tf.fill(tf.stack([n]), 1.0, name="big")
    total_sum = tf.reduce_sum(big)
    too_many = int(total * 0.2) // 4
    with tf.Session(config=config) as sess:
        assert sess.list_devices()[1].memory_limit_bytes > 0
        with pytest.raises(errors.ResourceExhaustedError, match="big"):
            sess.run(total_sum, {n: too_many})
        assert sess.run(total_sum, {n: 1000}) == 1000.0
    devices.cupy_or_none().get_default_memory_pool().set_limit(size=0)


def test_make_parallel_over_every_gpu():
    n = devices.gpu_count()
    batch = np.arange(8 * n * 3, dtype=np.float32).reshape(8 * n, 3) / 100
    x = tf.placeholder(tf.float32, [None, 3])
    outs = []
    for i, part in enumerate(tf.split(x, n)):
        with tf.device(f"/gpu:{i}"), tf.variable_scope("tower", reuse=tf.AUTO_REUSE):
            w = tf.get_variable("w", [3, 2], initializer=tf.ones_initializer())
            outs.append(tf.matmul(part, w))
    y = tf.concat(outs, axis=0)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(y, {x: batch}), batch @ np.ones((3, 2)), rtol=1e-6)


async def test_the_server_serves_a_model_on_gpu0(tmp_path):
    from service.config import ServerConfig
    from service.manager import ModelManager
    from tests.service import models

    models.half_plus_two(tmp_path / "hpt" / "1")
    models.write_config(tmp_path / "hpt", {"device": "gpu:0", "instances": 2})
    m = ModelManager(ServerConfig(model_repository=str(tmp_path), poll_interval=0).validate())
    await m.start()
    try:
        (st,) = m.status("hpt")
        assert st.state == "AVAILABLE" and st.devices[0]["device"] == "gpu:0"
        assert st.devices[0]["memory_in_use_bytes"] >= 0
        r = await m.infer("hpt", {"x": np.array([2.0], np.float32)})
        assert r.outputs["y"].tolist() == [3.0]
    finally:
        await m.stop()
