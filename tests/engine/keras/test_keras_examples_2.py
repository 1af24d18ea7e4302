"""Patterns of Keras 2.x's example scripts (VAEs, siamese networks, transfer learning,
CIFAR-10 CNN/ResNet, conv-LSTM, AC-GAN, SWWAE, Net2Net, filter visualization, seq2seq) run
as small programs with fixed weights and compared with what TF1's Keras recorded
(``tests/engine/fixtures/make_keras_examples_2_fixtures.py``)."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures.oracle import assert_recorded, load
from tests.engine.keras import examples_2_programs

RECORDED = load("keras_examples_2_tf.npz")


@pytest.mark.parametrize("program", examples_2_programs.PROGRAMS, ids=lambda p: p.__name__)
def test_program_matches_tensorflow(program):
    got = program(tf)
    assert got
    for key, value in got.items():
        assert key in RECORDED.files, f"{key} was not recorded"
        expected = RECORDED[key]
        if expected.dtype.kind in "US":
            assert np.asarray(value).astype(str).tolist() == expected.tolist(), key
        elif expected.dtype.kind == "f":
            assert_recorded(np.asarray(value, expected.dtype), expected, key, rtol=2e-4, atol=2e-5)
        else:
            assert_recorded(np.asarray(value).astype(expected.dtype), expected, key, rtol=0)
    prefix = next(iter(got)).split("_")[0]
    program_keys = {k for k in RECORDED.files if k.split("_")[0] == prefix}
    assert program_keys <= set(got), sorted(program_keys - set(got))


def test_merge_layers_refuse_a_list_inside_their_input_list():
    """mnist_swwae's Lambda around K.gradients returns a list; merging it with a tensor used
    to pack the list into one tensor of an extra axis (TF fails on it too)."""
    tf.keras.backend.clear_session()
    layers = tf.keras.layers
    inp = tf.keras.Input(shape=(3,))
    grads = layers.Lambda(lambda x: tf.keras.backend.gradients(tf.keras.backend.sum(x * x), x))(inp)
    assert isinstance(grads, list) and len(grads) == 1
    for merge in (layers.multiply, layers.add, layers.concatenate):
        with pytest.raises(TypeError, match="input 1 is a list of 1"):
            merge([inp, grads])
    assert layers.multiply([inp, grads[0]]).shape.as_list() == [None, 3]


def test_progress_lines_name_their_unit(capsys):
    """mnist_acgan drives a Progbar over batches: its last line counts time per step, as
    Keras' (and fit_generator's); array fit/evaluate count per sample."""
    bar = tf.keras.utils.Progbar(target=3)
    for i in range(3):
        bar.update(i + 1, [("loss", 0.5)])
    assert "/step - loss: 0.5000" in capsys.readouterr().out
    tf.keras.backend.clear_session()
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(2,))])
    model.compile("sgd", "mse")
    x, y = np.ones((4, 2), np.float32), np.ones((4, 1), np.float32)
    model.fit(x, y, epochs=1, verbose=1)
    model.evaluate(x, y, verbose=1)
    lines = capsys.readouterr().out.strip().splitlines()
    assert "/sample - loss: " in lines[-2] and "/sample - loss: " in lines[-1]
    model.fit_generator(iter([(x, y)] * 2), steps_per_epoch=2, epochs=1, verbose=1)
    out = capsys.readouterr().out
    assert "/step - loss: " in out.strip().splitlines()[-1]
    assert "Train on" not in out  # cifar10_cnn's fit_generator: TF1 says nothing (were "2 samples")
