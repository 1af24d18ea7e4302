"""Small programs distilled from Keras 2.x's example scripts (the VAEs, siamese and
transfer-learning MNIST, the CIFAR-10 CNN/ResNet, conv-LSTM, AC-GAN, SWWAE, Net2Net, filter
visualization, seq2seq): each runs with ``tf`` either TF1's Keras (the fixture script) or the
engine (the tests), with fixed weights, so that what they compute can be compared."""

from __future__ import annotations

import contextlib
import io
import os
import tempfile

import numpy as np

from tests.engine.keras.review_programs import _error, _history, _set_weights

rs = np.random.RandomState(2)
X8 = rs.rand(12, 8).astype(np.float32)
Y3 = rs.rand(12, 3).astype(np.float32)


def add_loss_only(tf) -> dict:
    """The VAE pattern: ``compile`` without a loss, the whole objective from ``add_loss``;
    fit and evaluate without targets, ``validation_data=(x, None)``; a two-output model
    with a loss on one output only, whose targets alone are fed."""
    tf.keras.backend.clear_session()
    K = tf.keras.backend
    layers = tf.keras.layers
    inp = tf.keras.Input(shape=(8,))
    h = layers.Dense(4, activation="tanh")(inp)
    out = layers.Dense(8, activation="sigmoid")(h)
    model = tf.keras.Model(inp, out)
    model.add_loss(K.mean(K.sum(K.square(inp - out), axis=-1)) + 0.1 * K.mean(K.square(h)))
    model.compile(tf.keras.optimizers.SGD(0.1))
    _set_weights(model, 21)
    res = {
        "al_names": np.asarray(model.metrics_names),
        "al_eval0": np.asarray(model.evaluate(X8, verbose=0)),
        "al_tob": np.asarray(model.train_on_batch(X8[:4])),
        "al_y_err": np.asarray(_error(lambda: model.fit(X8, Y3, verbose=0))),
    }
    hist = model.fit(
        X8, batch_size=4, epochs=2, shuffle=False, verbose=0, validation_data=(X8, None)
    )
    res.update(_history("al", hist))
    res["al_predict"] = model.predict(X8[:3])
    two = tf.keras.Model(inp, [out, layers.Dense(3, name="aux")(h)])
    two.add_loss(0.5 * K.mean(K.square(out - inp)))
    two.compile(tf.keras.optimizers.SGD(0.1), loss=[None, "mse"], metrics=["mae"])
    _set_weights(two, 22)
    res["al_two_names"] = np.asarray(two.metrics_names)
    res["al_two_eval"] = np.asarray(two.evaluate(X8, Y3, verbose=0))
    hist = two.fit(X8, Y3, batch_size=6, epochs=2, shuffle=False, verbose=0)
    res.update(_history("al2", hist))
    bare = tf.keras.Model(inp, out)
    res["al_noloss_err"] = np.asarray(_error(lambda: bare.compile("sgd")))
    return res


def siamese_contrastive(tf) -> dict:
    """mnist_siamese: one base network shared by two inputs, a ``Lambda`` distance with an
    ``output_shape`` function, the contrastive loss, and a metric of ``K.mean`` over a
    boolean tensor (Keras casts booleans to floatx in mean/var/std, anything to bool in
    any/all)."""
    tf.keras.backend.clear_session()
    K = tf.keras.backend
    layers = tf.keras.layers

    def distance(v):
        a, b = v
        return K.sqrt(K.maximum(K.sum(K.square(a - b), axis=1, keepdims=True), K.epsilon()))

    def contrastive(y_true, y_pred):
        return K.mean(y_true * K.square(y_pred) + (1 - y_true) * K.square(K.maximum(1 - y_pred, 0)))

    def accuracy(y_true, y_pred):
        return K.mean(K.equal(y_true, K.cast(y_pred < 0.5, y_true.dtype)))

    base_in = tf.keras.Input(shape=(8,))
    base = tf.keras.Model(base_in, layers.Dense(5, activation="relu")(base_in))
    a, b = tf.keras.Input(shape=(8,)), tf.keras.Input(shape=(8,))
    dist = layers.Lambda(distance, output_shape=lambda s: (s[0][0], 1))([base(a), base(b)])
    model = tf.keras.Model([a, b], dist)
    model.compile(loss=contrastive, optimizer=tf.keras.optimizers.RMSprop(0.01), metrics=[accuracy])
    _set_weights(model, 23)
    pairs_y = (np.arange(12) % 2).astype(np.float32)
    hist = model.fit([X8, X8[::-1]], pairs_y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    res = _history("sc", hist)
    res["sc_predict"] = model.predict([X8[:4], X8[4:8]])
    flags = K.constant([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0]]) > 0.5
    f = K.function(
        [],
        [
            K.mean(flags),
            K.var(flags),
            K.std(flags, axis=0),
            K.any(X8[:2]),
            K.all(X8[:2] - X8[:2], axis=1),
        ],
    )
    res.update({f"sc_bool_{i}": v for i, v in enumerate(f([]))})
    return res


def checkpoint_full_model(tf) -> dict:
    """cifar10_resnet's ModelCheckpoint (save_best_only, verbose=1, the default
    save_weights_only=False): the whole model is saved, as HDF5 even without an .h5 name, and
    an epoch that does not improve says so; ``load_weights`` reads such a file."""
    tf.keras.backend.clear_session()
    layers = tf.keras.layers
    model = tf.keras.Sequential([layers.Dense(3, activation="softmax", input_shape=(8,))])
    model.compile(tf.keras.optimizers.Adam(0.05), "categorical_crossentropy", ["accuracy"])
    _set_weights(model, 24)
    y = np.eye(3, dtype=np.float32)[np.arange(12) % 3]
    with tempfile.TemporaryDirectory() as d:
        ckpt = tf.keras.callbacks.ModelCheckpoint(
            os.path.join(d, "m-{epoch:02d}"), monitor="val_acc", verbose=1, save_best_only=True
        )
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            model.fit(
                X8,
                y,
                validation_data=(X8[:6], y[:6]),
                epochs=4,
                batch_size=6,
                shuffle=False,
                verbose=0,
                callbacks=[ckpt],
            )
        text = out.getvalue()
        files = sorted(os.listdir(d))
        last = os.path.join(d, files[-1])
        loaded = tf.keras.models.load_model(last)
        fresh = tf.keras.Sequential([layers.Dense(3, activation="softmax", input_shape=(8,))])
        fresh.load_weights(last)
        res = {
            "ck_files": np.asarray(files),
            "ck_improved": np.asarray(text.count("val_acc improved from")),
            "ck_not_improved": np.asarray(text.count("val_acc did not improve from")),
            "ck_loaded_predict": loaded.predict(X8[:3]),
            "ck_weights_predict": fresh.predict(X8[:3]),
            "ck_loaded_opt": np.asarray(type(loaded.optimizer).__name__),
        }
    return res


def conv_lstm(tf) -> dict:
    """conv_lstm: stacked ConvLSTM2D (return_sequences, 'same' padding) with batch norm and a
    Conv3D head, trained with binary cross-entropy; then 'valid' padding, strides, the last
    state, go_backwards and return_state; the weights' names and shapes and the config."""
    tf.keras.backend.clear_session()
    layers = tf.keras.layers
    rs = np.random.RandomState(5)
    movies = (rs.rand(4, 3, 6, 6, 1) > 0.6).astype(np.float32)
    seq = tf.keras.Sequential(
        [
            layers.ConvLSTM2D(
                3, (3, 3), input_shape=(None, 6, 6, 1), padding="same", return_sequences=True
            ),
            layers.BatchNormalization(),
            layers.ConvLSTM2D(2, (3, 3), padding="same", return_sequences=True),
            layers.Conv3D(1, (3, 3, 3), activation="sigmoid", padding="same"),
        ]
    )
    seq.compile(loss="binary_crossentropy", optimizer=tf.keras.optimizers.SGD(0.5))
    _set_weights(seq, 25)
    res = {
        # TF 1.15 names the layer conv_lst_m2d (its to_snake_case, the engine's), TF 2's
        # legacy Keras conv_lstm2d.
        "cl_names": np.asarray(
            [w.name.replace("conv_lst_m2d", "conv_lstm2d") for w in seq.weights]
        ),
        "cl_shapes": np.asarray([str(w.shape.as_list()) for w in seq.weights]),
        "cl_out_shape": np.asarray(str(seq.output_shape)),
        "cl_predict": seq.predict(movies),
    }
    hist = seq.fit(movies, movies, batch_size=2, epochs=2, shuffle=False, verbose=0)
    res.update(_history("cl", hist))
    inp = tf.keras.Input(shape=(3, 7, 6, 2))
    layer = layers.ConvLSTM2D(
        2, 3, strides=(2, 1), go_backwards=True, return_state=True, recurrent_activation="sigmoid"
    )
    out, h, c = layer(inp)
    model = tf.keras.Model(inp, [out, h, c])
    _set_weights(model, 26)
    x = rs.rand(2, 3, 7, 6, 2).astype(np.float32)
    for i, v in enumerate(model.predict(x)):
        res[f"cl_state_{i}"] = v
    cfg = layer.get_config()
    res["cl_config_keys"] = np.asarray(sorted(cfg))
    res["cl_config"] = np.asarray(
        [
            f"{k}={cfg[k]}"
            for k in (
                "filters",
                "kernel_size",
                "strides",
                "padding",
                "return_state",
                "go_backwards",
                "unit_forget_bias",
            )
        ]
    )
    return res


def lstm_seq2seq(tf) -> dict:
    """lstm_seq2seq: the decoder LSTM starts from the encoder's states (Keras tensors given
    as ``initial_state`` become inputs of the layer's node), the model saved to HDF5 and
    loaded back, and the inference models built from the same layers with Input states."""
    tf.keras.backend.clear_session()
    layers = tf.keras.layers
    rs = np.random.RandomState(7)
    enc_x = rs.rand(6, 4, 5).astype(np.float32)
    dec_x = rs.rand(6, 3, 6).astype(np.float32)
    dec_y = np.eye(6, dtype=np.float32)[rs.randint(0, 6, (6, 3))]
    enc_in = tf.keras.Input(shape=(None, 5))
    _, h, c = layers.LSTM(4, return_state=True)(enc_in)
    dec_in = tf.keras.Input(shape=(None, 6))
    dec_lstm = layers.LSTM(4, return_sequences=True, return_state=True)
    dec_seq, _, _ = dec_lstm(dec_in, initial_state=[h, c])
    dense = layers.Dense(6, activation="softmax")
    model = tf.keras.Model([enc_in, dec_in], dense(dec_seq))
    model.compile(tf.keras.optimizers.RMSprop(0.01), "categorical_crossentropy", ["accuracy"])
    _set_weights(model, 27)
    hist = model.fit([enc_x, dec_x], dec_y, batch_size=3, epochs=2, shuffle=False, verbose=0)
    res = _history("s2", hist)
    node = model.get_config()["layers"][3]
    res["s2_dec_inbound"] = np.asarray([f"{t[0]}:{t[1]}:{t[2]}" for t in node["inbound_nodes"][0]])
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "s2s.h5")
        model.save(path)
        loaded = tf.keras.models.load_model(path)
        res["s2_loaded_predict"] = loaded.predict([enc_x[:2], dec_x[:2]])
    res["s2_predict"] = model.predict([enc_x[:2], dec_x[:2]])
    encoder = tf.keras.Model(enc_in, [h, c])
    sh, sc = tf.keras.Input(shape=(4,)), tf.keras.Input(shape=(4,))
    out, h2, c2 = dec_lstm(dec_in, initial_state=[sh, sc])
    decoder = tf.keras.Model([dec_in, sh, sc], [dense(out), h2, c2])
    states = encoder.predict(enc_x[:2])
    step = decoder.predict([dec_x[:2, :1]] + states)
    res["s2_step_probs"], res["s2_step_h"] = step[0], step[1]
    res["s2_decoder_inputs"] = np.asarray(len(decoder.inputs))
    K = tf.keras.backend
    res["s2_is_keras_tensor"] = np.asarray(
        [K.is_keras_tensor(t) for t in (h, enc_in, out, K.constant(1.0))]
    )
    return res


PROGRAMS = [add_loss_only, siamese_contrastive, checkpoint_full_model, conv_lstm, lstm_seq2seq]
