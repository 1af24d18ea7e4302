"""TLS on both transports: HTTPS and gRPC over TLS with --tls-cert/--tls-key, and mutual TLS
with --tls-client-ca, against the real server process."""

import json
import shutil
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

from service.config import ConfigError, ServerConfig
from tests.service import models

grpcclient = pytest.importorskip("tritonclient.grpc")
InferenceServerException = pytest.importorskip("tritonclient.utils").InferenceServerException

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_cert(directory, name, ca=None):
    """A key and certificate for 127.0.0.1, self-signed or signed by ``ca`` (key, cert)."""
    key, cert = directory / f"{name}.key", directory / f"{name}.pem"
    common = ["-subj", f"/CN={name}", "-days", "2"]
    if ca is None:
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
             "-out", cert, *common, "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
            check=True, capture_output=True,
        )  # fmt: skip
        return key, cert
    csr = directory / f"{name}.csr"
    subprocess.run(
        ["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr,
         "-subj", f"/CN={name}"],
        check=True, capture_output=True,
    )  # fmt: skip
    subprocess.run(
        ["openssl", "x509", "-req", "-in", csr, "-CA", ca[1], "-CAkey", ca[0],
         "-CAcreateserial", "-out", cert, "-days", "2"],
        check=True, capture_output=True,
    )  # fmt: skip
    return key, cert


def start(tmp_path, *extra):
    models.half_plus_two(tmp_path / "repo" / "m" / "1")
    port, grpc_port = _free_port(), _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "service", "--model-repository", str(tmp_path / "repo"),
         "--host", "127.0.0.1", "--port", str(port), "--grpc-port", str(grpc_port),
         "--poll-interval", "0", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    return proc, port, grpc_port


def wait_https(proc, port, context):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stdout.read().decode()
        try:
            with urllib.request.urlopen(
                f"https://127.0.0.1:{port}/v2/health/ready", context=context
            ) as r:
                return json.loads(r.read())
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.2)
    raise AssertionError("the server did not become ready over HTTPS")


def test_https_and_grpc_tls(tmp_path):
    key, cert = make_cert(tmp_path, "server")
    proc, port, grpc_port = start(tmp_path, "--tls-cert", str(cert), "--tls-key", str(key))
    try:
        trusted = ssl.create_default_context(cafile=str(cert))
        assert wait_https(proc, port, trusted) == {"ready": True}
        with pytest.raises((urllib.error.URLError, ConnectionError)):  # plain HTTP: no answer
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/health/ready", timeout=5)
        client = grpcclient.InferenceServerClient(
            f"127.0.0.1:{grpc_port}", ssl=True, root_certificates=str(cert)
        )
        try:
            x = grpcclient.InferInput("x", [2], "FP32")
            x.set_data_from_numpy(np.array([2.0, 4.0], np.float32))
            np.testing.assert_allclose(client.infer("m", [x]).as_numpy("y"), [3.0, 4.0])
        finally:
            client.close()
        plain = grpcclient.InferenceServerClient(f"127.0.0.1:{grpc_port}")
        try:
            with pytest.raises(InferenceServerException):
                plain.is_server_live(client_timeout=5)
        finally:
            plain.close()
    finally:
        proc.terminate()
        proc.wait(30)


def test_mutual_tls(tmp_path):
    ca = make_cert(tmp_path, "ca")
    key, cert = make_cert(tmp_path, "server")
    client_key, client_cert = make_cert(tmp_path, "client", ca=ca)
    proc, port, grpc_port = start(
        tmp_path, "--tls-cert", str(cert), "--tls-key", str(key), "--tls-client-ca", str(ca[1])
    )
    try:
        with_client_cert = ssl.create_default_context(cafile=str(cert))
        with_client_cert.load_cert_chain(str(client_cert), str(client_key))
        assert wait_https(proc, port, with_client_cert) == {"ready": True}
        without = ssl.create_default_context(cafile=str(cert))
        with pytest.raises((urllib.error.URLError, ssl.SSLError, ConnectionError)):
            urllib.request.urlopen(
                f"https://127.0.0.1:{port}/v2/health/ready", context=without, timeout=5
            )
        good = grpcclient.InferenceServerClient(
            f"127.0.0.1:{grpc_port}",
            ssl=True,
            root_certificates=str(cert),
            private_key=str(client_key),
            certificate_chain=str(client_cert),
        )
        anonymous = grpcclient.InferenceServerClient(
            f"127.0.0.1:{grpc_port}", ssl=True, root_certificates=str(cert)
        )
        try:
            assert good.is_server_live()
            with pytest.raises(InferenceServerException):
                anonymous.is_server_live(client_timeout=5)
        finally:
            good.close()
            anonymous.close()
    finally:
        proc.terminate()
        proc.wait(30)


def test_tls_settings_are_validated(tmp_path):
    key, cert = make_cert(tmp_path, "server")
    with pytest.raises(ConfigError, match="go together"):
        ServerConfig(model_repository=str(tmp_path), tls_cert=str(cert)).validate()
    with pytest.raises(ConfigError, match="not a readable file"):
        ServerConfig(
            model_repository=str(tmp_path), tls_cert=str(cert), tls_key=str(tmp_path / "no")
        ).validate()
    with pytest.raises(ConfigError, match="cannot use the TLS"):
        ServerConfig(model_repository=str(tmp_path), tls_cert=str(key), tls_key=str(key)).validate()
    ok = ServerConfig(model_repository=str(tmp_path), tls_cert=str(cert), tls_key=str(key))
    assert ok.validate().grpc_credentials()[2] is None
