"""Load generator for flowserve (and any TF Serving REST / KServe V2 server).

Drives a running server with N concurrent clients (closed loop) or a fixed request rate
(open loop) for a duration, on either protocol, and reports throughput and p50/p90/p99
latency as text and JSON. Request bodies are encoded once up front, so the client measures
the server rather than its own encoding.

    # one measurement against a running server
    python bench/load.py run --url http://127.0.0.1:8501 --model digits \\
        --protocol tfserving --concurrency 64 --duration 10 [--rate 500] [--json out.json]

    # the paired measurements of bench/README.md, each pair in one run (starts the servers)
    python bench/load.py scenario batching|overhead|encoding|all [--duration 10] \
        [--device cpu|gpu|gpu:N]

Protocols: ``tfserving`` (JSON ``instances``), ``v2`` (JSON), ``v2-binary`` (Triton binary
tensor extension), ``msgpack`` (TF Serving REST with an ``application/msgpack`` body).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

# Like the server (--intra-op-threads 1): one BLAS thread per computation, set before numpy
# loads, so the in-process measurement runs the model as the server does.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import aiohttp  # noqa: E402
import msgpack  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


# -----------------------------------------------------------------------------------------
# Requests
# -----------------------------------------------------------------------------------------


@dataclass
class Request:
    path: str
    body: bytes
    headers: dict


def make_request(protocol: str, model: str, input_name: str, x: np.ndarray) -> Request:
    """One request carrying the float32 rows ``x`` to ``model``'s input ``input_name``."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    if protocol == "tfserving":
        body = json.dumps({"instances": x.tolist()}).encode()
        return Request(f"/v1/models/{model}:predict", body, {"Content-Type": "application/json"})
    if protocol == "msgpack":
        tensor = {"dtype": "float32", "shape": list(x.shape), "data": x.tobytes()}
        body = msgpack.packb({"inputs": {input_name: tensor}}, use_bin_type=True)
        return Request(
            f"/v1/models/{model}:predict",
            body,
            {"Content-Type": "application/msgpack", "Accept": "application/msgpack"},
        )
    spec = {"name": input_name, "shape": list(x.shape), "datatype": "FP32"}
    if protocol == "v2":
        body = json.dumps({"inputs": [{**spec, "data": x.ravel().tolist()}]}).encode()
        return Request(f"/v2/models/{model}/infer", body, {"Content-Type": "application/json"})
    if protocol == "v2-binary":
        header = json.dumps(
            {
                "inputs": [{**spec, "parameters": {"binary_data_size": x.nbytes}}],
                "parameters": {"binary_data_output": True},
            }
        ).encode()
        return Request(
            f"/v2/models/{model}/infer",
            header + x.tobytes(),
            {
                "Content-Type": "application/octet-stream",
                "Inference-Header-Content-Length": str(len(header)),
            },
        )
    raise ValueError(f"unknown protocol {protocol!r}")


# -----------------------------------------------------------------------------------------
# Load
# -----------------------------------------------------------------------------------------


@dataclass
class Result:
    label: str
    concurrency: int
    duration_s: float
    requests: int
    errors: dict = field(default_factory=dict)
    throughput_rps: float = 0.0
    p50_ms: float = 0.0
    p90_ms: float = 0.0
    p99_ms: float = 0.0
    mean_ms: float = 0.0
    client: str = "aiohttp"
    client_cpu_s: float = 0.0  # CPU time the load client itself used while measuring

    @classmethod
    def of(cls, label, concurrency, seconds, latencies, errors=None, **extra) -> Result:
        """A result from per-request latencies (seconds) measured over ``seconds``."""
        lat = np.array(latencies) * 1000 if len(latencies) else np.zeros(1)
        return cls(
            label,
            concurrency,
            round(seconds, 2),
            len(latencies),
            errors or {},
            round(len(latencies) / seconds, 1),
            round(float(np.percentile(lat, 50)), 3),
            round(float(np.percentile(lat, 90)), 3),
            round(float(np.percentile(lat, 99)), 3),
            round(float(lat.mean()), 3),
            **extra,
        )

    def line(self) -> str:
        err = f" errors={self.errors}" if self.errors else ""
        return (
            f"{self.label:44} {self.throughput_rps:9.1f} req/s   p50 {self.p50_ms:8.2f} ms"
            f"   p90 {self.p90_ms:8.2f} ms   p99 {self.p99_ms:8.2f} ms{err}"
        )


async def run_load(
    base_url: str,
    request: Request,
    concurrency: int,
    duration: float,
    rate: float | None = None,
    warmup: float = 1.0,
    label: str = "",
) -> Result:
    """Sends ``request`` repeatedly: ``concurrency`` clients back to back, or ``rate`` per
    second (at most ``concurrency`` in flight). Latencies of the warmup period are dropped."""
    url = base_url.rstrip("/") + request.path
    latencies: list[float] = []
    errors: dict[str, int] = {}
    connector = aiohttp.TCPConnector(limit=concurrency, force_close=False)
    timeout = aiohttp.ClientTimeout(total=120)
    loop = asyncio.get_running_loop()
    start = loop.time()
    measure_from = start + warmup
    end = measure_from + duration
    cpu_at_start = [time.process_time()]  # replaced when the warmup ends
    loop.call_at(measure_from, lambda: cpu_at_start.__setitem__(0, time.process_time()))

    async def one(session):
        t0 = time.perf_counter()
        try:
            async with session.post(url, data=request.body, headers=request.headers) as resp:
                await resp.read()
                status = resp.status
        except aiohttp.ClientError as e:
            status = type(e).__name__
        elapsed = time.perf_counter() - t0
        if loop.time() >= measure_from:
            if status == 200:
                latencies.append(elapsed)
            else:
                errors[str(status)] = errors.get(str(status), 0) + 1

    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        if rate is None:

            async def client():
                while loop.time() < end:
                    await one(session)

            await asyncio.gather(*(client() for _ in range(concurrency)))
        else:
            inflight = asyncio.Semaphore(concurrency)
            tasks = []

            async def limited():
                async with inflight:
                    await one(session)

            next_at = loop.time()
            while next_at < end:
                await asyncio.sleep(max(0.0, next_at - loop.time()))
                tasks.append(asyncio.create_task(limited()))
                next_at += 1.0 / rate
            await asyncio.gather(*tasks)
    measured = max(loop.time(), end) - measure_from
    return Result.of(
        label or request.path,
        concurrency,
        measured,
        latencies,
        errors,
        client_cpu_s=round(time.process_time() - cpu_at_start[0], 3),
    )


# -----------------------------------------------------------------------------------------
# Servers for the scenarios
# -----------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A server subprocess (flowserve or the bare aiohttp baseline) on a free port."""

    def __init__(
        self,
        argv: list[str],
        port: int,
        name: str,
        env: dict | None = None,
        cwd: Path = ROOT,
        ready_path: str = "/v2/health/ready",
    ):
        self.port = port
        self.name = name
        self.ready_path = ready_path
        self.log = tempfile.NamedTemporaryFile(
            prefix=f"fs-bench-{name}-", suffix=".log", delete=False
        )
        # Its own process group: a server that forks workers (MLServer, tritonserver and its
        # python backend stubs) is stopped whole, and only what this bench started.
        self.proc = subprocess.Popen(
            argv,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
            start_new_session=True,
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def wait_ready(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        async with aiohttp.ClientSession() as s:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"{self.name} exited; see {self.log.name}")
                try:
                    async with s.get(self.url + self.ready_path) as r:
                        if r.status == 200:
                            return
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.2)
        raise RuntimeError(f"{self.name} not ready after {timeout}s; see {self.log.name}")

    def log_tail(self, chars: int = 3000) -> str:
        self.log.flush()
        return Path(self.log.name).read_text(errors="replace")[-chars:]

    def stop(self, keep_log: bool = False) -> None:
        if self.proc.poll() is None:
            # SIGTERM to the leader only: it shuts its workers down and cleans up after them
            # (PyTriton's workspace and shared memory); the group's leftovers are killed after.
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
                self.proc.wait()
        self._signal_group(signal.SIGKILL)  # workers the server left behind
        self.log.close()
        if not keep_log:
            os.unlink(self.log.name)

    def _signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass


def flowserve_argv(repo: Path, port: int, *args: str, launch: tuple = ("-m", "service")) -> list:
    """The command line of a benchmarked flowserve: ``repo`` on 127.0.0.1:``port``, no
    polling, no gRPC, warnings only, then ``args``. ``launch`` follows the interpreter
    (``("-c", code)`` runs another checkout's code)."""
    return [
        sys.executable,
        *launch,
        "--model-repository",
        str(repo),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--poll-interval",
        "0",
        "--log-level",
        "warning",
        "--grpc-port",
        "0",
        *args,
    ]


def flowserve(repo: Path, name: str, *args: str) -> Server:
    port = free_port()
    return Server(flowserve_argv(repo, port, *args), port, name)


def bare(response_file: Path) -> Server:
    port = free_port()
    argv = [
        sys.executable,
        str(ROOT / "bench" / "bare_server.py"),
        "--port",
        str(port),
        "--response-file",
        str(response_file),
    ]
    return Server(argv, port, "bare")


# -----------------------------------------------------------------------------------------
# Scenarios: each pair measured in one run
# -----------------------------------------------------------------------------------------


async def scenario_batching(duration: float, work: Path, device: str = "cpu") -> dict:
    from bench.bench_models import build_repository

    repo = build_repository(work / "wide_repo")
    params = work / "batching.json"
    params.write_text(json.dumps(BATCHING_PARAMETERS))
    x = np.random.default_rng(0).standard_normal((1, 784)).astype(np.float32)
    request = make_request("tfserving", "wide_mlp", "x", x)
    results = {}
    for label, args in (
        ("off", []),
        ("on", ["--enable-batching", "--batching-parameters-file", str(params)]),
    ):
        server = flowserve(repo, f"wide-{label}", "--device", device, *args)
        try:
            await server.wait_ready()
            results[label] = await run_load(
                server.url,
                request,
                64,
                duration,
                label=f"wide_mlp on {device}, batching {label}, 64 clients",
            )
        finally:
            server.stop()
    on, off = results["on"], results["off"]
    core = {
        label: await _in_process(
            repo, params if label == "on" else None, x, duration, device=device
        )
        for label in ("off", "on")
    }
    return {
        "results": [off, on, core["off"], core["on"]],
        "throughput_ratio_on_off": round(on.throughput_rps / max(off.throughput_rps, 1e-9), 2),
        "p99_on_ms": on.p99_ms,
        "p99_off_ms": off.p99_ms,
        "in_process_ratio_on_off": round(
            core["on"].throughput_rps / max(core["off"].throughput_rps, 1e-9), 2
        ),
    }


async def _in_process(
    repo: Path,
    params: Path | None,
    x: np.ndarray,
    duration: float,
    concurrency: int = 64,
    device: str = "cpu",
) -> Result:
    """The same load on ModelManager.infer in this process: batching without HTTP costs."""
    from service.config import ServerConfig
    from service.manager import ModelManager

    kw = {"enable_batching": True, "batching_parameters_file": str(params)} if params else {}
    manager = ModelManager(
        ServerConfig(model_repository=str(repo), poll_interval=0, device=device, **kw).validate()
    )
    await manager.start()
    loop = asyncio.get_running_loop()
    latencies = []
    end = loop.time() + duration

    async def client():
        while loop.time() < end:
            t0 = time.perf_counter()
            await manager.infer("wide_mlp", {"x": x})
            latencies.append(time.perf_counter() - t0)

    try:
        t0 = loop.time()
        await asyncio.gather(*(client() for _ in range(concurrency)))
        elapsed = loop.time() - t0
    finally:
        await manager.stop()
    label = f"  in-process ModelManager.infer, batching {'on' if params else 'off'}"
    return Result.of(label, concurrency, elapsed, latencies)


async def scenario_overhead(duration: float, work: Path, device: str = "cpu") -> dict:
    from models.datasets import load_digits

    images, _ = load_digits()
    request = make_request("tfserving", "digits", "images", images[:1])
    params = work / "digits_batching.json"
    params.write_text(json.dumps(BATCHING_PARAMETERS))
    served = []
    for label, args in (
        ("", []),
        (", batching on", ["--enable-batching", "--batching-parameters-file", str(params)]),
    ):
        server = flowserve(ROOT / "models", "digits", "--device", device, *args)
        try:
            await server.wait_ready()
            async with aiohttp.ClientSession() as s:
                async with s.post(
                    server.url + request.path, data=request.body, headers=request.headers
                ) as r:
                    response = await r.read()
            served.append(
                await run_load(
                    server.url, request, 64, duration, label=f"digits via flowserve predict{label}"
                )
            )
        finally:
            server.stop()
    response_file = work / "digits_response.json"
    response_file.write_bytes(response)
    baseline = bare(response_file)
    try:
        await baseline.wait_ready()
        base = await run_load(
            baseline.url,
            request,
            64,
            duration,
            label="bare aiohttp handler (same JSON), 64 clients",
        )
    finally:
        baseline.stop()
    return {
        "results": [*served, base],
        "response_bytes": len(response),
        "fraction_of_bare": round(served[0].throughput_rps / max(base.throughput_rps, 1e-9), 3),
        "fraction_of_bare_batching": round(
            served[1].throughput_rps / max(base.throughput_rps, 1e-9), 3
        ),
    }


async def scenario_encoding(duration: float, work: Path, device: str = "cpu") -> dict:
    from bench.bench_models import BIG_INPUT_FLOATS, build_repository

    repo = build_repository(work / "big_repo")
    x = np.random.default_rng(0).standard_normal((1, BIG_INPUT_FLOATS)).astype(np.float32)
    server = flowserve(repo, "encoding", "--max-request-bytes", str(64 << 20), "--device", device)
    results = {}
    try:
        await server.wait_ready()
        for protocol in ("tfserving", "v2", "v2-binary", "msgpack"):
            request = make_request(protocol, "big_input", "x", x)
            results[protocol] = await run_load(
                server.url,
                request,
                8,
                duration,
                label=f"1 MiB input, {protocol} ({len(request.body) / 2**20:.2f} MiB body)",
            )
    finally:
        server.stop()
    json_rps = results["tfserving"].throughput_rps
    return {
        "results": list(results.values()),
        "speedup_vs_json": {
            p: round(r.throughput_rps / max(json_rps, 1e-9), 2) for p, r in results.items()
        },
    }


BATCHING_PARAMETERS = {
    "max_batch_size": {"value": 64},
    "batch_timeout_micros": {"value": 0},
    "num_batch_threads": {"value": 1},
    "max_enqueued_batches": {"value": 64},
}

SCENARIOS = {
    "batching": scenario_batching,
    "overhead": scenario_overhead,
    "encoding": scenario_encoding,
}


async def run_scenarios(names, duration: float, device: str = "cpu") -> dict:
    out = {
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "duration_s": duration,
        "device": device,
    }
    with tempfile.TemporaryDirectory(prefix="fs-bench-") as tmp:
        for name in names:
            print(f"== {name}", flush=True)
            result = await SCENARIOS[name](duration, Path(tmp), device)
            for r in result["results"]:
                print(r.line(), flush=True)
            summary = {k: v for k, v in result.items() if k != "results"}
            print(f"   {summary}", flush=True)
            out[name] = {**summary, "results": [asdict(r) for r in result["results"]]}
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="load a running server")
    r.add_argument("--url", default="http://127.0.0.1:8501")
    r.add_argument("--model", default="digits")
    r.add_argument("--input-name", default=None, help="input alias (default: from metadata)")
    r.add_argument("--rows", type=int, default=1, help="rows per request")
    r.add_argument(
        "--protocol", default="tfserving", choices=["tfserving", "v2", "v2-binary", "msgpack"]
    )
    r.add_argument("--concurrency", type=int, default=64)
    r.add_argument("--rate", type=float, default=None, help="requests/s (open loop)")
    r.add_argument("--duration", type=float, default=10.0)
    r.add_argument("--json")
    s = sub.add_parser("scenario", help="run the paired measurements (starts servers)")
    s.add_argument("name", choices=[*SCENARIOS, "all"])
    s.add_argument("--duration", type=float, default=10.0)
    s.add_argument(
        "--device", default="cpu", help="device the servers run models on: cpu, gpu or gpu:N"
    )
    s.add_argument("--json")
    args = parser.parse_args(argv)
    if args.command == "scenario":
        names = list(SCENARIOS) if args.name == "all" else [args.name]
        device = args.device.lower()
        if device.startswith("gpu"):
            from engine import devices

            if devices.gpu_count() == 0:
                print(
                    f"--device {device}: no GPU available ({devices.gpu_unavailable_reason()})",
                    file=sys.stderr,
                )
                return 2
            device = "gpu:0" if device == "gpu" else device
        out = asyncio.run(run_scenarios(names, args.duration, device))
    else:
        out = asyncio.run(_run_one(args))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


async def _run_one(args) -> dict:
    async with aiohttp.ClientSession() as s:
        async with s.get(f"{args.url.rstrip('/')}/v2/models/{args.model}") as resp:
            meta = await resp.json()
    spec = (
        meta["inputs"][0]
        if args.input_name is None
        else next(i for i in meta["inputs"] if i["name"] == args.input_name)
    )
    dims = [args.rows] + [d if d > 0 else 1 for d in spec["shape"][1:]]
    x = np.random.default_rng(0).standard_normal(dims).astype(np.float32)
    request = make_request(args.protocol, args.model, spec["name"], x)
    result = await run_load(
        args.url,
        request,
        args.concurrency,
        args.duration,
        args.rate,
        label=f"{args.model} {args.protocol} c={args.concurrency}",
    )
    print(result.line())
    return asdict(result)


if __name__ == "__main__":
    sys.exit(main())
