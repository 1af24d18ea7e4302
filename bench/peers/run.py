"""flowserve beside its peers on one MLP (784-256-128-10, float32), each pair in one run.

HTTP, 64 clients, one 784-float JSON request, the same bodies and the same load client for
every row (``wrk`` by default, ``--client hey|aiohttp`` for the others):

- the floor: a bare aiohttp handler parsing the same JSON and answering a fixed reply
- flowserve, TF Serving REST and KServe V2 JSON, batching off and on, and flowserve with each
  speed means turned off (asyncio's loop instead of uvloop; every computation on a thread)
- MLServer (``parallel_workers: 0`` and its default workers, adaptive batching off and on)
  and Triton through PyTriton (dynamic batching off and on), each from its own virtualenv
  (``bench/peers/setup.sh`` makes them; a peer whose venv is missing is skipped, saying why)

Every server's answer is checked against flowserve's probabilities before it is timed. The
script prints the table and the ratios issue 13 sets targets for.

In process, batch 1 and 64, one BLAS thread: the engine's ``make_callable`` (compiled, and
through the plan interpreter), the same math by hand in numpy, and onnxruntime's
``InferenceSession.run`` when ``onnxruntime`` and ``onnx`` are importable.

    python bench/peers/run.py [--duration 5] [--rounds 2] [--peers mlserver,pytriton]
        [--client wrk|hey|aiohttp] [--skip-http] [--skip-inprocess] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))

import engine as tf  # noqa: E402
from bench.http_clients import CLIENTS, available  # noqa: E402
from bench.peers import http_bench, servers  # noqa: E402
from bench.peers.mlp import LAYERS, numpy_mlp, weights  # noqa: E402


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


def _timed(fn, x, n) -> float:
    """CPU seconds of ``n`` calls: other processes' load on the machine slows every runner
    alike but is not counted."""
    t0 = time.process_time()
    for _ in range(n):
        fn(x)
    return time.process_time() - t0


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


def interleaved_us(runners: dict, x, min_time=0.2, rounds=15) -> dict:
    """Best microseconds (CPU time) per call of each runner, the runners taking turns round
    after round, each round starting with the next runner, so that load from elsewhere and
    the cache left by the previous runner fall on all of them alike."""
    counts = {}
    for name, fn in runners.items():  # calls per round: about min_time / rounds each
        n, t = 1, 0.0
        while t < min_time / rounds:
            n *= 2
            t = _timed(fn, x, n)
        counts[name] = n
    best = dict.fromkeys(runners, float("inf"))
    names = list(runners)
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            t = _timed(runners[name], x, counts[name])
            best[name] = min(best[name], t / counts[name] * 1e6)
    return best


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per HTTP row")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=1, help="repeat all rows; keep the best")
    parser.add_argument(
        "--peers",
        default=",".join(servers.PEERS),
        help="comma-separated peers to run (mlserver, pytriton); empty for none",
    )
    parser.add_argument("--client", default="wrk", choices=CLIENTS, help="load client")
    parser.add_argument("--mlserver-venv", help="MLServer's virtualenv (FLOWSERVE_MLSERVER_VENV)")
    parser.add_argument("--pytriton-venv", help="PyTriton's venv (FLOWSERVE_PYTRITON_VENV)")
    parser.add_argument(
        "--mlserver-max-batch-time",
        type=float,
        default=0.001,
        help="MLServer's adaptive batching wait, seconds (batching-on rows)",
    )
    parser.add_argument(
        "--triton-max-queue-delay-us",
        type=int,
        default=0,
        help="Triton's dynamic batcher queue delay (batching-on rows)",
    )
    parser.add_argument("--triton-instances", type=int, default=1, help="Triton model instances")
    parser.add_argument("--start-timeout", type=float, default=120.0, help="per server, s")
    parser.add_argument("--skip-http", action="store_true")
    parser.add_argument("--skip-inprocess", action="store_true")
    parser.add_argument("--setup", action="store_true", help="run setup.sh (make the venvs)")
    parser.add_argument(
        "--compare-clients",
        action="store_true",
        help="only drive the floor with each load client and print their CPU cost",
    )
    parser.add_argument("--json", help="write the results here as JSON")
    args = parser.parse_args(argv)
    args.peers = [p for p in args.peers.split(",") if p.strip()]
    unknown = [p for p in args.peers if p not in servers.PEERS]
    if unknown:
        parser.error(f"unknown peers {unknown}; known: {', '.join(servers.PEERS)}")
    if args.mlserver_max_batch_time <= 0:
        parser.error("--mlserver-max-batch-time must be > 0 (MLServer batches only then)")
    if args.triton_max_queue_delay_us < 0 or args.triton_instances < 1:
        parser.error("--triton-max-queue-delay-us must be >= 0, --triton-instances >= 1")
    if args.rounds < 1 or args.duration <= 0 or args.concurrency < 1:
        parser.error("--rounds, --duration and --concurrency must be positive")
    why = available(args.client)
    if why and not args.skip_http:
        parser.error(f"--client {args.client}: {why}")
    return args


def print_in_process(rows: list[dict]) -> None:
    print("\nIn process (one BLAS thread), us per call:")
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


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.setup:
        subprocess.run(["bash", str(Path(__file__).with_name("setup.sh"))], check=True)
    params = weights()
    out = {
        "load_average": os.getloadavg(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if args.compare_clients:
        with tempfile.TemporaryDirectory(prefix="fs-peers-") as work:
            results = asyncio.run(
                http_bench.compare_clients(args, Path(work), lambda path: export(path, params))
            )
        out["clients"] = [asdict(r) for r in results]
        args.skip_http = args.skip_inprocess = True
    if not args.skip_inprocess:
        out["in_process"] = in_process(params)
        print_in_process(out["in_process"])
    if not args.skip_http:
        print(
            f"\nHTTP, {args.concurrency} clients, {args.duration:g} s each, client {args.client}:"
        )
        with tempfile.TemporaryDirectory(prefix="fs-peers-") as work:
            got = asyncio.run(
                http_bench.run_http(args, Path(work), lambda path: export(path, params))
            )
        summary = http_bench.summarize(got["rows"], got["best"])
        http_bench.print_summary(summary, args)
        for peer, why in got["skipped_peers"].items():
            print(f"not measured: {peer}: {why}")
        out["http"] = {
            "client": args.client,
            "concurrency": args.concurrency,
            "duration_s": args.duration,
            "rounds": args.rounds,
            "skipped_peers": got["skipped_peers"],
            **summary,
        }
        out["load_average_after"] = os.getloadavg()
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
