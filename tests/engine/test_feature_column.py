"""``tf.feature_column`` against TensorFlow's ``compat.v1.feature_column``: ``input_layer``
and ``linear_model`` outputs, gradients with respect to every variable, variable names and
shapes and ``cols_to_vars``, recorded by ``fixtures/make_feature_column_py_fixtures.py``
from the same graphs (``CASES``)."""

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures.make_feature_column_py_fixtures import CASES, run_case
from tests.engine.fixtures.oracle import assert_recorded, load

TF = load("feature_column_py_tf.npz")
KEYS = sorted(k for k in TF.files if "/" in k)


@pytest.fixture(scope="module")
def ours():
    return {name: run_case(tf, build) for name, build in CASES.items()}


@pytest.mark.parametrize("key", KEYS)
def test_matches_tensorflow(ours, key):
    case, _, item = key.partition("/")
    assert item in ours[case], f"{key}: the engine's graph has no {item}"
    expected = TF[key]
    got = ours[case][item]
    if expected.dtype.kind == "U":
        np.testing.assert_array_equal(np.asarray(got).astype(str), expected, err_msg=key)
    else:
        assert_recorded(got, expected, key, rtol=1e-5, atol=1e-6)


def test_no_extra_outputs(ours):
    """The engine creates exactly TF's variables and gradients, no more."""
    for case, result in ours.items():
        assert sorted(f"{case}/{k}" for k in result) == [
            k for k in KEYS if k.startswith(case + "/")
        ]
