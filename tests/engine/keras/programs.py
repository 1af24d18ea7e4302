"""TF1 Keras programs run with whichever ``tf`` they are given: TensorFlow's
``compat.v1`` (with the legacy Keras, when recording ``keras_models_tf.npz``) or ``engine``
(in ``test_keras_models.py``). Each returns ``{key: array}``. Weights are set from a seeded
generator and data is not shuffled, so both runs compute the same numbers."""

from __future__ import annotations

import numpy as np

rs = np.random.RandomState(7)
X = rs.rand(48, 5).astype(np.float32)
Y_CLASS = ((X[:, 0] + X[:, 1] * 2 - X[:, 2]) > 0.9).astype(np.int64) + (X[:, 3] > 0.6)
Y_REG = (X @ rs.uniform(-1, 1, (5, 2))).astype(np.float32)
Y_BIN = (X[:, 4] > 0.5).astype(np.float32)
SW = rs.uniform(0.5, 1.5, 48).astype(np.float32)
P_PRED = rs.rand(40).astype(np.float32)
P_TRUE = (rs.rand(40) < P_PRED).astype(np.float32)


def _weights(model, seed):
    r = np.random.RandomState(seed)
    return [r.uniform(-0.6, 0.6, w.shape.as_list()).astype(np.float32) for w in model.weights]


def _history(prefix: str, h) -> dict:
    return {f"{prefix}_{k}": np.asarray(v, np.float32) for k, v in h.history.items()}


def sequential_classifier(tf) -> dict:
    """The TF 1.x Keras tutorial's shape: Dense/Dropout/Dense softmax, Adam, sparse CE."""
    tf.keras.backend.clear_session()
    layers = tf.keras.layers
    model = tf.keras.Sequential(
        [
            layers.Dense(16, activation="relu", input_shape=(5,)),
            layers.Dropout(0.0),
            layers.Dense(3, activation="softmax"),
        ]
    )
    model.set_weights(_weights(model, 1))
    model.compile(
        optimizer=tf.keras.optimizers.Adam(0.02),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    h = model.fit(
        X, Y_CLASS, epochs=4, batch_size=10, shuffle=False, verbose=0, validation_split=0.25
    )
    out = _history("seq", h)
    out["seq_eval"] = np.asarray(model.evaluate(X, Y_CLASS, batch_size=7, verbose=0), np.float32)
    out["seq_predict"] = model.predict(X[:6])
    for i, w in enumerate(model.get_weights()):
        out[f"seq_weight_{i}"] = w
    out["seq_names"] = np.asarray(model.metrics_names)
    out["seq_weight_names"] = np.asarray([w.name for w in model.weights])
    return out


def functional_two_heads(tf) -> dict:
    """Two inputs, a shared layer, two outputs with their own losses, loss weights, metrics,
    sample weights and SGD with Nesterov momentum."""
    tf.keras.backend.clear_session()
    layers = tf.keras.layers
    a = tf.keras.Input(shape=(5,), name="a")
    b = tf.keras.Input(shape=(5,), name="b")
    shared = layers.Dense(8, activation="tanh", name="shared")
    merged = layers.Lambda(lambda t: t[0] - t[1], name="diff")([shared(a), shared(b)])
    reg = layers.Dense(2, name="reg")(merged)
    cls = layers.Dense(1, activation="sigmoid", name="cls")(shared(a))
    model = tf.keras.Model(inputs=[a, b], outputs=[reg, cls])
    model.set_weights(_weights(model, 2))
    model.compile(
        optimizer=tf.keras.optimizers.SGD(0.1, momentum=0.9, nesterov=True),
        loss=["mse", "binary_crossentropy"],
        loss_weights=[1.0, 0.5],
        metrics={"reg": ["mae"], "cls": ["accuracy"]},
    )
    h = model.fit(
        [X, X[::-1]],
        [Y_REG, Y_BIN],
        sample_weight=[SW, SW],
        epochs=3,
        batch_size=16,
        shuffle=False,
        verbose=0,
    )
    out = _history("fn", h)
    out["fn_eval"] = np.asarray(model.evaluate([X, X[::-1]], [Y_REG, Y_BIN], verbose=0), np.float32)
    out["fn_names"] = np.asarray(model.metrics_names)
    reg_out, cls_out = model.predict({"a": X[:4], "b": X[4:8]})
    out["fn_predict_reg"], out["fn_predict_cls"] = reg_out, cls_out
    return out


def regression_regularized(tf) -> dict:
    """RMSprop on MSE with L2 kernel regularization, validation data, mae/mse metrics."""
    tf.keras.backend.clear_session()
    layers = tf.keras.layers
    model = tf.keras.Sequential(
        [
            layers.Dense(
                12,
                activation="elu",
                input_shape=(5,),
                kernel_regularizer=tf.keras.regularizers.l2(0.01),
            ),
            layers.Dense(2),
        ]
    )
    model.set_weights(_weights(model, 3))
    model.compile(tf.keras.optimizers.RMSprop(0.01), "mse", metrics=["mae", "mse"])
    h = model.fit(
        X[:36],
        Y_REG[:36],
        epochs=3,
        batch_size=8,
        shuffle=False,
        verbose=0,
        validation_data=(X[36:], Y_REG[36:]),
    )
    out = _history("reg", h)
    out["reg_eval"] = np.asarray(model.evaluate(X, Y_REG, verbose=0), np.float32)
    return out


OPTIMIZERS = {
    "sgd": lambda tf: tf.keras.optimizers.SGD(0.1),
    "sgd_momentum_decay": lambda tf: tf.keras.optimizers.SGD(0.1, momentum=0.8, decay=0.1),
    "adam_amsgrad": lambda tf: tf.keras.optimizers.Adam(0.05, amsgrad=True),
    "rmsprop_centered": lambda tf: tf.keras.optimizers.RMSprop(0.01, momentum=0.5, centered=True),
    "rmsprop": lambda tf: tf.keras.optimizers.RMSprop(0.01),
    "adagrad": lambda tf: tf.keras.optimizers.Adagrad(0.1),
    "adadelta": lambda tf: tf.keras.optimizers.Adadelta(1.0),
    "adamax": lambda tf: tf.keras.optimizers.Adamax(0.05),
    "clipnorm": lambda tf: tf.keras.optimizers.SGD(0.5, clipnorm=0.1),
    "tf_train_adam": lambda tf: tf.train.AdamOptimizer(0.05),
}


def optimizers(tf) -> dict:
    """Four ``train_on_batch`` steps with each optimizer from the same weights."""
    out = {}
    for name, make in OPTIMIZERS.items():
        tf.keras.backend.clear_session()
        model = tf.keras.Sequential(
            [
                tf.keras.layers.Dense(3, activation="tanh", input_shape=(5,)),
                tf.keras.layers.Dense(2),
            ]
        )
        model.set_weights(_weights(model, 4))
        model.compile(make(tf), "mse")
        losses = [
            model.train_on_batch(X[i * 12 : (i + 1) * 12], Y_REG[i * 12 : (i + 1) * 12])
            for i in range(4)
        ]
        out[f"opt_{name}_losses"] = np.asarray(losses, np.float32)
        out[f"opt_{name}_kernel"] = model.get_weights()[0]
    return out


def losses_and_metrics(tf) -> dict:
    """Every Keras loss on fixed arrays (functions, and classes with sample weights), and
    confusion metrics through ``evaluate``."""
    tf.keras.backend.clear_session()
    r = np.random.RandomState(5)
    t = r.rand(6, 4).astype(np.float32)
    p = r.rand(6, 4).astype(np.float32) + 0.05
    onehot = np.eye(4, dtype=np.float32)[r.randint(0, 4, 6)]
    probs = p / p.sum(1, keepdims=True)
    sparse = r.randint(0, 4, 6)
    w = r.rand(6).astype(np.float32)
    L = tf.keras.losses
    fetch = {
        "mse": L.mean_squared_error(t, p),
        "mae": L.mean_absolute_error(t, p),
        "mape": L.mean_absolute_percentage_error(t, p),
        "msle": L.mean_squared_logarithmic_error(t, p),
        "hinge": L.hinge(onehot, p - 0.5),
        "squared_hinge": L.squared_hinge(onehot, p - 0.5),
        "categorical_hinge": L.categorical_hinge(onehot, p),
        "logcosh": L.logcosh(t, p),
        "kld": L.kullback_leibler_divergence(probs, onehot + 0.1),
        "poisson": L.poisson(t, p),
        "cosine": L.cosine_similarity(t, p),
        "cce": L.categorical_crossentropy(onehot, probs),
        "cce_logits": L.categorical_crossentropy(onehot, p, from_logits=True),
        "cce_smooth": L.categorical_crossentropy(onehot, probs, label_smoothing=0.1),
        "scce": L.sparse_categorical_crossentropy(sparse, probs),
        "bce": L.binary_crossentropy(onehot, probs),
        "bce_logits": L.binary_crossentropy(onehot, p - 0.5, from_logits=True),
        "cls_mse_weighted": L.MeanSquaredError()(t, p, sample_weight=w),
        "cls_huber_sum": L.Huber(delta=0.3, reduction="sum")(t, p),
        "cls_cce": L.CategoricalCrossentropy()(onehot, probs, sample_weight=w),
        "cls_scce_logits": L.SparseCategoricalCrossentropy(from_logits=True)(sparse, p),
        "cls_bce_none": L.BinaryCrossentropy(reduction="none")(onehot, probs),
    }
    out = {f"loss_{k}": v for k, v in tf.keras.backend.get_session().run(fetch).items()}
    x = tf.keras.Input(shape=(1,))
    model = tf.keras.Model(x, tf.keras.layers.Lambda(lambda v: v * 1.0)(x))
    M = tf.keras.metrics
    model.compile(
        "sgd",
        "binary_crossentropy",
        metrics=[
            M.AUC(),
            M.AUC(curve="PR", name="pr_auc"),
            M.Precision(),
            M.Recall(),
            M.Precision(thresholds=0.3, name="p30"),
            M.TruePositives(),
            M.FalseNegatives(),
            "binary_accuracy",
            M.RootMeanSquaredError(),
        ],
    )
    out["metric_eval"] = np.asarray(
        model.evaluate(P_PRED[:, None], P_TRUE, batch_size=9, verbose=0), np.float32
    )
    out["metric_names"] = np.asarray(model.metrics_names)
    return out


def tf1_program_with_keras_layers(tf) -> dict:
    """A classic TF1 program that builds its model with ``tf.keras.layers`` on placeholders
    and trains with a ``tf.train`` optimizer in its own session."""
    tf.keras.backend.clear_session()
    x = tf.placeholder(tf.float32, [None, 5])
    y = tf.placeholder(tf.float32, [None, 2])
    d1 = tf.keras.layers.Dense(6, activation="relu")
    d2 = tf.keras.layers.Dense(2)
    pred = d2(d1(x))
    loss = tf.reduce_mean(tf.square(pred - y))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    names = np.asarray([v.name for v in tf.trainable_variables()])
    losses = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        r = np.random.RandomState(9)
        for v in tf.trainable_variables():
            v.load(r.uniform(-0.5, 0.5, v.shape.as_list()).astype(np.float32), sess)
        for _ in range(5):
            losses.append(sess.run([loss, train], {x: X, y: Y_REG})[0])
    return {"tf1_losses": np.asarray(losses, np.float32), "tf1_var_names": names}


class _Subclassed:
    """Made into a ``tf.keras.Model`` subclass for the ``tf`` given."""

    @staticmethod
    def make(tf):
        class TwoLayer(tf.keras.Model):
            def __init__(self):
                super().__init__(name="two_layer")
                self.hidden = tf.keras.layers.Dense(7, activation="relu")
                self.out = tf.keras.layers.Dense(3, activation="softmax")

            def call(self, inputs, training=None):  # noqa: ARG002 - Keras passes it
                return self.out(self.hidden(inputs))

        return TwoLayer()


def subclassed_and_callbacks(tf) -> dict:
    """A subclassed model trained with callbacks: a learning-rate schedule, then early
    stopping on a loss that stops improving."""
    tf.keras.backend.clear_session()
    model = _Subclassed.make(tf)
    model.compile(
        tf.keras.optimizers.SGD(0.5), "sparse_categorical_crossentropy", metrics=["accuracy"]
    )
    model.fit(X[:2], Y_CLASS[:2], epochs=1, verbose=0)  # builds the weights
    model.set_weights(_weights(model, 6))
    sched = tf.keras.callbacks.LearningRateScheduler(lambda epoch: 0.5 / (epoch + 1))
    stop = tf.keras.callbacks.EarlyStopping(monitor="loss", min_delta=0.05, patience=1)
    h = model.fit(
        X, Y_CLASS, epochs=8, batch_size=12, shuffle=False, verbose=0, callbacks=[sched, stop]
    )
    out = _history("sub", h)
    out["sub_epochs"] = np.asarray(h.epoch)
    out["sub_weight_names"] = np.asarray(sorted(w.name for w in model.weights))
    k = tf.keras.backend
    f = k.function([model.inputs[0]], [k.mean(model.outputs[0], axis=0), k.std(model.outputs[0])])
    out["sub_kfunction_mean"], out["sub_kfunction_std"] = f([X[:10]])
    return out


PROGRAMS = [
    sequential_classifier,
    functional_two_heads,
    regression_regularized,
    optimizers,
    losses_and_metrics,
    tf1_program_with_keras_layers,
    subclassed_and_callbacks,
]
