"""Settings: the server's (flags, ``FLOWSERVE_*`` environment, ``--config`` file) and each
model's ``config.json`` (version policy, labels, batching, device, warmup).

Precedence for server settings: command-line flag > environment variable > config file >
default. Every value is validated here, so a bad setting fails with a message naming it.
"""

from __future__ import annotations

import json
import re
import ssl
from dataclasses import MISSING, dataclass, field, fields, replace
from pathlib import Path
from types import UnionType
from typing import get_args, get_type_hints

from service.cpus import available_cores

__all__ = [
    "ServerConfig",
    "ModelConfig",
    "BatchingConfig",
    "VersionPolicy",
    "ConfigError",
    "default_model_repository",
    "load_model_config",
    "SERVER_SETTINGS",
    "WorkerRole",
    "parse_workers",
]


class ConfigError(ValueError):
    """A setting has an invalid value; the message names it and what was expected."""


def _bounded(name: str, value, lo, hi, where: str = "") -> None:
    """ConfigError unless ``lo <= value <= hi`` (NaN fails too)."""
    if not lo <= value <= hi:
        raise ConfigError(f"{where}{name} must be from {lo:g} to {hi:g}, got {_short(value)}")


def default_model_repository() -> str:
    """The bundled example models: a source checkout's ``models/``, else the copy an
    installed wheel ships (``service/bundled_models/``), else ``./models``."""
    here = Path(__file__).resolve().parent
    for candidate in (here.parent / "models", here / "bundled_models"):
        if candidate.is_dir():
            return str(candidate)
    return str(Path.cwd() / "models")


# -----------------------------------------------------------------------------------------
# Batching (TF Serving's field names)
# -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchingConfig:
    """Dynamic batching parameters, named as in TF Serving's batching parameters file."""

    enabled: bool = False
    max_batch_size: int = 32
    # 0: a batch takes whatever is waiting when a batch thread is free (no added latency at
    # low load; large batches under load), as TF Serving's default.
    batch_timeout_micros: int = 0
    max_enqueued_batches: int = 64
    # 0: as many as the server's compute threads (--num-threads: one per core this process
    # may use, or a worker's share of them under --workers).
    num_batch_threads: int = 0
    allowed_batch_sizes: tuple[int, ...] = ()
    pad_variable_length_inputs: bool = False
    enable_large_batch_splitting: bool = False

    def validate(self, where: str) -> BatchingConfig:
        for name, (lo, hi) in _BATCHING_BOUNDS.items():
            _bounded(name, getattr(self, name), lo, hi, f"{where}: ")
        sizes = list(self.allowed_batch_sizes)
        if len(sizes) > _BATCHING_BOUNDS["max_batch_size"][1]:
            raise ConfigError(f"{where}: allowed_batch_sizes has {len(sizes)} entries")
        if sizes:
            if sizes != sorted(set(sizes)) or sizes[0] < 1:
                raise ConfigError(
                    f"{where}: allowed_batch_sizes must be strictly increasing "
                    f"positive integers, got {sizes}"
                )
            if sizes[-1] != self.max_batch_size:
                raise ConfigError(
                    f"{where}: the last of allowed_batch_sizes ({sizes[-1]}) must "
                    f"equal max_batch_size ({self.max_batch_size})"
                )
        return self

    def merged(self, overrides: dict, where: str) -> BatchingConfig:
        """A copy with ``overrides`` (TF Serving field names, plain values) applied."""
        known = {f.name for f in fields(self)}
        values = {}
        for key, value in overrides.items():
            if key not in known:
                raise ConfigError(
                    f"{where}: unknown batching parameter {key!r} (known: "
                    f"{', '.join(sorted(known))})"
                )
            values[key] = _coerce_field(self, key, value, where)
        return replace(self, **values).validate(where)


# Each batching number's range: beyond these a model's config would stall the server (two
# million batch threads) or make every request time out (a batch timeout of years).
_BATCHING_BOUNDS = {
    "max_batch_size": (1, 1 << 16),
    "batch_timeout_micros": (0, 60_000_000),
    "max_enqueued_batches": (1, 1 << 20),
    "num_batch_threads": (0, 1024),
}


def _unwrap(value):
    # The TF Serving batching file wraps scalars: {"max_batch_size": {"value": 32}}.
    if isinstance(value, dict) and set(value) == {"value"}:
        return value["value"]
    return value


def _coerce_field(obj, key, value, where):
    value = _unwrap(value)
    current = getattr(obj, key)
    if isinstance(current, bool):
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: {key} must be true or false, got {_short(value)}")
        return value
    if isinstance(current, int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: {key} must be an integer, got {_short(value)}")
        return value
    if isinstance(current, tuple):
        if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        ):
            raise ConfigError(f"{where}: {key} must be a list of integers, got {_short(value)}")
        return tuple(value)
    return value


def _short(value) -> str:
    """``repr(value)`` cut to a readable length (a hostile file may hold huge values)."""
    try:
        text = repr(value)
    except ValueError:  # an int too long to print
        return "an integer of more than 4300 digits"
    return text if len(text) <= 80 else text[:77] + "..."


# -----------------------------------------------------------------------------------------
# Per-model configuration
# -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class VersionPolicy:
    """Which versions to serve: the latest N, all, or a specific list (TF Serving's)."""

    kind: str = "latest"
    num_versions: int = 1
    versions: tuple[int, ...] = ()

    def select(self, available: list[int]) -> set[int]:
        ordered = sorted(available)
        if self.kind == "all":
            return set(ordered)
        if self.kind == "specific":
            return set(self.versions) & set(ordered)
        return set(ordered[-self.num_versions :]) if ordered else set()


_DEVICE = re.compile(r"^([a-z][a-z0-9_]{0,31})(:\d{1,4})?$")


def parse_device(value: object, where: str) -> str:
    """A model/server device setting, normalized: "cpu", "gpu" (every GPU) or "gpu:N" (or
    "<type>[:N]" for another registered device type); ConfigError otherwise."""
    from engine import devices  # noqa: PLC0415 - the engine only where devices are parsed

    m = _DEVICE.match(value.strip().lower()) if isinstance(value, str) else None
    known = {"cpu", "gpu"} | {t.lower() for t in devices.DEVICE_TYPES}
    if (
        m is None
        or m.group(1) not in known
        or (m.group(1) == "cpu" and m.group(2) not in (None, ":0"))
    ):
        raise ConfigError(
            f"{where}device must be 'cpu', 'gpu' (every GPU) or 'gpu:N', got {_short(value)}"
        )
    return "cpu" if m.group(1) == "cpu" else m.group(0)


@dataclass(frozen=True)
class ModelConfig:
    version_policy: VersionPolicy = field(default_factory=VersionPolicy)
    version_labels: dict = field(default_factory=dict)
    batching: dict | None = None  # overrides of the server's BatchingConfig
    device: str | None = None
    instances: int = 1
    allow_soft_placement: bool = False
    warmup: object = True  # True (synthetic inputs), False, or a list of example requests
    optimize: bool = False
    # Bytes of live intermediates one run may hold (0: no limit); over it: 429.
    max_intermediate_bytes: int = 0


_MODEL_KEYS = {
    "version_policy",
    "model_version_policy",
    "version_labels",
    "batching",
    "device",
    "instances",
    "allow_soft_placement",
    "warmup",
    "optimize",
    "max_intermediate_bytes",
}

_MAX_INTERMEDIATE_BYTES = 1 << 50  # 1 PiB: any larger is a typo, not a limit


_MAX_VERSION = 10**18 - 1  # version directories have at most 18 digits


def _is_version(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= _MAX_VERSION


def _parse_policy(value, where) -> VersionPolicy:
    if not isinstance(value, dict) or len(value) != 1:
        raise ConfigError(
            f'{where}: version_policy must be one of {{"latest": '
            f'{{"num_versions": N}}}}, {{"all": {{}}}} or {{"specific": '
            f'{{"versions": [...]}}}}, got {_short(value)}'
        )
    ((kind, body),) = value.items()
    if kind == "all":
        return VersionPolicy("all")
    if kind == "latest":
        n = (body or {}).get("num_versions", 1) if isinstance(body, dict) else None
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= _MAX_VERSION:
            raise ConfigError(
                f"{where}: version_policy.latest.num_versions must be an integer from 1 "
                f"to {_MAX_VERSION}, got {_short(n)}"
            )
        return VersionPolicy("latest", num_versions=n)
    if kind == "specific":
        versions = body.get("versions") if isinstance(body, dict) else None
        if (
            not isinstance(versions, list)
            or not versions
            or not all(_is_version(v) for v in versions)
        ):
            raise ConfigError(
                f"{where}: version_policy.specific.versions must be a non-empty "
                f"list of versions (integers from 1 to {_MAX_VERSION}), got {_short(versions)}"
            )
        return VersionPolicy("specific", versions=tuple(sorted(set(versions))))
    raise ConfigError(f"{where}: unknown version policy {kind!r} (use latest, all or specific)")


def parse_model_config(doc: object, where: str) -> ModelConfig:
    if not isinstance(doc, dict):
        raise ConfigError(f"{where}: must be a JSON object")
    unknown = set(doc) - _MODEL_KEYS
    if unknown:
        raise ConfigError(
            f"{where}: unknown setting(s) {sorted(unknown)} (known: "
            f"{sorted(_MODEL_KEYS - {'model_version_policy'})})"
        )
    values: dict = {}
    policy = doc.get("version_policy", doc.get("model_version_policy"))
    if policy is not None:
        values["version_policy"] = _parse_policy(policy, where)
    labels = doc.get("version_labels", {})
    if not isinstance(labels, dict) or not all(
        isinstance(k, str) and re.match(r"^[A-Za-z0-9_.-]+$", k) and _is_version(v)
        for k, v in labels.items()
    ):
        raise ConfigError(
            f"{where}: version_labels must map label names to positive version "
            f"numbers, got {_short(labels)}"
        )
    values["version_labels"] = dict(labels)
    batching = doc.get("batching")
    if batching is not None:
        if isinstance(batching, bool):
            batching = {"enabled": batching}
        if not isinstance(batching, dict):
            raise ConfigError(
                f"{where}: batching must be true, false or an object of TF "
                "Serving batching parameters"
            )
        BatchingConfig().merged(batching, f"{where}: batching")  # validate now
        values["batching"] = dict(batching)
    device = doc.get("device")
    if device is not None:
        values["device"] = parse_device(device, f"{where}: ")
    instances = doc.get("instances", 1)
    if isinstance(instances, bool) or not isinstance(instances, int) or not 1 <= instances <= 64:
        raise ConfigError(
            f"{where}: instances must be an integer from 1 to 64, got {_short(instances)}"
        )
    values["instances"] = instances
    for key in ("allow_soft_placement", "optimize"):
        if key in doc:
            if not isinstance(doc[key], bool):
                raise ConfigError(f"{where}: {key} must be true or false")
            values[key] = doc[key]
    if "max_intermediate_bytes" in doc:
        limit = doc["max_intermediate_bytes"]
        if (
            isinstance(limit, bool)
            or not isinstance(limit, int)
            or not 0 <= limit <= _MAX_INTERMEDIATE_BYTES
        ):
            raise ConfigError(
                f"{where}: max_intermediate_bytes must be an integer from 0 (no limit) to "
                f"{_MAX_INTERMEDIATE_BYTES}, got {_short(limit)}"
            )
        values["max_intermediate_bytes"] = limit
    if "warmup" in doc:
        warmup = doc["warmup"]
        if not isinstance(warmup, (bool, list)):
            raise ConfigError(
                f"{where}: warmup must be true, false or a list of requests "
                '({"signature_name": ..., "inputs": {...}})'
            )
        if isinstance(warmup, list):
            for i, r in enumerate(warmup):
                if not isinstance(r, dict) or not isinstance(r.get("inputs"), dict):
                    raise ConfigError(f"{where}: warmup[{i}] must be an object with 'inputs'")
        values["warmup"] = warmup
    return ModelConfig(**values)


def load_model_config(path: Path, max_bytes: int = 1 << 20) -> ModelConfig:
    """Reads ``<model>/config.json``; ConfigError (naming the file) if it is invalid."""
    try:
        if path.stat().st_size > max_bytes:
            raise ConfigError(f"{path}: larger than {max_bytes} bytes")
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return ModelConfig()
    except RecursionError:
        raise ConfigError(f"{path}: cannot read JSON (nested too deeply)") from None
    except (OSError, UnicodeDecodeError, ValueError) as e:  # ValueError: JSON, huge numbers
        raise ConfigError(f"{path}: cannot read JSON ({e})") from None
    try:
        return parse_model_config(doc, str(path))
    except ConfigError:
        raise
    except Exception as e:  # noqa: BLE001 - a hostile value must fail this model only
        raise ConfigError(f"{path}: invalid settings ({type(e).__name__}: {e})") from None


# -----------------------------------------------------------------------------------------
# Server configuration
# -----------------------------------------------------------------------------------------

_MAX_WORKERS = 256


def parse_workers(value: object) -> int:
    """The ``workers`` setting as a count: a positive integer, or ``auto`` (one per core
    this process may use, a container's CPU quota included); ConfigError otherwise."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return min(available_cores(), _MAX_WORKERS)
    text = value.strip() if isinstance(value, str) else value
    if isinstance(text, str) and re.fullmatch(r"\d{1,4}", text):
        count = int(text)
    elif isinstance(text, int) and not isinstance(text, bool):
        count = text
    else:
        raise ConfigError(
            f"workers must be a positive integer or 'auto' (one per CPU core), got {_short(value)}"
        )
    if not 1 <= count <= _MAX_WORKERS:
        raise ConfigError(f"workers must be from 1 to {_MAX_WORKERS} (or 'auto'), got {count}")
    return count


@dataclass(frozen=True)
class WorkerRole:
    """Set in each worker process of ``--workers N`` (None in a single-process server):
    which worker it is, of how many, and the Prometheus multiprocess directory they share."""

    index: int
    count: int
    metrics_dir: str

    def refuse(self, what: str) -> str:
        """The message refusing a per-process change ``what`` (it would reach one worker)."""
        return (
            f"{what} is per process, and this server runs {self.count} worker processes "
            "(--workers): the change would reach only the worker that received the request. "
            "Run with --workers 1 to use it"
        )

    def refuse_statistics(self) -> str:
        """The message refusing per-model statistics (one worker's are not the server's)."""
        return (
            f"Model statistics are per process, and this server runs {self.count} worker "
            "processes (--workers): one worker's counts are not the server's. /metrics sums "
            "the counts of every worker; run with --workers 1 to use this endpoint"
        )


def _setting(default=MISSING, *, doc: str, default_factory=MISSING):
    """A ``ServerConfig`` field that is also a flag ``--name-with-dashes``, an environment
    variable ``FLOWSERVE_NAME`` and a key of the ``--config`` file; ``doc`` is its help."""
    return field(default=default, default_factory=default_factory, metadata={"doc": doc})


@dataclass
class ServerConfig:
    """The server's settings; ``validate()`` checks them and derives ``batching``."""

    model_repository: str = _setting(
        default_factory=default_model_repository, doc="model repository directory"
    )
    host: str = _setting("0.0.0.0", doc="address to listen on")
    port: int = _setting(8501, doc="HTTP port (both REST protocols)")
    grpc_port: int = _setting(
        8500, doc="gRPC port (KServe V2 and TF Serving services; 0 disables gRPC)"
    )
    grpc_max_message_bytes: int = _setting(
        64 << 20, doc="largest gRPC message received or sent; larger gets RESOURCE_EXHAUSTED"
    )
    grpc_keepalive_seconds: float = _setting(
        0.0, doc="send gRPC keepalive pings this often on idle connections (0: off)"
    )
    grpc_keepalive_timeout_seconds: float = _setting(
        20.0, doc="close a gRPC connection whose keepalive ping is not answered within this time"
    )
    poll_interval: float = _setting(2.0, doc="seconds between model repository scans (0 disables)")
    model_control_mode: str = _setting(
        "poll",
        doc="poll (scan the repository), none (load all at start, no changes) or explicit "
        "(load only --load-model models; the repository API loads the rest)",
    )
    load_model: str | None = _setting(
        None,
        doc="with --model-control-mode explicit: a model to load at start (repeatable, or "
        "comma-separated; '*' for all)",
    )
    device: str = _setting("cpu", doc="default device for models: cpu, gpu:N, or gpu (every GPU)")
    tls_cert: str | None = _setting(
        None, doc="PEM certificate (chain): serve HTTPS and gRPC over TLS (with --tls-key)"
    )
    tls_key: str | None = _setting(None, doc="PEM private key of --tls-cert")
    tls_client_ca: str | None = _setting(
        None, doc="PEM CA bundle: require client certificates signed by it (mutual TLS)"
    )
    auth_token: str | None = _setting(
        None, doc="require 'Authorization: Bearer TOKEN' (health and metrics stay open)"
    )
    max_request_bytes: int = _setting(
        64 << 20, doc="largest request body accepted (after decompression); larger gets 413"
    )
    log_format: str = _setting("text", doc="access log format: text or json")
    event_loop: str = _setting(
        "asyncio",
        doc="event loop: asyncio (the default), uvloop, or auto (uvloop when installed)",
    )
    log_level: str = _setting("info", doc="log level: debug, info, warning or error")
    enable_batching: bool = _setting(
        False, doc="batch concurrent requests for models that allow it"
    )
    batching_parameters_file: str | None = _setting(
        None, doc="TF Serving batching parameters: JSON, or BatchingParameters text protobuf"
    )
    prometheus_path: str | None = _setting(
        None, doc="also serve the metrics at this path (TF Serving's)"
    )
    request_timeout: float = _setting(30.0, doc="default per-request deadline in seconds")
    shutdown_grace_period: float = _setting(
        10.0, doc="seconds to finish in-flight requests on SIGTERM/SIGINT"
    )
    strict_readiness: bool = _setting(
        True,
        doc="ready only when every model meant to serve is available (false: when the server "
        "is up)",
    )
    model_load_threads: int = _setting(4, doc="model versions loading at once")
    metrics_port: int | None = _setting(
        None,
        doc="serve /metrics on this port of --host as well (default: only on the serving port)",
    )
    num_threads: int = _setting(
        0,
        doc="threads running model computations (0: one per CPU core this process may use: "
        "its CPU affinity, capped by a cgroup CPU quota; under --workers N, each worker "
        "gets its share)",
    )
    inline_compute_micros: int = _setting(
        100,
        doc="run a computation on the event loop instead of a compute thread when its time, "
        "learned at warmup, is under this many microseconds (0: always on a thread)",
    )
    intra_op_threads: int = _setting(
        1,
        doc="threads one computation may use: each large matrix product is split into "
        "blocks computed on this many threads (numpy's BLAS itself always runs one thread "
        "per call; requests already run in parallel on num_threads)",
    )
    switch_interval_micros: int = _setting(
        0,
        doc="the interpreter's thread switch interval (sys.setswitchinterval): how long the "
        "event loop may keep the GIL from a compute thread that wants it back; 0 leaves "
        "Python's 5000",
    )
    gc_threshold: int = _setting(
        10_000,
        doc="container objects allocated between the garbage collector's young passes "
        "(Python's default: 700), with the objects made at startup frozen out of its full "
        "passes; 0 leaves the collector as Python sets it",
    )
    max_tensor_elements: int = _setting(
        1 << 28, doc="most elements one request tensor (and each of its dimensions) may declare"
    )
    max_inflight_requests: int = _setting(
        1024, doc="requests read or computed at once; more get 503 with Retry-After (0: no limit)"
    )
    max_inflight_bytes: int = _setting(
        256 << 20,
        doc="request body bytes held at once across requests; more get 503 with Retry-After "
        "(0: no limit)",
    )
    max_connections: int = _setting(1024, doc="open client connections; more are refused with 503")
    idle_timeout: float = _setting(
        60.0,
        doc="seconds a connection may sit idle (before its first request, or between "
        "requests) before it is closed",
    )
    header_timeout: float = _setting(
        20.0,
        doc="seconds a request's headers may take to arrive once its first byte has; then "
        "408 and the connection is closed",
    )
    body_timeout: float = _setting(60.0, doc="seconds a request body may take to arrive; then 408")
    load_timeout: float = _setting(
        600.0, doc="seconds one model version may take to load and warm up; then it fails"
    )
    follow_symlinks: bool = _setting(
        False, doc="serve model files that are symlinks leading out of the model repository"
    )
    console: bool = _setting(
        True, doc="serve the web console at /console (--no-console turns it off)"
    )
    fast_lane: bool = _setting(
        True,
        doc="serve plain JSON predict/infer requests below aiohttp's web layer, with the same "
        "answers (--no-fast-lane turns it off; tracing turns it off)",
    )
    workers: str = _setting(
        "1",
        doc="server processes sharing the ports, each with its own copy of every model "
        "(N times the memory): a number, or auto (one per CPU core)",
    )
    # Derived by validate() from enable_batching and batching_parameters_file.
    batching: BatchingConfig = field(default_factory=BatchingConfig)
    # Set by the worker entry point of --workers N (service.worker); None otherwise.
    worker: WorkerRole | None = None

    def validate(self) -> ServerConfig:
        """Checks every setting (ConfigError naming the setting and what it expects) and
        resolves the batching parameters; returns ``self``."""
        self._validate_transports()
        self._validate_serving()
        self._validate_limits()
        parse_workers(self.workers)
        self.batching = self._read_batching().validate("batching")
        return self

    def _validate_transports(self) -> None:
        """Ports, gRPC options and TLS files."""
        if not 0 < self.port < 65536 and self.port != 0:
            raise ConfigError(f"port must be 1-65535 (or 0 for any free port), got {self.port}")
        if not 0 <= self.grpc_port < 65536:
            raise ConfigError(f"grpc_port must be 1-65535 (0 disables gRPC), got {self.grpc_port}")
        if self.grpc_port and self.grpc_port == self.port:
            raise ConfigError(f"grpc_port and port must differ (both are {self.port})")
        if self.grpc_max_message_bytes < 1024:
            raise ConfigError(
                f"grpc_max_message_bytes must be at least 1024, got {self.grpc_max_message_bytes}"
            )
        if self.grpc_keepalive_seconds < 0 or self.grpc_keepalive_timeout_seconds <= 0:
            raise ConfigError(
                "grpc_keepalive_seconds must be >= 0 and grpc_keepalive_timeout_seconds > 0"
            )
        if bool(self.tls_cert) != bool(self.tls_key):
            raise ConfigError("tls_cert and tls_key go together: give both or neither")
        if self.tls_client_ca and not self.tls_cert:
            raise ConfigError("tls_client_ca needs tls_cert and tls_key")
        for name in ("tls_cert", "tls_key", "tls_client_ca"):
            path = getattr(self, name)
            if path and not Path(path).is_file():
                raise ConfigError(f"{name} {path} is not a readable file")
        self.ssl_context()  # a certificate or key that does not load fails here, not at start

    def _validate_serving(self) -> None:
        """Model control, paths and the device."""
        if self.model_control_mode not in ("none", "poll", "explicit"):
            raise ConfigError(
                f"model_control_mode must be none, poll or explicit, got "
                f"{self.model_control_mode!r}"
            )
        if self.load_model and self.model_control_mode != "explicit":
            raise ConfigError("load_model applies with model_control_mode explicit only")
        if self.prometheus_path is not None and not re.match(
            r"^/[A-Za-z0-9_./-]{0,200}$", self.prometheus_path
        ):
            raise ConfigError(f"prometheus_path must be a URL path, got {self.prometheus_path!r}")
        if self.poll_interval < 0:
            raise ConfigError(f"poll_interval must be >= 0, got {self.poll_interval}")
        self.device = parse_device(self.device, "")

    def _validate_limits(self) -> None:
        """Sizes, timeouts and thread counts, each within its bounds."""
        if self.max_request_bytes < 1024:
            raise ConfigError(
                f"max_request_bytes must be at least 1024, got {self.max_request_bytes}"
            )
        if self.event_loop not in ("auto", "uvloop", "asyncio"):
            raise ConfigError(
                f"event_loop must be 'auto', 'uvloop' or 'asyncio', got {self.event_loop!r}"
            )
        if self.log_format not in ("text", "json"):
            raise ConfigError(f"log_format must be 'text' or 'json', got {self.log_format!r}")
        if self.log_level.lower() not in ("debug", "info", "warning", "error"):
            raise ConfigError(
                f"log_level must be debug, info, warning or error, got {self.log_level!r}"
            )
        if self.request_timeout <= 0:
            raise ConfigError(f"request_timeout must be > 0, got {self.request_timeout}")
        if self.shutdown_grace_period < 0:
            raise ConfigError("shutdown_grace_period must be >= 0")
        if not 1 <= self.model_load_threads <= 64:
            raise ConfigError(
                f"model_load_threads must be from 1 to 64, got {self.model_load_threads}"
            )
        if self.metrics_port is not None and not 0 <= self.metrics_port < 65536:
            raise ConfigError(f"metrics_port must be 0-65535, got {self.metrics_port}")
        if self.num_threads < 0:
            raise ConfigError("num_threads must be >= 0")
        if self.intra_op_threads < 1:
            raise ConfigError(f"intra_op_threads must be >= 1, got {self.intra_op_threads}")
        _bounded("max_tensor_elements", self.max_tensor_elements, 1, 1 << 40)
        _bounded("max_inflight_requests", self.max_inflight_requests, 0, 1 << 20)
        _bounded("max_inflight_bytes", self.max_inflight_bytes, 0, 1 << 50)
        _bounded("max_connections", self.max_connections, 1, 1 << 20)
        for name in ("idle_timeout", "header_timeout", "body_timeout", "load_timeout"):
            _bounded(name, getattr(self, name), 0.001, 7 * 24 * 3600.0)
        _bounded("request_timeout", self.request_timeout, 0.001, 7 * 24 * 3600.0)
        _bounded("shutdown_grace_period", self.shutdown_grace_period, 0, 24 * 3600.0)
        _bounded("num_threads", self.num_threads, 0, 4096)
        _bounded("intra_op_threads", self.intra_op_threads, 1, 4096)
        _bounded("inline_compute_micros", self.inline_compute_micros, 0, 1_000_000)
        _bounded("gc_threshold", self.gc_threshold, 0, 100_000_000)
        _bounded("switch_interval_micros", self.switch_interval_micros, 0, 1_000_000)
        _bounded("poll_interval", self.poll_interval, 0, 24 * 3600.0)
        if self.auth_token is not None and not self.auth_token.strip():
            raise ConfigError("auth_token must not be empty")
        if not Path(self.model_repository).is_dir():
            raise ConfigError(f"model repository {self.model_repository} is not a directory")

    def _read_batching(self) -> BatchingConfig:
        """The server-wide batching settings, with the parameters file applied."""
        batching = BatchingConfig(enabled=self.enable_batching)
        if self.batching_parameters_file:
            path = Path(self.batching_parameters_file)
            try:
                text = path.read_text(encoding="utf-8")
                if text.lstrip().startswith("{"):
                    doc = json.loads(text)
                else:  # tensorflow_model_server's BatchingParameters text protobuf
                    from service.tfserving_config import parse_batching_parameters

                    doc = parse_batching_parameters(text, f"batching parameters file {path}")
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
                raise ConfigError(
                    f"batching parameters file {path}: cannot read JSON ({e})"
                ) from None
            if not isinstance(doc, dict):
                raise ConfigError(f"batching parameters file {path}: must be a JSON object")
            batching = batching.merged(doc, f"batching parameters file {path}")
        return batching

    @property
    def startup_models(self) -> list[str] | None:
        """Explicit mode: the models to load at start (``["*"]``: all); None otherwise."""
        if self.model_control_mode != "explicit":
            return None
        return [n.strip() for n in (self.load_model or "").split(",") if n.strip()]

    def ssl_context(self) -> ssl.SSLContext | None:
        """The HTTPS server context (None without TLS); fails clearly on a bad cert or key."""
        if not self.tls_cert:
            return None
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        try:
            context.load_cert_chain(self.tls_cert, self.tls_key)
            if self.tls_client_ca:
                context.load_verify_locations(self.tls_client_ca)
                context.verify_mode = ssl.CERT_REQUIRED
        except (OSError, ssl.SSLError) as e:
            raise ConfigError(f"cannot use the TLS certificate/key: {e}") from None
        return context

    def grpc_credentials(self) -> tuple[bytes, bytes, bytes | None] | None:
        """(key, certificate chain, client CA or None) PEM bytes for gRPC; None without TLS."""
        if not self.tls_cert:
            return None
        read = lambda path: Path(path).read_bytes()  # noqa: E731
        ca = read(self.tls_client_ca) if self.tls_client_ca else None
        return read(self.tls_key), read(self.tls_cert), ca

    @property
    def polls(self) -> bool:
        return self.model_control_mode == "poll" and self.poll_interval > 0

    @property
    def poll_phase(self) -> float:
        """Seconds a worker of ``--workers N`` delays its repository polls: worker i polls
        ``i / N`` of an interval after worker 0, so a new version is loaded by one worker
        at a time across the interval rather than by all at the same instant (0 in a
        single server)."""
        worker = self.worker
        if worker is None or not self.polls:
            return 0.0
        return self.poll_interval * worker.index / worker.count

    @property
    def worker_count(self) -> int:
        """Server processes to run (``workers``, with ``auto`` resolved)."""
        return parse_workers(self.workers)

    @property
    def compute_threads(self) -> int:
        """``num_threads``, or one per core this process may use (``available_cores``: a
        container's CPU quota, not its node's cores)."""
        return self.num_threads or available_cores()


def pool_threads(config: ServerConfig) -> int:
    """The threads computing for the server: ``num_threads``, or more where the server's
    batching parameters ask for more batch threads (``num_batch_threads`` 0 asks for none
    beyond them)."""
    return max(config.compute_threads, config.batching.num_batch_threads)


def _server_settings() -> list[tuple[str, type, object, str]]:
    """(name, type, default, help) of every ``_setting`` field of ``ServerConfig``, in order;
    the default is None where the dataclass computes it (``default_factory``)."""
    hints = get_type_hints(ServerConfig)
    settings = []
    for f in fields(ServerConfig):
        if "doc" not in f.metadata:
            continue
        typ = hints[f.name]
        if isinstance(typ, UnionType):  # "str | None": the flag's type is str
            typ = next(t for t in get_args(typ) if t is not type(None))
        default = None if f.default is MISSING else f.default
        settings.append((f.name, typ, default, f.metadata["doc"]))
    return settings


# Every setting, from the dataclass above: the CLI builds its flags and reads the environment
# and the config file from this list.
SERVER_SETTINGS = _server_settings()
