"""tf.keras behaviour around training that the TF recordings do not pin: error messages
for bad calls and data, the learning phase, Keras' session initializing what it created,
callbacks writing files real tools read, saving weights, the progress lines, datasets read
from Keras' cache and the numpy utilities."""

from __future__ import annotations

import contextlib
import csv
import io

import numpy as np
import pytest

import engine as tf

K = tf.keras.backend
layers = tf.keras.layers
X = np.random.RandomState(1).rand(20, 5).astype(np.float32)
Y = (X[:, 0] > 0.5).astype(np.int64)


def _model(compiled=True):
    K.clear_session()
    model = tf.keras.Sequential(
        [
            layers.Dense(4, activation="relu", input_shape=(5,)),
            layers.Dense(2, activation="softmax"),
        ]
    )
    if compiled:
        model.compile("sgd", "sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def test_calls_before_compile_and_bad_compile_arguments_say_what_is_wrong():
    model = _model(compiled=False)
    with pytest.raises(RuntimeError, match="must compile your model before training"):
        model.fit(X, Y)
    with pytest.raises(ValueError, match="Unknown loss function: 'nope'"):
        model.compile("sgd", "nope")
    with pytest.raises(ValueError, match="Unknown optimizer: 'fast'"):
        model.compile("fast", "mse")
    with pytest.raises(ValueError, match="Unknown metric function: 'precision_at_3'"):
        model.compile("sgd", "mse", metrics=["precision_at_3"])
    with pytest.raises(TypeError, match="Invalid keyword argument"):
        model.compile("sgd", "mse", bogus=1)
    with pytest.raises(ValueError, match="loss_weights"):
        model.compile("sgd", "mse", loss_weights=[1.0, 2.0])


def test_bad_data_is_refused_with_keras_messages():
    model = _model()
    with pytest.raises(
        ValueError,
        match=r"expected dense_input to have shape \(5,\) but got "
        r"array with shape \(4,\)",
    ):
        model.fit(X[:, :4], Y, verbose=0)
    with pytest.raises(
        ValueError,
        match="same number of samples as target arrays. Found 20 "
        "input samples and 19 target samples",
    ):
        model.fit(X, Y[:19], verbose=0)
    with pytest.raises(ValueError, match="Expected to see 1 array"):
        model.fit([X, X], Y, verbose=0)
    with pytest.raises(ValueError, match='No data provided for "dense_input"'):
        model.predict({"other": X})
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        model.fit(X, Y, batch_size=0, verbose=0)
    with pytest.raises(
        ValueError,
        match=r"classes \[1\] exist in the data but not in "
        "`class_weight`",
    ):
        model.fit(X, Y, class_weight={0: 1.0}, verbose=0)
    with pytest.raises(ValueError, match="validation_data, it must contain 2"):
        model.fit(X, Y, validation_data=(X,), verbose=0)
    with pytest.raises(TypeError, match="Unrecognized keyword arguments"):
        model.fit(X, Y, verbose=0, bogus=True)
    with pytest.raises(ValueError, match="set_weights"):
        model.set_weights([np.zeros((5, 4))])
    with pytest.raises(ValueError, match="not compatible with provided weight shape"):
        model.set_weights([np.zeros((4, 4)), np.zeros(4), np.zeros((4, 2)), np.zeros(2)])


def test_model_construction_errors():
    K.clear_session()
    a = tf.keras.Input((3,))
    b = tf.keras.Input((3,))
    with pytest.raises(ValueError, match="Graph disconnected"):
        tf.keras.Model(a, layers.Dense(1)(b))
    with pytest.raises(ValueError, match="must come from `tf.keras.Input`"):
        tf.keras.Model(tf.placeholder(tf.float32, [None, 3]), layers.Dense(1)(a))
    seq = tf.keras.Sequential([layers.Dense(2, name="same", input_shape=(3,))])
    with pytest.raises(ValueError, match="should have unique names"):
        seq.add(layers.Dense(2, name="same"))
    with pytest.raises(TypeError, match="must be an instance of class Layer"):
        seq.add("dense")
    with pytest.raises(TypeError, match="Keyword argument not understood: units_"):
        layers.Dense(2, units_=3)
    with pytest.raises(ValueError, match="positive integer"):
        layers.Dense(0)


def test_class_and_sample_weights_scale_the_loss():
    model = _model()
    weights = model.get_weights()
    plain = model.evaluate(X, Y, verbose=0)[0]
    model.compile("sgd", "sparse_categorical_crossentropy")
    doubled = model.test_on_batch(X, Y, sample_weight=np.full(20, 2.0))
    np.testing.assert_allclose(doubled, 2 * plain, rtol=1e-6)
    model.set_weights(weights)
    # Class 0 weighted 0: the loss is class 1's share of the plain per-sample losses.
    per_sample = K.get_session().run(
        tf.keras.losses.sparse_categorical_crossentropy(Y, model.outputs[0]), {model.inputs[0]: X}
    )
    h = model.fit(X, Y, class_weight={0: 0.0, 1: 1.0}, batch_size=20, epochs=1, verbose=0)
    np.testing.assert_allclose(h.history["loss"][0], per_sample[Y == 1].sum() / 20, rtol=1e-6)


def test_learning_phase_switches_dropout_and_fit_feeds_it():
    K.clear_session()
    inp = tf.keras.Input((1000,))
    out = layers.Dropout(0.5)(inp)
    f = K.function([inp, K.learning_phase()], [out])
    ones = np.ones((1, 1000), np.float32)
    np.testing.assert_array_equal(f([ones, False])[0], ones)
    trained = f([ones, True])[0]
    assert set(np.unique(trained)) == {0.0, 2.0}
    assert 0.4 < (trained == 0).mean() < 0.6


def test_keras_session_initializes_what_keras_created_later():
    K.clear_session()
    d1 = layers.Dense(3, kernel_initializer="ones")
    x = tf.placeholder(tf.float32, [None, 2])
    y = d1(x)
    sess = K.get_session()
    np.testing.assert_array_equal(sess.run(y, {x: np.ones((1, 2))}), [[2, 2, 2]])
    d2 = layers.Dense(1, kernel_initializer="ones", bias_initializer="ones")
    z = d2(y)
    assert K.get_session() is sess
    np.testing.assert_array_equal(sess.run(z, {x: np.ones((1, 2))}), [[7]])
    K.set_value(d2.bias, [10.0])
    np.testing.assert_array_equal(K.get_value(d2.bias), [10.0])


def test_verbose_lines_are_tf1_keras_lines():
    model = _model()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        model.fit(X, Y, epochs=2, batch_size=8, verbose=2, validation_split=0.25)
        model.evaluate(X, Y, verbose=1)
    lines = out.getvalue().splitlines()
    assert lines[0] == "Train on 15 samples, validate on 5 samples"
    assert lines[1] == "Epoch 1/2"
    assert lines[2].startswith("15/15 - ") and " - loss: " in lines[2]
    assert " - acc: " in lines[2] and " - val_loss: " in lines[2] and " - val_acc: " in lines[2]
    assert lines[-1].startswith("20/20 [==============================] - ")


def test_callbacks_write_files_their_readers_load(tmp_path):
    ea = pytest.importorskip(
        "tensorboard.backend.event_processing.event_accumulator",
        reason="TensorBoard reads the event files: pip install -e .[test]",
    )
    model = _model()
    log = tmp_path / "log.csv"
    ckpt = tmp_path / "ckpt-{epoch:02d}"
    cbs = [
        tf.keras.callbacks.CSVLogger(str(log)),
        tf.keras.callbacks.ModelCheckpoint(str(ckpt), monitor="loss"),
        tf.keras.callbacks.TensorBoard(str(tmp_path / "tb")),
        tf.keras.callbacks.ReduceLROnPlateau(
            monitor="loss", factor=0.5, patience=0, min_delta=10.0
        ),
    ]
    h = model.fit(X, Y, epochs=3, batch_size=5, verbose=0, callbacks=cbs)
    rows = list(csv.DictReader(log.open()))
    assert [r["epoch"] for r in rows] == ["0", "1", "2"]
    np.testing.assert_allclose([float(r["loss"]) for r in rows], h.history["loss"], rtol=1e-6)
    # Each epoch logs the rate it trained with; the cut applies from the next epoch on.
    np.testing.assert_allclose(h.history["lr"], [0.01, 0.01, 0.005], rtol=1e-6)
    acc = ea.EventAccumulator(str(tmp_path / "tb"))
    acc.Reload()
    assert {"loss", "acc"} <= set(acc.Tags()["scalars"])
    np.testing.assert_allclose([e.value for e in acc.Scalars("loss")], h.history["loss"], rtol=1e-6)
    final = model.get_weights()
    model.set_weights([np.zeros_like(w) for w in final])
    model.load_weights(str(tmp_path / "ckpt-03"))
    for got, want in zip(model.get_weights(), final):
        np.testing.assert_array_equal(got, want)


def test_terminate_on_nan_and_early_stopping_restore_best():
    model = _model()
    model.compile("sgd", lambda t, p: K.mean(K.log(p - 10.0)))
    h = model.fit(
        X,
        tf.keras.utils.to_categorical(Y, 2),
        epochs=5,
        batch_size=4,
        verbose=0,
        callbacks=[tf.keras.callbacks.TerminateOnNaN()],
    )
    assert len(h.epoch) == 1
    model = _model()
    stop = tf.keras.callbacks.EarlyStopping(
        monitor="loss", patience=1, min_delta=1e9, restore_best_weights=True
    )
    h = model.fit(X, Y, epochs=10, verbose=0, callbacks=[stop])
    assert h.epoch == [0, 1]


def test_datasets_come_from_keras_cache_only(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="does not download"):
        tf.keras.datasets.mnist.load_data()
    (tmp_path / "datasets").mkdir()
    x = np.arange(2 * 28 * 28, dtype=np.uint8).reshape(2, 28, 28)
    np.savez(
        tmp_path / "datasets" / "mnist.npz",
        x_train=x,
        y_train=np.array([3, 4]),
        x_test=x[:1],
        y_test=np.array([5]),
    )
    (xt, yt), (xv, yv) = tf.keras.datasets.mnist.load_data()
    np.testing.assert_array_equal(xt, x)
    assert yt.tolist() == [3, 4] and yv.tolist() == [5] and xv.shape == (1, 28, 28)
    with pytest.raises(NotImplementedError, match="pickles"):
        tf.keras.datasets.imdb.load_data()


def test_numpy_utilities():
    np.testing.assert_array_equal(
        tf.keras.utils.to_categorical([0, 2, 1], 3), np.eye(3, dtype=np.float32)[[0, 2, 1]]
    )
    with pytest.raises(ValueError, match="out of range"):
        tf.keras.utils.to_categorical([3], 3)
    pad = tf.keras.preprocessing.sequence.pad_sequences
    np.testing.assert_array_equal(pad([[1, 2, 3], [4]], maxlen=2), [[2, 3], [0, 4]])
    np.testing.assert_array_equal(
        pad([[1, 2, 3], [4]], maxlen=2, padding="post", truncating="post"), [[1, 2], [4, 0]]
    )
    with pytest.raises(ValueError, match='Padding type "middle"'):
        pad([[1]], padding="middle")


def test_training_argument_reaches_only_layers_that_take_it():
    K.clear_session()
    x = tf.keras.Input((4,))
    h = layers.Dense(4, kernel_initializer="ones")(x, training=True)  # Dense takes no flag
    out = layers.Dropout(0.5)(h, training=True)  # always drops, whatever the phase
    values = K.get_session().run(out, {x: np.ones((64, 4), np.float32)})
    assert set(np.unique(values)) <= {0.0, 8.0} and (values == 0).any()


def test_keras_submodules_import_as_tf1_programs_write_them():
    import importlib  # noqa: PLC0415 - the imports under test

    names = {
        "models": ["Sequential", "Model", "load_model", "model_from_json", "clone_model"],
        "layers": ["Dense", "LSTM", "Conv2D"],
        "optimizers": ["Adam", "RMSprop"],
        "callbacks": ["EarlyStopping", "ModelCheckpoint"],
        "preprocessing.sequence": ["pad_sequences", "skipgrams"],
        "preprocessing.text": ["Tokenizer"],
        "preprocessing.image": ["ImageDataGenerator"],
        "utils": ["to_categorical"],
        "constraints": ["max_norm"],
        "experimental": ["export_saved_model"],
        "estimator": ["model_to_estimator"],
        "backend": ["get_session", "mean"],
    }
    for sub, attrs in names.items():
        module = importlib.import_module(f"engine.keras.{sub}")
        namespace = tf.keras
        for part in sub.split("."):
            namespace = getattr(namespace, part)
        assert namespace is module, sub
        for attr in attrs:
            assert getattr(module, attr) is not None, (sub, attr)
    assert importlib.import_module("engine.keras.models").Sequential is tf.keras.Sequential
