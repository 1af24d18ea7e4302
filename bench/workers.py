"""Throughput of ``flowserve --workers N`` against one worker, measured in one run.

Starts the real command twice on the bundled ``digits`` MLP (``--workers 1`` and
``--workers N``, both up for the whole run), then drives each in turn, interleaved over
``--rounds``, with ``bench/load.py run`` clients (``--clients`` processes sharing
``--concurrency`` connections, so the client is not the single core it would be in one
process), or with one ``wrk`` (``--client wrk``, ``--clients`` threads: ~30 µs of client CPU
per request instead of ~200, for many-core runs). Prints each measurement, the mean req/s of
each server, the ratio N-workers / 1-worker and the scaling efficiency ratio / N (the issue's
target: >= 0.8 for N <= cores).

    python bench/workers.py [--workers 2] [--duration 10] [--rounds 2] [--clients 2]
        [--concurrency 32] [--protocol tfserving] [--client processes|wrk] [--json out.json]

The client processes run on the same machine: on a machine with C cores, N workers and
the clients share them, so measure N <= C minus what the clients need to get near-linear
figures (on 2 cores the clients take a good part of one).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.http_clients import run_client  # noqa: E402
from bench.load import Server, flowserve, make_request  # noqa: E402

WORKER_HEADER = "X-Flowserve-Worker"


async def wait_for_workers(server: Server, count: int, timeout: float = 180.0) -> None:
    """Until requests on fresh connections have reached ``count`` distinct workers."""
    await server.wait_ready(timeout)
    seen: set[str] = set()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise RuntimeError(f"{server.name} exited; see {server.log.name}")
        connector = aiohttp.TCPConnector(force_close=True)
        async with aiohttp.ClientSession(connector=connector) as s:
            for _ in range(8):
                try:
                    async with s.get(server.url + "/v2/health/ready") as r:
                        if r.status == 200:
                            seen.add(r.headers.get(WORKER_HEADER, "0"))
                except aiohttp.ClientError:
                    pass
        if len(seen) >= count:
            return
        await asyncio.sleep(0.3)
    raise RuntimeError(f"{server.name}: only workers {sorted(seen)} answered in {timeout}s")


async def drive_wrk(url: str, args: argparse.Namespace, label: str) -> dict:
    """One measurement with ``wrk`` (``args.clients`` threads): the digits model, one row."""
    async with aiohttp.ClientSession() as s:
        async with s.get(f"{url.rstrip('/')}/v2/models/digits") as resp:
            spec = (await resp.json())["inputs"][0]
    dims = [1] + [d if d > 0 else 1 for d in spec["shape"][1:]]
    x = np.random.default_rng(0).standard_normal(dims).astype(np.float32)
    request = make_request(args.protocol, "digits", spec["name"], x)
    r = await run_client(
        "wrk", url, request, args.concurrency, args.duration, label=label, threads=args.clients
    )
    return {
        "label": label,
        "throughput_rps": r.throughput_rps,
        "p50_ms": r.p50_ms,
        "p99_ms": r.p99_ms,
        "errors": dict(r.errors),
    }


def drive(url: str, args: argparse.Namespace, work: Path, label: str) -> dict:
    """One measurement: ``args.clients`` load processes at once; their summed result."""
    per_client = max(1, args.concurrency // args.clients)
    procs = []
    for i in range(args.clients):
        out = work / f"{label}-{i}.json"
        command = [
            sys.executable,
            str(ROOT / "bench" / "load.py"),
            "run",
            "--url",
            url,
            "--model",
            "digits",
            "--protocol",
            args.protocol,
            "--concurrency",
            str(per_client),
            "--duration",
            str(args.duration),
            "--json",
            str(out),
        ]
        procs.append((subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL), out))
    results = []
    for proc, out in procs:
        if proc.wait(timeout=args.duration + 120) != 0:
            raise RuntimeError(f"load client exited with {proc.returncode}")
        results.append(json.loads(out.read_text()))
    errors: dict[str, int] = {}
    for r in results:
        for k, v in r["errors"].items():
            errors[k] = errors.get(k, 0) + v
    return {
        "label": label,
        "throughput_rps": round(sum(r["throughput_rps"] for r in results), 1),
        "p50_ms": max(r["p50_ms"] for r in results),
        "p99_ms": max(r["p99_ms"] for r in results),
        "errors": errors,
    }


async def measure(args: argparse.Namespace) -> dict:
    counts = [1, args.workers]
    servers = {}
    with tempfile.TemporaryDirectory(prefix="fs-bench-workers-") as tmp:
        work = Path(tmp)
        try:
            for n in counts:
                servers[n] = flowserve(ROOT / "models", f"workers{n}", "--workers", str(n))
            for n in counts:
                await wait_for_workers(servers[n], n)
            runs: dict[int, list[dict]] = {n: [] for n in counts}
            for round_ in range(args.rounds):
                order = counts if round_ % 2 == 0 else counts[::-1]  # A/B, then B/A
                for n in order:
                    label = f"workers={n} round {round_ + 1}"
                    if args.client == "wrk":
                        result = await drive_wrk(servers[n].url, args, label)
                    else:
                        result = await asyncio.to_thread(drive, servers[n].url, args, work, label)
                    runs[n].append(result)
                    err = f" errors={result['errors']}" if result["errors"] else ""
                    print(
                        f"{label:28} {result['throughput_rps']:9.1f} req/s   "
                        f"p50 {result['p50_ms']:7.2f} ms   p99 {result['p99_ms']:7.2f} ms{err}",
                        flush=True,
                    )
        finally:
            for server in servers.values():
                server.stop()
    mean = {n: sum(r["throughput_rps"] for r in rs) / len(rs) for n, rs in runs.items()}
    ratio = mean[args.workers] / mean[1] if mean[1] else 0.0
    return {
        "cores": os.cpu_count(),
        "workers": args.workers,
        "clients": args.clients,
        "concurrency": args.concurrency,
        "protocol": args.protocol,
        "duration_s": args.duration,
        "mean_rps": {str(n): round(v, 1) for n, v in mean.items()},
        "ratio": round(ratio, 3),
        "efficiency": round(ratio / args.workers, 3),
        "runs": runs,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2, help="N, compared with 1 worker")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per measurement")
    parser.add_argument("--rounds", type=int, default=2, help="A/B measurement pairs")
    parser.add_argument(
        "--clients", type=int, default=2, help="load client processes (wrk: its threads)"
    )
    parser.add_argument(
        "--client",
        default="processes",
        choices=["processes", "wrk"],
        help="processes: bench/load.py clients; wrk: one wrk (cheaper per request)",
    )
    parser.add_argument("--concurrency", type=int, default=32, help="connections in all")
    parser.add_argument(
        "--protocol", default="tfserving", choices=["tfserving", "v2", "v2-binary", "msgpack"]
    )
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    if args.workers < 2 or args.rounds < 1 or args.clients < 1:
        parser.error("--workers must be at least 2; --rounds and --clients at least 1")
    load_before = os.getloadavg()
    out = asyncio.run(measure(args))
    out["load_average"] = {"before": load_before, "after": os.getloadavg()}
    mean = out["mean_rps"]
    print(
        f"\n{out['cores']} cores, {args.clients} client processes, c={args.concurrency}, "
        f"{args.protocol}; load average before {load_before[0]:.2f}, "
        f"after {out['load_average']['after'][0]:.2f}"
    )
    print(f"1 worker:   {mean['1']:9.1f} req/s")
    print(f"{args.workers} workers:  {mean[str(args.workers)]:9.1f} req/s")
    print(
        f"ratio {args.workers} workers / 1 worker: {out['ratio']:.2f}x   "
        f"efficiency (ratio / {args.workers}): {out['efficiency']:.2f}   (target >= 0.8)"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
