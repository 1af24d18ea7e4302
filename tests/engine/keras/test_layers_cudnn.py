"""``CuDNNLSTM`` and ``CuDNNGRU`` (TF 1.x Keras' GPU-only layers) on the engine: cuDNN's
weights give what TF's Keras computes with them (``keras_cudnn_tf.npz``, recorded through the
layers Keras converts cuDNN weights to), with TF's variable names and shapes."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures.make_keras_cudnn_fixtures import CASES, FEATURES, STEPS, UNITS
from tests.engine.fixtures.oracle import load

REC = load("keras_cudnn_tf.npz")
K = tf.keras.backend


def test_variable_names_and_shapes_are_tfs():
    K.clear_session()
    x = tf.keras.Input((STEPS, FEATURES))
    lstm, gru = tf.keras.layers.CuDNNLSTM(UNITS), tf.keras.layers.CuDNNGRU(UNITS)
    lstm(x), gru(x)
    names = [f"{w.name}:{w.shape.as_list()}" for w in lstm.weights + gru.weights]
    assert names == REC["cudnn_weight_names"].tolist()


@pytest.mark.parametrize("case", sorted(CASES))
def test_outputs_match_tensorflow(case):
    seq, state, back = CASES[case]
    K.clear_session()
    x = tf.keras.Input((STEPS, FEATURES))
    kw = dict(return_sequences=seq, return_state=state, go_backwards=back)
    lstm, gru = tf.keras.layers.CuDNNLSTM(UNITS, **kw), tf.keras.layers.CuDNNGRU(UNITS, **kw)
    outs = [lstm(x), gru(x)]
    lstm.set_weights([REC[f"lstm_w{i}"] for i in range(3)])
    gru.set_weights([REC[f"gru_w{i}"] for i in range(3)])
    flat = [t for o in outs for t in (o if isinstance(o, list) else [o])]
    values = K.get_session().run(flat, {x: REC["x"]})
    n = len(values) // 2
    for i, v in enumerate(values[:n]):
        np.testing.assert_allclose(v, REC[f"{case}_lstm_{i}"], rtol=1e-5, atol=1e-6)
    for i, v in enumerate(values[n:]):
        np.testing.assert_allclose(v, REC[f"{case}_gru_{i}"], rtol=1e-5, atol=1e-6)


def test_cudnn_layers_train_and_refuse_what_cudnn_lacks():
    K.clear_session()
    model = tf.keras.Sequential(
        [tf.keras.layers.CuDNNGRU(4, input_shape=(STEPS, FEATURES)), tf.keras.layers.Dense(1)]
    )
    model.compile("adam", "mse")
    h = model.fit(REC["x"], np.ones((2, 1), np.float32), epochs=3, verbose=0)
    assert h.history["loss"][2] < h.history["loss"][0]
    with pytest.raises(TypeError, match="keyword argument not understood: activation"):
        tf.keras.layers.CuDNNLSTM(3, activation="relu")
    with pytest.raises(TypeError, match="does not support masking"):
        masked = tf.keras.layers.Masking()(tf.keras.Input((STEPS, FEATURES)))
        tf.keras.layers.CuDNNLSTM(3)(masked)


def test_model_tf_saved_with_a_cudnn_lstm_loads_and_predicts():
    pytest.importorskip("h5py", reason="Keras HDF5 files need h5py: pip install flowserve[keras]")
    K.clear_session()
    path = load.__globals__["FIXTURES"] / "keras_cudnn_lstm.h5"
    model = tf.keras.models.load_model(str(path))
    assert type(model.layers[0]).__name__ == "CuDNNLSTM"
    np.testing.assert_allclose(model.predict(REC["x"]), REC["h5_predict"], rtol=1e-5, atol=1e-6)
