"""The canned estimators against TF 1.15's, as composed under TensorFlow by
``fixtures/make_canned_estimator_fixtures.py``: from the same initial weights (a warm-start
checkpoint), the loss before each of ``STEPS`` training steps of the default optimizer, then
the loss, eval metrics and predictions, and the names and shapes of the variables."""

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures.make_canned_estimator_fixtures import (
    CHECKPOINTED,
    CHECKPOINTS,
    DATA,
    LABELS,
    MODELS,
    STEPS,
    N,
    dnn_columns,
    initial_value,
    linear_columns,
)
from tests.engine.fixtures.oracle import load

TF = load("canned_estimator_tf.npz")
fc = tf.feature_column


class _LossHook(tf.train.SessionRunHook):
    """The training loss before each step (the head's summed loss)."""

    def __init__(self):
        self.losses = []

    def begin(self):
        self._loss = tf.get_collection(tf.GraphKeys.LOSSES)[-1]  # the reduced loss comes last

    def before_run(self, run_context):  # noqa: ARG002 - SessionRunHook's signature
        return tf.train.SessionRunArgs(self._loss)

    def after_run(self, run_context, run_values):  # noqa: ARG002
        self.losses.append(run_values.results)


def _warm_start_checkpoint(name: str, directory) -> str:
    """A checkpoint holding the recorded variables at their seeded initial values."""
    with tf.Graph().as_default():
        for entry in TF[f"{name}/variables"]:
            var_name, shape = str(entry).split(":")
            shape = [int(d) for d in shape.strip("[]").split(",") if d.strip()]
            tf.Variable(initial_value(var_name, shape), name=var_name)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            (directory / "init").mkdir()
            return tf.train.Saver().save(sess, str(directory / "init" / "model.ckpt"))


def _estimator(name: str, model_dir, warm_start):
    kind, head, weight_column, extra = MODELS[name]
    common = {"model_dir": str(model_dir), "weight_column": weight_column}
    classifier = head in ("binary", "multi")
    if head == "regression2":
        common["label_dimension"] = 2
    if classifier:
        common["n_classes"] = 2 if head == "binary" else 3
        if head == "multi":
            common["label_vocabulary"] = ["a", "b", "c"]
    if kind == "dnn":
        cls = tf.estimator.DNNClassifier if classifier else tf.estimator.DNNRegressor
        return cls(extra["hidden_units"], dnn_columns(fc), warm_start_from=warm_start, **common)
    if kind == "linear":
        cls = tf.estimator.LinearClassifier if classifier else tf.estimator.LinearRegressor
        combiner = extra.get("sparse_combiner", "sum")
        return cls(
            linear_columns(fc), warm_start_from=warm_start, sparse_combiner=combiner, **common
        )
    if kind == "combined":
        return tf.estimator.DNNLinearCombinedClassifier(
            linear_feature_columns=linear_columns(fc),
            dnn_feature_columns=dnn_columns(fc),
            dnn_hidden_units=extra["hidden_units"],
            warm_start_from=warm_start,
            **common,
        )
    cls = tf.estimator.BaselineClassifier if classifier else tf.estimator.BaselineRegressor
    return cls(**common)


def _input_fn(head: str, epochs):
    return tf.estimator.inputs.numpy_input_fn(
        dict(DATA), LABELS[head], batch_size=N, shuffle=False, num_epochs=epochs
    )


@pytest.fixture(scope="module", params=sorted(MODELS))
def trained(request, tmp_path_factory):
    name = request.param
    directory = tmp_path_factory.mktemp(name)
    kind, head = MODELS[name][:2]
    warm = None if kind == "baseline" else _warm_start_checkpoint(name, directory)
    est = _estimator(name, directory / "model", warm)
    hook = _LossHook()
    est.train(_input_fn(head, None), steps=STEPS, hooks=[hook])
    results = est.evaluate(_input_fn(head, 1))
    predictions = list(est.predict(_input_fn(head, 1)))
    return name, est, hook.losses, results, predictions


def test_training_losses_match_tensorflow(trained):
    name, _, losses, results, _ = trained
    np.testing.assert_allclose(losses, TF[f"{name}/loss_per_step"], rtol=2e-5, err_msg=name)
    np.testing.assert_allclose(results["loss"], TF[f"{name}/loss"], rtol=2e-5, err_msg=name)
    assert results["global_step"] == STEPS


def test_metrics_match_tensorflow(trained):
    name, _, _, results, _ = trained
    keys = sorted(k.split("/", 2)[2] for k in TF.files if k.startswith(f"{name}/metric/"))
    assert sorted(set(results) - {"loss", "global_step"}) == keys
    for key in keys:
        expected = TF[f"{name}/metric/{key}"]
        np.testing.assert_allclose(results[key], expected, rtol=2e-5, atol=1e-6, err_msg=key)


def test_predictions_match_tensorflow(trained):
    name, _, _, _, predictions = trained
    head = MODELS[name][1]
    keys = sorted(k.split("/", 2)[2] for k in TF.files if k.startswith(f"{name}/prediction/"))
    for key in keys:
        got = np.stack([p[key] for p in predictions])
        expected = TF[f"{name}/prediction/{key}"]
        if expected.dtype.kind in "iu":
            np.testing.assert_array_equal(got, expected, err_msg=key)
        else:
            np.testing.assert_allclose(got, expected, rtol=2e-5, atol=1e-6, err_msg=key)
    expected_keys = {
        "binary": {"logits", "logistic", "probabilities", "class_ids", "classes"},
        "multi": {"logits", "probabilities", "class_ids", "classes"},
        "regression": {"predictions"},
        "regression2": {"predictions"},
    }[head]
    if head in ("binary", "multi"):
        expected_keys |= {"all_class_ids", "all_classes"}
    assert set(predictions[0]) == expected_keys


def test_variables_are_named_as_tensorflows(trained):
    name, est, _, _, _ = trained
    recorded = {str(v).split(":")[0] for v in TF[f"{name}/variables"]}
    names = set(est.get_variable_names())
    assert recorded <= names
    for var in recorded:
        shape = str(next(v for v in TF[f"{name}/variables"] if str(v).startswith(var + ":")))
        assert list(est.get_variable_value(var).shape) == eval(shape.split(":")[1]), var


@pytest.mark.parametrize("name", CHECKPOINTED)
def test_tensorflows_checkpoints_restore(name, tmp_path):
    """TF's trained variables (saved by the fixture script under TF 1.15's names) restore
    into the engine's estimator, which then predicts what TF predicted."""
    head = MODELS[name][1]
    est = _estimator(name, tmp_path, None)
    prefix = str(CHECKPOINTS / name / "model.ckpt")
    predictions = list(est.predict(_input_fn(head, 1), checkpoint_path=prefix))
    key = "logistic" if head == "binary" else "probabilities"
    got = np.stack([p[key] for p in predictions])
    np.testing.assert_allclose(got, TF[f"{name}/prediction/{key}"], rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("name", CHECKPOINTED)
def test_warm_start_from_tensorflows_checkpoint(name, tmp_path):
    """Warm-started from TF's trained checkpoint (all trainable variables, by TF 1.15's
    names), the first training step sees the loss TF had after its ``STEPS`` steps."""
    head = MODELS[name][1]
    settings = tf.estimator.WarmStartSettings(str(CHECKPOINTS / name / "model.ckpt"))
    est = _estimator(name, tmp_path, settings)
    hook = _LossHook()
    est.train(_input_fn(head, None), steps=1, hooks=[hook])
    np.testing.assert_allclose(hook.losses, [TF[f"{name}/loss"]], rtol=2e-5)
    assert est.get_variable_value("global_step") == 1  # the step is not warm-started
