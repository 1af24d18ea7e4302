"""Starting the peer servers (MLServer, Triton through PyTriton) from their own virtualenvs.

Each peer lives in a virtualenv outside the repository (``setup.sh`` makes them): MLServer's
dependencies pin versions flowserve does not use, and PyTriton's python backend stub needs a
Python 3.12 with its shared ``libpython``. A venv is found by flag, else by environment
variable (``FLOWSERVE_MLSERVER_VENV``, ``FLOWSERVE_PYTRITON_VENV``), else under
``$FLOWSERVE_PEERS_VENVS`` (default ``/work/venvs``) as ``mlserver`` / ``pytriton``.
Every server listens on 127.0.0.1 on free ports (HTTP, gRPC, metrics) and runs in its own
process group, so stopping it stops its workers too.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import numpy as np

from bench.load import Request, Server, free_port
from bench.peers.mlp import MODEL_NAME, OUTPUT_NAME

HERE = Path(__file__).resolve().parent
PEERS = ("mlserver", "pytriton")
VENV_VARS = {"mlserver": "FLOWSERVE_MLSERVER_VENV", "pytriton": "FLOWSERVE_PYTRITON_VENV"}

MAX_BATCH_SIZE = 64  # rows, for every server's batching


def venv_path(peer: str, flag: str | None = None) -> Path:
    """Where ``peer``'s virtualenv is expected (flag, its env var, then the venvs root)."""
    if flag:
        return Path(flag)
    if os.environ.get(VENV_VARS[peer]):
        return Path(os.environ[VENV_VARS[peer]])
    return Path(os.environ.get("FLOWSERVE_PEERS_VENVS", "/work/venvs")) / peer


def missing(peer: str, venv: Path) -> str | None:
    """None when ``venv`` holds a usable ``peer``, else why not (printed as the skip reason)."""
    python = venv / "bin" / "python"
    if not python.exists():
        return (
            f"no virtualenv at {venv} (run bench/peers/setup.sh, or set {VENV_VARS[peer]} "
            f"or --{peer}-venv)"
        )
    tool = venv / "bin" / ("mlserver" if peer == "mlserver" else "pytriton")
    if peer == "mlserver" and not tool.exists():
        return f"{venv} has no mlserver (pip install mlserver)"
    if peer == "pytriton" and not list(venv.glob("lib/python3*/site-packages/pytriton")):
        return f"{venv} has no pytriton (pip install nvidia-pytriton)"
    return None


def libpython_dir(venv: Path) -> str:
    """The directory holding the shared libpython of the Python ``venv`` was made from."""
    code = "import sysconfig; print(sysconfig.get_config_var('LIBDIR'))"
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def mlserver(
    venv: Path, work: Path, name: str, workers: int | None, max_batch_time: float | None
) -> Server:
    """``mlserver start`` on the MLP runtime; ``workers`` None keeps MLServer's default
    ``parallel_workers``; ``max_batch_time`` (seconds, > 0) turns its adaptive batching on
    (up to ``MAX_BATCH_SIZE`` rows), None leaves it off."""
    http, grpc, metrics = free_port(), free_port(), free_port()
    folder = work / name
    (folder / MODEL_NAME).mkdir(parents=True, exist_ok=True)  # again each round
    settings = {
        "debug": False,
        "host": "127.0.0.1",
        "http_port": http,
        "grpc_port": grpc,
        "metrics_port": metrics,
        "load_models_at_startup": True,
    }
    if workers is not None:
        settings["parallel_workers"] = workers
    model = {"name": MODEL_NAME, "implementation": "mlserver_mlp.MLPRuntime"}
    if max_batch_time is not None:
        if max_batch_time <= 0:
            raise ValueError("MLServer batches only with max_batch_time > 0")
        model.update(max_batch_size=MAX_BATCH_SIZE, max_batch_time=max_batch_time)
    (folder / "settings.json").write_text(json.dumps(settings))
    (folder / MODEL_NAME / "model-settings.json").write_text(json.dumps(model))
    return Server(
        [str(venv / "bin" / "mlserver"), "start", str(folder)],
        http,
        name,
        env={"PYTHONPATH": str(HERE)},
        cwd=folder,
        ready_path=f"/v2/models/{MODEL_NAME}/ready",
    )


def pytriton(venv: Path, name: str, max_queue_delay_us: int | None, instances: int = 1) -> Server:
    """``pytriton_mlp.py`` in the PyTriton venv, with the python backend stub's libpython on
    ``LD_LIBRARY_PATH``; ``max_queue_delay_us`` turns Triton's dynamic batching on (up to
    ``MAX_BATCH_SIZE`` rows), None leaves it off; ``instances`` model instances."""
    http, grpc, metrics = free_port(), free_port(), free_port()
    lib = libpython_dir(venv)
    ld = ":".join(p for p in (lib, os.environ.get("LD_LIBRARY_PATH", "")) if p)
    argv = [
        str(venv / "bin" / "python"),
        str(HERE / "pytriton_mlp.py"),
        "--http-port",
        str(http),
        "--grpc-port",
        str(grpc),
        "--metrics-port",
        str(metrics),
        "--batching",
        "off" if max_queue_delay_us is None else "on",
        "--max-batch-size",
        str(MAX_BATCH_SIZE),
        "--max-queue-delay-us",
        str(max_queue_delay_us or 0),
        "--instances",
        str(instances),
    ]
    return Server(
        argv,
        http,
        name,
        env={"PYTHONPATH": str(HERE), "LD_LIBRARY_PATH": ld},
        ready_path=f"/v2/models/{MODEL_NAME}/ready",
    )


@dataclass
class Check:
    """One request's answer against the reference probabilities."""

    ok: bool
    detail: str


async def check_answer(url: str, request: Request, expected: np.ndarray) -> Check:
    """Sends ``request`` once and compares the answer's probabilities with ``expected``:
    the same shape and float32 values within 1e-6 (the same numpy math, maybe another
    numpy/BLAS build)."""
    async with aiohttp.ClientSession() as s:
        async with s.post(url + request.path, data=request.body, headers=request.headers) as r:
            status, body = r.status, await r.read()
    if status != 200:
        return Check(False, f"HTTP {status}: {body[:300]!r}")
    got = probabilities(json.loads(body))
    if got is None:
        return Check(False, f"no {OUTPUT_NAME!r} in the answer: {body[:300]!r}")
    if got.shape != expected.shape:
        return Check(False, f"shape {got.shape}, expected {expected.shape}")
    diff = float(np.abs(got - expected).max())
    return Check(diff <= 1e-6, f"max |diff| {diff:.1e} vs flowserve")


def probabilities(doc: dict) -> np.ndarray | None:
    """The [N, 10] probabilities of a TF Serving REST or V2 JSON answer, as float32."""
    if "predictions" in doc:
        return np.asarray(doc["predictions"], dtype=np.float32)
    for out in doc.get("outputs", []):
        if out.get("name") == OUTPUT_NAME:
            return np.asarray(out["data"], dtype=np.float32).reshape(out["shape"])
    return None
