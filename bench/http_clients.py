"""Native load clients (``hey``, ``wrk``) behind the same call as ``load.run_load``.

On a small machine the load client shares the cores with the server it measures, so a client
that spends less CPU per request measures the server better. ``bench/load.py``'s aiohttp
client costs a Python event loop per request; ``hey`` (Go) and ``wrk`` (C, one epoll loop per
thread) cost far less. Each run sends the same pre-encoded body (written to a file), drops a
warmup run of the same client, and reports a ``load.Result`` with the client's own CPU time
(from ``wait4``), so the output can say how much of the machine the client took.

    result = await run_client("wrk", "http://127.0.0.1:9000", request, 64, 5.0)
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from bench.load import Request, Result, run_load

CLIENTS = ("wrk", "hey", "aiohttp")

_WRK_SCRIPT = """
wrk.method = "POST"
local f = assert(io.open(%(body)s, "rb"))
wrk.body = f:read("*a")
f:close()
%(headers)s
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests": %%d, "duration_us": %%d, "status": %%d, "connect": %%d, "read": %%d, ' ..
    '"write": %%d, "timeout": %%d, "p50_us": %%d, "p90_us": %%d, "p99_us": %%d, ' ..
    '"mean_us": %%f}\\n',
    summary.requests, summary.duration, e.status, e.connect, e.read, e.write, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.mean))
end
"""


def available(client: str) -> str | None:
    """None when ``client`` can run here, else why not."""
    if client not in CLIENTS:
        return f"unknown client {client!r} (one of {', '.join(CLIENTS)})"
    if client != "aiohttp" and shutil.which(client) is None:
        return f"{client} is not on PATH (Debian: apt-get install {client})"
    return None


async def run_client(
    client: str,
    base_url: str,
    request: Request,
    concurrency: int,
    duration: float,
    warmup: float = 1.0,
    label: str = "",
    threads: int = 1,
) -> Result:
    """Drives ``base_url`` with ``request`` from ``concurrency`` connections for ``duration``
    seconds with ``client`` (``wrk``, ``hey`` or ``aiohttp``); returns a ``load.Result``."""
    if client == "aiohttp":
        return await run_load(base_url, request, concurrency, duration, warmup=warmup, label=label)
    why = available(client)
    if why:
        raise RuntimeError(why)
    url = base_url.rstrip("/") + request.path
    with tempfile.TemporaryDirectory(prefix="fs-client-") as tmp:
        body = Path(tmp) / "body"
        body.write_bytes(request.body)
        argv = _argv(client, url, request.headers, body, concurrency, threads)
        if warmup > 0:
            await asyncio.to_thread(_run, argv(warmup))
        out, cpu_s = await asyncio.to_thread(_run, argv(duration))
    parse = _parse_wrk if client == "wrk" else _parse_hey
    return parse(out, label or request.path, concurrency, client, cpu_s)


def _argv(client, url, headers, body: Path, concurrency: int, threads: int):
    if client == "hey":
        hdrs = [
            a
            for k, v in headers.items()
            if k.lower() != "content-type"
            for a in ("-H", f"{k}: {v}")
        ]
        ctype = headers.get("Content-Type", "application/json")
        base = ["hey", "-c", str(concurrency), "-m", "POST", "-T", ctype, "-D", str(body)]
        return lambda seconds: [*base, "-t", "120", *hdrs, "-z", f"{seconds:g}s", url]
    script = body.with_suffix(".lua")
    lines = "\n".join(f"wrk.headers[{json.dumps(k)}] = {json.dumps(v)}" for k, v in headers.items())
    script.write_text(_WRK_SCRIPT % {"body": json.dumps(str(body)), "headers": lines})
    base = ["wrk", "-t", str(min(threads, concurrency)), "-c", str(concurrency), "-s", str(script)]
    return lambda seconds: [*base, "--timeout", "120s", "-d", f"{max(1, round(seconds))}s", url]


def _run(argv: list[str]) -> tuple[str, float]:
    """Runs ``argv`` to completion: (stdout, the CPU seconds it used)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = proc.stdout.read().decode(errors="replace")
    proc.stdout.close()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[0]} exited with {proc.returncode}: {out[-2000:]}")
    return out, usage.ru_utime + usage.ru_stime


def _result(label, concurrency, client, cpu_s, seconds, ok, errors, p50, p90, p99, mean):
    return Result(
        label,
        concurrency,
        round(seconds, 2),
        ok,
        errors,
        round(ok / seconds, 1) if seconds else 0.0,
        round(p50, 3),
        round(p90, 3),
        round(p99, 3),
        round(mean, 3),
        client=client,
        client_cpu_s=round(cpu_s, 3),
    )


def _parse_wrk(out: str, label: str, concurrency: int, client: str, cpu_s: float):
    doc = next((line for line in out.splitlines() if line.startswith('{"requests"')), None)
    if doc is None:
        raise RuntimeError(f"wrk printed no summary: {out[-2000:]}")
    s = json.loads(doc)
    errors = {k: s[k] for k in ("status", "connect", "read", "write", "timeout") if s[k]}
    ok = s["requests"] - s["status"]
    ms = {k: s[k] / 1000 for k in ("p50_us", "p90_us", "p99_us", "mean_us")}
    seconds = s["duration_us"] / 1e6
    return _result(label, concurrency, client, cpu_s, seconds, ok, errors, *ms.values())


def _parse_hey(out: str, label: str, concurrency: int, client: str, cpu_s: float):
    total = re.search(r"Total:\s+([\d.]+) secs", out)
    if total is None:
        raise RuntimeError(f"hey printed no summary: {out[-2000:]}")
    pct = {int(p): float(v) * 1000 for p, v in re.findall(r"(\d+)%+ in ([\d.]+) secs", out)}
    mean = re.search(r"Average:\s+([\d.]+) secs", out)
    codes = {c: int(n) for c, n in re.findall(r"\[(\d{3})\]\s+(\d+) responses", out)}
    errors = {c: n for c, n in codes.items() if c != "200"}
    tail = out.split("Error distribution:", 1)
    if len(tail) == 2:
        for n, what in re.findall(r"\[(\d+)\]\s+(.+)", tail[1]):
            errors[what.strip()[:80]] = int(n)
    return _result(
        label,
        concurrency,
        client,
        cpu_s,
        float(total.group(1)),
        codes.get("200", 0),
        errors,
        pct.get(50, 0.0),
        pct.get(90, 0.0),
        pct.get(99, 0.0),
        float(mean.group(1)) * 1000 if mean else 0.0,
    )
