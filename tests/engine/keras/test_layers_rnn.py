"""Keras' recurrent layers against TensorFlow 1 Keras' recorded outputs and gradients
(``tests/engine/fixtures/make_keras_rnn_fixtures.py``), plus the engine-only checks: names,
weight order, masks, dropout, errors."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tf
from engine.keras.base_layer import keras_mask
from tests.engine.fixtures.keras_rnn_cases import CASES, run_case
from tests.engine.fixtures.oracle import load

RECORDED = load("keras_rnn_tf.npz")


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_tensorflow(name):
    got = run_case(tf, name)
    keys = sorted(k for k in RECORDED.files if k.startswith(name + "/"))
    assert sorted(got) == keys
    for key in keys:
        np.testing.assert_allclose(got[key], RECORDED[key], rtol=1e-5, atol=1e-5, err_msg=key)


# -- engine-only checks --------------------------------------------------------------------

layers = tf.keras.layers


def _names(layer) -> list[str]:
    return [w.name for w in layer.weights]


def _shapes(layer) -> list[tuple]:
    return [tuple(w.shape.as_list()) for w in layer.weights]


def _run(fetches, feed=None):
    return tf.keras.backend.get_session().run(fetches, feed)


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default(), tf.Session(graph=g) as sess:
        yield sess


@pytest.mark.usefixtures("graph")
def test_variable_names_and_weight_order():
    x = tf.keras.Input((5, 3))
    lstm = layers.LSTM(4)
    lstm(x)
    assert _names(lstm) == ["lstm/kernel:0", "lstm/recurrent_kernel:0", "lstm/bias:0"]
    assert _shapes(lstm) == [(3, 16), (4, 16), (16,)]
    gru = layers.GRU(2, reset_after=True)
    gru(x)
    assert _names(gru) == ["gru/kernel:0", "gru/recurrent_kernel:0", "gru/bias:0"]
    assert _shapes(gru) == [(3, 6), (2, 6), (2, 6)]
    rnn = layers.SimpleRNN(3, use_bias=False)
    rnn(x)
    assert _names(rnn) == ["simple_rnn/kernel:0", "simple_rnn/recurrent_kernel:0"]
    bi = layers.Bidirectional(layers.LSTM(2))
    bi(x)
    assert _names(bi) == [
        "bidirectional/forward_lstm_1/kernel:0",
        "bidirectional/forward_lstm_1/recurrent_kernel:0",
        "bidirectional/forward_lstm_1/bias:0",
        "bidirectional/backward_lstm_1/kernel:0",
        "bidirectional/backward_lstm_1/recurrent_kernel:0",
        "bidirectional/backward_lstm_1/bias:0",
    ]
    assert bi.count_params() == 2 * (3 * 8 + 2 * 8 + 8)
    td = layers.TimeDistributed(layers.Dense(2))
    td(x)
    assert _names(td) == ["time_distributed/kernel:0", "time_distributed/bias:0"]
    stacked = layers.RNN([layers.LSTMCell(2), layers.GRUCell(3)])
    stacked(x)
    assert _shapes(stacked) == [(3, 8), (2, 8), (8,), (2, 9), (3, 9), (9,)]
    assert _names(stacked)[:4] == [
        "rnn/kernel:0",
        "rnn/recurrent_kernel:0",
        "rnn/bias:0",
        "rnn/kernel_1:0",
    ]


@pytest.mark.usefixtures("graph")
def test_default_initial_weights():
    x = tf.keras.Input((5, 3))
    lstm = layers.LSTM(2)
    lstm(x)
    kernel, recurrent, bias = lstm.get_weights()
    np.testing.assert_array_equal(bias, [0, 0, 1, 1, 0, 0, 0, 0])  # unit_forget_bias
    np.testing.assert_allclose(recurrent @ recurrent.T, np.eye(2), atol=1e-5)  # orthogonal
    assert np.abs(kernel).max() <= np.sqrt(6 / (3 + 8)) + 1e-6  # glorot_uniform
    plain = layers.LSTM(2, unit_forget_bias=False)
    plain(x)
    np.testing.assert_array_equal(plain.get_weights()[2], np.zeros(8))


def test_layer_defaults_are_tf1s():
    lstm, gru = layers.LSTM(3), layers.GRU(3)
    assert lstm.recurrent_activation is tf.keras.activations.hard_sigmoid
    assert gru.recurrent_activation is tf.keras.activations.hard_sigmoid
    assert gru.reset_after is False and lstm.unit_forget_bias is True
    assert lstm.units == 3 and lstm.implementation == 1
    assert sorted(lstm.get_config()) == sorted(
        "name trainable dtype return_sequences return_state go_backwards stateful unroll "
        "time_major units activation recurrent_activation use_bias kernel_initializer "
        "recurrent_initializer bias_initializer unit_forget_bias kernel_regularizer "
        "recurrent_regularizer bias_regularizer activity_regularizer kernel_constraint "
        "recurrent_constraint bias_constraint dropout recurrent_dropout implementation".split()
    )


@pytest.mark.usefixtures("graph")
def test_masks_propagate():
    x = tf.keras.Input((5, 3))
    m = layers.Masking()(x)
    seq = layers.LSTM(2, return_sequences=True)(m)
    assert keras_mask(seq) is keras_mask(m)
    assert keras_mask(layers.LSTM(2)(m)) is None
    out, h, c = layers.LSTM(2, return_sequences=True, return_state=True)(m)
    assert keras_mask(out) is keras_mask(m) and keras_mask(h) is None
    fw, bw = layers.Bidirectional(layers.LSTM(2, return_sequences=True), merge_mode=None)(m)
    assert keras_mask(fw) is keras_mask(m) and keras_mask(bw) is keras_mask(m)
    assert keras_mask(layers.TimeDistributed(layers.Dense(2))(m)) is keras_mask(m)
    assert seq.shape.as_list() == [None, 5, 2]


def _linear_rnn(units, **kwargs):
    kwargs = {"kernel_initializer": "identity", "recurrent_initializer": "identity", **kwargs}
    return layers.SimpleRNN(units, activation=None, use_bias=False, return_sequences=True, **kwargs)


@pytest.mark.usefixtures("graph")
def test_dropout_mask_is_drawn_once_per_sequence():
    x = tf.constant(np.ones((4, 3, 200), np.float32))
    out = _linear_rnn(200, dropout=0.5, recurrent_initializer="zeros")(x)
    trained = _run(out, {tf.keras.backend.learning_phase(): True})
    assert set(np.unique(trained)) <= {0.0, 2.0}
    assert 0.4 < np.mean(trained == 0) < 0.6
    np.testing.assert_array_equal(trained[:, 0], trained[:, 2])  # one mask for every step
    np.testing.assert_array_equal(_run(out), np.ones((4, 3, 200)))  # inference


@pytest.mark.usefixtures("graph")
def test_recurrent_dropout():
    x = tf.constant(np.ones((4, 3, 200), np.float32))
    out = _linear_rnn(200, recurrent_dropout=0.5)(x, training=True)
    got = _run(out)
    np.testing.assert_array_equal(got[:, 0], np.ones((4, 200)))
    assert set(np.unique(got[:, 1])) <= {1.0, 3.0}  # 1 + h0 * (0 or 2)
    assert 0.4 < np.mean(got[:, 1] == 1) < 0.6
    np.testing.assert_array_equal(got[:, 2], np.where(got[:, 1] == 3, 7.0, 1.0))


@pytest.mark.usefixtures("graph")
def test_dropout_layers_equal_plain_ones_in_inference():
    x = tf.constant(np.random.RandomState(3).randn(2, 5, 3).astype(np.float32))
    plain = layers.LSTM(4, return_sequences=True)
    dropped = layers.GRU(4, return_sequences=True, dropout=0.3, recurrent_dropout=0.3)
    plain_gru = layers.GRU(4, return_sequences=True)
    dropped_lstm = layers.LSTM(4, return_sequences=True, dropout=0.3, recurrent_dropout=0.3)
    outs = [plain(x), dropped_lstm(x), plain_gru(x), dropped(x)]
    dropped_lstm.set_weights(plain.get_weights())
    dropped.set_weights(plain_gru.get_weights())
    a, b, c, d = _run(outs)
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(c, d, rtol=1e-6, atol=1e-6)
    e, f = _run([outs[0], outs[1]], {tf.keras.backend.learning_phase(): True})
    assert not np.allclose(e, f)
    grads = tf.gradients(tf.reduce_sum(outs[1]), dropped_lstm.trainable_weights)
    assert all(g is not None for g in grads)


@pytest.mark.usefixtures("graph")
def test_regularizer_losses():
    lstm = layers.LSTM(2, kernel_regularizer="l2", recurrent_regularizer="l2")
    lstm(tf.keras.Input((5, 3)))
    assert len(lstm.losses) == 2


@pytest.mark.usefixtures("graph")
def test_config_round_trip():
    lstm = layers.LSTM(3, return_sequences=True, go_backwards=True, dropout=0.25)
    copy = layers.LSTM.from_config(lstm.get_config())
    assert (copy.units, copy.return_sequences, copy.go_backwards, copy.dropout) == (
        3,
        True,
        True,
        0.25,
    )
    assert copy.cell is not lstm.cell
    rnn = layers.RNN(layers.GRUCell(2), return_state=True)
    rnn_copy = layers.RNN.from_config(rnn.get_config())
    assert rnn_copy.cell is not rnn.cell and rnn_copy.cell.units == 2


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda: layers.LSTM(0), ValueError, "expected a positive integer, got 0"),
        (lambda: layers.GRU(4, foo=1), TypeError, "foo"),
        (lambda: layers.LSTM(4, stateful=True), ValueError, "stateful=True"),
        (lambda: layers.RNN(object()), ValueError, "should have a `call` method"),
        (
            lambda: layers.Bidirectional(layers.LSTM(2), merge_mode="foo"),
            ValueError,
            "Invalid merge mode",
        ),
        (lambda: layers.Bidirectional("x"), ValueError, "Please initialize `Bidirectional`"),
        (lambda: layers.TimeDistributed("x"), ValueError, "`TimeDistributed` layer"),
        (
            lambda: layers.Bidirectional(layers.LSTM(2), backward_layer=layers.LSTM(2)),
            ValueError,
            "different `go_backwards`",
        ),
        (
            lambda: layers.Bidirectional(
                layers.LSTM(2),
                backward_layer=layers.LSTM(2, go_backwards=True, return_sequences=True),
            ),
            ValueError,
            'attribute "return_sequences"',
        ),
        (lambda: layers.Bidirectional(layers.LSTM(2), backward_layer=3), ValueError, "backward"),
    ],
)
def test_bad_arguments(make, error, message):
    with pytest.raises(error, match=message):
        make()


@pytest.mark.usefixtures("graph")
def test_bad_inputs():
    flat = tf.keras.Input((3,))
    with pytest.raises(ValueError, match="expected ndim=3, found ndim=2"):
        layers.LSTM(2)(flat)
    with pytest.raises(ValueError, match="at least 3 dimensions"):
        layers.TimeDistributed(layers.Dense(2))(flat)
    with pytest.raises(ValueError, match="has 2 states .* passed 1 initial states"):
        layers.LSTM(2)(tf.keras.Input((5, 3)), initial_state=[tf.zeros((2, 2))])
    with pytest.raises(ValueError, match="not compatible with `cell.state_size`"):
        layers.GRU(2)(tf.keras.Input((5, 3)), initial_state=[tf.zeros((2, 3))])


@pytest.mark.usefixtures("graph")
def test_unknown_time_steps_and_list_inputs():
    x = tf.placeholder(tf.float32, (None, None, 3))
    h0 = tf.placeholder(tf.float32, (None, 2))
    out, h = layers.GRU(2, return_sequences=True, return_state=True)([x, h0])
    assert out.shape.as_list() == [None, None, 2]
    value = np.random.RandomState(1).randn(3, 7, 3).astype(np.float32)
    seq, last = _run([out, h], {x: value, h0: np.zeros((3, 2), np.float32)})
    assert seq.shape == (3, 7, 2)
    np.testing.assert_allclose(seq[:, -1], last)


@pytest.mark.usefixtures("graph")
def test_time_distributed_inner_weights_and_training():
    kernel = np.arange(6, dtype=np.float32).reshape(3, 2)
    td = layers.TimeDistributed(layers.Dense(2, weights=[kernel, np.ones(2, np.float32)]))
    value = np.random.RandomState(2).randn(2, 4, 3).astype(np.float32)
    got = _run(td(tf.constant(value)))
    np.testing.assert_allclose(got, value @ kernel + 1, rtol=1e-6)
    x = tf.constant(np.ones((2, 50, 40), np.float32))
    dropped = layers.TimeDistributed(layers.Dropout(0.5))(x, training=True)
    got = _run(dropped)
    assert got.shape == (2, 50, 40) and 0.4 < np.mean(got == 0) < 0.6
