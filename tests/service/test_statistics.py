"""Triton's statistics extension: the core's per-version counts, and the REST and gRPC
documents that tritonclient reads."""

import asyncio
import threading
import time
import urllib.request

import numpy as np
import pytest

from service import servable as servable_module
from service.config import ServerConfig
from tests.service import models
from tests.service.serving import ServerThread

httpclient = pytest.importorskip("tritonclient.http")
grpcclient = pytest.importorskip("tritonclient.grpc")
grpcaio = pytest.importorskip("tritonclient.grpc.aio")
InferenceServerException = pytest.importorskip("tritonclient.utils").InferenceServerException


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("stats-repo")
    models.half_plus_two(root / "plain" / "1")
    models.write_config(root / "plain", {"warmup": False, "batching": {"enabled": False}})
    models.half_plus_two(root / "batched" / "1")
    models.write_config(
        root / "batched",
        {
            "warmup": False,
            "batching": {
                "max_batch_size": 4,
                "batch_timeout_micros": 2_000_000,
                "num_batch_threads": 1,
            },
        },
    )
    # Every run on a compute thread (no inline compute): the tests hold runs there while
    # more requests queue, which a run held on the event loop would stop.
    config = ServerConfig(
        model_repository=str(root),
        poll_interval=0.0,
        port=0,
        enable_batching=True,
        inline_compute_micros=0,
    ).validate()
    with ServerThread(config) as s:
        yield s


def _x(module, rows):
    inp = module.InferInput("x", [rows], "FP32")
    inp.set_data_from_numpy(np.arange(rows, dtype=np.float32))
    return inp


def test_statistics_over_rest_and_grpc(server):
    http = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    grpc = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    try:
        empty = http.get_inference_statistics("plain")["model_stats"][0]
        assert empty["inference_count"] == 0 and empty["last_inference"] == 0
        # plain has no batching: every request is one inference and one execution.
        for rows in (3, 1, 2):
            http.infer("plain", [_x(httpclient, rows)])
        with pytest.raises(InferenceServerException):
            bad = httpclient.InferInput("x", [1], "BYTES")
            bad.set_data_from_numpy(np.array([b"a"], dtype=object))
            http.infer("plain", [bad])
        stats = http.get_inference_statistics("plain")["model_stats"]
        assert [(s["name"], s["version"]) for s in stats] == [("plain", "1")]
        s = stats[0]
        assert s["inference_count"] == 3 and s["execution_count"] == 3
        assert s["last_inference"] > 1_600_000_000_000  # ms since the epoch
        inference = s["inference_stats"]
        assert inference["success"]["count"] == 3 and inference["success"]["ns"] > 0
        assert inference["fail"]["count"] == 1
        assert inference["compute_infer"]["count"] == 3 and inference["compute_infer"]["ns"] > 0
        assert inference["compute_input"]["count"] == 3
        # Without batching too: queue is the wait for a compute thread, compute_output the
        # outputs' selection, both measured (one count per successful request).
        assert inference["queue"]["count"] == 3 and inference["queue"]["ns"] > 0
        assert inference["compute_output"]["count"] == 3 and inference["compute_output"]["ns"] > 0
        assert inference["success"]["ns"] >= (
            inference["queue"]["ns"]
            + inference["compute_infer"]["ns"]
            + inference["compute_output"]["ns"]
        )
        assert [b["batch_size"] for b in s["batch_stats"]] == [1]
        assert s["batch_stats"][0]["compute_infer"]["count"] == 3

        # The same numbers over gRPC, and the all-models and per-version forms.
        over_grpc = grpc.get_inference_statistics("plain", "1", as_json=True)["model_stats"][0]
        assert int(over_grpc["inference_count"]) == 3
        assert int(over_grpc["inference_stats"]["success"]["count"]) == 3
        everything = http.get_inference_statistics()["model_stats"]
        assert [(s["name"], s["version"]) for s in everything] == [
            ("batched", "1"),
            ("plain", "1"),
        ]
        for call in (
            lambda: http.get_inference_statistics("nope"),
            lambda: grpc.get_inference_statistics("nope"),
        ):
            with pytest.raises(InferenceServerException) as info:
                call()
            assert "Request for unknown model: 'nope' is not found" in info.value.message()
    finally:
        http.close()
        grpc.close()


class _HeldRuns:
    """Holds every session run until released, so that requests arriving meanwhile queue
    (a free batch worker takes a waiting request at once; it never waits on the timer)."""

    def __init__(self, monkeypatch):
        self.started = threading.Event()
        self.release = threading.Event()
        original = servable_module.Signature.run
        held = self

        def run(sig, arrays, instance=None, **kw):
            held.started.set()
            held.release.wait(30)
            return original(sig, arrays, instance, **kw)

        monkeypatch.setattr(servable_module.Signature, "run", run)

    def release_when_queued(self, server, model: str, depth: int) -> None:
        """Releases the runs once ``depth`` requests for ``model`` wait in its batch queue."""
        url = f"http://127.0.0.1:{server.port}/metrics"
        line = f'flowserve_batch_queue_depth{{model="{model}",version="1"}} {float(depth)}'
        for _ in range(300):
            with urllib.request.urlopen(url, timeout=10) as r:
                if line in r.read().decode():
                    break
            time.sleep(0.05)
        self.release.set()


def test_batched_statistics(server, monkeypatch):
    held = _HeldRuns(monkeypatch)

    async def main():
        client = grpcaio.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
        try:
            before = await client.get_inference_statistics("batched", as_json=True)
            first = asyncio.create_task(client.infer("batched", [_x(grpcclient, 1)]))
            await asyncio.to_thread(held.started.wait, 30)
            rest = [
                asyncio.create_task(client.infer("batched", [_x(grpcclient, 1)])) for _ in range(3)
            ]
            await asyncio.to_thread(held.release_when_queued, server, "batched", 3)
            await asyncio.gather(first, *rest)
            after = await client.get_inference_statistics("batched", as_json=True)
            return before["model_stats"][0], after["model_stats"][0]
        finally:
            await client.close()

    before, s = asyncio.run(main())
    assert not before.get("inference_count")
    # Four one-row requests: the first runs alone on the free worker, the three that arrive
    # while it runs make one batch of three.
    assert int(s["inference_count"]) == 4 and int(s["execution_count"]) == 2
    assert sorted(int(b["batch_size"]) for b in s["batch_stats"]) == [1, 3]
    assert int(s["inference_stats"]["queue"]["count"]) == 4
    assert int(s["inference_stats"]["compute_output"]["count"]) == 4


def test_a_stream_fills_a_batch(server, monkeypatch):
    """A stream's requests run concurrently: while the first one runs, the next three wait
    together and make one batch (run one at a time, each would run alone)."""
    import queue

    held = _HeldRuns(monkeypatch)
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    try:
        before = client.get_inference_statistics("batched", as_json=True)["model_stats"][0]
        results: queue.Queue = queue.Queue()
        client.start_stream(callback=lambda result, error: results.put((result, error)))
        for i in range(4):
            inp = grpcclient.InferInput("x", [1], "FP32")
            inp.set_data_from_numpy(np.array([float(i)], dtype=np.float32))
            client.async_stream_infer("batched", [inp], request_id=str(i))
        held.started.wait(30)
        held.release_when_queued(server, "batched", 3)
        got = [results.get(timeout=30) for _ in range(4)]
        client.stop_stream()
        assert [r.get_response().id for r, e in got] == ["0", "1", "2", "3"]
        assert [float(r.as_numpy("y")[0]) for r, _ in got] == [2.0, 2.5, 3.0, 3.5]
        after = client.get_inference_statistics("batched", as_json=True)["model_stats"][0]
        executions = int(after["execution_count"]) - int(before.get("execution_count", 0))
        assert executions == 2
    finally:
        client.close()
