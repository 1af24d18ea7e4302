"""TensorFlow's formats: SavedModel load time (TF's format vs ours, same model) and per-call
speed of an imported Keras CNN vs TensorFlow's own TF1 session on the same SavedModel.

Needs TensorFlow to build the Keras CNN and to time TF's session: run it with a Python that
has both TensorFlow and flowserve's dependencies (the repository goes on sys.path)::

    /path/to/tfvenv/bin/python bench/tf_formats.py [--calls 200]

Without TensorFlow it times only the loads, on the committed tests/fixtures keras_cnn.
Model (NHWC): 28x28x1 -> conv 5x5x32 SAME + ReLU -> max pool 2 -> conv 5x5x64 SAME + ReLU ->
max pool 2 -> dense 128 + ReLU -> dense 10 softmax (Keras 3 ``model.export``). With TensorFlow,
also a Keras LSTM (TF2 ``While`` over ``TensorList`` ops), 20 steps, batch 32.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def _median_time(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _build_keras_cnn(tf, path):
    keras = tf.keras
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((28, 28, 1), name="image"),
            keras.layers.Conv2D(32, 5, padding="same", activation="relu"),
            keras.layers.MaxPooling2D(2),
            keras.layers.Conv2D(64, 5, padding="same", activation="relu"),
            keras.layers.MaxPooling2D(2),
            keras.layers.Flatten(),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(10, activation="softmax"),
        ]
    )
    model.export(path)


def _engine_load(path):
    import engine

    g = engine.Graph()
    sess = engine.Session(graph=g)
    meta = engine.saved_model.load(sess, ["serve"], path)
    sig = meta.signature_def["serving_default"]
    (inp,) = sig.inputs.values()
    (out,) = sig.outputs.values()
    return sess.make_callable(out.name, [inp.name])


def _lstm_row(tf, tmp, calls):
    """A Keras LSTM (a While loop over TensorLists): batch 32 of 20 steps, ours vs TF's."""
    path = os.path.join(tmp, "lstm")
    model = tf.keras.Sequential(
        [tf.keras.Input((20, 8)), tf.keras.layers.LSTM(32), tf.keras.layers.Dense(4)]
    )
    model.export(path, verbose=False)
    call = _engine_load(path)
    tf1 = tf.compat.v1
    g = tf.Graph()
    sess = tf1.Session(graph=g)
    with g.as_default():
        meta = tf1.saved_model.load(sess, ["serve"], path)
    sig = meta.signature_def["serving_default"]
    (inp,) = sig.inputs.values()
    (out,) = sig.outputs.values()
    tf_call = sess.make_callable(out.name, [inp.name])
    x = np.random.RandomState(0).rand(32, 20, 8).astype(np.float32)
    np.testing.assert_allclose(call(x), tf_call(x), rtol=1e-4, atol=1e-5)
    n = max(10, calls // 8)
    t_e = _median_time(lambda: call(x), n)
    t_t = _median_time(lambda: tf_call(x), n)
    return ("LSTM While loop batch 32: flowserve / TF", t_e, t_t, t_e / t_t)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--loads", type=int, default=5)
    args = parser.parse_args()
    try:
        import tensorflow as tf
    except ImportError:
        tf = None
    from engine import cli

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tf_dir = os.path.join(tmp, "tf")
        if tf is not None:
            _build_keras_cnn(tf, tf_dir)
        else:
            tf_dir = str(ROOT / "tests/fixtures/tensorflow/keras_cnn")
        ours = os.path.join(tmp, "ours")
        cli.main(["convert", tf_dir, ours, "--format", "flowserve"])
        t_tf = _median_time(lambda: _engine_load(tf_dir), args.loads)
        t_ours = _median_time(lambda: _engine_load(ours), args.loads)
        rows.append(("load: TF SavedModel / flowserve format", t_tf, t_ours, t_tf / t_ours))
        if tf is not None:
            call = _engine_load(tf_dir)
            tf1 = tf.compat.v1
            g = tf.Graph()
            sess = tf1.Session(graph=g)
            with g.as_default():
                meta = tf1.saved_model.load(sess, ["serve"], tf_dir)
            sig = meta.signature_def["serving_default"]
            (inp,) = sig.inputs.values()
            (out,) = sig.outputs.values()
            tf_call = sess.make_callable(out.name, [inp.name])
            for batch in (1, 32):
                x = np.random.RandomState(batch).rand(batch, 28, 28, 1).astype(np.float32)
                np.testing.assert_allclose(call(x), tf_call(x), rtol=1e-4, atol=1e-6)
                n = max(10, args.calls // (1 if batch == 1 else 8))
                for _ in range(5):
                    call(x), tf_call(x)
                t_e = _median_time(lambda x=x: call(x), n)
                t_t = _median_time(lambda x=x: tf_call(x), n)
                rows.append((f"call batch {batch}: flowserve / TF session", t_e, t_t, t_e / t_t))
            rows.append(_lstm_row(tf, tmp, args.calls))
    print(f"{'measure':45} {'a (ms)':>10} {'b (ms)':>10} {'a/b':>8}")
    for name, a, b, ratio in rows:
        print(f"{name:45} {a * 1e3:10.3f} {b * 1e3:10.3f} {ratio:8.2f}")
    if tf is None:
        print("(TensorFlow not installed: per-call comparison skipped)")


if __name__ == "__main__":
    main()
