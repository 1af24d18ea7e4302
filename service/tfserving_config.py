"""TensorFlow Serving's configuration files, as written for ``tensorflow_model_server``.

- ``--model_config_file``: a ``ModelServerConfig`` in protobuf text format (a
  ``model_config_list`` of ``config { name base_path model_platform model_version_policy
  version_labels }``).
- ``--batching_parameters_file``: ``BatchingParameters`` in text format (``max_batch_size {
  value: 32 }`` ...).
- ``--monitoring_config_file``: ``prometheus_config { enable: true path: "..." }``.

Each becomes our own settings (a per-model ``config.json`` document, a batching dict, a
metrics path); anything we do not support is a ``ConfigError`` naming it. Paths in these files
are the operator's, read as given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import text_format

from service.config import ConfigError
from service.protocols.proto import tfserving_pb2 as pb

__all__ = [
    "ServedModel",
    "parse_model_config_file",
    "served_models_of",
    "parse_batching_parameters",
    "parse_monitoring_config",
]

_MAX_FILE_BYTES = 1 << 20


@dataclass
class ServedModel:
    name: str
    base_path: Path
    config: dict  # our per-model config.json document (version policy, labels)


def _read(path: str, what: str) -> str:
    try:
        p = Path(path)
        if p.stat().st_size > _MAX_FILE_BYTES:
            raise ConfigError(f"{what} {path} is larger than {_MAX_FILE_BYTES} bytes")
        return p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{what} {path}: cannot read it ({e})") from None


def _parse(text: str, message, what: str):
    try:
        return text_format.Parse(text, message)
    except text_format.ParseError as e:
        name = message.DESCRIPTOR.name
        raise ConfigError(f"{what}: not a valid {name} text protobuf: {e}") from None


def _policy(policy) -> dict | None:
    kind = policy.WhichOneof("policy_choice")
    if kind is None:
        return None
    if kind == "latest":
        return {"latest": {"num_versions": policy.latest.num_versions or 1}}
    if kind == "all":
        return {"all": {}}
    return {"specific": {"versions": list(policy.specific.versions)}}


def parse_model_config_file(path: str) -> list[ServedModel]:
    """The models of a ``--model_config_file``."""
    what = f"model config file {path}"
    config = _parse(_read(path, "model config file"), pb.ModelServerConfig(), what)
    return served_models_of(config, what)


def served_models_of(config: pb.ModelServerConfig, what: str) -> list[ServedModel]:
    """The models of a ``ModelServerConfig`` (a file's, or a reload request's)."""
    if config.WhichOneof("config") != "model_config_list":
        raise ConfigError(
            f"{what}: expected a model_config_list (custom_model_config is not supported)"
        )
    out, names = [], set()
    for i, entry in enumerate(config.model_config_list.config):
        where = f"{what}, config {i}"
        if not entry.name or not entry.base_path:
            raise ConfigError(f"{where}: name and base_path are required")
        if entry.name in names:
            raise ConfigError(f"{where}: model {entry.name!r} is configured twice")
        names.add(entry.name)
        if entry.model_platform not in ("", "tensorflow", "flowserve"):
            raise ConfigError(
                f"{where}: model_platform {entry.model_platform!r} is not supported "
                "(tensorflow or flowserve)"
            )
        doc: dict = {}
        policy = _policy(entry.model_version_policy)
        if policy is not None:
            doc["version_policy"] = policy
        if entry.version_labels:
            doc["version_labels"] = dict(entry.version_labels)
        out.append(ServedModel(entry.name, Path(entry.base_path), doc))
    if not out:
        raise ConfigError(f"{what}: model_config_list has no models")
    return out


_BATCHING_WRAPPED = (
    "max_batch_size",
    "batch_timeout_micros",
    "max_enqueued_batches",
    "num_batch_threads",
)


def parse_batching_parameters(text: str, what: str) -> dict:
    """``BatchingParameters`` text protobuf as our batching settings (TF Serving's names)."""
    params = _parse(text, pb.BatchingParameters(), what)
    out: dict = {}
    for name in _BATCHING_WRAPPED:
        if params.HasField(name):
            out[name] = getattr(params, name).value
    if params.allowed_batch_sizes:
        out["allowed_batch_sizes"] = list(params.allowed_batch_sizes)
    if params.pad_variable_length_inputs:
        out["pad_variable_length_inputs"] = True
    if params.enable_large_batch_splitting:
        out["enable_large_batch_splitting"] = True
    if params.HasField("max_execution_batch_size"):
        raise ConfigError(f"{what}: max_execution_batch_size is not supported")
    return out


_PROMETHEUS = re.compile(r"^/[A-Za-z0-9_./-]{0,200}$")


def parse_monitoring_config(path: str) -> str | None:
    """The Prometheus path of a ``--monitoring_config_file`` (None when not enabled)."""
    text = _read(path, "monitoring config file")
    what = f"monitoring config file {path}"
    # MonitoringConfig { PrometheusConfig prometheus_config = 1; } with PrometheusConfig
    # { bool enable = 1; string path = 2; }: parsed by hand, it is two fields.
    body = re.fullmatch(r"\s*prometheus_config\s*:?\s*\{(.*)\}\s*", text, re.S)
    if body is None:
        raise ConfigError(f'{what}: expected prometheus_config {{ enable: true path: "..." }}')
    enable = re.search(r"\benable\s*:\s*(true|false)\b", body.group(1))
    path_match = re.search(r"\bpath\s*:\s*\"([^\"]*)\"", body.group(1))
    rest = re.sub(r"\benable\s*:\s*(true|false)\b|\bpath\s*:\s*\"[^\"]*\"", "", body.group(1))
    rest = rest.replace(",", " ").replace(";", " ").strip()  # text format's separators
    if rest:
        raise ConfigError(f"{what}: unsupported field(s): {rest[:80]}")
    if enable is None or enable.group(1) != "true":
        return None
    metrics_path = path_match.group(1) if path_match else "/monitoring/prometheus/metrics"
    if not _PROMETHEUS.match(metrics_path):
        raise ConfigError(f"{what}: path {metrics_path!r} is not a valid URL path")
    return metrics_path
