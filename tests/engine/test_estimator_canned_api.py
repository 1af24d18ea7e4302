"""The canned estimators' structure beyond the recorded numbers: SavedModel export with a
parsing receiver over ``make_parse_example_spec`` (TF's signatures for each head, served
values equal to ``predict``'s), label vocabularies, dropout, defaults, and TF's errors."""

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures.make_sparse_segment_fixtures import example

fc = tf.feature_column
X = np.array([[0.5, -1.0], [1.5, 0.2], [-0.3, 0.8], [2.0, 1.0]], np.float32)
COLOR = np.array(["red", "blue", "green", "red"])
COLUMNS = [
    fc.numeric_column("x", shape=(2,)),
    fc.indicator_column(fc.categorical_column_with_vocabulary_list("color", ["red", "blue"])),
]
SERIALIZED = [
    example(x=[float(a), float(b)], color=[c.encode()]) for (a, b), c in zip(X.tolist(), COLOR)
]


def _input_fn(labels, epochs=None):
    return tf.estimator.inputs.numpy_input_fn(
        {"x": X, "color": COLOR}, labels, batch_size=4, shuffle=False, num_epochs=epochs
    )


def _export(est, tmp_path) -> str:
    receiver = tf.estimator.export.build_parsing_serving_input_receiver_fn(
        fc.make_parse_example_spec(COLUMNS)
    )
    return est.export_saved_model(str(tmp_path / "export"), receiver).decode()


def _serve(path, signature: str) -> dict:
    with tf.Session(graph=tf.Graph()) as sess:
        sig = tf.saved_model.load(sess, [tf.saved_model.SERVING], path).signature_def[signature]
        (input_name,) = [t.name for t in sig.inputs.values()]
        fetch = {k: t.name for k, t in sig.outputs.items()}
        return sig.method_name, sorted(sig.inputs), sess.run(fetch, {input_name: SERIALIZED})


CASES = [
    (
        lambda d: tf.estimator.DNNClassifier(
            [3], COLUMNS, model_dir=d, label_vocabulary=["n", "y"]
        ),
        np.array(["y", "n", "n", "y"]),
        {"serving_default", "classification", "regression", "predict"},
    ),
    (
        lambda d: tf.estimator.LinearClassifier(COLUMNS, model_dir=d, n_classes=3),
        np.array([0, 2, 1, 2]),
        {"serving_default", "classification", "predict"},
    ),
    (
        lambda d: tf.estimator.DNNLinearCombinedRegressor(
            model_dir=d,
            linear_feature_columns=COLUMNS,
            dnn_feature_columns=COLUMNS,
            dnn_hidden_units=[2],
        ),
        np.array([1.0, 2.0, 0.5, 3.0], np.float32),
        {"serving_default", "regression", "predict"},
    ),
]


@pytest.mark.parametrize("make, labels, signatures", CASES)
def test_export_gives_tensorflows_signatures_and_the_predictions(
    tmp_path, make, labels, signatures
):
    est = make(str(tmp_path / "model"))
    est.train(_input_fn(labels), steps=3)
    predicted = list(est.predict(_input_fn(labels, 1)))
    path = _export(est, tmp_path)
    with tf.Session(graph=tf.Graph()) as sess:
        meta = tf.saved_model.load(sess, [tf.saved_model.SERVING], path)
        assert set(meta.signature_def) == signatures
    method, inputs, out = _serve(path, "predict")
    assert method == tf.saved_model.PREDICT_METHOD_NAME and inputs == ["examples"]
    for key, value in out.items():
        expected = np.stack([p[key] for p in predicted])
        if value.dtype.kind == "O":  # class names
            np.testing.assert_array_equal(value, expected, err_msg=key)
        else:
            np.testing.assert_allclose(value, expected, rtol=1e-5, err_msg=key)
    if "classification" in signatures:
        method, inputs, out = _serve(path, "classification")
        assert method == tf.saved_model.CLASSIFY_METHOD_NAME and inputs == ["inputs"]
        assert sorted(out) == ["classes", "scores"]
        probabilities = np.stack([p["probabilities"] for p in predicted])
        np.testing.assert_allclose(out["scores"], probabilities, rtol=1e-5)
        np.testing.assert_array_equal(out["classes"][0], np.stack(predicted[0]["all_classes"]))
    if "regression" in signatures:
        method, inputs, out = _serve(path, "regression")
        assert method == tf.saved_model.REGRESS_METHOD_NAME and sorted(out) == ["outputs"]
        key = "logistic" if "logistic" in predicted[0] else "predictions"
        np.testing.assert_allclose(
            out["outputs"].reshape(-1), np.stack([p[key] for p in predicted]).reshape(-1), rtol=1e-5
        )


def test_label_vocabulary_names_the_classes(tmp_path):
    est = tf.estimator.LinearClassifier(
        COLUMNS, model_dir=str(tmp_path), n_classes=3, label_vocabulary=["lo", "mid", "hi"]
    )
    labels = np.array(["hi", "lo", "mid", "hi"])
    est.train(_input_fn(labels), steps=20)
    predicted = list(est.predict(_input_fn(labels, 1)))
    assert [p["all_classes"].tolist() for p in predicted[:1]] == [[b"lo", b"mid", b"hi"]]
    names = [b"lo", b"mid", b"hi"]
    assert all(p["classes"][0] == names[p["class_ids"][0]] for p in predicted)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Labels must >= 0"):
        est.train(_input_fn(np.array(["hi", "lo", "??", "hi"])), steps=1)


def test_dropout_only_in_training_and_defaults(tmp_path):
    est = tf.estimator.DNNRegressor([4], COLUMNS, model_dir=str(tmp_path), dropout=0.5)
    labels = np.array([1.0, 2.0, 0.5, 3.0], np.float32)
    est.train(_input_fn(labels), steps=2)
    first = [p["predictions"] for p in est.predict(_input_fn(labels, 1))]
    second = [p["predictions"] for p in est.predict(_input_fn(labels, 1))]
    np.testing.assert_array_equal(first, second)  # no dropout when predicting
    names = est.get_variable_names()
    assert "dnn/hiddenlayer_0/kernel/Adagrad" in names  # Adagrad by default
    linear = tf.estimator.LinearRegressor(COLUMNS, model_dir=str(tmp_path / "lin"))
    linear.train(_input_fn(labels), steps=1)
    assert "linear/linear_model/x/weights/Ftrl" in linear.get_variable_names()


BAD = [
    (lambda: tf.estimator.DNNClassifier([2], COLUMNS, n_classes=1), ValueError, "n_classes"),
    (lambda: tf.estimator.DNNClassifier([2], COLUMNS, label_vocabulary="ab"), ValueError, "list"),
    (lambda: tf.estimator.LinearRegressor(COLUMNS, label_dimension=0), ValueError, "label_dim"),
    (lambda: tf.estimator.DNNLinearCombinedClassifier(), ValueError, "Either linear_feature"),
    (lambda: tf.estimator.LinearClassifier(COLUMNS, loss_reduction="none"), ValueError, "Invalid"),
    (
        lambda: tf.estimator.LinearClassifier(COLUMNS, partitioner=object()),
        NotImplementedError,
        "partitioned",
    ),
]


@pytest.mark.parametrize("make, error, message", BAD)
def test_bad_arguments_raise(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_bad_optimizer_and_labels_raise_at_train_time(tmp_path):
    labels = np.array([0, 1, 1, 0])
    est = tf.estimator.DNNClassifier([2], COLUMNS, model_dir=str(tmp_path / "a"), optimizer="Nope")
    with pytest.raises(ValueError, match="Unsupported optimizer name: Nope"):
        est.train(_input_fn(labels), steps=1)
    est = tf.estimator.DNNClassifier([2], COLUMNS, model_dir=str(tmp_path / "b"), optimizer=3)
    with pytest.raises(ValueError, match="not an Optimizer instance"):
        est.train(_input_fn(labels), steps=1)
    est = tf.estimator.LinearClassifier(COLUMNS, model_dir=str(tmp_path / "c"), n_classes=3)
    with pytest.raises(ValueError, match="Labels dtype should be integer"):
        est.train(_input_fn(np.array([0.5, 1.0, 0.0, 1.0], np.float32)), steps=1)
    est = tf.estimator.LinearClassifier(COLUMNS, model_dir=str(tmp_path / "d"))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Labels must <= n_classes - 1"):
        est.train(_input_fn(np.array([0, 1, 2, 1])), steps=1)
    # A binary head looks integer labels up in its string vocabulary: TF's lookup error.
    est = tf.estimator.DNNClassifier(
        [2], COLUMNS, model_dir=str(tmp_path / "e"), label_vocabulary=["n", "y"]
    )
    with pytest.raises(TypeError, match="Signature mismatch. Keys must be dtype <dtype: 'string'>"):
        est.train(_input_fn(labels), steps=1)
    est = tf.estimator.DNNClassifier(
        [2], COLUMNS, model_dir=str(tmp_path / "f"), n_classes=3, label_vocabulary=["a", "b", "c"]
    )
    with pytest.raises(ValueError, match="Labels dtype should be string if there is a vocabulary"):
        est.train(_input_fn(labels), steps=1)


def test_batch_norm_variables_are_named_as_tensorflow_1_15s(tmp_path):
    est = tf.estimator.DNNRegressor([3, 2], COLUMNS, model_dir=str(tmp_path), batch_norm=True)
    labels = np.array([1.0, 2.0, 0.5, 3.0], np.float32)
    est.train(_input_fn(labels), steps=2)
    names = set(est.get_variable_names())
    for i in (0, 1):
        for v in ("gamma", "beta", "moving_mean", "moving_variance"):
            assert f"dnn/hiddenlayer_{i}/batchnorm_{i}/{v}" in names
    assert not np.all(est.get_variable_value("dnn/hiddenlayer_0/batchnorm_0/moving_mean") == 0)
