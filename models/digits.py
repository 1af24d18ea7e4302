"""digits: an MLP that classifies 8x8 hand-written digits (the bundled UCI digits set).

Clients send the 64 raw pixel values (0..16, row-major) as float32; the graph scales them to
0..1 itself. Architecture 64-64-10 (ReLU), trained with Adam on a seeded 75/25 split
(``models/datasets.py``), so a rebuild gives the same model up to floating-point noise.

Signatures (tag ``serve``):

- ``serving_default``: ``images`` float32 ``[None, 64]`` -> ``probabilities`` float32
  ``[None, 10]`` and ``classes`` int64 ``[None]``
- ``logits``: ``images`` -> ``logits`` float32 ``[None, 10]``

::

    python models/digits.py [--repository DIR]   # trains, exports DIR/digits/1, prints accuracy

(``python models/build.py`` rebuilds every bundled model.)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: make ``models`` and ``engine`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import engine as tf  # noqa: E402
from models.datasets import load_digits, train_test_split  # noqa: E402

NAME = "digits"
VERSION = 1
CONFIG = {"version_labels": {"stable": VERSION}}

SEED = 1234  # graph-level seed (weight initialization) and minibatch shuffling
SPLIT_SEED = 0  # the held-out split; tests evaluate on the same one
TEST_FRACTION = 0.25
HIDDEN = 64
NUM_CLASSES = 10
EPOCHS = 40
BATCH_SIZE = 32
LEARNING_RATE = 0.003
MAX_PIXEL = 16.0


def split():
    """``(x_train, y_train, x_test, y_test)``: the seeded split the model is trained on."""
    x, y = load_digits()
    return train_test_split(x, y, test_fraction=TEST_FRACTION, seed=SPLIT_SEED)


def inference(images):
    """Raw pixels ``[None, 64]`` -> logits ``[None, 10]``, in the default graph."""
    x = tf.multiply(images, 1.0 / MAX_PIXEL, name="normalized")
    hidden = tf.layers.dense(x, HIDDEN, activation=tf.nn.relu, name="hidden")
    return tf.layers.dense(hidden, NUM_CLASSES, name="output")


def train(x_train, y_train, epochs: int = EPOCHS, seed: int = SEED) -> dict:
    """Trains in a graph of its own; returns the trained values ``{variable name: array}``."""
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(seed)
        images = tf.placeholder(tf.float32, [None, 64], name="images")
        labels = tf.placeholder(tf.int64, [None], name="labels")
        logits = inference(images)
        loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
        train_op = tf.train.AdamOptimizer(LEARNING_RATE).minimize(loss)
        weights = tf.trainable_variables()
        rng = np.random.default_rng(seed)
        with tf.Session(graph=graph) as sess:
            sess.run(tf.global_variables_initializer())
            step = sess.make_callable([train_op, loss], [images, labels])
            for _ in range(epochs):
                order = rng.permutation(len(x_train))
                for start in range(0, len(order), BATCH_SIZE):
                    batch = order[start : start + BATCH_SIZE]
                    step(x_train[batch], y_train[batch])
            return dict(zip([v.op.name for v in weights], sess.run(weights)))


def build_serving_graph():
    """The serving graph in the default graph; returns ``(images, outputs by alias)``."""
    images = tf.placeholder(tf.float32, [None, 64], name="images")
    logits = inference(images)
    logits = tf.identity(logits, name="logits")
    probabilities = tf.nn.softmax(logits, name="probabilities")
    classes = tf.argmax(logits, axis=1, name="classes", output_type=tf.int64)
    return images, {"logits": logits, "probabilities": probabilities, "classes": classes}


def accuracy(predict, x, y) -> float:
    """The fraction of ``x`` that ``predict(x) -> classes`` labels correctly."""
    return float(np.mean(np.asarray(predict(x)) == y))


def export(export_dir: str, epochs: int = EPOCHS, seed: int = SEED) -> dict:
    """Trains the model and exports it to ``export_dir`` (which must not exist or be empty);
    returns its test accuracy."""
    x_train, y_train, x_test, y_test = split()
    trained = train(x_train, y_train, epochs, seed)
    graph = tf.Graph()
    with graph.as_default():
        images, out = build_serving_graph()
        with tf.Session(graph=graph) as sess:
            # Variables keep initializers in the graph (small), values come from training.
            sess.run(tf.global_variables_initializer())
            for v in tf.global_variables():
                v.load(trained[v.op.name], sess)
            test_accuracy = accuracy(
                lambda x: sess.run(out["classes"], {images: x}), x_test, y_test
            )
            train_accuracy = accuracy(
                lambda x: sess.run(out["classes"], {images: x}), x_train, y_train
            )
            b = tf.saved_model.Builder(export_dir)
            default_key = tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY
            b.add_meta_graph_and_variables(
                sess,
                [tf.saved_model.SERVING],
                signature_def_map={
                    default_key: tf.saved_model.predict_signature_def(
                        {"images": images},
                        {"probabilities": out["probabilities"], "classes": out["classes"]},
                    ),
                    "logits": tf.saved_model.predict_signature_def(
                        {"images": images}, {"logits": out["logits"]}
                    ),
                },
            )
            b.save()
    return {
        "train_accuracy": round(train_accuracy, 4),
        "test_accuracy": round(test_accuracy, 4),
        "test_examples": len(y_test),
    }


if __name__ == "__main__":
    from models import build

    sys.exit(build.main([*sys.argv[1:], "--only", NAME]))
