"""deploy/compose.yaml, checked by Compose itself (``docker-compose config``, offline)."""

import shutil
import subprocess

import pytest

COMPOSE = shutil.which("docker-compose")
pytestmark = pytest.mark.skipif(
    COMPOSE is None,
    reason="docker-compose is not installed (apt-get install docker-compose; .ci/run does)",
)


def config(path):
    return subprocess.run(
        [COMPOSE, "-f", str(path), "config"], capture_output=True, text=True, timeout=60
    )


def test_compose_file_is_valid_and_wires_the_stack(deploy_dir):
    import yaml

    done = config(deploy_dir / "compose.yaml")
    assert done.returncode == 0, done.stderr
    resolved = yaml.safe_load(done.stdout)
    services = resolved["services"]
    assert set(services) == {"flowserve", "prometheus", "grafana"}
    env = services["flowserve"]["environment"]
    scrape = yaml.safe_load((deploy_dir / "prometheus" / "prometheus.yml").read_text())
    target = scrape["scrape_configs"][0]["static_configs"][0]["targets"][0]
    assert target == f"flowserve:{env['FLOWSERVE_METRICS_PORT']}"
    assert services["flowserve"]["read_only"] is True


def test_compose_rejects_a_mistake(deploy_dir, tmp_path):
    text = (deploy_dir / "compose.yaml").read_text().replace("read_only:", "read_onyl:")
    bad = tmp_path / "compose.yaml"
    bad.write_text(text)
    done = config(bad)
    assert done.returncode != 0 and "read_onyl" in done.stderr
