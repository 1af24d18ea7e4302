"""``flowserve-tfserving``: flowserve with ``tensorflow_model_server``'s command line.

The flags keep TF Serving's meanings, so its Docker invocations and config files work
unchanged: ``--port`` is the gRPC port (8500), ``--rest_api_port`` the REST port (0: no REST),
``--model_name``/``--model_base_path`` serve one model, ``--model_config_file`` serves a
``model_config_list`` (text protobuf), ``--enable_batching`` with ``--batching_parameters_file``
(text protobuf), ``--monitoring_config_file`` (Prometheus path), and
``--file_system_poll_wait_seconds`` (how often base paths are scanned for new versions).

TF Serving reads models from base paths anywhere on disk; flowserve serves a repository. The
entry point builds one in a private temporary directory: per model a directory holding its
``config.json`` (version policy and labels from the model config) and one symbolic link per
version directory of the base path, refreshed before every scan.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import tempfile
from pathlib import Path

from service.cli import serve, set_intra_op_threads, setup_logging, tune_garbage_collector
from service.config import ConfigError, ServerConfig
from service.errors import InvalidInput
from service.repository import parse_version, valid_model_name
from service.tfserving_config import ServedModel, parse_model_config_file, parse_monitoring_config

__all__ = ["main", "build_parser", "config_from_args", "sync_repository"]

log = logging.getLogger("flowserve.tfserving")

# tensorflow_model_server flags accepted for compatibility that change nothing here.
_IGNORED = (
    "enable_model_warmup",
    "tensorflow_session_parallelism",
    "grpc_channel_arguments",
    "rest_api_num_threads",
    "saved_model_tags",
    "model_config_file_poll_wait_seconds",
    "xla_cpu_compilation_enabled",
    "per_process_gpu_memory_fraction",
)


def _bool(text: str) -> bool:
    t = text.strip().lower()
    if t in ("true", "1", "yes"):
        return True
    if t in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="flowserve-tfserving",
        description="flowserve with tensorflow_model_server's flags and config files.",
    )
    p.add_argument("--port", type=int, default=8500, help="gRPC port (0: no gRPC)")
    p.add_argument("--rest_api_port", type=int, default=0, help="REST port (0: no REST)")
    p.add_argument("--rest_api_timeout_in_ms", type=int, default=30000)
    p.add_argument("--grpc_max_message_bytes", type=int, default=64 << 20)
    p.add_argument("--model_name", default="default")
    p.add_argument("--model_base_path", default="")
    p.add_argument("--model_config_file", default="")
    p.add_argument("--enable_batching", type=_bool, nargs="?", const=True, default=False)
    p.add_argument("--batching_parameters_file", default="")
    p.add_argument("--monitoring_config_file", default="")
    p.add_argument("--file_system_poll_wait_seconds", type=float, default=1.0)
    p.add_argument("--tensorflow_intra_op_parallelism", type=int, default=0)
    p.add_argument("--tensorflow_inter_op_parallelism", type=int, default=0)
    p.add_argument("--host", default="0.0.0.0", help="address to listen on (flowserve)")
    p.add_argument("--auth_token", default=None, help="bearer token (flowserve)")
    for name in _IGNORED:
        p.add_argument("--" + name, default=None, help=argparse.SUPPRESS)
    return p


def served_models(args: argparse.Namespace) -> list[ServedModel]:
    if args.model_config_file:
        if args.model_base_path:
            raise ConfigError("give --model_config_file or --model_base_path, not both")
        return parse_model_config_file(args.model_config_file)
    if not args.model_base_path:
        raise ConfigError("--model_base_path or --model_config_file is required")
    return [ServedModel(args.model_name, Path(args.model_base_path), {})]


def sync_repository(repository: Path, models: list[ServedModel]) -> None:
    """Makes ``repository`` mirror the base paths: per model its config.json and one link
    per version directory; links to versions that disappeared, and the directories of models
    no longer configured, are removed (the repository is this process's own)."""
    names = {m.name for m in models}
    for entry in repository.iterdir():
        if entry.is_dir() and not entry.is_symlink() and entry.name not in names:
            for child in entry.iterdir():
                if child.is_symlink() or child.name == "config.json":
                    child.unlink()
            entry.rmdir()
    for model in models:
        target = repository / model.name
        target.mkdir(exist_ok=True)
        config = json.dumps(model.config)
        config_path = target / "config.json"
        if not config_path.exists() or config_path.read_text() != config:
            config_path.write_text(config)
        try:
            versions = {
                c.name: c
                for c in model.base_path.iterdir()
                if parse_version(c.name) is not None and c.is_dir()
            }
        except OSError as e:
            log.warning("cannot list base path %s of model %s: %s", model.base_path, model.name, e)
            versions = {}
        for link in target.iterdir():
            if link.is_symlink() and link.name not in versions:
                link.unlink()
        for name, path in versions.items():
            link = target / name
            if not link.is_symlink():
                link.symlink_to(path.resolve(), target_is_directory=True)


def config_from_args(args: argparse.Namespace, repository: Path) -> ServerConfig:
    models = served_models(args)
    for m in models:
        if not valid_model_name(m.name):
            raise ConfigError(f"model name {m.name!r} is not valid")
    sync_repository(repository, models)
    values = dict(
        model_repository=str(repository),
        host=args.host,
        port=args.rest_api_port,  # 0: REST off (serve() then starts no HTTP site)
        grpc_port=args.port,
        grpc_max_message_bytes=args.grpc_max_message_bytes,
        poll_interval=args.file_system_poll_wait_seconds,
        enable_batching=args.enable_batching,
        batching_parameters_file=args.batching_parameters_file or None,
        request_timeout=args.rest_api_timeout_in_ms / 1000,
        auth_token=args.auth_token,
        # The repository is a directory of links to the operator's base paths, which lie
        # outside it by design: these links are the configuration, not an escape.
        follow_symlinks=True,
    )
    if args.monitoring_config_file:
        values["prometheus_path"] = parse_monitoring_config(args.monitoring_config_file)
    if args.tensorflow_intra_op_parallelism:
        values["intra_op_threads"] = args.tensorflow_intra_op_parallelism
    if args.tensorflow_inter_op_parallelism:
        values["num_threads"] = args.tensorflow_inter_op_parallelism
    if args.rest_api_port == 0 and args.port == 0:
        raise ConfigError("both --port and --rest_api_port are 0: nothing to serve")
    return ServerConfig(**values).validate()


async def _run(config: ServerConfig, models: list[ServedModel], http: bool) -> None:
    repository = Path(config.model_repository)
    served = list(models)

    async def keep_synced():
        while True:
            await asyncio.sleep(max(config.poll_interval, 0.5))
            sync_repository(repository, served)

    async def reload_models(new: list[ServedModel], manager) -> None:
        """HandleReloadConfigRequest: serve exactly ``new`` from now on."""
        for m in new:
            if not valid_model_name(m.name):
                raise InvalidInput(f"model name {m.name!r} is not valid")
        served[:] = new
        sync_repository(repository, served)
        await manager.poll_once()

    syncer = asyncio.create_task(keep_synced()) if config.poll_interval > 0 else None
    try:
        await serve(config, http=http, reload_models=reload_models)
    finally:
        if syncer is not None:
            syncer.cancel()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    for name in _IGNORED:
        if getattr(args, name) is not None:
            print(f"flowserve-tfserving: note: --{name} has no effect here", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="flowserve-tfserving-") as tmp:
        try:
            config = config_from_args(args, Path(tmp))
            models = served_models(args)
        except ConfigError as e:
            print(f"flowserve-tfserving: error: {e}", file=sys.stderr)
            return 2
        setup_logging(config.log_format, config.log_level)
        set_intra_op_threads(config.intra_op_threads)
        tune_garbage_collector(config.gc_threshold)
        try:
            asyncio.run(_run(config, models, http=args.rest_api_port != 0))
        except OSError as e:
            log.error("cannot start the server: %s", e)
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
