"""One SGD training step of a LeNet-style CNN at batch 64: engine vs hand-written numpy, and
vs TensorFlow's TF1 session when a Python with TensorFlow is given (``--tf-python``).

Model (NHWC): 28x28x1 -> conv 5x5x32 SAME + ReLU -> max pool 2x2 -> conv 5x5x64 SAME + ReLU
-> max pool 2x2 -> dense 3136x128 + ReLU -> dense 128x10 -> softmax cross entropy.
The numpy side is the same math written by hand (im2col through ``sliding_window_view``,
one matmul per conv, col2im by adding the kernel taps back). All sides start from the same
weights and batch; the script checks that the first-step losses agree before timing.

    python bench/cnn_train_step.py [--steps 30] [--tf-python /path/to/tfvenv/bin/python]
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

BATCH, LR = 64, 0.05


def init(seed=0):
    rng = np.random.default_rng(seed)

    def w(*shape):
        return (rng.standard_normal(shape) * 0.1).astype(np.float32)

    params = {
        "c1": w(5, 5, 1, 32),
        "b1": np.full(32, 0.1, np.float32),
        "c2": w(5, 5, 32, 64),
        "b2": np.full(64, 0.1, np.float32),
        "f1": w(3136, 128) * 0.2,
        "b3": np.full(128, 0.1, np.float32),
        "f2": w(128, 10),
        "b4": np.zeros(10, np.float32),
    }
    x = rng.random((BATCH, 28, 28, 1), dtype=np.float32)
    y = rng.integers(0, 10, BATCH)
    return params, x, y


# -----------------------------------------------------------------------------------------
# numpy by hand
# -----------------------------------------------------------------------------------------


def _cols(xpad, k):
    """[n, h, w, k*k*c] patches of a padded input (stride 1)."""
    v = np.lib.stride_tricks.sliding_window_view(xpad, (k, k), axis=(1, 2))  # n,h,w,c,k,k
    n, h, w, c = v.shape[:4]
    return np.ascontiguousarray(v.transpose(0, 1, 2, 4, 5, 3)).reshape(n * h * w, k * k * c)


def _conv(x, w, b):
    k = w.shape[0]
    p = k // 2
    xpad = np.pad(x, ((0, 0), (p, p), (p, p), (0, 0)))
    cols = _cols(xpad, k)
    out = cols @ w.reshape(-1, w.shape[3]) + b
    return out.reshape(x.shape[0], x.shape[1], x.shape[2], -1), cols


def _conv_back(dy, cols, w, x_shape):
    k, _, c, oc = w.shape
    p = k // 2
    d2 = dy.reshape(-1, oc)
    dw = (cols.T @ d2).reshape(w.shape)
    db = d2.sum(0)
    dcols = (d2 @ w.reshape(-1, oc).T).reshape(x_shape[0], x_shape[1], x_shape[2], k, k, c)
    n, h, wd, _ = x_shape
    dx = np.zeros((n, h + 2 * p, wd + 2 * p, c), np.float32)
    for i in range(k):
        for j in range(k):
            dx[:, i : i + h, j : j + wd, :] += dcols[:, :, :, i, j, :]
    return dx[:, p : p + h, p : p + wd, :], dw, db


def _pool(x):
    n, h, w, c = x.shape
    r = x.reshape(n, h // 2, 2, w // 2, 2, c)
    out = r.max(axis=(2, 4))
    # The window's first maximum (row-major) takes the gradient, as in TF's MaxPoolGrad.
    flat = r.transpose(0, 1, 3, 5, 2, 4).reshape(n, h // 2, w // 2, c, 4)
    return out, flat.argmax(-1)


def _pool_back(dy, idx, shape):
    n, h, w, c = shape
    d = np.zeros((n, h // 2, w // 2, c, 4), np.float32)
    np.put_along_axis(d, idx[..., None], dy[..., None], axis=-1)
    d = d.reshape(n, h // 2, w // 2, c, 2, 2).transpose(0, 1, 4, 2, 5, 3)
    return d.reshape(n, h, w, c)


class NumpyCNN:
    def __init__(self, params):
        self.p = {k: v.copy() for k, v in params.items()}

    def step(self, x, y):
        p = self.p
        z1, cols1 = _conv(x, p["c1"], p["b1"])
        a1 = np.maximum(z1, 0)
        h1, i1 = _pool(a1)
        z2, cols2 = _conv(h1, p["c2"], p["b2"])
        a2 = np.maximum(z2, 0)
        h2, i2 = _pool(a2)
        flat = h2.reshape(BATCH, -1)
        z3 = flat @ p["f1"] + p["b3"]
        a3 = np.maximum(z3, 0)
        logits = a3 @ p["f2"] + p["b4"]
        s = logits - logits.max(1, keepdims=True)
        e = np.exp(s)
        tot = e.sum(1, keepdims=True)
        loss = float(np.mean(np.log(tot[:, 0]) - s[np.arange(BATCH), y]))
        d = e / tot
        d[np.arange(BATCH), y] -= 1
        d /= BATCH
        g = {"f2": a3.T @ d, "b4": d.sum(0)}
        d = (d @ p["f2"].T) * (z3 > 0)
        g["f1"], g["b3"] = flat.T @ d, d.sum(0)
        d = (d @ p["f1"].T).reshape(h2.shape)
        d = _pool_back(d, i2, a2.shape) * (z2 > 0)
        d, g["c2"], g["b2"] = _conv_back(d, cols2, p["c2"], h1.shape)
        d = _pool_back(d, i1, a1.shape) * (z1 > 0)
        _, g["c1"], g["b1"] = _conv_back(d, cols1, p["c1"], x.shape)
        for k in p:
            p[k] -= LR * g[k]
        return loss


# -----------------------------------------------------------------------------------------
# engine (and TF, through the same builder)
# -----------------------------------------------------------------------------------------


def build(tf, params):
    x = tf.placeholder(tf.float32, [BATCH, 28, 28, 1], name="x")
    y = tf.placeholder(tf.int64, [BATCH], name="y")
    v = {k: tf.Variable(a, name=k) for k, a in params.items()}
    h = tf.nn.relu(tf.nn.conv2d(x, v["c1"], [1, 1, 1, 1], "SAME") + v["b1"])
    h = tf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
    h = tf.nn.relu(tf.nn.conv2d(h, v["c2"], [1, 1, 1, 1], "SAME") + v["b2"])
    h = tf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
    h = tf.nn.relu(tf.matmul(tf.reshape(h, [BATCH, 3136]), v["f1"]) + v["b3"])
    logits = tf.matmul(h, v["f2"]) + v["b4"]
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    train = tf.train.GradientDescentOptimizer(LR).minimize(loss)
    return x, y, loss, train


def time_session(tf, params, xv, yv, steps):
    g = tf.Graph()
    with g.as_default():
        x, y, loss, train = build(tf, params)
        init = tf.global_variables_initializer()
    with tf.Session(graph=g) as sess:
        sess.run(init)
        first = float(sess.run([loss, train], {x: xv, y: yv})[0])
        sess.run(train, {x: xv, y: yv})  # warm
        t0 = time.perf_counter()
        for _ in range(steps):
            sess.run(train, {x: xv, y: yv})
        dt = (time.perf_counter() - t0) / steps
    return first, dt


_TF_CHILD = """
import json, sys, numpy as np
sys.path.insert(0, {bench!r})
import tensorflow
tf = tensorflow.compat.v1
tf.disable_eager_execution()
import cnn_train_step as b
data = np.load({path!r})
params = {{k[2:]: data[k] for k in data.files if k.startswith("p_")}}
first, dt = b.time_session(tf, params, data["x"], data["y"], {steps})
print(json.dumps({{"first": first, "dt": dt, "version": tensorflow.__version__}}))
"""


def time_tensorflow(python, params, xv, yv, steps):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "data.npz")
        np.savez(path, x=xv, y=yv, **{f"p_{k}": v for k, v in params.items()})
        code = _TF_CHILD.format(bench=str(Path(__file__).parent), path=path, steps=steps)
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
        out = subprocess.run(
            [python, "-c", code], capture_output=True, text=True, env=env, timeout=600
        )
    if out.returncode != 0:
        raise RuntimeError(f"TensorFlow run failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--tf-python", default=os.environ.get("TF_PYTHON"))
    ap.add_argument("--json")
    args = ap.parse_args()
    # Imported here: the TensorFlow child process imports this module without the engine.
    import engine as tf  # noqa: PLC0415

    params, xv, yv = init()

    ref = NumpyCNN(params)
    np_first = ref.step(xv, yv)
    ref.step(xv, yv)
    t0 = time.perf_counter()
    for _ in range(args.steps):
        ref.step(xv, yv)
    np_dt = (time.perf_counter() - t0) / args.steps

    eng_first, eng_dt = time_session(tf, params, xv, yv, args.steps)
    if abs(eng_first - np_first) > 1e-4 * max(1.0, abs(np_first)):
        raise SystemExit(f"first-step losses differ: engine {eng_first} vs numpy {np_first}")
    result = {
        "numpy_ms": np_dt * 1e3,
        "engine_ms": eng_dt * 1e3,
        "engine_over_numpy": eng_dt / np_dt,
        "first_loss": np_first,
    }
    rows = [("numpy (by hand)", np_dt), ("engine", eng_dt)]
    if args.tf_python:
        tf_res = time_tensorflow(args.tf_python, params, xv, yv, args.steps)
        if abs(tf_res["first"] - np_first) > 1e-4 * max(1.0, abs(np_first)):
            raise SystemExit(f"first-step losses differ: TF {tf_res['first']} vs {np_first}")
        rows.append((f"TF {tf_res['version']} session", tf_res["dt"]))
        result.update(tf_ms=tf_res["dt"] * 1e3, engine_over_tf=eng_dt / tf_res["dt"])
    print(f"LeNet-style CNN, one SGD step at batch {BATCH} (first-step loss {np_first:.5f})")
    for name, dt in rows:
        print(f"  {name:<22} {dt * 1e3:8.2f} ms/step   {dt / np_dt:5.2f}x numpy")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
