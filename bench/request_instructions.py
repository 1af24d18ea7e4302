"""Instructions per request of the HTTP path, counted by valgrind: the same drive as
``bench/request_cpu.py`` (the server's own aiohttp protocol object, a fake transport, no
sockets), but counted rather than timed, so two trees compare exactly even while other work
loads the machine.

Each server runs under ``valgrind --tool=callgrind --instr-atstart=no``; a 3-line C helper
(compiled here with ``cc``, loaded with ctypes) switches counting on after the warm-up
requests and off after ``--requests`` more. ``--inline-compute-micros`` is set to its
maximum: under valgrind a run is ~50x slower, and the learned cost would otherwise send
every run to a compute thread (which the real server does not do for this model).

    python bench/request_instructions.py [--requests 300] [--compare PATH] [--servers ...]
        [--clients N]

``--clients N`` feeds N connections whose requests arrive in the same turn of the loop (as
``bench/request_cpu.py --clients``): with batching on, the batched path's instructions.

Needs valgrind (with its headers: Debian's ``valgrind`` package) and a C compiler.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import dataclasses
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
SERVERS = ("floor", "rest-off", "rest-on", "v2-off", "v2-on")
_HELPER = """#include <valgrind/callgrind.h>
void cg_start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; }
void cg_stop(void) { CALLGRIND_DUMP_STATS; CALLGRIND_STOP_INSTRUMENTATION; }
"""


def _child(tree: Path, server: str, work: Path, helper: Path, n: int, clients: int = 1) -> int:
    """Runs inside valgrind: drives ``server`` of ``tree``, counting ``n`` rounds of one
    request on each of ``clients`` connections (arriving in the same turn of the loop)."""
    sys.path.insert(0, str(tree))
    sys.path.insert(0, str(HERE / "bench"))
    import request_cpu

    from service import cli

    counter = ctypes.CDLL(str(helper))
    resolve = cli.resolve_config
    cli.resolve_config = lambda args: dataclasses.replace(
        resolve(args), inline_compute_micros=1_000_000
    )
    cli.limit_blas_threads(1)

    async def drive(runner, raw: bytes, count: int, clients: int = 1):
        await runner.setup()
        try:
            connections = []
            for _ in range(clients):
                protocol = runner.server()
                transport = request_cpu._Transport()
                protocol.connection_made(transport)
                connections.append((protocol, transport))
            loop = asyncio.get_running_loop()

            async def one() -> bytes:
                for protocol, transport in connections:
                    transport.done = loop.create_future()
                    # From the loop, as a socket's read is: a request served at once (batching
                    # on, a lone client) must not find the previous one's turn still open.
                    loop.call_soon(protocol.data_received, raw)
                return [await transport.done for _, transport in connections][-1]

            for _ in range(max(2, 30 // clients)):
                await one()
            counter.cg_start()
            for _ in range(count):
                response = await one()
            counter.cg_stop()
            return 0.0, response
        finally:
            await runner.cleanup()

    request_cpu._drive = drive
    _, response = asyncio.run(request_cpu._measure_one(server, work, n, clients))
    print("status:", response.split(b"\r\n", 1)[0].decode(), file=sys.stderr)
    return 0


def _count(
    tree: Path, server: str, work: Path, helper: Path, n: int, clients: int = 1
) -> tuple[int, str]:
    out = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={work}/callgrind.%p",
            sys.executable,
            __file__,
            "--child",
            server,
            "--tree",
            str(tree),
            "--work",
            str(work),
            "--helper",
            str(helper),
            "--requests",
            str(n),
            "--clients",
            str(clients),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    collected = re.search(r"Collected : (\d+)", out.stderr)
    status = re.search(r"status: (.*)", out.stderr)
    if out.returncode != 0 or collected is None or status is None:
        raise RuntimeError(f"{server} in {tree}: {out.stderr[-2000:]}")
    return int(collected.group(1)) // (n * clients), status.group(1)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--compare", type=Path, help="another checkout to count too")
    parser.add_argument("--servers", default=",".join(SERVERS))
    parser.add_argument(
        "--clients",
        type=int,
        default=1,
        help="connections whose requests arrive together (batching on merges them); "
        "--requests is then per connection",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--tree", type=Path, default=HERE, help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--helper", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child(args.tree, args.child, args.work, args.helper, args.requests, args.clients)
    for tool in ("valgrind", "cc"):
        if shutil.which(tool) is None:
            print(f"{tool} is not installed (Debian: apt-get install valgrind gcc)")
            return 2
    sys.path.insert(0, str(HERE / "bench"))
    import request_cpu

    trees = {"this": HERE}
    if args.compare is not None:
        trees = {"compare": args.compare.resolve(), "this": HERE}
    with tempfile.TemporaryDirectory(prefix="fs-request-instr-") as tmp:
        work = Path(tmp)
        (work / "helper.c").write_text(_HELPER)
        helper = work / "libcount.so"
        subprocess.run(
            ["cc", "-O2", "-shared", "-fPIC", "-o", str(helper), str(work / "helper.c")],
            check=True,
        )
        request_cpu._prepare(work)
        counts: dict[tuple[str, str], int] = {}
        print(
            f"{args.requests} requests x {args.clients} connections each; load average "
            f"{os.getloadavg()[0]:.1f}\n"
        )
        print("| server | instructions / request |" + (" / compare's |" if args.compare else ""))
        print("|---|---|" + ("---|" if args.compare else ""))
        for server in [s for s in args.servers.split(",") if s]:
            for name, tree in trees.items():
                if server == "floor" and name != "this":
                    continue
                count, status = _count(tree, server, work, helper, args.requests, args.clients)
                if not status.endswith("200 OK"):
                    print(f"{name} {server} answered {status}")
                    return 1
                counts[(name, server)] = count
                ratio = ""
                if args.compare and name == "this" and ("compare", server) in counts:
                    ratio = f" {count / counts[('compare', server)]:.3f}x |"
                elif args.compare:
                    ratio = " |"
                print(f"| {name}: {server} | {count:,} |{ratio}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
