"""Startup, readiness and shutdown: listeners before the first scan, concurrent bounded loads
that never hold each other (or the manager lock) back, strict readiness, LOADING vs FAILED,
and a SIGTERM drain that never overruns the grace period."""

import asyncio
import socket
import threading

import aiohttp
import numpy as np
import pytest

from service import servable as servable_module
from service.app import create_app
from service.cli import serve
from service.config import ServerConfig
from tests.service import models
from tests.service.conftest import manager_config

MODEL = servable_module.Servable


class LoadGate:
    """Holds the loads of chosen models until released; counts loads running at once."""

    def __init__(self, monkeypatch, held=()):
        self.held = set(held)
        self.release = threading.Event()
        self.running = 0
        self.most = 0
        self._lock = threading.Lock()
        original = MODEL.load
        gate = self

        def load(s):
            with gate._lock:
                gate.running += 1
                gate.most = max(gate.most, gate.running)
            try:
                if s.model in gate.held or "*" in gate.held:
                    assert gate.release.wait(30), "test never released the gate"
                return original(s)
            finally:
                with gate._lock:
                    gate.running -= 1

        monkeypatch.setattr(MODEL, "load", load)


async def eventually(predicate, timeout=30.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while not await predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition never became true"
        await asyncio.sleep(0.02)


def repo_with(tmp_path, *names):
    for name in names:
        models.half_plus_two(tmp_path / name / "1")
    return tmp_path


async def test_listener_answers_before_models_load_and_fast_models_serve_first(
    tmp_path, aiohttp_client, monkeypatch
):
    gate = LoadGate(monkeypatch, held={"slow"})
    repo_with(tmp_path, "fast", "slow")
    config = manager_config(tmp_path)
    client = await aiohttp_client(create_app(config, load_in_background=True))
    try:
        assert (await client.get("/v2/health/live")).status == 200
        resp = await client.get("/v2/health/ready")
        assert resp.status == 503 and (await resp.json())["ready"] is False

        async def fast_ready():
            return (await client.get("/v2/models/fast/ready")).status == 200

        await eventually(fast_ready)  # while "slow" is still loading
        body = {"instances": [2.0]}
        resp = await client.post("/v1/models/fast:predict", json=body)
        assert (await resp.json()) == {"predictions": [3.0]}
        resp = await client.get("/v2/models/slow/ready")
        assert resp.status == 503
        doc = await resp.json()
        assert doc["ready"] is False and doc["state"] == "LOADING"
        status = await (await client.get("/v1/models/slow")).json()
        assert status["model_version_status"][0]["state"] in ("START", "LOADING")
        assert status["model_version_status"][0]["status"]["error_code"] == "OK"
        resp = await client.get("/v2/health/ready")
        assert resp.status == 503
        assert (await resp.json())["waiting_for"] == {"slow": "LOADING"}
    finally:
        gate.release.set()

    async def server_ready():
        return (await client.get("/v2/health/ready")).status == 200

    await eventually(server_ready)
    assert (await client.get("/v2/models/slow/ready")).status == 200


async def test_strict_readiness_stays_503_when_a_model_failed(tmp_path, aiohttp_client):
    repo_with(tmp_path, "good")
    models.broken(tmp_path / "broken" / "1")
    strict = await aiohttp_client(create_app(manager_config(tmp_path)))
    resp = await strict.get("/v2/health/ready")
    assert resp.status == 503
    assert (await resp.json()) == {"ready": False, "waiting_for": {"broken": "FAILED"}}
    resp = await strict.get("/v2/models/broken/ready")
    doc = await resp.json()
    assert resp.status == 503 and doc["state"] == "FAILED"
    assert "saved_model.msgpack" in doc["error"]
    status = await (await strict.get("/v1/models/broken")).json()
    entry = status["model_version_status"][0]
    assert entry["state"] == "END" and entry["status"]["error_code"] == "UNKNOWN"
    assert "saved_model.msgpack" in entry["status"]["error_message"]
    assert (await strict.get("/v2/models/good/ready")).status == 200

    lenient = await aiohttp_client(create_app(manager_config(tmp_path, strict_readiness=False)))
    assert (await lenient.get("/v2/health/ready")).status == 200
    assert (await lenient.get("/v2/models/broken/ready")).status == 503


async def test_readiness_survives_a_rolling_update_but_not_a_failed_pinned_version(
    tmp_path, manager_for
):
    models.half_plus_two(tmp_path / "m" / "1")
    m = await manager_for(tmp_path)
    assert m.ready
    bad = tmp_path / "m" / "2"
    bad.mkdir()
    (bad / "saved_model.msgpack").write_bytes(b"\x93not a model")
    await m.poll_once()
    assert m.ready  # v2 failed, v1 still serves in its place
    models.write_config(tmp_path / "m", {"version_policy": {"all": {}}})
    await m.poll_once()
    assert not m.ready  # both are meant to serve, and v2 does not
    assert m.readiness("m", 2)[0] == "FAILED" and m.readiness("m", 1) == ("READY", None)


@pytest.fixture
def gated_manager(tmp_path, monkeypatch):
    """A manager loading in the background, models 'a' and 'b' held at load."""
    from service.manager import ModelManager
    from service.metrics import ServingMetrics

    gate = LoadGate(monkeypatch, held={"a", "b"})
    repo_with(tmp_path, "a", "b", "c", "d")
    m = ModelManager(manager_config(tmp_path, model_load_threads=2), ServingMetrics())
    yield m, gate, tmp_path
    gate.release.set()


async def test_loads_run_concurrently_bounded_and_outside_the_lock(gated_manager):
    m, gate, root = gated_manager
    await m.start(wait=False)
    try:
        # Two slots, both taken by the held models: c and d wait for a slot.
        async def two_held():
            return gate.running == 2

        await eventually(two_held)
        assert m.readiness("c")[0] == "LOADING" and not m.ready
        # The lock is free while loads run: a scan, a status and an unload all complete.
        await asyncio.wait_for(m.poll_once(wait=False), 10)
        assert m._lock.locked() is False
        models.half_plus_two(root / "e" / "1")
        await asyncio.wait_for(m.poll_once(wait=False), 10)
        assert "e" in m.model_names()
        gate.release.set()

        async def all_ready():
            return m.ready

        await eventually(all_ready)
        assert gate.most == 2  # bounded by model_load_threads
        for name in "abcde":
            r = await m.infer(name, {"x": np.array([2.0])})
            assert r.outputs["y"].tolist() == [3.0]
    finally:
        gate.release.set()
        await m.stop()


async def test_unload_and_removal_while_a_version_loads(gated_manager):
    m, gate, root = gated_manager
    await m.start(wait=False)
    try:

        async def a_loading():
            return gate.running >= 1 and m.readiness("a")[0] == "LOADING"

        await eventually(a_loading)
        await asyncio.wait_for(m.unload_model("a"), 10)  # does not wait for the load
        gate.release.set()

        async def settled():
            return all(m.readiness(n)[0] == "READY" for n in "bcd")

        await eventually(settled)
        await asyncio.sleep(0.1)
        with pytest.raises(Exception, match="unloaded"):
            await m.infer("a", {"x": np.array([1.0])})
        assert m.ready  # an unloaded model is not meant to serve
    finally:
        gate.release.set()
        await m.stop()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RunGate:
    """Holds every session run until released."""

    def __init__(self, monkeypatch):
        self.release = threading.Event()
        self.started = threading.Event()
        original = servable_module.Signature.run
        gate = self

        def run(sig, arrays, instance=None, **kw):
            gate.started.set()
            gate.release.wait(30)
            return original(sig, arrays, instance, **kw)

        monkeypatch.setattr(servable_module.Signature, "run", run)


async def _serve(tmp_path, grace):
    repo_with(tmp_path, "hpt")
    port = _free_port()
    config = ServerConfig(
        model_repository=str(tmp_path),
        host="127.0.0.1",
        port=port,
        grpc_port=0,  # the default 8500 may be taken on a shared machine
        poll_interval=0,
        shutdown_grace_period=grace,
        request_timeout=60,
        # RunGate holds computations like long ones, which run on compute threads; a cheap
        # model's runs would otherwise run (and be held) on the event loop.
        inline_compute_micros=0,
    ).validate()
    stop = asyncio.Event()
    task = asyncio.create_task(serve(config, stop))
    base = f"http://127.0.0.1:{port}"
    async with aiohttp.ClientSession() as session:

        async def ready():
            try:
                async with session.get(base + "/v2/health/ready") as r:
                    return r.status == 200
            except aiohttp.ClientError:
                return False

        await eventually(ready)
    return task, stop, base


async def test_sigterm_drains_readiness_first_then_in_flight_requests(tmp_path, monkeypatch):
    task, stop, base = await _serve(tmp_path, grace=20.0)
    runs = RunGate(monkeypatch)
    async with aiohttp.ClientSession() as session:
        body = {"instances": [1.0]}
        pending = asyncio.create_task(session.post(base + "/v1/models/hpt:predict", json=body))
        await asyncio.to_thread(runs.started.wait, 10)
        stop.set()  # what SIGTERM does
        await asyncio.sleep(0.1)
        async with session.get(base + "/v2/health/ready") as r:
            assert r.status == 503  # out of the load balancer first...
        async with session.get(base + "/v2/health/live") as r:
            assert r.status == 200  # ...while still listening
        assert not task.done()
        runs.release.set()
        resp = await pending
        assert resp.status == 200 and (await resp.json()) == {"predictions": [2.5]}
        assert resp.headers["X-Request-ID"]
        await asyncio.wait_for(task, 20)


async def test_sigterm_never_overruns_the_grace_period(tmp_path, monkeypatch):
    task, stop, base = await _serve(tmp_path, grace=1.0)
    runs = RunGate(monkeypatch)
    try:
        async with aiohttp.ClientSession() as session:
            body = {"instances": [1.0]}
            pending = asyncio.create_task(session.post(base + "/v1/models/hpt:predict", json=body))
            await asyncio.to_thread(runs.started.wait, 10)
            stop.set()
            # The stuck request never finishes by itself; serve returns anyway.
            await asyncio.wait_for(asyncio.shield(task), 10)
            assert not runs.release.is_set()
            pending.cancel()
    finally:
        runs.release.set()


def test_strict_readiness_flags(tmp_path):
    from service.cli import build_parser, resolve_config

    def config(*argv, env=None):
        args = build_parser().parse_args(["--model-repository", str(tmp_path), *argv])
        return resolve_config(args, env or {})

    assert config().strict_readiness is True
    assert config().enable_batching is False  # a --no- flag does not set its default
    env = {"FLOWSERVE_ENABLE_BATCHING": "1"}
    assert config(env=env).enable_batching is True
    assert config("--no-enable-batching", env=env).enable_batching is False
    assert config("--no-strict-readiness").strict_readiness is False
    assert config("--strict-readiness", "false").strict_readiness is False
    assert config("--strict-readiness").strict_readiness is True
    env = {"FLOWSERVE_STRICT_READINESS": "0"}
    assert config(env=env).strict_readiness is False
    assert config("--metrics-port", "9102").metrics_port == 9102
    assert config("--model-load-threads", "8").model_load_threads == 8
    with pytest.raises(ValueError, match="model_load_threads"):
        config("--model-load-threads", "0")


async def test_metrics_port_in_the_server(tmp_path):
    repo_with(tmp_path, "hpt")
    port, metrics_port = _free_port(), _free_port()
    config = ServerConfig(
        model_repository=str(tmp_path),
        host="127.0.0.1",
        port=port,
        metrics_port=metrics_port,
        grpc_port=0,
        poll_interval=0,
    ).validate()
    stop = asyncio.Event()
    task = asyncio.create_task(serve(config, stop))
    try:
        async with aiohttp.ClientSession() as session:

            async def scraped():
                try:
                    async with session.get(f"http://127.0.0.1:{metrics_port}/metrics") as r:
                        return r.status == 200 and "flowserve_model_loads_total" in await r.text()
                except aiohttp.ClientError:
                    return False

            await eventually(scraped)
            async with session.get(f"http://127.0.0.1:{port}/metrics") as r:
                assert r.status == 200  # still on the serving port too
    finally:
        stop.set()
        await asyncio.wait_for(task, 20)


async def test_stop_does_not_wait_past_its_deadline_for_a_stuck_load(gated_manager):
    m, gate, _ = gated_manager
    await m.start(wait=False)

    async def held():
        return gate.running == 2

    await eventually(held)
    await asyncio.wait_for(m.stop(drain_timeout=0.2), 10)  # the held loads never finished
    assert gate.running == 2 and not m.ready
    gate.release.set()
