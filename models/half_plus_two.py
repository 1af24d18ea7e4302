"""half_plus_two: y = 0.5 * x + 2, the classic TensorFlow Serving smoke test.

``x`` is float32 of shape ``[None]``; ``a`` and ``b`` are variables (0.5 and 2.0), so the
export exercises variable saving and restoring. One signature, ``serving_default``, with
input alias ``x`` and output alias ``y``, written with ``tf.saved_model.simple_save``::

    python models/half_plus_two.py [--repository DIR]   # rebuilds DIR/half_plus_two/1

(``python models/build.py`` rebuilds every bundled model.)
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make ``models`` and ``engine`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import engine as tf  # noqa: E402

NAME = "half_plus_two"
VERSION = 1
CONFIG = None  # no config.json: the server's defaults fit


def build_graph():
    """Builds the model in the default graph; returns ``(x, y)``."""
    x = tf.placeholder(tf.float32, shape=[None], name="x")
    a = tf.Variable(0.5, dtype=tf.float32, name="a")
    b = tf.Variable(2.0, dtype=tf.float32, name="b")
    y = tf.add(tf.multiply(a, x), b, name="y")
    return x, y


def export(export_dir: str) -> dict:
    """Exports the model to ``export_dir`` (which must not exist or be empty)."""
    graph = tf.Graph()
    with graph.as_default():
        x, y = build_graph()
        with tf.Session(graph=graph) as sess:
            sess.run(tf.global_variables_initializer())
            check = sess.run(y, {x: [1.0, 2.0, 5.0]})
            tf.saved_model.simple_save(sess, export_dir, inputs={"x": x}, outputs={"y": y})
    return {"y([1, 2, 5])": [float(v) for v in check]}


if __name__ == "__main__":
    from models import build

    sys.exit(build.main([*sys.argv[1:], "--only", NAME]))
