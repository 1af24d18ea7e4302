"""What one model run costs inside the server, next to the same run in a tight loop: is a run
slower under HTTP load, and why?

The 784-256-128-10 MLP of ``bench/peers`` is served by the real server (``service.cli.serve``)
in this process; ``Signature.run`` is wrapped to time each session call on the thread that
makes it (wall time and that thread's CPU time, and whether it ran inline on the event loop
or on a compute thread). The same call is then timed in process:

- ``tight loop``: back to back (the engine bench's figure);
- ``after request work``: each run after the host-side work of one request (parse the JSON
  body, convert it to an array, encode a response), as runs alternate with HTTP work in the
  server;
- ``after 32 MiB written``: each run after writing a buffer larger than the last-level cache
  (every weight must come from memory again: the worst case of cache eviction).

and in the server, with ``wrk`` at 1 client and at ``--concurrency`` clients (TF Serving
REST, batching off). Prints per scenario the median CPU and wall microseconds of a run, the
ratio to the tight loop, and the share of runs made inline.

    python bench/run_cost.py [--duration 3] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.http_clients import run_client  # noqa: E402
from bench.load import free_port, make_request  # noqa: E402
from bench.peers.run import LAYERS, export, weights  # noqa: E402
from service import cli  # noqa: E402
from service.protocols.common import dumps, parse_json  # noqa: E402
from service.servable import Signature  # noqa: E402
from service.tensors import float_array  # noqa: E402


class RunRecorder:
    """Wraps ``Signature.run``: each call's (inline on the loop thread, wall s, CPU s)."""

    def __init__(self):
        self.records: list[tuple[bool, float, float]] = []
        self.signature: Signature | None = None
        self.loop_thread: int | None = None
        self._run = Signature.run

    def install(self) -> None:
        recorder, original = self, self._run

        def run(sig, arrays, instance=None, cancellation=None):
            t0, c0 = time.perf_counter(), time.thread_time()
            try:
                return original(sig, arrays, instance, cancellation)
            finally:
                wall, cpu = time.perf_counter() - t0, time.thread_time() - c0
                recorder.signature = sig
                inline = threading.get_ident() == recorder.loop_thread
                recorder.records.append((inline, wall, cpu))

        Signature.run = run

    def take(self) -> list[tuple[bool, float, float]]:
        out, self.records = self.records, []
        return out


def _row(name: str, records: list, base_cpu: float | None) -> dict:
    cpu = statistics.median(r[2] for r in records) * 1e6
    wall = statistics.median(r[1] for r in records) * 1e6
    inline = sum(r[0] for r in records) / len(records)
    return {
        "scenario": name,
        "runs": len(records),
        "cpu_us": round(cpu, 1),
        "wall_us": round(wall, 1),
        "cpu_vs_tight": round(cpu / base_cpu, 2) if base_cpu else 1.0,
        "inline_share": round(inline, 3),
    }


def in_process(sig: Signature, body: bytes, n: int) -> list[dict]:
    """The run in a tight loop, after one request's host work, after 32 MiB written."""
    x = float_array(parse_json(body)["instances"], sig.inputs["x"].dtype)
    arrays = sig.validate({"x": x})
    scratch = np.zeros(32 << 18, dtype=np.float32)  # 32 MiB

    def request_work() -> None:
        doc = parse_json(body)
        float_array(doc["instances"], sig.inputs["x"].dtype)
        dumps({"predictions": np.zeros((1, 10), np.float32)})

    def evict() -> None:
        np.add(scratch, 1.0, out=scratch)

    rows = []
    base = None
    for name, between in (
        ("in process: tight loop", None),
        ("in process: after request work", request_work),
        ("in process: after 32 MiB written", evict),
    ):
        records = []
        for _ in range(n):
            if between is not None:
                between()
            t0, c0 = time.perf_counter(), time.thread_time()
            sig.run(arrays)
            records.append((True, time.perf_counter() - t0, time.thread_time() - c0))
        row = _row(name, records, base)
        base = base or row["cpu_us"]
        rows.append(row)
    return rows


async def measure(args) -> list[dict]:
    work = Path(tempfile.mkdtemp(prefix="fs-run-cost-"))
    try:
        export(work / "repo" / "mlp" / "1", weights())
        recorder = RunRecorder()
        recorder.install()
        recorder.loop_thread = threading.get_ident()
        port = free_port()
        config = cli.resolve_config(
            cli.build_parser().parse_args(
                [
                    "--model-repository",
                    str(work / "repo"),
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--poll-interval",
                    "0",
                    "--grpc-port",
                    "0",
                    "--log-level",
                    "warning",
                ]
            )
        )
        stop = asyncio.Event()
        server = asyncio.create_task(cli.serve(config, stop=stop))
        x = np.random.default_rng(0).standard_normal((1, LAYERS[0])).astype(np.float32)
        request = make_request("tfserving", "mlp", "x", x)
        url = f"http://127.0.0.1:{port}"
        try:
            await _wait_ready(url)
            rows = []
            for clients in (1, args.concurrency):
                await run_client(args.client, url, request, clients, args.duration, warmup=1.0)
                recorder.take()
                result = await run_client(
                    args.client, url, request, clients, args.duration, warmup=0.0
                )
                label = f"server, {clients} client(s), {result.throughput_rps:.0f} req/s"
                rows.append(_row(label, recorder.take(), None))
            # The server idles while the in-process loops run (no load).
            local = in_process(recorder.signature, request.body, args.runs)
        finally:
            stop.set()
            await server
        base = local[0]["cpu_us"]
        for row in rows:
            row["cpu_vs_tight"] = round(row["cpu_us"] / base, 2)
        return local + rows
    finally:
        shutil.rmtree(work, ignore_errors=True)


async def _wait_ready(url: str, timeout: float = 60.0) -> None:
    import aiohttp

    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession() as s:
        while time.monotonic() < deadline:
            try:
                async with s.get(url + "/v2/health/ready") as resp:
                    if resp.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError("the server did not become ready")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=3.0, help="seconds per load run")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--runs", type=int, default=3000, help="runs per in-process loop")
    parser.add_argument("--client", default="wrk", help="wrk, hey or aiohttp")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    cli.limit_blas_threads(1)
    load = os.getloadavg()[0]
    rows = asyncio.run(measure(args))
    print(f"load average {load:.1f} -> {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("\n| scenario | runs | CPU us (median) | wall us | CPU / tight loop | inline |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['scenario']} | {r['runs']} | {r['cpu_us']} | {r['wall_us']} | "
            f"{r['cpu_vs_tight']:.2f}x | {r['inline_share']:.0%} |"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
