"""A version directory holding ``model.tflite`` (TF Serving's layout for TFLite models) is
served by both protocols, with the values TF Lite's interpreter computes."""

import asyncio
import re
from pathlib import Path

import numpy as np
import pytest

from service.app import create_app
from service.config import ServerConfig

pytest.importorskip("tflite", reason="TFLite models need pip install flowserve[tflite]")

FIXTURES = Path(__file__).resolve().parents[1] / "engine" / "fixtures"
RECORDED = np.load(FIXTURES / "tflite_tf.npz")


@pytest.fixture
async def client(aiohttp_client, tmp_path):
    for model, fixture in [
        ("half_plus_two", "half_plus_two"),
        ("two", "two_signatures"),
        ("cnn", "cnn"),
        ("custom", "bad_custom_op"),
        ("giant", "hostile_giant_constant"),
    ]:
        (tmp_path / model / "1").mkdir(parents=True)
        data = (FIXTURES / "tflite" / f"{fixture}.tflite").read_bytes()
        (tmp_path / model / "1" / "model.tflite").write_bytes(data)
    # Triton's layout: config.pbtxt naming the TFLite backend.
    (tmp_path / "triton_hpt" / "1").mkdir(parents=True)
    (tmp_path / "triton_hpt" / "1" / "model.tflite").write_bytes(
        (FIXTURES / "tflite" / "half_plus_two.tflite").read_bytes()
    )
    (tmp_path / "triton_hpt" / "config.pbtxt").write_text(
        'name: "triton_hpt"\nbackend: "armnn_tflite"\nmax_batch_size: 0\n'
    )
    (tmp_path / "truncated" / "1").mkdir(parents=True)
    data = (FIXTURES / "tflite" / "mlp.tflite").read_bytes()
    (tmp_path / "truncated" / "1" / "model.tflite").write_bytes(data[: len(data) // 2])
    cfg = ServerConfig(model_repository=str(tmp_path), poll_interval=0.0, port=0).validate()
    return await aiohttp_client(create_app(cfg))


async def test_half_plus_two_over_rest(client):
    doc = await (await client.get("/v1/models/half_plus_two/metadata")).json()
    sig = doc["metadata"]["signature_def"]["signature_def"]["serving_default"]
    assert set(sig["inputs"]) == {"x"} and set(sig["outputs"]) == {"y"}
    x = RECORDED["half_plus_two/serving_default/in/x"]
    r = await client.post("/v1/models/half_plus_two:predict", json={"instances": x.tolist()})
    assert r.status == 200, await r.text()
    want = RECORDED["half_plus_two/serving_default/out/y"]
    assert (await r.json())["predictions"] == want.tolist() == [2.5, 3.0, 4.5]


async def test_triton_config_with_the_tflite_backend(client):
    body = {"inputs": [{"name": "x", "shape": [3], "datatype": "FP32", "data": [1, 2, 5]}]}
    r = await client.post("/v2/models/triton_hpt/infer", json=body)
    assert r.status == 200, await r.text()
    assert (await r.json())["outputs"][0]["data"] == [2.5, 3.0, 4.5]


async def test_a_named_signature_over_rest(client):
    a = RECORDED["two_signatures/scale/in/a"]
    body = {"signature_name": "scale", "inputs": {"a": a.tolist()}}
    r = await client.post("/v1/models/two:predict", json=body)
    assert r.status == 200, await r.text()
    got = np.asarray((await r.json())["outputs"], np.float32)
    np.testing.assert_allclose(got, RECORDED["two_signatures/scale/out/scaled"], atol=1e-5)


async def test_cnn_over_kserve_v2(client):
    doc = await (await client.get("/v2/models/cnn")).json()
    assert doc["inputs"] == [{"name": "image", "datatype": "FP32", "shape": [-1, 16, 16, 3]}]
    image = RECORDED["cnn/serving_default/in/image"]
    body = {
        "inputs": [
            {
                "name": "image",
                "datatype": "FP32",
                "shape": list(image.shape),
                "data": image.ravel().tolist(),
            }
        ]
    }
    r = await client.post("/v2/models/cnn/infer", json=body)
    assert r.status == 200, await r.text()
    (out,) = (await r.json())["outputs"]
    want = RECORDED["cnn/serving_default/out/probs"]
    assert out["name"] == "probs" and out["shape"] == list(want.shape)
    np.testing.assert_allclose(np.reshape(out["data"], want.shape), want, rtol=0, atol=1e-5)


@pytest.mark.parametrize(
    "model,reason",
    [
        ("custom", "cannot load model.tflite: model uses 1 unsupported operator(s): custom op"),
        ("truncated", "cannot load model.tflite: damaged TFLite model"),
        ("giant", "shape [1073741824, 1073741824] of FLOAT32 needs 4611686018427387904 bytes"),
    ],
)
async def test_bad_models_fail_with_the_reason(client, model, reason):
    doc = await (await client.get(f"/v1/models/{model}")).json()
    (status,) = doc["model_version_status"]
    assert status["state"] == "END"
    assert reason in status["status"]["error_message"]
    r = await client.post(f"/v1/models/{model}:predict", json={"instances": [[1.0] * 4]})
    assert r.status == 503


async def test_tflite_models_batch_on_their_unknown_batch_dim(aiohttp_client, tmp_path):
    (tmp_path / "cnn" / "1").mkdir(parents=True)
    data = (FIXTURES / "tflite" / "cnn.tflite").read_bytes()
    (tmp_path / "cnn" / "1" / "model.tflite").write_bytes(data)
    cfg = ServerConfig(
        model_repository=str(tmp_path), poll_interval=0.0, port=0, enable_batching=True
    ).validate()
    client = await aiohttp_client(create_app(cfg))
    images = RECORDED["cnn/serving_default/in/image"]
    want = RECORDED["cnn/serving_default/out/probs"]

    async def call(i):
        body = {"inputs": {"image": images[i : i + 1].tolist()}}
        r = await client.post("/v1/models/cnn:predict", json=body)
        assert r.status == 200, await r.text()
        return np.asarray((await r.json())["outputs"], np.float32)

    outs = await asyncio.gather(*(call(i % len(images)) for i in range(12)))
    for i, out in enumerate(outs):
        np.testing.assert_allclose(out, want[i % len(images)][None], rtol=0, atol=1e-5)
    metrics = await (await client.get("/metrics")).text()
    rows = re.search(r'flowserve_batch_size_rows_sum\{model="cnn",version="1"\} (\S+)', metrics)
    assert rows and float(rows.group(1)) == 12


@pytest.mark.parametrize("batching", [False, True])
async def test_a_fixed_batch_of_one_refuses_two_rows_with_a_400(aiohttp_client, tmp_path, batching):
    """A model converted with a fixed [1, ...] input (TF Lite's default for concrete shapes)
    is served one row at a time: two rows are the client's mistake (400 naming the shape),
    and the batcher never merges requests of such an input into a batch of 2."""
    (tmp_path / "convs" / "1").mkdir(parents=True)
    data = (FIXTURES / "tflite" / "more_convs.tflite").read_bytes()
    (tmp_path / "convs" / "1" / "model.tflite").write_bytes(data)
    cfg = ServerConfig(
        model_repository=str(tmp_path), poll_interval=0.0, port=0, enable_batching=batching
    ).validate()
    client = await aiohttp_client(create_app(cfg))
    more = np.load(FIXTURES / "tflite_more_tf.npz")
    img = more["convs/in/img"]
    r = await client.post(
        "/v1/models/convs:predict", json={"inputs": {"img": np.concatenate([img, img]).tolist()}}
    )
    expected = "input 'img' has shape [2, 7, 8, 3]; the model expects [1, 7, 8, 3]"
    assert r.status == 400 and expected in (await r.json())["error"]
    two = np.concatenate([img, img])
    tensor = {"name": "img", "datatype": "FP32", "shape": list(two.shape)}
    tensor["data"] = two.ravel().tolist()
    r = await client.post("/v2/models/convs/infer", json={"inputs": [tensor]})
    assert r.status == 400 and expected in (await r.json())["error"]

    async def call():
        r = await client.post("/v1/models/convs:predict", json={"inputs": {"img": img.tolist()}})
        assert r.status == 200, await r.text()
        return np.asarray((await r.json())["outputs"]["same_s2_k2"], np.float32)

    for out in await asyncio.gather(*(call() for _ in range(6))):
        np.testing.assert_allclose(out, more["convs/out/same_s2_k2"], rtol=0, atol=1e-5)
