"""REST JSON vs REST binary (Triton's binary tensor extension) vs gRPC (KServe V2, raw
contents), measured in one run against one flowserve process.

Two payloads: a 784-float request (an MNIST image) and a 1 MiB tensor (262,144 floats), both
through ``y = 0.5 x + 2`` so the model's compute is small and the transports dominate. Each
case runs closed-loop clients (``--concurrency``) for ``--duration`` seconds; the request is
encoded once up front, the response is decoded (as a client must) and checked once. Prints
throughput and p50/p99 latency, and each transport's throughput relative to REST JSON.

    python bench/transports.py [--duration 5] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import aiohttp  # noqa: E402
import grpc  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from service.protocols.proto import kserve_pb2 as pb  # noqa: E402

MODEL = "affine"
# aiohttp's client asks for gzip by default, and the server then compresses large responses;
# Triton's clients do not ask, and compression is not what this compares.
JSON_HEADERS = {"Content-Type": "application/json", "Accept-Encoding": "identity"}


def build_model(repo: Path) -> None:
    import engine as tf

    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None], name="x")
        y = tf.identity(0.5 * x + 2.0, name="y")
        with tf.Session(graph=g) as sess:
            b = tf.saved_model.Builder(str(repo / MODEL / "1"))
            b.add_meta_graph_and_variables(
                sess,
                ["serve"],
                signature_def_map={
                    "serving_default": tf.saved_model.predict_signature_def({"x": x}, {"y": y})
                },
            )
            b.save()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(values, q) -> float:
    return float(np.percentile(np.asarray(values), q)) * 1000 if values else float("nan")


async def closed_loop(call, concurrency: int, duration: float) -> dict:
    latencies: list[float] = []
    stop = time.perf_counter() + duration

    async def worker():
        while time.perf_counter() < stop:
            t0 = time.perf_counter()
            await call()
            latencies.append(time.perf_counter() - t0)

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - t0
    return {
        "requests": len(latencies),
        "rps": len(latencies) / elapsed,
        "p50_ms": percentile(latencies, 50),
        "p99_ms": percentile(latencies, 99),
    }


def rest_json(session, url, x):
    body = json.dumps(
        {"inputs": [{"name": "x", "datatype": "FP32", "shape": [x.size], "data": x.tolist()}]}
    ).encode()

    async def call():
        async with session.post(url, data=body, headers=JSON_HEADERS) as r:
            doc = await r.json()
            return np.asarray(doc["outputs"][0]["data"], dtype=np.float32)

    return call


def rest_binary(session, url, x):
    header = json.dumps(
        {
            "inputs": [
                {
                    "name": "x",
                    "datatype": "FP32",
                    "shape": [x.size],
                    "parameters": {"binary_data_size": x.nbytes},
                }
            ],
            "outputs": [{"name": "y", "parameters": {"binary_data": True}}],
        }
    ).encode()
    body = header + x.astype("<f4").tobytes()
    headers = {
        "Inference-Header-Content-Length": str(len(header)),
        "Content-Type": "application/octet-stream",
        "Accept-Encoding": "identity",
    }

    async def call():
        async with session.post(url, data=body, headers=headers) as r:
            raw = await r.read()
            n = int(r.headers["Inference-Header-Content-Length"])
            return np.frombuffer(raw[n:], dtype="<f4")

    return call


def grpc_raw(channel, x):
    request = pb.ModelInferRequest(model_name=MODEL)
    request.inputs.add(name="x", datatype="FP32", shape=[x.size])
    request.raw_input_contents.append(x.astype("<f4").tobytes())
    infer = channel.unary_unary(
        "/inference.GRPCInferenceService/ModelInfer",
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=pb.ModelInferResponse.FromString,
    )

    async def call():
        response = await infer(request)
        return np.frombuffer(response.raw_output_contents[0], dtype="<f4")

    return call


async def measure(http_port, grpc_port, duration, concurrency) -> list[tuple]:
    rows = []
    url = f"http://127.0.0.1:{http_port}/v2/models/{MODEL}/infer"
    options = [("grpc.max_receive_message_length", 64 << 20)]
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{grpc_port}", options=options) as channel:
            for label, n in (("784 floats", 784), ("1 MiB", 262_144)):
                x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
                expected = (np.float32(0.5) * x + np.float32(2.0)).astype(np.float32)
                for transport, call in (
                    ("REST JSON", rest_json(session, url, x)),
                    ("REST binary", rest_binary(session, url, x)),
                    ("gRPC", grpc_raw(channel, x)),
                ):
                    np.testing.assert_allclose(await call(), expected, rtol=1e-6)
                    stats = await closed_loop(call, concurrency, duration)
                    rows.append((label, transport, stats))
    return rows


def wait_ready(port: int, proc, timeout: float = 60) -> None:
    import urllib.request

    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit("the server exited")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/health/ready") as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("the server did not become ready")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        build_model(repo)
        http_port, grpc_port = free_port(), free_port()
        proc = subprocess.Popen(
            [sys.executable, "-m", "service", "--model-repository", str(repo), "--host",
             "127.0.0.1", "--port", str(http_port), "--grpc-port", str(grpc_port),
             "--poll-interval", "0", "--log-level", "warning"],
            cwd=ROOT,
        )  # fmt: skip
        try:
            wait_ready(http_port, proc)
            rows = asyncio.run(measure(http_port, grpc_port, args.duration, args.concurrency))
        finally:
            proc.terminate()
            proc.wait(30)
    print(f"concurrency {args.concurrency}, {args.duration:g} s per case")
    print(
        f"{'payload':<11} {'transport':<12} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'vs JSON':>8}"
    )
    base = {}
    for label, transport, s in rows:
        base.setdefault(label, s["rps"])
        print(
            f"{label:<11} {transport:<12} {s['rps']:>9.1f} {s['p50_ms']:>8.2f} "
            f"{s['p99_ms']:>8.2f} {s['rps'] / base[label]:>7.2f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
