"""``tf.estimator`` (TF 1.15's semantics): training, resuming, evaluation, prediction, export
and ``numpy_input_fn``.

TensorFlow 2.16+ has no ``tf.estimator``, so there is no TF recording here: the oracles are
numpy (gradient descent replayed from the step-0 checkpoint, least squares, metrics recomputed
from the restored variables) and TF 1.15's documented batching of ``numpy_input_fn``
(``feeding_functions._get_integer_indices_for_next_batch``), written out as expectations.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import engine as tf
from engine.estimator_inputs import row_batches

RNG = np.random.RandomState(0)
X_REG = RNG.randn(64, 3).astype(np.float32)
W_REG = np.array([[1.5], [-2.0], [0.5]], np.float32)
Y_REG = (X_REG @ W_REG + 0.25 + 0.01 * RNG.randn(64, 1)).astype(np.float32)


def linear_model_fn(features, labels, mode, params):
    pred = tf.layers.dense(features["x"], 1, name="dense")
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"y": pred, "x2": features["x"] * 2})
    loss = tf.reduce_mean(tf.square(pred - labels))
    opt = tf.train.GradientDescentOptimizer(params["lr"])
    train_op = opt.minimize(loss, global_step=tf.train.get_global_step())
    mae = tf.metrics.mean(tf.abs(pred - labels))
    return tf.estimator.EstimatorSpec(
        mode, predictions={"y": pred}, loss=loss, train_op=train_op, eval_metric_ops={"mae": mae}
    )


def classifier_model_fn(features, labels, mode):
    logits = tf.layers.dense(features, 3, name="logits")
    classes = tf.argmax(logits, axis=1)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions=classes)
    loss = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(logits=logits, labels=labels)
    )
    train_op = tf.train.AdamOptimizer(0.1).minimize(loss, global_step=tf.train.get_global_step())
    acc = tf.metrics.accuracy(labels=labels, predictions=classes)
    return tf.estimator.EstimatorSpec(
        mode, predictions=classes, loss=loss, train_op=train_op, eval_metric_ops={"acc": acc}
    )


def full_batch_fn(x=X_REG, y=Y_REG):
    return tf.estimator.inputs.numpy_input_fn(
        {"x": x}, y, batch_size=len(x), num_epochs=None, shuffle=False
    )


def linear_estimator(tmp_path, lr=0.1, **config):
    config.setdefault("tf_random_seed", 7)
    return tf.estimator.Estimator(
        linear_model_fn,
        model_dir=str(tmp_path),
        params={"lr": lr},
        config=tf.estimator.RunConfig(**config),
    )


def gd_replay(w, b, steps, lr):
    """Full-batch gradient descent on mean squared error, in numpy."""
    w, b = w.astype(np.float64), b.astype(np.float64)
    for _ in range(steps):
        err = X_REG @ w + b - Y_REG
        w = w - lr * 2.0 * X_REG.T @ err / len(X_REG)
        b = b - lr * 2.0 * err.mean(axis=0)
    return w, b


def test_linear_regression_converges_and_replays_gradient_descent(tmp_path):
    est = linear_estimator(tmp_path, keep_checkpoint_max=100)
    assert est.train(full_batch_fn(), steps=150) is est
    first = os.path.join(str(tmp_path), "model.ckpt-0")
    w0 = tf.train.load_variable(first, "dense/kernel")
    b0 = tf.train.load_variable(first, "dense/bias")
    w, b = est.get_variable_value("dense/kernel"), est.get_variable_value("dense/bias")
    want_w, want_b = gd_replay(w0, b0, 150, 0.1)
    np.testing.assert_allclose(w, want_w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(b, want_b, rtol=1e-4, atol=1e-5)
    design = np.hstack([X_REG, np.ones((len(X_REG), 1), np.float32)])
    lstsq = np.linalg.lstsq(design, Y_REG, rcond=None)[0]
    np.testing.assert_allclose(np.vstack([w, b[None]]), lstsq, atol=1e-3)
    assert est.get_variable_value("global_step") == 150
    assert "dense/kernel" in est.get_variable_names()


def test_second_train_resumes_from_checkpoint(tmp_path):
    split = linear_estimator(tmp_path / "split", lr=0.05)
    split.train(full_batch_fn(), steps=10)
    assert split.latest_checkpoint().endswith("model.ckpt-10")
    split.train(full_batch_fn(), steps=5)
    assert split.get_variable_value("global_step") == 15
    split.train(full_batch_fn(), max_steps=15)  # already there: skipped
    assert split.latest_checkpoint().endswith("model.ckpt-15")
    split.train(full_batch_fn(), max_steps=18)
    assert split.get_variable_value("global_step") == 18
    whole = linear_estimator(tmp_path / "whole", lr=0.05)
    whole.train(full_batch_fn(), steps=18)
    for name in ("dense/kernel", "dense/bias"):
        np.testing.assert_allclose(
            split.get_variable_value(name), whole.get_variable_value(name), rtol=1e-5, atol=1e-6
        )


def blobs(n_per_class=50, seed=1):
    rng = np.random.RandomState(seed)
    centers = np.array([[2.0, 0.0], [-2.0, 1.0], [0.0, -2.5]], np.float32)
    labels = np.repeat(np.arange(3), n_per_class).astype(np.int32)
    x = (centers[labels] + 0.6 * rng.randn(len(labels), 2)).astype(np.float32)
    return x, labels


def test_classifier_converges_and_evaluate_matches_restored_variables(tmp_path):
    x, y = blobs()
    est = tf.estimator.Estimator(
        classifier_model_fn, str(tmp_path), tf.estimator.RunConfig(tf_random_seed=3)
    )
    train_fn = tf.estimator.inputs.numpy_input_fn(
        x, y, batch_size=32, num_epochs=None, shuffle=True
    )
    est.train(train_fn, steps=120)
    eval_fn = tf.estimator.inputs.numpy_input_fn(x, y, batch_size=64, shuffle=False)
    result = est.evaluate(eval_fn)
    assert set(result) == {"acc", "loss", "global_step"}
    assert result["global_step"] == 120
    w = est.get_variable_value("logits/kernel")
    b = est.get_variable_value("logits/bias")
    logits = x.astype(np.float64) @ w + b
    assert np.mean(np.argmax(logits, 1) == y) > 0.9  # the blobs are separable: it learned
    np.testing.assert_allclose(result["acc"], np.mean(np.argmax(logits, 1) == y), rtol=1e-6)
    top = logits.max(1, keepdims=True)
    logp = logits - top - np.log(np.exp(logits - top).sum(1, keepdims=True))
    ce = -logp[np.arange(len(y)), y]
    # tf.metrics.mean of the per-batch mean loss: batches 64, 64, 22, weighted equally.
    batch_means = [ce[0:64].mean(), ce[64:128].mean(), ce[128:].mean()]
    np.testing.assert_allclose(result["loss"], np.mean(batch_means), rtol=1e-4)
    # steps=1 evaluates the first batch only.
    one = est.evaluate(eval_fn, steps=1, name="first")
    np.testing.assert_allclose(one["loss"], batch_means[0], rtol=1e-4)
    assert os.path.isdir(est.eval_dir("first"))


def test_predict_yields_per_example_dicts(tmp_path):
    est = linear_estimator(tmp_path)
    est.train(full_batch_fn(), steps=3)
    w, b = est.get_variable_value("dense/kernel"), est.get_variable_value("dense/bias")
    fn = tf.estimator.inputs.numpy_input_fn({"x": X_REG[:5]}, batch_size=2, shuffle=False)
    preds = list(est.predict(fn))
    assert len(preds) == 5 and all(set(p) == {"y", "x2"} for p in preds)
    assert preds[0]["y"].shape == (1,)
    np.testing.assert_allclose(np.stack([p["y"] for p in preds]), X_REG[:5] @ w + b, rtol=1e-5)
    only_y = list(est.predict(fn, predict_keys=["y"]))
    assert all(set(p) == {"y"} for p in only_y)
    batches = list(est.predict(fn, yield_single_examples=False))
    assert [len(bt["x2"]) for bt in batches] == [2, 2, 1]
    with pytest.raises(ValueError, match="Expected to run at least one output"):
        next(est.predict(fn, predict_keys=["nope"]))


def test_predict_of_single_tensor_predictions_yields_arrays(tmp_path):
    x, y = blobs(10)
    est = tf.estimator.Estimator(classifier_model_fn, str(tmp_path))
    est.train(tf.estimator.inputs.numpy_input_fn(x, y, batch_size=10, shuffle=True), steps=2)
    classes = list(est.predict(tf.estimator.inputs.numpy_input_fn(x, batch_size=7, shuffle=False)))
    w = est.get_variable_value("logits/kernel")
    b = est.get_variable_value("logits/bias")
    np.testing.assert_array_equal(classes, np.argmax(x @ w + b, axis=1))


def test_export_saved_model_gives_the_predictions(tmp_path):
    est = linear_estimator(tmp_path / "model")
    est.train(full_batch_fn(), steps=5)
    receiver_fn = tf.estimator.export.build_raw_serving_input_receiver_fn(
        {"x": tf.placeholder(tf.float32, [None, 3], name="x_in")}
    )
    path = est.export_saved_model(str(tmp_path / "export"), receiver_fn)
    assert isinstance(path, bytes)  # as TF 1.x
    path = path.decode()
    assert os.path.dirname(path) == str(tmp_path / "export")
    assert os.path.basename(path).isdigit()
    fn = tf.estimator.inputs.numpy_input_fn({"x": X_REG[:6]}, batch_size=6, shuffle=False)
    expected = np.stack([p["y"] for p in est.predict(fn)])
    with tf.Session(graph=tf.Graph()) as sess:
        meta = tf.saved_model.load(sess, [tf.saved_model.SERVING], path)
        sig = meta.signature_def["serving_default"]
        assert sig.method_name == tf.saved_model.PREDICT_METHOD_NAME
        assert set(sig.inputs) == {"x"} and set(sig.outputs) == {"y", "x2"}
        assert sig.inputs["x"].name == "x_in:0"
        got = sess.run(sig.outputs["y"].name, {sig.inputs["x"].name: X_REG[:6]})
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_export_single_prediction_is_named_output_and_alias_works(tmp_path):
    x, y = blobs(5)
    est = tf.estimator.Estimator(classifier_model_fn, str(tmp_path / "m"))
    with pytest.raises(ValueError, match="Couldn't find trained model"):
        est.export_savedmodel(str(tmp_path / "e"), lambda: None)
    est.train(tf.estimator.inputs.numpy_input_fn(x, y, batch_size=5, shuffle=False), steps=1)

    def receiver():
        t = tf.placeholder(tf.float32, [None, 2], name="pts")
        return tf.estimator.export.TensorServingInputReceiver(t, {"points": t})

    path = est.export_savedmodel(str(tmp_path / "e"), receiver).decode()
    with tf.Session(graph=tf.Graph()) as sess:
        sig = tf.saved_model.load(sess, ["serve"], path).signature_def["serving_default"]
        assert set(sig.outputs) == {"output"} and set(sig.inputs) == {"points"}
        got = sess.run(sig.outputs["output"].name, {sig.inputs["points"].name: x})
    w, b = est.get_variable_value("logits/kernel"), est.get_variable_value("logits/bias")
    np.testing.assert_array_equal(got, np.argmax(x @ w + b, axis=1))


def test_raw_receiver_of_one_tensor_wraps_it_as_tf_does():
    with tf.Graph().as_default():
        t = tf.placeholder(tf.float32, [None, 2], name="pts")
    with tf.Graph().as_default():
        fn = tf.estimator.export.build_raw_serving_input_receiver_fn(t, default_batch_size=4)
        receiver = fn()
        assert set(receiver.features) == {"feature"} and set(receiver.receiver_tensors) == {"input"}
        ph = receiver.features["feature"]
        assert ph.op.name == "pts" and ph.shape.as_list() == [4, 2]
        assert ph.graph is tf.get_default_graph()
        with pytest.raises(ValueError, match="features must be defined"):
            tf.estimator.export.ServingInputReceiver(None, ph)
        with pytest.raises(ValueError, match="must be a Tensor or SparseTensor"):
            tf.estimator.export.ServingInputReceiver({"a": 1.0}, ph)


# -- numpy_input_fn: TF 1.15's batches --------------------------------------------------------
# TF 1.15 (estimator/inputs/queues/feeding_functions.py) feeds rows 0, 1, ... epoch after epoch
# into a FIFO queue and dequeues `batch_size` at a time (dequeue_up_to with num_epochs, so the
# last batch is short; dequeue_many without). For 10 rows and batch_size 4:
TF115_BATCHES = {
    1: [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]],
    2: [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 1], [2, 3, 4, 5], [6, 7, 8, 9]],
}
# ... and num_epochs=None wraps forever in full batches: [0..3], [4..7], [8, 9, 0, 1], ...
TF115_FOREVER_PREFIX = [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 1], [2, 3, 4, 5], [6, 7, 8, 9]]


def identity_model_fn(features, mode):
    return tf.estimator.EstimatorSpec(mode, predictions=features)


def batches_of(input_fn, limit=None):
    est = tf.estimator.Estimator(identity_model_fn)
    out = []
    for batch in est.predict(input_fn, yield_single_examples=False):
        out.append(batch)
        if limit is not None and len(out) == limit:
            break
    return out


@pytest.mark.parametrize("num_epochs", [1, 2])
def test_numpy_input_fn_batches_as_tf(num_epochs):
    x = np.arange(10, dtype=np.float32) * 10
    fn = tf.estimator.inputs.numpy_input_fn(
        {"a": x, "b": x.astype(np.int64)}, batch_size=4, num_epochs=num_epochs, shuffle=False
    )
    got = batches_of(fn)
    assert [list(bt["b"] // 10) for bt in got] == TF115_BATCHES[num_epochs]
    assert all(bt["a"].dtype == np.float32 and bt["b"].dtype == np.int64 for bt in got)


def test_numpy_input_fn_forever_has_static_full_batches():
    x = np.arange(10, dtype=np.int64)
    got = batches_of(
        tf.estimator.inputs.numpy_input_fn(x, batch_size=4, num_epochs=None, shuffle=False), 5
    )
    assert [list(bt) for bt in got] == TF115_FOREVER_PREFIX
    with tf.Graph().as_default():
        features = tf.estimator.inputs.numpy_input_fn(
            x, batch_size=4, num_epochs=None, shuffle=False
        )()
        assert features.shape.as_list() == [4]
        once = tf.estimator.inputs.numpy_input_fn(x, batch_size=4, shuffle=False)()
        assert once.shape.as_list() == [None]


def test_numpy_input_fn_shuffles_each_epoch_reproducibly():
    rows = [np.concatenate(list(row_batches(10, 3, 2, True, seed=5)))]
    rows.append(np.concatenate(list(row_batches(10, 3, 2, True, seed=5))))
    np.testing.assert_array_equal(rows[0], rows[1])  # seeded: reproducible
    assert sorted(rows[0][:10]) == list(range(10)) and sorted(rows[0][10:]) == list(range(10))
    assert list(rows[0][:10]) != list(range(10))
    sizes = [len(b) for b in row_batches(10, 3, 2, True, seed=5)]
    assert sizes == [3, 3, 3, 3, 3, 3, 2]
    # Two threads: num_epochs applies per thread (TF's warning), batches interleave.
    assert sum(len(b) for b in row_batches(10, 4, 1, False, num_threads=2)) == 20


def test_numpy_input_fn_features_and_labels_structure():
    x = {"b": np.zeros((6, 2), np.float32), "a": np.ones(6, np.int32)}
    with tf.Graph().as_default():
        features, labels = tf.estimator.inputs.numpy_input_fn(x, np.arange(6), shuffle=False)()
        assert sorted(features) == ["a", "b"] and labels.dtype == tf.int64
        assert features["b"].shape.as_list() == [None, 2]
        features, labels = tf.estimator.inputs.numpy_input_fn(
            x, {"y1": np.arange(6), "y2": np.arange(6.0)}, shuffle=False
        )()
        assert sorted(labels) == ["y1", "y2"] and labels["y2"].dtype == tf.float64
        only = tf.estimator.inputs.numpy_input_fn(np.zeros((6, 3)), shuffle=True)()
        assert isinstance(only, tf.Tensor) and only.dtype == tf.float64


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        ({"x": np.zeros(3)}, ValueError, "shuffle must be provided and explicitly set"),
        ({"x": np.zeros(3), "shuffle": False, "batch_size": 0}, ValueError, "batch_size"),
        ({"x": np.zeros(3), "shuffle": False, "num_epochs": 0}, ValueError, "num_epochs"),
    ],
)
def test_numpy_input_fn_argument_errors(kwargs, err, match):
    with pytest.raises(err, match=match):
        tf.estimator.inputs.numpy_input_fn(**kwargs)


@pytest.mark.parametrize(
    "x, y, err, match",
    [
        ([1.0, 2.0], None, TypeError, "x must be a dict or array; got list"),
        ({}, None, ValueError, "x cannot be an empty dict"),
        (np.zeros(0), None, ValueError, "x cannot be an empty array"),
        ({"a": np.zeros(3)}, np.zeros(4), ValueError, "Length of tensors in x and y"),
        ({"a": np.zeros(3)}, {"a": np.zeros(3)}, ValueError, "duplicate keys"),
        ({"a": np.zeros(3)}, {}, ValueError, "y cannot be empty dict"),
    ],
)
def test_numpy_input_fn_data_errors(x, y, err, match):
    fn = tf.estimator.inputs.numpy_input_fn(x, y, shuffle=False)
    with tf.Graph().as_default(), pytest.raises(err, match=match):
        fn()


def test_pandas_input_fn_without_pandas_says_so():
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(TypeError, match="without pandas installed"):
            tf.estimator.inputs.pandas_input_fn(None, shuffle=False)
    else:
        pytest.skip("pandas is installed")


def test_train_stops_when_the_input_ends_and_accepts_datasets(tmp_path):
    est = linear_estimator(tmp_path / "np", lr=0.01)
    est.train(tf.estimator.inputs.numpy_input_fn({"x": X_REG}, Y_REG, batch_size=30, shuffle=False))
    assert est.get_variable_value("global_step") == 3  # 30 + 30 + 4 rows

    def dataset_fn():
        ds = tf.data.Dataset.from_tensor_slices(({"x": X_REG}, Y_REG))
        return ds.batch(16)

    est = linear_estimator(tmp_path / "ds", lr=0.01)
    est.train(dataset_fn)
    assert est.get_variable_value("global_step") == 4
    result = est.evaluate(dataset_fn)
    w, b = est.get_variable_value("dense/kernel"), est.get_variable_value("dense/bias")
    sq = ((X_REG @ w + b - Y_REG) ** 2).reshape(4, 16).mean(axis=1)
    np.testing.assert_allclose(result["loss"], sq.mean(), rtol=1e-5)
    assert result["global_step"] == 4


def test_saving_listeners_and_keep_checkpoint_max(tmp_path):
    class Listener(tf.train.CheckpointSaverListener):
        def __init__(self):
            self.saved = []

        def after_save(self, session, global_step_value):  # noqa: ARG002 - hook API
            self.saved.append(int(global_step_value))

    listener = Listener()
    est = linear_estimator(tmp_path, save_checkpoints_steps=5, keep_checkpoint_max=2)
    est.train(full_batch_fn(), steps=12, saving_listeners=[listener])
    assert listener.saved == [0, 5, 10, 12]
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == [
        "model.ckpt-10",
        "model.ckpt-12",
    ]
    no_saver = linear_estimator(
        tmp_path / "none", save_checkpoints_steps=None, save_checkpoints_secs=None
    )
    with pytest.raises(ValueError, match="There should be a CheckpointSaverHook"):
        no_saver.train(full_batch_fn(), steps=1, saving_listeners=[listener])


def test_warm_start_from_another_model_dir(tmp_path):
    donor = linear_estimator(tmp_path / "donor")
    donor.train(full_batch_fn(), steps=20)
    est = tf.estimator.Estimator(
        linear_model_fn,
        model_dir=str(tmp_path / "warm"),
        params={"lr": 0.0},
        warm_start_from=str(tmp_path / "donor"),
    )
    est.train(full_batch_fn(), steps=1)
    for name in ("dense/kernel", "dense/bias"):
        np.testing.assert_array_equal(est.get_variable_value(name), donor.get_variable_value(name))
    assert est.get_variable_value("global_step") == 1  # only trainable variables warm-start


def test_evaluate_without_checkpoint_initializes(tmp_path):
    est = linear_estimator(tmp_path)
    result = est.evaluate(full_batch_fn(), steps=1)
    assert result["global_step"] == 0 and np.isfinite(result["loss"])


# -- errors ----------------------------------------------------------------------------------
def spec_of(**kwargs):
    def model_fn(features, labels, mode):
        pred = tf.layers.dense(features["x"], 1)
        loss = tf.reduce_mean(tf.square(pred - labels))
        step = tf.train.get_global_step()
        parts = {
            "loss": loss,
            "train_op": tf.assign_add(step, 1),
            "predictions": pred,
        }
        for key, value in kwargs.items():
            parts[key] = value(pred, loss) if callable(value) else value
        return tf.estimator.EstimatorSpec(mode, **{k: v for k, v in parts.items() if v != "-"})

    return model_fn


@pytest.mark.parametrize(
    "overrides, err, match",
    [
        ({"loss": "-"}, ValueError, "Missing loss"),
        ({"train_op": "-"}, ValueError, "Missing train_op"),
        ({"loss": lambda p, loss: p}, ValueError, "Loss must be scalar"),
        ({"loss": 1.0}, TypeError, "loss must be Tensor"),
        ({"train_op": 3}, TypeError, "train_op must be Operation or Tensor"),
        ({"eval_metric_ops": lambda p, loss: {"m": loss}}, TypeError, "metric_value, update_op"),
        ({"eval_metric_ops": [1]}, TypeError, "eval_metric_ops must be a dict"),
        ({"training_hooks": [object()]}, TypeError, "must be SessionRunHook"),
        ({"scaffold": object()}, TypeError, "scaffold must be tf.train.Scaffold"),
    ],
)
def test_bad_estimator_specs_raise_typed_errors(tmp_path, overrides, err, match):
    est = tf.estimator.Estimator(spec_of(**overrides), str(tmp_path))
    with pytest.raises(err, match=match):
        est.train(full_batch_fn(), steps=1)


def test_model_fn_and_call_errors(tmp_path):
    def not_a_spec(features, labels, mode):  # noqa: ARG001 - model_fn signature
        return {"loss": features}

    est = tf.estimator.Estimator(not_a_spec, str(tmp_path / "a"))
    with pytest.raises(ValueError, match="model_fn should return an EstimatorSpec"):
        est.train(full_batch_fn(), steps=1)
    with pytest.raises(ValueError, match="model_fn does not take labels"):
        tf.estimator.Estimator(identity_model_fn, str(tmp_path / "b")).train(full_batch_fn())
    with pytest.raises(ValueError, match="must include features argument"):
        tf.estimator.Estimator(lambda labels, mode: None)
    with pytest.raises(ValueError, match="does not include params argument"):
        tf.estimator.Estimator(identity_model_fn, params={"a": 1})
    with pytest.raises(ValueError, match="not expected args: \\['extra'\\]"):
        tf.estimator.Estimator(lambda features, extra: None)
    with pytest.raises(ValueError, match="model_fn must be provided"):
        tf.estimator.Estimator(None)
    with pytest.raises(ValueError, match="config must be an instance of `RunConfig`"):
        tf.estimator.Estimator(identity_model_fn, config={"model_dir": "x"})
    with pytest.raises(ValueError, match="set both in constructor and `RunConfig`"):
        tf.estimator.Estimator(identity_model_fn, "a", tf.estimator.RunConfig(model_dir="b"))
    est = linear_estimator(tmp_path / "c")
    with pytest.raises(ValueError, match="Can not provide both steps and max_steps"):
        est.train(full_batch_fn(), steps=1, max_steps=2)
    with pytest.raises(ValueError, match="Must specify steps > 0"):
        est.train(full_batch_fn(), steps=0)
    with pytest.raises(TypeError, match="Hooks must be a SessionRunHook"):
        est.train(full_batch_fn(), steps=1, hooks=[1])
    with pytest.raises(ValueError, match="Must specify steps > 0"):
        est.evaluate(full_batch_fn(), steps=0)
    with pytest.raises(ValueError, match="len 2 tuple"):
        est.train(lambda: (1, 2, 3), steps=1)


def test_metric_named_loss_is_refused(tmp_path):
    est = tf.estimator.Estimator(
        spec_of(eval_metric_ops=lambda p, loss: {"loss": tf.metrics.mean(loss)}), str(tmp_path)
    )
    est.train(full_batch_fn(), steps=1)
    with pytest.raises(ValueError, match='Metric with name "loss" is not allowed'):
        est.evaluate(full_batch_fn(), steps=1)


def test_run_config_defaults_and_checks():
    cfg = tf.estimator.RunConfig()
    assert (cfg.save_checkpoints_secs, cfg.save_checkpoints_steps) == (600, None)
    assert (cfg.save_summary_steps, cfg.keep_checkpoint_max, cfg.log_step_count_steps) == (
        100,
        5,
        100,
    )
    steps = tf.estimator.RunConfig(save_checkpoints_steps=10)
    assert (steps.save_checkpoints_secs, steps.save_checkpoints_steps) == (None, 10)
    assert steps.replace(save_checkpoints_secs=30).save_checkpoints_steps is None
    with pytest.raises(ValueError, match="cannot be both set"):
        tf.estimator.RunConfig(save_checkpoints_steps=1, save_checkpoints_secs=1)
    with pytest.raises(ValueError, match="is not allowed to be replaced"):
        cfg.replace(is_chief=False)
    with pytest.raises(NotImplementedError, match="distribution strategies"):
        tf.estimator.RunConfig(train_distribute=object())
    assert tf.estimator.ModeKeys.PREDICT == "infer"


def test_train_and_evaluate_locally(tmp_path):
    est = linear_estimator(tmp_path)
    result, exports = tf.estimator.train_and_evaluate(
        est,
        tf.estimator.TrainSpec(full_batch_fn(), max_steps=7),
        tf.estimator.EvalSpec(full_batch_fn(), steps=2),
    )
    assert result["global_step"] == 7 and exports == []
