"""More TF1 Keras review programs (see :mod:`tests.engine.keras.review_programs`): shared
layers and stacked models, the weights API, subclassed models' weights, metric names,
backend functions, callbacks' logs, generators, inputs and core layers. ``PROGRAMS`` here
lists every review program, both modules'."""

from __future__ import annotations

import os
import tempfile

import numpy as np

from tests.engine.keras import review_programs as base
from tests.engine.keras.review_programs import Y_CLS, Y_REG, X, _error, _history, _set_weights


def shared_and_stacked(tf) -> dict:
    """A layer shared by two inputs, models called on models, layer outputs by node, and
    errors of layers with several inbound nodes."""
    tf.keras.backend.clear_session()
    layers = tf.keras.layers
    shared = layers.Dense(3, activation="tanh", name="shared")
    a = tf.keras.Input(shape=(4,), name="a")
    b = tf.keras.Input(shape=(4,), name="b")
    sa, sb = shared(a), shared(b)
    m1 = tf.keras.Model([a, b], layers.Add(name="add")([sa, sb]), name="m1")
    c = tf.keras.Input(shape=(4,), name="c")
    m2 = tf.keras.Model(c, layers.Dense(2, name="top")(m1([c, c])), name="m2")
    x = tf.keras.Input(shape=(4,), name="x")
    m3 = tf.keras.Model(x, m2(x), name="m3")
    _set_weights(m3, 15)
    out = {
        "sh_m1_layers": np.asarray([layer.name for layer in m1.layers]),
        "sh_m3_layers": np.asarray([layer.name for layer in m3.layers]),
        "sh_m3_weights": np.asarray([w.name for w in m3.weights]),
        "sh_nodes": np.asarray(len(shared._inbound_nodes)),
        "sh_output_err": np.asarray(_error(lambda: shared.output)),
        "sh_output_shape_err": np.asarray(_error(lambda: m1.get_layer("add").get_output_at(3))),
        "sh_unbuilt_shape": np.asarray(_error(lambda: layers.Dense(2).output_shape)),
        "sh_output_at_1": np.asarray(str(tf.keras.backend.int_shape(shared.get_output_at(1)))),
        "sh_input_shape_at_0": np.asarray(str(shared.get_input_shape_at(0))),
        "sh_predict": m3.predict(X[:5]),
        "sh_m1_predict": m1.predict([X[:3], X[3:6]]),
        "sh_get_layer": np.asarray(m1.get_layer(index=2).name),
        "sh_get_layer_err": np.asarray(_error(lambda: m1.get_layer("nope"))),
    }
    m3.compile(tf.keras.optimizers.SGD(0.1), "mse")
    h = m3.fit(X, Y_REG, batch_size=10, epochs=2, shuffle=False, verbose=0)
    out.update(_history("sh", h))
    out["sh_kernel"] = shared.get_weights()[0]
    return out


def weights_api(tf) -> dict:
    """set_weights errors, count_params before build, optimizer state after fit."""
    tf.keras.backend.clear_session()
    layers = tf.keras.layers
    model = tf.keras.Sequential([layers.Dense(3, input_shape=(4,)), layers.Dense(2)])
    out = {
        "wa_len_err": np.asarray(_error(lambda: model.set_weights([np.zeros((4, 3))]))),
        "wa_shape_err": np.asarray(
            _error(
                lambda: model.set_weights(
                    [np.zeros((3, 4)), np.zeros(3), np.zeros((3, 2)), np.zeros(2)]
                )
            )
        ),
        "wa_unbuilt_count": np.asarray(
            _error(lambda: tf.keras.Sequential([layers.Dense(2)]).count_params())
        ),
        "wa_layer_count_err": np.asarray(_error(lambda: layers.Dense(2).count_params())),
    }
    _set_weights(model, 16)
    model.compile(tf.keras.optimizers.Adam(0.01, decay=0.1), "mse")
    model.fit(X, Y_REG, batch_size=8, epochs=2, shuffle=False, verbose=0)
    K = tf.keras.backend
    out["wa_iterations"] = np.asarray(K.get_value(model.optimizer.iterations))
    out["wa_lr"] = np.asarray(K.get_value(model.optimizer.lr))
    out["wa_kernel"] = model.get_weights()[0]
    out["wa_opt_shapes"] = np.asarray(
        sorted(str(np.shape(w)) for w in model.optimizer.get_weights())
    )
    out["wa_opt_iter"] = np.asarray(model.optimizer.get_weights()[0])
    cfg = model.optimizer.get_config()
    out["wa_opt_config"] = np.asarray(
        sorted(f"{k}={float(v):.6g}" for k, v in cfg.items() if k != "name")
    )
    model.pop()
    model.add(layers.Dense(1, name="new_top"))
    out["wa_pop_weights"] = np.asarray([w.name for w in model.weights])
    out["wa_pop_shape"] = np.asarray(str(model.output_shape))
    return out


def subclassed_weights(tf) -> dict:
    """A subclassed model with its own weight, a frozen sublayer and a nested Sequential."""
    tf.keras.backend.clear_session()
    layers = tf.keras.layers

    class Net(tf.keras.Model):
        def __init__(self):
            super().__init__(name="net")
            self.block = tf.keras.Sequential([layers.Dense(3), layers.BatchNormalization()])
            self.head = layers.Dense(2)
            self.scale = self.add_weight("scale", shape=(2,), initializer="ones")

        def call(self, inputs, training=None):
            return self.head(self.block(inputs, training=training)) * self.scale

    net = Net()
    net.compile(tf.keras.optimizers.SGD(0.05), "mse")
    net.fit(X[:4], Y_REG[:4], epochs=1, verbose=0)
    out = {
        "sc_weights": np.asarray([w.name for w in net.weights]),
        "sc_trainable": np.asarray([w.name for w in net.trainable_weights]),
        "sc_non_trainable": np.asarray([w.name for w in net.non_trainable_weights]),
    }
    _set_weights(net, 17)
    net.head.trainable = False
    net.compile(tf.keras.optimizers.SGD(0.05), "mse")
    out["sc_frozen_trainable"] = np.asarray([w.name for w in net.trainable_weights])
    h = net.fit(X, Y_REG, batch_size=10, epochs=2, shuffle=False, verbose=0)
    out.update(_history("sc", h))
    out["sc_predict"] = net.predict(X[:4])
    for i, w in enumerate(net.get_weights()):
        out[f"sc_w{i}"] = w
    return out


def metric_names(tf) -> dict:
    """How compile names metrics given as strings, functions and objects, per loss."""
    tf.keras.backend.clear_session()
    layers = tf.keras.layers
    out = {}
    M = tf.keras.metrics
    cases = {
        "bin": ("binary_crossentropy", 1, "sigmoid", ["accuracy", "acc", "crossentropy", "ce"]),
        "cat": (
            "categorical_crossentropy",
            3,
            "softmax",
            ["accuracy", "top_k_categorical_accuracy", M.categorical_accuracy],
        ),
        "sparse": (
            "sparse_categorical_crossentropy",
            3,
            "softmax",
            ["acc", M.SparseCategoricalAccuracy(), "crossentropy"],
        ),
        "mse": ("mse", 2, None, ["mae", "mse", "mape", M.MeanSquaredError()]),
    }
    targets = {
        "bin": Y_CLS[:, None].clip(0, 1).astype(np.float32),
        "cat": np.eye(3, dtype=np.float32)[Y_CLS],
        "sparse": Y_CLS,
        "mse": Y_REG,
    }
    for key, (loss, units, act, metrics) in cases.items():
        model = tf.keras.Sequential([layers.Dense(units, activation=act, input_shape=(4,))])
        _set_weights(model, 18)
        model.compile("sgd", loss, metrics=metrics)
        out[f"mn_{key}_names"] = np.asarray(model.metrics_names)
        out[f"mn_{key}_eval"] = np.asarray(model.evaluate(X, targets[key], batch_size=7, verbose=0))
    return out


def backend_functions(tf) -> dict:
    """tf.keras.backend's tensor functions on fixed arrays, evaluated in Keras' session."""
    tf.keras.backend.clear_session()
    K = tf.keras.backend
    r = np.random.RandomState(19)
    a = K.constant(r.rand(2, 3, 4).astype(np.float32) - 0.3)
    b = K.constant(r.rand(4, 5).astype(np.float32))
    m = K.constant(r.rand(3, 4).astype(np.float32))
    logits = K.constant(r.rand(3, 4).astype(np.float32))
    fetch = {
        "bf_dot3": K.dot(a, b),
        "bf_dot2": K.dot(m, b),
        "bf_var": K.var(a, axis=1, keepdims=True),
        "bf_std": K.std(a),
        "bf_max": K.max(a, axis=-1),
        "bf_argmax": K.argmax(a),
        "bf_argmin": K.argmin(a, axis=1),
        "bf_cumsum": K.cumsum(a, axis=1),
        "bf_cumprod": K.cumprod(m, axis=0),
        "bf_clip": K.clip(a, 0.1, 0.5),
        "bf_perm": K.permute_dimensions(a, (2, 0, 1)),
        "bf_concat": K.concatenate([a, a], axis=-1),
        "bf_concat0": K.concatenate([m, m], axis=0),
        "bf_flatten": K.flatten(a),
        "bf_batch_flatten": K.batch_flatten(a),
        "bf_one_hot": K.one_hot(K.constant([[0, 2], [1, 3]], dtype="int32"), 4),
        "bf_repeat": K.repeat_elements(m, 2, axis=1),
        "bf_l2": K.l2_normalize(a, axis=-1),
        "bf_softmax": K.softmax(logits),
        "bf_relu": K.relu(a, alpha=0.1, max_value=0.4, threshold=0.05),
        "bf_switch": K.switch(K.greater(m, 0.5), m, -m),
        "bf_cce": K.categorical_crossentropy(K.softmax(logits), K.softmax(logits * 2)),
        "bf_cce_logits": K.categorical_crossentropy(K.softmax(logits), logits, from_logits=True),
        "bf_scce": K.sparse_categorical_crossentropy(
            K.constant([1, 0, 3], dtype="int64"), K.softmax(logits)
        ),
        "bf_bce": K.binary_crossentropy(
            K.constant(np.eye(3, 4, dtype=np.float32)), K.sigmoid(logits)
        ),
        "bf_gather": K.gather(m, K.constant([2, 0], dtype="int32")),
        "bf_shape": K.shape(a),
        "bf_pow": K.pow(m, 3),
        "bf_prod": K.prod(m, axis=1),
        "bf_mean_bool": K.mean(K.cast(K.greater(m, 0.5), "float32")),
        "bf_in_train": K.in_train_phase(m * 2.0, m, training=1),
        "bf_in_test": K.in_test_phase(m * 2.0, m, training=1),
    }
    out = dict(K.get_session().run(fetch))
    out["bf_int_shape"] = np.asarray(str(K.int_shape(K.dot(a, b))))
    out["bf_ndim"] = np.asarray(K.ndim(a))
    out["bf_dtype"] = np.asarray(K.dtype(K.argmax(a)))
    out["bf_floatx"] = np.asarray(K.floatx())
    out["bf_epsilon"] = np.asarray(K.epsilon())
    x = K.placeholder(shape=(None, 4))
    v = K.variable(np.ones((4,), np.float32))
    loss = K.sum(K.square(K.dot(x, K.expand_dims(v, -1))))
    grads = K.gradients(loss, [v])
    f = K.function([x], [loss] + grads, updates=[(v, v * 0.5)])
    out["bf_fn_loss"], out["bf_fn_grad"] = f([np.ones((2, 4), np.float32)])
    out["bf_fn_after"] = K.get_value(v)
    return out


def batch_logs(tf) -> dict:
    """What callbacks see: keys of the batch and epoch logs, validation from a 3-tuple with
    sample weights, predict with a batch larger than the data."""
    tf.keras.backend.clear_session()
    layers = tf.keras.layers
    model = tf.keras.Sequential([layers.Dense(2, input_shape=(4,))])
    _set_weights(model, 20)
    model.compile(tf.keras.optimizers.SGD(0.05), "mse", metrics=["mae"])
    seen = {"batch": set(), "epoch": set(), "sizes": [], "test_batch": set()}

    def on_batch_end(batch, logs):  # noqa: ARG001 - the callback's signature
        seen["batch"].update(logs)
        seen["sizes"].append(logs["size"])

    cb = tf.keras.callbacks.LambdaCallback(
        on_batch_end=on_batch_end, on_epoch_end=lambda e, logs: seen["epoch"].update(logs)
    )
    vw = np.linspace(0, 2, 8).astype(np.float32)
    h = model.fit(
        X[:22],
        Y_REG[:22],
        batch_size=8,
        epochs=2,
        shuffle=False,
        verbose=0,
        callbacks=[cb],
        validation_data=(X[22:], Y_REG[22:], vw),
    )
    out = _history("bl", h)
    out["bl_batch_keys"] = np.asarray(sorted(seen["batch"]))
    out["bl_epoch_keys"] = np.asarray(sorted(seen["epoch"]))
    out["bl_sizes"] = np.asarray(seen["sizes"])
    out["bl_predict_big"] = model.predict(X[:3], batch_size=100)
    out["bl_eval_sw"] = np.asarray(
        model.evaluate(X, Y_REG, sample_weight=np.linspace(0, 1, 30), batch_size=9, verbose=0)
    )
    return out


def utils_probe(tf) -> dict:
    """tf.keras.utils' array helpers."""
    out = {}
    U = tf.keras.utils
    out["ut_to_cat"] = U.to_categorical([0, 2, 1, 2])
    out["ut_to_cat_n"] = U.to_categorical(np.array([[1], [3]]), num_classes=5)
    out["ut_normalize"] = U.normalize(X[:3], axis=-1, order=2)
    return out


def accuracy_callbacks(tf) -> dict:
    """'auto' mode on accuracy (maximised), restore_best_weights, a checkpoint of the best
    val_acc, and fit_generator/evaluate_generator/predict_generator over a Python
    generator."""
    tf.keras.backend.clear_session()
    layers = tf.keras.layers
    model = tf.keras.Sequential([layers.Dense(3, "softmax", input_shape=(4,))])
    _set_weights(model, 21)
    model.compile(tf.keras.optimizers.SGD(0.5), "sparse_categorical_crossentropy", ["acc"])
    cb = tf.keras.callbacks
    stop = cb.EarlyStopping(monitor="val_acc", patience=1, restore_best_weights=True)
    with tempfile.TemporaryDirectory() as d:
        ckpt = cb.ModelCheckpoint(
            os.path.join(d, "best-{epoch}.h5"),
            monitor="val_acc",
            save_best_only=True,
            save_weights_only=True,
        )
        h = model.fit(
            X[:20],
            Y_CLS[:20],
            validation_data=(X[20:], Y_CLS[20:]),
            epochs=8,
            batch_size=4,
            shuffle=False,
            verbose=0,
            callbacks=[stop, ckpt],
        )
        files = sorted(os.listdir(d))
    out = _history("ac", h)
    out["ac_files"] = np.asarray(files)
    out["ac_stopped"] = np.asarray(stop.stopped_epoch)
    out["ac_kernel"] = model.get_weights()[0]

    def gen():
        while True:
            for i in range(0, 30, 8):
                yield X[i : i + 8], Y_CLS[i : i + 8]

    h = model.fit_generator(gen(), steps_per_epoch=4, epochs=2, verbose=0, shuffle=False)
    out.update(_history("acgen", h))
    out["acgen_eval"] = np.asarray(model.evaluate_generator(gen(), steps=4))
    out["acgen_predict"] = model.predict_generator((x for x, _ in gen()), steps=4)
    return out


def inputs_and_core(tf) -> dict:
    """Input options (batch_size, dtype, tensor=), InputLayer in a Sequential, Lambda with
    output_shape, ActivityRegularization and regularization losses in the total loss,
    constraints applied after updates, and the model's updates/losses lists."""
    tf.keras.backend.clear_session()
    layers = tf.keras.layers
    K = tf.keras.backend
    x = tf.keras.Input(shape=(4,), batch_size=5, dtype="float32", name="fixed")
    ph = tf.placeholder(tf.float32, [None, 4])
    y = tf.keras.Input(tensor=ph)
    out = {
        "ic_fixed_shape": np.asarray(str(K.int_shape(x))),
        "ic_tensor_is_ph": np.asarray(y is ph or y.op.name == ph.op.name),
        "ic_names": np.asarray([x.op.name]),
    }
    seq = tf.keras.Sequential([layers.InputLayer(input_shape=(4,)), layers.Dense(2)])
    out["ic_seq_layers"] = np.asarray([layer.name for layer in seq.layers])
    lam = layers.Lambda(lambda t: K.concatenate([t, t]), output_shape=(8,))
    out["ic_lambda_shape"] = np.asarray(str(K.int_shape(lam(tf.keras.Input(shape=(4,))))))
    inp = tf.keras.Input(shape=(4,))
    h = layers.Dense(
        3,
        kernel_regularizer=tf.keras.regularizers.l1_l2(0.01, 0.02),
        kernel_constraint=tf.keras.constraints.max_norm(0.5),
        name="reg",
    )(inp)
    h = layers.ActivityRegularization(l1=0.05)(h)
    h = layers.BatchNormalization(name="bn")(h)
    model = tf.keras.Model(inp, layers.Dense(2, name="o")(h))
    _set_weights(model, 22)
    out["ic_n_losses"] = np.asarray(len(model.losses))
    out["ic_n_updates"] = np.asarray(len(model.updates))
    model.compile(tf.keras.optimizers.SGD(0.1), "mse")
    hist = model.fit(X, Y_REG, batch_size=10, epochs=2, shuffle=False, verbose=0)
    out.update(_history("ic", hist))
    out["ic_kernel"] = model.get_layer("reg").get_weights()[0]
    out["ic_bn"] = np.stack(model.get_layer("bn").get_weights())
    out["ic_eval"] = np.asarray(model.evaluate(X, Y_REG, verbose=0))
    return out


def error_types(tf) -> dict:
    """The exception types of common mistakes in compile, fit, predict and the layers."""
    tf.keras.backend.clear_session()
    layers = tf.keras.layers
    x = tf.keras.Input(shape=(4,), name="x")
    model = tf.keras.Model(x, [layers.Dense(2, name="r")(x), layers.Dense(1, name="c")(x)])
    cases = {
        "loss_name": lambda: model.compile("sgd", "no_such_loss"),
        "optimizer_name": lambda: model.compile("no_such_opt", "mse"),
        "loss_keys": lambda: model.compile("sgd", {"r": "mse", "zz": "mse"}),
        "loss_list_len": lambda: model.compile("sgd", ["mse"]),
        "metric_name": lambda: model.compile("sgd", "mse", metrics=["no_such_metric"]),
    }
    out = {f"et_{k}": np.asarray(_error(f)) for k, f in cases.items()}
    model.compile("sgd", "mse")
    fits = {
        "y_dict_missing": lambda: model.fit(X, {"r": Y_REG}, verbose=0),
        "x_dict_missing": lambda: model.fit({"nope": X}, [Y_REG, Y_REG[:, :1]], verbose=0),
        "y_one_array": lambda: model.fit(X, Y_REG, verbose=0),
        "predict_shape": lambda: model.predict(X[:, :3]),
        "predict_rank": lambda: model.predict(X[:, :, None]),
        "dense_rank1": lambda: layers.Dense(2)(tf.keras.Input(batch_shape=(4,))),
        "concat_shapes": lambda: layers.Concatenate()(
            [tf.keras.Input(shape=(2, 3)), tf.keras.Input(shape=(4, 3))]
        ),
        "add_shapes": lambda: layers.Add()(
            [tf.keras.Input(shape=(2,)), tf.keras.Input(shape=(3,))]
        ),
        "model_not_input": lambda: tf.keras.Model(layers.Dense(2)(x), x),
        "disconnected": lambda: tf.keras.Model(tf.keras.Input(shape=(4,)), model.outputs[0]),
    }
    out.update({f"et_{k}": np.asarray(_error(f)) for k, f in fits.items()})
    return out


PROGRAMS = [
    *base.PROGRAMS,
    shared_and_stacked,
    weights_api,
    subclassed_weights,
    metric_names,
    backend_functions,
    batch_logs,
    utils_probe,
    accuracy_callbacks,
    inputs_and_core,
    error_types,
]
