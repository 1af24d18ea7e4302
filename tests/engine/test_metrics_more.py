"""The rest of tf.metrics against TensorFlow (``fixtures/make_metrics_more_fixtures.py``):
the same program's update ops and values over three batches, with and without weights, and
TF1's local-variable names and dtypes."""

import os

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures.make_metrics_more_fixtures import BATCHES, run

TF = np.load(
    os.path.join(os.path.dirname(__file__), "fixtures", "metrics_more_tf.npz"), allow_pickle=False
)
METRICS = sorted({k.split("/")[0] for k in TF.files if "/update" in k})


@pytest.fixture(scope="module")
def engine_results():
    return run(tf)


@pytest.mark.parametrize(
    "key",
    [
        "local_variables",
        "local_variable_dtypes",
        "metric_variable_count",
        "trainable_variable_count",
    ],
)
def test_variables_are_named_and_collected_as_in_tensorflow(engine_results, key):
    assert np.asarray(engine_results[key]).tolist() == TF[key].tolist()


@pytest.mark.parametrize("metric", METRICS)
def test_metric_matches_tensorflow(engine_results, metric):
    keys = [f"{metric}/initial"]
    keys += [f"{metric}/{part}{i}" for i in range(len(BATCHES)) for part in ("update", "value")]
    for key in keys:
        want, got = TF[key], np.asarray(engine_results[key])
        assert got.shape == want.shape, key
        assert got.dtype == want.dtype, key
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7, err_msg=key)


LABELS, SCORES = [1, 0, 1], [0.2, 0.9, 0.6]
CONSTRUCTORS = {
    "mean_relative_error": lambda m, **c: m.mean_relative_error(SCORES, SCORES, SCORES, **c),
    "mean_cosine_distance": lambda m, **c: m.mean_cosine_distance([[1.0]], [[1.0]], 1, **c),
    "mean_tensor": lambda m, **c: m.mean_tensor(SCORES, **c),
    "false_negatives": lambda m, **c: m.false_negatives(LABELS, LABELS, **c),
    "tn_at_thresholds": lambda m, **c: m.true_negatives_at_thresholds(LABELS, SCORES, [0.5], **c),
    "recall_at_thresholds": lambda m, **c: m.recall_at_thresholds(LABELS, SCORES, [0.5], **c),
    "spec_at_sens": lambda m, **c: m.specificity_at_sensitivity(LABELS, SCORES, 0.5, **c),
    "mean_iou": lambda m, **c: m.mean_iou(tf.constant(LABELS), tf.constant(LABELS), 2, **c),
    "recall_at_top_k": lambda m, **c: m.recall_at_top_k([[1], [0]], [[0, 1], [1, 2]], **c),
    "average_precision_at_k": lambda m, **c: m.average_precision_at_k([1], [[0.1, 0.9]], 1, **c),
}


@pytest.mark.parametrize("which", sorted(CONSTRUCTORS))
def test_metric_and_update_join_the_given_collections(which):
    value, update = CONSTRUCTORS[which](
        tf.metrics, metrics_collections=["m"], updates_collections=["u"]
    )
    assert tf.get_collection("m") == [value] and tf.get_collection("u") == [update]
    assert tf.local_variables() and not tf.global_variables()


def test_build_time_errors_name_the_problem():
    m = tf.metrics
    with pytest.raises(ValueError, match="known shape"):
        m.mean_tensor(tf.placeholder(tf.float32, [None, 3]))
    with pytest.raises(ValueError, match=r"`specificity` must be in the range \[0, 1\]"):
        m.sensitivity_at_specificity(LABELS, SCORES, 1.5)
    with pytest.raises(ValueError, match=r"`sensitivity` must be in the range \[0, 1\]"):
        m.specificity_at_sensitivity(LABELS, SCORES, -0.1)
    with pytest.raises(ValueError, match="num_thresholds must be > 1"):
        m.sensitivity_at_specificity(LABELS, SCORES, 0.5, num_thresholds=1)
    with pytest.raises(ValueError, match="Invalid k=0"):
        m.average_precision_at_k([[1]], [[0.1, 0.9]], 0)
    with pytest.raises(ValueError, match="Unexpected labels shape"):
        m.precision_at_k(tf.zeros([2, 2, 2], tf.int64), tf.zeros([2, 5]), 1)
    with pytest.raises(ValueError, match="incompatible"):
        m.mean_absolute_error(tf.zeros([3]), tf.zeros([4]))
    with pytest.raises(ValueError, match="can not be broadcast"):
        m.mean_squared_error(tf.zeros([4, 2]), tf.zeros([4, 2]), tf.ones([4, 3]))
    with pytest.raises(ValueError, match="rank 0 or 2"):
        m.true_positives(tf.zeros([4, 2]), tf.zeros([4, 2]), tf.ones([4, 2, 1, 1]))


@pytest.mark.parametrize(
    "build, labels, predictions, message",
    [
        (lambda m, lab, pred: m.precision_at_thresholds(lab, pred, [0.5]), [1, 0], [0.1, 1.5],
         r"predictions must be in \[0, 1\]"),
        (lambda m, lab, pred: m.mean_iou(lab, pred, 2), [0, 3], [0, 1], "`labels` out of bound"),
        (lambda m, lab, pred: m.mean_iou(lab, pred, 2), [0, 1], [-1, 1],
         "`predictions` contains negative values"),
        (lambda m, lab, pred: m.mean_per_class_accuracy(lab, pred, 2), [0, 5], [0, 1],
         "out of range"),
    ],
)  # fmt: skip
def test_run_time_checks_raise_invalid_argument(build, labels, predictions, message):
    lab = tf.placeholder(tf.int64, [None])
    pred = tf.placeholder(tf.as_dtype(np.asarray(predictions).dtype), [None])
    _, update = build(tf.metrics, lab, pred)
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            sess.run(update, {lab: labels, pred: predictions})
