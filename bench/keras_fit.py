"""``model.fit`` of TF1 Keras: one epoch of the 784-256-128-10 ReLU MLP (Adam, sparse
categorical cross-entropy, accuracy) over 4096 samples at batch 64, engine vs the same Adam
steps written by hand in numpy (``bench/train_step.py``'s ``NumpyMLP``), and vs TF 2.21's
legacy Keras in graph mode (TF 1.x's ``tf.keras``) when ``--tf-python`` names a Python with
TensorFlow and ``tf_keras``. All start from the same weights; the script checks that the
first epoch's mean losses agree (within 1%: rounding differences reach the Adam trajectories
where a ReLU's pre-activation sits at zero, after which they drift apart slowly) before
printing samples/s and the ratios.

Then the same for an Embedding(1000, 32) -> LSTM(32) -> Dense(1, sigmoid) text classifier
(1024 sequences of 40 ids, batch 64, Adam, binary cross-entropy): ``fit`` per epoch and
``predict`` at batch 256, engine vs TF (no numpy by hand for this one).

    python bench/keras_fit.py [--epochs 3] [--tf-python /tmp/tfvenv/bin/python]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

N, BATCH = 4096, 64


def data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.random((N, 784), dtype=np.float32)
    y = rng.integers(0, 10, N)
    return x, y


def params(seed=1):
    rng = np.random.default_rng(seed)
    out = []
    for i, o in zip([784, 256, 128], [256, 128, 10]):
        limit = np.sqrt(6.0 / (i + o))
        out += [rng.uniform(-limit, limit, (i, o)).astype(np.float32), np.zeros(o, np.float32)]
    return out


def time_keras(tf, weights, x, y, epochs):
    """(first epoch's loss, seconds per epoch) of ``model.fit`` with ``tf``'s Keras."""
    tf.keras.backend.clear_session()
    layers = tf.keras.layers
    model = tf.keras.Sequential(
        [
            layers.Dense(256, activation="relu", input_shape=(784,)),
            layers.Dense(128, activation="relu"),
            layers.Dense(10, activation="softmax"),
        ]
    )
    model.set_weights(weights)
    model.compile(
        tf.keras.optimizers.Adam(1e-3, epsilon=1e-8),
        "sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    first = model.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
    t0 = time.perf_counter()
    model.fit(x, y, batch_size=BATCH, epochs=epochs, shuffle=False, verbose=0)
    return float(first.history["loss"][0]), (time.perf_counter() - t0) / epochs


def time_lstm(tf, epochs):
    """(seconds per fit epoch, seconds per predict pass) of the LSTM text classifier."""
    rng = np.random.default_rng(2)
    x = rng.integers(1, 1000, (1024, 40))
    y = rng.integers(0, 2, 1024)
    tf.keras.backend.clear_session()
    layers = tf.keras.layers
    model = tf.keras.Sequential(
        [
            layers.Embedding(1000, 32, input_length=40),
            layers.LSTM(32),
            layers.Dense(1, activation="sigmoid"),
        ]
    )
    model.compile("adam", "binary_crossentropy", metrics=["accuracy"])
    model.fit(x[:64], y[:64], epochs=1, verbose=0)
    model.predict(x[:256], batch_size=256)
    t0 = time.perf_counter()
    model.fit(x, y, batch_size=64, epochs=epochs, verbose=0)
    fit_s = (time.perf_counter() - t0) / epochs
    t0 = time.perf_counter()
    for _ in range(epochs):
        model.predict(x, batch_size=256)
    return fit_s, (time.perf_counter() - t0) / epochs


def time_numpy(weights, x, y, epochs):
    import train_step  # noqa: PLC0415 - the bench's own module, after sys.path is set

    ref = train_step.NumpyMLP(weights)
    losses = [ref.step(x[i : i + BATCH], y[i : i + BATCH]) for i in range(0, N, BATCH)]
    t0 = time.perf_counter()
    for _ in range(epochs):
        for i in range(0, N, BATCH):
            ref.step(x[i : i + BATCH], y[i : i + BATCH])
    return float(np.mean(losses)), (time.perf_counter() - t0) / epochs


_TF_CHILD = """
import json, os, sys, numpy as np
os.environ["TF_USE_LEGACY_KERAS"] = "1"
sys.path.insert(0, {bench!r})
import tensorflow
tf = tensorflow.compat.v1
tf.disable_v2_behavior()
import keras_fit as b
d = np.load({path!r})
first, dt = b.time_keras(tf, [d[f"w{{i}}"] for i in range(6)], d["x"], d["y"], {epochs})
lstm_fit, lstm_predict = b.time_lstm(tf, {epochs})
print(json.dumps({{"first": first, "dt": dt, "lstm_fit": lstm_fit, "lstm_predict": lstm_predict,
                  "version": tensorflow.__version__}}))
"""


def time_tensorflow(python, weights, x, y, epochs):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "data.npz")
        np.savez(path, x=x, y=y, **{f"w{i}": w for i, w in enumerate(weights)})
        code = _TF_CHILD.format(bench=str(Path(__file__).parent), path=path, epochs=epochs)
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
        out = subprocess.run(
            [python, "-c", code], capture_output=True, text=True, env=env, timeout=900
        )
    if out.returncode != 0:
        raise RuntimeError(f"TensorFlow run failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--tf-python", default=os.environ.get("TF_PYTHON"))
    ap.add_argument("--json")
    args = ap.parse_args()
    import engine as tf  # noqa: PLC0415 - the TF child imports this module without the engine

    x, y = data()
    weights = params()
    np_first, np_dt = time_numpy(weights, x, y, args.epochs)
    eng_first, eng_dt = time_keras(tf, weights, x, y, args.epochs)
    if abs(eng_first - np_first) > 1e-2 * max(1.0, abs(np_first)):
        raise SystemExit(f"first-epoch losses differ: engine {eng_first} vs numpy {np_first}")
    rows = [("numpy Adam steps (by hand)", np_dt), ("engine model.fit", eng_dt)]
    result = {"numpy_s": np_dt, "engine_s": eng_dt, "engine_over_numpy": eng_dt / np_dt}
    if args.tf_python:
        res = time_tensorflow(args.tf_python, weights, x, y, args.epochs)
        if abs(res["first"] - np_first) > 1e-2 * max(1.0, abs(np_first)):
            raise SystemExit(f"first-epoch losses differ: TF {res['first']} vs {np_first}")
        rows.append((f"TF {res['version']} legacy Keras fit", res["dt"]))
        result.update(tf_s=res["dt"], engine_over_tf=eng_dt / res["dt"])
    print(
        f"MLP 784-256-128-10, one epoch of {N} samples at batch {BATCH} (first-epoch "
        f"loss: numpy {np_first:.5f}, engine {eng_first:.5f})"
    )
    for name, dt in rows:
        print(
            f"  {name:<32} {dt * 1e3:8.1f} ms/epoch  {N / dt:8.0f} samples/s  "
            f"{dt / np_dt:5.2f}x numpy"
        )
    lstm_fit, lstm_predict = time_lstm(tf, args.epochs)
    result.update(engine_lstm_fit_s=lstm_fit, engine_lstm_predict_s=lstm_predict)
    print("Embedding -> LSTM(32) -> Dense text classifier, 1024 sequences of 40 ids")
    print(f"  engine   fit {lstm_fit * 1e3:7.1f} ms/epoch   predict {lstm_predict * 1e3:6.1f} ms")
    if args.tf_python:
        result.update(tf_lstm_fit_s=res["lstm_fit"], tf_lstm_predict_s=res["lstm_predict"])
        print(
            f"  TF       fit {res['lstm_fit'] * 1e3:7.1f} ms/epoch   predict "
            f"{res['lstm_predict'] * 1e3:6.1f} ms   (engine/TF: fit "
            f"{lstm_fit / res['lstm_fit']:.2f}x, predict {lstm_predict / res['lstm_predict']:.2f}x)"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
