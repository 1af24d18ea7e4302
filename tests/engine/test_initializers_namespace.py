"""``tf.initializers``: TF 1.15's names over the engine's initializers, compared with
TensorFlow's recording (``fixtures/make_initializers_namespace_fixtures.py``)."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures.make_initializers_namespace_fixtures import ORTHOGONAL, build, gram
from tests.engine.fixtures.oracle import assert_recorded, load, run_graph

RECORDING = load("initializers_namespace_tf.npz")
GOT = run_graph(tf, build)


def test_names_are_tensorflows():
    assert sorted(tf.initializers.__all__) == list(RECORDING["names"])
    for name in tf.initializers.__all__:
        assert callable(getattr(tf.initializers, name)), name


def test_names_map_onto_the_engines_initializers():
    init = tf.initializers
    assert init.zeros is tf.zeros_initializer and init.ones is tf.ones_initializer
    assert init.constant is tf.constant_initializer
    assert init.random_normal is tf.random_normal_initializer
    assert init.random_uniform is tf.random_uniform_initializer
    assert init.truncated_normal is tf.truncated_normal_initializer
    assert init.variance_scaling is tf.variance_scaling_initializer
    assert init.glorot_uniform is tf.glorot_uniform_initializer
    assert init.glorot_normal is tf.glorot_normal_initializer
    assert init.orthogonal is tf.orthogonal_initializer
    assert init.uniform_unit_scaling is tf.uniform_unit_scaling_initializer
    assert init.global_variables is tf.global_variables_initializer
    assert init.local_variables is tf.local_variables_initializer
    assert init.variables is tf.variables_initializer
    assert init.tables_initializer is tf.tables_initializer


@pytest.mark.parametrize("key", ["identity", "identity_gain_f64"])
def test_identity_values(key):
    assert_recorded(GOT[key], RECORDING[key], key, rtol=0)


@pytest.mark.parametrize("key", [k for k, _, _ in ORTHOGONAL])
def test_orthogonal_gram_matrix_and_shape(key):
    q = GOT[f"orthogonal_{key}"]
    assert list(q.shape) == list(RECORDING[f"shape_orthogonal_{key}"])
    assert_recorded(gram(q), RECORDING[f"gram_orthogonal_{key}"], key, rtol=0, atol=1e-5)


@pytest.mark.parametrize("key", ["identity", "orthogonal", "uniform_unit_scaling"])
def test_configs(key):
    obj = {
        "identity": tf.initializers.identity(gain=2.0),
        "orthogonal": tf.initializers.orthogonal(gain=1.5, seed=4),
        "uniform_unit_scaling": tf.initializers.uniform_unit_scaling(factor=1.2, seed=5),
    }[key]
    assert repr(sorted(obj.get_config().items())) == str(RECORDING[f"config_{key}"])


@pytest.mark.parametrize(
    ("key", "call"),
    [
        ("identity_3d", lambda: tf.initializers.identity()([2, 2, 2])),
        ("orthogonal_1d", lambda: tf.initializers.orthogonal()([4])),
    ],
)
def test_errors(key, call):
    with tf.Graph().as_default(), pytest.raises(ValueError) as info:
        call()
    assert str(info.value) == str(RECORDING[f"error_{key}"])


def test_uniform_unit_scaling_bound():
    # TF's formula: uniform in [-m, m], m = factor * sqrt(3 / prod(shape[:-1])).
    with tf.Graph().as_default():
        t = tf.initializers.uniform_unit_scaling(factor=1.2, seed=1)([10, 30, 400])
        with tf.Session() as sess:
            x = sess.run(t)
    bound = 1.2 * np.sqrt(3 / 300)
    assert x.shape == (10, 30, 400) and x.dtype == np.float32
    assert np.abs(x).max() <= bound
    assert np.abs(x).max() > 0.99 * bound and abs(x.mean()) < 0.01 * bound


def test_variable_with_namespace_initializers():
    with tf.Graph().as_default():
        w = tf.get_variable("w", [3, 3], initializer=tf.initializers.identity(gain=3.0))
        b = tf.get_variable("b", [3], initializer=tf.initializers.constant(0.5))
        loc = tf.get_local_variable("loc", [2], initializer=tf.initializers.ones())
        with tf.Session() as sess:
            sess.run([tf.initializers.global_variables(), tf.initializers.local_variables()])
            w_v, b_v, loc_v = sess.run([w, b, loc])
    np.testing.assert_array_equal(w_v, 3 * np.eye(3, dtype=np.float32))
    np.testing.assert_array_equal(b_v, [0.5, 0.5, 0.5])
    np.testing.assert_array_equal(loc_v, [1.0, 1.0])
