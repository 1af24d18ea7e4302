"""embedding_lookup (one table, mod and div shards, max_norm), nce_loss and
sampled_softmax_loss (values and gradients) and the candidate samplers, against TensorFlow
(``fixtures/make_embedding_fixtures.py``), plus the samplers' own statistics."""

import os

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures import make_embedding_fixtures as fx

TF = np.load(
    os.path.join(os.path.dirname(__file__), "fixtures", "embedding_tf.npz"), allow_pickle=False
)


def _close(got, key, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(got, TF[key], rtol=rtol, atol=atol, err_msg=key)


def test_embedding_lookup_matches_tensorflow():
    mod = tf.nn.embedding_lookup([tf.constant(s) for s in fx.SHARDS_MOD], fx.IDS)
    div = tf.nn.embedding_lookup(
        [tf.constant(s) for s in fx.SHARDS_DIV], fx.IDS, partition_strategy="div"
    )
    clipped = tf.nn.embedding_lookup(tf.constant(fx.TABLE), fx.IDS, max_norm=1.5)
    assert mod.shape.as_list() == [2, 3, 4]
    with tf.Session() as sess:
        m, d, c = sess.run([mod, div, clipped])
    _close(m, "mod", 0, 0)
    _close(d, "div", 0, 0)
    _close(c, "max_norm")


@pytest.mark.parametrize("loss", ["nce", "sampled_softmax"])
def test_sampled_losses_match_tensorflow(loss):
    fn = tf.nn.nce_loss if loss == "nce" else tf.nn.sampled_softmax_loss
    sv = (tf.constant(fx.SAMPLED), tf.constant(fx.TRUE_EXPECTED), tf.constant(fx.SAMPLED_EXPECTED))
    x = tf.constant(fx.INPUTS)
    shards = [tf.constant(s) for s in fx.SHARDS_MOD]
    b = tf.constant(fx.BIASES)
    value = fn(shards, b, fx.LABELS, x, 5, 11, num_true=2, sampled_values=sv)
    grads = tf.gradients(tf.reduce_sum(value), [x, shards[1], b])
    with tf.Session() as sess:
        v, gx, gw, gb = sess.run([value, *grads])
    _close(v, loss)
    _close(gx, f"{loss}_grad_x")
    _close(gw, f"{loss}_grad_w1")
    _close(gb, f"{loss}_grad_b")


@pytest.mark.parametrize("kind", ["log_uniform", "uniform"])
def test_sampler_expected_counts_match_tensorflow(kind):
    fn = getattr(tf.nn, f"{kind}_candidate_sampler")
    sampled, true_expected, sampled_expected = fn(fx.LABELS, 2, 5, False, 11, seed=1)
    assert sampled.shape.as_list() == [5] and true_expected.shape.as_list() == [3, 2]
    with tf.Session() as sess:
        s, te = sess.run([sampled, true_expected])
    _close(te, f"{kind}_true_expected")
    assert s.dtype == np.int64 and ((s >= 0) & (s < 11)).all()


def test_unique_sampler_draws_distinct_classes_with_zipf_frequencies():
    sampled, _, expected = tf.nn.log_uniform_candidate_sampler(
        tf.zeros([1, 1], tf.int64), 1, 20, True, 1000, seed=3
    )
    counts = np.zeros(1000)
    with tf.Session() as sess:
        for _ in range(200):
            s, e = sess.run([sampled, expected])
            assert len(set(s.tolist())) == 20
            assert (e > 0).all()
            counts[s] += 1
    # Zipf: class 0 is drawn far more often than class 500.
    assert counts[0] > 20 * max(counts[500:510].mean(), 0.05)


def test_embedding_errors():
    with pytest.raises(ValueError, match="partition strategy"):
        tf.nn.embedding_lookup([tf.zeros([2, 2])] * 2, [0], partition_strategy="hash")
    with pytest.raises(TypeError, match="int32 or int64"):
        tf.nn.embedding_lookup(tf.zeros([2, 2]), tf.constant([0.0]))
    with pytest.raises(ValueError, match="positive"):
        tf.nn.uniform_candidate_sampler(tf.zeros([1, 1], tf.int64), 1, 0, True, 5)


def round_trip_builder():
    """The seeded samplers for test_graph_def's round-trip table."""
    labels = tf.constant(fx.LABELS)
    a = tf.nn.log_uniform_candidate_sampler(labels, 2, 4, True, 11, seed=5)
    b = tf.nn.uniform_candidate_sampler(labels, 2, 4, False, 11, seed=6)
    return list(a) + list(b), {}, []
