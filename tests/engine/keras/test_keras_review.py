"""Behaviours of TF1 Keras users rely on (``tests/engine/keras/review_programs.py``), run by
the engine against what TensorFlow's legacy Keras recorded for the same programs
(``tests/engine/fixtures/make_keras_review_fixtures.py``), and the error messages of the
paths the review fixed."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures.oracle import assert_recorded, load
from tests.engine.keras import review_programs as programs
from tests.engine.keras import review_programs_more

RECORDED = load("keras_review_tf.npz")


@pytest.mark.parametrize("program", review_programs_more.PROGRAMS, ids=lambda p: p.__name__)
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


def _temporal_model(mode="temporal"):
    tf.keras.backend.clear_session()
    model = tf.keras.Sequential(
        [tf.keras.layers.TimeDistributed(tf.keras.layers.Dense(2), input_shape=(5, 3))]
    )
    model.compile("sgd", "mse", sample_weight_mode=mode)
    return model


def test_temporal_sample_weights_must_be_2d():
    model = _temporal_model()
    y = np.zeros((6, 5, 2), np.float32)
    with pytest.raises(ValueError, match=r"shape \(6,\)\. In order to use timestep-wise"):
        model.fit(programs.SEQ, y, sample_weight=np.ones(6), verbose=0)
    with pytest.raises(ValueError, match=r"shape \(6, 4\) for an input with shape \(6, 5, 2\)"):
        model.fit(programs.SEQ, y, sample_weight=np.ones((6, 4)), verbose=0)


def test_2d_sample_weights_need_temporal_mode():
    model = _temporal_model(mode=None)
    with pytest.raises(ValueError, match='sample_weight_mode="temporal" in compile'):
        model.fit(programs.SEQ, np.zeros((6, 5, 2)), sample_weight=np.ones((6, 5)), verbose=0)


def test_temporal_mode_needs_a_time_axis():
    tf.keras.backend.clear_session()
    model = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(4,))])
    model.compile("sgd", "mse", sample_weight_mode="temporal")
    with pytest.raises(ValueError, match="restricted to outputs that are at least 3D"):
        model.fit(programs.X, programs.Y_REG, verbose=0)
    with pytest.raises(ValueError, match="sample_weight_mode must be None or 'temporal'"):
        model.compile("sgd", "mse", sample_weight_mode=["samplewise"])


def test_class_weight_rejects_3d_targets():
    model = _temporal_model(mode=None)
    with pytest.raises(ValueError, match="not supported for 3\\+ dimensional targets"):
        model.fit(programs.SEQ, np.zeros((6, 5, 2)), class_weight={0: 1.0}, verbose=0)


def test_reshape_to_another_size_raises():
    tf.keras.backend.clear_session()
    with pytest.raises(ValueError, match=r"total size of new array must be unchanged"):
        tf.keras.layers.Reshape((4, 4))(tf.keras.Input(shape=(5, 3)))


def test_layer_node_accessors_and_errors():
    tf.keras.backend.clear_session()
    dense = tf.keras.layers.Dense(2)
    with pytest.raises(RuntimeError, match="never been called and thus has no defined output"):
        dense.get_output_at(0)
    a, b = tf.keras.Input(shape=(3,)), tf.keras.Input(shape=(5,))
    out_a = dense(a)
    assert dense.get_output_at(0) is out_a
    assert dense.get_input_shape_at(0) == (None, 3)
    with pytest.raises(ValueError, match="at node 1, but the layer has only 1 inbound nodes"):
        dense.get_input_at(1)
    other = tf.keras.layers.Lambda(lambda t: t * 2.0)
    other(a), other(b)
    with pytest.raises(AttributeError, match="multiple inbound nodes, with different input"):
        _ = other.input_shape
    assert other.get_output_shape_at(1) == (None, 5)


def test_optimizer_weights_round_trip():
    tf.keras.backend.clear_session()
    model = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(4,))])
    model.compile(tf.keras.optimizers.Adam(0.01), "mse")
    model.fit(programs.X, programs.Y_REG, batch_size=10, verbose=0)
    values = model.optimizer.get_weights()
    assert values[0] == 3  # iterations first, as TF's OptimizerV2
    model.optimizer.set_weights([np.zeros_like(v) for v in values])
    assert all(not np.any(v) for v in model.optimizer.get_weights())
    with pytest.raises(ValueError, match="was expecting 5 weights"):
        model.optimizer.set_weights(values[:2])


def test_nested_model_updates_use_only_outer_inputs():
    """An inner model with BatchNormalization, first called on its own Input: training the
    outer model runs the updates of the outer call and never feeds the inner Input."""
    tf.keras.backend.clear_session()
    layers = tf.keras.layers
    inner_in = tf.keras.Input(shape=(4,))
    inner = tf.keras.Model(inner_in, layers.BatchNormalization(momentum=0.5)(inner_in))
    x = tf.keras.Input(shape=(4,))
    model = tf.keras.Model(x, layers.Dense(1)(inner(x)))
    model.compile("sgd", "mse")
    model.fit(programs.X, programs.Y_REG[:, :1], batch_size=30, epochs=1, verbose=0)
    moving_mean = inner.layers[1].get_weights()[2]
    np.testing.assert_allclose(moving_mean, 0.5 * programs.X.mean(0), rtol=1e-5)


def test_input_spec_is_checked_before_each_call():
    tf.keras.backend.clear_session()
    with pytest.raises(
        ValueError,
        match=r"Input 0 of layer d is incompatible with the layer: "
        r"expected min_ndim=2, found ndim=1. Full shape received: \[4\]",
    ):
        tf.keras.layers.Dense(2, name="d")(tf.keras.Input(batch_shape=(4,)))
    conv = tf.keras.layers.Conv2D(2, 3, name="c")
    conv(tf.keras.Input(shape=(8, 8, 3)))
    with pytest.raises(ValueError, match="expected axis -1 of input shape to have value 3"):
        conv(tf.keras.Input(shape=(8, 8, 4)))
    with pytest.raises(ValueError, match="expected ndim=4, found ndim=3"):
        conv(tf.keras.Input(shape=(8, 3)))


def test_graph_disconnected_names_the_layer_that_needs_the_input():
    tf.keras.backend.clear_session()
    a, b = tf.keras.Input(shape=(2,), name="a"), tf.keras.Input(shape=(2,), name="b")
    h = tf.keras.layers.Dense(2, name="h")(a)
    out = tf.keras.layers.Add(name="add")([h, b])
    with pytest.raises(
        ValueError,
        match=r'at layer "add"\. The following previous layers '
        r"were accessed without issue: \['h'\]",
    ):
        tf.keras.Model(a, out)
