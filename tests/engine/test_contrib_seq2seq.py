"""``tf.contrib.legacy_seq2seq`` and ``tf.contrib.seq2seq.sequence_loss`` against numpy
written from TF 1.15's formulas (contrib is gone from the TensorFlow releases the oracle
venv can install)."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tf

RNG = np.random.default_rng(11)
LOGITS = RNG.standard_normal((3, 4, 5)).astype(np.float32)  # batch, time, classes
TARGETS = RNG.integers(0, 5, (3, 4)).astype(np.int32)
WEIGHTS = np.array([[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1]], np.float32)


def _xent() -> np.ndarray:
    """[batch, time] cross entropies, in float64."""
    z = LOGITS.astype(np.float64)
    logz = np.log(np.exp(z - z.max(-1, keepdims=True)).sum(-1)) + z.max(-1)
    picked = np.take_along_axis(z, TARGETS[..., None].astype(np.int64), -1)[..., 0]
    return logz - picked


def _run(t):
    with tf.Session() as sess:
        return sess.run(t)


def _steps():
    logits = [tf.constant(LOGITS[:, i]) for i in range(4)]
    targets = [tf.constant(TARGETS[:, i]) for i in range(4)]
    weights = [tf.constant(WEIGHTS[:, i]) for i in range(4)]
    return logits, targets, weights


@pytest.mark.parametrize("average", [True, False])
def test_sequence_loss_by_example(average):
    weighted = (_xent() * WEIGHTS).sum(1)
    want = weighted / (WEIGHTS.sum(1) + 1e-12) if average else weighted
    got = _run(
        tf.contrib.legacy_seq2seq.sequence_loss_by_example(
            *_steps(), average_across_timesteps=average
        )
    )
    np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.parametrize("per_time", [True, False])
@pytest.mark.parametrize("per_batch", [True, False])
def test_legacy_sequence_loss(per_time, per_batch):
    weighted = (_xent() * WEIGHTS).sum(1)
    per_example = weighted / (WEIGHTS.sum(1) + 1e-12) if per_time else weighted
    want = per_example.sum() / (3 if per_batch else 1)
    loss = tf.contrib.legacy_seq2seq.sequence_loss(
        *_steps(), average_across_timesteps=per_time, average_across_batch=per_batch
    )
    assert loss.op.name.startswith("sequence_loss/")
    np.testing.assert_allclose(_run(loss), want, rtol=1e-5)


def test_custom_softmax_loss_function_and_length_check():
    logits, targets, weights = _steps()
    calls = []

    def loss_fn(labels, logits):
        calls.append(labels)
        return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits) * 2.0

    got = _run(
        tf.contrib.legacy_seq2seq.sequence_loss_by_example(
            logits, targets, weights, softmax_loss_function=loss_fn
        )
    )
    np.testing.assert_allclose(
        got, 2 * (_xent() * WEIGHTS).sum(1) / (WEIGHTS.sum(1) + 1e-12), rtol=1e-5
    )
    assert len(calls) == 4
    with pytest.raises(ValueError, match="Lengths of logits, weights, and targets must be"):
        tf.contrib.legacy_seq2seq.sequence_loss_by_example(logits, targets[:3], weights)


def _seq2seq_reference(avg_t, avg_b, sum_t, sum_b):
    ce = _xent() * WEIGHTS
    if avg_t and avg_b:
        return ce.sum() / WEIGHTS.sum()
    if sum_t and sum_b:
        return ce.sum() / np.count_nonzero(WEIGHTS)
    if avg_t or avg_b:
        axis = 0 if avg_b else 1
        return ce.sum(axis) / WEIGHTS.sum(axis)
    if sum_t or sum_b:
        axis = 0 if sum_b else 1
        return ce.sum(axis) / np.count_nonzero(WEIGHTS, axis=axis)
    return ce


@pytest.mark.parametrize(
    "avg_t, avg_b, sum_t, sum_b",
    [
        (True, True, False, False),
        (False, False, True, True),
        (True, False, False, False),
        (False, True, False, False),
        (False, False, True, False),
        (False, False, False, True),
        (True, False, False, True),
        (False, False, False, False),
    ],
)
def test_seq2seq_sequence_loss(avg_t, avg_b, sum_t, sum_b):
    loss = tf.contrib.seq2seq.sequence_loss(
        tf.constant(LOGITS),
        tf.constant(TARGETS),
        tf.constant(WEIGHTS),
        average_across_timesteps=avg_t,
        average_across_batch=avg_b,
        sum_over_timesteps=sum_t,
        sum_over_batch=sum_b,
    )
    np.testing.assert_allclose(
        _run(loss), _seq2seq_reference(avg_t, avg_b, sum_t, sum_b), rtol=1e-5
    )


def test_seq2seq_sequence_loss_zero_weights_and_errors():
    zero = tf.contrib.seq2seq.sequence_loss(
        tf.constant(LOGITS), tf.constant(TARGETS), tf.zeros([3, 4])
    )
    assert _run(zero) == 0.0  # div_no_nan, not NaN
    with pytest.raises(ValueError, match="Logits must be a"):
        tf.contrib.seq2seq.sequence_loss(tf.constant(LOGITS[0]), TARGETS, WEIGHTS)
    with pytest.raises(ValueError, match="Targets must be a"):
        tf.contrib.seq2seq.sequence_loss(tf.constant(LOGITS), tf.constant(TARGETS[0]), WEIGHTS)
    with pytest.raises(ValueError, match="cannot be set to True at same time"):
        tf.contrib.seq2seq.sequence_loss(
            tf.constant(LOGITS),
            tf.constant(TARGETS),
            tf.constant(WEIGHTS),
            sum_over_timesteps=True,
        )


def test_gradient_flows_through_the_losses():
    logits = tf.constant(LOGITS)
    loss = tf.contrib.seq2seq.sequence_loss(logits, tf.constant(TARGETS), tf.constant(WEIGHTS))
    grad = _run(tf.gradients(loss, logits)[0])
    z = LOGITS.astype(np.float64)
    p = np.exp(z - z.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    p[np.arange(3)[:, None], np.arange(4)[None, :], TARGETS] -= 1.0
    np.testing.assert_allclose(grad, p * WEIGHTS[..., None] / WEIGHTS.sum(), rtol=1e-4, atol=1e-7)


def test_rnn_decoder_shares_one_cell_and_feeds_back_with_loop_function():
    cell = tf.nn.rnn_cell.BasicRNNCell(3)
    inputs = [tf.constant(RNG.standard_normal((2, 3)).astype(np.float32)) for _ in range(4)]
    state = cell.zero_state(2, tf.float32)
    outputs, last = tf.contrib.legacy_seq2seq.rnn_decoder(inputs, state, cell)
    fed, _ = tf.contrib.legacy_seq2seq.rnn_decoder(
        inputs, state, cell, loop_function=lambda prev, i: prev * 0.5, scope="rnn_decoder"
    )
    names = sorted(v.op.name for v in tf.trainable_variables())
    assert names == ["rnn_decoder/basic_rnn_cell/bias", "rnn_decoder/basic_rnn_cell/kernel"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        by_name = {v.op.name.rsplit("/", 1)[1]: v for v in tf.trainable_variables()}
        kernel, bias = sess.run([by_name["kernel"], by_name["bias"]])
        outs, last_v, fed_v, xs, h = sess.run([outputs, last, fed, inputs, state])
    step = lambda x, h: np.tanh(np.concatenate([x, h], 1) @ kernel + bias)  # noqa: E731
    want, prev = [], h
    for x in xs:
        prev = step(x, prev)
        want.append(prev)
    np.testing.assert_allclose(outs, want, rtol=1e-5)
    np.testing.assert_allclose(last_v, want[-1], rtol=1e-5)
    want_fed, prev_out, hh = [], None, h
    for x in xs:
        hh = step(x if prev_out is None else prev_out * 0.5, hh)
        prev_out = hh
        want_fed.append(hh)
    np.testing.assert_allclose(fed_v, want_fed, rtol=1e-5)
