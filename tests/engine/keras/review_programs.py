"""TF1 Keras behaviours users rely on, each a small program run with whichever ``tf`` it is
given: TensorFlow's ``compat.v1`` with the legacy Keras (recording ``keras_review_tf.npz``,
by ``tests/engine/fixtures/make_keras_review_fixtures.py``) or ``engine`` (in
``test_keras_review.py``). Each returns ``{key: array}``; errors are recorded as their type's
name. Weights come from a seeded generator and data is not shuffled unless a program says so,
so both runs compute the same numbers."""

from __future__ import annotations

import os
import tempfile

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


def _callbacks_in(tf, tmpdir: str) -> dict:
    """History, EarlyStopping baseline/mode/restore, ReduceLROnPlateau cooldown,
    ModelCheckpoint save_best_only with {epoch}/{val_loss} in the path, initial_epoch."""
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
    out["cb_ckpt_files"] = np.asarray(sorted(os.listdir(tmpdir)))
    _set_weights(model, 9)
    tf.keras.backend.set_value(model.optimizer.lr, 0.05)
    acc_stop = cb.EarlyStopping(monitor="mae", mode="auto", patience=0, min_delta=1.0)
    h = model.fit(X, Y_REG, epochs=4, batch_size=10, shuffle=False, verbose=0, callbacks=[acc_stop])
    out.update(_history("cb_auto", h))
    out["cb_auto_stopped"] = np.asarray(acc_stop.stopped_epoch)
    return out


def callbacks(tf) -> dict:
    """The callbacks' program, writing its checkpoints to a temporary directory."""
    with tempfile.TemporaryDirectory() as d:
        return _callbacks_in(tf, d)


def backend_probe(tf) -> dict:
    """K.function with updates, the learning phase (fed, and fixed by set_learning_phase),
    Dense on rank-3 inputs, Reshape/Flatten/Permute shapes."""
    tf.keras.backend.clear_session()
    K = tf.keras.backend
    layers = tf.keras.layers
    x = K.placeholder(shape=(None, 3))
    v = K.variable(np.zeros(3, np.float32))
    f = K.function([x], [K.sum(x, axis=1)], updates=[K.update_add(v, K.mean(x, axis=0))])
    out = {"kb_fn": f([X[:4, :3]])[0]}
    f([X[4:8, :3]])
    out["kb_var"] = K.get_value(v)
    drop_in = tf.keras.Input(shape=(4,))
    drop = layers.Dropout(0.5)(drop_in)
    g = K.function([drop_in, K.learning_phase()], [drop])
    out["kb_phase0"] = g([X[:3], 0])[0]
    out["kb_phase_kept"] = np.asarray(
        np.count_nonzero(g([np.ones((50, 4), np.float32), 1])[0] == 0) > 0
    )
    inp = tf.keras.Input(shape=(5, 3))
    dense = layers.Dense(2, name="d3")
    y3 = dense(inp)
    m3 = tf.keras.Model(
        inp,
        [
            y3,
            layers.Flatten()(y3),
            layers.Permute((2, 1))(y3),
            layers.Reshape((-1, 5))(y3),
            layers.Reshape((10,))(y3),
        ],
    )
    _set_weights(m3, 12)
    outs = m3.predict(SEQ)
    for i, o in enumerate(outs):
        out[f"kb_rank3_{i}"] = o
    out["kb_rank3_shapes"] = np.asarray([str(K.int_shape(t)) for t in m3.outputs])
    out["kb_kernel_shape"] = np.asarray(str(K.int_shape(dense.kernel)))
    flat = layers.Flatten()(tf.keras.Input(shape=(None, 3)))
    out["kb_flat_unknown"] = np.asarray(str(K.int_shape(flat)))
    out["kb_reshape_bad"] = np.asarray(
        _error(lambda: layers.Reshape((4, 4))(tf.keras.Input(shape=(5, 3))))
    )
    out["kb_reshape_two_unknown"] = np.asarray(
        _error(lambda: layers.Reshape((-1, -1))(tf.keras.Input(shape=(5, 3))))
    )
    out["kb_permute_bad"] = np.asarray(_error(lambda: layers.Permute((0, 1))))
    K.set_learning_phase(1)
    d_in = tf.keras.Input(shape=(4,))
    d_out = layers.Dropout(0.5)(d_in)
    h = K.function([d_in], [d_out])
    out["kb_fixed_phase_zeros"] = np.asarray(
        np.count_nonzero(h([np.ones((50, 4), np.float32)])[0] == 0) > 0
    )
    out["kb_phase_value"] = np.asarray(K.learning_phase())
    K.set_learning_phase(0)
    return out


def loss_reductions(tf) -> dict:
    """Loss objects' reductions with rank-2 targets and sample weights of rank 1 and 2."""
    tf.keras.backend.clear_session()
    L = tf.keras.losses
    r = np.random.RandomState(13)
    t = r.rand(4, 3, 2).astype(np.float32)
    p = r.rand(4, 3, 2).astype(np.float32)
    w1 = r.rand(4).astype(np.float32)
    w2 = r.rand(4, 3).astype(np.float32)
    fetch = {}
    for red in ["sum_over_batch_size", "sum", "none"]:
        fetch[f"lr_mse_{red}_w1"] = L.MeanSquaredError(reduction=red)(t, p, sample_weight=w1)
        fetch[f"lr_mse_{red}_w2"] = L.MeanSquaredError(reduction=red)(t, p, sample_weight=w2)
        fetch[f"lr_mae_{red}_scalar"] = L.MeanAbsoluteError(reduction=red)(t, p, sample_weight=2.0)
    onehot = np.eye(3, dtype=np.float32)[r.randint(0, 3, (4, 5))]
    probs = r.rand(4, 5, 3).astype(np.float32) + 0.1
    probs /= probs.sum(-1, keepdims=True)
    fetch["lr_cce_w2"] = L.CategoricalCrossentropy()(onehot, probs, sample_weight=r.rand(4, 5))
    fetch["lr_scce_rank2"] = L.SparseCategoricalCrossentropy()(
        np.argmax(onehot, -1), probs, sample_weight=r.rand(4, 5)
    )
    fetch["lr_bce_w1"] = L.BinaryCrossentropy(label_smoothing=0.2)(onehot, probs, sample_weight=w1)
    fetch["lr_fn_mse_rank3"] = L.mse(t, p)
    out = dict(tf.keras.backend.get_session().run(fetch))
    out["lr_bad_reduction"] = np.asarray(_error(lambda: L.MeanSquaredError(reduction="mean")))
    return out


def loops_probe(tf) -> dict:
    """validation_split with shuffle=True (the split is taken before shuffling),
    batch_size defaults, evaluate/predict with partial last batches, predict on a
    multi-output model, History.params, errors of mismatched data."""
    tf.keras.backend.clear_session()
    layers = tf.keras.layers
    model = tf.keras.Sequential([layers.Dense(2, input_shape=(4,))])
    _set_weights(model, 14)
    model.compile(tf.keras.optimizers.SGD(0.0), "mse", metrics=["mae"])
    h = model.fit(X, Y_REG, epochs=2, validation_split=0.3, shuffle=True, verbose=0)
    out = _history("lp", h)
    out["lp_params"] = np.asarray(sorted(f"{k}={v}" for k, v in h.params.items()))
    out["lp_eval_default"] = np.asarray(model.evaluate(X, Y_REG, verbose=0))
    out["lp_eval_7"] = np.asarray(model.evaluate(X, Y_REG, batch_size=7, verbose=0))
    out["lp_predict_4"] = model.predict(X, batch_size=4)
    out["lp_predict_single"] = model.predict(X[:1])
    out["lp_err_len"] = np.asarray(_error(lambda: model.fit(X, Y_REG[:10], verbose=0)))
    out["lp_err_shape"] = np.asarray(_error(lambda: model.fit(X[:, :3], Y_REG, verbose=0)))
    out["lp_err_target"] = np.asarray(_error(lambda: model.fit(X, Y_REG[:, :1], verbose=0)))
    out["lp_err_uncompiled"] = np.asarray(
        _error(lambda: tf.keras.Sequential([layers.Dense(1, input_shape=(4,))]).fit(X, Y_REG))
    )
    out["lp_err_eval_uncompiled"] = np.asarray(
        _error(lambda: tf.keras.Sequential([layers.Dense(1, input_shape=(4,))]).evaluate(X, Y_REG))
    )
    out["lp_predict_uncompiled"] = tf.keras.Sequential(
        [layers.Dense(1, input_shape=(4,), kernel_initializer="ones")]
    ).predict(X[:3])
    # Recompiled first: TF1's stateful metrics would otherwise carry evaluate's totals
    # into train_on_batch's metric values (the engine's metrics are per batch).
    model.compile(tf.keras.optimizers.SGD(0.0), "mse", metrics=["mae"])
    tob = model.train_on_batch(X[:5], Y_REG[:5])
    out["lp_tob"] = np.asarray(tob)
    out["lp_tob_type"] = np.asarray(type(tob).__name__)
    out["lp_eval_type"] = np.asarray(type(model.evaluate(X, Y_REG, verbose=0)).__name__)
    return out


def summaries(tf) -> dict:
    """summary() of a Sequential, a nested functional model and a multi-input model."""
    tf.keras.backend.clear_session()
    layers = tf.keras.layers
    lines = []
    seq = tf.keras.Sequential(
        [layers.Dense(4, input_shape=(3,), name="a"), layers.Dropout(0.1), layers.Dense(2)],
        name="seq",
    )
    seq.summary(print_fn=lines.append)
    i1 = tf.keras.Input(shape=(3,), name="i1")
    i2 = tf.keras.Input(shape=(2,), name="i2")
    cat = layers.Concatenate(name="cat")([seq(i1), i2])
    bn = layers.BatchNormalization(name="bn")(cat)
    model = tf.keras.Model([i1, i2], [layers.Dense(1, name="o1")(bn), bn], name="outer")
    model.layers[1].trainable = False
    model.summary(print_fn=lines.append)
    small = []
    model.summary(line_length=70, positions=[0.4, 0.7, 0.85, 1.0], print_fn=small.append)
    # tf_keras 2 prints a newer layout than TF 1.15 (the engine's); the rows' order and the
    # totals are the same in both.
    return {
        "sum_rows": np.asarray([_row_name(line) for line in lines if _row_name(line)]),
        "sum_totals": np.asarray(
            [
                int(line.split(":")[1].split()[0].replace(",", ""))
                for line in lines + small
                if line.split(":")[0].endswith("params")
            ]
        ),
        "sum_count": np.asarray(model.count_params()),
        "sum_layers": np.asarray([layer.name for layer in model.layers]),
        "sum_weights": np.asarray([w.name for w in model.weights]),
    }


def _row_name(line: str) -> str:
    """The layer's name of a summary row ("name (Type)"), or ""."""
    words = line.split()
    if (
        len(words) > 1
        and words[1].startswith("(")
        and words[1].endswith(")")
        and (words[0] != "Layer")
    ):
        return words[0]
    return ""


PROGRAMS = [
    sequential_deferred,
    nested_models,
    freezing,
    multi_output_dicts,
    class_weights,
    temporal_weights,
    masking,
    callbacks,
    backend_probe,
    loss_reductions,
    loops_probe,
    summaries,
]
