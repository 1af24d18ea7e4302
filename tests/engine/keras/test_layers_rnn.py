"""Keras' recurrent layers against TensorFlow 1 Keras' recorded outputs and gradients
(``tests/engine/fixtures/make_keras_rnn_fixtures.py``), plus the engine-only checks: names,
weight order, masks, dropout, errors."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tf
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
