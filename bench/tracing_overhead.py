"""What observability costs per request: the same server, the same requests, measured in one
run with OpenTelemetry off (packages absent), on with no SDK (API no-ops, the default when the
otel extra is installed but OTEL_* asks for nothing) and on with the SDK recording every span
(batched to an in-memory exporter).

    python bench/tracing_overhead.py [--requests 2000] [--repeats 3]

Requests go one at a time over loopback HTTP to ``half_plus_two`` (V2 infer), so the figure
is latency overhead, not throughput under load.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp  # noqa: E402
from aiohttp import web  # noqa: E402

from service import tracing  # noqa: E402
from service.app import create_app  # noqa: E402
from service.config import ServerConfig  # noqa: E402

BODY = {"inputs": [{"name": "x", "shape": [3], "datatype": "FP32", "data": [1, 2, 5]}]}


async def measure(requests: int) -> float:
    """Mean seconds per request against a fresh server."""
    config = ServerConfig(poll_interval=0, host="127.0.0.1", port=0).validate()
    runner = web.AppRunner(create_app(config), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    url = f"http://127.0.0.1:{port}/v2/models/half_plus_two/infer"
    try:
        async with aiohttp.ClientSession() as session:
            for _ in range(50):  # warm up
                async with session.post(url, json=BODY) as r:
                    await r.read()
            t0 = time.perf_counter()
            for _ in range(requests):
                async with session.post(url, json=BODY) as r:
                    assert r.status == 200
                    await r.read()
            return (time.perf_counter() - t0) / requests
    finally:
        await runner.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if not tracing.ENABLED:
        sys.exit("install the otel extra first: pip install -e '.[otel]'")
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    results: dict[str, list[float]] = {"off": [], "api only": [], "sdk recording": []}
    # off and api-only interleave (drift hits both alike); a global SDK provider can only be
    # installed once, so the recording runs come last.
    for _ in range(args.repeats):
        for mode in ("off", "api only"):
            tracing.ENABLED = mode != "off"
            results[mode].append(asyncio.run(measure(args.requests)))
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    tracing.ENABLED = True
    for _ in range(args.repeats):
        results["sdk recording"].append(asyncio.run(measure(args.requests)))
        exporter.clear()
    base = statistics.median(results["off"])
    print(f"{'mode':<15} {'us/request':>11} {'vs off':>8}")
    for mode, values in results.items():
        m = statistics.median(values)
        print(f"{mode:<15} {m * 1e6:>11.1f} {m / base:>7.2f}x")


if __name__ == "__main__":
    main()
