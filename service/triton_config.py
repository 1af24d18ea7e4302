"""Triton's per-model ``config.pbtxt``, read where a model has no ``config.json``.

The text protobuf is parsed with Triton's field names (our ``flowserve.kserve.ModelConfig``
declares the fields flowserve honours) and becomes a ``config.json`` document:

- ``name`` must be the model directory's name; ``platform``/``backend`` one of those that name
  a model flowserve loads (``flowserve``, ``tensorflow``, ``tensorflow_savedmodel``,
  ``tensorflow_graphdef``, ``onnxruntime``, ``onnxruntime_onnx``, and ``armnn_tflite``, the
  Triton backend of ``model.tflite`` versions) or empty;
- ``max_batch_size`` > 0 turns batching on with that maximum, 0 turns it off;
  ``dynamic_batching.max_queue_delay_microseconds`` is the batch timeout
  (``preferred_batch_size`` is accepted: flowserve forms batches up to the maximum);
- ``instance_group``: one group, ``count`` instances, ``KIND_CPU``, or ``KIND_GPU`` on at most
  one listed GPU (none: every GPU);
- ``version_policy`` as Triton's;
- ``input``/``output`` (name, data_type, dims, format) are informative: the model's signature
  is authoritative and is what ``/config`` reports.

Any other field (``optimization``, ``sequence_batching``, ``ensemble_scheduling``, model
``parameters``, ...) is a ``ConfigError`` naming it.
"""

from __future__ import annotations

from pathlib import Path

from google.protobuf import json_format, text_format

from service.config import ConfigError
from service.protocols.proto import kserve_pb2 as pb

__all__ = ["parse_triton_config", "parse_triton_json", "TRITON_CONFIG"]

TRITON_CONFIG = "config.pbtxt"
_PLATFORMS = {
    "",
    "flowserve",
    "tensorflow",
    "tensorflow_savedmodel",
    "tensorflow_graphdef",
    "onnxruntime",
    "onnxruntime_onnx",
    "armnn_tflite",
}
_MAX_BYTES = 1 << 20


def parse_triton_config(path: Path, model_name: str) -> dict:
    """The ``config.json`` document equivalent to Triton's ``config.pbtxt`` at ``path``."""
    try:
        if path.stat().st_size > _MAX_BYTES:
            raise ConfigError(f"{path}: larger than {_MAX_BYTES} bytes")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot read it ({e})") from None
    try:
        config = text_format.Parse(text, pb.ModelConfig())
    except text_format.ParseError as e:
        raise ConfigError(f"{path}: {e} ({_READ})") from None
    return _document(config, str(path), model_name)


def parse_triton_json(text: str, model_name: str, where: str = "config") -> dict:
    """The ``config.json`` document of a Triton model configuration in its JSON form (as a
    repository ``load`` request's ``parameters.config`` carries it)."""
    try:
        config = json_format.Parse(text, pb.ModelConfig())
    except json_format.ParseError as e:
        raise ConfigError(f"{where}: {e} ({_READ})") from None
    return _document(config, where, model_name)


_READ = (
    "flowserve reads name, platform, backend, max_batch_size, input, output, "
    "dynamic_batching, instance_group and version_policy"
)


def _document(config: pb.ModelConfig, path: str, model_name: str) -> dict:
    if config.name and config.name != model_name:
        raise ConfigError(
            f"{path}: name {config.name!r} does not match the model directory {model_name!r}"
        )
    for field in ("platform", "backend"):
        value = getattr(config, field)
        if value not in _PLATFORMS:
            raise ConfigError(
                f"{path}: {field} {value!r} is not supported (one of "
                f"{', '.join(sorted(p for p in _PLATFORMS if p))})"
            )
    if config.parameters:
        raise ConfigError(f"{path}: model parameters {sorted(config.parameters)} are not supported")
    if config.max_batch_size < 0:
        raise ConfigError(f"{path}: max_batch_size must be >= 0")
    doc: dict = {}
    if config.max_batch_size > 0:
        batching = {"enabled": True, "max_batch_size": config.max_batch_size}
        if config.HasField("dynamic_batching"):
            delay = config.dynamic_batching.max_queue_delay_microseconds
            batching["batch_timeout_micros"] = delay
        doc["batching"] = batching
    else:
        if config.HasField("dynamic_batching"):
            raise ConfigError(f"{path}: dynamic_batching needs max_batch_size > 0")
        doc["batching"] = {"enabled": False}
    if len(config.instance_group) > 1:
        raise ConfigError(
            f"{path}: one instance_group is supported, got {len(config.instance_group)}"
        )
    for group in config.instance_group:
        doc["instances"] = group.count or 1
        if group.kind == pb.ModelInstanceGroup.KIND_GPU:
            if len(group.gpus) > 1:
                raise ConfigError(
                    f"{path}: an instance group on several listed GPUs is not supported"
                )
            doc["device"] = f"gpu:{group.gpus[0]}" if group.gpus else "gpu"
        elif group.kind in (pb.ModelInstanceGroup.KIND_CPU, pb.ModelInstanceGroup.KIND_AUTO):
            if group.kind == pb.ModelInstanceGroup.KIND_CPU:
                doc["device"] = "cpu"
        else:
            raise ConfigError(f"{path}: instance_group kind KIND_MODEL is not supported")
    if config.HasField("version_policy"):
        policy = json_format.MessageToDict(config.version_policy)
        if "latest" in policy:
            policy["latest"] = {"num_versions": int(policy["latest"].get("numVersions", 1))}
        if "specific" in policy:
            policy["specific"] = {"versions": [int(v) for v in policy["specific"]["versions"]]}
        doc["version_policy"] = policy
    return doc
