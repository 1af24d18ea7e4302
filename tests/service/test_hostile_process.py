"""Hostile clients and models against the real ``flowserve`` process (issue 16, findings 1,
2, 5 and 9): runaway computations are accounted for and never hold shutdown past the grace
period, a model whose warmup never ends does not stall the server, a global in-flight budget
sheds load, and slow, idle, oversized and malformed connections are bounded."""

import asyncio
import json
import time

import aiohttp
import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import engine as tf
from tests.service import hostile, models

INFER = "/v2/models/{}/infer"


def hpt_request(values):
    return {"inputs": [{"name": "x", "datatype": "FP32", "shape": [len(values)], "data": values}]}


async def infer(session, base, model, values, status=200, timeout=None):
    doc = hpt_request(values)
    if timeout is not None:
        doc["parameters"] = {"timeout": timeout}
    async with session.post(base + INFER.format(model), json=doc) as r:
        body = await r.json()
        assert r.status == status, body
        return body, r.headers


async def wait_for(predicate, timeout=30.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await predicate():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{what} not reached in {timeout}s")


@pytest.fixture
def cleanup():
    procs = []
    yield procs.append
    for proc in procs:
        hostile.stop_server(proc, timeout=10)


def seconds_long_matmul_size(seconds=3.0) -> int:
    """n such that an n x n float32 matmul takes about ``seconds`` on one BLAS thread of this
    machine (timed at n = 1000; from 2000 to 8000)."""
    a = np.ones((1000, 1000), np.float32)
    with threadpool_limits(1):
        a @ a
        t0 = time.perf_counter()
        a @ a
        took = time.perf_counter() - t0
    return int(min(max(1000 * (seconds / max(took, 1e-6)) ** (1 / 3), 2000), 8000))


def big_kernel(path, n=None):
    """One matmul of two n x n matrices: seconds inside a single kernel, which no
    cancellation can interrupt."""
    n = n or seconds_long_matmul_size()

    def build():
        x = tf.placeholder(tf.float32, [None], name="x")
        a = tf.fill([n, n], x[0])
        y = tf.reduce_sum(tf.matmul(a, a), name="y")
        return {"serving_default": ({"x": x}, {"y": tf.reshape(y, [1])})}

    models.export(path, build, variables_init=False)


async def test_runaway_computations_stop_at_their_deadline(tmp_path, cleanup):
    repo = tmp_path / "repo"
    models.slow(repo / "spin" / "1", iterations=10**9)  # minutes of work per request
    models.write_config(repo / "spin", {"warmup": False})
    big_kernel(repo / "big" / "1")
    models.write_config(repo / "big", {"warmup": False})
    models.half_plus_two(repo / "hpt" / "1")
    # One BLAS thread: the big matmul takes seconds on any number of cores (its size is
    # calibrated on this machine).
    proc, base, _ = hostile.start_server(
        repo,
        tmp_path / "log",
        "--num-threads",
        "2",
        "--shutdown-grace-period",
        "2",
        "--intra-op-threads",
        "1",
    )
    cleanup(proc)
    await hostile.wait_listening(base, proc, "/v2/health/ready")
    async with aiohttp.ClientSession() as session:

        async def ready():
            async with session.get(base + "/v2/health/ready") as r:
                return r.status == 200

        # A loop stops at its deadline (between iterations): the threads come back (were
        # they kept, readiness would stay 503 for the minutes the loops take).
        for _ in range(2):
            results = await asyncio.gather(
                # parameters.timeout is in microseconds, as Triton's clients send it
                infer(session, base, "spin", [1.0], 504, timeout=300_000),
                infer(session, base, "spin", [1.0], 504, timeout=300_000),
            )
            assert all("deadline" in body["error"] for body, _ in results)
            await wait_for(ready, timeout=10, what="the cancelled loops to stop")
            body, _ = await infer(session, base, "hpt", [2.0])
            assert body["outputs"][0]["data"] == [3.0]

        # Inside one long kernel a computation cannot be stopped: while such computations
        # hold every compute thread, readiness says so and new work is refused at once with
        # 503 instead of queueing into more 504s; once they end, all is well again.
        await asyncio.gather(
            infer(session, base, "big", [1.0], 504, timeout=1_000_000),
            infer(session, base, "big", [1.0], 504, timeout=1_000_000),
        )

        async def not_ready():
            async with session.get(base + "/v2/health/ready") as r:
                return r.status == 503

        await wait_for(not_ready, timeout=5, what="readiness to report the busy threads")
        body, _ = await infer(session, base, "hpt", [2.0], 503)
        assert "past their deadline" in body["error"]
        await wait_for(ready, timeout=120, what="the long kernels to end")
        body, _ = await infer(session, base, "hpt", [2.0])
        assert body["outputs"][0]["data"] == [3.0]
        # Shutdown while a long kernel runs: never past the grace period.
        pending = asyncio.ensure_future(infer(session, base, "big", [1.0], 504, timeout=60))
        await asyncio.sleep(0.5)
        t0 = time.monotonic()
        proc.terminate()
        await asyncio.to_thread(proc.wait, 30)
        took = time.monotonic() - t0
        pending.cancel()
    assert proc.returncode == 0
    assert took < 2 + 3, f"shutdown took {took:.1f}s with a 2 s grace period"


async def test_a_warmup_that_never_ends_does_not_stall_the_server(tmp_path, cleanup):
    repo = tmp_path / "repo"
    models.slow(repo / "endless" / "1", iterations=10**9)  # warmup runs it: never ends
    models.half_plus_two(repo / "hpt" / "1")
    proc, base, _ = hostile.start_server(
        repo,
        tmp_path / "log",
        "--load-timeout",
        "1",
        "--poll-interval",
        "0.2",
        "--shutdown-grace-period",
        "2",
        "--num-threads",
        "1",
    )
    cleanup(proc)
    await hostile.wait_listening(base, proc, "/v2/health/live", timeout=30)
    async with aiohttp.ClientSession() as session:

        async def hpt_serves():
            async with session.get(base + "/v2/models/hpt/ready") as r:
                return r.status == 200

        await wait_for(hpt_serves, what="hpt ready")

        async def endless_failed():
            async with session.post(base + "/v2/repository/index") as r:
                rows = {row["name"]: row for row in await r.json()}
            return "load_timeout" in rows.get("endless", {}).get("reason", "")

        await wait_for(endless_failed, what="the endless load to time out")
        # Other versions still load while the endless warmup spins.
        models.half_plus_two(repo / "hpt" / "2", b=5.0)

        async def v2_serves():
            async with session.post(base + INFER.format("hpt"), json=hpt_request([2.0])) as r:
                return r.status == 200 and (await r.json())["model_version"] == "2"

        await wait_for(v2_serves, what="hpt version 2")
        async with session.post(base + "/v2/repository/models/endless/unload") as r:
            assert r.status == 200
    t0 = time.monotonic()
    proc.terminate()
    proc.wait(timeout=30)
    assert proc.returncode == 0
    assert time.monotonic() - t0 < 2 + 3


async def _limited_server(tmp_path, cleanup):
    repo = tmp_path / "repo"
    models.half_plus_two(repo / "hpt" / "1")
    proc, base, port = hostile.start_server(
        repo,
        tmp_path / "log",
        "--max-inflight-requests",
        "2",
        "--max-request-bytes",
        "65536",
        "--max-connections",
        "6",
        "--idle-timeout",
        "1",
        "--header-timeout",
        "1",
        "--body-timeout",
        "1.5",
    )
    cleanup(proc)
    await hostile.wait_listening(base, proc, "/v2/health/ready")
    return proc, base, port


async def test_oversized_and_malformed_requests_get_json_4xx(tmp_path, cleanup):
    _, _, port = await _limited_server(tmp_path, cleanup)
    path = INFER.format("hpt")
    # Finding 9: a Content-Length of 100 GB is refused from the header alone.
    raw = await hostile.raw_request(
        port,
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Content-Length: 100000000000\r\n\r\n{".encode(),
    )
    status, headers, body = hostile.split_response(raw)
    assert status == 413 and "max_request_bytes" in json.loads(body)["error"]

    # aiohttp's own parser errors are JSON too.
    for bad in (
        b"POST /v2 HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
        b"GET /v2 HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * 20000 + b"\r\n\r\n",
        b"NOT-HTTP\r\n\r\n",
    ):
        status, headers, body = hostile.split_response(await hostile.raw_request(port, bad))
        assert 400 <= status < 500 and headers["content-type"].startswith("application/json")
        assert json.loads(body)["error"].startswith("Bad HTTP request")


async def test_inflight_budget_and_body_timeout(tmp_path, cleanup):
    _, base, port = await _limited_server(tmp_path, cleanup)
    path = INFER.format("hpt")
    # Finding 5: requests whose bodies are still arriving hold the in-flight budget; past it
    # the server answers 503 with Retry-After at once instead of buffering more.
    held = []
    for _ in range(2):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Content-Length: 1000\r\n\r\n{".encode()
        )
        await writer.drain()
        held.append((reader, writer))
    await asyncio.sleep(0.3)
    async with aiohttp.ClientSession() as session:
        body, headers = await infer(session, base, "hpt", [1.0], 503)
        assert headers["Retry-After"] == "1" and "max_inflight_requests" in body["error"]
        # Finding 9: their bodies never complete: 408 after body_timeout, budget given back.
        for reader, writer in held:
            async with asyncio.timeout(10):
                status, _, payload = hostile.split_response(await reader.read(65536))
            assert status == 408 and "body_timeout" in json.loads(payload)["error"]
            writer.close()
        body, _ = await infer(session, base, "hpt", [1.0])
        assert body["outputs"][0]["data"] == [2.5]


async def test_idle_connections_time_out_and_connections_are_capped(tmp_path, cleanup):
    proc, base, port = await _limited_server(tmp_path, cleanup)
    # Headers sent and never finished get a JSON 408 after header_timeout and are closed;
    # idle connections are closed after idle_timeout.
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /v2 HTTP/1.1\r\nHost: x\r\n")  # never finishes its headers
    await writer.drain()
    async with asyncio.timeout(10):
        status, headers, body = hostile.split_response(await reader.read())
    assert status == 408 and "header_timeout" in json.loads(body)["error"]
    writer.close()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    async with asyncio.timeout(10):
        assert await reader.read() == b""
    writer.close()

    # At most max_connections: one more is told so (503 JSON) and closed; the rest work.
    idle = [await asyncio.open_connection("127.0.0.1", port) for _ in range(6)]
    await asyncio.sleep(0.2)
    status, headers, body = hostile.split_response(
        await hostile.raw_request(port, b"GET /v2 HTTP/1.1\r\nHost: x\r\n\r\n")
    )
    assert status == 503 and "Too many connections" in json.loads(body)["error"]
    for _, writer in idle:
        writer.close()
    await asyncio.sleep(0.3)
    async with aiohttp.ClientSession() as session:
        body, _ = await infer(session, base, "hpt", [4.0])
        assert body["outputs"][0]["data"] == [4.0]
    assert proc.poll() is None
