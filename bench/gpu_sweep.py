"""Batch sweep on a GPU: the engine on the CPU, the engine on GPU:0, and the same arithmetic
written by hand in cupy, for an MLP and a CNN, in one run.

Workloads (float32, inference):
- MLP 784-256-128-10: matmul + bias + ReLU twice, matmul + bias, softmax.
- CNN (LeNet-style, NHWC): 28x28x1 -> conv 5x5x32 SAME + bias + ReLU -> max pool 2x2 ->
  conv 5x5x64 SAME + bias + ReLU -> max pool 2x2 -> dense 3136x128 + ReLU -> dense 128x10
  -> softmax. The cupy side does each conv as one matmul over im2col patches.

Each side is a call from host inputs to host outputs (upload and download included), timed
as the median of repeated calibrated loops after a warm-up. The engine sides are
``make_callable`` callables; the CPU side runs with ``--cpu-threads`` BLAS threads (default:
every core). Every side's output is checked against a float64 numpy reference first. The
"first sync" column names where a GPU call first waits for the device, found by running it
under ``cupyx.allow_synchronize(False)``: the download of the result is expected; a kernel
there would be a host synchronisation inside the plan.

    python bench/gpu_sweep.py [--batches 1,8,64,512,4096] [--json out.json] [--quick]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import sys
import traceback
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import engine as tf  # noqa: E402
from bench.engine_overhead import CPU_ONLY, mlp, time_per_call  # noqa: E402
from engine import devices  # noqa: E402


def cnn(batch: int):
    """The CNN graph, its feed, a float64 numpy reference and its weights."""
    rng = np.random.default_rng(0)

    def w(*shape):
        fan_in = int(np.prod(shape[:-1]))
        return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)

    weights = {
        "c1": w(5, 5, 1, 32),
        "b1": np.full(32, 0.01, np.float32),
        "c2": w(5, 5, 32, 64),
        "b2": np.full(64, 0.01, np.float32),
        "d1": w(3136, 128),
        "e1": np.full(128, 0.01, np.float32),
        "d2": w(128, 10),
        "e2": np.zeros(10, np.float32),
    }
    x_val = rng.random((batch, 28, 28, 1), dtype=np.float32)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 28, 28, 1], name="x")
        v = {k: tf.Variable(a, name=k) for k, a in weights.items()}
        h = tf.nn.relu(tf.nn.conv2d(x, v["c1"], [1, 1, 1, 1], "SAME") + v["b1"])
        h = tf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
        h = tf.nn.relu(tf.nn.conv2d(h, v["c2"], [1, 1, 1, 1], "SAME") + v["b2"])
        h = tf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
        h = tf.nn.relu(tf.matmul(tf.reshape(h, [-1, 3136]), v["d1"]) + v["e1"])
        out = tf.nn.softmax(tf.matmul(h, v["d2"]) + v["e2"])

    def reference():
        f = {k: a.astype(np.float64) for k, a in weights.items()}
        h = np.maximum(conv_same(np, x_val.astype(np.float64), f["c1"]) + f["b1"], 0)
        h = np.maximum(conv_same(np, pool2(h), f["c2"]) + f["b2"], 0)
        h = np.maximum(pool2(h).reshape(batch, -1) @ f["d1"] + f["e1"], 0)
        return softmax(np, h @ f["d2"] + f["e2"])

    return g, out, [x], [x_val], reference, weights


def conv_same(xp, x, k):
    """A stride-1 SAME convolution as one matmul over im2col patches (NHWC, HWIO)."""
    kh, kw, cin, cout = k.shape
    n, h, w, _ = x.shape
    p = xp.pad(x, ((0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2), (0, 0)))
    s = p.strides
    patches = xp.lib.stride_tricks.as_strided(
        p, (n, h, w, kh, kw, cin), (s[0], s[1], s[2], s[1], s[2], s[3])
    )
    return (patches.reshape(n * h * w, kh * kw * cin) @ k.reshape(-1, cout)).reshape(n, h, w, cout)


def pool2(x):
    n, h, w, c = x.shape
    return x.reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))


def softmax(xp, z):
    e = xp.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def cupy_mlp(cp, weights):
    dev = [(cp.asarray(w), cp.asarray(b)) for w, b in weights]

    def run(x):
        h = cp.asarray(x)
        for k, (w, b) in enumerate(dev):
            h = h @ w + b
            if k < len(dev) - 1:
                h = cp.maximum(h, 0)
        return cp.asnumpy(softmax(cp, h))

    return run


def cupy_cnn(cp, weights):
    d = {k: cp.asarray(a) for k, a in weights.items()}

    def run(x):
        h = cp.asarray(x)
        h = cp.maximum(conv_same(cp, h, d["c1"]) + d["b1"], 0)
        h = cp.maximum(conv_same(cp, pool2(h), d["c2"]) + d["b2"], 0)
        h = cp.maximum(pool2(h).reshape(len(x), -1) @ d["d1"] + d["e1"], 0)
        return cp.asnumpy(softmax(cp, h @ d["d2"] + d["e2"]))

    return run


def first_sync(fn, args) -> str:
    """Where ``fn(*args)`` first synchronises with the GPU (file:line function)."""
    import cupyx  # noqa: PLC0415 - only with a GPU

    try:
        with cupyx.allow_synchronize(False):
            fn(*args)
    except Exception as exc:  # noqa: BLE001 - any error is reported with its place
        while exc.__cause__ is not None and not isinstance(exc, cupyx.DeviceSynchronized):
            exc = exc.__cause__
        frames = [
            f for f in traceback.extract_tb(exc.__traceback__) if "site-packages" not in f.filename
        ]
        f = frames[-1] if frames else traceback.extract_tb(exc.__traceback__)[-1]
        return f"{Path(f.filename).name}:{f.lineno} {f.name}"
    return "none"


def measure(name, build, cupy_side, batch, quick) -> dict:
    cp = devices.cupy_or_none()
    g, out, feeds, feed_vals, reference, weights = build(batch)
    want = reference()
    min_time = 0.05 if quick else 0.2
    repeats = 3 if quick else 7
    with g.as_default():
        init = tf.global_variables_initializer()
    row = {"workload": name, "batch": batch}
    for label, config in (("cpu", CPU_ONLY), ("gpu", tf.ConfigProto())):
        with tf.Session(graph=g, config=config) as sess:
            sess.run(init)
            fn = sess.make_callable(out, feed_list=feeds)
            np.testing.assert_allclose(fn(*feed_vals), want, rtol=2e-3, atol=1e-5)
            if label == "gpu":
                row["first_sync"] = first_sync(fn, feed_vals)
            row[f"{label}_us"] = (
                time_per_call(lambda fn=fn: fn(*feed_vals), min_time, repeats) * 1e6
            )
    run = cupy_side(cp, weights)
    np.testing.assert_allclose(run(*feed_vals), want, rtol=2e-3, atol=1e-5)
    row["cupy_us"] = time_per_call(lambda: run(*feed_vals), min_time, repeats) * 1e6
    row["gpu_over_cpu_speedup"] = row["cpu_us"] / row["gpu_us"]
    row["engine_over_cupy"] = row["gpu_us"] / row["cupy_us"]
    return row


def profile(name, build, batch, calls=50) -> None:
    """Prints the functions the GPU callable of ``name`` spends its calls in (cProfile)."""
    g, out, feeds, feed_vals, _, _ = build(batch)
    with g.as_default():
        init = tf.global_variables_initializer()
    with tf.Session(graph=g) as sess:
        sess.run(init)
        fn = sess.make_callable(out, feed_list=feeds)
        fn(*feed_vals)
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(calls):
            fn(*feed_vals)
        prof.disable()
    print(f"\nprofile: {name}, batch {batch}, {calls} calls")
    pstats.Stats(prof).sort_stats("tottime").print_stats(25)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", default="1,8,64,512,4096")
    parser.add_argument("--cpu-threads", type=int, default=os.cpu_count())
    parser.add_argument("--json", help="also write the rows to this JSON file")
    parser.add_argument("--quick", action="store_true", help="shorter timing loops")
    parser.add_argument(
        "--profile", metavar="mlp|cnn:BATCH", help="only profile that GPU callable (cProfile)"
    )
    args = parser.parse_args(argv)
    if devices.gpu_count() == 0:
        print(f"no GPU available ({devices.gpu_unavailable_reason()})", file=sys.stderr)
        return 2
    cp = devices.cupy_or_none()
    gpu = cp.cuda.runtime.getDeviceProperties(0)["name"]
    gpu = gpu.decode() if isinstance(gpu, bytes) else gpu
    batches = [int(b) for b in args.batches.split(",")]
    workloads = {
        "mlp": ("MLP 784-256-128-10", lambda b: mlp(b, with_weights=True), cupy_mlp),
        "cnn": ("CNN LeNet 28x28", cnn, cupy_cnn),
    }
    if args.profile:
        key, _, batch = args.profile.partition(":")
        name, build, _ = workloads[key]
        profile(name, build, int(batch or 64))
        return 0
    rows = []
    with threadpool_limits(args.cpu_threads):
        for name, build, side in workloads.values():
            for batch in batches:
                rows.append(measure(name, build, side, batch, args.quick))
                r = rows[-1]
                print(
                    f"{name:20} {batch:>5} cpu {r['cpu_us']:>10.1f} gpu {r['gpu_us']:>9.1f} "
                    f"cupy {r['cupy_us']:>9.1f} us  gpu/cpu x{r['gpu_over_cpu_speedup']:.2f} "
                    f"engine/cupy {r['engine_over_cupy']:.2f}  first sync: {r['first_sync']}",
                    flush=True,
                )
    print(
        f"\n{gpu}, cupy {cp.__version__}, numpy {np.__version__}, "
        f"{args.cpu_threads} CPU BLAS threads; host inputs and outputs"
    )
    head = f"{'workload':20} {'batch':>5} {'cpu us':>10} {'gpu us':>9} {'cupy us':>9} "
    print(head + f"{'gpu speedup':>12} {'engine/cupy':>12}")
    for r in rows:
        print(
            f"{r['workload']:20} {r['batch']:>5} {r['cpu_us']:>10.1f} {r['gpu_us']:>9.1f} "
            f"{r['cupy_us']:>9.1f} {r['gpu_over_cpu_speedup']:>12.2f} "
            f"{r['engine_over_cupy']:>12.2f}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps({"gpu": gpu, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
