"""flowserve beside its peers on one MLP (784-256-128-10, float32), each pair in one run.

HTTP, 64 clients (``bench/load.py``'s client), one 784-float JSON request:

- the floor: a bare aiohttp handler parsing the same JSON and answering a fixed reply
- flowserve, TF Serving REST and KServe V2 JSON, batching off and on
- flowserve with each speed means turned off (asyncio's loop instead of uvloop; every
  computation on a compute thread), to show what each one pays

In process, batch 1 and 64, one BLAS thread: the engine's ``make_callable`` (compiled, and
through the plan interpreter), the same math by hand in numpy, and onnxruntime's
``InferenceSession.run`` when ``onnxruntime`` and ``onnx`` are importable. MLServer and
PyTriton need their own virtualenvs; they are not driven here.

    python bench/peers/run.py [--duration 5] [--concurrency 64] [--skip-http]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))

import engine as tf  # noqa: E402
from bench.load import bare, flowserve, make_request, run_load  # noqa: E402

LAYERS = (784, 256, 128, 10)


def weights(seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [
        (
            (rng.standard_normal((i, o)) / np.sqrt(i)).astype(np.float32),
            (rng.standard_normal(o) * 0.1).astype(np.float32),
        )
        for i, o in zip(LAYERS[:-1], LAYERS[1:])
    ]


def build_graph(params):
    """The MLP as an engine graph: (graph, x, probabilities)."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, LAYERS[0]], name="x")
        h = x
        for i, (w, b) in enumerate(params):
            h = tf.matmul(h, tf.Variable(w, name=f"w{i}")) + tf.Variable(b, name=f"b{i}")
            if i < len(params) - 1:
                h = tf.nn.relu(h)
        y = tf.nn.softmax(h, name="probabilities")
    return g, x, y


def export(path: Path, params) -> None:
    g, x, y = build_graph(params)
    with g.as_default(), tf.Session(graph=g) as sess:
        sess.run(tf.global_variables_initializer())
        tf.saved_model.simple_save(sess, str(path), {"x": x}, {"probabilities": y})


def numpy_mlp(params):
    (w0, b0), (w1, b1), (w2, b2) = params

    def run(x):
        h = np.maximum(x @ w0 + b0, 0)
        h = np.maximum(h @ w1 + b1, 0)
        z = h @ w2 + b2
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    return run


def onnx_mlp(params):
    """An onnxruntime session of the same MLP, or None when onnx/onnxruntime are missing."""
    try:
        import onnx
        import onnxruntime as ort
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        return None
    inits, nodes, h = [], [], "x"
    for i, (w, b) in enumerate(params):
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        nodes += [helper.make_node("MatMul", [h, f"w{i}"], [f"m{i}"])]
        nodes += [helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"])]
        h = f"a{i}"
        if i < len(params) - 1:
            nodes += [helper.make_node("Relu", [h], [f"r{i}"])]
            h = f"r{i}"
    nodes += [helper.make_node("Softmax", [h], ["y"], axis=-1)]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, LAYERS[0]])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, LAYERS[-1]])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    onnx.checker.check_model(model)
    return lambda x: sess.run(None, {"x": x})[0]


def per_call_us(fn, x, min_time=0.2, repeats=5) -> float:
    n, t = 1, 0.0
    while t < min_time / 5:
        n *= 2
        t0 = time.perf_counter()
        for _ in range(n):
            fn(x)
        t = time.perf_counter() - t0
    best = min(_timed(fn, x, n) for _ in range(repeats))
    return best / n * 1e6


def _timed(fn, x, n) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn(x)
    return time.perf_counter() - t0


def in_process(params) -> list[dict]:
    g, x, y = build_graph(params)
    rows = []
    with g.as_default(), tf.Session(graph=g) as sess:
        sess.run(tf.global_variables_initializer())
        engine = sess.make_callable(y, [x])
        # The same callable through the plan interpreter (a call with options takes it):
        # what make_callable ran before plans were compiled, for the before/after ratio.
        with_options = sess.make_callable(y, [x], accept_options=True)
        opts = tf.RunOptions()
        peers = {
            "engine make_callable": engine,
            "engine interpreter": lambda xb: with_options(xb, options=opts),
            "numpy by hand": numpy_mlp(params),
        }
        ort = onnx_mlp(params)
        if ort is not None:
            peers["onnxruntime"] = ort
        for batch in (1, 64):
            xb = np.random.default_rng(batch).standard_normal((batch, LAYERS[0]))
            xb = xb.astype(np.float32)
            ref = peers["numpy by hand"](xb)
            times = interleaved_us(peers, xb)
            for name, fn in peers.items():
                diff = float(np.abs(fn(xb) - ref).max())
                rows.append({"batch": batch, "runner": name, "us": times[name]})
                rows[-1]["max_abs_diff_vs_numpy"] = diff
    return rows


def interleaved_us(runners: dict, x, min_time=0.2, rounds=7) -> dict:
    """Best microseconds per call of each runner, the runners taking turns round after
    round, so that load from elsewhere falls on all of them alike."""
    counts = {}
    for name, fn in runners.items():  # calls per round: about min_time / rounds each
        n, t = 1, 0.0
        while t < min_time / rounds:
            n *= 2
            t = _timed(fn, x, n)
        counts[name] = n
    best = dict.fromkeys(runners, float("inf"))
    for _ in range(rounds):
        for name, fn in runners.items():
            best[name] = min(best[name], _timed(fn, x, counts[name]) / counts[name] * 1e6)
    return best


async def http(duration: float, concurrency: int, work: Path, params) -> list:
    repo = work / "repo"
    export(repo / "mlp" / "1", params)
    batching = work / "batching.json"
    batching.write_text(
        json.dumps({"max_batch_size": 64, "batch_timeout_micros": 0, "num_batch_threads": 1})
    )
    on = ["--enable-batching", "--batching-parameters-file", str(batching)]
    x = np.random.default_rng(0).standard_normal((1, LAYERS[0])).astype(np.float32)
    requests = {p: make_request(p, "mlp", "x", x) for p in ("tfserving", "v2")}
    runs = [
        ("flowserve TF Serving REST, batching off", "tfserving", []),
        ("flowserve TF Serving REST, batching on", "tfserving", on),
        ("flowserve V2 JSON, batching off", "v2", []),
        ("flowserve V2 JSON, batching on", "v2", on),
        ("  same (REST, off), asyncio loop", "tfserving", ["--event-loop", "asyncio"]),
        ("  same (REST, off), no inline compute", "tfserving", ["--inline-compute-micros", "0"]),
    ]
    results, response = [], None
    for label, protocol, args in runs:
        server = flowserve(repo, "flowserve", *args)
        try:
            await server.wait_ready()
            r = await run_load(server.url, requests[protocol], concurrency, duration, label=label)
            results.append(r)
            print(r.line(), flush=True)
            if response is None:
                import aiohttp

                async with aiohttp.ClientSession() as s:
                    req = requests["tfserving"]
                    async with s.post(server.url + req.path, data=req.body) as resp:
                        response = await resp.read()
        finally:
            server.stop()
    reply = work / "reply.json"
    reply.write_bytes(response)
    floor_server = bare(reply)
    try:
        await floor_server.wait_ready()
        floor = await run_load(
            floor_server.url, requests["tfserving"], concurrency, duration, label="bare floor"
        )
        print(floor.line(), flush=True)
    finally:
        floor_server.stop()
    return [floor, *results]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--skip-http", action="store_true")
    args = parser.parse_args(argv)
    params = weights()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("\nIn process (one BLAS thread), us per call:")
    rows = in_process(params)
    for batch in (1, 64):
        mine = [r for r in rows if r["batch"] == batch]
        base = {r["runner"]: r["us"] for r in mine}
        for r in mine:
            ratios = ", ".join(
                f"{r['us'] / v:.2f}x {k}" for k, v in base.items() if k != r["runner"]
            )
            print(
                f"  batch {batch:2d}  {r['runner']:22} {r['us']:8.1f} us   ({ratios}; "
                f"max |diff| vs numpy {r['max_abs_diff_vs_numpy']:.1e})"
            )
    if args.skip_http:
        return 0
    print(f"\nHTTP, {args.concurrency} clients, {args.duration:g} s each:")
    with tempfile.TemporaryDirectory(prefix="fs-peers-") as work:
        results = asyncio.run(http(args.duration, args.concurrency, Path(work), params))
    floor = results[0].throughput_rps or 1.0
    print("\n| server | req/s | p99 ms | of the floor |\n|---|---|---|---|")
    for r in results:
        print(
            f"| {r.label} | {r.throughput_rps:.0f} | {r.p99_ms:.1f} "
            f"| {r.throughput_rps / floor:.0%} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
