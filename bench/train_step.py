"""One Adam training step of a 784-256-128-10 ReLU MLP at batch 64: engine vs numpy.

The numpy side is a hand-written forward pass, softmax cross-entropy, backward pass and
in-place Adam update; the engine side builds the same model with ``tf.nn`` ops and
``AdamOptimizer.minimize``. Both start from the same weights and see the same batch, and the
script checks that their losses agree before timing. Prints steps/s and the ratio
(target: engine within 1.3x of numpy).

    python bench/train_step.py [--json out.json] [--steps 200]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import engine as tf  # noqa: E402

SIZES = [784, 256, 128, 10]
BATCH = 64
LR, B1, B2, EPS = 1e-3, 0.9, 0.999, 1e-8


def init_params(seed=0):
    rng = np.random.default_rng(seed)
    params = []
    for i, o in zip(SIZES, SIZES[1:]):
        limit = np.sqrt(6.0 / (i + o))
        params.append(rng.uniform(-limit, limit, (i, o)).astype(np.float32))
        params.append(np.zeros(o, np.float32))
    return params


class NumpyMLP:
    """Forward, backward and Adam written directly with numpy."""

    def __init__(self, params):
        self.p = [p.copy() for p in params]
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.t = 0

    def step(self, x, y):
        w1, b1, w2, b2, w3, b3 = self.p
        z1 = x @ w1 + b1
        h1 = np.maximum(z1, 0)
        z2 = h1 @ w2 + b2
        h2 = np.maximum(z2, 0)
        logits = h2 @ w3 + b3
        shifted = logits - logits.max(axis=1, keepdims=True)
        e = np.exp(shifted)
        s = e.sum(axis=1, keepdims=True)
        loss = float(np.mean(np.log(s[:, 0]) - shifted[np.arange(len(y)), y]))
        d = e / s
        d[np.arange(len(y)), y] -= 1
        d /= len(y)
        grads = [None] * 6
        grads[4] = h2.T @ d
        grads[5] = d.sum(axis=0)
        d = (d @ w3.T) * (z2 > 0)
        grads[2] = h1.T @ d
        grads[3] = d.sum(axis=0)
        d = (d @ w2.T) * (z1 > 0)
        grads[0] = x.T @ d
        grads[1] = d.sum(axis=0)
        self.t += 1
        lr_t = LR * np.sqrt(1 - B2**self.t) / (1 - B1**self.t)
        for p, g, m, v in zip(self.p, grads, self.m, self.v):
            m *= B1
            m += (1 - B1) * g
            v *= B2
            v += (1 - B2) * (g * g)
            p -= lr_t * m / (np.sqrt(v) + EPS)
        return loss


def build_engine(params):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 784], name="x")
        y = tf.placeholder(tf.int64, [None], name="y")
        h = x
        for k in range(3):
            w = tf.Variable(params[2 * k], name=f"w{k}")
            b = tf.Variable(params[2 * k + 1], name=f"b{k}")
            h = tf.matmul(h, w) + b
            if k < 2:
                h = tf.nn.relu(h)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=h))
        train = tf.train.AdamOptimizer(LR, B1, B2, EPS).minimize(loss)
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=g)
    sess.run(init)
    return sess, x, y, loss, train


def steps_per_second(fn, steps):
    for _ in range(5):
        fn()
    t0 = time.perf_counter()
    for _ in range(steps):
        fn()
    return steps / (time.perf_counter() - t0)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(1)
    xb = rng.standard_normal((BATCH, 784)).astype(np.float32)
    yb = rng.integers(0, 10, BATCH).astype(np.int64)
    params = init_params()

    ref = NumpyMLP(params)
    sess, x, y, loss, train = build_engine(params)
    # Same weights, same batch: the first losses must agree.
    l_np = ref.step(xb, yb)
    l_eng, _ = sess.run([loss, train], {x: xb, y: yb})
    if not np.isclose(l_np, l_eng, rtol=1e-4):
        print(f"losses differ: numpy {l_np} engine {l_eng}", file=sys.stderr)
        return 2
    step_fn = sess.make_callable(train, feed_list=[x, y])
    results = {"numpy": [], "session_run": [], "make_callable": []}
    for _ in range(args.rounds):  # interleaved rounds: both sides see the same machine state
        results["numpy"].append(steps_per_second(lambda: ref.step(xb, yb), args.steps))
        results["session_run"].append(
            steps_per_second(lambda: sess.run(train, {x: xb, y: yb}), args.steps)
        )
        results["make_callable"].append(steps_per_second(lambda: step_fn(xb, yb), args.steps))
    best = {k: max(v) for k, v in results.items()}
    out = {
        "numpy_steps_per_s": round(best["numpy"], 1),
        "engine_run_steps_per_s": round(best["session_run"], 1),
        "engine_callable_steps_per_s": round(best["make_callable"], 1),
        "ratio_run": round(best["numpy"] / best["session_run"], 3),
        "ratio_callable": round(best["numpy"] / best["make_callable"], 3),
    }
    print(
        f"Adam step, MLP 784-256-128-10, batch {BATCH}, on {platform.machine()} "
        f"(numpy {np.__version__})"
    )
    print(f"numpy (hand-written)       {out['numpy_steps_per_s']:8.1f} steps/s")
    print(
        f"engine Session.run         {out['engine_run_steps_per_s']:8.1f} steps/s   "
        f"numpy/engine {out['ratio_run']:.3f}x"
    )
    print(
        f"engine make_callable       {out['engine_callable_steps_per_s']:8.1f} steps/s   "
        f"numpy/engine {out['ratio_callable']:.3f}x  (target <= 1.3x)"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    sess.close()
    return 0 if out["ratio_callable"] <= 1.3 else 1


if __name__ == "__main__":
    sys.exit(main())
