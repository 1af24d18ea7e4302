"""Server settings (flags > environment > config file > defaults) and per-model config.json."""

import json
import re
import subprocess
import sys
from dataclasses import fields

import numpy as np
import pytest

from service.cli import build_parser, resolve_config
from service.config import (
    SERVER_SETTINGS,
    BatchingConfig,
    ConfigError,
    ModelConfig,
    ServerConfig,
    parse_model_config,
    pool_threads,
)
from service.errors import InvalidInput
from service.tensors import TensorSpec, coerce, from_json_value


def resolve(argv, env=None):
    return resolve_config(build_parser().parse_args(argv), env or {})


def test_precedence_flag_over_env_over_file(tmp_path):
    cfg_file = tmp_path / "server.json"
    cfg_file.write_text(
        json.dumps({"port": 7000, "log_format": "json", "model_repository": str(tmp_path)})
    )
    c = resolve(["--config", str(cfg_file)])
    assert c.port == 7000 and c.log_format == "json" and c.model_repository == str(tmp_path)
    c = resolve(["--config", str(cfg_file)], {"FLOWSERVE_PORT": "7100"})
    assert c.port == 7100
    c = resolve(["--config", str(cfg_file), "--port", "7200"], {"FLOWSERVE_PORT": "7100"})
    assert c.port == 7200
    c = resolve([], {"FLOWSERVE_CONFIG": str(cfg_file), "FLOWSERVE_ENABLE_BATCHING": "true"})
    assert c.port == 7000 and c.enable_batching and c.batching.enabled


def test_defaults_serve_the_bundled_models():
    c = resolve([])
    assert c.model_repository.endswith("models") and c.port == 8501 and c.host == "0.0.0.0"
    assert c.poll_interval == 2.0 and c.device == "cpu" and c.auth_token is None


@pytest.mark.parametrize(
    "argv,env,message",
    [
        (["--port", "http"], {}, "--port must be a int"),
        (["--port", "70000"], {}, "port must be 1-65535"),
        ([], {"FLOWSERVE_POLL_INTERVAL": "-1"}, "poll_interval must be >= 0"),
        (["--device", "tpu:0"], {}, "device must be 'cpu', 'gpu' (every GPU) or 'gpu:N'"),
        (["--log-format", "xml"], {}, "log_format must be 'text' or 'json'"),
        (["--model-repository", "/does/not/exist"], {}, "is not a directory"),
        (["--max-request-bytes", "10"], {}, "max_request_bytes must be at least 1024"),
        ([], {"FLOWSERVE_ENABLE_BATCHING": "maybe"}, "FLOWSERVE_ENABLE_BATCHING must be true or"),
        (["--auth-token", " "], {}, "auth_token must not be empty"),
    ],
)
def test_invalid_settings_name_the_setting(argv, env, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        resolve(argv, env)


def test_config_file_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"prot": 1}))
    with pytest.raises(ConfigError, match="unknown setting 'prot'"):
        resolve(["--config", str(bad)])
    bad.write_text("{")
    with pytest.raises(ConfigError, match="bad.json"):
        resolve(["--config", str(bad)])


def test_batching_parameters_file_uses_tf_serving_names(tmp_path):
    f = tmp_path / "batching.json"
    f.write_text(
        json.dumps(
            {
                "max_batch_size": {"value": 16},
                "batch_timeout_micros": 500,
                "allowed_batch_sizes": [4, 8, 16],
            }
        )
    )
    c = resolve(["--enable-batching", "--batching-parameters-file", str(f)])
    assert c.batching == BatchingConfig(
        enabled=True, max_batch_size=16, batch_timeout_micros=500, allowed_batch_sizes=(4, 8, 16)
    )
    f.write_text(json.dumps({"max_batch_size": 16, "allowed_batch_sizes": [4, 8]}))
    with pytest.raises(ConfigError, match="must equal max_batch_size"):
        resolve(["--batching-parameters-file", str(f)])
    f.write_text(json.dumps({"max_batch_sise": 16}))
    with pytest.raises(ConfigError, match="unknown batching parameter 'max_batch_sise'"):
        resolve(["--batching-parameters-file", str(f)])


def test_model_config_parsing_and_errors():
    c = parse_model_config(
        {
            "model_version_policy": {"latest": {"num_versions": 2}},
            "version_labels": {"stable": 1},
            "batching": True,
            "device": "GPU:1",
            "warmup": False,
        },
        "m/config.json",
    )
    assert c.version_policy.select([1, 2, 3]) == {2, 3}
    assert c.version_labels == {"stable": 1} and c.batching == {"enabled": True}
    assert c.device == "gpu:1" and c.warmup is False
    assert ModelConfig().version_policy.select([3, 1, 2]) == {3}
    for doc, message in [
        ({"versions": 1}, "unknown setting"),
        ({"version_policy": {"latest": {"num_versions": 0}}}, "num_versions"),
        ({"version_policy": {"specific": {"versions": []}}}, "non-empty list"),
        ({"version_labels": {"stable": "one"}}, "version_labels"),
        ({"batching": {"max_batch_size": 0}}, "max_batch_size must be from 1 to 65536"),
        ({"device": "fpga"}, "device must be"),
        ({"instances": 0}, "instances"),
        ({"warmup": [{"x": 1}]}, "warmup\\[0\\]"),
        ([], "must be a JSON object"),
    ]:
        with pytest.raises(ConfigError, match=message):
            parse_model_config(doc, "m/config.json")


def test_every_setting_is_a_flag_showing_the_dataclass_default():
    # ServerConfig is the one place a default is written; the CLI shows what it holds.
    # batching is derived; worker is set by the --workers entry point (service.worker)
    settings = {f.name for f in fields(ServerConfig)} - {"batching", "worker"}
    assert [name for name, *_ in SERVER_SETTINGS] == [
        f.name for f in fields(ServerConfig) if f.name in settings
    ]
    helps = {
        a.dest: a.help
        for a in build_parser()._actions
        if not any(o.startswith("--no-") for o in a.option_strings)
    }
    defaults = ServerConfig()
    for name, typ, _, _ in SERVER_SETTINGS:
        assert f"(default: {getattr(defaults, name)})" in helps[name]
        assert isinstance(getattr(defaults, name), typ) or getattr(defaults, name) is None
    assert dict((n, t) for n, t, *_ in SERVER_SETTINGS)["auth_token"] is str


def test_help_documents_flags_env_and_defaults():
    out = subprocess.run(
        [sys.executable, "-m", "service", "--help"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0
    for text in [
        "--model-repository",
        "--poll-interval",
        "--auth-token",
        "--max-request-bytes",
        "--log-format",
        "FLOWSERVE_PORT",
        "(default: 8501)",
        "--enable-batching",
    ]:
        assert text in out.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "service", "--port", "x"], capture_output=True, text=True, timeout=60
    )
    assert bad.returncode == 2 and "flowserve: error: --port must be a int" in bad.stderr


# -- request tensors ------------------------------------------------------------------------


def spec(dtype, dims):
    import engine as tf

    return TensorSpec("x", "x:0", tf.as_dtype(dtype), tf.TensorShape(dims))


@pytest.mark.parametrize(
    "value,dtype,dims,expected",
    [
        ([1, 2], "float32", [None], np.array([1, 2], np.float32)),
        ([1.0, 2.0], "int64", [2], np.array([1, 2], np.int64)),
        ([[True, False]], "bool", [1, None], np.array([[True, False]])),
        (["a", "é"], "string", [None], np.array([b"a", "é".encode()], dtype=object)),
        (3, "int32", [], np.array(3, np.int32)),
        ([[]], "float32", [1, 0], np.zeros((1, 0), np.float32)),
    ],
)
def test_safe_casts(value, dtype, dims, expected):
    out = coerce(spec(dtype, dims), from_json_value(value, "input 'x'"))
    assert out.dtype == expected.dtype and out.shape == expected.shape
    assert out.tolist() == expected.tolist()


@pytest.mark.parametrize(
    "value,dtype,dims,message",
    [
        ([1.5], "int32", [None], "non-integral"),
        ([300], "uint8", [None], "out of range for uint8"),
        ([1e39], "float32", [None], "out of range for float32"),
        ([1, 2], "bool", [None], "expects bools"),
        (["a"], "float32", [None], "expects float32 numbers, got strings"),
        ([True], "int32", [None], "got bools"),
        ([[1], [2, 3]], "int32", [None, None], "ragged"),
        ([1, "a"], "string", [None], "mixes strings"),
        ([None], "float32", [None], "values must all be numbers"),
        ({"a": 1}, "float32", [None], "got an object"),
        ([1, 2, 3], "float32", [2], "dimension 0 must be 2"),
        ([[1, 2]], "float32", [None], "rank"),
    ],
)
def test_unsafe_or_malformed_values_are_rejected(value, dtype, dims, message):
    with pytest.raises(InvalidInput, match=message):
        coerce(spec(dtype, dims), from_json_value(value, "input 'x'"))


def test_num_threads_bounds_the_compute_pool_on_any_number_of_cores(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 64)
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(64)), raising=False)
    monkeypatch.setattr("service.cpus.cgroup_cpu_limit", lambda *a: None)
    assert pool_threads(ServerConfig(num_threads=2)) == 2
    assert pool_threads(ServerConfig()) == 64  # 0: one per core
    # Server-wide batching parameters asking for more batch threads add them.
    wide = ServerConfig(num_threads=2, batching=BatchingConfig(num_batch_threads=8))
    assert pool_threads(wide) == 8


def test_default_compute_threads_count_the_cores_this_process_may_use(monkeypatch):
    """A pod limited to 2 CPUs on a 64-core node (or a process pinned to 2 cores) runs 2
    compute threads, not 64: ``num_threads`` 0 counts what ``--workers auto`` counts."""
    monkeypatch.setattr("os.cpu_count", lambda: 64)
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(64)), raising=False)
    monkeypatch.setattr("service.cpus.cgroup_cpu_limit", lambda *a: 1.5)  # cpu.max 150000 100000
    assert ServerConfig().compute_threads == 2
    assert pool_threads(ServerConfig()) == 2
    monkeypatch.setattr("service.cpus.cgroup_cpu_limit", lambda *a: None)
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {3, 5, 7}, raising=False)
    assert ServerConfig().compute_threads == 3
    assert ServerConfig(num_threads=5).compute_threads == 5  # an explicit count wins
