"""The console's routes and JSON endpoints over HTTP (the browser test drives the page)."""

import pytest

from engine import graph_view
from service.app import create_app
from service.config import default_model_repository
from service.console import COOKIE
from service.console.traffic import histogram_quantile


@pytest.fixture
async def bundled(aiohttp_client, make_config):
    """A client of an app serving the bundled models (digits has name scopes)."""
    return await aiohttp_client(
        create_app(make_config(model_repository=default_model_repository()))
    )


async def test_console_page_and_its_static_files(client):
    resp = await client.get("/console")
    assert resp.status == 200 and resp.content_type == "text/html"
    page = await resp.text()
    for src in ("console.js", "graph.js", "dagre.min.js", "console.css", "graph.css"):
        assert f"/console/static/{src}" in page
        asset = await client.get(f"/console/static/{src}")
        assert asset.status == 200, src
        body = await asset.read()
        assert len(body) > 100
    dagre = await client.get("/console/static/dagre.min.js")
    assert await dagre.read() == graph_view.asset("dagre.min.js")
    assert dagre.headers["Content-Type"].startswith("text/javascript")
    license_ = await client.get("/console/static/dagre.LICENSE")
    assert "Permission is hereby granted" in await license_.text()


@pytest.mark.parametrize("name", ["nope.js", "..%2F__init__.py", "index.html%00"])
async def test_unknown_static_files_are_404_json(client, name):
    resp = await client.get(f"/console/static/{name}")
    assert resp.status == 404
    assert "error" in await resp.json()


async def test_models_endpoint_lists_versions_states_and_signatures(client):
    resp = await client.get("/console/api/models")
    assert resp.status == 200
    doc = await resp.json()
    models = {m["name"]: m for m in doc["models"]}
    assert set(models) == {"half_plus_two", "multi_io", "strings"}
    versions = models["half_plus_two"]["versions"]
    assert [v["version"] for v in versions] == [2, 1]
    v = versions[0]
    assert v["state"] == "AVAILABLE" and v["error"] is None
    assert v["devices"] == [{"device": "cpu", "instances": 1}] and v["instances"] == 1
    assert v["load_seconds"] > 0
    sig = v["signatures"]["serving_default"]
    assert sig["inputs"]["x"] == {"name": "x:0", "dtype": "float32", "shape": [None]}
    assert sig["outputs"]["y"]["dtype"] == "float32"
    assert v["default_signature"] == "serving_default"
    assert doc["auth"] is False and doc["repository_control"] is True


async def test_models_endpoint_reports_a_failed_version_with_its_error(
    aiohttp_client, make_config, tmp_path
):
    bad = tmp_path / "broken" / "1"
    bad.mkdir(parents=True)
    (bad / "saved_model.msgpack").write_bytes(b"garbage")
    client = await aiohttp_client(create_app(make_config(model_repository=str(tmp_path))))
    doc = await (await client.get("/console/api/models")).json()
    (model,) = doc["models"]
    (version,) = model["versions"]
    assert model["name"] == "broken" and version["state"] != "AVAILABLE"
    assert version["error"] and version["signatures"] == {} and version["load_seconds"] is None


async def test_graph_endpoint_describes_the_loaded_graph(bundled):
    resp = await bundled.get("/v1/models/digits/versions/1/graph")
    assert resp.status == 200
    doc = await resp.json()
    assert doc["model"] == "digits" and doc["version"] == 1
    assert doc["op_count"] == len(doc["ops"]) > 20
    ops = {op["name"]: op for op in doc["ops"]}
    matmul = ops["hidden/MatMul"]
    assert matmul["type"] == "MatMul"
    assert matmul["inputs"] == ["normalized:0", "hidden/kernel/read:0"]
    assert matmul["outputs"] == [{"dtype": "float32", "shape": [None, 64]}]
    assert matmul["attrs"] == {"transpose_a": False, "transpose_b": False}
    assert ops["images"]["attrs"]["shape"] == [None, 64]
    assert ops["classes"]["outputs"][0]["dtype"] == "int64"
    assert set(doc["signatures"]) == {"serving_default", "logits"}
    scopes = {s["name"]: s["ops"] for s in doc["scopes"]}
    # "normalized" is an op and the scope of its constant "normalized/y".
    assert scopes["normalized"] == 2 and scopes["hidden"] == 17 and scopes["hidden/kernel"] == 10
    again = await bundled.get("/v1/models/digits/versions/1/graph")
    assert await again.json() == doc  # described once per loaded version, then cached
    # Every input names an op of the description, so the drawing has no dangling edge.
    for op in doc["ops"]:
        for t in op["inputs"]:
            assert t.rsplit(":", 1)[0] in ops


@pytest.mark.parametrize(
    "path, fragment",
    [
        ("/v1/models/nope/versions/1/graph", "nope"),
        ("/v1/models/half_plus_two/versions/9/graph", "version 9"),
        ("/v1/models/half_plus_two/versions/x/graph", "positive integers"),
        ("/v1/models/half_plus_two/versions/0/graph", "positive integers"),
    ],
)
async def test_graph_endpoint_404s(client, path, fragment):
    resp = await client.get(path)
    assert resp.status == 404
    assert fragment in (await resp.json())["error"]


async def test_traffic_summary_counts_requests_errors_and_latency(client):
    for x in ([1.0, 2.0], [3.0]):
        resp = await client.post("/v1/models/half_plus_two:predict", json={"instances": x})
        assert resp.status == 200
    resp = await client.post("/v1/models/half_plus_two:predict", json={"instances": "bad"})
    assert resp.status == 400
    doc = await (await client.get("/console/api/traffic")).json()
    rows = {(m["model"], m["version"]): m for m in doc["models"]}
    assert ("", "") not in rows
    row = rows[("half_plus_two", "2")]
    assert row["requests"] == 3 and row["errors"] == 1
    latency = row["latency"]
    assert latency["count"] == 3 and latency["buckets"][-1] == ["+Inf", 3]
    p50 = latency["quantiles"]["0.5"]
    assert 0 < p50 <= latency["buckets"][-2][0]
    assert doc["time"] > 0


def test_histogram_quantile_matches_prometheus_interpolation():
    buckets = [(0.1, 0.0), (0.2, 4.0), (0.4, 8.0), (float("inf"), 10.0)]
    assert histogram_quantile(0.5, buckets) == pytest.approx(0.3 - 0.05)  # rank 5 in (0.2, 0.4]
    assert histogram_quantile(0.2, buckets) == pytest.approx(0.15)  # rank 2 in (0.1, 0.2]
    assert histogram_quantile(0.95, buckets) == 0.4  # the +Inf bucket: the highest bound
    assert histogram_quantile(0.5, [(0.1, 0.0), (float("inf"), 0.0)]) is None
    assert histogram_quantile(0.5, []) is None


async def test_auth_guards_the_console_and_its_endpoints(aiohttp_client, make_config):
    client = await aiohttp_client(create_app(make_config(auth_token="s3cret")))
    for path in (
        "/console/api/models",
        "/console/api/traffic",
        "/console/static/console.js",
        "/v1/models/half_plus_two/versions/1/graph",
    ):
        resp = await client.get(path)
        assert resp.status == 401, path
        assert "bearer token" in (await resp.json())["error"]
        ok = await client.get(path, headers={"Authorization": "Bearer s3cret"})
        assert ok.status == 200, path
    # A browser is sent to the login form, which sets the token as a cookie.
    resp = await client.get("/console", allow_redirects=False)
    assert resp.status == 303 and resp.headers["Location"] == "/console/login"
    form = await client.get("/console/login")
    assert form.status == 200 and 'name="token"' in await form.text()
    wrong = await client.post("/console/login", data={"token": "nope"}, allow_redirects=False)
    assert wrong.status == 401 and COOKIE not in wrong.cookies
    right = await client.post("/console/login", data={"token": "s3cret"}, allow_redirects=False)
    assert right.status == 303 and right.headers["Location"] == "/console/"
    cookie = right.cookies[COOKIE]
    assert cookie.value == "s3cret" and cookie["httponly"] and cookie["samesite"] == "Strict"
    client.session.cookie_jar.clear()
    page = await client.get("/console", headers={"Cookie": f"{COOKIE}=s3cret"})
    assert page.status == 200 and page.content_type == "text/html"
    bad = await client.get("/console/api/models", headers={"Cookie": f"{COOKIE}=wrong"})
    assert bad.status == 401


async def test_login_without_auth_goes_to_the_console(client):
    resp = await client.get("/console/login", allow_redirects=False)
    assert resp.status == 303 and resp.headers["Location"] == "/console/"


async def test_no_console_removes_every_console_route(aiohttp_client, make_config):
    client = await aiohttp_client(create_app(make_config(console=False)))
    for path in (
        "/console",
        "/console/",
        "/console/static/graph.js",
        "/console/api/models",
        "/console/api/traffic",
        "/console/login",
        "/v1/models/half_plus_two/versions/1/graph",
    ):
        resp = await client.get(path)
        assert resp.status == 404, path
        assert "error" in await resp.json()
    assert (await client.get("/v1/models/half_plus_two")).status == 200


def test_no_console_flag_and_environment():
    from service.cli import build_parser, resolve_config

    parser = build_parser()
    repo = default_model_repository()
    assert resolve_config(parser.parse_args(["--model-repository", repo])).console is True
    args = parser.parse_args(["--model-repository", repo, "--no-console"])
    assert resolve_config(args).console is False
    env = {"FLOWSERVE_CONSOLE": "false"}
    assert resolve_config(parser.parse_args(["--model-repository", repo]), env).console is False


def test_traffic_summary_of_batches_queue_and_rejections():
    from service.console.traffic import traffic_summary
    from service.metrics import ServingMetrics

    metrics = ServingMetrics()
    for rows in (1, 3, 3, 40):
        metrics.batch("m", "2", rows, 0, 0.001)
    metrics.queue_depth("m", "2", 5)
    metrics.rejected("m", "2", "queue_full")
    metrics.observe_request("m", "2", "v2", 503, 0.002)
    metrics.observe_request("m", "2", "v2", 200, 0.004)
    (row,) = traffic_summary(metrics.registry)["models"]
    assert (row["model"], row["version"]) == ("m", "2")
    assert row["requests"] == 2 and row["errors"] == 1 and row["rejected"] == 1
    assert row["queue_depth"] == 5
    batch = dict((str(b), c) for b, c in row["batch_size"]["buckets"])
    assert batch["1.0"] == 1 and batch["4.0"] == 3 and batch["32.0"] == 3 and batch["64.0"] == 4
    assert row["batch_size"]["count"] == 4 and row["batch_size"]["sum"] == 47
    assert row["latency"]["count"] == 2 and row["latency"]["sum"] == pytest.approx(0.006)


async def test_no_load_unload_buttons_when_model_control_is_off(aiohttp_client, make_config):
    client = await aiohttp_client(create_app(make_config(model_control_mode="none")))
    doc = await (await client.get("/console/api/models")).json()
    assert doc["repository_control"] is False
    resp = await client.post("/v2/repository/models/half_plus_two/unload")
    assert resp.status >= 400  # the API the buttons would call refuses, as the flag says
