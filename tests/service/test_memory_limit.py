"""A model's ``max_intermediate_bytes`` (config.json): a request whose run would hold more
live intermediates fails with 429 RESOURCE_EXHAUSTED (TF Serving's mapping) naming the op,
in JSON, on both protocols and over gRPC; smaller requests and other models are served."""

import json

import grpc
import numpy as np
import pytest

from service.app import create_app
from service.config import ConfigError, ModelConfig, ServerConfig, parse_model_config
from service.errors import ResourceExhausted
from service.protocols.grpc_common import status_code
from service.servable import Servable
from tests.service.models import half_plus_two
from tests.service.serving import ServerThread

LIMIT = 1 << 20  # y = a*x + b holds a*x and the sum at once: 8 bytes per float32 element
TOO_MANY = 200_000  # 1.6 MB of intermediates
FITS = 1_000


@pytest.fixture(scope="module")
def limited_repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("limited")
    half_plus_two(root / "limited" / "1")
    (root / "limited" / "config.json").write_text(json.dumps({"max_intermediate_bytes": LIMIT}))
    half_plus_two(root / "unlimited" / "1")
    return root


def config_for(root, **kw) -> ServerConfig:
    return ServerConfig(model_repository=str(root), poll_interval=0, port=0, **kw).validate()


@pytest.fixture
async def client(aiohttp_client, limited_repo):
    return await aiohttp_client(create_app(config_for(limited_repo)))


def v2_body(n):
    return {"inputs": [{"name": "x", "datatype": "FP32", "shape": [n], "data": [1.0] * n}]}


async def test_over_the_limit_is_429_naming_the_op(client):
    r = await client.post("/v2/models/limited/infer", json=v2_body(TOO_MANY))
    assert r.status == 429
    doc = await r.json()
    assert "max_intermediate_bytes" in doc["error"] and str(LIMIT) in doc["error"]
    assert "'y'" in doc["error"]  # the Add op whose output goes over the limit
    r = await client.post("/v1/models/limited:predict", json={"instances": [1.0] * TOO_MANY})
    assert r.status == 429
    assert "max_intermediate_bytes" in (await r.json())["error"]


async def test_under_the_limit_and_other_models_are_served(client):
    r = await client.post("/v2/models/limited/infer", json=v2_body(FITS))
    assert r.status == 200
    assert (await r.json())["outputs"][0]["data"][:2] == [2.5, 2.5]
    r = await client.post("/v2/models/unlimited/infer", json=v2_body(TOO_MANY))
    assert r.status == 200
    out = (await r.json())["outputs"][0]
    assert out["shape"] == [TOO_MANY] and out["data"][-1] == 2.5
    # The limited model still answers after refusing a run.
    r = await client.post("/v2/models/limited/infer", json=v2_body(FITS))
    assert r.status == 200


async def test_batched_requests_get_429_too(aiohttp_client, tmp_path):
    # A batch's run is limited as a whole: 40,000 rows hold 320,000 bytes of intermediates.
    half_plus_two(tmp_path / "batched" / "1")
    config = {"max_intermediate_bytes": 256 << 10, "batching": {"max_batch_size": 65536}}
    (tmp_path / "batched" / "config.json").write_text(json.dumps(config))
    client = await aiohttp_client(create_app(config_for(tmp_path, enable_batching=True)))
    r = await client.post("/v2/models/batched/infer", json=v2_body(40_000))
    assert r.status == 429
    assert "max_intermediate_bytes" in (await r.json())["error"]
    # It went through the batcher's queue (not a direct run beside it).
    metrics = await (await client.get("/metrics")).text()
    waits = 'flowserve_batch_queue_wait_seconds_count{model="batched",version="1"} 1.0'
    assert waits in metrics.splitlines()
    r = await client.post("/v2/models/batched/infer", json=v2_body(FITS))
    assert r.status == 200


def test_grpc_answers_resource_exhausted(limited_repo):
    assert status_code(ResourceExhausted("x")) is grpc.StatusCode.RESOURCE_EXHAUSTED
    grpcclient = pytest.importorskip("tritonclient.grpc")
    errors = pytest.importorskip("tritonclient.utils")
    with ServerThread(config_for(limited_repo)) as server:
        client = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
        try:

            def infer(n):
                inp = grpcclient.InferInput("x", [n], "FP32")
                inp.set_data_from_numpy(np.ones(n, np.float32))
                return client.infer("limited", [inp])

            with pytest.raises(errors.InferenceServerException) as info:
                infer(TOO_MANY)
            assert info.value.status() == "StatusCode.RESOURCE_EXHAUSTED"
            assert "max_intermediate_bytes" in info.value.message()
            assert infer(FITS).as_numpy("y")[:2].tolist() == [2.5, 2.5]
        finally:
            client.close()


@pytest.mark.parametrize("value", [-1, 1.5, "1MB", True, 2**60, None])
def test_bad_limits_are_refused_naming_the_setting(value):
    with pytest.raises(ConfigError, match="max_intermediate_bytes must be an integer"):
        parse_model_config({"max_intermediate_bytes": value}, "m/config.json")
    assert parse_model_config({"max_intermediate_bytes": 0}, "w").max_intermediate_bytes == 0
    assert parse_model_config({}, "w").max_intermediate_bytes == 0


def test_limit_reaches_the_engine_session(tmp_path):
    # The unit of the setting: bytes of the engine run's intermediates.
    half_plus_two(tmp_path / "1")
    s = Servable("m", 1, tmp_path / "1", ModelConfig(max_intermediate_bytes=LIMIT, warmup=False))
    assert s.load(), s.error
    sig = s.signatures[s.default_signature]
    with pytest.raises(ResourceExhausted, match="max_intermediate_bytes"):
        sig.run([np.ones(TOO_MANY, np.float32)])
    assert sig.run([np.ones(3, np.float32)])["y"].tolist() == [2.5, 2.5, 2.5]
    s.unload()
