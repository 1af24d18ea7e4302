"""``--workers N``: the real ``flowserve`` command with two worker processes on TCP ports.

Both workers answer on one port (port 0 resolved once by the supervisor), ``/metrics`` on
any of them sums every worker, a worker killed with SIGKILL is restarted while the other
serves, per-process changes are refused with a clear 400, and SIGTERM lets in-flight
requests finish before every process exits 0. The settings' validation and the
supervisor's give-up on a worker that never starts are tested without models.
"""

from __future__ import annotations

import asyncio
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import aiohttp
import grpc
import pytest

from service.cli import build_parser, main, resolve_config
from service.config import ConfigError, ServerConfig, WorkerRole, parse_workers
from service.cpus import available_cores, cgroup_cpu_limit
from service.protocols.proto import kserve_pb2 as pb
from service.workers import (
    START_FAILURES,
    WORKER_HEADER,
    Supervisor,
    load_worker_config,
    remove_stale_workdirs,
    reserve_port,
    worker_settings,
)
from tests.service import models

PROMTOOL = shutil.which("promtool")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- settings ---------------------------------------------------------------------------------


def _resolve(*argv: str, environ=None) -> ServerConfig:
    return resolve_config(build_parser().parse_args(list(argv)), environ or {})


@pytest.mark.parametrize("value", ["0", "abc", "-1", "1.5", "", "257", "99999"])
def test_workers_setting_rejects_bad_values(value):
    with pytest.raises(ConfigError, match="workers must"):
        _resolve("--workers", value)


def test_workers_setting_values_and_sources(tmp_path):
    assert ServerConfig().validate().worker_count == 1
    assert _resolve("--workers", "3").worker_count == 3
    assert _resolve("--workers", "auto").worker_count == available_cores()
    assert _resolve("--workers", " AUTO ").worker_count == available_cores()
    assert _resolve(environ={"FLOWSERVE_WORKERS": "2"}).worker_count == 2
    settings = tmp_path / "settings.json"
    settings.write_text('{"workers": 4}')
    assert _resolve("--config", str(settings)).worker_count == 4
    settings.write_text('{"workers": true}')
    with pytest.raises(ConfigError, match="workers"):
        _resolve("--config", str(settings))
    with pytest.raises(ConfigError, match="workers must"):
        parse_workers(2.0)


def test_auto_counts_a_containers_cpu_quota(tmp_path):
    proc = tmp_path / "cgroup"
    proc.write_text("0::/kubepods/pod1/c1\n")
    v2 = tmp_path / "v2"
    (v2 / "kubepods" / "pod1" / "c1").mkdir(parents=True)
    (v2 / "kubepods" / "pod1" / "c1" / "cpu.max").write_text("max 100000\n")
    (v2 / "kubepods" / "pod1" / "cpu.max").write_text("150000 100000\n")  # the pod's limit
    assert cgroup_cpu_limit(str(v2), str(proc)) == 1.5
    assert available_cores(str(v2), str(proc)) == min(2, len(os.sched_getaffinity(0)))
    v1 = tmp_path / "v1"
    (v1 / "cpu").mkdir(parents=True)
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")  # no quota
    (v1 / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert cgroup_cpu_limit(str(v1), str(proc)) is None
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("50000\n")
    assert cgroup_cpu_limit(str(v1), str(proc)) == 0.5
    assert available_cores(str(v1), str(proc)) == 1
    assert cgroup_cpu_limit(str(tmp_path / "none"), str(tmp_path / "missing")) is None


def test_cli_refuses_bad_workers_with_exit_2(capsys):
    assert main(["--workers", "abc"]) == 2
    err = capsys.readouterr().err
    assert "workers must be a positive integer or 'auto'" in err and "'abc'" in err


def test_worker_settings_round_trip_with_the_reserved_ports(tmp_path, monkeypatch):
    config = _resolve(
        "--model-repository", str(tmp_path), "--workers", "2", "--auth-token", "t", "--port", "0"
    )
    doc = worker_settings(config, {"port": 4321, "grpc_port": 4322})
    assert doc["port"] == 4321 and doc["grpc_port"] == 4322 and doc["workers"] == "1"
    assert doc["auth_token"] == "t" and doc["model_repository"] == str(tmp_path)
    assert doc["num_threads"] == max(1, -(-config.compute_threads // 2))  # its share
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(doc))
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    worker = load_worker_config(str(path), 1, 2)
    assert worker.worker == WorkerRole(index=1, count=2, metrics_dir=str(tmp_path))
    assert (worker.port, worker.auth_token, worker.worker_count) == (4321, "t", 1)
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR")
    with pytest.raises(ConfigError, match="PROMETHEUS_MULTIPROC_DIR"):
        load_worker_config(str(path), 1, 2)
    assert worker_settings(_resolve("--num-threads", "3"), {})["num_threads"] == 3


def test_stale_workdirs_of_dead_supervisors_are_removed(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    paths = {
        "dead": tmp_path / f"flowserve-workers-{dead.pid}-abc",
        "self": tmp_path / f"flowserve-workers-{os.getpid()}-abc",  # a restarted pid 1
        "alive": tmp_path / f"flowserve-workers-{os.getppid()}-abc",
        "other": tmp_path / "flowserve-workers-notapid",
    }
    for path in paths.values():
        (path / "metrics").mkdir(parents=True)
    removed = remove_stale_workdirs(str(tmp_path))
    assert sorted(removed) == sorted([str(paths["dead"]), str(paths["self"])])
    assert paths["alive"].exists() and paths["other"].exists()
    assert not paths["dead"].exists() and not paths["self"].exists()


def test_reserved_port_is_shared_and_a_taken_port_fails():
    first = reserve_port("127.0.0.1", 0)
    port = first.getsockname()[1]
    second = reserve_port("127.0.0.1", port)  # SO_REUSEPORT on both: allowed
    assert second.getsockname()[1] == port
    second.close()
    first.close()
    with socket.socket() as plain:  # a listener without SO_REUSEPORT holds the port
        plain.bind(("127.0.0.1", 0))
        plain.listen()
        with pytest.raises(OSError):
            reserve_port("127.0.0.1", plain.getsockname()[1])


def _two_workers(repo, *more: str) -> ServerConfig:
    """Two workers on free ports serving ``repo``, and ``more`` settings."""
    argv = ["--model-repository", str(repo), "--host", "127.0.0.1", "--port", "0"]
    return _resolve(*argv, "--grpc-port", "0", "--workers", "2", *more)


def test_supervisor_gives_up_on_a_worker_that_never_starts(tmp_path, caplog):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nexit 3\n")
    fake.chmod(0o755)
    config = _two_workers(tmp_path)
    supervisor = Supervisor(config, python=str(fake))
    started = time.monotonic()
    with caplog.at_level("INFO", logger="flowserve.workers"):
        assert supervisor.run() == 1
    assert time.monotonic() - started < 30  # backoff 0.5 + 1 + 2 + 4 s, then give up
    assert supervisor.gave_up
    text = caplog.text
    assert f"exited {START_FAILURES} times in a row before serving" in text
    assert text.count("worker 0 started") == START_FAILURES
    assert "worker 1 started" not in text  # the others wait for worker 0 to serve
    assert not os.path.exists(supervisor.metrics_dir)  # the private directory is removed


def test_supervisor_restarts_a_crashing_worker_with_growing_backoff(tmp_path, caplog):
    # A "worker" that reports serving, then exits: restarted again and again (it served,
    # so the supervisor never gives up), each time after a longer wait; the others start
    # once worker 0 served; SIGTERM ends it all with 0.
    fake = tmp_path / "python"
    fake.write_text(
        f"#!{sys.executable}\nimport os, sys, time\n"
        'os.write(int(sys.argv[-1]), b"serving\\n")\ntime.sleep(0.2)\nsys.exit(1)\n'
    )
    fake.chmod(0o755)
    config = _two_workers(
        tmp_path,
        "--shutdown-grace-period",
        "1",
    )
    supervisor = Supervisor(config, python=str(fake))
    stopper = threading.Timer(8.0, os.kill, (os.getpid(), signal.SIGTERM))
    stopper.start()
    try:
        with caplog.at_level("INFO", logger="flowserve.workers"):
            assert supervisor.run() == 0
    finally:
        stopper.cancel()
    text = caplog.text
    assert not supervisor.gave_up
    assert text.count("worker 0 serving") >= 3
    assert "worker 1 started" in text
    delays = [
        float(d)
        for d in re.findall(
            r"worker 0 \(pid \d+\) exited with status 1; "
            r"restarting in ([\d.]+)s",
            text,
        )
    ]
    assert delays[:3] == [0.5, 1.0, 2.0]
    assert "SIGTERM: stopping every worker" in text


# -- the real command -------------------------------------------------------------------------


def _flowserve_command() -> list[str]:
    script = os.path.join(os.path.dirname(sys.executable), "flowserve")
    return [script] if os.path.exists(script) else [sys.executable, "-m", "service"]


class _Server:
    def __init__(self, tmp_path: Path, *args: str):
        self.log_path = tmp_path / "server.log"
        self.log = open(self.log_path, "w+")
        self.proc = subprocess.Popen(
            _flowserve_command() + list(args),
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )

    def text(self) -> str:
        return self.log_path.read_text()

    def wait_for(self, pattern: str, timeout: float = 120.0, after: int = 0) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = re.compile(pattern).search(self.text(), after)
            if m:
                return m
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError(f"no {pattern!r} in the log:\n{self.text()[-3000:]}")

    def worker_pids(self) -> dict[int, int]:
        """The latest pid of each worker, from the supervisor's log."""
        pids = {}
        for m in re.finditer(r"worker (\d+) serving \(pid (\d+)\)", self.text()):
            pids[int(m.group(1))] = int(m.group(2))
        return pids

    def close(self) -> None:
        if self.proc.poll() is None:  # drain, so the supervisor removes its directory
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        for pid in self.worker_pids().values():  # a worker left behind: never leak one
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.log.close()


@pytest.fixture
def two_workers(tmp_path):
    repo = tmp_path / "repo"
    models.half_plus_two(repo / "hpt" / "1", b=2.0)
    models.slow(repo / "slow" / "1", iterations=150_000)
    metrics_port, grpc_port = _free_port(), _free_port()
    server = _Server(
        tmp_path,
        "--model-repository",
        str(repo),
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--metrics-port",
        str(metrics_port),
        "--grpc-port",
        str(grpc_port),
        "--workers",
        "2",
        "--poll-interval",
        "0.5",
        "--shutdown-grace-period",
        "30",
        "--request-timeout",
        "60",
    )
    try:
        port = int(server.wait_for(r"starting 2 workers on 127\.0\.0\.1:(\d+)").group(1))
        server.wait_for(r"worker 1 serving")
        yield server, port, metrics_port, grpc_port
    finally:
        server.close()


async def _predict_on_new_connections(base: str, n: int, value: float = 1.0) -> list:
    """``n`` predictions, each on a connection of its own; (status, worker, prediction)."""

    async def one():
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as s:
            body = {"instances": [value]}
            async with s.post(f"{base}/v1/models/hpt:predict", json=body) as r:
                doc = await r.json()
                return r.status, r.headers.get(WORKER_HEADER), doc.get("predictions")

    return await asyncio.gather(*(one() for _ in range(n)))


def _counter(text: str, name: str, **labels: str) -> float:
    """The value of one sample of the exposition ``text`` (0 when absent)."""
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


async def _metrics(url: str) -> str:
    async with aiohttp.ClientSession() as s, s.get(url) as r:
        assert r.status == 200
        return await r.text()


async def test_two_workers_share_the_port_and_sum_their_metrics(two_workers):
    server, port, metrics_port, grpc_port = two_workers
    base = f"http://127.0.0.1:{port}"
    results = await _predict_on_new_connections(base, 40, 4.0)
    assert {(status, pred[0]) for status, _, pred in results} == {(200, 4.0)}
    assert {worker for _, worker, _ in results} == {"0", "1"}  # the kernel spreads them

    for url in (f"{base}/metrics", f"http://127.0.0.1:{metrics_port}/metrics"):
        text = await _metrics(url)
        labels = {"model": "hpt", "endpoint": "predict", "code": "200"}
        assert _counter(text, "flowserve_requests_total", **labels) == 40.0
        assert _counter(text, "flowserve_request_duration_seconds_count", model="hpt") == 40.0
        assert _counter(text, "flowserve_inference_rows_total", model="hpt") == 40.0
        # Gauges: a version AVAILABLE in the live workers (max), nothing in flight (sum).
        state = {"model": "hpt", "version": "1", "state": "AVAILABLE"}
        assert _counter(text, "flowserve_model_version_state", **state) == 1.0
        assert "process_cpu_seconds_total" not in text  # per process: left out
        if PROMTOOL:
            check = subprocess.run(
                [PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True
            )
            assert check.returncode == 0, check.stdout + check.stderr

    # The console's traffic view sums the workers too, and it offers no load/unload.
    async with aiohttp.ClientSession() as s:
        async with s.get(f"{base}/console/api/traffic") as r:
            traffic = {m["model"]: m for m in (await r.json())["models"]}
        async with s.get(f"{base}/console/api/models") as r:
            assert (await r.json())["repository_control"] is False
    assert traffic["hpt"]["requests"] == 40

    # gRPC shares its port too: every worker's server answers on it.
    with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
        live = channel.unary_unary(
            "/inference.GRPCInferenceService/ServerLive",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=pb.ServerLiveResponse.FromString,
        )
        assert live(pb.ServerLiveRequest(), timeout=10).live
    text = server.text()
    assert len(re.findall(rf"gRPC listening on 127\.0\.0\.1:{grpc_port}", text)) == 2


async def test_per_process_changes_are_refused_and_orphans_stop(two_workers):
    server, port, _, grpc_port = two_workers
    base = f"http://127.0.0.1:{port}"
    refused = [
        ("/v2/repository/models/hpt/unload", {}, "Explicit model load / unload is per process"),
        ("/v2/repository/models/hpt/load", {}, "Explicit model load / unload is per process"),
        (
            "/v2/systemsharedmemory/region/r/register",
            {"key": "/fs-test", "offset": 0, "byte_size": 8},
            "System shared memory registration is per process",
        ),
        ("/v2/logging", {"log_info": False}, "Changing the log settings is per process"),
        ("/v2/trace/setting", {"trace_rate": "2"}, "Changing the trace settings is per process"),
    ]
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as s:
        for path, body, message in refused:
            for _ in range(4):  # whichever worker answers
                async with s.post(base + path, json=body) as r:
                    assert r.status == 400, path
                    assert message in (await r.json())["error"]
        async with s.get(f"{base}/v2/models/stats") as r:
            assert r.status == 400
            assert "/metrics sums the counts of every worker" in (await r.json())["error"]
        async with s.get(f"{base}/v2/logging") as r:  # reading the settings is fine
            assert r.status == 200
        async with s.get(f"{base}/v2/models/hpt/ready") as r:  # still loaded everywhere
            assert r.status == 200
    with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
        unload = channel.unary_unary(
            "/inference.GRPCInferenceService/RepositoryModelUnload",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=pb.RepositoryModelUnloadResponse.FromString,
        )
        with pytest.raises(grpc.RpcError) as e:
            unload(pb.RepositoryModelUnloadRequest(model_name="hpt"), timeout=10)
        assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION

    # A supervisor killed outright leaves no worker behind: each sees its parent go, drains
    # and exits.
    pids = server.worker_pids()
    server.proc.kill()
    server.proc.wait(timeout=10)
    deadline = time.monotonic() + 30
    while any(_alive(pid) for pid in pids.values()) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert not any(_alive(pid) for pid in pids.values()), server.text()[-2000:]
    assert server.text().count("is gone: stopping") == 2
    # Its private directory is left behind; the next supervisor removes it.
    stale = glob.glob(os.path.join(tempfile.gettempdir(), f"flowserve-workers-{server.proc.pid}-*"))
    assert len(stale) == 1
    assert stale[0] in remove_stale_workdirs()
    assert not os.path.exists(stale[0])


async def test_killed_worker_is_restarted_and_sigterm_drains_all(two_workers):
    server, port, metrics_port, _ = two_workers
    base = f"http://127.0.0.1:{port}"
    before = server.worker_pids()
    assert set(before) == {0, 1}
    mark = len(server.text())
    os.kill(before[1], signal.SIGKILL)
    await asyncio.sleep(0.3)  # the kernel closes its listening socket with it
    # The other worker keeps serving while worker 1 restarts.
    results = await _predict_on_new_connections(base, 20)
    assert {status for status, _, _ in results} == {200}
    server.wait_for(r"worker 1 \(pid \d+\) exited with status -9; restarting", after=mark)
    server.wait_for(r"worker 1 serving \(pid \d+\)", after=mark)
    after = server.worker_pids()
    assert after[0] == before[0] and after[1] != before[1]
    results = await _predict_on_new_connections(base, 40)
    assert {status for status, _, _ in results} == {200}
    assert {worker for _, worker, _ in results} == {"0", "1"}
    # The dead worker's counts stay in the sum (its files are kept; its gauges dropped).
    text = await _metrics(f"http://127.0.0.1:{metrics_port}/metrics")
    assert _counter(text, "flowserve_requests_total", model="hpt", code="200") == 60.0

    # SIGTERM with slow requests in flight (every one arrived: the in-flight gauge, summed
    # over the live workers, says so): they finish, every process exits within the grace
    # period, the supervisor with 0.
    async def slow(session):
        async with session.post(f"{base}/v1/models/slow:predict", json={"instances": [1]}) as r:
            return r.status, r.headers.get(WORKER_HEADER)

    connector = aiohttp.TCPConnector(force_close=True)
    async with aiohttp.ClientSession(connector=connector) as session:
        inflight = [asyncio.create_task(slow(session)) for _ in range(6)]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            text = await _metrics(f"http://127.0.0.1:{metrics_port}/metrics")
            if _counter(text, "flowserve_requests_in_flight", model="slow") == 6:
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the slow requests never were all in flight")
        started = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        done = await asyncio.gather(*inflight)
    assert {status for status, _ in done} == {200}, done
    code = await asyncio.to_thread(server.proc.wait, 40)
    assert code == 0, server.text()[-3000:]
    assert time.monotonic() - started < 30 + 5
    for pid in after.values():
        assert not _alive(pid)
    text = server.text()
    assert text.count("shutting down: not ready any more") == 2
    assert "every worker stopped" in text


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return (
        Path(f"/proc/{pid}/status").exists()
        and "zombie" not in Path(f"/proc/{pid}/status").read_text()
    )


def test_workers_poll_the_repository_at_staggered_phases(tmp_path):
    config = _resolve("--model-repository", str(tmp_path), "--poll-interval", "3")
    assert config.poll_phase == 0.0  # a single server polls at once
    phases = []
    for index in range(3):
        config.worker = WorkerRole(index=index, count=3, metrics_dir=str(tmp_path))
        phases.append(config.poll_phase)
    assert phases == [0.0, 1.0, 2.0]
    config.poll_interval = 0  # polling off: nothing to stagger
    assert config.poll_phase == 0.0
