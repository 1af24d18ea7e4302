"""Shared pieces of the hostile-input tests: an echo model per dtype, raw HTTP, a server
process."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import aiohttp

import engine as tf
from tests.service import models

# V2 datatype -> engine dtype of the echo model's signature of the same name.
ECHO_DTYPES = {
    "INT64": tf.int64,
    "UINT64": tf.uint64,
    "INT32": tf.int32,
    "UINT8": tf.uint8,
    "FP32": tf.float32,
    "FP64": tf.float64,
    "BOOL": tf.bool,
    "BYTES": tf.string,
}


def echo(path: Path) -> None:
    """One signature per datatype (``serving_default`` is INT64): y = identity(x), x of
    shape [None] (any batch), so every accepted value must come back unchanged."""

    def build():
        sigs = {}
        for name, dtype in ECHO_DTYPES.items():
            x = tf.placeholder(dtype, [None], name=f"x_{name.lower()}")
            y = tf.identity(x, name=f"y_{name.lower()}")
            key = "serving_default" if name == "INT64" else name
            sigs[key] = ({"x": x}, {"y": y})
        return sigs

    models.export(path, build, variables_init=False)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def flowserve_command() -> list[str]:
    script = os.path.join(os.path.dirname(sys.executable), "flowserve")
    return [script] if os.path.exists(script) else [sys.executable, "-m", "service"]


def start_server(repo: Path, log_path: Path, *flags: str, env=None):
    """The real ``flowserve`` process on a free loopback port: (process, base URL)."""
    port = free_port()
    log = open(log_path, "w+")
    proc = subprocess.Popen(
        flowserve_command()
        + ["--model-repository", str(repo), "--host", "127.0.0.1", "--port", str(port)]
        + ["--grpc-port", str(free_port())]  # not the default 8500: others may hold it
        + list(flags),
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
    )
    return proc, f"http://127.0.0.1:{port}", port


async def wait_listening(base: str, proc, path="/v2/health/live", timeout=60.0) -> None:
    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise AssertionError(f"flowserve exited early with {proc.returncode}")
            try:
                async with session.get(base + path) as r:
                    if r.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise AssertionError(f"flowserve did not answer {path} in {timeout}s")


def stop_server(proc, timeout=30.0) -> int:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


async def raw_request(port: int, data: bytes, timeout: float = 10.0) -> bytes:
    """Sends ``data`` on a fresh loopback connection; everything read until it closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        chunks = []
        async with asyncio.timeout(timeout):
            while chunk := await reader.read(65536):
                chunks.append(chunk)
        return b"".join(chunks)
    finally:
        writer.close()


def split_response(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return status, headers, body
