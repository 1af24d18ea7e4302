"""``tf.keras.estimator.model_to_estimator``: the estimator predicts what the Keras model
predicts, evaluates its compiled loss and metrics as Keras does, trains exactly as the Keras
model's own steps would from the same weights, and exports a servable SavedModel."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tf

K = tf.keras.backend
L = tf.keras.layers
X = np.random.RandomState(0).rand(48, 4).astype(np.float32)
Y = (X.sum(1) > 2).astype(np.int32)


def _model():
    K.clear_session()
    m = tf.keras.Sequential(
        [
            L.Dense(6, activation="relu", input_shape=(4,)),
            L.BatchNormalization(),
            L.Dense(2, activation="softmax"),
        ]
    )
    m.compile(
        tf.keras.optimizers.SGD(0.2, momentum=0.9),
        "sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    return m


def _inputs(name, x, y=None, batch=16, epochs=1):
    return tf.estimator.inputs.numpy_input_fn(
        {name: x}, y, batch_size=batch, shuffle=False, num_epochs=epochs
    )


def test_predict_evaluate_and_train_match_keras(tmp_path):
    model = _model()
    model.fit(X, Y, epochs=1, verbose=0)  # moving statistics and weights not at their start
    est = tf.keras.estimator.model_to_estimator(keras_model=model, model_dir=str(tmp_path))
    name, out = model.input_names[0], model.output_names[0]
    got = np.stack([p[out] for p in est.predict(_inputs(name, X))])
    np.testing.assert_allclose(got, model.predict(X), rtol=1e-6, atol=1e-7)
    result = est.evaluate(_inputs(name, X, Y, batch=48))
    loss, acc = model.evaluate(X, Y, batch_size=48, verbose=0)
    assert result["global_step"] == 0
    np.testing.assert_allclose([result["loss"], result["acc"]], [loss, acc], rtol=1e-6)
    # Three steps of the estimator are three train_on_batch steps of a fresh SGD.
    est.train(_inputs(name, X, Y, batch=16), steps=3)
    model.compile(tf.keras.optimizers.SGD(0.2, momentum=0.9), "sparse_categorical_crossentropy")
    for i in range(3):
        model.train_on_batch(X[16 * i : 16 * (i + 1)], Y[16 * i : 16 * (i + 1)])
    for w in model.weights:
        np.testing.assert_allclose(
            est.get_variable_value(w.op.name), K.get_value(w), rtol=1e-5, atol=1e-6, err_msg=w.name
        )
    assert est.get_variable_value("global_step") == 3


def test_two_inputs_two_outputs_and_export(tmp_path):
    K.clear_session()
    a, b = tf.keras.Input((2,), name="a"), tf.keras.Input((2,), name="b")
    h = L.concatenate([L.Dense(3, activation="tanh")(a), b])
    model = tf.keras.Model(
        [a, b], [L.Dense(1, name="reg")(h), L.Dense(1, activation="sigmoid", name="cls")(h)]
    )
    model.compile(
        "adam",
        {"reg": "mse", "cls": "binary_crossentropy"},
        loss_weights={"reg": 1.0, "cls": 0.5},
        metrics={"cls": ["accuracy"]},
    )
    est = tf.keras.estimator.model_to_estimator(keras_model=model, model_dir=str(tmp_path))
    feats = {"a": X[:, :2], "b": X[:, 2:]}
    labels = {"reg": X[:, :1] * 2, "cls": (X[:, :1] > 0.5).astype(np.float32)}
    ein = tf.estimator.inputs.numpy_input_fn(feats, labels, batch_size=48, shuffle=False)
    result = est.evaluate(ein)
    want = model.evaluate(
        [X[:, :2], X[:, 2:]], [labels["reg"], labels["cls"]], batch_size=48, verbose=0
    )
    np.testing.assert_allclose([result["loss"], result["cls_acc"]], [want[0], want[3]], rtol=1e-5)
    est.train(
        tf.estimator.inputs.numpy_input_fn(feats, labels, batch_size=16, shuffle=False), steps=2
    )
    serving = tf.estimator.export.build_raw_serving_input_receiver_fn(
        {
            "a": tf.placeholder(tf.float32, [None, 2], name="a"),
            "b": tf.placeholder(tf.float32, [None, 2], name="b"),
        }
    )
    path = est.export_saved_model(str(tmp_path / "export"), serving)
    g = tf.Graph()
    with g.as_default(), tf.Session(graph=g) as sess:
        sig = tf.saved_model.load(sess, ["serve"], path).signature_def["serving_default"]
        assert sorted(sig.outputs) == ["cls", "reg"]
        got = sess.run(
            sig.outputs["reg"].name,
            {sig.inputs["a"].name: X[:3, :2], sig.inputs["b"].name: X[:3, 2:]},
        )
    pred = next(
        iter(
            est.predict(
                tf.estimator.inputs.numpy_input_fn({"a": X[:1, :2], "b": X[:1, 2:]}, shuffle=False)
            )
        )
    )
    np.testing.assert_allclose(got[0], pred["reg"], rtol=1e-6)


def test_refusals(tmp_path):
    model = _model()
    est = tf.keras.estimator.model_to_estimator(keras_model=model, model_dir=str(tmp_path))
    with pytest.raises(KeyError, match="Expected keys"):
        est.predict(tf.estimator.inputs.numpy_input_fn({"wrong": X}, shuffle=False)).__next__()
    with pytest.raises(ValueError, match="Either `keras_model` or `keras_model_path`"):
        tf.keras.estimator.model_to_estimator()
    K.clear_session()
    fresh = tf.keras.Sequential([L.Dense(1, input_shape=(2,))])
    with pytest.raises(ValueError, match="has not been compiled yet"):
        tf.keras.estimator.model_to_estimator(keras_model=fresh)

    class Sub(tf.keras.Model):
        def call(self, inputs):
            return inputs

    with pytest.raises(NotImplementedError, match="subclassed"):
        tf.keras.estimator.model_to_estimator(keras_model=Sub())
