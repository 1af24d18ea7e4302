"""Serving on devices: model/server device settings, soft fallback, instance groups, device
status and metrics.

Accelerator paths run on the numpy-backed TEST devices (``tests/fake_device.py``), which the
server accepts as device "test:N" exactly as it accepts "gpu:N"; the GPU-less machine paths
use "gpu:N" itself.
"""

import asyncio

import numpy as np
import pytest

from engine import devices
from service.app import create_app
from service.config import ConfigError
from tests import fake_device
from tests.service import models
from tests.service.conftest import manager_config


@pytest.fixture(autouse=True)
def _test_devices():
    with fake_device.registered(2):
        yield


def _servable(m, name):
    return m.resolve(name)


needs_no_gpu = pytest.mark.skipif(devices.gpu_count() > 0, reason="this machine has a GPU")


@needs_no_gpu
async def test_asking_for_a_missing_gpu_fails_the_load_with_the_reason(tmp_path, manager_for):
    models.half_plus_two(tmp_path / "hpt" / "1")
    models.write_config(tmp_path / "hpt", {"device": "gpu:0"})
    models.half_plus_two(tmp_path / "ok" / "1")
    m = await manager_for(tmp_path)
    (st,) = m.status("hpt")
    assert st.state == "END"
    assert st.error.startswith("device gpu:0 requested, but ")
    assert devices.gpu_unavailable_reason() in st.error
    assert "allow_soft_placement" in st.error
    assert m.status("ok")[0].state == "AVAILABLE"  # other models are not disturbed


@needs_no_gpu
async def test_soft_placement_falls_back_to_the_cpu(tmp_path, manager_for):
    models.half_plus_two(tmp_path / "hpt" / "1")
    models.write_config(tmp_path / "hpt", {"device": "gpu", "allow_soft_placement": True})
    m = await manager_for(tmp_path)
    (st,) = m.status("hpt")
    assert st.state == "AVAILABLE" and st.devices == [{"device": "cpu", "instances": 1}]
    assert "device gpu unavailable" in st.device_note and "CPU" in st.device_note
    r = await m.infer("hpt", {"x": np.array([2.0], np.float32)})
    assert r.outputs["y"].tolist() == [3.0]


async def test_a_model_on_an_accelerator_with_an_instance_group(tmp_path, manager_for):
    models.half_plus_two(tmp_path / "hpt" / "1")
    models.write_config(tmp_path / "hpt", {"device": "test:1", "instances": 2})
    m = await manager_for(tmp_path)
    s = _servable(m, "hpt")
    assert s.instances == ["test:1", "test:1"]
    # Each session sees the machine's TEST device 1 as its TEST:0.
    assert [d.physical_name for d in s.accelerator_devices()] == ["test:1", "test:1"]
    (st,) = m.status("hpt")
    assert st.devices == [
        {"device": "test:1", "instances": 2, "memory_in_use_bytes": 0, "memory_limit_bytes": 0}
    ]
    xs = [np.array([float(i)], np.float32) for i in range(40)]
    results = await asyncio.gather(*(m.infer("hpt", {"x": x}) for x in xs))
    assert [r.outputs["y"].tolist() for r in results] == [[0.5 * i + 2] for i in range(40)]
    assert all(type(r.outputs["y"]) is np.ndarray for r in results)
    assert sum(s.pool.runs) >= 40 and all(n > 0 for n in s.pool.runs)


async def test_every_device_of_a_type_with_instances_per_device(tmp_path, manager_for):
    models.half_plus_two(tmp_path / "hpt" / "1")
    models.write_config(tmp_path / "hpt", {"device": "test", "instances": 2})
    m = await manager_for(tmp_path)
    s = _servable(m, "hpt")
    assert s.instances == ["test:0", "test:0", "test:1", "test:1"]
    assert [d["device"] for d in m.status("hpt")[0].devices] == ["test:0", "test:1"]
    r = await m.infer("hpt", {"x": np.array([4.0], np.float32)})
    assert r.outputs["y"].tolist() == [4.0]


async def test_a_device_index_past_the_last_device_fails(tmp_path, manager_for):
    models.half_plus_two(tmp_path / "hpt" / "1")
    models.write_config(tmp_path / "hpt", {"device": "test:5"})
    m = await manager_for(tmp_path)
    (st,) = m.status("hpt")
    assert st.state == "END"
    assert "this machine has 2 TEST device(s) (test:0, test:1)" in st.error


async def test_the_server_device_is_the_default_and_models_override_it(tmp_path, manager_for):
    models.half_plus_two(tmp_path / "on_default" / "1")
    models.half_plus_two(tmp_path / "on_cpu" / "1")
    models.write_config(tmp_path / "on_cpu", {"device": "cpu"})
    models.multi_io(tmp_path / "mixed" / "1")  # string outputs: those ops stay on the CPU
    m = await manager_for(tmp_path, device="test:0")
    assert _servable(m, "on_default").instances == ["test:0"]
    assert _servable(m, "on_cpu").instances == ["cpu"]
    assert _servable(m, "on_cpu").accelerator_devices() == []
    r = await m.infer("mixed", {"a": np.ones((2, 3), np.float32), "b": np.array([1, -9])})
    assert r.outputs["label"].tolist() == [b"pos", b"neg"]
    assert r.outputs["total"].tolist() == [4.0, -6.0]


def test_unknown_device_types_are_configuration_errors(tmp_path):
    with pytest.raises(ConfigError, match="device must be 'cpu', 'gpu'"):
        manager_config(tmp_path, device="tpu:0")
    assert manager_config(tmp_path, device="GPU").device == "gpu"
    assert manager_config(tmp_path, device="cpu:0").device == "cpu"


async def test_batches_spread_over_instances(tmp_path, manager_for):
    models.half_plus_two(tmp_path / "hpt" / "1")
    models.write_config(
        tmp_path / "hpt",
        {
            "device": "test:0",
            "instances": 2,
            "batching": {"enabled": True, "max_batch_size": 4, "num_batch_threads": 1},
        },
    )
    m = await manager_for(tmp_path, num_threads=2)
    s = _servable(m, "hpt")
    assert s.scheduler.concurrency == 2  # one batch per instance, despite one batch thread
    xs = [np.array([float(i)], np.float32) for i in range(64)]
    results = await asyncio.gather(*(m.infer("hpt", {"x": x}) for x in xs))
    assert [r.outputs["y"][0] for r in results] == [0.5 * i + 2 for i in range(64)]
    assert sum(s.pool.runs) < 64  # batched: fewer runs than requests


async def test_device_status_config_endpoint_and_metrics_over_http(aiohttp_client, tmp_path):
    models.half_plus_two(tmp_path / "hpt" / "1")
    models.write_config(
        tmp_path / "hpt",
        {"device": "test:1", "instances": 2, "batching": {"enabled": True, "max_batch_size": 8}},
    )
    client = await aiohttp_client(create_app(manager_config(tmp_path, port=0)))
    status = await (await client.get("/v1/models/hpt")).json()
    assert status["model_version_status"][0]["devices"] == [
        {"device": "test:1", "instances": 2, "memory_in_use_bytes": 0, "memory_limit_bytes": 0}
    ]
    r = await client.post("/v1/models/hpt:predict", json={"instances": [1.0, 3.0]})
    assert (await r.json()) == {"predictions": [2.5, 3.5]}
    config = await (await client.get("/v2/models/hpt/config")).json()
    assert config["instance_group"] == [
        {"name": "hpt_0", "count": 2, "kind": "KIND_GPU", "gpus": [1]}
    ]
    assert config["max_batch_size"] == 8 and config["dynamic_batching"] == {
        "max_queue_delay_microseconds": 0,
        "preferred_batch_size": [],
    }
    assert config["input"] == [
        {"name": "x", "data_type": "TYPE_FP32", "format": "FORMAT_NONE", "dims": []}
    ]
    assert config["parameters"]["device"] == {"string_value": "test:1"}
    text = await (await client.get("/metrics")).text()
    assert 'flowserve_model_instances{device="test:1",model="hpt",version="1"} 2.0' in text
    assert 'flowserve_device_memory_bytes{device="test:1",kind="limit"} 0.0' in text
    runs = [
        line
        for line in text.splitlines()
        if line.startswith("flowserve_model_instance_runs_total{")
    ]
    assert len(runs) == 2 and sum(float(line.rsplit(" ", 1)[1]) for line in runs) == 1


async def test_config_endpoint_on_cpu_without_batching(client):
    config = await (await client.get("/v2/models/half_plus_two/versions/1/config")).json()
    assert config["instance_group"] == [{"name": "half_plus_two_0", "count": 1, "kind": "KIND_CPU"}]
    assert config["max_batch_size"] == 0 and "dynamic_batching" not in config
    assert config["input"] == [
        {"name": "x", "data_type": "TYPE_FP32", "format": "FORMAT_NONE", "dims": [-1]}
    ]
    resp = await client.get("/v2/models/ghost/config")
    assert resp.status == 404 and "error" in await resp.json()
