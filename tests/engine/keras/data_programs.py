"""TF1 Keras programs fed from ``tf.data`` and from generators, run with TF's ``compat.v1``
(recording ``keras_data_tf.npz`` with ``tests/engine/fixtures/make_keras_data_fixtures.py``)
or with ``engine`` (``test_keras_data.py``). Each returns ``{key: array}`` whose keys start
with the program's prefix. Nothing is shuffled, and generators that TF reads through a
prefetching thread are used by one call only (or repeat the same batches), so both runs see
the same batches."""

from __future__ import annotations

import numpy as np

from tests.engine.keras.programs import SW, Y_BIN, Y_CLASS, Y_REG, X, _history, _weights


def _classifier(tf, seed=1):
    layers = tf.keras.layers
    model = tf.keras.Sequential(
        [layers.Dense(8, activation="relu", input_shape=(5,)), layers.Dense(3, "softmax")]
    )
    model.set_weights(_weights(model, seed))
    model.compile(
        tf.keras.optimizers.Adam(0.05), "sparse_categorical_crossentropy", metrics=["accuracy"]
    )
    return model


def _regressor(tf, seed=2):
    model = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(5,))])
    model.set_weights(_weights(model, seed))
    model.compile(tf.keras.optimizers.SGD(0.2), "mse", metrics=["mae"])
    return model


def _finish(prefix, model, out) -> dict:
    for i, w in enumerate(model.get_weights()):
        out[f"{prefix}_weight_{i}"] = w
    return out


def dataset_finite(tf) -> dict:
    """A batched dataset (last batch short) with a dataset for validation: steps from the
    cardinality, the iterator re-initialized each epoch, loss averaged per step."""
    tf.keras.backend.clear_session()
    model = _classifier(tf)
    ds = tf.data.Dataset.from_tensor_slices((X, Y_CLASS)).batch(10)
    val = tf.data.Dataset.from_tensor_slices((X[:20], Y_CLASS[:20])).batch(6)
    h = model.fit(ds, epochs=3, verbose=0, validation_data=val)
    out = _history("dsfin", h)
    out["dsfin_eval"] = np.asarray(model.evaluate(ds, verbose=0), np.float32)
    out["dsfin_predict"] = model.predict(ds)
    out["dsfin_predict_x"] = model.predict(tf.data.Dataset.from_tensor_slices(X[:9]).batch(4))
    return _finish("dsfin", model, out)


def dataset_repeated(tf) -> dict:
    """A repeated dataset with steps_per_epoch that crosses its epochs (the iterator is not
    re-initialized), validation_steps on a repeated validation set, evaluate with steps."""
    tf.keras.backend.clear_session()
    model = _regressor(tf)
    ds = tf.data.Dataset.from_tensor_slices((X, Y_REG)).batch(7).repeat()
    val = tf.data.Dataset.from_tensor_slices((X[:10], Y_REG[:10])).batch(4).repeat()
    h = model.fit(
        ds, epochs=3, steps_per_epoch=3, verbose=0, validation_data=val, validation_steps=2
    )
    out = _history("dsrep", h)
    out["dsrep_eval"] = np.asarray(model.evaluate(ds, steps=4, verbose=0), np.float32)
    out["dsrep_predict"] = model.predict(ds, steps=2)
    short = tf.data.Dataset.from_tensor_slices((X, Y_REG)).batch(16).take(2)
    out["dsrep_eval_take"] = np.asarray(model.evaluate(short, verbose=0), np.float32)
    return _finish("dsrep", model, out)


def dataset_weights_dict(tf) -> dict:
    """Two named inputs given as a dict, and sample weights as the third component, with a
    validation dataset of dicts (TF cannot validate on arrays when fitting on a dataset)."""
    tf.keras.backend.clear_session()
    a = tf.keras.Input(shape=(5,), name="a")
    b = tf.keras.Input(shape=(5,), name="b")
    hidden = tf.keras.layers.Dense(6, activation="tanh")(tf.keras.layers.concatenate([a, b]))
    model = tf.keras.Model([a, b], tf.keras.layers.Dense(1, activation="sigmoid")(hidden))
    model.set_weights(_weights(model, 3))
    model.compile(tf.keras.optimizers.RMSprop(0.01), "binary_crossentropy", metrics=["acc"])
    inputs = {"a": X, "b": X[::-1].copy()}
    ds = tf.data.Dataset.from_tensor_slices((inputs, Y_BIN, SW)).batch(16)
    val = tf.data.Dataset.from_tensor_slices(({"a": X[:12], "b": X[12:24]}, Y_BIN[:12]))
    h = model.fit(ds, epochs=2, verbose=0, validation_data=val.batch(5))
    out = _history("dsdict", h)
    out["dsdict_eval"] = np.asarray(model.evaluate(ds, verbose=0), np.float32)
    return _finish("dsdict", model, out)


def dataset_unknown_size(tf) -> dict:
    """A filtered dataset (size known only by running): each pass runs to OutOfRangeError."""
    tf.keras.backend.clear_session()
    model = _regressor(tf, seed=4)

    def keep(x, y):
        del y
        return x[0] > 0.3

    ds = tf.data.Dataset.from_tensor_slices((X, Y_REG)).filter(keep).batch(5)
    h = model.fit(ds, epochs=2, verbose=0)
    out = _history("dsunk", h)
    out["dsunk_eval"] = np.asarray(model.evaluate(ds, verbose=0), np.float32)
    out["dsunk_predict"] = model.predict(ds)
    return _finish("dsunk", model, out)


def dataset_iterators(tf) -> dict:
    """A one-shot iterator for fit and an initializable one (initialized by the program)
    for evaluate, both with steps, as TF 1.15 took them. TF 2.21's legacy Keras refuses
    iterators, so its recording passes the datasets they iterate: with steps given, those
    give the same batches in the same order."""
    tf.keras.backend.clear_session()
    model = _regressor(tf, seed=5)
    takes_iterators = tf.__name__ == "engine"
    ds = tf.data.Dataset.from_tensor_slices((X, Y_REG)).batch(8).repeat()
    train = ds.make_one_shot_iterator() if takes_iterators else ds
    h = model.fit(train, steps_per_epoch=2, epochs=2, verbose=0)
    out = _history("dsit", h)
    ds = tf.data.Dataset.from_tensor_slices((X, Y_REG)).batch(12)
    test = ds
    if takes_iterators:
        test = ds.make_initializable_iterator()
        tf.keras.backend.get_session().run(test.initializer)
    out["dsit_eval"] = np.asarray(model.evaluate(test, steps=3, verbose=0), np.float32)
    return _finish("dsit", model, out)


def dataset_short(tf) -> dict:
    """Steps a dataset cannot give: without steps on an infinite dataset, an error; with
    more steps than it has, training stops where the data ends (the loss is the mean over
    the steps that ran)."""
    tf.keras.backend.clear_session()
    model = _regressor(tf)
    ds = tf.data.Dataset.from_tensor_slices((X, Y_REG)).batch(10)
    calls = {
        "infinite": lambda: model.fit(ds.repeat(), epochs=1, verbose=0),
        "too_many": lambda: model.fit(ds, steps_per_epoch=6, verbose=0).history["loss"],
        "too_many_epochs": lambda: model.fit(ds, steps_per_epoch=3, epochs=3, verbose=0).history[
            "loss"
        ],
        "eval_infinite": lambda: model.evaluate(ds.repeat(), verbose=0),
        "eval_too_many": lambda: model.evaluate(ds, steps=7, verbose=0),
    }
    out = {}
    for name, call in calls.items():
        try:
            out[f"dsshort_{name}"] = np.asarray(call(), np.float32)
        except ValueError as e:
            out[f"dsshort_{name}"] = np.array(str(e))
    return _finish("dsshort", model, out)


def _batches(x, y, sizes, w=None):
    """Batches of ``sizes`` rows, over and over."""
    while True:
        start = 0
        for n in sizes:
            part = slice(start, start + n)
            yield (x[part], y[part]) if w is None else (x[part], y[part], w[part])
            start += n


def generators(tf) -> dict:
    """fit_generator on a generator of uneven batches (loss averaged per step), validation
    on a generator of two alternating batches, evaluate_/predict_generator."""
    tf.keras.backend.clear_session()
    model = _classifier(tf, seed=6)
    h = model.fit_generator(
        _batches(X, Y_CLASS, [10, 10, 10, 10, 8], SW),
        steps_per_epoch=5,
        epochs=2,
        verbose=0,
        validation_data=_batches(X[:16], Y_CLASS[:16], [8, 8]),
        validation_steps=2,
    )
    out = _history("gen", h)
    ev = model.evaluate_generator(_batches(X, Y_CLASS, [20, 20, 8]), steps=3)
    out["gen_eval"] = np.asarray(ev, np.float32)
    xs = (x for x, _ in _batches(X, Y_CLASS, [5, 7]))
    out["gen_predict"] = model.predict_generator(xs, steps=3)
    return _finish("gen", model, out)


def _sequence_class(tf):
    class Batches(tf.keras.utils.Sequence):
        def __init__(self, x, y, size):
            self.x, self.y, self.size = x, y, size

        def __len__(self):
            return -(-len(self.x) // self.size)

        def __getitem__(self, i):
            part = slice(i * self.size, (i + 1) * self.size)
            return self.x[part], self.y[part]

    return Batches


def sequences(tf) -> dict:
    """A Sequence for fit_generator (steps from its length), for validation (read from its
    start each time) and arrays for validation (batched like the last training batch);
    ``fit`` given a Sequence; evaluate_/predict_generator on Sequences."""
    tf.keras.backend.clear_session()
    batches = _sequence_class(tf)
    model = _regressor(tf, seed=7)
    train = batches(X, Y_REG, 10)
    h = model.fit_generator(
        train, epochs=2, verbose=0, shuffle=False, validation_data=batches(X[:20], Y_REG[:20], 6)
    )
    out = _history("seq1", h)
    h = model.fit_generator(
        train, epochs=2, verbose=0, shuffle=False, validation_data=(X[:20], Y_REG[:20])
    )
    out.update(_history("seq2", h))
    h = model.fit(batches(X, Y_REG, 16), epochs=2, verbose=0, shuffle=False)
    out.update(_history("seq3", h))
    out["seq_eval"] = np.asarray(model.evaluate_generator(batches(X, Y_REG, 9)), np.float32)
    out["seq_predict"] = model.predict_generator(batches(X, Y_REG, 11))
    return _finish("seq", model, out)


PROGRAMS = [
    dataset_finite,
    dataset_repeated,
    dataset_weights_dict,
    dataset_unknown_size,
    dataset_iterators,
    dataset_short,
    generators,
    sequences,
]
