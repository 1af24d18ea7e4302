"""deploy/prometheus and deploy/grafana, checked by the tools that read them: promtool
checks and unit-tests the rules; every series the rules and the dashboard name is one the
server exports (from a live scrape); and a real Prometheus scraping a running flowserve
answers every dashboard query with data and fires the load-failure alert."""

import asyncio
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.parse

import aiohttp
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from service.app import create_app
from service.cli import serve
from service.config import ServerConfig
from tests.deploy.promql import metric_names
from tests.service import models

PROMTOOL = shutil.which("promtool")
PROMETHEUS = shutil.which("prometheus")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool is not installed (apt-get install prometheus; .ci/run does)"
)
# Prometheus' own series, and panels that only have data on GPU servers.
PROMETHEUS_SERIES = {"up"}
GPU_ONLY = {"flowserve_device_memory_bytes"}


def rules(deploy_dir) -> list[dict]:
    doc = yaml.safe_load((deploy_dir / "prometheus" / "rules.yml").read_text())
    return [r for g in doc["groups"] for r in g["rules"]]


def dashboard_exprs(deploy_dir) -> list[str]:
    doc = json.loads((deploy_dir / "grafana" / "dashboards" / "flowserve.json").read_text())
    exprs = [t["expr"] for p in doc["panels"] for t in p["targets"]]
    for var in doc["templating"]["list"]:
        if var["type"] == "query":
            inner = var["query"][len("label_values(") : -1].rsplit(",", 1)[0]
            exprs.append(inner)
    return exprs


def instantiate(expr: str) -> str:
    """A dashboard expression with Grafana's variables filled in."""
    return (
        expr.replace("$__rate_interval", "1m")
        .replace('"$job"', '"flowserve"')
        .replace('"$model"', '".*"')
    )


def make_repository(root):
    models.half_plus_two(root / "hpt" / "1")
    models.write_config(root / "hpt", {"batching": True})
    models.broken(root / "broken" / "1")  # fails to load
    models.slow(root / "slow" / "1", iterations=20_000)
    models.write_config(
        root / "slow",
        {
            "batching": {
                "enabled": True,
                "max_batch_size": 1,
                "max_enqueued_batches": 1,
                "num_batch_threads": 1,
            },
            "warmup": False,
        },
    )
    models.half_plus_two(root / "spare" / "1")
    return root


V2 = {"inputs": [{"name": "x", "shape": [2], "datatype": "FP32", "data": [1.0, 2.0]}]}


async def send_traffic(session, base):
    """Inference (both protocols), metadata, health, queue-full rejections and an unload."""
    for _ in range(3):
        async with session.post(base + "/v2/models/hpt/infer", json=V2) as r:
            assert r.status == 200
        async with session.post(base + "/v1/models/hpt:predict", json={"instances": [1.0]}) as r:
            assert r.status == 200
        async with session.get(base + "/v2/models/hpt") as r:
            assert r.status == 200
        async with session.get(base + "/v2/health/ready") as r:
            pass

    async def slow():
        body = {"instances": [1.0]}
        async with session.post(base + "/v1/models/slow:predict", json=body) as r:
            return r.status

    codes = await asyncio.gather(*(slow() for _ in range(8)))
    assert 503 in codes and 200 in codes, codes  # the queue holds one batch: the rest bounce
    async with session.post(base + "/v2/repository/models/spare/unload") as r:
        assert r.status == 200


async def exported_names(text: str) -> set[str]:
    names = set()
    suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_sum", "_count"]}
    for family in text_string_to_metric_families(text):
        for suffix in suffixes.get(family.type, [""]):
            names.add(family.name + suffix)
        names.update(s.name for s in family.samples)
    return names


@needs_promtool
def test_promtool_checks_and_unit_tests_the_rules(deploy_dir):
    prom = deploy_dir / "prometheus"
    for args in (
        ["check", "rules", "rules.yml"],
        ["check", "config", "prometheus.yml"],
        ["test", "rules", "tests/rules_test.yml"],
    ):
        done = subprocess.run([PROMTOOL, *args], cwd=prom, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr


def test_the_dashboard_is_provisioning_json(deploy_dir):
    grafana = deploy_dir / "grafana"
    doc = json.loads((grafana / "dashboards" / "flowserve.json").read_text())
    assert doc["uid"] == "flowserve" and doc["panels"]
    ids = [p["id"] for p in doc["panels"]]
    assert len(ids) == len(set(ids))
    for p in doc["panels"]:
        assert p["targets"] and all(t["expr"] for t in p["targets"]), p["title"]
    provider = yaml.safe_load(
        (grafana / "provisioning" / "dashboards" / "flowserve.yaml").read_text()
    )
    assert provider["providers"][0]["options"]["path"] == "/var/lib/grafana/dashboards"
    compose = yaml.safe_load((deploy_dir / "compose.yaml").read_text())
    mounts = compose["services"]["grafana"]["volumes"]
    assert "./grafana/dashboards:/var/lib/grafana/dashboards:ro" in mounts
    for service in compose["services"].values():
        for volume in service.get("volumes", []):
            assert (deploy_dir / volume.split(":")[0]).exists(), volume
    # The committed JSON is what the script builds.
    import runpy

    built = runpy.run_path(str(grafana / "build_dashboard.py"))["dashboard"]()
    assert built == doc


async def test_every_series_named_is_exported(deploy_dir, tmp_path, aiohttp_client):
    root = make_repository(tmp_path)
    config = ServerConfig(model_repository=str(root), poll_interval=0).validate()
    client = await aiohttp_client(create_app(config))
    await send_traffic(client.session, str(client.make_url("")).rstrip("/"))
    exported = await exported_names(await (await client.get("/metrics")).text())
    recorded = {r["record"] for r in rules(deploy_dir) if "record" in r}
    named = {}
    for r in rules(deploy_dir):
        for name in metric_names(r["expr"]):
            named.setdefault(name, r.get("alert") or r.get("record"))
    for expr in dashboard_exprs(deploy_dir):
        for name in metric_names(expr):
            named.setdefault(name, expr)
    unknown = {
        n: where for n, where in named.items() if n not in exported | recorded | PROMETHEUS_SERIES
    }
    assert not unknown, unknown
    assert (
        "flowserve_requests_total" in named and "flowserve_batch_queue_wait_seconds_bucket" in named
    )
    # the check itself can fail:
    assert "flowserve_requests_count" not in exported


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_prometheus(tmp_path, deploy_dir, metrics_port: int, prom_port: int):
    """A Prometheus scraping 127.0.0.1:metrics_port every second with our rules loaded."""
    prom_config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(deploy_dir / "prometheus" / "rules.yml")],
        "scrape_configs": [
            {
                "job_name": "flowserve",
                "static_configs": [{"targets": [f"127.0.0.1:{metrics_port}"]}],
            }
        ],
    }
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(prom_config))
    log = open(tmp_path / "prometheus.log", "w")
    proc = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={tmp_path / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{prom_port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={k: v for k, v in os.environ.items() if not k.startswith(("http", "HTTP"))},
    )
    return proc, log


class PrometheusAPI:
    def __init__(self, session, port: int, proc, log):
        self.session, self.proc, self.log = session, proc, log
        self.api = f"http://127.0.0.1:{port}/api/v1"

    async def poll(self, fn, what: str, timeout: float = 25.0):
        """``await fn()`` until it returns something true (bounded)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, "prometheus exited: " + open(self.log.name).read()
            try:
                result = await fn()
                if result:
                    return result
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.25)
        raise AssertionError(f"timed out waiting for {what}")

    async def query(self, expr: str) -> list:
        url = f"{self.api}/query?query={urllib.parse.quote(expr)}"
        async with self.session.get(url) as r:
            doc = await r.json()
        assert doc["status"] == "success", (expr, doc)
        return doc["data"]["result"]

    async def firing(self, alertname: str) -> list:
        async with self.session.get(f"{self.api}/alerts") as r:
            alerts = (await r.json())["data"]["alerts"]
        return [
            a for a in alerts if a["labels"]["alertname"] == alertname and a["state"] == "firing"
        ]


@pytest.mark.skipif(
    PROMETHEUS is None,
    reason="the prometheus server is not installed (apt-get install prometheus; .ci/run does)",
)
async def test_a_real_prometheus_scrapes_flowserve(deploy_dir, tmp_path):
    root = make_repository(tmp_path / "repo")
    port, metrics_port, prom_port = _free_port(), _free_port(), _free_port()
    config = ServerConfig(
        model_repository=str(root),
        host="127.0.0.1",
        port=port,
        metrics_port=metrics_port,
        grpc_port=0,  # the default 8500 may be taken on a shared machine
        poll_interval=0,
    ).validate()
    stop = asyncio.Event()
    server = asyncio.create_task(serve(config, stop))
    proc, log = start_prometheus(tmp_path, deploy_dir, metrics_port, prom_port)
    base = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as session:
            prom = PrometheusAPI(session, prom_port, proc, log)

            async def up():
                async with session.get(base + "/v2/health/live") as r:
                    if r.status != 200:
                        return False
                return await prom.query('up{job="flowserve"} == 1')

            await prom.poll(up, "flowserve and a first scrape")
            await send_traffic(session, base)
            await asyncio.sleep(1.5)  # a scrape after the traffic
            await send_traffic_light(session, base)
            for expr in dashboard_exprs(deploy_dir):
                if metric_names(expr) & GPU_ONLY:
                    continue  # no GPU here: the series is declared but has no samples
                q = instantiate(expr)
                await prom.poll(lambda q=q: prom.query(q), f"data for {q}")
            (alert,) = await prom.poll(
                lambda: prom.firing("FlowserveModelLoadFailed"), "the load-failure alert"
            )
            assert alert["labels"]["model"] == "broken" and alert["labels"]["version"] == "1"
    finally:
        stop.set()
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        await asyncio.wait_for(server, 20)


async def send_traffic_light(session, base):
    """A second round, so that rates over the last minute have two samples to compare."""
    async with session.post(base + "/v2/models/hpt/infer", json=V2) as r:
        assert r.status == 200
