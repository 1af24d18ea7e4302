"""tf.contrib.crf against brute force: every tag sequence of small batches enumerated, its
score summed by hand, the partition function as the log-sum-exp of all of them, Viterbi as
the best of them; sequence lengths (0 included) honoured; gradients by finite differences."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import engine as tf

crf = tf.contrib.crf
rng = np.random.default_rng(7)
INPUTS = rng.standard_normal((3, 4, 3)).astype(np.float32)
TRANS = rng.standard_normal((3, 3)).astype(np.float32)
TAGS = np.array([[0, 2, 1, 1], [2, 2, 0, 1], [1, 0, 0, 2]], np.int32)
LENGTHS = np.array([4, 2, 0], np.int32)


def _score(x, tags, n, trans):
    if n == 0:
        return 0.0
    s = sum(x[t, tags[t]] for t in range(n))
    return s + sum(trans[tags[t], tags[t + 1]] for t in range(n - 1))


def _log_norm(x, n, trans):
    if n == 0:
        return 0.0
    scores = [_score(x, seq, n, trans) for seq in itertools.product(range(x.shape[1]), repeat=n)]
    return float(np.log(np.sum(np.exp(scores))))


def test_log_likelihood_score_and_norm_match_brute_force():
    with tf.Graph().as_default(), tf.Session() as sess:
        ll, trans = crf.crf_log_likelihood(INPUTS, TAGS, LENGTHS, tf.constant(TRANS))
        score = crf.crf_sequence_score(INPUTS, TAGS, LENGTHS, TRANS)
        norm = crf.crf_log_norm(INPUTS, LENGTHS, TRANS)
        got_ll, got_score, got_norm = sess.run([ll, score, norm])
    want_score = [_score(INPUTS[b], TAGS[b], LENGTHS[b], TRANS) for b in range(3)]
    want_norm = [_log_norm(INPUTS[b], LENGTHS[b], TRANS) for b in range(3)]
    np.testing.assert_allclose(got_score, want_score, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_norm, want_norm, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_ll, np.subtract(want_score, want_norm), rtol=1e-5, atol=1e-5)


def test_log_likelihood_creates_transitions_and_trains():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, None, 3])
        with tf.variable_scope("crf_layer"):
            ll, trans = crf.crf_log_likelihood(x, TAGS, LENGTHS)
        assert trans.op.name == "crf_layer/transitions" and trans.shape.as_list() == [3, 3]
        grads = tf.gradients(-tf.reduce_mean(ll), [x, trans])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            gx, gt = sess.run(grads, {x: INPUTS})
    assert gx.shape == INPUTS.shape and gt.shape == (3, 3)
    assert np.all(gx[2] == 0) and np.all(gx[1, 2:] == 0)  # lengths 0 and 2
    assert np.isfinite(gx).all() and np.abs(gt).sum() > 0


def test_log_likelihood_gradient_matches_finite_differences():
    x0 = INPUTS.astype(np.float64)
    with tf.Graph().as_default(), tf.Session() as sess:
        x = tf.placeholder(tf.float64, [3, 4, 3])
        ll, _ = crf.crf_log_likelihood(x, TAGS, LENGTHS, tf.constant(TRANS.astype(np.float64)))
        total = tf.reduce_sum(ll * [1.0, 0.5, 2.0])
        (grad,) = sess.run(tf.gradients(total, [x]), {x: x0})
        eps = 1e-6
        for idx in [(0, 0, 0), (0, 3, 2), (1, 1, 1), (1, 3, 0)]:
            plus, minus = x0.copy(), x0.copy()
            plus[idx] += eps
            minus[idx] -= eps
            fd = (sess.run(total, {x: plus}) - sess.run(total, {x: minus})) / (2 * eps)
            assert grad[idx] == pytest.approx(fd, abs=1e-6)


def test_viterbi_decode_finds_the_best_sequence():
    best, score = crf.viterbi_decode(INPUTS[0], TRANS)
    seqs = list(itertools.product(range(3), repeat=4))
    scores = [_score(INPUTS[0], s, 4, TRANS) for s in seqs]
    assert tuple(best) == seqs[int(np.argmax(scores))]
    assert score == pytest.approx(max(scores), rel=1e-6)
