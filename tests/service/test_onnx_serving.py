"""A version directory holding ``model.onnx`` is served as is, by both protocols."""

import numpy as np
import pytest

from service.app import create_app
from service.config import ServerConfig

onnx = pytest.importorskip("onnx", reason="test models are built with onnx.helper")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the oracle")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

rng = np.random.default_rng(3)
W = rng.standard_normal((4, 3)).astype(np.float32)
B = rng.standard_normal(3).astype(np.float32)


def _mlp() -> bytes:
    """input.1 [N, 4] float -> logits:0 [N, 3], probs [N, 3]; names ONNX exporters write."""
    nodes = [
        helper.make_node("Gemm", ["input.1", "W", "B"], ["h"], name="fc/Gemm"),
        helper.make_node("Relu", ["h"], ["logits:0"]),
        helper.make_node("Softmax", ["logits:0"], ["probs"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("input.1", TensorProto.FLOAT, ["batch", 4])],
        [
            helper.make_tensor_value_info("logits:0", TensorProto.FLOAT, ["batch", 3]),
            helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 3]),
        ],
        [numpy_helper.from_array(W, "W"), numpy_helper.from_array(B, "B")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return model.SerializeToString()


def _unsupported() -> bytes:
    nodes = [
        helper.make_node("FancyOp", ["x"], ["a"]),
        helper.make_node("Relu", ["a"], ["b"]),
        helper.make_node("OtherOp", ["b"], ["y"]),
        helper.make_node("FancyOp", ["y"], ["z"]),
    ]
    vi = helper.make_tensor_value_info
    graph = helper.make_graph(
        nodes, "g", [vi("x", TensorProto.FLOAT, [2])], [vi("z", TensorProto.FLOAT, [2])]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return model.SerializeToString()


@pytest.fixture
async def onnx_client(aiohttp_client, tmp_path):
    mlp = _mlp()
    (tmp_path / "mlp" / "1").mkdir(parents=True)
    (tmp_path / "mlp" / "1" / "model.onnx").write_bytes(mlp)
    (tmp_path / "bad" / "1").mkdir(parents=True)
    (tmp_path / "bad" / "1" / "model.onnx").write_bytes(_unsupported())
    (tmp_path / "damaged" / "1").mkdir(parents=True)
    (tmp_path / "damaged" / "1" / "model.onnx").write_bytes(mlp[: len(mlp) // 2])
    cfg = ServerConfig(model_repository=str(tmp_path), poll_interval=0.0, port=0).validate()
    return await aiohttp_client(create_app(cfg))


def _expected(x):
    return ort.InferenceSession(_mlp(), providers=["CPUExecutionProvider"]).run(
        None, {"input.1": x}
    )


async def test_tf_serving_metadata_and_predict_keep_onnx_names(onnx_client):
    doc = await (await onnx_client.get("/v1/models/mlp/metadata")).json()
    sig = doc["metadata"]["signature_def"]["signature_def"]["serving_default"]
    assert set(sig["inputs"]) == {"input.1"}
    assert set(sig["outputs"]) == {"logits:0", "probs"}
    x = rng.standard_normal((2, 4)).astype(np.float32)
    r = await onnx_client.post("/v1/models/mlp:predict", json={"inputs": {"input.1": x.tolist()}})
    assert r.status == 200, await r.text()
    out = (await r.json())["outputs"]
    logits, probs = _expected(x)
    np.testing.assert_allclose(out["logits:0"], logits, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["probs"], probs, rtol=1e-5, atol=1e-6)


async def test_kserve_v2_metadata_and_infer_keep_onnx_names(onnx_client):
    doc = await (await onnx_client.get("/v2/models/mlp")).json()
    assert doc["inputs"] == [{"name": "input.1", "datatype": "FP32", "shape": [-1, 4]}]
    assert [o["name"] for o in doc["outputs"]] == ["logits:0", "probs"]
    x = rng.standard_normal((3, 4)).astype(np.float32)
    body = {
        "inputs": [
            {"name": "input.1", "datatype": "FP32", "shape": [3, 4], "data": x.ravel().tolist()}
        ],
        "outputs": [{"name": "probs"}],
    }
    r = await onnx_client.post("/v2/models/mlp/infer", json=body)
    assert r.status == 200, await r.text()
    (out,) = (await r.json())["outputs"]
    assert out["name"] == "probs" and out["shape"] == [3, 3]
    np.testing.assert_allclose(
        np.reshape(out["data"], (3, 3)), _expected(x)[1], rtol=1e-5, atol=1e-6
    )


async def test_unsupported_operators_are_all_named_in_the_status(onnx_client):
    doc = await (await onnx_client.get("/v1/models/bad")).json()
    (status,) = doc["model_version_status"]
    assert status["state"] == "END"
    message = status["status"]["error_message"]
    assert "2 unsupported operator(s): FancyOp (x2), OtherOp" in message


async def test_a_damaged_model_fails_with_the_reason(onnx_client):
    doc = await (await onnx_client.get("/v1/models/damaged")).json()
    (status,) = doc["model_version_status"]
    assert status["state"] == "END"
    assert "damaged ONNX model" in status["status"]["error_message"]
    r = await onnx_client.post("/v1/models/damaged:predict", json={"instances": [[1, 2, 3, 4]]})
    assert r.status == 503


async def test_onnx_models_batch_on_their_symbolic_batch_dim(aiohttp_client, tmp_path):
    import asyncio
    import re

    (tmp_path / "mlp" / "1").mkdir(parents=True)
    (tmp_path / "mlp" / "1" / "model.onnx").write_bytes(_mlp())
    cfg = ServerConfig(
        model_repository=str(tmp_path), poll_interval=0.0, port=0, enable_batching=True
    ).validate()
    client = await aiohttp_client(create_app(cfg))
    xs = [rng.standard_normal((i % 3 + 1, 4)).astype(np.float32) for i in range(24)]

    async def call(x):
        r = await client.post("/v1/models/mlp:predict", json={"inputs": {"input.1": x.tolist()}})
        assert r.status == 200, await r.text()
        return (await r.json())["outputs"]

    outs = await asyncio.gather(*(call(x) for x in xs))
    for x, out in zip(xs, outs):
        np.testing.assert_allclose(out["probs"], _expected(x)[1], rtol=1e-5, atol=1e-6)
    metrics = await (await client.get("/metrics")).text()
    rows = re.search(r'flowserve_batch_size_rows_sum\{model="mlp",version="1"\} (\S+)', metrics)
    assert rows and float(rows.group(1)) == sum(len(x) for x in xs)


async def test_scikit_learn_models_serve_string_labels_by_both_protocols(aiohttp_client, tmp_path):
    # A skl2onnx export (ai.onnx.ml LinearClassifier, string class labels) and a ZipMap one,
    # as users deploy them; the labels come back as strings (V2 BYTES) and ZipMap's output
    # as its probability rows.
    from pathlib import Path

    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "sklearn_onnx"
    for name in ("logreg_strings", "logreg_binary_zipmap"):
        (tmp_path / name / "1").mkdir(parents=True)
        data = (fixtures / f"{name}.onnx").read_bytes()
        (tmp_path / name / "1" / "model.onnx").write_bytes(data)
    cfg = ServerConfig(model_repository=str(tmp_path), poll_interval=0.0, port=0).validate()
    client = await aiohttp_client(create_app(cfg))
    ref = np.load(fixtures / "logreg_strings.npz")
    x = ref["in_X"]
    body = {
        "inputs": [
            {"name": "X", "datatype": "FP32", "shape": list(x.shape), "data": x.ravel().tolist()}
        ]
    }
    r = await client.post("/v2/models/logreg_strings/infer", json=body)
    assert r.status == 200, await r.text()
    outs = {o["name"]: o for o in (await r.json())["outputs"]}
    assert outs["label"]["datatype"] == "BYTES"
    assert outs["label"]["data"] == ref["out_label"].tolist()
    np.testing.assert_allclose(
        np.reshape(outs["probabilities"]["data"], x.shape[:1] + (3,)),
        ref["out_probabilities"],
        rtol=1e-5,
        atol=1e-6,
    )
    r = await client.post("/v1/models/logreg_strings:predict", json={"instances": x[:2].tolist()})
    assert r.status == 200, await r.text()
    preds = (await r.json())["predictions"]
    assert [p["label"] for p in preds] == ref["out_label"][:2].tolist()
    zref = np.load(fixtures / "logreg_binary_zipmap.npz")
    r = await client.post(
        "/v1/models/logreg_binary_zipmap:predict", json={"inputs": {"X": zref["in_X"].tolist()}}
    )
    assert r.status == 200, await r.text()
    out = (await r.json())["outputs"]
    assert out["output_label"] == zref["out_output_label"].tolist()
    np.testing.assert_allclose(
        out["output_probability"], zref["out_output_probability"], rtol=1e-5, atol=1e-6
    )
