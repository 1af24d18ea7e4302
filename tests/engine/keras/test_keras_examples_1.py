"""Keras 2.x example scripts' models (``tests/engine/keras/example_programs_1.py``) run by
the engine against TensorFlow's legacy Keras' recording of the same programs
(``tests/engine/fixtures/make_keras_examples_1_fixtures.py``), and ``Sequential``'s
``predict_classes``/``predict_proba`` that the addition example calls (TF 1.x's; TF's
recorded Keras no longer has them, so they are checked against ``predict``)."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures.oracle import assert_recorded, load
from tests.engine.keras import example_programs_1 as programs

RECORDED = load("keras_examples_1_tf.npz")


@pytest.mark.parametrize("program", programs.PROGRAMS, ids=lambda p: p.__name__)
def test_example_program_matches_tensorflow(program):
    got = program(tf)
    assert got
    for key, value in got.items():
        assert key in RECORDED.files, f"{key} was not recorded"
        expected = RECORDED[key]
        if expected.dtype.kind == "f":
            assert_recorded(np.asarray(value, expected.dtype), expected, key, rtol=2e-4, atol=2e-5)
        else:
            assert_recorded(np.asarray(value).astype(expected.dtype), expected, key, rtol=0)
    prefix = next(iter(got)).split("_")[0]
    program_keys = {k for k in RECORDED.files if k.split("_")[0] == prefix}
    assert program_keys <= set(got), sorted(program_keys - set(got))


def _model(units, activation):
    tf.keras.backend.clear_session()
    model = tf.keras.models.Sequential(
        [tf.keras.layers.Dense(units, activation=activation, input_shape=(3,))]
    )
    model.set_weights(
        [np.array([[1.0, -2.0], [0.5, 1.0], [-1.0, 0.25]])[:, :units], np.zeros(units)]
    )
    return model


X = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 1.0, 1.0]], "float32")


def test_predict_classes_is_the_argmax_of_predict():
    model = _model(2, "softmax")
    classes = model.predict_classes(X, batch_size=3, verbose=0)
    np.testing.assert_array_equal(classes, model.predict(X).argmax(axis=-1))
    np.testing.assert_array_equal(classes, [0, 1, 1, 0])


def test_predict_classes_thresholds_one_unit_at_a_half():
    model = _model(1, "sigmoid")
    classes = model.predict_classes(X)
    assert classes.dtype == np.int32 and classes.shape == (4, 1)
    np.testing.assert_array_equal(classes[:, 0], [1, 1, 0, 1])


def test_predict_proba_returns_predict_and_warns_outside_zero_one():
    model = _model(2, "softmax")
    np.testing.assert_allclose(model.predict_proba(X), model.predict(X))
    linear = _model(2, None)
    with pytest.warns(UserWarning, match="invalid probability values"):
        np.testing.assert_allclose(linear.predict_proba(X), linear.predict(X))
