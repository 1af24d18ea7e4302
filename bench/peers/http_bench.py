"""The HTTP half of ``run.py``: every server on the same MLP, the same bodies, the same client.

One run starts each server in turn on free 127.0.0.1 ports, checks that it answers the
reference request with flowserve's probabilities (a wrong peer is worse than none), drives it
with ``concurrency`` clients for ``duration`` seconds and stops it:

- the floor: ``bench/bare_server.py`` parsing the same JSON and answering a fixed reply
  (once with the TF Serving REST body, once with the V2 body)
- flowserve, TF Serving REST and V2 JSON, batching off and on, and the REST run with each
  speed means turned off (asyncio's loop; no inline compute)
- MLServer (``parallel_workers: 0`` and its default workers; adaptive batching off and on)
- Triton through PyTriton (dynamic batching off and on)

``--rounds N`` repeats the whole sequence N times (interleaved, so load from elsewhere hits
every row alike) and keeps each row's best round.
"""

from __future__ import annotations

import json
import os
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import aiohttp
import numpy as np

from bench.http_clients import CLIENTS, available, run_client
from bench.load import Request, Result, Server, bare, flowserve, make_request
from bench.peers import servers
from bench.peers.mlp import INPUT_NAME, LAYERS, MODEL_NAME, numpy_mlp, weights

FLOWSERVE_BATCHING = {"max_batch_size": 64, "batch_timeout_micros": 0, "num_batch_threads": 1}

# Targets of issue 13: (ratio name, numerator group, denominator group, at least).
TARGETS = (
    ("flowserve REST / floor", "rest", "floor-rest", 0.70),
    ("flowserve V2 / floor", "v2", "floor-v2", 0.70),
    ("flowserve REST / MLServer", "rest", "mlserver", 3.0),
    ("flowserve V2 / MLServer", "v2", "mlserver", 3.0),
    ("flowserve REST / Triton", "rest", "triton", 2.0),
    ("flowserve V2 / Triton", "v2", "triton", 2.0),
)


@dataclass
class Row:
    """One server configuration: how to start it and which request it gets."""

    label: str
    group: str  # floor-rest, floor-v2, rest, v2, means, mlserver, triton
    protocol: str  # tfserving or v2
    start: Callable[[], Server]
    check: bool = True  # compare its answer with flowserve's before timing


@dataclass
class Reference:
    """flowserve's answers to the two requests: the floor replays them, peers must match."""

    requests: dict[str, Request]
    replies: dict[str, bytes]
    probabilities: np.ndarray


def flowserve_rows(repo: Path, work: Path) -> list[Row]:
    batching = work / "batching.json"
    batching.write_text(json.dumps(FLOWSERVE_BATCHING))
    on = ["--enable-batching", "--batching-parameters-file", str(batching)]
    rows = []
    for protocol, group, name in (
        ("tfserving", "rest", "TF Serving REST"),
        ("v2", "v2", "V2 JSON"),
    ):
        for state, args in (("off", []), ("on", on)):
            label = f"flowserve {name}, batching {state}"
            rows.append(Row(label, group, protocol, _starter(flowserve, repo, "flowserve", *args)))
    for label, args in (
        ("  same (REST, off), asyncio loop", ["--event-loop", "asyncio"]),
        ("  same (REST, off), no inline compute", ["--inline-compute-micros", "0"]),
    ):
        rows.append(Row(label, "means", "tfserving", _starter(flowserve, repo, "flowserve", *args)))
    return rows


def peer_rows(args, work: Path, skipped: dict[str, str]) -> list[Row]:
    """The peers' rows; a peer whose venv is missing is left out, the reason printed and
    put in ``skipped``."""
    venvs = {"mlserver": args.mlserver_venv, "pytriton": args.pytriton_venv}
    rows = []
    for peer in args.peers:
        venv = servers.venv_path(peer, venvs[peer])
        why = servers.missing(peer, venv)
        if why:
            print(f"skipping {peer}: {why}", flush=True)
            skipped[peer] = why
            continue
        if peer == "mlserver":
            for workers, wname in ((0, "parallel_workers 0"), (None, "default workers")):
                for on in (False, True):
                    label = f"MLServer, {wname}, batching {'on' if on else 'off'}"
                    name = f"mlserver-{wname.split()[-1]}-{'on' if on else 'off'}"
                    batch_time = args.mlserver_max_batch_time if on else None
                    start = _starter(servers.mlserver, venv, work, name, workers, batch_time)
                    rows.append(Row(label, "mlserver", "v2", start))
        else:
            for on in (False, True):
                label = f"Triton (PyTriton), batching {'on' if on else 'off'}"
                delay = args.triton_max_queue_delay_us if on else None
                start = _starter(servers.pytriton, venv, "pytriton", delay, args.triton_instances)
                rows.append(Row(label, "triton", "v2", start))
    return rows


def _starter(fn, *args) -> Callable[[], Server]:
    return lambda: fn(*args)


async def reference(repo: Path) -> Reference:
    """flowserve's replies to the REST and V2 requests, checked against the numpy MLP."""
    x = np.random.default_rng(0).standard_normal((1, LAYERS[0])).astype(np.float32)
    requests = {p: make_request(p, MODEL_NAME, INPUT_NAME, x) for p in ("tfserving", "v2")}
    server = flowserve(repo, "flowserve-reference")
    replies = {}
    try:
        await server.wait_ready()
        async with aiohttp.ClientSession() as s:
            for protocol, req in requests.items():
                async with s.post(server.url + req.path, data=req.body, headers=req.headers) as r:
                    if r.status != 200:
                        raise RuntimeError(f"flowserve {protocol}: HTTP {r.status}")
                    replies[protocol] = await r.read()
    finally:
        server.stop()
    probs = servers.probabilities(json.loads(replies["tfserving"]))
    expected = numpy_mlp(weights())(x)
    diff = float(np.abs(probs - expected).max())
    if probs.shape != expected.shape or diff > 1e-6:
        raise RuntimeError(f"flowserve disagrees with the numpy MLP: max |diff| {diff:.1e}")
    return Reference(requests, replies, probs)


def floor_rows(ref: Reference, work: Path) -> list[Row]:
    rows = []
    for protocol, group, name in (("tfserving", "floor-rest", "REST"), ("v2", "floor-v2", "V2")):
        reply = work / f"reply-{protocol}.json"
        reply.write_bytes(ref.replies[protocol])
        label = f"bare aiohttp floor ({name} body)"
        rows.append(Row(label, group, protocol, _starter(bare, reply), check=False))
    return rows


async def start_ready(row: Row, args, attempts: int = 2) -> Server:
    """Starts ``row``'s server and waits until it is ready, trying again once when it dies
    or hangs on the way (a port another process took between ``free_port`` and the bind);
    the failed attempt's log tail is printed, the last failure raises with its log kept."""
    for attempt in range(1, attempts + 1):
        server = row.start()
        try:
            await server.wait_ready(timeout=args.start_timeout)
            return server
        except RuntimeError as e:
            tail = server.log_tail(1500)
            server.stop(keep_log=attempt == attempts)
            if attempt == attempts:
                raise RuntimeError(f"{e}:\n{tail}") from None
            print(f"{row.label}: start {attempt} failed ({e}), trying again:\n{tail}")
    raise AssertionError("unreachable")


async def measure(row: Row, ref: Reference, args) -> Result | str:
    """One row: start, await readiness, check the answer, load it, stop. A failure is
    returned as the reason (and the server's log tail), never raised: one broken peer must
    not lose the other rows."""
    request = ref.requests[row.protocol]
    try:
        server = await start_ready(row, args)
    except Exception as e:  # noqa: BLE001 - reported in the table, the run goes on
        return "failed to start: " + "".join(traceback.format_exception_only(e)).strip()
    keep_log = False
    try:
        if row.check:
            check = await servers.check_answer(server.url, request, ref.probabilities)
            if not check.ok:
                return f"wrong answer ({check.detail}); not timed"
        return await run_client(
            args.client, server.url, request, args.concurrency, args.duration, label=row.label
        )
    except Exception as e:  # noqa: BLE001 - reported in the table, the run goes on
        keep_log = True
        detail = "".join(traceback.format_exception_only(e)).strip()
        return f"failed: {detail}; log {server.log.name}:\n{server.log_tail(1500)}"
    finally:
        server.stop(keep_log=keep_log)


async def run_http(args, work: Path, export_model: Callable[[Path], None]) -> dict:
    """Every row, ``args.rounds`` times; returns the best result (or failure) per row."""
    repo = work / "repo"
    export_model(repo / MODEL_NAME / "1")
    ref = await reference(repo)
    rows = floor_rows(ref, work) + flowserve_rows(repo, work)
    skipped: dict[str, str] = {}
    rows += peer_rows(args, work, skipped)
    best: dict[str, Result | str] = {}
    for round_ in range(args.rounds):
        print(f"-- round {round_ + 1} of {args.rounds}, load average {os.getloadavg()[0]:.1f}")
        for row in rows:
            got = await measure(row, ref, args)
            print(got.line() if isinstance(got, Result) else f"{row.label}: {got}", flush=True)
            old = best.get(row.label)
            if isinstance(got, Result) and (
                not isinstance(old, Result) or got.throughput_rps > old.throughput_rps
            ):
                best[row.label] = got
            elif old is None:
                best[row.label] = got
    return {"rows": rows, "best": best, "skipped_peers": skipped}


def summarize(rows: list[Row], best: dict) -> dict:
    """The table and the issue's ratios (best row of each group), as a dict."""
    top: dict[str, Result] = {}
    for row in rows:
        r = best.get(row.label)
        if isinstance(r, Result) and (
            row.group not in top or r.throughput_rps > top[row.group].throughput_rps
        ):
            top[row.group] = r
    ratios = []
    for name, num, den, target in TARGETS:
        if num in top and den in top and top[den].throughput_rps > 0:
            value = top[num].throughput_rps / top[den].throughput_rps
            ratios.append(
                {
                    "ratio": name,
                    "value": round(value, 3),
                    "target": target,
                    "met": value >= target,
                    "of": [top[num].label, top[den].label],
                }
            )
        else:
            ratios.append(
                {"ratio": name, "value": None, "target": target, "met": None, "of": "not measured"}
            )
    table = []
    for row in rows:
        r = best.get(row.label)
        if isinstance(r, Result):
            table.append(
                {"server": row.label, "group": row.group, "protocol": row.protocol, **asdict(r)}
            )
        else:
            table.append(
                {"server": row.label, "group": row.group, "protocol": row.protocol, "skipped": r}
            )
    return {"table": table, "ratios": ratios}


def print_summary(summary: dict, args) -> None:
    floors = {
        t["protocol"]: t["throughput_rps"]
        for t in summary["table"]
        if t["group"].startswith("floor") and "requests" in t
    }
    print(f"\n{args.concurrency} clients, {args.duration:g} s per row, client: {args.client}")
    print("\n| server | req/s | p50 | p99 | of the floor (same body) |\n|---|---|---|---|---|")
    for t in summary["table"]:
        if "requests" not in t:
            print(f"| {t['server']} | - | - | - | {t['skipped'].splitlines()[0][:120]} |")
            continue
        base = floors.get(t["protocol"])
        share = f"{t['throughput_rps'] / base:.0%}" if base else "-"
        err = f" ({sum(t['errors'].values())} errors)" if t["errors"] else ""
        print(
            f"| {t['server']} | {t['throughput_rps']:.0f}{err} | {t['p50_ms']:.1f} ms "
            f"| {t['p99_ms']:.1f} ms | {share} |"
        )
    print("\n| ratio (best of each) | value | target |\n|---|---|---|")
    for r in summary["ratios"]:
        if r["value"] is None:
            print(f"| {r['ratio']} | not measured | >= {r['target']:g} |")
        else:
            verdict = "met" if r["met"] else "NOT met"
            print(f"| {r['ratio']} | {r['value']:.2f} | >= {r['target']:g}: {verdict} |")
    print_client_share(summary, args)


def print_client_share(summary: dict, args) -> None:
    """How much of the machine the load client itself took while driving the floor."""
    floor = next(
        (t for t in summary["table"] if t["group"] == "floor-rest" and "requests" in t), None
    )
    if floor and floor["client_cpu_s"]:
        cores = os.cpu_count() or 1
        share = floor["client_cpu_s"] / floor["duration_s"] / cores
        print(
            f"\nthe client ({args.client}) took {share:.0%} of the {cores} cores during the "
            f"floor run ({floor['client_cpu_s'] / max(floor['requests'], 1) * 1e6:.0f} us CPU "
            f"per request)"
        )


async def compare_clients(args, work: Path, export_model: Callable[[Path], None]) -> list:
    """The floor (REST body) driven by each available client in turn: the client that gets
    the most out of the same server spends the least of the shared cores on itself."""
    repo = work / "repo"
    export_model(repo / MODEL_NAME / "1")
    ref = await reference(repo)
    row = floor_rows(ref, work)[0]
    results = []
    for _ in range(args.rounds):
        for client in CLIENTS:
            why = available(client)
            if why:
                print(f"{client}: {why}")
                continue
            server = row.start()
            try:
                await server.wait_ready(timeout=args.start_timeout)
                r = await run_client(
                    client,
                    server.url,
                    ref.requests[row.protocol],
                    args.concurrency,
                    args.duration,
                    label=f"floor (REST body) by {client}",
                )
            finally:
                server.stop()
            cores = os.cpu_count() or 1
            share = r.client_cpu_s / r.duration_s / cores
            print(
                f"{r.line()}   client CPU {share:.0%} of {cores} cores, "
                f"{r.client_cpu_s / max(r.requests, 1) * 1e6:.0f} us/request",
                flush=True,
            )
            results.append(r)
    return results
