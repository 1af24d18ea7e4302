"""TF1 Keras models trained, evaluated and run by the engine, against what TensorFlow's
legacy Keras recorded for the same programs (``tests/engine/keras/programs.py``, recorded by
``tests/engine/fixtures/make_keras_model_fixtures.py``)."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures.oracle import assert_recorded, load
from tests.engine.keras import programs

RECORDED = load("keras_models_tf.npz")


@pytest.mark.parametrize("program", programs.PROGRAMS, ids=lambda p: p.__name__)
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
    program_keys = {k for k in RECORDED.files if k.split("_")[0] == next(iter(got)).split("_")[0]}
    assert program_keys <= set(got), sorted(program_keys - set(got))
