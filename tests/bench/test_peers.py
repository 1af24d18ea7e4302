"""The peers bench's own machinery: the shared MLP, the native load clients' parsers and runs,
the answer check that keeps a wrong peer out of the table, and the venv lookup."""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import engine as tf
from bench.http_clients import _parse_hey, _parse_wrk, available, run_client
from bench.load import Result, Server, bare, free_port, make_request
from bench.peers import http_bench, servers
from bench.peers.mlp import INPUT_NAME, LAYERS, MODEL_NAME, numpy_mlp, weights
from bench.peers.run import build_graph

WRK_OUT = """Running 5s test @ http://127.0.0.1:9/v1/models/mlp:predict
  1 threads and 64 connections
{"requests": 2050, "duration_us": 5000000, "status": 50, "connect": 0, "read": 0, \
"write": 0, "timeout": 2, "p50_us": 12500, "p90_us": 20000, "p99_us": 41000, \
"mean_us": 13750.5}
"""

HEY_OUT = """
Summary:
  Total:\t5.0021 secs
  Slowest:\t0.1200 secs
  Fastest:\t0.0010 secs
  Average:\t0.0150 secs
  Requests/sec:\t2001.1600

Latency distribution:
  10% in 0.0050 secs
  50% in 0.0140 secs
  90% in 0.0250 secs
  99% in 0.0480 secs

Status code distribution:
  [200]\t10000 responses
  [503]\t7 responses

Error distribution:
  [3]\tPost "http://127.0.0.1:9/": read: connection reset by peer
"""


def test_numpy_mlp_matches_the_engine_graph():
    params = weights()
    g, x, y = build_graph(params)
    xb = np.random.default_rng(3).standard_normal((5, LAYERS[0])).astype(np.float32)
    with g.as_default(), tf.Session(graph=g) as sess:
        sess.run(tf.global_variables_initializer())
        engine_out = sess.run(y, {x: xb})
    by_hand = numpy_mlp(params)(xb)
    assert by_hand.dtype == np.float32 and by_hand.shape == (5, LAYERS[-1])
    np.testing.assert_allclose(by_hand, engine_out, rtol=0, atol=1e-6)
    np.testing.assert_allclose(by_hand.sum(axis=1), 1.0, rtol=1e-5)


def test_weights_are_reproducible_from_the_seed():
    a, b, c = weights(0), weights(0), weights(1)
    assert all(np.array_equal(w1, w2) for (w1, _), (w2, _) in zip(a, b))
    assert not np.array_equal(a[0][0], c[0][0])


def test_wrk_summary_becomes_a_result():
    r = _parse_wrk(WRK_OUT, "floor", 64, "wrk", 0.4)
    assert r.requests == 2000  # non-2xx answers are errors, not throughput
    assert r.errors == {"status": 50, "timeout": 2}
    assert r.throughput_rps == 400.0
    assert (r.p50_ms, r.p90_ms, r.p99_ms) == (12.5, 20.0, 41.0)
    assert r.client == "wrk" and r.client_cpu_s == 0.4


def test_hey_summary_becomes_a_result():
    r = _parse_hey(HEY_OUT, "floor", 64, "hey", 1.25)
    assert r.requests == 10000
    assert r.throughput_rps == round(10000 / 5.0021, 1)
    assert r.p50_ms == 14.0 and r.p99_ms == 48.0 and r.mean_ms == 15.0
    assert r.errors["503"] == 7
    assert any(v == 3 and "connection reset" in k for k, v in r.errors.items())


def test_a_client_that_printed_no_summary_is_an_error():
    with pytest.raises(RuntimeError, match="no summary"):
        _parse_wrk("unable to connect to 127.0.0.1:9 Connection refused", "x", 1, "wrk", 0)
    with pytest.raises(RuntimeError, match="no summary"):
        _parse_hey("", "x", 1, "hey", 0)


def test_unknown_client_is_refused():
    assert "unknown client" in available("ab")


def test_probabilities_read_from_both_protocols():
    rest = {"predictions": [[0.25, 0.75]]}
    v2 = {
        "outputs": [
            {"name": "other", "data": [9]},
            {"name": "probabilities", "shape": [1, 2], "data": [0.25, 0.75]},
        ]
    }
    for doc in (rest, v2):
        got = servers.probabilities(doc)
        assert got.dtype == np.float32 and got.tolist() == [[0.25, 0.75]]
    assert servers.probabilities({"outputs": [{"name": "logits", "data": [1]}]}) is None


def test_missing_venv_says_how_to_make_it(tmp_path):
    why = servers.missing("mlserver", tmp_path / "nowhere")
    assert "setup.sh" in why and "FLOWSERVE_MLSERVER_VENV" in why
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").touch()
    assert "no pytriton" in servers.missing("pytriton", tmp_path)
    assert servers.venv_path("pytriton", str(tmp_path)) == tmp_path


def _reply(probs) -> bytes:
    return json.dumps({"predictions": probs.tolist()}).encode()


async def test_answer_check_passes_the_same_numbers_and_catches_wrong_ones(tmp_path):
    x = np.random.default_rng(0).standard_normal((1, LAYERS[0])).astype(np.float32)
    expected = numpy_mlp(weights())(x)
    request = make_request("tfserving", MODEL_NAME, INPUT_NAME, x)
    for name, probs, ok in (("right", expected, True), ("wrong", expected[:, ::-1], False)):
        reply = tmp_path / f"{name}.json"
        reply.write_bytes(_reply(probs))
        server = bare(reply)
        try:
            await server.wait_ready()
            check = await servers.check_answer(server.url, request, expected)
        finally:
            server.stop()
        assert check.ok is ok, check.detail


@pytest.mark.parametrize("client", ["wrk", "hey", "aiohttp"])
async def test_client_drives_a_server_and_counts_errors(tmp_path, client):
    if client != "aiohttp" and shutil.which(client) is None:
        pytest.skip(f"{client} is not installed (apt-get install {client})")
    reply = tmp_path / "reply.json"
    reply.write_bytes(_reply(np.full((1, 10), 0.1, np.float32)))
    x = np.zeros((1, LAYERS[0]), np.float32)
    good = make_request("tfserving", MODEL_NAME, INPUT_NAME, x)
    bad = make_request("tfserving", MODEL_NAME, INPUT_NAME, x)
    bad.body = b'{"neither": 1}'  # the bare server answers 400
    server = bare(reply)
    try:
        await server.wait_ready()
        ok = await run_client(client, server.url, good, 4, 1.0, warmup=0, label="good")
        failing = await run_client(client, server.url, bad, 2, 1.0, warmup=0, label="bad")
    finally:
        server.stop()
    assert ok.requests > 0 and ok.errors == {} and ok.throughput_rps > 0
    assert ok.p50_ms > 0 and ok.p99_ms >= ok.p50_ms and ok.client == client
    assert failing.requests == 0 and sum(failing.errors.values()) > 0


def test_summary_takes_each_groups_best_row_and_flags_the_targets():
    def row(label, group, protocol="v2"):
        return http_bench.Row(label, group, protocol, start=lambda: None)

    def result(label, rps):
        return Result(label, 64, 5.0, int(rps * 5), throughput_rps=rps)

    rows = [
        row("floor", "floor-rest", "tfserving"),
        row("floor v2", "floor-v2"),
        row("rest off", "rest", "tfserving"),
        row("rest on", "rest", "tfserving"),
        row("v2 off", "v2"),
        row("mls", "mlserver"),
        row("mls broken", "mlserver"),
    ]
    best = {
        "floor": result("floor", 1000),
        "floor v2": result("floor v2", 800),
        "rest off": result("rest off", 500),
        "rest on": result("rest on", 750),
        "v2 off": result("v2 off", 600),
        "mls": result("mls", 200),
        "mls broken": "wrong answer (max |diff| 1.0e-01 vs flowserve); not timed",
    }
    summary = http_bench.summarize(rows, best)
    ratios = {r["ratio"]: r for r in summary["ratios"]}
    assert ratios["flowserve REST / floor"]["value"] == 0.75  # the better REST row
    assert ratios["flowserve REST / floor"]["met"] is True
    assert ratios["flowserve V2 / floor"]["value"] == 0.75
    assert ratios["flowserve REST / MLServer"]["value"] == 3.75
    assert ratios["flowserve V2 / MLServer"]["met"] is True  # 3.0 >= 3
    assert ratios["flowserve REST / Triton"]["value"] is None  # no Triton row
    skipped = [t for t in summary["table"] if "skipped" in t]
    assert [t["server"] for t in skipped] == ["mls broken"]


async def test_a_server_that_dies_at_start_is_tried_twice_then_reported(capsys):
    starts = []

    def start():
        starts.append(1)
        code = "import sys; print('boom: no such model'); sys.exit(3)"
        return Server([sys.executable, "-c", code], free_port(), "dies")

    x = np.zeros((1, LAYERS[0]), np.float32)
    ref = http_bench.Reference({"v2": make_request("v2", MODEL_NAME, INPUT_NAME, x)}, {}, x)
    row = http_bench.Row("a peer that dies", "mlserver", "v2", start)
    args = argparse.Namespace(start_timeout=30.0, client="aiohttp", concurrency=1, duration=0.1)
    got = await http_bench.measure(row, ref, args)
    assert len(starts) == 2
    assert isinstance(got, str) and got.startswith("failed to start") and "boom" in got
    assert "start 1 failed" in capsys.readouterr().out
    log = re.search(r"see (\S+\.log)", got).group(1)
    assert Path(log).exists()  # the last attempt's log is kept for the reader
    Path(log).unlink()


def test_peer_rows_cover_each_peers_settings_and_skip_missing_venvs(tmp_path, capsys):
    mls = tmp_path / "mls"
    (mls / "bin").mkdir(parents=True)
    (mls / "bin" / "python").touch()
    (mls / "bin" / "mlserver").touch()
    args = argparse.Namespace(
        peers=["mlserver", "pytriton"],
        mlserver_venv=str(mls),
        pytriton_venv=str(tmp_path / "absent"),
        mlserver_max_batch_time=0.002,
        triton_max_queue_delay_us=0,
        triton_instances=1,
    )
    skipped = {}
    rows = http_bench.peer_rows(args, tmp_path / "work", skipped)
    assert [r.label for r in rows] == [
        "MLServer, parallel_workers 0, batching off",
        "MLServer, parallel_workers 0, batching on",
        "MLServer, default workers, batching off",
        "MLServer, default workers, batching on",
    ]
    assert {r.group for r in rows} == {"mlserver"} and {r.protocol for r in rows} == {"v2"}
    assert list(skipped) == ["pytriton"] and "no virtualenv" in skipped["pytriton"]
    assert "skipping pytriton" in capsys.readouterr().out


def test_mlserver_settings_written_for_each_mode(tmp_path, monkeypatch):
    started = []
    monkeypatch.setattr(servers, "Server", lambda *a, **kw: started.append((a, kw)) or a)
    servers.mlserver(tmp_path, tmp_path, "on", 0, 0.002)
    servers.mlserver(tmp_path, tmp_path, "off", None, None)
    on = json.loads((tmp_path / "on" / MODEL_NAME / "model-settings.json").read_text())
    off = json.loads((tmp_path / "off" / MODEL_NAME / "model-settings.json").read_text())
    assert on["max_batch_size"] == 64 and on["max_batch_time"] == 0.002
    assert "max_batch_size" not in off and off["implementation"] == "mlserver_mlp.MLPRuntime"
    settings_on = json.loads((tmp_path / "on" / "settings.json").read_text())
    settings_off = json.loads((tmp_path / "off" / "settings.json").read_text())
    assert settings_on["parallel_workers"] == 0 and "parallel_workers" not in settings_off
    ports = [settings_on[k] for k in ("http_port", "grpc_port", "metrics_port")]
    assert settings_on["host"] == "127.0.0.1" and len(set(ports)) == 3
    assert settings_on["debug"] is False  # no access log per request
    with pytest.raises(ValueError, match="max_batch_time > 0"):
        servers.mlserver(tmp_path, tmp_path, "zero", 0, 0.0)
