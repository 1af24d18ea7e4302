"""The engine's Keras layers against TF1 Keras' recorded outputs, gradients, moving-statistics
updates and variable names (``tests/engine/fixtures/make_keras_layers_fixtures.py``)."""

from __future__ import annotations

import pytest

import engine
from tests.engine.fixtures import make_keras_layers_fixtures as cases_module
from tests.engine.fixtures.oracle import assert_recorded, load

RECORDING = load("keras_layers_tf.npz")
CASES = sorted(cases_module.cases())


def test_every_case_is_recorded():
    recorded = {k.split("/")[0] for k in RECORDING.files if "/" in k}
    assert recorded == set(CASES)


@pytest.mark.parametrize("key", CASES)
def test_layer_matches_tf(key):
    got = cases_module.run_case(engine, key)
    expected_keys = sorted(k for k in RECORDING.files if k.startswith(f"{key}/"))
    assert sorted(got) == expected_keys
    for k in expected_keys:
        assert_recorded(got[k], RECORDING[k], k, rtol=1e-5, atol=1e-5)
