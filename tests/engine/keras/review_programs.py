"""TF1 Keras behaviours users rely on, each a small program run with whichever ``tf`` it is
given: TensorFlow's ``compat.v1`` with the legacy Keras (recording ``keras_review_tf.npz``,
by ``tests/engine/fixtures/make_keras_review_fixtures.py``) or ``engine`` (in
``test_keras_review.py``). Each returns ``{key: array}``; errors are recorded as their type's
name. Weights come from a seeded generator and data is not shuffled unless a program says so,
so both runs compute the same numbers."""

from __future__ import annotations

import numpy as np

rs = np.random.RandomState(11)
X = rs.rand(30, 4).astype(np.float32)
Y_REG = (X @ rs.uniform(-1, 1, (4, 2))).astype(np.float32)
Y_CLS = (X[:, 0] + X[:, 1] > 1.0).astype(np.int64) + (X[:, 2] > 0.7)
SEQ = rs.rand(6, 5, 3).astype(np.float32)


def _set_weights(model, seed):
    r = np.random.RandomState(seed)
    model.set_weights(
        [
            r.uniform(0.2 if "variance" in w.name else -0.6, 0.6, w.shape.as_list()).astype(
                np.float32
            )
            for w in model.weights
        ]
    )


def _error(fn) -> str:
    """The name of the exception ``fn()`` raises, or "none"."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type is what is recorded
        return type(e).__name__
    return "none"


def _history(prefix: str, h) -> dict:
    out = {f"{prefix}_{k}": np.asarray(v, np.float32) for k, v in h.history.items()}
    out[f"{prefix}_history_keys"] = np.asarray(sorted(h.history))
    out[f"{prefix}_epoch"] = np.asarray(h.epoch)
    return out


def sequential_deferred(tf) -> dict:
    """Sequential without input_shape, built by fit; then predict with a partial last
    batch, evaluate metrics_names and weights' names."""
    tf.keras.backend.clear_session()
    layers = tf.keras.layers
    model = tf.keras.Sequential([layers.Dense(5, activation="relu"), layers.Dense(3)])
    out = {"defer_built_before": np.asarray(model.built)}
    model.compile(tf.keras.optimizers.SGD(0.1), "mse", metrics=["mae"])
    model.fit(X[:2], np.zeros((2, 3), np.float32), epochs=1, verbose=0)
    _set_weights(model, 1)
    h = model.fit(X, np.c_[Y_REG, Y_REG[:, :1]], batch_size=7, epochs=2, shuffle=False, verbose=0)
    out.update(_history("defer", h))
    out["defer_predict"] = model.predict(X, batch_size=8)
    out["defer_eval"] = np.asarray(
        model.evaluate(X, np.c_[Y_REG, Y_REG[:, :1]], batch_size=8, verbose=0)
    )
    out["defer_names"] = np.asarray(model.metrics_names)
    out["defer_weight_names"] = np.asarray([w.name for w in model.weights])
    out["defer_layer_names"] = np.asarray([layer.name for layer in model.layers])
    out["defer_count_params"] = np.asarray(model.count_params())
    return out


def nested_models(tf) -> dict:
    """A model called on a tensor inside another model, weights' order in nested models,
    trainable/non-trainable weights with BatchNormalization."""
    tf.keras.backend.clear_session()
    layers = tf.keras.layers
    inner_in = tf.keras.Input(shape=(4,))
    inner = tf.keras.Model(
        inner_in, layers.BatchNormalization()(layers.Dense(3)(inner_in)), name="inner"
    )
    x = tf.keras.Input(shape=(4,))
    y = layers.Dense(2, name="head")(inner(x))
    model = tf.keras.Model(x, y)
    seq = tf.keras.Sequential([inner, layers.Dense(1)])
    out = {
        "nest_weights": np.asarray([w.name for w in model.weights]),
        "nest_trainable": np.asarray([w.name for w in model.trainable_weights]),
        "nest_non_trainable": np.asarray([w.name for w in model.non_trainable_weights]),
        "nest_seq_weights": np.asarray([w.name for w in seq.weights]),
        "nest_shapes": np.asarray([str(w.shape) for w in model.get_weights()]),
        "nest_layers": np.asarray([layer.name for layer in model.layers]),
        "nest_count": np.asarray(model.count_params()),
        "nest_seq_output_shape": np.asarray(str(seq.output_shape)),
    }
    _set_weights(model, 2)
    model.compile(tf.keras.optimizers.SGD(0.05), "mse")
    h = model.fit(X, Y_REG, batch_size=10, epochs=2, shuffle=False, verbose=0)
    out.update(_history("nest", h))
    for i, w in enumerate(model.get_weights()):
        out[f"nest_w{i}"] = w
    out["nest_predict"] = model.predict(X[:5])
    return out


def freezing(tf) -> dict:
    """trainable=False before compile freezes; after compile it needs a recompile in TF1."""
    tf.keras.backend.clear_session()
    layers = tf.keras.layers
    d1 = layers.Dense(3, input_shape=(4,), name="d1")
    model = tf.keras.Sequential([d1, layers.Dense(2, name="d2")])
    _set_weights(model, 3)
    d1.trainable = False
    out = {"freeze_trainable": np.asarray([w.name for w in model.trainable_weights])}
    out["freeze_non_trainable"] = np.asarray([w.name for w in model.non_trainable_weights])
    out["freeze_weights"] = np.asarray([w.name for w in model.weights])
    model.compile(tf.keras.optimizers.SGD(0.1), "mse")
    model.fit(X, Y_REG, batch_size=10, epochs=1, shuffle=False, verbose=0)
    out["freeze_k1"] = model.get_weights()[0]
    out["freeze_k2"] = model.get_weights()[2]
    d1.trainable = True  # without recompiling, TF1 keeps training what compile saw
    model.fit(X, Y_REG, batch_size=10, epochs=1, shuffle=False, verbose=0)
    out["freeze_k1_after"] = model.get_weights()[0]
    model.compile(tf.keras.optimizers.SGD(0.1), "mse")
    model.fit(X, Y_REG, batch_size=10, epochs=1, shuffle=False, verbose=0)
    out["freeze_k1_recompiled"] = model.get_weights()[0]
    model.trainable = False
    out["freeze_model_off"] = np.asarray([w.name for w in model.trainable_weights])
    out["freeze_model_off_non"] = np.asarray([w.name for w in model.non_trainable_weights])
    out["freeze_model_off_all"] = np.asarray([w.name for w in model.weights])
    return out


def multi_output_dicts(tf) -> dict:
    """Losses, loss weights, metrics and weighted metrics as dicts by output name."""
    tf.keras.backend.clear_session()
    layers = tf.keras.layers
    x = tf.keras.Input(shape=(4,), name="x")
    h = layers.Dense(6, activation="tanh", name="h")(x)
    reg = layers.Dense(2, name="reg")(h)
    cls = layers.Dense(3, activation="softmax", name="cls")(h)
    model = tf.keras.Model(x, [reg, cls])
    _set_weights(model, 4)
    model.compile(
        tf.keras.optimizers.Adam(0.01),
        loss={"reg": "mse", "cls": "sparse_categorical_crossentropy"},
        loss_weights={"reg": 0.5, "cls": 2.0},
        metrics={"cls": ["accuracy", "sparse_top_k_categorical_accuracy"], "reg": "mae"},
        weighted_metrics={"reg": ["mse"]},
    )
    sw = np.linspace(0.5, 1.5, 30).astype(np.float32)
    hist = model.fit(
        {"x": X},
        {"reg": Y_REG, "cls": Y_CLS},
        sample_weight={"reg": sw, "cls": sw[::-1]},
        batch_size=8,
        epochs=2,
        shuffle=False,
        verbose=0,
        validation_split=0.2,
    )
    out = _history("mo", hist)
    out["mo_names"] = np.asarray(model.metrics_names)
    out["mo_eval"] = np.asarray(model.evaluate(X, [Y_REG, Y_CLS], batch_size=11, verbose=0))
    out["mo_eval_sw"] = np.asarray(
        model.evaluate(X, [Y_REG, Y_CLS], sample_weight=[sw, sw], batch_size=11, verbose=0)
    )
    return out


def class_weights(tf) -> dict:
    """class_weight with sparse labels and one-hot labels, and with sample_weight."""
    tf.keras.backend.clear_session()
    out = {}
    cw = {0: 1.0, 1: 3.0, 2: 0.5}
    for name, loss, y in [
        ("sparse", "sparse_categorical_crossentropy", Y_CLS),
        ("onehot", "categorical_crossentropy", np.eye(3, dtype=np.float32)[Y_CLS]),
    ]:
        model = tf.keras.Sequential([tf.keras.layers.Dense(3, "softmax", input_shape=(4,))])
        _set_weights(model, 5)
        model.compile(tf.keras.optimizers.SGD(0.2), loss, metrics=["acc"])
        h = model.fit(
            X,
            y,
            batch_size=10,
            epochs=2,
            shuffle=False,
            verbose=0,
            class_weight=cw,
            sample_weight=np.linspace(1, 2, 30).astype(np.float32),
        )
        out.update(_history(f"cw_{name}", h))
        out[f"cw_{name}_kernel"] = model.get_weights()[0]
    return out


def temporal_weights(tf) -> dict:
    """sample_weight_mode='temporal' with a (batch, time) weight on a TimeDistributed Dense."""
    tf.keras.backend.clear_session()
    layers = tf.keras.layers
    model = tf.keras.Sequential(
        [layers.TimeDistributed(layers.Dense(2), input_shape=(5, 3)), layers.Activation("tanh")]
    )
    _set_weights(model, 6)
    model.compile(
        tf.keras.optimizers.SGD(0.1),
        "mse",
        sample_weight_mode="temporal",
        metrics=["mae"],
        weighted_metrics=["mae"],
    )
    y = np.tanh(SEQ[..., :2] - SEQ[..., 1:])
    sw = np.tile(np.array([[1, 1, 0.5, 0, 2]], np.float32), (6, 1))
    h = model.fit(SEQ, y, sample_weight=sw, batch_size=4, epochs=2, shuffle=False, verbose=0)
    out = _history("temporal", h)
    out["temporal_names"] = np.asarray(model.metrics_names)
    out["temporal_eval"] = np.asarray(model.evaluate(SEQ, y, sample_weight=sw, verbose=0))
    return out


def masking(tf) -> dict:
    """Masks through Sequential: Masking -> LSTM, Embedding(mask_zero) -> GlobalAverage."""
    tf.keras.backend.clear_session()
    layers = tf.keras.layers
    seq = SEQ.copy()
    seq[0, 3:] = 0.0
    seq[2, 1:] = 0.0
    model = tf.keras.Sequential(
        [layers.Masking(0.0, input_shape=(5, 3)), layers.SimpleRNN(2), layers.Dense(1)]
    )
    _set_weights(model, 7)
    out = {"mask_rnn": model.predict(seq)}
    tokens = np.array([[3, 1, 0, 0], [2, 2, 2, 0], [1, 4, 2, 3]])
    emb = tf.keras.Sequential(
        [layers.Embedding(5, 2, mask_zero=True, input_length=4), layers.GlobalAveragePooling1D()]
    )
    _set_weights(emb, 8)
    out["mask_gap"] = emb.predict(tokens)
    inp = tf.keras.Input(shape=(4,))
    e = layers.Embedding(5, 2, mask_zero=True)(inp)
    m = tf.keras.Model(inp, e)
    out["mask_output_mask"] = np.asarray(m.output_mask is not None)
    return out


def callbacks_probe(tf, tmpdir: str) -> dict:
    """History, EarlyStopping baseline/mode/restore, ReduceLROnPlateau cooldown,
    ModelCheckpoint save_best_only with {epoch}/{val_loss} in the path, initial_epoch."""
    import os  # noqa: PLC0415

    tf.keras.backend.clear_session()
    layers = tf.keras.layers
    model = tf.keras.Sequential([layers.Dense(2, input_shape=(4,))])
    _set_weights(model, 9)
    model.compile(tf.keras.optimizers.SGD(0.05), "mse", metrics=["mae"])
    cb = tf.keras.callbacks
    # A baseline the first epoch beats: TF 1.15 and tf_keras 2 agree on that (they differ
    # when it is never beaten: TF 1.15 starts from best=baseline and stops after patience).
    stop = cb.EarlyStopping(monitor="val_loss", baseline=2.0, patience=1, mode="min", min_delta=0.3)
    h = model.fit(
        X[:20],
        Y_REG[:20],
        validation_data=(X[20:], Y_REG[20:]),
        epochs=6,
        batch_size=5,
        shuffle=False,
        verbose=0,
        callbacks=[stop],
    )
    out = _history("cb_stop", h)
    out["cb_stop_epoch"] = np.asarray(stop.stopped_epoch)
    _set_weights(model, 9)
    tf.keras.backend.set_value(model.optimizer.lr, 0.05)
    plateau = cb.ReduceLROnPlateau(
        monitor="loss", factor=0.5, patience=0, cooldown=2, min_delta=10.0, verbose=0
    )
    h = model.fit(X, Y_REG, epochs=6, batch_size=10, shuffle=False, verbose=0, callbacks=[plateau])
    out.update(_history("cb_plateau", h))
    pattern = os.path.join(tmpdir, "w-{epoch:02d}-{val_loss:.3f}.h5")
    ckpt = cb.ModelCheckpoint(
        pattern, monitor="val_loss", save_best_only=True, save_weights_only=True
    )
    _set_weights(model, 9)
    tf.keras.backend.set_value(model.optimizer.lr, 0.05)
    h = model.fit(
        X[:20],
        Y_REG[:20],
        validation_data=(X[20:], Y_REG[20:]),
        epochs=5,
        batch_size=5,
        initial_epoch=2,
        shuffle=False,
        verbose=0,
        callbacks=[ckpt],
    )
    out.update(_history("cb_ckpt", h))
    out["cb_ckpt_files"] = np.asarray(len(os.listdir(tmpdir)))
    _set_weights(model, 9)
    tf.keras.backend.set_value(model.optimizer.lr, 0.05)
    acc_stop = cb.EarlyStopping(monitor="mae", mode="auto", patience=0, min_delta=1.0)
    h = model.fit(X, Y_REG, epochs=4, batch_size=10, shuffle=False, verbose=0, callbacks=[acc_stop])
    out.update(_history("cb_auto", h))
    out["cb_auto_stopped"] = np.asarray(acc_stop.stopped_epoch)
    return out


def _callbacks(tf) -> dict:
    import tempfile  # noqa: PLC0415

    with tempfile.TemporaryDirectory() as d:
        return callbacks_probe(tf, d)


PROGRAMS = [
    sequential_deferred,
    nested_models,
    freezing,
    multi_output_dicts,
    class_weights,
    temporal_weights,
    masking,
    _callbacks,
]
