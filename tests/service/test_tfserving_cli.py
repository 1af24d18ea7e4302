"""``flowserve-tfserving``: tensorflow_model_server's flags and config files."""

import os
import socket
import subprocess
import sys
import time
import urllib.request

import grpc
import numpy as np
import pytest

from engine.formats.tensorflow.proto import tensor_pb2, types_pb2
from service.config import ConfigError, ServerConfig
from service.protocols.proto import tfserving_pb2 as pb
from service.tfserving_cli import build_parser, config_from_args
from service.tfserving_config import (
    parse_batching_parameters,
    parse_model_config_file,
    parse_monitoring_config,
)
from tests.service import models

MODEL_CONFIG = """
model_config_list {
  config {
    name: "hpt"
    base_path: "%s"
    model_platform: "tensorflow"
    model_version_policy { specific { versions: 1 versions: 2 } }
    version_labels { key: "stable" value: 1 }
  }
  config { name: "other" base_path: "%s" }
}
"""
BATCHING = """
max_batch_size { value: 16 }
batch_timeout_micros { value: 500 }
num_batch_threads { value: 2 }
allowed_batch_sizes: 4
allowed_batch_sizes: 16
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def base_paths(tmp_path):
    models.half_plus_two(tmp_path / "hpt" / "1", b=2.0)
    models.half_plus_two(tmp_path / "hpt" / "2", b=3.0)
    models.half_plus_two(tmp_path / "hpt" / "3", b=4.0)
    models.strings(tmp_path / "other" / "7")
    config = tmp_path / "models.config"
    config.write_text(MODEL_CONFIG % (tmp_path / "hpt", tmp_path / "other"))
    batching = tmp_path / "batching.config"
    batching.write_text(BATCHING)
    monitoring = tmp_path / "monitoring.config"
    monitoring.write_text(
        'prometheus_config { enable: true, path: "/monitoring/prometheus/metrics" }'
    )
    return tmp_path, config, batching, monitoring


def test_config_files(base_paths, tmp_path):
    root, config, batching, monitoring = base_paths
    served = parse_model_config_file(str(config))
    assert [(m.name, m.base_path) for m in served] == [
        ("hpt", root / "hpt"),
        ("other", root / "other"),
    ]
    assert served[0].config == {
        "version_policy": {"specific": {"versions": [1, 2]}},
        "version_labels": {"stable": 1},
    }
    assert parse_batching_parameters(BATCHING, "b") == {
        "max_batch_size": 16,
        "batch_timeout_micros": 500,
        "num_batch_threads": 2,
        "allowed_batch_sizes": [4, 16],
    }
    assert parse_monitoring_config(str(monitoring)) == "/monitoring/prometheus/metrics"
    bad = tmp_path / "bad.config"
    for text, fragment in (
        ("model_config_list { config { name: 'x' } }", "base_path are required"),
        (
            "model_config_list { config { name: 'x' base_path: '/m' model_platform: 'onnx' } }",
            "onnx",
        ),
        ("model_config_list { nonsense: 1 }", "not a valid ModelServerConfig"),
        ("", "expected a model_config_list"),
        ("model_config_list {}", "no models"),
    ):
        bad.write_text(text)
        with pytest.raises(ConfigError, match=fragment):
            parse_model_config_file(str(bad))
    with pytest.raises(ConfigError, match="max_execution_batch_size"):
        parse_batching_parameters("max_execution_batch_size { value: 3 }", "b")


def test_flags_map_to_settings(base_paths, tmp_path):
    root, config, batching, monitoring = base_paths
    args = build_parser().parse_args(
        [
            "--port=9000",
            "--rest_api_port=9001",
            f"--model_config_file={config}",
            "--enable_batching=true",
            f"--batching_parameters_file={batching}",
            f"--monitoring_config_file={monitoring}",
            "--file_system_poll_wait_seconds=5",
        ]
    )
    repo = tmp_path / "repo"
    repo.mkdir()
    c = config_from_args(args, repo)
    assert (c.grpc_port, c.port, c.poll_interval) == (9000, 9001, 5.0)
    assert c.batching.enabled and c.batching.max_batch_size == 16
    assert c.batching.allowed_batch_sizes == (4, 16)
    assert c.prometheus_path == "/monitoring/prometheus/metrics"
    assert sorted(os.listdir(repo / "hpt")) == ["1", "2", "3", "config.json"]
    assert os.path.islink(repo / "hpt" / "1")
    single = build_parser().parse_args(["--model_name=m", f"--model_base_path={root / 'hpt'}"])
    repo2 = tmp_path / "repo2"
    repo2.mkdir()
    assert config_from_args(single, repo2).grpc_port == 8500
    assert sorted(os.listdir(repo2)) == ["m"]
    grpc_only = build_parser().parse_args(["--port=8501", f"--model_base_path={root / 'hpt'}"])
    repo3 = tmp_path / "repo3"
    repo3.mkdir()
    assert config_from_args(grpc_only, repo3).grpc_port == 8501  # REST off: no port clash
    with pytest.raises(ConfigError, match="required"):
        config_from_args(build_parser().parse_args([]), repo2)
    # The batching file of the flowserve entry point takes the text format too.
    flowserve = ServerConfig(
        model_repository=str(repo), enable_batching=True, batching_parameters_file=str(batching)
    ).validate()
    assert flowserve.batching.max_batch_size == 16


def test_tensorflow_model_server_invocation(base_paths):
    root, config, batching, monitoring = base_paths
    grpc_port, rest_port = _free_port(), _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "service.tfserving_cli", f"--port={grpc_port}",
         f"--rest_api_port={rest_port}", f"--model_config_file={config}",
         "--enable_batching", f"--batching_parameters_file={batching}",
         f"--monitoring_config_file={monitoring}", "--host=127.0.0.1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        base = f"http://127.0.0.1:{rest_port}"
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stdout.read().decode()
            try:
                with urllib.request.urlopen(f"{base}/v1/models/hpt") as r:
                    if b"AVAILABLE" in r.read():
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "not ready"
            time.sleep(0.2)
        with urllib.request.urlopen(f"{base}/monitoring/prometheus/metrics") as r:
            assert b"flowserve_requests" in r.read()
        with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
            predict = channel.unary_unary(
                "/tensorflow.serving.PredictionService/Predict",
                request_serializer=lambda m: m.SerializeToString(),
                response_deserializer=pb.PredictResponse.FromString,
            )
            request = pb.PredictRequest()
            request.model_spec.name = "hpt"
            request.model_spec.version_label = "stable"
            x = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT, float_val=[1.0, 2.0])
            x.tensor_shape.dim.add(size=2)
            request.inputs["x"].CopyFrom(x)
            response = predict(request, timeout=30)
            assert response.model_spec.version.value == 1
            y = np.frombuffer(response.outputs["y"].tensor_content, "<f4")
            np.testing.assert_array_equal(y, [2.5, 3.0])
            request.model_spec.ClearField("version_label")
            response = predict(request, timeout=30)
            assert response.model_spec.version.value == 2  # the policy serves 1 and 2 only
            # HandleReloadConfigRequest: serve exactly the new list (hpt goes, hpt2 comes).
            reload = channel.unary_unary(
                "/tensorflow.serving.ModelService/HandleReloadConfigRequest",
                request_serializer=lambda m: m.SerializeToString(),
                response_deserializer=pb.ReloadConfigResponse.FromString,
            )
            new = pb.ReloadConfigRequest()
            entry = new.config.model_config_list.config.add(name="hpt2")
            entry.base_path = str(root / "hpt")
            assert reload(new, timeout=60).status.error_code == pb.OK
            request.model_spec.name = "hpt2"
            assert predict(request, timeout=30).model_spec.version.value == 3  # latest
            request.model_spec.name = "hpt"
            with pytest.raises(grpc.RpcError) as info:
                predict(request, timeout=30)
            assert info.value.code() == grpc.StatusCode.NOT_FOUND
            bad = pb.ReloadConfigRequest()
            bad.config.model_config_list.config.add(name="x")
            with pytest.raises(grpc.RpcError) as info:
                reload(bad, timeout=30)
            assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    finally:
        proc.terminate()
        proc.wait(30)
