"""Batching on vs off, each pair measured in one run (issue 13's batching targets).

    python bench/batching.py [--duration 5] [--parts inprocess,http,clients,background]
        [--rounds 3] [--batching-parameters FILE] [--baseline REF] [--client wrk|hey|aiohttp]
        [--variant LABEL=FLAGS ...] [--json out.json]

Parts (every pair alternates on/off in the same run, ``--rounds`` times in rotating order,
printing medians; servers listen on free 127.0.0.1 ports and are stopped at the end):

* ``inprocess``: ``wide_mlp`` (784-2048-2048-10) driven by 64 concurrent asyncio callers of
  ``ModelManager.infer`` -- the servable core, no HTTP -- batching off vs on (target >= 4x),
  and ``on-split``: batching on with one batch thread, batches of up to 64 rows and
  ``--intra-op-threads`` = cores (each batch's large products split across every core by
  ``engine.ops.split_product``).
* ``http``: the same over HTTP (TF Serving REST JSON, 64 connections of the load client:
  ``wrk`` where installed, as ``bench/peers/run.py`` uses; ``--client`` picks ``hey`` or
  ``bench/load.py``'s aiohttp client, which costs the shared cores about 6x wrk's CPU per
  request) (target >= 3x), ``on-split`` included.
* ``clients``: the 784-256-128-10 ``mlp`` over HTTP at 1, 8 and 64 clients: req/s, p50, p99,
  batching off vs on (and ``on-split``) (target: on's p99 never above off's).
* ``background``: ``clients`` again while a subprocess spins single-threaded numpy matmuls
  (one core busy with unrelated work).
* ``blas``: ``mlp`` at 64 clients under the same background work, off vs on, with
  ``--intra-op-threads 1`` and 2. Before products were split by the engine, 2 meant two
  OpenBLAS threads per computation, which wait for each other whenever the background work
  holds a core: that made batching's p99 triple. Now BLAS always runs one thread and 2
  splits large products, whose blocks a busy thread never holds up.

Each HTTP row also prints where a request's time went, from the server's own statistics
(``/v2/models/NAME/stats``): mean queue wait per request, mean compute per session run, and
mean rows per run, and the server's garbage collections per generation during the measurement
(``gc0``/``gc1``/``gc2``, from ``/metrics``; a full ``gc2`` collection stops the event loop for
tens of milliseconds with every in-flight request waiting), and from the kernel (``/proc``) the
cores used by the event loop's thread and by the other (compute, batch) threads, the cores'
worth of time each spent runnable but waiting for a CPU (``*_cpu_wait``), and the compute
threads' sleeps per session run (voluntary context switches: waiting for the GIL, or for work).
Batching parameters are the server's defaults unless ``--batching-parameters`` names a TF
Serving batching parameters file. ``--baseline REF`` (a git ref, e.g. ``main``) also serves
batching on from that commit's code (``git archive`` into a temporary directory), measured in
the same rounds: before/after -- over HTTP a third server, in process a child process whose
engine and service modules are the baseline's. In process, every manager runs after the
server's garbage-collector tuning (``--gc-threshold``'s default), as the server does.

``--variant LABEL=FLAGS`` (repeatable) adds a server over HTTP with batching on (LABEL
``on-...``) or off (``off-...``) and FLAGS added, measured in the same rotating rounds and
compared with its own mode's server: an A/B of a server setting, e.g.
``--variant "on-swi500=--switch-interval-micros 500"``. A pair ``on-X`` and ``off-X`` also
prints on-X/off-X: batching's gain with that setting on both sides, e.g. every core's worth of
processes: ``--variant "off-workers=--workers 2" --variant "on-workers=--workers 2"``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from asyncio.subprocess import PIPE
from dataclasses import asdict
from functools import partial
from pathlib import Path

BLAS_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
for _var in BLAS_VARS:
    os.environ.setdefault(_var, "1")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
import numpy as np  # noqa: E402

from bench.bench_models import build_repository  # noqa: E402
from bench.http_clients import CLIENTS as CLIENT_NAMES  # noqa: E402
from bench.http_clients import available, run_client  # noqa: E402
from bench.load import (  # noqa: E402
    Result,
    Server,
    flowserve,
    flowserve_argv,
    free_port,
    make_request,
)

CLIENTS = (1, 8, 64)
PARTS = ("inprocess", "http", "clients", "background", "blas")

# One core of unrelated CPU work: single-threaded BLAS matmuls, back to back, until killed.
SPINNER = (
    "import numpy as np\n"
    "a = np.random.default_rng(0).standard_normal((384, 384)).astype(np.float32)\n"
    "while True:\n"
    "    a = np.tanh(a @ a)\n"
)


# -----------------------------------------------------------------------------------------
# In process: ModelManager.infer without HTTP
# -----------------------------------------------------------------------------------------


async def _managers(repo: Path, params: Path | None, labels=("off", "on")) -> dict:
    """Managers serving ``repo`` with batching off and on, in this process, after the
    server's garbage-collector tuning (``--gc-threshold``'s default), as the server runs."""
    from service.cli import tune_garbage_collector
    from service.config import ServerConfig
    from service.manager import ModelManager

    tune_garbage_collector(ServerConfig.gc_threshold)
    managers = {}
    for label in labels:
        kw = {"enable_batching": label == "on"}
        if params is not None and label == "on":
            kw["batching_parameters_file"] = str(params)
        manager = ModelManager(
            ServerConfig(model_repository=str(repo), poll_interval=0, **kw).validate()
        )
        await manager.start()
        managers[label] = manager
    return managers


async def drive_in_process(manager, model: str, x: np.ndarray, clients: int, duration: float):
    """``clients`` asyncio callers of ``manager.infer`` back to back for ``duration`` s; also
    the event loop's lag (how late a 1 ms sleep wakes), the sign of a starved loop."""
    loop = asyncio.get_running_loop()
    latencies: list[float] = []
    lags: list[float] = []
    end = loop.time() + duration

    async def client():
        while loop.time() < end:
            t0 = time.perf_counter()
            await manager.infer(model, {"x": x})
            latencies.append(time.perf_counter() - t0)

    async def probe():
        while loop.time() < end:
            t0 = loop.time()
            await asyncio.sleep(0.001)
            lags.append(loop.time() - t0 - 0.001)

    before = manager.model_statistics(model)[0]
    t0 = loop.time()
    await asyncio.gather(probe(), *(client() for _ in range(clients)))
    elapsed = loop.time() - t0
    after = manager.model_statistics(model)[0]
    result = Result.of("", clients, elapsed, latencies)
    where = _where(before, after)
    where["loop_lag_p99_ms"] = round(float(np.percentile(np.array(lags) * 1000, 99)), 3)
    return result, where


WIDE_X = np.random.default_rng(0).standard_normal((1, 784)).astype(np.float32)


async def _drive_wide(manager, duration: float) -> tuple[Result, dict]:
    return await drive_in_process(manager, "wide_mlp", WIDE_X, 64, duration)


def split_params(where: Path) -> Path:
    """The batching parameters of the ``on-split`` configuration (one batch thread, batches of
    up to 64 rows), written under ``where``."""
    path = where / "split-batching.json"
    path.write_text(json.dumps({"max_batch_size": 64, "num_batch_threads": 1}))
    return path


SPLIT_FLAGS = ["--intra-op-threads", str(os.cpu_count() or 1)]


async def _drive_split(manager, duration: float) -> tuple[Result, dict]:
    """``on-split``: as the server runs with ``--intra-op-threads`` = cores (large products
    split across every core, see ``engine.ops.split_product``), for this drive only."""
    from engine.ops import split_product

    split_product.set_threads(os.cpu_count() or 1)
    try:
        return await _drive_wide(manager, duration)
    finally:
        split_product.set_threads(1)


class BaselineProcess:
    """The baseline tree's ``ModelManager`` (batching on) in a child process, driven the
    same way on request: its engine and service modules are the baseline's (imported
    first), the driving code this file's."""

    def __init__(self, code: Path, repo: Path, params: Path | None):
        self.args = [str(code), str(repo), str(params) if params else ""]
        self.proc = None

    async def start(self) -> None:
        boot = (
            "import sys; sys.path.insert(0, sys.argv[1]); import engine, service.manager; "
            f"sys.path.insert(0, {str(ROOT)!r}); from bench.batching import _baseline_child; "
            "_baseline_child(*sys.argv[1:])"
        )
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", boot, *self.args, stdin=PIPE, stdout=PIPE
        )
        await self._ask("ready")

    async def _ask(self, line: str) -> dict:
        self.proc.stdin.write(f"{line}\n".encode())
        await self.proc.stdin.drain()
        reply = await self.proc.stdout.readline()
        if not reply:
            raise RuntimeError("the baseline process ended (see its stderr above)")
        return json.loads(reply)

    async def drive(self, duration: float) -> tuple[Result, dict]:
        doc = await self._ask(f"drive {duration}")
        return Result(**doc["result"]), doc["where"]

    async def stop(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.stdin.write(b"quit\n")
            await self.proc.stdin.drain()
            await self.proc.wait()


def _baseline_child(code: str, repo: str, params: str) -> None:
    """The child of ``BaselineProcess``: one JSON line answered per command line."""
    import engine
    import service

    for module in (engine, service):  # the baseline's code, not this tree's
        if not Path(module.__file__).resolve().is_relative_to(Path(code).resolve()):
            raise RuntimeError(f"{module.__name__} comes from {module.__file__}, not {code}")

    async def serve() -> None:
        manager = (await _managers(Path(repo), Path(params) if params else None, ("on",)))["on"]
        loop = asyncio.get_running_loop()
        try:
            while True:
                line = (await loop.run_in_executor(None, sys.stdin.readline)).split()
                if not line or line[0] == "quit":
                    return
                doc = {}
                if line[0] == "drive":
                    r, where = await _drive_wide(manager, float(line[1]))
                    doc = {"result": asdict(r), "where": where}
                print(json.dumps(doc), flush=True)
        finally:
            await manager.stop()

    asyncio.run(serve())


async def part_inprocess(
    repo: Path, params: Path | None, duration: float, rounds: int, baseline: Path | None = None
) -> dict:
    drivers = {}
    managers = await _managers(repo, params)
    for label, manager in managers.items():
        drivers[label] = partial(_drive_wide, manager)
    split = (await _managers(repo, split_params(repo.parent), ("on",)))["on"]
    managers["on-split"] = split
    drivers["on-split"] = partial(_drive_split, split)
    child = None
    if baseline is not None:
        child = BaselineProcess(baseline, repo, params)
        await child.start()
        drivers["on@baseline"] = child.drive

    async def measure(i: int) -> dict:
        out = {}
        for label in _order(drivers, i):
            r, where = await drivers[label](duration)
            r.label = f"wide_mlp in process, 64 callers, batching {label}"
            out[label] = (r, where)
        return out

    try:
        for drive in drivers.values():  # warm all (first batches, thread start)
            await drive(min(duration, 0.5))
        out = await _repeat(measure, rounds)
    finally:
        for m in managers.values():
            await m.stop()
        if child is not None:
            await child.stop()
    ratios = {}
    for label in out:
        if label != "off":
            name = f"wide_mlp in-process throughput {label}/off (target >= 4)"
            ratios[name] = _ratio(out[label][0].throughput_rps, out["off"][0].throughput_rps)
    return {"rows": out, "ratios": ratios}


def _median(rows: list[tuple[Result, dict]]) -> tuple[Result, dict]:
    """Field by field, the median of repeated measurements of one configuration."""
    if len(rows) == 1:
        return rows[0]
    results = [r for r, _ in rows]

    def med(name: str) -> float:
        return round(float(np.median([getattr(r, name) for r in results])), 3)

    errors: dict = {}
    for r in results:
        for k, v in r.errors.items():
            errors[k] = errors.get(k, 0) + v
    merged = Result(
        f"{results[0].label} (median of {len(rows)})",
        results[0].concurrency,
        med("duration_s"),
        sum(r.requests for r in results),
        errors,
        med("throughput_rps"),
        med("p50_ms"),
        med("p90_ms"),
        med("p99_ms"),
        med("mean_ms"),
    )
    where = {k: round(float(np.median([w[k] for _, w in rows])), 3) for k in rows[0][1]}
    return merged, where


async def _repeat(measure, rounds: int) -> dict:
    """``measure(i)`` (label -> (Result, where)) ``rounds`` times; the medians per label."""
    runs = [await measure(i) for i in range(rounds)]
    return {label: _median([run[label] for run in runs]) for label in runs[0]}


# -----------------------------------------------------------------------------------------
# Over HTTP
# -----------------------------------------------------------------------------------------


async def _stats(url: str, model: str) -> dict | None:
    """The model's statistics (Triton's model_stats), with the server's garbage collections
    so far per generation (``gc``, from ``/metrics``: a full collection stops the loop); None
    from a server with ``--workers`` (its statistics are per process: see ``/metrics``)."""
    async with aiohttp.ClientSession() as s:
        async with s.get(f"{url}/v2/models/{model}/stats") as r:
            if r.status != 200:
                return None
            doc = (await r.json())["model_stats"][0]
        async with s.get(f"{url}/metrics") as r:
            doc["gc"] = _gc_collections(await r.text())
    return doc


def _gc_collections(metrics: str) -> list[float]:
    """``python_gc_collections_total`` per generation (0, 1, 2) from a Prometheus page."""
    counts = [0.0, 0.0, 0.0]
    for line in metrics.splitlines():
        if line.startswith("python_gc_collections_total{"):
            labels, value = line.rsplit(" ", 1)
            generation = labels.split('generation="', 1)[1].split('"', 1)[0]
            counts[int(generation)] = float(value)
    return counts


def _where(before: dict, after: dict) -> dict:
    """Mean queue wait per request, compute per session run and rows per run between two
    statistics documents (Triton's model_stats)."""

    def delta(doc_key, field):
        a = after["inference_stats"][doc_key][field]
        b = before["inference_stats"][doc_key][field]
        return a - b

    requests = max(1, delta("success", "count"))
    runs = max(1, after["execution_count"] - before["execution_count"])
    rows = after["inference_count"] - before["inference_count"]
    where = {
        "queue_ms": round(delta("queue", "ns") / requests / 1e6, 3),
        "compute_ms_per_run": round(delta("compute_infer", "ns") / runs / 1e6, 3),
        "rows_per_run": round(rows / runs, 2),
    }
    if "gc" in before and "gc" in after:  # over HTTP: collections in the measurement
        for generation, (b, a) in enumerate(zip(before["gc"], after["gc"])):
            where[f"gc{generation}"] = a - b
    return where


def _scheduling(pid: int) -> dict:
    """The kernel's view of process ``pid``'s threads, the event loop's (the main thread)
    and the others' summed: CPU seconds, seconds runnable but waiting for a core (both from
    ``/proc/PID/task/TID/schedstat``), voluntary context switches (the thread slept: on the
    GIL, a lock, or waiting for work) and involuntary ones (preempted)."""
    out = {"loop": [0.0, 0.0, 0, 0], "threads": [0.0, 0.0, 0, 0]}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:  # not Linux, or the process is gone
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                on_cpu, waiting, _ = (int(x) for x in f.read().split())
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                status = dict(line.split(":", 1) for line in f if ":" in line)
        except (OSError, ValueError):  # the thread ended meanwhile
            continue
        row = out["loop" if int(tid) == pid else "threads"]
        row[0] += on_cpu / 1e9
        row[1] += waiting / 1e9
        row[2] += int(status.get("voluntary_ctxt_switches", "0"))
        row[3] += int(status.get("nonvoluntary_ctxt_switches", "0"))
    return out


def _scheduling_where(before: dict, after: dict, seconds: float, runs: int) -> dict:
    """Cores used and cores' worth of waiting for a CPU, by the loop and by the compute
    (batch) threads, and the compute threads' sleeps per session run (a thread back from a
    numpy call that finds the GIL held sleeps until it is handed over)."""
    where = {}
    for name in ("loop", "threads"):
        d = [a - b for a, b in zip(after[name], before[name])]
        where[f"{name}_cpu"] = round(d[0] / seconds, 2)
        where[f"{name}_cpu_wait"] = round(d[1] / seconds, 2)
        if name == "threads":
            where["thread_sleeps_per_run"] = round(d[2] / max(1, runs), 1)
    return where


async def http_pair(
    servers: dict, model: str, clients: int, duration: float, order, client: str
) -> dict:
    """One measurement per server in ``order`` (labels of ``servers``), back to back, by the
    load client ``client`` (``bench.http_clients``: wrk, hey or aiohttp)."""
    x = np.random.default_rng(0).standard_normal((1, 784)).astype(np.float32)
    request = make_request("tfserving", model, "x", x)
    out = {}
    for label in order:
        server = servers[label]
        before = await _stats(server.url, model)
        threads, t0 = _scheduling(server.proc.pid), time.monotonic()
        r = await run_client(
            client,
            server.url,
            request,
            clients,
            duration,
            warmup=min(1.0, duration / 4),
            label=f"{model}, {clients} clients, batching {label}",
        )
        threads_after, elapsed = _scheduling(server.proc.pid), time.monotonic() - t0
        after = await _stats(server.url, model)
        where = {}
        if before is not None and after is not None:
            where = _where(before, after)
            runs = after["execution_count"] - before["execution_count"]
            where.update(_scheduling_where(threads, threads_after, elapsed, runs))
        out[label] = (r, where)
    return out


def _baseline_server(code: Path, repo: Path, name: str, *args: str) -> Server:
    """flowserve from the code tree ``code`` (another commit), on a free port."""
    port = free_port()
    boot = f"import sys; sys.path.insert(0, {str(code)!r}); from service.cli import main; main()"
    return Server(flowserve_argv(repo, port, *args, launch=("-c", boot)), port, name)


def _export(ref: str, into: Path) -> Path:
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref], check=True, capture_output=True
    ).stdout
    into.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def parse_variant(text: str) -> tuple[str, list[str]]:
    """``LABEL=FLAGS`` (``on-swi500=--switch-interval-micros 500``): a server with batching
    on (LABEL starts with ``on``) or off (``off``), given FLAGS on top."""
    label, sep, flags = text.partition("=")
    if not sep or not label.startswith(("on-", "off-")):
        raise argparse.ArgumentTypeError(
            f"a variant is LABEL=FLAGS with LABEL starting with on- or off-, got {text!r}"
        )
    return label, shlex.split(flags)


async def start_servers(
    repo: Path, params: Path | None, baseline: Path | None = None, variants: tuple = ()
) -> dict:
    servers = {}
    extra = ["--batching-parameters-file", str(params)] if params is not None else []
    with _blas_env_unset():  # as shipped: the server's own BLAS limit decides
        servers["off"] = flowserve(repo, "batching-off")
        servers["on"] = flowserve(repo, "batching-on", "--enable-batching", *extra)
        servers["on-split"] = flowserve(
            repo,
            "batching-on-split",
            "--enable-batching",
            "--batching-parameters-file",
            str(split_params(repo.parent)),
            *SPLIT_FLAGS,
        )
        for label, flags in variants:
            on = ["--enable-batching", *extra] if label.startswith("on") else []
            servers[label] = flowserve(repo, f"batching-{label}", *on, *flags)
        if baseline is not None:
            servers["on@baseline"] = _baseline_server(
                baseline, repo, "batching-on-baseline", "--enable-batching", *extra
            )
    try:
        for s in servers.values():
            await s.wait_ready()
    except BaseException:
        for s in servers.values():
            s.stop()
        raise
    return servers


def _ratio(a: float, b: float) -> float:
    return round(a / max(b, 1e-9), 2)


def _order(servers: dict, i: int) -> list[str]:
    """The labels of ``servers`` (or managers) rotated by ``i``: none always goes first."""
    labels = list(servers)
    i %= len(labels)
    return labels[i:] + labels[:i]


def _pair_ratios(pair: dict, title: str, p99: bool) -> dict:
    ratios = {}
    off = pair["off"][0]
    for label in pair:
        if label == "off":
            continue
        r = pair[label][0]
        if p99:
            ratios[f"{title} p99 {label}/off (target <= 1)"] = _ratio(r.p99_ms, off.p99_ms)
        ratios[f"{title} req/s {label}/off"] = _ratio(r.throughput_rps, off.throughput_rps)
        base = label.split("-", 1)[0]
        if label != base and base in pair:  # a variant, beside its own mode's server
            other = pair[base][0]
            ratios[f"{title} req/s {label}/{base}"] = _ratio(r.throughput_rps, other.throughput_rps)
            ratios[f"{title} p99 {label}/{base}"] = _ratio(r.p99_ms, other.p99_ms)
            twin = "off-" + label.split("-", 1)[1]
            if base == "on" and twin in pair:  # on-X beside off-X: batching's gain at X
                off_x = pair[twin][0]
                ratios[f"{title} req/s {label}/{twin}"] = _ratio(
                    r.throughput_rps, off_x.throughput_rps
                )
                ratios[f"{title} p99 {label}/{twin}"] = _ratio(r.p99_ms, off_x.p99_ms)
    return ratios


async def part_http(servers: dict, duration: float, rounds: int, client: str) -> dict:
    async def measure(i: int) -> dict:
        return await http_pair(servers, "wide_mlp", 64, duration, _order(servers, i), client)

    pair = await _repeat(measure, rounds)
    return {
        "rows": pair,
        "ratios": _pair_ratios(pair, "wide_mlp HTTP 64 clients (target on/off >= 3):", False),
    }


async def part_clients(
    servers: dict, duration: float, rounds: int, title: str, client: str
) -> dict:
    rows, ratios = {}, {}
    for clients in CLIENTS:

        async def measure(i: int, clients: int = clients) -> dict:
            return await http_pair(servers, "mlp", clients, duration, _order(servers, i), client)

        pair = await _repeat(measure, rounds)
        for label, row in pair.items():
            rows[f"{clients}/{label}"] = row
        ratios.update(_pair_ratios(pair, f"{title}mlp {clients} clients", True))
    return {"rows": rows, "ratios": ratios}


@contextlib.contextmanager
def _blas_env_unset():
    """Servers started inside inherit no BLAS thread variables (this script sets them to 1
    for itself), so ``--intra-op-threads`` alone decides their BLAS threads."""
    saved = {v: os.environ.pop(v) for v in BLAS_VARS if v in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


async def part_blas(
    repo: Path, params: Path | None, servers: dict, duration: float, rounds: int, client: str
):
    extra = ["--batching-parameters-file", str(params)] if params is not None else []
    with _blas_env_unset():
        two = {
            "off, 2 intra-op threads": flowserve(repo, "blas2-off", "--intra-op-threads", "2"),
            "on, 2 intra-op threads": flowserve(
                repo, "blas2-on", "--intra-op-threads", "2", "--enable-batching", *extra
            ),
        }
    group = {"off": servers["off"], "on": servers["on"], **two}
    try:
        for s in two.values():
            await s.wait_ready()
        with Background():

            async def measure(i: int) -> dict:
                return await http_pair(group, "mlp", 64, duration, _order(group, i), client)

            pair = await _repeat(measure, rounds)
    finally:
        for s in two.values():
            s.stop()
    p99 = {label: row[0].p99_ms for label, row in pair.items()}
    return {
        "rows": pair,
        "ratios": {
            "background load, mlp 64 clients, 1 intra-op thread: p99 on/off": _ratio(
                p99["on"], p99["off"]
            ),
            "background load, mlp 64 clients, 2 intra-op threads: p99 on/off": _ratio(
                p99["on, 2 intra-op threads"], p99["off, 2 intra-op threads"]
            ),
        },
    }


class Background:
    """A subprocess keeping one core busy with numpy matmuls while the block runs."""

    def __enter__(self):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SPINNER],
            env={**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"},
        )
        time.sleep(0.5)
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()


# -----------------------------------------------------------------------------------------
# Main
# -----------------------------------------------------------------------------------------


def _print(result: dict) -> None:
    for _, (r, where) in result["rows"].items():
        print(f"{r.line()}\n{'':44} where: {where}", flush=True)
    for name, value in result["ratios"].items():
        print(f"   ratio  {name}: {value}", flush=True)


async def run(
    parts: list[str],
    duration: float,
    rounds: int,
    params: Path | None,
    baseline: str | None,
    client: str = "wrk",
    variants: tuple = (),
) -> dict:
    out = {
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "duration_s": duration,
        "client": client,
        "load_average_at_start": os.getloadavg(),
    }
    with tempfile.TemporaryDirectory(prefix="fs-bench-batching-") as tmp:
        repo = build_repository(Path(tmp) / "repo")
        code = _export(baseline, Path(tmp) / "baseline") if baseline else None
        results = {}
        if "inprocess" in parts:
            print("== in process (ModelManager.infer, no HTTP)", flush=True)
            results["inprocess"] = await part_inprocess(repo, params, duration, rounds, code)
            _print(results["inprocess"])
        if {"http", "clients", "background", "blas"} & set(parts):
            servers = await start_servers(repo, params, code, variants)
            try:
                if "http" in parts:
                    print("== over HTTP: wide_mlp, 64 clients", flush=True)
                    results["http"] = await part_http(servers, duration, rounds, client)
                    _print(results["http"])
                if "clients" in parts:
                    print("== over HTTP: mlp at 1, 8, 64 clients", flush=True)
                    results["clients"] = await part_clients(servers, duration, rounds, "", client)
                    _print(results["clients"])
                if "background" in parts:
                    print("== over HTTP: mlp, one core busy with unrelated work", flush=True)
                    with Background():
                        results["background"] = await part_clients(
                            servers, duration, rounds, "background load, ", client
                        )
                    _print(results["background"])
                if "blas" in parts:
                    print(
                        "== over HTTP: mlp, 64 clients, background work, BLAS threads", flush=True
                    )
                    results["blas"] = await part_blas(
                        repo, params, servers, duration, rounds, client
                    )
                    _print(results["blas"])
            finally:
                for s in servers.values():
                    s.stop()
    out["load_average_at_end"] = os.getloadavg()
    print(f"load average: start {out['load_average_at_start']}, end {out['load_average_at_end']}")
    for name, result in results.items():
        out[name] = {
            "ratios": result["ratios"],
            "rows": {k: {**asdict(r), "where": w} for k, (r, w) in result["rows"].items()},
        }
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per measurement")
    parser.add_argument(
        "--parts", default=",".join(PARTS), help=f"comma-separated subset of {','.join(PARTS)}"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="measure every pair this many times, in rotating order, and print the medians",
    )
    parser.add_argument("--batching-parameters", help="TF Serving batching parameters file")
    parser.add_argument(
        "--baseline", help="git ref whose code also serves batching on (before/after)"
    )
    parser.add_argument(
        "--client",
        choices=CLIENT_NAMES,
        default="wrk" if available("wrk") is None else "aiohttp",
        help="the HTTP load client (default: wrk where installed, else aiohttp): on a small "
        "machine the client shares the cores with the server, so a cheaper one measures the "
        "server better",
    )
    parser.add_argument(
        "--variant",
        action="append",
        type=parse_variant,
        default=[],
        help="LABEL=FLAGS, repeatable: one more server over HTTP, batching on (LABEL on-...) "
        "or off (off-...) with FLAGS added, measured in the same rotating rounds (an A/B of "
        "a server setting), e.g. on-swi500='--switch-interval-micros 500'",
    )
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args(argv)
    parts = [p for p in args.parts.split(",") if p]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        parser.error(f"unknown parts {unknown}; choose from {list(PARTS)}")
    params = Path(args.batching_parameters).resolve() if args.batching_parameters else None
    why = available(args.client)
    if why:
        parser.error(why)
    print(f"load client: {args.client}", flush=True)
    out = asyncio.run(
        run(
            parts,
            args.duration,
            max(1, args.rounds),
            params,
            args.baseline,
            args.client,
            tuple(args.variant),
        )
    )
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
