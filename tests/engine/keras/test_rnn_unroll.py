"""``unroll=True``: the recurrent layers' steps as straight-line ops give exactly what the
``while_loop`` gives (the loop is what the TF recordings check), masks, stacking, going
backwards and gradients included; an unknown number of steps is refused as in Keras."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tf

L = tf.keras.layers
K = tf.keras.backend


def _run(unroll, layer):
    K.clear_session()
    x = np.random.default_rng(0).integers(0, 50, (6, 9))
    x[:, :3] = 0  # masked steps at the front
    model = tf.keras.Sequential(
        [
            L.Embedding(50, 4, input_length=9, mask_zero=True),
            layer(5, unroll=unroll, return_sequences=True, go_backwards=True),
            layer(3, unroll=unroll),
            L.Dense(1, activation="sigmoid"),
        ]
    )
    model.set_weights(
        [
            np.random.RandomState(i).uniform(-0.4, 0.4, w.shape.as_list()).astype(np.float32)
            for i, w in enumerate(model.weights)
        ]
    )
    model.compile("sgd", "binary_crossentropy")
    g = model._build_train_graph()
    grads = tf.gradients(g.total_loss, model.trainable_weights)
    feed = {
        model.inputs[0]: x,
        g.targets[0]: np.ones((6, 1), np.float32),
        g.sample_weights[0]: np.ones(6, np.float32),
    }
    return model.predict(x), K.get_session().run(grads, feed)


@pytest.mark.parametrize("layer", [L.LSTM, L.GRU, L.SimpleRNN], ids=lambda c: c.__name__)
def test_unrolled_steps_equal_the_loop(layer):
    pred_loop, grads_loop = _run(False, layer)
    pred_unrolled, grads_unrolled = _run(True, layer)
    np.testing.assert_allclose(pred_unrolled, pred_loop, rtol=1e-6, atol=1e-7)
    for a, b in zip(grads_unrolled, grads_loop):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_unroll_needs_a_known_number_of_steps():
    K.clear_session()
    with pytest.raises(ValueError, match="Cannot unroll a RNN if the time dimension"):
        L.LSTM(2, unroll=True)(tf.keras.Input((None, 3)))
