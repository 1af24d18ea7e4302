"""Batching through HTTP: concurrent requests, checked value by value against no batching."""

import asyncio
import json

import numpy as np
import pytest

from service.app import create_app
from tests.service import models


@pytest.fixture
def batching_repo(tmp_path):
    models.multi_io(tmp_path / "multi_io" / "1")
    models.half_plus_two(tmp_path / "hpt" / "1")
    models.half_plus_two(tmp_path / "unbatched" / "1")
    models.write_config(tmp_path / "unbatched", {"batching": False})
    return tmp_path


@pytest.fixture
async def clients(aiohttp_client, make_config, batching_repo, tmp_path):
    params = tmp_path / "batching.json"
    params.write_text(
        json.dumps(
            {
                "max_batch_size": {"value": 16},
                "batch_timeout_micros": {"value": 20000},
                "num_batch_threads": {"value": 2},
            }
        )
    )
    batched = await aiohttp_client(
        create_app(
            make_config(
                model_repository=str(batching_repo),
                enable_batching=True,
                batching_parameters_file=str(params),
            )
        )
    )
    plain = await aiohttp_client(create_app(make_config(model_repository=str(batching_repo))))
    return batched, plain


def _request(i):
    rows = i % 4 + 1
    rng = np.random.default_rng(i)
    return {
        "inputs": {
            "a": rng.standard_normal((rows, 3)).round(3).tolist(),
            "b": rng.integers(-5, 5, rows).tolist(),
        }
    }


async def test_concurrent_requests_match_unbatched_results(clients):
    batched, plain = clients

    async def call(client, body):
        resp = await client.post("/v1/models/multi_io:predict", json=body)
        assert resp.status == 200, await resp.text()
        return await resp.json()

    bodies = [_request(i) for i in range(48)]
    got = await asyncio.gather(*(call(batched, b) for b in bodies))
    want = [await call(plain, b) for b in bodies]
    assert got == want
    metrics = await (await batched.get("/metrics")).text()
    batches = _sample(metrics, 'flowserve_batches_total{model="multi_io",version="1"}')
    rows = _sample(metrics, 'flowserve_batch_size_rows_sum{model="multi_io",version="1"}')
    assert rows == sum(i % 4 + 1 for i in range(48))
    assert batches < 48  # requests were merged
    assert "flowserve_batch_queue_wait_seconds_count" in metrics
    assert 'flowserve_session_run_seconds_count{model="multi_io",version="1"}' in metrics


async def test_v2_binary_requests_batch_too(clients):
    """V2 requests in the binary tensor extension go through the batcher, with the values
    of no batching."""
    batched, plain = clients

    async def infer(client, x):
        data = np.float32(x).tobytes()
        item = {"name": "x", "shape": [len(x)], "datatype": "FP32"}
        header = json.dumps({"inputs": [{**item, "parameters": {"binary_data_size": len(data)}}]})
        resp = await client.post(
            "/v2/models/hpt/infer",
            data=header.encode() + data,
            headers={
                "Inference-Header-Content-Length": str(len(header)),
                "Content-Type": "application/octet-stream",
            },
        )
        assert resp.status == 200, await resp.text()
        return (await resp.json())["outputs"][0]["data"]

    xs = [[float(i), float(i) / 2] for i in range(32)]
    got = await asyncio.gather(*(infer(batched, x) for x in xs))
    assert got == [await infer(plain, x) for x in xs]
    assert got[3] == [0.5 * 3 + 2, 0.5 * 1.5 + 2]
    # every row went through the batcher (not a direct run beside it)
    metrics = await (await batched.get("/metrics")).text()
    assert _sample(metrics, 'flowserve_batch_size_rows_sum{model="hpt",version="1"}') == 64
    assert 'flowserve_batches_total{model="hpt",version="1"}' in metrics


async def test_model_config_can_turn_batching_off(clients):
    batched, _ = clients
    await asyncio.gather(
        *(batched.post("/v1/models/unbatched:predict", json={"instances": [1.0]}) for _ in range(8))
    )
    metrics = await (await batched.get("/metrics")).text()
    assert 'flowserve_batches_total{model="unbatched"' not in metrics
    assert 'flowserve_session_run_seconds_count{model="unbatched",version="1"} 8.0' in metrics


async def test_too_large_and_deadline_over_http(clients):
    batched, _ = clients
    resp = await batched.post("/v1/models/hpt:predict", json={"instances": [1.0] * 40})
    assert resp.status == 400
    assert "larger than maximum batch size 16" in (await resp.json())["error"]
    metrics = await (await batched.get("/metrics")).text()
    assert (
        'flowserve_requests_rejected_total{model="hpt",reason="too_large",version="1"}' in metrics
    )


def _sample(text: str, prefix: str) -> float:
    for line in text.splitlines():
        if line.startswith(prefix):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{prefix} not in metrics")
