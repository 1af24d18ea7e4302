"""Clipping against TensorFlow: values, tensor names and gradients recorded by
``fixtures/make_clip_fixtures.py`` from the same graphs (``build``)."""

import os

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures.make_clip_fixtures import A, B, build

TF = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "clip_tf.npz"), allow_pickle=False)


@pytest.fixture(scope="module")
def ours():
    g = tf.Graph()
    with g.as_default():
        fetch, names = build(tf)
        with tf.Session(graph=g) as sess:
            return sess.run(fetch), names


def test_the_fixture_records_its_tensorflow_version():
    assert str(TF["tf_version"]).count(".") == 2


@pytest.mark.parametrize(
    "key",
    sorted(k for k in TF.files if not k.startswith(("name_", "tf_version"))),
)
def test_clipping_matches_tensorflow(ours, key):
    values, _ = ours
    expected = TF[key]
    got = np.asarray(values[key])
    assert got.dtype == expected.dtype and got.shape == expected.shape, key
    np.testing.assert_allclose(got, expected, rtol=2e-6, atol=1e-7, equal_nan=True)


def test_tensor_names_match_tensorflow(ours):
    _, names = ours
    for key, name in names.items():
        assert name == str(TF[f"name_{key}"]), key


def test_the_clipping_actually_clips():
    """Sanity of the recorded cases themselves: tight clips change values, loose ones do not,
    and an infinite global norm poisons every clipped value (TF's choice)."""
    assert not np.allclose(TF["norm_clipped"], A)
    np.testing.assert_allclose(TF["norm_unclipped"], A, rtol=1e-6)  # t * 100 / 100
    assert np.isclose(np.linalg.norm(TF["norm_clipped"]), 1.0)
    np.testing.assert_allclose(TF["global_loose_2"], B, rtol=1e-6)
    assert np.all(np.isnan(TF["global_inf_0"]))
    assert np.all(np.isfinite(TF["grad_norm_zeros"]))


def test_bad_arguments_are_clear_errors():
    with tf.Graph().as_default():
        a = tf.constant(A)
        with pytest.raises(TypeError, match="t_list should be a sequence"):
            tf.clip_by_global_norm(a, 1.0)
        with pytest.raises(TypeError, match="t_list should be a sequence"):
            tf.global_norm("abc")
        with pytest.raises(ValueError, match="at least one tensor"):
            tf.global_norm([None, None])
        with pytest.raises(ValueError, match="clip_norm must not broadcast t"):
            tf.clip_by_norm(a, tf.constant(np.ones((2, 3, 4), np.float32)))


def test_float16_gradients_are_scaled_in_their_own_dtype():
    with tf.Graph().as_default():
        half = tf.constant(np.array([3.0, 4.0], np.float16))
        full = tf.constant(np.array([12.0], np.float32))
        (h, f), norm = tf.clip_by_global_norm([half, full], 6.5, use_norm=tf.constant(13.0))
        assert h.dtype == tf.float16 and f.dtype == tf.float32
        with tf.Session() as sess:
            hv, fv = sess.run([h, f])
        np.testing.assert_allclose(hv, [1.5, 2.0])
        np.testing.assert_allclose(fv, [6.0])
