"""CPU per request of the HTTP path without sockets or a load client: requests are fed to the
server's own aiohttp protocol object in this process, and its answers caught from a fake
transport, so the figure is the server's Python and C work alone and barely moves when other
work shares the machine (a load test's throughput does).

Each server -- the bare aiohttp floor of ``bench/bare_server.py`` and flowserve (TF Serving
REST and V2 JSON, batching off and on; the same app, middlewares and connection handler as
the ``flowserve`` command) -- answers the same 784-float request of the ``bench/peers`` MLP,
``--requests`` times on one keep-alive connection, in rounds that take turns. Printed: the
median CPU microseconds per request of each and its ratio to the floor's. What sockets add
(a read and a write system call per request, about the same for every server) is not
counted, so the ratios here are larger than a load test's.

    python bench/request_cpu.py [--requests 2000] [--rounds 5] [--compare PATH] [--clients N]

``--clients N`` feeds N connections at once, each request of a round arriving in the same
turn of the loop as from N concurrent clients: with batching on they merge into batches
(the batcher's per-request work under load), where one connection (the default) measures
a lone client's path.

A server name with ``:nolane`` (``rest-off:nolane``) runs with ``--no-fast-lane``: aiohttp's
own request path instead of the fast lane (``service/fastlane.py``); ``--lane both`` adds
that variant of each flowserve server.

``--compare PATH`` also measures the flowserve of another checkout (e.g. an unpacked
``git archive main``), in its own processes taking turns with this one's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

HERE = Path(__file__).resolve().parent.parent
SERVERS = ("floor", "rest-off", "rest-on", "v2-off", "v2-on")


class _Transport:
    """Enough of an asyncio transport for aiohttp's protocol: keeps what is written and
    resolves ``done`` once a whole response (headers and Content-Length bytes) is in."""

    def __init__(self):
        self.buffer = bytearray()
        self.done: asyncio.Future | None = None
        self.closing = False

    def write(self, data) -> None:
        self.buffer += data
        head_end = self.buffer.find(b"\r\n\r\n")
        if head_end < 0:
            return
        head = bytes(self.buffer[:head_end]).lower()
        at = head.find(b"content-length:")
        length = int(head[at + 15 :].split(b"\r\n", 1)[0]) if at >= 0 else 0
        if len(self.buffer) >= head_end + 4 + length and self.done is not None:
            response = bytes(self.buffer[: head_end + 4 + length])
            del self.buffer[: head_end + 4 + length]
            if not self.done.done():
                self.done.set_result(response)

    def writelines(self, chunks) -> None:
        self.write(b"".join(chunks))

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def abort(self) -> None:
        self.closing = True

    def get_extra_info(self, name, default=None):
        return {"peername": ("127.0.0.1", 40000), "sockname": ("127.0.0.1", 8000)}.get(
            name, default
        )

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0

    def set_write_buffer_limits(self, high=None, low=None) -> None:
        pass

    def write_eof(self) -> None:
        pass

    def can_write_eof(self) -> bool:
        return True


def _raw_request(path: str, body: bytes) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


async def _drive(runner, raw: bytes, n: int, clients: int = 1) -> tuple[float, bytes]:
    """CPU seconds per request over ``n`` requests on each of ``clients`` connections (all
    connections' requests arrive in one turn of the loop, as from concurrent clients, and
    the next ones once every answer is in); the last answer."""
    await runner.setup()
    try:
        loop = asyncio.get_running_loop()
        connections = []
        for _ in range(clients):
            protocol = runner.server()
            transport = _Transport()
            protocol.connection_made(transport)
            connections.append((protocol, transport))
        response = b""

        async def one() -> bytes:
            for protocol, transport in connections:
                transport.done = loop.create_future()
                # From the loop, as a socket's read is: a request served at once (batching
                # on, a lone client) must not find the previous one's turn still open.
                loop.call_soon(protocol.data_received, raw)
            answers = [await transport.done for _, transport in connections]
            return answers[-1]

        for _ in range(max(2, 50 // clients)):  # warm up: caches, the cost estimate, labels
            response = await one()
        c0 = time.process_time()
        for _ in range(n):
            response = await one()
        cpu = (time.process_time() - c0) / (n * clients)
        for protocol, _ in connections:
            protocol.connection_lost(None)
        return cpu, response
    finally:
        await runner.cleanup()


async def _measure_one(server: str, work: Path, n: int, clients: int = 1) -> tuple[float, bytes]:
    from aiohttp import web

    body_name = "v2.json" if server.startswith("v2") else "rest.json"
    body = (work / body_name).read_bytes()
    path = "/v2/models/mlp/infer" if server.startswith("v2") else "/v1/models/mlp:predict"
    raw = _raw_request(path, body)
    if server == "floor":
        from bench.bare_server import make_app

        runner = web.AppRunner(make_app((work / "reply.json").read_bytes()), access_log=None)
        return await _drive(runner, raw, n, clients)
    from service import cli
    from service.app import create_app
    from service.http import HardenedRunner

    argv = ["--model-repository", str(work / "repo"), "--poll-interval", "0"]
    argv += ["--grpc-port", "0", "--log-level", "warning"]
    server, _, variant = server.partition(":")
    if variant == "nolane":
        argv.append("--no-fast-lane")
    if server.endswith("-on"):
        argv += ["--enable-batching", "--batching-parameters-file", str(work / "batching.json")]
    config = cli.resolve_config(cli.build_parser().parse_args(argv))
    cli.setup_logging(config.log_format, config.log_level)
    app = create_app(config)
    runner = HardenedRunner(  # as service.cli._start_listeners makes it
        app,
        max_connections=config.max_connections,
        header_timeout=config.header_timeout,
        access_log_class=cli.AccessLogger,
        access_log=__import__("logging").getLogger("flowserve.access"),
        handle_signals=False,
        handler_cancellation=True,
    )
    return await _drive(runner, raw, n, clients)


def _child(args) -> int:
    """One server measured in this process (a fresh interpreter per measurement)."""
    sys.path.insert(0, str(args.tree))
    from service import cli

    cli.limit_blas_threads(1)
    cpu, response = asyncio.run(_measure_one(args.server, args.work, args.requests, args.clients))
    status = response.split(b"\r\n", 1)[0].decode()
    print(json.dumps({"cpu_us": cpu * 1e6, "status": status, "bytes": len(response)}))
    return 0


def _prepare(work: Path) -> None:
    sys.path.insert(0, str(HERE))
    import numpy as np

    from bench.peers.run import LAYERS, export, weights

    export(work / "repo" / "mlp" / "1", weights())
    x = np.random.default_rng(0).standard_normal((1, LAYERS[0])).astype(np.float32)
    (work / "rest.json").write_text(json.dumps({"instances": x.tolist()}))
    v2 = {"inputs": [{"name": "x", "shape": [1, LAYERS[0]], "datatype": "FP32"}]}
    v2["inputs"][0]["data"] = x.ravel().tolist()
    (work / "v2.json").write_text(json.dumps(v2))
    (work / "batching.json").write_text(
        json.dumps({"max_batch_size": 64, "batch_timeout_micros": 0, "num_batch_threads": 1})
    )
    (work / "reply.json").write_text(json.dumps({"predictions": [[0.1] * 10]}))


def _report(samples: dict, servers: list[str], args, load: float) -> None:
    """Prints the medians of ``samples`` ((tree, server) -> CPU us per request) as a table."""
    floor = statistics.median(samples[("this", "floor")]) if "floor" in servers else None
    print(
        f"load average {load:.1f} -> {os.getloadavg()[0]:.1f}; {args.requests} requests x "
        f"{args.clients} connections x {args.rounds} rounds; median CPU per request, "
        "no sockets\n"
    )
    print(
        "| server | CPU us / request | / the floor's |" + (" / compare's |" if args.compare else "")
    )
    print("|---|---|---|" + ("---|" if args.compare else ""))
    for (tree_name, server), values in samples.items():
        us = statistics.median(values)
        ratio = f"{us / floor:.2f}x" if floor else "-"
        line = f"| {tree_name}: {server} | {us:.1f} | {ratio} |"
        if args.compare:
            other = samples.get(("compare", server))
            line += (
                f" {us / statistics.median(other):.2f}x |"
                if other and tree_name == "this"
                else " |"
            )
        print(line)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000, help="per measurement")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--clients",
        type=int,
        default=1,
        help="connections whose requests arrive together (batching on merges them); "
        "--requests is then per connection",
    )
    parser.add_argument("--compare", type=Path, help="another checkout to measure too")
    parser.add_argument(
        "--servers", default=",".join(SERVERS), help="a subset of " + ", ".join(SERVERS)
    )
    parser.add_argument(
        "--lane",
        choices=("on", "both"),
        default="on",
        help="both: each flowserve server also without the fast lane (NAME:nolane)",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)  # server name, in a child process
    parser.add_argument("--tree", type=Path, default=HERE, help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        args.server = args.child
        return _child(args)
    servers = [s for s in args.servers.split(",") if s]
    if args.lane == "both":
        servers = [v for s in servers for v in ([s] if s == "floor" else [s, s + ":nolane"])]
    trees = {"this": HERE}
    if args.compare is not None:
        trees = {"compare": args.compare.resolve(), "this": HERE}
    with tempfile.TemporaryDirectory(prefix="fs-request-cpu-") as tmp:
        work = Path(tmp)
        _prepare(work)
        load = os.getloadavg()[0]
        samples: dict[tuple[str, str], list[float]] = {}
        for r in range(args.rounds):
            order = [(t, s) for s in servers for t in trees if not (s == "floor" and t != "this")]
            if r % 2:
                order.reverse()
            for tree_name, server in order:
                out = subprocess.run(
                    [sys.executable, __file__, "--child", server, "--tree", str(trees[tree_name])]
                    + ["--work", str(work), "--requests", str(args.requests)]
                    + ["--clients", str(args.clients)],
                    capture_output=True,
                    text=True,
                    check=False,
                )
                if out.returncode != 0:
                    print(out.stderr[-3000:], file=sys.stderr)
                    return 1
                row = json.loads(out.stdout.strip().splitlines()[-1])
                if not row["status"].endswith("200 OK"):
                    print(f"{tree_name} {server}: answered {row['status']}", file=sys.stderr)
                    return 1
                samples.setdefault((tree_name, server), []).append(row["cpu_us"])
    _report(samples, servers, args, load)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
