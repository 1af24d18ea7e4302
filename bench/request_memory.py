"""Peak memory of the server for one large JSON V2 request (issue 16, finding 5).

Starts the real ``flowserve`` process on loopback serving y = 0.5*x + 2 (FP32, shape [None];
with ``--datatype INT64``, y = 2*x + 1 in int64),
waits until it is ready and has answered one small request, resets the kernel's peak-RSS mark
(``/proc/<pid>/clear_refs``), sends ONE V2 JSON request of about ``--mb`` MB, and reads the
process's peak resident memory (``VmHWM``) against its resident memory just before (``VmRSS``).
Linux only (``/proc``), root or the server's owner (``clear_refs``).

    python bench/request_memory.py [--mb 30] [--datatype FP32|INT64] [--server-path CHECKOUT]

``--server-path`` runs the server from another checkout of the repository (for a before/after
pair: the model is exported by this checkout's engine; both read the same format). Prints the
request's size, the resident memory before, the peak, and their ratio to the body's size.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import engine as tf  # noqa: E402 - after the repository root is importable


def export_model(path: Path, datatype: str) -> None:
    g = tf.Graph()
    with g.as_default():
        if datatype == "FP32":
            x = tf.placeholder(tf.float32, [None], name="x")
            y = tf.add(tf.multiply(x, 0.5), 2.0, name="y")
        else:
            x = tf.placeholder(tf.int64, [None], name="x")
            y = tf.add(tf.multiply(x, tf.constant(2, tf.int64)), tf.constant(1, tf.int64), name="y")
        with tf.Session(graph=g) as sess:
            b = tf.saved_model.Builder(str(path))
            b.add_meta_graph_and_variables(
                sess,
                ["serve"],
                signature_def_map={
                    "serving_default": tf.saved_model.predict_signature_def({"x": x}, {"y": y})
                },
            )
            b.save()


def body_of_about(mb: float, datatype: str = "FP32") -> bytes:
    """A V2 JSON body of about ``mb`` MB: FP32 values with six decimals, or INT64 digits
    0-9 (the densest JSON numbers: two bytes an element)."""
    rng = random.Random(16)
    values = []
    size = 0
    target = int(mb * (1 << 20))
    while size < target:
        if datatype == "FP32":
            chunk = [round(rng.uniform(-1000, 1000), 6) for _ in range(10_000)]
        else:
            chunk = [rng.randrange(10) for _ in range(10_000)]
        values.extend(chunk)
        size += len(json.dumps(chunk))
    doc = {"inputs": [{"name": "x", "datatype": datatype, "shape": [len(values)], "data": values}]}
    return json.dumps(doc).encode()


def status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/{pid}/status")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url: str, body: bytes, timeout: float = 300) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def wait_ready(base: str, proc, log, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            raise SystemExit(f"server exited with {proc.returncode}:\n{log.read()[-3000:]}")
        try:
            with urllib.request.urlopen(base + "/v2/models/m/ready", timeout=5) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError):
            pass
        time.sleep(0.2)
    raise SystemExit("server not ready in time")


def measure(mb: float, server_path: str | None, datatype: str = "FP32") -> dict:
    root = Path(__file__).resolve().parent.parent
    checkout = Path(server_path).resolve() if server_path else root
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        export_model(repo / "m" / "1", datatype)
        body = body_of_about(mb, datatype)
        port = free_port()
        config_text = (checkout / "service" / "config.py").read_text()  # has it gRPC?
        env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONUNBUFFERED": "1"}
        log = open(Path(tmp) / "server.log", "w+")
        proc = subprocess.Popen(
            [sys.executable, "-m", "service", "--model-repository", str(repo)]
            + ["--host", "127.0.0.1", "--port", str(port)]
            + (["--grpc-port", "0"] if "grpc_port" in config_text else []),
            cwd=str(checkout),
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            wait_ready(base, proc, log)
            small = json.dumps(
                {"inputs": [{"name": "x", "datatype": datatype, "shape": [2], "data": [1, 2]}]}
            ).encode()
            status, _ = post(base + "/v2/models/m/infer", small)
            assert status == 200, status
            time.sleep(0.5)
            Path(f"/proc/{proc.pid}/clear_refs").write_text("5")  # reset the peak mark
            before = status_kib(proc.pid, "VmRSS")
            t0 = time.perf_counter()
            status, answer = post(base + "/v2/models/m/infer", body)
            seconds = time.perf_counter() - t0
            peak = status_kib(proc.pid, "VmHWM")
            assert status == 200, (status, answer[:300])
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        n = json.loads(body)["inputs"][0]["shape"][0]
        return {
            "checkout": str(checkout),
            "datatype": datatype,
            "body_mb": len(body) / (1 << 20),
            "elements": n,
            "response_mb": len(answer) / (1 << 20),
            "rss_before_mb": before / 1024,
            "peak_rss_mb": peak / 1024,
            "request_peak_mb": (peak - before) / 1024,
            "seconds": seconds,
        }


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mb", type=float, default=30.0, help="request body size in MB")
    p.add_argument("--server-path", help="run the server from this checkout instead")
    p.add_argument("--datatype", choices=("FP32", "INT64"), default="FP32")
    args = p.parse_args(argv)
    r = measure(args.mb, args.server_path, args.datatype)
    print(
        f"{r['checkout']}: one {r['body_mb']:.1f} MB V2 JSON request ({r['elements']} "
        f"{r['datatype']}; "
        f"answer {r['response_mb']:.1f} MB, {r['seconds']:.2f} s): RSS {r['rss_before_mb']:.0f} "
        f"MB before, peak {r['peak_rss_mb']:.0f} MB, +{r['request_peak_mb']:.0f} MB "
        f"({r['request_peak_mb'] / r['body_mb']:.1f}x the body)"
    )
    print(json.dumps(r))


if __name__ == "__main__":
    main()
