"""TensorFlow SavedModels in the model repository: served as they are, over REST and V2,
and versions the server cannot load shown as failed with the reason."""

from __future__ import annotations

import json
import pathlib
import shutil

import numpy as np

from service.app import create_app
from service.config import ServerConfig

FIXTURES = pathlib.Path(__file__).parents[1] / "fixtures" / "tensorflow"


def _repo(tmp_path):
    shutil.copytree(FIXTURES / "saved_model_resource", tmp_path / "tf1" / "1")
    shutil.copytree(FIXTURES / "tf2_module", tmp_path / "tf2" / "3")
    (tmp_path / "tf2" / "4").mkdir()  # a version holding no model at all
    bad = tmp_path / "tf1" / "2"
    shutil.copytree(FIXTURES / "saved_model_resource", bad)
    (bad / "saved_model.pb").write_bytes((bad / "saved_model.pb").read_bytes()[:700])
    for model in ("tf1", "tf2"):
        (tmp_path / model / "config.json").write_text('{"version_policy": {"all": {}}}')
    return tmp_path


async def _client(aiohttp_client, root, **kw):
    config = ServerConfig(model_repository=str(root), poll_interval=0, port=0, **kw).validate()
    return await aiohttp_client(create_app(config))


async def test_tf_saved_models_are_served_over_rest_and_v2(aiohttp_client, tmp_path):
    client = await _client(aiohttp_client, _repo(tmp_path))
    io = np.load(FIXTURES / "saved_model_resource" / "io.npz")
    body = {"inputs": {"x": io["x"].tolist(), "ids": io["ids"].tolist()}}
    r = await client.post("/v1/models/tf1/versions/1:predict", data=json.dumps(body))
    assert r.status == 200, await r.text()
    out = (await r.json())["outputs"]
    np.testing.assert_allclose(out["y"], io["y"], rtol=1e-5)
    np.testing.assert_allclose(out["looked"], io["looked"])
    assert out["count"] == int(io["count"])

    io2 = np.load(FIXTURES / "tf2_module" / "io.npz")
    v2 = {
        "inputs": [
            {
                "name": "x",
                "shape": list(io2["x"].shape),
                "datatype": "FP32",
                "data": io2["x"].ravel().tolist(),
            }
        ]
    }
    r = await client.post("/v2/models/tf2/infer", data=json.dumps(v2))
    assert r.status == 200, await r.text()
    outs = {o["name"]: o for o in (await r.json())["outputs"]}
    np.testing.assert_allclose(
        np.reshape(outs["out"]["data"], outs["out"]["shape"]), io2["out"], rtol=1e-5
    )
    np.testing.assert_allclose(outs["total"]["data"], io2["total"], rtol=1e-5)


async def test_versions_that_cannot_load_show_failed_with_the_reason(aiohttp_client, tmp_path):
    client = await _client(aiohttp_client, _repo(tmp_path))
    r = await client.get("/v1/models/tf1")
    status = {s["version"]: s for s in (await r.json())["model_version_status"]}
    assert status["1"]["state"] == "AVAILABLE"
    assert status["2"]["state"] == "END"
    assert "saved_model.pb" in status["2"]["status"]["error_message"]
    r = await client.get("/v1/models/tf2")
    status = {s["version"]: s for s in (await r.json())["model_version_status"]}
    assert status["4"]["state"] == "END"
    assert "saved_model.pb" in status["4"]["status"]["error_message"]
    assert "saved_model.msgpack" in status["4"]["status"]["error_message"]


async def test_tf2_model_with_control_flow_is_served(aiohttp_client, tmp_path):
    shutil.copytree(FIXTURES / "tf2_control_flow", tmp_path / "flow" / "1")
    client = await _client(aiohttp_client, tmp_path)
    io = np.load(FIXTURES / "tf2_control_flow" / "io.npz")
    for case in ("pos", "neg"):
        body = {"inputs": {"x": io[f"x_{case}"].tolist(), "n": int(io[f"n_{case}"])}}
        r = await client.post("/v1/models/flow:predict", data=json.dumps(body))
        assert r.status == 200, await r.text()
        out = (await r.json())["outputs"]
        np.testing.assert_allclose(out["y"], io[f"y_{case}"], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(out["acc"], io[f"acc_{case}"], rtol=1e-5, atol=1e-5)


async def test_tf1_model_with_dataflow_control_flow_is_served(aiohttp_client, tmp_path):
    """A TF1 SavedModel built with control flow v1 (Switch/Merge, Enter/Exit loops,
    dynamic_rnn's TensorArrays) answers as TensorFlow did, over REST and V2."""
    shutil.copytree(FIXTURES / "tf1_control_flow" / "saved_model", tmp_path / "rnn" / "1")
    client = await _client(aiohttp_client, tmp_path)
    io = np.load(FIXTURES / "tf1_control_flow" / "io.npz")
    for case in ("pos", "neg"):
        inputs = {
            "x": io[f"x_{case}"].tolist(),
            "n": int(io[f"n_{case}"]),
            "training": bool(io[f"training_{case}"]),
        }
        r = await client.post("/v1/models/rnn:predict", data=json.dumps({"inputs": inputs}))
        assert r.status == 200, await r.text()
        out = (await r.json())["outputs"]
        for k in ("nested", "bn", "tri", "mapped", "rnn_out", "rnn_h", "bi_bw", "grown_ta"):
            np.testing.assert_allclose(out[k], io[f"{k}_{case}"], rtol=1e-5, atol=1e-5)
        assert out["word"] == io[f"word_{case}"].item().decode()  # a string scalar
    body = {
        "inputs": [
            {"name": "x", "shape": [1, 4], "datatype": "FP32", "data": io["x_one"].tolist()},
            {"name": "n", "shape": [], "datatype": "INT32", "data": [int(io["n_one"])]},
            {"name": "training", "shape": [], "datatype": "BOOL", "data": [False]},
        ],
        "outputs": [{"name": "rnn_out"}, {"name": "word"}],
    }
    r = await client.post("/v2/models/rnn/infer", data=json.dumps(body))
    assert r.status == 200, await r.text()
    out, word = (await r.json())["outputs"]
    assert out["shape"] == list(io["rnn_out_one"].shape)
    np.testing.assert_allclose(out["data"], io["rnn_out_one"].ravel(), rtol=1e-5, atol=1e-6)
    assert word == {"name": "word", "datatype": "BYTES", "shape": [], "data": ["small"]}


async def test_keras_text_vectorization_model_takes_raw_text(aiohttp_client, tmp_path):
    """Keras' TextVectorization (StringSplitV2, RaggedTensorToTensor) served on raw strings."""
    d = FIXTURES / "keras_text_vectorization"
    shutil.copytree(d, tmp_path / "text" / "1")
    client = await _client(aiohttp_client, tmp_path)
    texts = json.loads((d / "texts.json").read_text())
    r = await client.post("/v1/models/text:predict", data=json.dumps({"instances": texts}))
    assert r.status == 200, await r.text()
    got = (await r.json())["predictions"]
    np.testing.assert_allclose(got, np.load(d / "io.npz")["y"], rtol=1e-5, atol=1e-6)


async def test_a_model_in_tf_servings_own_form_answers_its_tutorial_requests(
    aiohttp_client, tmp_path
):
    """TF Serving's half_plus_two form (version directory 00000123, a Snappy-compressed
    checkpoint index, x of shape [?, 1], predict/classify/regress signatures): the requests
    of TF Serving's REST tutorial get TF Serving's answers, including [1.0, 2.0, 5.0] fed to
    the [?, 1] input as TF's C++ session feeds it (recorded by TF: flat_y)."""
    d = FIXTURES / "half_plus_two_tf1"
    shutil.copytree(d, tmp_path / "half_plus_two")
    (tmp_path / "half_plus_two" / "io.npz").unlink()
    client = await _client(aiohttp_client, tmp_path)
    io = np.load(d / "io.npz")
    r = await client.get("/v1/models/half_plus_two")
    assert (await r.json())["model_version_status"][0]["version"] == "123"
    r = await client.post(
        "/v1/models/half_plus_two:predict", data=json.dumps({"instances": [1.0, 2.0, 5.0]})
    )
    assert r.status == 200, await r.text()
    assert (await r.json())["predictions"] == io["flat_y"].tolist()
    rows = {"instances": io["x"].tolist()}
    r = await client.post("/v1/models/half_plus_two:predict", data=json.dumps(rows))
    assert (await r.json())["predictions"] == io["y"].tolist()
    examples = {"examples": [{"x": 1.0}, {"x": 2.0}]}
    r = await client.post(
        "/v1/models/half_plus_two:regress",
        data=json.dumps({"signature_name": "regress_x_to_y", **examples}),
    )
    assert (await r.json())["result"] == [2.5, 3.0]
    r = await client.post(
        "/v1/models/half_plus_two:classify",
        data=json.dumps({"signature_name": "classify_x_to_y", **examples}),
    )
    assert (await r.json())["result"] == [[["", 2.5]], [["", 3.0]]]
    # a shape the graph cannot take is still a 400 naming the problem, never a 500
    r = await client.post(
        "/v1/models/half_plus_two:predict", data=json.dumps({"instances": ["a", "b"]})
    )
    assert r.status == 400
    assert "error" in await r.json()


async def test_a_tf_model_fed_a_shape_its_graph_cannot_take_answers_400(aiohttp_client, tmp_path):
    """The graph decides request shapes for TF SavedModels; when it cannot take one, the
    answer is a 400 naming the op, never a 500."""
    client = await _client(aiohttp_client, _repo(tmp_path))
    body = {"inputs": {"x": [[1.0, 2.0, 3.0, 4.0, 5.0]], "ids": [0]}}
    r = await client.post("/v1/models/tf1/versions/1:predict", data=json.dumps(body))
    assert r.status == 400
    assert "MatMul" in (await r.json())["error"]
