"""The engine's own canned estimators, exported with a parsing receiver
(``make_parse_example_spec``), served over TF Serving's REST API: ``:classify`` and
``:regress`` with examples as JSON features, ``:predict`` with serialized ``tf.Example``s as
``{"b64": ...}`` strings; answers equal to the estimator's ``predict``."""

import base64
import shutil

import numpy as np
import pytest

import engine as tf
from service.app import create_app
from tests.engine.fixtures.make_sparse_segment_fixtures import example

fc = tf.feature_column
X = np.array([[0.5, -1.0], [1.5, 0.2], [-0.3, 0.8], [2.0, 1.0]], np.float32)
COLOR = np.array(["red", "blue", "green", "red"])
COLUMNS = [
    fc.numeric_column("x", shape=(2,)),
    fc.embedding_column(fc.categorical_column_with_vocabulary_list("color", ["red", "blue"]), 2),
]
EXAMPLES = [{"x": [float(a), float(b)], "color": c} for (a, b), c in zip(X.tolist(), COLOR)]
SERIALIZED = [example(x=e["x"], color=[e["color"].encode()]) for e in EXAMPLES]


def _input_fn(labels, epochs=None):
    return tf.estimator.inputs.numpy_input_fn(
        {"x": X, "color": COLOR}, labels, batch_size=4, shuffle=False, num_epochs=epochs
    )


def _trained_export(make, labels, root):
    """(the estimator's predictions, the repository holding its export as version 1)."""
    est = make(str(root / "model"))
    est.train(_input_fn(labels), steps=3)
    predicted = list(est.predict(_input_fn(labels, 1)))
    receiver = tf.estimator.export.build_parsing_serving_input_receiver_fn(
        fc.make_parse_example_spec(COLUMNS)
    )
    path = est.export_saved_model(str(root / "export"), receiver).decode()
    shutil.copytree(path, root / "repo" / "est" / "1")
    return predicted, root / "repo"


async def _post(client, path: str, doc: dict):
    resp = await client.post(path, json=doc)
    body = await resp.json()
    assert resp.status == 200, body
    return body


async def test_classifier_with_label_vocabulary(aiohttp_client, make_config, tmp_path):
    predicted, repo = _trained_export(
        lambda d: tf.estimator.DNNClassifier(
            [3], COLUMNS, model_dir=d, n_classes=3, label_vocabulary=["lo", "mid", "hi"]
        ),
        np.array(["hi", "lo", "mid", "hi"]),
        tmp_path,
    )
    client = await aiohttp_client(create_app(make_config(model_repository=str(repo))))
    doc = await _post(client, "/v1/models/est:classify", {"examples": EXAMPLES})
    probabilities = np.stack([p["probabilities"] for p in predicted])
    for row, expected in zip(doc["result"], probabilities):
        assert [label for label, _ in row] == ["lo", "mid", "hi"]
        np.testing.assert_allclose([s for _, s in row], expected, rtol=1e-5)
    b64 = [{"b64": base64.b64encode(s).decode()} for s in SERIALIZED]
    doc = await _post(
        client, "/v1/models/est:predict", {"signature_name": "predict", "instances": b64}
    )
    for row, p in zip(doc["predictions"], predicted):
        np.testing.assert_allclose(row["probabilities"], p["probabilities"], rtol=1e-5)
        assert row["classes"] == [p["classes"][0].decode()]
    # Predict over the default (classification) signature: its classes and scores.
    doc = await _post(client, "/v1/models/est:predict", {"instances": b64})
    np.testing.assert_allclose([r["scores"] for r in doc["predictions"]], probabilities, rtol=1e-5)
    assert doc["predictions"][0]["classes"] == ["lo", "mid", "hi"]


@pytest.mark.parametrize("label_dimension", [1, 2])
async def test_regressor(aiohttp_client, make_config, tmp_path, label_dimension):
    labels = np.stack([X[:, 0], 2 * X[:, 1]], 1)[:, :label_dimension]
    predicted, repo = _trained_export(
        lambda d: tf.estimator.DNNRegressor(
            [3], COLUMNS, model_dir=d, label_dimension=label_dimension
        ),
        labels,
        tmp_path,
    )
    client = await aiohttp_client(create_app(make_config(model_repository=str(repo))))
    expected = np.stack([p["predictions"] for p in predicted])
    b64 = [{"b64": base64.b64encode(s).decode()} for s in SERIALIZED]
    doc = await _post(client, "/v1/models/est:predict", {"instances": b64})
    np.testing.assert_allclose(doc["predictions"], expected, rtol=1e-5)
    if label_dimension == 1:
        doc = await _post(client, "/v1/models/est:regress", {"examples": EXAMPLES})
        np.testing.assert_allclose(doc["result"], expected[:, 0], rtol=1e-5)
        return
    # TF 1.15 exports a regression signature whatever the label dimension; TF Serving's
    # Regress then refuses outputs wider than one value per example (INVALID_ARGUMENT).
    resp = await client.post("/v1/models/est:regress", json={"examples": EXAMPLES})
    assert resp.status == 400
    assert "[batch] or [batch, 1], got float32 [4, 2]" in (await resp.json())["error"]


async def test_client_mistakes_are_400s(aiohttp_client, make_config, tmp_path):
    _, repo = _trained_export(
        lambda d: tf.estimator.LinearClassifier(COLUMNS, model_dir=d),
        np.array([0, 1, 1, 0]),
        tmp_path,
    )
    client = await aiohttp_client(create_app(make_config(model_repository=str(repo))))
    bad = [  # (examples, TF's parse error)
        ([{"color": "red"}], "Feature: x (data type: float) is required"),
        ([{"x": ["a", "b"], "color": "red"}], "Key: x, Index: 0.  Data types don't match"),
        ([{"x": [1.0], "color": "red"}], "Values size: 1 but output shape: [2]"),
        ([{"x": [1.0, 2.0], "color": 3}], "Key: color, Index: 0.  Data types don't match"),
    ]
    for examples, message in bad:
        resp = await client.post("/v1/models/est:classify", json={"examples": examples})
        body = await resp.json()
        assert resp.status == 400 and message in body["error"], (examples, body)
