"""Fuzzing both protocols' request bodies (JSON, binary extension, msgpack; V2 and TF
Serving) against the real server process, with a modest example count: never a 5xx, every
error JSON, accepted numbers round-trip exactly, and the server answers correctly after."""

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings

from tests.service import fuzz_bodies, hostile

EXAMPLES = 60


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    hostile.echo(root / "repo" / "echo" / "1")
    (root / "repo" / "echo" / "config.json").write_text('{"warmup": false}')
    proc, base, _ = hostile.start_server(
        root / "repo", root / "log", "--max-tensor-elements", "100000", "--poll-interval", "0"
    )
    try:
        asyncio.run(hostile.wait_listening(base, proc, "/v2/health/ready"))
        yield base
    finally:
        hostile.stop_server(proc)


def _fuzz(kind):
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(case=fuzz_bodies.CASES[kind])
    def test(server, case):
        assert fuzz_bodies.check_case(server, case) == [], case

    return test


test_fuzz_v2_json = _fuzz("v2_json")
test_fuzz_v2_binary = _fuzz("v2_binary")
test_fuzz_v2_msgpack = _fuzz("v2_msgpack")
test_fuzz_v1_json = _fuzz("v1_json")
test_fuzz_v1_msgpack = _fuzz("v1_msgpack")
test_fuzz_raw_bodies = _fuzz("raw")


def test_server_still_answers_correctly_after_the_fuzz(server):
    doc = {"inputs": [{"name": "x", "datatype": "INT64", "shape": [2], "data": [2**63 - 1, -5]}]}
    import json

    status, _, body = fuzz_bodies.post(
        server, "/v2/models/echo/infer", json.dumps(doc).encode(), {}
    )
    assert status == 200
    assert json.loads(body)["outputs"][0]["data"] == [2**63 - 1, -5]
