"""Engine overhead over raw numpy, measured in one process.

For each computation the same arithmetic runs four ways: raw numpy, ``Session.run``, a
``Session.make_callable`` callable (its plan compiled to straight-line code with planned
memory) and the same callable through the plan interpreter (what a call with ``options``
runs; ``interp/call`` is the compiled code's speedup). Prints microseconds per call, the
engine/numpy ratio, the per-call overhead and the budget the project holds itself to with
``make_callable``: 10 us + 1.5 us per executed op. These sessions are pinned to the CPU, BLAS
to one thread (unless ``OPENBLAS_NUM_THREADS`` says otherwise).

``--device gpu`` adds the MLP at batch 1, 64 and 1024 on CPU:0 and on GPU:0 (cupy), each as a
``make_callable`` from host inputs to host outputs (upload and download included), next to
the same arithmetic written directly in cupy, and prints GPU/CPU and engine/cupy ratios.

    python bench/engine_overhead.py [--json out.json] [--quick] [--device gpu]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import engine as tf  # noqa: E402
from engine import devices  # noqa: E402

CPU_ONLY = tf.ConfigProto(device_count={"GPU": 0})


def time_per_call(fn, min_time=0.2, repeats=7) -> float:
    """Median seconds per call over ``repeats`` runs of a calibrated loop."""
    fn()
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_time / 4:
            break
        n *= 2
    n = max(1, int(n * (min_time / 4) / max(dt, 1e-9)))
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter() - t0) / n)
    return statistics.median(samples)


def executed_ops(sess, fetch, feeds) -> int:
    """Kernel steps the compiled plan runs per call (constants are hoisted out)."""
    plan = sess._plan_for(tuple(feeds), (fetch,))
    return len(plan.steps)


# -- workloads ------------------------------------------------------------------------------


def scalar_add():
    g = tf.Graph()
    with g.as_default():
        out = tf.constant(2) + tf.constant(3)
    a, b = np.asarray(2, np.int32), np.asarray(3, np.int32)
    return g, out, [], [], lambda: np.add(a, b)


def mlp(batch: int, with_weights: bool = False):
    rng = np.random.default_rng(0)
    sizes = [784, 256, 128, 10]
    weights = [
        (rng.standard_normal((i, o)).astype(np.float32) * 0.05, np.zeros(o, np.float32))
        for i, o in zip(sizes, sizes[1:])
    ]
    x_val = rng.standard_normal((batch, 784)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 784], name="x")
        h = x
        for k, (w, b) in enumerate(weights):
            wv = tf.Variable(w, name=f"w{k}")
            bv = tf.Variable(b, name=f"b{k}")
            h = tf.matmul(h, wv) + bv
            if k < len(weights) - 1:
                h = tf.nn.relu(h)
        out = tf.nn.softmax(h)

    def numpy_mlp():
        h = x_val
        for k, (w, b) in enumerate(weights):
            h = h @ w + b
            if k < len(weights) - 1:
                h = np.maximum(h, 0)
        e = np.exp(h - h.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    if with_weights:
        return g, out, [x], [x_val], numpy_mlp, weights
    return g, out, [x], [x_val], numpy_mlp


def chain(n_ops: int = 200):
    x_val = np.linspace(-1, 1, 16, dtype=np.float32)
    c1, c2 = np.float32(1.0001), np.float32(0.001)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [16], name="x")
        k1, k2 = tf.constant(c1), tf.constant(c2)
        h = x
        for i in range(n_ops):
            h = h * k1 if i % 2 == 0 else h + k2
        out = h

    def numpy_chain():
        h = x_val
        for i in range(n_ops):
            h = h * c1 if i % 2 == 0 else h + c2
        return h

    return g, out, [x], [x_val], numpy_chain


def measure(name, build, quick=False):
    g, out, feeds, feed_vals, numpy_fn = build()
    min_time = 0.05 if quick else 0.2
    with g.as_default():
        init = tf.global_variables_initializer()
    with tf.Session(graph=g, config=CPU_ONLY) as sess:
        sess.run(init)
        feed_dict = dict(zip(feeds, feed_vals))
        engine_val = sess.run(out, feed_dict)
        np.testing.assert_allclose(engine_val, numpy_fn(), rtol=1e-4, atol=1e-6)
        fn = sess.make_callable(out, feed_list=feeds)
        with_options = sess.make_callable(out, feed_list=feeds, accept_options=True)
        opts = tf.RunOptions()
        np.testing.assert_array_equal(fn(*feed_vals), with_options(*feed_vals, options=opts))
        n_ops = executed_ops(sess, out, feeds)
        t_np = time_per_call(numpy_fn, min_time)
        t_run = time_per_call(lambda: sess.run(out, feed_dict), min_time)
        t_call = time_per_call(lambda: fn(*feed_vals), min_time)
        t_interp = time_per_call(lambda: with_options(*feed_vals, options=opts), min_time)
    overhead_us = (t_call - t_np) * 1e6
    budget_us = 10 + 1.5 * n_ops
    return {
        "workload": name,
        "executed_ops": n_ops,
        "numpy_us": round(t_np * 1e6, 2),
        "session_run_us": round(t_run * 1e6, 2),
        "make_callable_us": round(t_call * 1e6, 2),
        "interpreter_us": round(t_interp * 1e6, 2),
        "interp_over_call": round(t_interp / t_call, 2),
        "ratio_run": round(t_run / t_np, 2),
        "ratio_callable": round(t_call / t_np, 2),
        "callable_overhead_us": round(overhead_us, 2),
        "budget_us": round(budget_us, 1),
        "within_budget": overhead_us <= budget_us,
    }


WORKLOADS = [
    ("scalar 2+3", scalar_add),
    ("MLP 784-256-128-10 batch 1", lambda: mlp(1)),
    ("MLP 784-256-128-10 batch 64", lambda: mlp(64)),
    ("chain of 200 elementwise ops", chain),
]


def measure_gpu(batch: int, quick=False) -> dict:
    """The MLP at ``batch`` rows: engine on CPU, engine on GPU, and hand-written cupy."""
    cp = devices.cupy_or_none()
    g, out, feeds, feed_vals, numpy_fn, weights = mlp(batch, with_weights=True)
    min_time = 0.05 if quick else 0.2
    with g.as_default():
        init = tf.global_variables_initializer()
    want = numpy_fn()
    times = {}
    for label, config in (("cpu", CPU_ONLY), ("gpu", tf.ConfigProto())):
        with tf.Session(graph=g, config=config) as sess:
            sess.run(init)
            fn = sess.make_callable(out, feed_list=feeds)
            got = fn(*feed_vals)
            np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-5)
            if label == "gpu":
                placement = sess._plan_for(tuple(feeds), (out,)).placement
                on_gpu = sum(d.device_type == "GPU" for d in placement.values())
            times[label] = time_per_call(lambda fn=fn: fn(*feed_vals), min_time)
    dev_weights = [(cp.asarray(w), cp.asarray(b)) for w, b in weights]
    x_val = feed_vals[0]

    def cupy_mlp():
        h = cp.asarray(x_val)
        for k, (w, b) in enumerate(dev_weights):
            h = h @ w + b
            if k < len(dev_weights) - 1:
                h = cp.maximum(h, 0)
        e = cp.exp(h - h.max(axis=-1, keepdims=True))
        return cp.asnumpy(e / e.sum(axis=-1, keepdims=True))

    np.testing.assert_allclose(cupy_mlp(), want, rtol=1e-3, atol=1e-5)
    times["cupy"] = time_per_call(cupy_mlp, min_time)
    return {
        "workload": f"MLP 784-256-128-10 batch {batch}",
        "batch": batch,
        "ops_on_gpu": on_gpu,
        "ops": len(placement),
        "cpu_us": round(times["cpu"] * 1e6, 2),
        "gpu_us": round(times["gpu"] * 1e6, 2),
        "cupy_us": round(times["cupy"] * 1e6, 2),
        "gpu_speedup_over_cpu": round(times["cpu"] / times["gpu"], 2),
        "engine_over_cupy": round(times["gpu"] / times["cupy"], 2),
    }


def print_table(header: str, lines) -> None:
    print(header)
    print("-" * len(header))
    for line in lines:
        print(line)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the results to this JSON file")
    parser.add_argument("--quick", action="store_true", help="shorter timing loops")
    parser.add_argument(
        "--device",
        choices=["cpu", "gpu"],
        default="cpu",
        help="gpu: also compare the MLP on CPU and GPU (needs cupy and a GPU)",
    )
    args = parser.parse_args(argv)
    if args.device == "gpu" and devices.gpu_count() == 0:
        print(
            f"--device gpu: no GPU available ({devices.gpu_unavailable_reason()})", file=sys.stderr
        )
        return 2
    rows = [measure(name, build, args.quick) for name, build in WORKLOADS]
    header = (
        f"{'workload':32} {'ops':>4} {'numpy us':>9} {'run us':>9} {'call us':>9} "
        f"{'interp us':>9} {'run/np':>7} {'call/np':>8} {'interp/call':>11} {'overhead':>9} "
        f"{'budget':>7}  ok"
    )
    print(
        f"engine overhead on {platform.processor() or platform.machine()}, "
        f"python {platform.python_version()}, numpy {np.__version__}"
    )
    print_table(
        header,
        [
            f"{r['workload']:32} {r['executed_ops']:>4} {r['numpy_us']:>9.2f} "
            f"{r['session_run_us']:>9.2f} {r['make_callable_us']:>9.2f} "
            f"{r['interpreter_us']:>9.2f} {r['ratio_run']:>7.2f} {r['ratio_callable']:>8.2f} "
            f"{r['interp_over_call']:>11.2f} "
            f"{r['callable_overhead_us']:>9.2f} {r['budget_us']:>7.1f}  "
            f"{'yes' if r['within_budget'] else 'NO'}"
            for r in rows
        ],
    )
    result = rows
    if args.device == "gpu":
        cp = devices.cupy_or_none()
        name = cp.cuda.runtime.getDeviceProperties(0)["name"]
        name = name.decode() if isinstance(name, bytes) else name
        gpu_rows = [measure_gpu(batch, args.quick) for batch in (1, 64, 1024)]
        print(f"\nCPU vs GPU ({name}, cupy {cp.__version__}); host inputs and outputs")
        header = (
            f"{'workload':32} {'gpu ops':>8} {'cpu us':>9} {'gpu us':>9} {'cupy us':>9} "
            f"{'gpu/cpu speedup':>16} {'engine/cupy':>12}"
        )
        print_table(
            header,
            [
                f"{r['workload']:32} {r['ops_on_gpu']:>4}/{r['ops']:<3} {r['cpu_us']:>9.2f} "
                f"{r['gpu_us']:>9.2f} {r['cupy_us']:>9.2f} {r['gpu_speedup_over_cpu']:>16.2f} "
                f"{r['engine_over_cupy']:>12.2f}"
                for r in gpu_rows
            ],
        )
        result = {"cpu": rows, "gpu": gpu_rows}
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return 0 if all(r["within_budget"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
