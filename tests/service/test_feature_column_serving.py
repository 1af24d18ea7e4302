"""Estimator-style feature-column SavedModels (TF1 ``tf.Example`` serving graphs, written by
``tests/engine/fixtures/make_feature_column_fixtures.py`` with TensorFlow) served over TF
Serving's REST API: ``:predict`` with serialized examples as ``{"b64": ...}`` strings, and
``:classify`` / ``:regress`` with examples as JSON features; answers compared with the
outputs TensorFlow recorded."""

import base64
import shutil
from pathlib import Path

import numpy as np
import pytest

from service.app import create_app
from tests.engine.fixtures import make_feature_column_fixtures as fx

MODELS = Path(__file__).resolve().parents[1] / "fixtures" / "tensorflow"


@pytest.fixture
async def client(aiohttp_client, make_config, tmp_path):
    for name in ("fc_classifier", "fc_regressor"):
        shutil.copytree(MODELS / name, tmp_path / name / "1")
    return await aiohttp_client(create_app(make_config(model_repository=str(tmp_path))))


def _recording(name: str):
    return np.load(MODELS / name / "io.npz", allow_pickle=False)


async def _post(client, path: str, doc: dict):
    resp = await client.post(path, json=doc)
    body = await resp.json()
    assert resp.status == 200, body
    return body


async def test_predict_with_b64_serialized_examples(client):
    io = _recording("fc_classifier")
    b64 = [{"b64": base64.b64encode(bytes.fromhex(h)).decode()} for h in io["examples"]]
    doc = await _post(client, "/v1/models/fc_classifier:predict", {"inputs": {"examples": b64}})
    for key in ("logits", "probabilities"):
        np.testing.assert_allclose(doc["outputs"][key], io[key], rtol=2e-5, atol=2e-5)
    # The row format: one serialized example per instance.
    io = _recording("fc_regressor")
    b64 = [{"b64": base64.b64encode(bytes.fromhex(h)).decode()} for h in io["examples"]]
    doc = await _post(client, "/v1/models/fc_regressor:predict", {"instances": b64})
    np.testing.assert_allclose(doc["predictions"], io["predictions"], rtol=2e-5, atol=2e-5)


# The fixture's examples as JSON feature objects (those without empty lists, whose kind JSON
# cannot carry): the server builds the same tf.Examples from them.
CLASSIFY = {
    0: {"age": 33.0, "color": "red", "word": ["hello", "world"], "cid": 2},
    1: {"age": 18.0, "color": "purple", "word": "x", "cid": [0, 4]},
    3: {"age": 70.0},
    5: {"age": -4.5, "color": "green", "word": "hello", "cid": 1},
}
REGRESS = {
    0: {"hours": [1.0, 2.0], "city": "paris", "tags": ["x", "y"], "tag_w": [0.5, 2.0], "rating": 3},
    1: {"hours": [0.5, 0.0], "city": "atlantis", "tags": "z", "tag_w": 1.0, "rating": [0, 4]},
    4: {"hours": [9.0, -1.0], "city": "oslo", "tags": ["x", "x", "q"], "tag_w": [1.0, 1.0, 3.0]},
}


async def test_classify_with_json_examples(client):
    io = _recording("fc_classifier")
    doc = await _post(
        client,
        "/v1/models/fc_classifier:classify",
        {"signature_name": "classification", "examples": list(CLASSIFY.values())},
    )
    for row, i in zip(doc["result"], CLASSIFY):
        assert [label for label, _ in row] == fx.LABELS
        np.testing.assert_allclose([s for _, s in row], io["probabilities"][i], rtol=2e-5)


async def test_regress_with_json_examples_and_context(client):
    io = _recording("fc_regressor")
    examples = [dict(REGRESS[0]), dict(REGRESS[1]), dict(REGRESS[4])]
    hours = examples[2].pop("hours")  # supplied by the context instead
    doc = await _post(
        client,
        "/v1/models/fc_regressor:regress",
        {"signature_name": "regression", "context": {"hours": hours}, "examples": examples},
    )
    np.testing.assert_allclose(doc["result"], io["outputs"][list(REGRESS)], rtol=2e-5)


async def test_a_bad_example_is_a_400(client):
    resp = await client.post(
        "/v1/models/fc_classifier:predict",
        json={"inputs": {"examples": [{"b64": base64.b64encode(b"\x0a\xff").decode()}]}},
    )
    assert resp.status == 400 and "Could not parse example" in (await resp.json())["error"]
