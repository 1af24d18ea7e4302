"""``hinge_loss``, ``huber_loss``, ``log_loss``, ``cosine_distance`` and
``mean_pairwise_squared_error`` against TensorFlow's recorded values, reductions, loss
collection and gradients (``fixtures/make_image_more_fixtures.py``, ``build_losses``)."""

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures.make_image_more_fixtures import LABELS, PREDS, build_losses
from tests.engine.fixtures.oracle import assert_recorded, load, recorded_keys, run_graph

TF = load("losses_more_tf.npz")


@pytest.fixture(scope="module")
def ours():
    return run_graph(tf, build_losses)


@pytest.mark.parametrize("key", recorded_keys(TF))
def test_losses_match_tensorflow(ours, key):
    assert_recorded(ours[key], TF[key], key, rtol=3e-6, atol=1e-7)


def test_each_loss_lands_in_its_collection():
    with tf.Graph().as_default():
        mine = tf.losses.huber_loss(LABELS, PREDS, loss_collection="mine")
        tf.losses.hinge_loss(LABELS, PREDS, loss_collection=None)
        assert tf.get_collection("mine") == [mine]
        assert tf.losses.get_losses() == []
        pair = tf.losses.mean_pairwise_squared_error(LABELS, PREDS)
        assert tf.losses.get_losses() == [pair]


def test_errors_are_tensorflows():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="You must specify argument `axis`"):
            tf.losses.cosine_distance(LABELS, PREDS)
        with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'dim'"):
            tf.losses.cosine_distance(LABELS, PREDS, axis=1, dim=1)
        with pytest.raises(ValueError, match="Argument `logits` must not be None"):
            tf.losses.hinge_loss(LABELS, None)
        with pytest.raises(ValueError, match="Argument `labels` must not be None"):
            tf.losses.mean_pairwise_squared_error(None, PREDS)
        with pytest.raises(ValueError, match="not compatible|Incompatible|incompatible"):
            tf.losses.log_loss(LABELS, PREDS[:, :2])
        with pytest.raises(ValueError, match="weights can not be broadcast"):
            tf.losses.huber_loss(LABELS, PREDS, weights=np.ones((4, 2), np.float32))
        with pytest.raises(ValueError, match="weights can not be broadcast"):
            tf.losses.mean_pairwise_squared_error(LABELS, PREDS, np.ones((2, 3), np.float32))
