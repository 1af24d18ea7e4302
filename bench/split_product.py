"""Large products on two cores: OpenBLAS's own threads vs the engine's split products.

    python bench/split_product.py [--seconds 2] [--rows 64,32]

The 784-2048-2048-10 ReLU MLP (float32), one caller timing forwards back to back, idle and
then while a subprocess keeps one core busy with single-threaded numpy matmuls (as
``bench/batching.py``'s background work). Rows:

* ``numpy, 1 BLAS thread`` and ``numpy, N OpenBLAS threads``: the forward by hand;
* ``engine, intra-op 1`` and ``engine, intra-op N``: ``make_callable`` with BLAS at one
  thread and large products split across N threads (``engine.ops.split_product``).

N is the core count. Prints rows per second and the p99 of one forward, the ratios against
numpy with one thread, and checks that every runner gives numpy's bits.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

import engine as tf  # noqa: E402
from bench.batching import Background  # noqa: E402
from engine.ops import split_product  # noqa: E402

LAYERS = [784, 2048, 2048, 10]


def weights():
    rng = np.random.default_rng(0)
    return [
        (rng.standard_normal((a, b)).astype(np.float32) * 0.02, np.zeros(b, np.float32))
        for a, b in zip(LAYERS, LAYERS[1:])
    ]


def numpy_forward(params):
    def forward(x):
        for i, (w, b) in enumerate(params):
            x = x @ w + b
            if i < len(params) - 1:
                x = np.maximum(x, 0)
        return x

    return forward


def engine_forward(params):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, LAYERS[0]])
        h = x
        for i, (w, b) in enumerate(params):
            h = tf.matmul(h, tf.constant(w)) + tf.constant(b)
            if i < len(params) - 1:
                h = tf.nn.relu(h)
        sess = tf.Session(graph=g, config=tf.ConfigProto(device_count={"GPU": 0}))
        return sess.make_callable(h, [x])


def measure(fn, x, seconds: float) -> tuple[float, float]:
    fn(x)
    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        fn(x)
        times.append(time.perf_counter() - t0)
    return x.shape[0] * len(times) / sum(times), float(np.percentile(times, 99) * 1e3)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="per row and setting")
    parser.add_argument("--rows", default="64,32", help="batch sizes, comma-separated")
    args = parser.parse_args(argv)
    cores = os.cpu_count() or 1
    params = weights()
    by_hand, engine = numpy_forward(params), engine_forward(params)
    runners = {
        "numpy, 1 BLAS thread": (by_hand, 1, 1),
        f"numpy, {cores} OpenBLAS threads": (by_hand, cores, 1),
        "engine, intra-op 1": (engine, 1, 1),
        f"engine, intra-op {cores}": (engine, 1, cores),
    }
    print(f"{cores} cores, load average {os.getloadavg()[0]:.2f} at start")
    for phase in ("idle", "one core busy"):
        background = Background() if phase != "idle" else None
        if background is not None:
            background.__enter__()
        try:
            for rows in [int(r) for r in args.rows.split(",")]:
                x = np.random.default_rng(rows).standard_normal((rows, LAYERS[0]))
                x = x.astype(np.float32)
                with threadpool_limits(1, "blas"):
                    want = by_hand(x)
                base = None
                for name, (fn, blas, intra) in runners.items():
                    split_product.set_threads(intra)
                    with threadpool_limits(blas, "blas"):
                        fn(x)  # a shape's first split product is computed whole
                        same = fn(x).tobytes() == want.tobytes()
                        rate, p99 = measure(fn, x, args.seconds)
                    split_product.set_threads(1)
                    base = base or rate
                    print(
                        f"{phase:13s} {rows:3d} rows  {name:26s} {rate:8.0f} rows/s "
                        f"(x{rate / base:4.2f})  p99 {p99:6.1f} ms  numpy's bits: {same}",
                        flush=True,
                    )
        finally:
            if background is not None:
                background.__exit__(None, None, None)


if __name__ == "__main__":
    main()
