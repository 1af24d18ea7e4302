"""Small programs shaped like Keras 2.x's example scripts (``examples/*.py`` of
keras-team/keras: MNIST MLP/CNN/IRNN/hierarchical RNN, the addition seq2seq, the
antirectifier custom layer, bAbI, the IMDB LSTM/bidirectional/CNN/CNN-LSTM/fastText models,
Reuters MLP, LSTM text generation), with seeded weights and data, run by the engine and by
TF's legacy Keras. Each takes the ``tf`` module (``engine`` or ``tf.compat.v1``) and returns
named arrays: predictions, ``train_on_batch`` results and predictions after the step.
Recorded by ``tests/engine/fixtures/make_keras_examples_1_fixtures.py``."""

from __future__ import annotations

import numpy as np


def _seed_weights(model, seed: int, scale: float = 0.3) -> None:
    rng = np.random.RandomState(seed)
    model.set_weights(
        [rng.uniform(-scale, scale, w.shape).astype("float32") for w in model.get_weights()]
    )


def _step(prefix: str, model, x, y) -> dict:
    """Predictions, one ``train_on_batch`` (results as returned), predictions after it."""
    before = model.predict(x, batch_size=8)
    res = np.asarray(model.train_on_batch(x, y), dtype="float32")
    return {f"{prefix}_pred": before, f"{prefix}_train": res, f"{prefix}_after": model.predict(x)}


def _onehot(rng, shape, n):
    return np.eye(n, dtype="float32")[rng.randint(0, n, shape)]


def _ragged(rng, n, vocab, lo, hi):
    return [list(rng.randint(1, vocab, size=rng.randint(lo, hi))) for _ in range(n)]


def addition_seq2seq(tf) -> dict:
    """addition_rnn: LSTM encoder, RepeatVector, LSTM decoder, TimeDistributed softmax, Adam,
    boolean one-hot inputs and targets."""
    tf.keras.backend.clear_session()
    layers, rng = tf.keras.layers, np.random.RandomState(1)
    model = tf.keras.models.Sequential()
    model.add(layers.LSTM(8, input_shape=(7, 12)))
    model.add(layers.RepeatVector(4))
    model.add(layers.LSTM(8, return_sequences=True))
    model.add(layers.TimeDistributed(layers.Dense(12, activation="softmax")))
    model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
    _seed_weights(model, 1)
    x = _onehot(rng, (10, 7), 12).astype(bool)
    y = _onehot(rng, (10, 4), 12).astype(bool)
    return _step("add", model, x, y)


def antirectifier(tf) -> dict:
    """antirectifier: a custom Layer built from backend functions, RMSprop."""
    tf.keras.backend.clear_session()
    K, layers, rng = tf.keras.backend, tf.keras.layers, np.random.RandomState(2)

    class Antirectifier(layers.Layer):
        def compute_output_shape(self, input_shape):
            shape = list(input_shape)
            shape[-1] *= 2
            return tuple(shape)

        def call(self, inputs):
            inputs -= K.mean(inputs, axis=1, keepdims=True)
            inputs = K.l2_normalize(inputs, axis=1)
            return K.concatenate([K.relu(inputs), K.relu(-inputs)], axis=1)

    model = tf.keras.models.Sequential(
        [layers.Dense(6, input_shape=(5,)), Antirectifier(), layers.Dense(3)]
    )
    model.add(layers.Activation("softmax"))
    model.compile(loss="categorical_crossentropy", optimizer="rmsprop", metrics=["accuracy"])
    _seed_weights(model, 2)
    out = _step("anti", model, rng.rand(8, 5).astype("float32"), _onehot(rng, 8, 3))
    out["anti_shape"] = np.asarray(model.layers[1].output_shape[1:])
    return out


def babi_two_inputs(tf) -> dict:
    """babi_rnn: two padded int inputs, Embedding + LSTM each, concatenate, softmax, Adam."""
    tf.keras.backend.clear_session()
    layers, rng = tf.keras.layers, np.random.RandomState(3)
    pad = tf.keras.preprocessing.sequence.pad_sequences
    story = pad(_ragged(rng, 8, 20, 2, 12), maxlen=10)
    query = pad(_ragged(rng, 8, 20, 1, 5), maxlen=4)
    sentence = layers.Input(shape=(10,), dtype="int32")
    enc_s = layers.LSTM(6)(layers.Embedding(20, 5)(sentence))
    question = layers.Input(shape=(4,), dtype="int32")
    enc_q = layers.LSTM(4)(layers.Embedding(20, 5)(question))
    preds = layers.Dense(20, activation="softmax")(layers.concatenate([enc_s, enc_q]))
    model = tf.keras.models.Model([sentence, question], preds)
    model.compile(optimizer="adam", loss="categorical_crossentropy", metrics=["accuracy"])
    _seed_weights(model, 3)
    answers = _onehot(rng, 8, 20)
    out = _step("babi", model, [story, query], answers)
    out["babi_story"], out["babi_query"] = story, query
    history = model.fit(
        [story, query],
        answers,
        batch_size=3,
        epochs=2,
        validation_split=0.25,
        shuffle=False,
        verbose=0,
    )
    for key in ("loss", "acc", "val_loss", "val_acc"):
        out[f"babi_fit_{key}"] = np.asarray(history.history[key], "float32")
    out["babi_evaluate"] = np.asarray(model.evaluate([story, query], answers, batch_size=3))
    return out


def imdb_models(tf) -> dict:
    """imdb_lstm / imdb_bidirectional_lstm / imdb_cnn / imdb_cnn_lstm / imdb_fasttext on
    ``pad_sequences`` of ragged reviews, binary cross-entropy with Adam."""
    layers, rng = tf.keras.layers, np.random.RandomState(4)
    x = tf.keras.preprocessing.sequence.pad_sequences(_ragged(rng, 8, 30, 3, 40), maxlen=24)
    y = rng.randint(0, 2, 8).astype("int64")
    stacks = {
        "lstm": lambda: [layers.LSTM(6), layers.Dense(1, activation="sigmoid")],
        "bidi": lambda: [
            layers.Bidirectional(layers.LSTM(4)),
            layers.Dense(1, activation="sigmoid"),
        ],
        "cnn": lambda: [
            layers.Conv1D(5, 3, padding="valid", activation="relu", strides=1),
            layers.GlobalMaxPooling1D(),
            layers.Dense(4),
            layers.Activation("relu"),
            layers.Dense(1),
            layers.Activation("sigmoid"),
        ],
        "cnnlstm": lambda: [
            layers.Conv1D(5, 3, padding="valid", activation="relu", strides=1),
            layers.MaxPooling1D(pool_size=4),
            layers.LSTM(4),
            layers.Dense(1),
            layers.Activation("sigmoid"),
        ],
        "fasttext": lambda: [
            layers.GlobalAveragePooling1D(),
            layers.Dense(1, activation="sigmoid"),
        ],
    }
    out = {"imdb_x": x}
    for i, (name, stack) in enumerate(stacks.items()):
        tf.keras.backend.clear_session()
        model = tf.keras.models.Sequential([layers.Embedding(30, 5, input_length=24), *stack()])
        model.compile(loss="binary_crossentropy", optimizer="adam", metrics=["accuracy"])
        _seed_weights(model, 40 + i)
        out.update(_step(f"imdb_{name}", model, x, y))
    return out


def reuters_mlp(tf) -> dict:
    """reuters_mlp: ``Tokenizer.sequences_to_matrix(mode='binary')``, ``to_categorical``,
    Dense relu + softmax, Adam."""
    tf.keras.backend.clear_session()
    layers, rng = tf.keras.layers, np.random.RandomState(5)
    tokenizer = tf.keras.preprocessing.text.Tokenizer(num_words=16)
    x = tokenizer.sequences_to_matrix(_ragged(rng, 8, 30, 2, 12), mode="binary")
    y = tf.keras.utils.to_categorical(rng.randint(0, 4, 8), 4)
    model = tf.keras.models.Sequential(
        [layers.Dense(6, input_shape=(16,)), layers.Activation("relu"), layers.Dense(4)]
    )
    model.add(layers.Activation("softmax"))
    model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
    _seed_weights(model, 5)
    out = _step("reuters", model, x, y)
    out["reuters_x"], out["reuters_y"] = x, y
    return out


def mnist_irnn(tf) -> dict:
    """mnist_irnn: SimpleRNN(relu) with RandomNormal kernels and an Identity(gain=1.0)
    recurrent kernel, RMSprop(lr=...); the identity initial value is recorded as built."""
    tf.keras.backend.clear_session()
    layers, inits, rng = tf.keras.layers, tf.keras.initializers, np.random.RandomState(6)
    model = tf.keras.models.Sequential()
    rnn = layers.SimpleRNN(
        5,
        kernel_initializer=inits.RandomNormal(stddev=0.001),
        recurrent_initializer=inits.Identity(gain=1.0),
        activation="relu",
        input_shape=(6, 3),
    )
    model.add(rnn)
    model.add(layers.Dense(4))
    model.add(layers.Activation("softmax"))
    model.compile(
        loss="categorical_crossentropy",
        optimizer=tf.keras.optimizers.RMSprop(lr=1e-2),
        metrics=["accuracy"],
    )
    out = {"irnn_identity": tf.keras.backend.get_value(rnn.weights[1])}
    _seed_weights(model, 6)
    out.update(_step("irnn", model, rng.rand(8, 6, 3).astype("float32"), _onehot(rng, 8, 4)))
    return out


def mnist_cnn_hier(tf) -> dict:
    """mnist_cnn (Conv2D, MaxPooling2D, Flatten, ``keras.losses`` function as the loss,
    Adadelta) and mnist_hierarchical_rnn (TimeDistributed(LSTM) over rows, LSTM, rmsprop)."""
    layers, rng = tf.keras.layers, np.random.RandomState(7)
    x = rng.rand(6, 8, 8, 1).astype("float32")
    y = _onehot(rng, 6, 3)
    tf.keras.backend.clear_session()
    cnn = tf.keras.models.Sequential()
    cnn.add(layers.Conv2D(3, kernel_size=(3, 3), activation="relu", input_shape=(8, 8, 1)))
    cnn.add(layers.Conv2D(4, (3, 3), activation="relu"))
    cnn.add(layers.MaxPooling2D(pool_size=(2, 2)))
    cnn.add(layers.Flatten())
    cnn.add(layers.Dense(3, activation="softmax"))
    cnn.compile(
        loss=tf.keras.losses.categorical_crossentropy,
        optimizer=tf.keras.optimizers.Adadelta(),
        metrics=["accuracy"],
    )
    _seed_weights(cnn, 7)
    out = _step("cnn", cnn, x, y)
    tf.keras.backend.clear_session()
    inp = layers.Input(shape=(8, 8, 1))
    rows = layers.TimeDistributed(layers.LSTM(4))(inp)
    pred = layers.Dense(3, activation="softmax")(layers.LSTM(5)(rows))
    hier = tf.keras.models.Model(inp, pred)
    hier.compile(loss="categorical_crossentropy", optimizer="rmsprop", metrics=["accuracy"])
    _seed_weights(hier, 8)
    out.update(_step("hier", hier, x, y))
    return out


def text_generation(tf) -> dict:
    """lstm_text_generation: LSTM + softmax over characters, RMSprop(learning_rate=0.01),
    loss only (no metrics); ``predict`` of one sequence as the sampling loop does."""
    tf.keras.backend.clear_session()
    layers, rng = tf.keras.layers, np.random.RandomState(9)
    model = tf.keras.models.Sequential()
    model.add(layers.LSTM(8, input_shape=(10, 6)))
    model.add(layers.Dense(6, activation="softmax"))
    model.compile(
        loss="categorical_crossentropy",
        optimizer=tf.keras.optimizers.RMSprop(learning_rate=0.01),
    )
    _seed_weights(model, 9)
    x = _onehot(rng, (8, 10), 6).astype(bool)
    out = _step("text", model, x, _onehot(rng, 8, 6).astype(bool))
    out["text_one"] = model.predict(x[:1].astype("float64"), verbose=0)[0]
    seen = []
    callback = tf.keras.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: seen.append([epoch, logs["loss"], len(logs)])
    )
    y = _onehot(rng, 8, 6).astype(bool)
    model.fit(x, y, batch_size=3, epochs=2, shuffle=False, callbacks=[callback], verbose=0)
    out["text_epoch_ends"] = np.asarray(seen, "float32")
    return out


PROGRAMS = [
    addition_seq2seq,
    antirectifier,
    babi_two_inputs,
    imdb_models,
    reuters_mlp,
    mnist_irnn,
    mnist_cnn_hier,
    text_generation,
]
