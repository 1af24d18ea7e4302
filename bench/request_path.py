"""What flowserve's per-request path costs beside the floor: throughput and server CPU time
per request, TF Serving REST and V2 JSON, batching off and on, each next to the bare aiohttp
floor in the same run.

Throughput at 64 clients depends on everything else the machine runs; the server's own CPU
seconds per request (user + system, all its threads, read from ``/proc``) much less, so both
are printed, each as a ratio to the floor's, with the server's minor page faults per request
(a heap trimmed and grown back again: the "dearer regime" of stops 25-26 was that).
``--compare PATH`` runs the same servers from another checkout (e.g. a ``git worktree`` of
``main``) interleaved with this one: an A/B of a change in one run.

    python bench/request_path.py [--duration 3] [--rounds 1] [--compare ../main] [--client wrk]

The load client is ``wrk`` where installed (``--client hey|aiohttp`` for the others; see
``bench/http_clients.py``): the cheaper the client, the more of the two cores the servers get.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import sys
import tempfile
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import aiohttp  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.http_clients import available, run_client  # noqa: E402
from bench.load import (  # noqa: E402
    Result,
    Server,
    bare,
    flowserve_argv,
    free_port,
    make_request,
)
from bench.peers.run import LAYERS, export, weights  # noqa: E402

CLIENTS = 64


def _stat(pid: int) -> tuple[float, int]:
    """User + system CPU seconds of process ``pid`` (all its threads), and its minor page
    faults (memory the kernel had to map in: a heap that grew back after being trimmed)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), int(fields[7])


def _raw_floor(response_file: Path) -> Server:
    """The floor without aiohttp: ``bench/bare_server.py --raw``, a bare asyncio.Protocol."""
    port = free_port()
    argv = [sys.executable, str(ROOT / "bench" / "bare_server.py"), "--port", str(port)]
    return Server([*argv, "--response-file", str(response_file), "--raw"], port, "raw")


def _ratios(result: Result, floor: Result) -> tuple[float, float]:
    """(req/s, cpu per request), each over the aiohttp floor's."""
    return result.throughput_rps / floor.throughput_rps, result.cpu_us / floor.cpu_us


def _print_row(result: Result, floor: Result) -> None:
    rps, cpu = _ratios(result, floor)
    print(
        f"{result.line()}   cpu {result.cpu_us:6.0f} us/req   "
        f"page faults {result.faults:5.2f}/req   "
        f"({rps:.0%} of the floor's req/s; {cpu:.2f}x its cpu/req)",
        flush=True,
    )


def _flowserve(tree: Path, repo: Path, *args: str) -> Server:
    """flowserve from checkout ``tree`` (its ``service`` package, this interpreter)."""
    port = free_port()
    return Server(flowserve_argv(repo, port, *args), port, "flowserve", cwd=tree)


async def _measure(
    server: Server, request, duration: float, label: str, client: str = "wrk"
) -> Result:
    """Load at CLIENTS clients; the result carries ``cpu_us``, server CPU per request."""
    await server.wait_ready()
    await run_client(client, server.url, request, CLIENTS, 1.0, warmup=0.0)  # warm up
    cpu, faults = _stat(server.proc.pid)
    result = await run_client(
        client, server.url, request, CLIENTS, duration, warmup=0.0, label=label
    )
    cpu_after, faults_after = _stat(server.proc.pid)
    result.cpu_us = (cpu_after - cpu) / max(1, result.requests) * 1e6
    result.faults = (faults_after - faults) / max(1, result.requests)
    return result


async def run(
    duration: float, rounds: int, trees: dict[str, Path], client: str = "wrk", lane: str = "both"
) -> list[tuple]:
    lanes = [(", fast lane", []), (", fast lane off", ["--no-fast-lane"])]
    lanes = {"both": lanes, "on": lanes[:1], "off": lanes[1:], "default": [("", [])]}[lane]
    work = Path(tempfile.mkdtemp(prefix="fs-request-path-"))
    export(work / "repo" / "mlp" / "1", weights())
    batching = work / "batching.json"
    batching.write_text(
        json.dumps({"max_batch_size": 64, "batch_timeout_micros": 0, "num_batch_threads": 1})
    )
    modes = {"off": [], "on": ["--enable-batching", "--batching-parameters-file", str(batching)]}
    x = np.random.default_rng(0).standard_normal((1, LAYERS[0])).astype(np.float32)
    requests = {p: make_request(p, "mlp", "x", x) for p in ("tfserving", "v2")}
    reply = work / "reply.json"
    server = _flowserve(ROOT, work / "repo")
    try:
        await server.wait_ready()
        async with aiohttp.ClientSession() as s:
            req = requests["tfserving"]
            async with s.post(server.url + req.path, data=req.body) as resp:
                reply.write_bytes(await resp.read())
    finally:
        server.stop()
    rows = []
    for _ in range(rounds):
        floor_server = bare(reply)
        try:
            floor = await _measure(
                floor_server, requests["tfserving"], duration, "bare floor", client
            )
        finally:
            floor_server.stop()
        print(
            f"{floor.line()}   cpu {floor.cpu_us:6.0f} us/req   "
            f"page faults {floor.faults:5.2f}/req",
            flush=True,
        )
        raw_server = _raw_floor(reply)
        try:
            raw = await _measure(
                raw_server, requests["tfserving"], duration, "raw-protocol floor", client
            )
        finally:
            raw_server.stop()
        _print_row(raw, floor)
        rows.append(("raw-protocol floor (no aiohttp)", *_ratios(raw, floor)))
        for protocol, name in (("tfserving", "TF Serving REST"), ("v2", "V2 JSON")):
            for (mode, args), (lane, lane_args) in itertools.product(modes.items(), lanes):
                for tree_name, tree in trees.items():
                    label = f"{tree_name}: {name}, batching {mode}{lane}"
                    server = _flowserve(tree, work / "repo", *args, *lane_args)
                    try:
                        r = await _measure(server, requests[protocol], duration, label, client)
                    finally:
                        server.stop()
                    _print_row(r, floor)
                    rows.append((label, *_ratios(r, floor)))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=3.0, help="seconds per server")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--compare", type=Path, help="another checkout to run beside this one")
    parser.add_argument("--client", default="wrk", help="wrk (default), hey or aiohttp")
    parser.add_argument(
        "--lane",
        choices=("both", "on", "off", "default"),
        default="both",
        help="flowserve with the fast lane and without (both), one of them, or its default "
        "flags (for --compare with a checkout that has no lane)",
    )
    args = parser.parse_args(argv)
    why = available(args.client)
    if why:
        parser.error(why)
    trees = {"this": ROOT}
    if args.compare is not None:
        trees = {"compare": args.compare.resolve(), "this": ROOT}
    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, {CLIENTS} clients "
        f"({args.client})"
    )
    rows = asyncio.run(run(args.duration, args.rounds, trees, args.client, args.lane))
    print(f"\nload average {os.getloadavg()[0]:.1f}")
    print("\n| server | of the floor's req/s | cpu per request / the floor's |\n|---|---|---|")
    for label, rps, cpu in rows:
        print(f"| {label} | {rps:.0%} | {cpu:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
