"""End to end: the real ``flowserve`` process on a TCP port.

Serves a temporary repository, hot-swaps a new version in while clients send requests (no
request may fail), then receives SIGTERM while slow requests are in flight: they complete,
and the process exits 0.
"""

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time

import aiohttp
import pytest

from tests.service import models


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _flowserve_command() -> list[str]:
    script = os.path.join(os.path.dirname(sys.executable), "flowserve")
    return [script] if os.path.exists(script) else [sys.executable, "-m", "service"]


async def _wait_ready(session, base, proc, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"flowserve exited early with {proc.returncode}")
        try:
            async with session.get(f"{base}/v2/health/ready") as r:
                if r.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.1)
    raise AssertionError("flowserve did not become ready")


@pytest.fixture
def server(tmp_path):
    repo = tmp_path / "repo"
    models.half_plus_two(repo / "hpt" / "1", b=2.0)
    models.slow(repo / "slow" / "1", iterations=60_000)
    port = _free_port()
    log = open(tmp_path / "server.log", "w+")
    proc = subprocess.Popen(
        _flowserve_command()
        + [
            "--model-repository",
            str(repo),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--grpc-port",
            str(_free_port()),
            "--poll-interval",
            "0.2",
            "--shutdown-grace-period",
            "60",
            "--log-format",
            "json",
            "--request-timeout",
            "120",
            "--grpc-port",
            "0",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        yield proc, f"http://127.0.0.1:{port}", repo, log
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


async def test_hot_swap_under_traffic_and_graceful_sigterm(server):
    proc, base, repo, log = server
    results = []
    async with aiohttp.ClientSession() as session:
        await _wait_ready(session, base, proc)

        async def client(i):
            while not stop.is_set():
                body = {"instances": [float(i)]}
                async with session.post(f"{base}/v1/models/hpt:predict", json=body) as r:
                    results.append((r.status, (await r.json())))

        stop = asyncio.Event()
        clients = [asyncio.create_task(client(i)) for i in range(4)]
        await asyncio.sleep(0.5)
        # Publish version 2 (the export is renamed into place whole).
        await asyncio.to_thread(models.half_plus_two, repo / "hpt" / "2", 0.5, 10.0)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if any(s == 200 and body["predictions"][0] >= 10.0 for s, body in results[-8:]):
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.5)  # keep traffic going across the retirement of version 1
        stop.set()
        await asyncio.gather(*clients)

        failures = [(s, b) for s, b in results if s != 200]
        assert not failures, f"requests failed during the swap: {failures[:3]}"
        values = [b["predictions"][0] for _, b in results]
        assert any(v < 10 for v in values) and any(v >= 10 for v in values)
        async with session.get(f"{base}/v1/models/hpt") as r:
            status = await r.json()
        assert [v["version"] for v in status["model_version_status"]] == ["2"]

        # SIGTERM with slow requests in flight: they finish, then the process exits 0.
        async def slow_request():
            async with session.post(
                f"{base}/v1/models/slow:predict", json={"instances": [1.0]}
            ) as r:
                return r.status, await r.json()

        inflight = [asyncio.create_task(slow_request()) for _ in range(2)]
        await asyncio.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        done = await asyncio.gather(*inflight)
        assert all(s == 200 for s, _ in done), done
    code = await asyncio.to_thread(proc.wait, 60)
    log.seek(0)
    text = log.read()
    assert code == 0, text[-2000:]
    assert '"path": "/v1/models/hpt:predict"' in text and '"model": "hpt"' in text
    assert "stopped" in text
