"""A Keras model trained by the engine, exported as a SavedModel (the inference graph with its
weights frozen) and served: loaded back by the engine and over TF Serving's REST protocol,
with the predictions ``model.predict`` gave. (TensorFlow 2.21 itself loads such an export and
computes the same values; checked by hand, as TF is not a test dependency.)"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import engine as tf
from service.app import create_app
from service.config import ServerConfig

X = np.random.RandomState(0).rand(24, 4).astype(np.float32)
Y = (X.sum(1) > 2).astype(np.int64)


def _trained():
    tf.keras.backend.clear_session()
    layers = tf.keras.layers
    inp = tf.keras.Input((4,), name="features")
    h = layers.Dense(8, activation="relu")(inp)
    h = layers.Dropout(0.5)(h)
    h = layers.BatchNormalization()(h)
    probs = layers.Dense(2, activation="softmax", name="probs")(h)
    score = layers.Dense(1, name="score")(h)
    model = tf.keras.Model(inp, [probs, score])
    model.compile("adam", ["sparse_categorical_crossentropy", "mse"])
    model.fit(X, [Y, X[:, :1]], epochs=2, batch_size=8, verbose=0)
    return model


def test_export_holds_the_inference_graph(tmp_path):
    model = _trained()
    want_probs, want_score = model.predict(X)
    path = str(tmp_path / "1")
    tf.keras.experimental.export_saved_model(model, path)
    assert sorted(os.listdir(path)) == ["saved_model.pb", "variables"]
    g = tf.Graph()
    with g.as_default(), tf.Session(graph=g) as sess:
        meta = tf.saved_model.load(sess, ["serve"], path)
        sig = meta.signature_def["serving_default"]
        assert sorted(sig.inputs) == ["features"]
        assert sorted(sig.outputs) == ["probs", "score"]
        got = sess.run(
            [sig.outputs["probs"].name, sig.outputs["score"].name], {sig.inputs["features"].name: X}
        )
        # No learning-phase cond or variables left: Dropout and BN are in inference form.
        types = {op.type for op in g.get_operations()}
        assert not types & {"If", "StatelessIf", "VariableV2", "PlaceholderWithDefault"}
    np.testing.assert_allclose(got[0], want_probs, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got[1], want_score, rtol=1e-6, atol=1e-6)


def test_export_refuses_what_it_cannot_write(tmp_path):
    model = tf.keras.Sequential([tf.keras.layers.Dense(2)])
    with pytest.raises(ValueError, match="not built"):
        tf.keras.experimental.export_saved_model(model, str(tmp_path / "a"))
    model = _trained()
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x").write_text("")
    with pytest.raises(FileExistsError, match="not empty"):
        model.save(str(tmp_path / "b"))


async def test_exported_keras_model_is_served(aiohttp_client, tmp_path):
    model = _trained()
    want_probs, want_score = model.predict(X[:3])
    model.save(str(tmp_path / "keras_clf" / "1"))
    config = ServerConfig(model_repository=str(tmp_path), poll_interval=0, port=0).validate()
    client = await aiohttp_client(create_app(config))
    body = {"instances": [{"features": row} for row in X[:3].tolist()]}
    r = await client.post("/v1/models/keras_clf:predict", data=json.dumps(body))
    assert r.status == 200, await r.text()
    preds = (await r.json())["predictions"]
    np.testing.assert_allclose([p["probs"] for p in preds], want_probs, rtol=1e-5)
    np.testing.assert_allclose([p["score"] for p in preds], want_score, rtol=1e-5, atol=1e-6)
