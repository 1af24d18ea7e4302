"""Batching on a real engine model, without HTTP: merged runs through ModelManager.infer."""

import asyncio

import numpy as np

import engine as tf
from tests.service import models


def dense(path):
    """y = relu(x @ w + b), x float32 [None, 32]: real BLAS matrix products."""

    def build():
        x = tf.placeholder(tf.float32, [None, 32], name="x")
        rng = np.random.default_rng(7)
        w = tf.Variable(rng.standard_normal((32, 16)).astype(np.float32), name="w")
        b = tf.Variable(rng.standard_normal(16).astype(np.float32), name="b")
        return {"serving_default": ({"x": x}, {"y": tf.nn.relu(tf.matmul(x, w) + b)})}

    models.export(path, build)


async def test_merged_requests_get_the_rows_of_the_same_run_without_batching(tmp_path, manager_for):
    dense(tmp_path / "dense" / "1")
    models.write_config(
        tmp_path / "dense",
        {"batching": {"max_batch_size": 64, "batch_timeout_micros": 60_000_000}},
    )
    # inline compute for every run here, so the first request surely runs at once
    batched = await manager_for(tmp_path, enable_batching=True, inline_compute_micros=1_000_000)
    plain = await manager_for(tmp_path)
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((n, 32)).astype(np.float32) for n in (1, 4, 2, 7, 1, 3)]
    # Read in one turn with the batch thread idle: the first request (cheap: inline compute)
    # runs at once; the others form one batch, started on the next turn (the one-minute
    # timeout never applies), holding them in order.
    results = await asyncio.wait_for(
        asyncio.gather(*(batched.infer("dense", {"x": x}) for x in xs)), 30
    )
    (stats,) = batched.model_statistics("dense")
    assert stats["execution_count"] == 2 and stats["inference_count"] == sum(map(len, xs))
    # The same rows run unbatched: bit for bit what each request got back.
    alone = (await plain.infer("dense", {"x": xs[0]})).outputs["y"]
    np.testing.assert_array_equal(results[0].outputs["y"], alone)
    whole = (await plain.infer("dense", {"x": np.concatenate(xs[1:])})).outputs["y"]
    offset = 0
    for x, r in zip(xs[1:], results[1:]):
        y = r.outputs["y"]
        assert y.dtype == np.float32 and y.shape == (len(x), 16)
        np.testing.assert_array_equal(y, whole[offset : offset + len(x)])
        offset += len(x)


async def test_a_merged_run_of_two_or_three_rows_gives_each_request_its_unbatched_bits(
    tmp_path, manager_for
):
    """Runs of 2-3 rows (8 concurrent clients make them) compute one gemv per row, as a lone
    request does (``engine.ops.few_rows``): each merged request gets the bits it gets alone."""
    dense(tmp_path / "dense" / "1")
    models.write_config(tmp_path / "dense", {"batching": {"max_batch_size": 64}})
    batched = await manager_for(tmp_path, enable_batching=True, inline_compute_micros=1_000_000)
    plain = await manager_for(tmp_path)
    rng = np.random.default_rng(1)
    for merged in (2, 3):
        # one request at once (the turn's first), then ``merged`` single rows in one batch
        xs = [rng.standard_normal((1, 32)).astype(np.float32) for _ in range(merged + 1)]
        await batched.infer("dense", {"x": xs[0]})  # alone: requests arrive one at a time
        before = batched.model_statistics("dense")[0]["execution_count"]
        results = await asyncio.wait_for(
            asyncio.gather(*(batched.infer("dense", {"x": x}) for x in xs)), 30
        )
        assert batched.model_statistics("dense")[0]["execution_count"] == before + 2
        for x, r in zip(xs, results):
            alone = (await plain.infer("dense", {"x": x})).outputs["y"]
            assert r.outputs["y"].tobytes() == alone.tobytes()


async def test_batch_threads_follow_the_servers_compute_threads(tmp_path, manager_for):
    """``num_batch_threads`` 0 runs one batch per compute thread of the server (a worker of
    ``--workers N`` gets ``num_threads`` = its share of the cores); a model's own value runs
    as many, up to the threads there are to run them."""
    dense(tmp_path / "dense" / "1")
    one = await manager_for(tmp_path, enable_batching=True, num_threads=1)
    three = await manager_for(tmp_path, enable_batching=True, num_threads=3)
    assert one.resolve("dense").scheduler.concurrency == 1
    assert three.resolve("dense").scheduler.concurrency == 3
    models.write_config(tmp_path / "dense", {"batching": {"num_batch_threads": 2}})
    fewer = await manager_for(tmp_path, enable_batching=True, num_threads=3)
    assert fewer.resolve("dense").scheduler.concurrency == 2
    models.write_config(tmp_path / "dense", {"batching": {"num_batch_threads": 8}})
    more = await manager_for(tmp_path, enable_batching=True, num_threads=1)
    assert more.resolve("dense").scheduler.concurrency == 1
    # A server-wide value above --num-threads adds threads to the pool, and so batches.
    params = tmp_path / "params.json"
    params.write_text('{"num_batch_threads": 4}')
    wide = await manager_for(
        tmp_path, enable_batching=True, num_threads=1, batching_parameters_file=str(params)
    )
    assert wide.resolve("dense").scheduler.concurrency == 4
