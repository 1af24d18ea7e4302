"""tf.distributions against TF 2.21's tf.compat.v1.distributions (the same program,
tests/fixtures/tensorflow/make_flow_fixtures.py ``distributions_program``), samples by their
statistics, gradients through reparameterized samples and log-probabilities, and errors."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

import engine as tf

FIXTURES = pathlib.Path(__file__).parents[1] / "fixtures" / "tensorflow"
RECORDED = np.load(FIXTURES / "distributions.npz")
sys.path.insert(0, str(FIXTURES))
from distributions_program import distributions_program  # noqa: E402

sys.path.remove(str(FIXTURES))


@pytest.fixture(scope="module")
def ours():
    with tf.Graph().as_default(), tf.Session() as sess:
        return sess.run(distributions_program(tf, tf.distributions))


@pytest.mark.parametrize("key", sorted(RECORDED.files))
def test_distribution_methods_match_tensorflow(ours, key):
    got, want = np.asarray(ours[key]), RECORDED[key]
    assert got.shape == want.shape and got.dtype == want.dtype, key
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_samples_have_the_distributions_statistics():
    d = tf.distributions
    with tf.Graph().as_default(), tf.Session() as sess:
        normal = d.Normal(loc=[0.0, 3.0], scale=[1.0, 0.5]).sample(20000, seed=1)
        cat = d.Categorical(probs=[0.2, 0.3, 0.5]).sample([100, 100], seed=2)
        bern = d.Bernoulli(probs=[0.1, 0.9]).sample(10000, seed=3)
        uni = d.Uniform(low=2.0, high=4.0).sample([5000], seed=4)
        n, c, b, u = sess.run([normal, cat, bern, uni])
    assert n.shape == (20000, 2) and c.shape == (100, 100) and b.shape == (10000, 2)
    np.testing.assert_allclose(n.mean(axis=0), [0.0, 3.0], atol=0.03)
    np.testing.assert_allclose(n.std(axis=0), [1.0, 0.5], atol=0.02)
    np.testing.assert_allclose(np.bincount(c.ravel(), minlength=3) / c.size, [0.2, 0.3, 0.5],
                               atol=0.02)  # fmt: skip
    np.testing.assert_allclose(b.mean(axis=0), [0.1, 0.9], atol=0.02)
    assert c.dtype == np.int32 and b.dtype == np.int32
    assert 2.0 <= u.min() and u.max() < 4.0


def test_reparameterized_samples_and_log_probs_are_differentiable():
    loc = tf.Variable(1.0)
    normal = tf.distributions.Normal(loc=loc, scale=2.0)
    assert normal.reparameterization_type is tf.distributions.FULLY_REPARAMETERIZED
    sample_grad = tf.gradients(tf.reduce_mean(normal.sample(100, seed=5)), loc)[0]
    log_prob_grad = tf.gradients(normal.log_prob(3.0), loc)[0]
    with tf.Session() as sess:
        sess.run(loc.initializer)
        g1, g2 = sess.run([sample_grad, log_prob_grad])
    assert g1 == pytest.approx(1.0)
    assert g2 == pytest.approx((3.0 - 1.0) / 4.0)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="Must pass probs or logits, but not both"):
        tf.distributions.Bernoulli(logits=[0.0], probs=[0.5])
    with pytest.raises(NotImplementedError, match="No KL"):
        tf.distributions.kl_divergence(
            tf.distributions.Normal(0.0, 1.0), tf.distributions.Uniform(0.0, 1.0)
        )
