"""digits_cnn: a small CNN for the 8x8 digits, trained with the engine and exported in
TensorFlow's SavedModel format (``saved_model.pb``), which the server serves as it is and
TensorFlow / TF Serving load too.

Architecture (NHWC): 8x8x1 -> conv 3x3x16 SAME + ReLU -> max pool 2x2 -> dense 10, trained
with Adam on the same seeded split as ``digits``.

Signatures (tag ``serve``): ``serving_default``: ``images`` float32 ``[None, 64]`` (raw pixels
0..16) -> ``probabilities`` float32 ``[None, 10]`` and ``classes`` int64 ``[None]``.

::

    python models/digits_cnn.py [--repository DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: make ``models`` and ``engine`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import engine as tf  # noqa: E402
from models.digits import MAX_PIXEL, accuracy, split  # noqa: E402

NAME = "digits_cnn"
VERSION = 1
CONFIG = {"version_labels": {"stable": VERSION}}

SEED = 4321
FILTERS = 16
NUM_CLASSES = 10
EPOCHS = 12
BATCH_SIZE = 32
LEARNING_RATE = 0.01


def inference(images):
    """Raw pixels ``[None, 64]`` -> logits ``[None, 10]``, in the default graph."""
    x = tf.reshape(tf.multiply(images, 1.0 / MAX_PIXEL), [-1, 8, 8, 1], name="image")
    conv = tf.layers.conv2d(x, FILTERS, 3, padding="same", activation=tf.nn.relu, name="conv")
    pooled = tf.layers.max_pooling2d(conv, 2, 2, name="pool")
    return tf.layers.dense(tf.layers.flatten(pooled), NUM_CLASSES, name="output")


def train(x_train, y_train, epochs: int = EPOCHS, seed: int = SEED) -> dict:
    """Trains in a graph of its own; returns ``{variable name: array}``."""
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(seed)
        images = tf.placeholder(tf.float32, [None, 64], name="images")
        labels = tf.placeholder(tf.int64, [None], name="labels")
        loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=inference(images))
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


def export(export_dir: str, epochs: int = EPOCHS, seed: int = SEED) -> dict:
    """Trains and exports in TensorFlow's format to ``export_dir``; returns test accuracy."""
    x_train, y_train, x_test, y_test = split()
    trained = train(x_train, y_train, epochs, seed)
    graph = tf.Graph()
    with graph.as_default():
        images = tf.placeholder(tf.float32, [None, 64], name="images")
        logits = inference(images)
        probabilities = tf.nn.softmax(logits, name="probabilities")
        classes = tf.argmax(logits, axis=1, name="classes", output_type=tf.int64)
        with tf.Session(graph=graph) as sess:
            sess.run(tf.global_variables_initializer())
            for v in tf.global_variables():
                v.load(trained[v.op.name], sess)
            test_accuracy = accuracy(lambda x: sess.run(classes, {images: x}), x_test, y_test)
            b = tf.saved_model.Builder(export_dir)
            b.add_meta_graph_and_variables(
                sess,
                [tf.saved_model.SERVING],
                signature_def_map={
                    tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY: (
                        tf.saved_model.predict_signature_def(
                            {"images": images},
                            {"probabilities": probabilities, "classes": classes},
                        )
                    )
                },
            )
            b.save(format="tensorflow")
    return {"test_accuracy": round(test_accuracy, 4), "test_examples": len(y_test)}


if __name__ == "__main__":
    from models import build

    sys.exit(build.main([*sys.argv[1:], "--only", NAME]))
