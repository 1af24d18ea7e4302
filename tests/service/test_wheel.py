"""The install path a user takes: build the wheel, install it into a fresh virtualenv, run
``flowserve`` with no arguments from an empty directory: it serves the bundled models from
the wheel's own copy (not from this checkout)."""

import json
import os
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as r:
        return r.status, json.loads(r.read())


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    build = tmp_path_factory.mktemp("build")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=build,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (path,) = out.glob("flowserve-*.whl")
    return path


def test_wheel_ships_the_model_artifacts_not_the_scripts(wheel):
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    bundled = [n for n in names if n.startswith("service/bundled_models/")]
    assert "service/bundled_models/half_plus_two/1/saved_model.msgpack" in bundled
    assert "service/bundled_models/digits/config.json" in bundled
    assert not [n for n in bundled if n.endswith(".py") or "/data/" in n]
    assert not [n for n in names if n.startswith("models/")]


def test_installed_wheel_serves_the_bundled_models(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    bin_dir = venv / "bin"
    # The wheel itself, installed for real; its dependencies come from this environment's
    # site-packages (a path entry, so this checkout's editable install stays out).
    done = subprocess.run(
        [str(bin_dir / "pip"), "install", "--quiet", "--no-deps", str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    site = subprocess.run(
        [str(bin_dir / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(site) / "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    port = _free_port()
    empty = tmp_path / "cwd"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOWSERVE_")}
    env.pop("PYTHONPATH", None)
    log = open(tmp_path / "server.log", "w+")
    proc = subprocess.Popen(
        [
            str(bin_dir / "flowserve"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--grpc-port",
            "0",
        ],
        cwd=empty,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, open(log.name).read()[-3000:]
            try:
                if _get(base + "/v2/health/ready")[0] == 200:
                    break
            except (urllib.error.URLError, ConnectionError):
                pass
            assert time.monotonic() < deadline, open(log.name).read()[-3000:]
            time.sleep(0.2)
        status, doc = _get(base + "/v1/models/half_plus_two:predict", {"instances": [1.0, 5.0]})
        assert status == 200 and doc == {"predictions": [2.5, 4.5]}
        pixels = [0, 0, 5, 13, 9, 1, 0, 0, 0, 0, 13, 15, 10, 15, 5, 0, 0, 3, 15, 2, 0, 11, 8, 0]
        pixels += [0, 4, 12, 0, 0, 8, 8, 0, 0, 5, 8, 0, 0, 9, 8, 0, 0, 4, 11, 0, 1, 12, 7, 0]
        pixels += [0, 2, 14, 5, 10, 12, 0, 0, 0, 0, 6, 13, 10, 0, 0, 0]
        body = {"inputs": {"images": [pixels]}}
        status, doc = _get(base + "/v1/models/digits/labels/stable:predict", body)
        assert status == 200 and doc["outputs"]["classes"] == [0]
    finally:
        proc.terminate()
        proc.wait(30)
        log.seek(0)
        text = log.read()
        log.close()
    # Served from the installed package, not from this checkout.
    assert str(Path(site) / "service" / "bundled_models") in text, text[-2000:]
    assert str(ROOT / "models") not in text
