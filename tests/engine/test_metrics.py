"""tf.metrics against TensorFlow (``fixtures/make_metrics_fixtures.py``): the same program's
update ops and values over three batches, and TF1's local-variable names."""

import os

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures.make_metrics_fixtures import BATCHES, METRICS, build

TF = np.load(
    os.path.join(os.path.dirname(__file__), "fixtures", "metrics_tf.npz"), allow_pickle=False
)


def test_streaming_metrics_match_tensorflow():
    (labels, scores, weights), m = build(tf)
    assert sorted(v.op.name for v in tf.local_variables()) == TF["local_variables"].tolist()
    assert not tf.trainable_variables()
    assert len(tf.get_collection(tf.GraphKeys.METRIC_VARIABLES)) == len(tf.local_variables())
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        for i, b in enumerate(BATCHES):
            feed = {labels: b["labels"], scores: b["scores"], weights: b["weights"]}
            ups = sess.run({k: v[1] for k, v in m.items()}, feed)
            vals = sess.run({k: v[0] for k, v in m.items()})
            for k in METRICS:
                np.testing.assert_allclose(ups[k], TF[f"{k}/update{i}"], rtol=1e-5, err_msg=k)
                np.testing.assert_allclose(vals[k], TF[f"{k}/value{i}"], rtol=1e-5, err_msg=k)


def test_metrics_before_any_update_are_zero_and_collections_fill():
    value, update = tf.metrics.precision(
        [1, 0], [0, 0], metrics_collections=["m"], updates_collections=["u"]
    )
    assert tf.get_collection("m") == [value] and tf.get_collection("u") == [update]
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert sess.run(value) == 0.0
        assert sess.run(update) == 0.0  # no positive predictions: 0, not NaN


def test_metric_errors():
    with pytest.raises(ValueError, match="incompatible"):
        tf.metrics.accuracy(tf.zeros([3]), tf.zeros([4]))
    with pytest.raises(ValueError, match="ROC or PR"):
        tf.metrics.auc([1], [0.5], curve="XY")
    with pytest.raises(ValueError, match="num_thresholds"):
        tf.metrics.auc([1], [0.5], num_thresholds=1)
