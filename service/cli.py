"""The ``flowserve`` command (also ``python -m service``).

Every setting is a flag, an environment variable ``FLOWSERVE_<NAME>`` and a key of the JSON
``--config`` file; flags win over the environment, which wins over the file. SIGTERM/SIGINT
stop accepting connections, let in-flight requests finish within the grace period, unload
the models and exit 0.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger

from service import tracing
from service.config import SERVER_SETTINGS, ConfigError, ServerConfig
from service.keys import MANAGER, MODEL, REQUEST_ID, VERSION
from service.logs import setup_logging
from service.workers import Supervisor, add_worker_header

__all__ = ["main", "build_parser", "resolve_config", "run_server"]

log = logging.getLogger("flowserve")
_ENV_PREFIX = "FLOWSERVE_"


def _env_name(name: str) -> str:
    return _ENV_PREFIX + name.upper()


def _parse_bool(text: str, what: str) -> bool:
    t = text.strip().lower()
    if t in ("1", "true", "yes", "on"):
        return True
    if t in ("0", "false", "no", "off", ""):
        return False
    raise ConfigError(f"{what} must be true or false, got {text!r}")


def _convert(typ, raw, what):
    if raw is None:
        return None
    if typ is bool:
        return raw if isinstance(raw, bool) else _parse_bool(str(raw), what)
    if isinstance(raw, bool) and typ is not bool:
        raise ConfigError(f"{what} must be a {typ.__name__}, got {raw!r}")
    try:
        return typ(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"{what} must be a {typ.__name__}, got {raw!r}") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="flowserve",
        description="Serve the saved models of a model repository over HTTP (TensorFlow "
        "Serving REST and KServe V2 protocols on one port) and gRPC (KServe V2 and TF "
        "Serving services on --grpc-port).",
        epilog="Every flag can also be set with an environment variable FLOWSERVE_<FLAG> "
        "(e.g. FLOWSERVE_PORT=9000) or a key of the --config JSON file.",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="JSON file of settings (keys as the flags, with underscores) [env FLOWSERVE_CONFIG]",
    )
    defaults = ServerConfig()  # unvalidated: only to show each default
    for name, typ, _, help_text in SERVER_SETTINGS:
        flag = "--" + name.replace("_", "-")
        shown = getattr(defaults, name)
        env = f"[env {_env_name(name)}]"
        if name == "load_model":
            parser.add_argument(
                flag,
                dest=name,
                default=None,
                action="append",
                metavar="MODEL",
                help=f"{help_text} (default: {shown}) {env}",
            )
        elif typ is bool:
            parser.add_argument(
                "--no-" + name.replace("_", "-"),
                dest=name,
                action="store_false",
                default=None,  # unset unless given: the environment and file still apply
                help=f"same as {flag} false",
            )
            parser.add_argument(
                flag,
                dest=name,
                default=None,
                nargs="?",
                const=True,
                type=lambda v, n=name: _parse_bool(v, "--" + n),
                help=f"{help_text} (default: {shown}) {env}",
            )
        else:
            parser.add_argument(
                flag,
                dest=name,
                default=None,
                type=str,
                metavar=name.split("_")[-1].upper(),
                help=f"{help_text} (default: {shown}) {env}",
            )
    return parser


def resolve_config(
    args: argparse.Namespace, environ: Mapping[str, str] = os.environ
) -> ServerConfig:
    """Flags over environment over config file over defaults; validated."""
    values: dict = {}
    config_path = args.config or environ.get(_env_name("config"))
    known = {name: typ for name, typ, _, _ in SERVER_SETTINGS}
    if config_path:
        try:
            with open(config_path, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ConfigError(f"config file {config_path}: {e}") from None
        if not isinstance(doc, dict):
            raise ConfigError(f"config file {config_path}: must be a JSON object")
        for key, raw in doc.items():
            if key not in known:
                raise ConfigError(
                    f"config file {config_path}: unknown setting {key!r} (known: "
                    f"{', '.join(sorted(known))})"
                )
            values[key] = _convert(known[key], raw, f"{key} in {config_path}")
    for name, typ in known.items():
        raw = environ.get(_env_name(name))
        if raw is not None:
            values[name] = _convert(typ, raw, _env_name(name))
    for name, typ in known.items():
        raw = getattr(args, name, None)
        if isinstance(raw, list):  # a repeatable flag
            raw = ",".join(raw)
        if raw is not None:
            values[name] = _convert(typ, raw, "--" + name.replace("_", "-"))
    values = {k: v for k, v in values.items() if v is not None}
    return ServerConfig(**values).validate()


# -----------------------------------------------------------------------------------------
# Logging
# -----------------------------------------------------------------------------------------


class AccessLogger(AbstractAccessLogger):
    """One line per request: method, path, model, status, latency (text or JSON)."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        logger = self.logger
        if not logger.isEnabledFor(logging.INFO):
            return
        model = request.get(MODEL, "-") or "-"
        version = request.get(VERSION, "")
        # The access log is written outside the handler's task: pass the ID explicitly.
        request_id = request.get(REQUEST_ID)
        fields = {
            "method": request.method,
            "path": request.path,
            "model": model,
            "version": version,
            "status": response.status,
            "latency_ms": round(time * 1000, 3),
            "remote": request.remote,
        }
        # makeRecord + handle is logger.info without its search of the caller's frame (a
        # third of the cost of a line): an access line's source is always this method.
        logger.handle(
            logger.makeRecord(
                logger.name,
                logging.INFO,
                __file__,
                0,
                "%s %s model=%s%s status=%d latency_ms=%.2f",
                (
                    request.method,
                    request.path,
                    model,
                    f" version={version}" if version else "",
                    response.status,
                    time * 1000,
                ),
                None,
                func="AccessLogger.log",
                extra={"access": fields, "request_id": request_id},
            )
        )

    @property
    def enabled(self) -> bool:
        return self.logger.isEnabledFor(logging.INFO)


# -----------------------------------------------------------------------------------------
# Running
# -----------------------------------------------------------------------------------------


async def serve(
    config: ServerConfig,
    stop: asyncio.Event | None = None,
    http: bool = True,
    reload_models: Callable[..., Awaitable[None]] | None = None,
    on_serving: Callable[[], None] | None = None,
) -> None:
    """Runs the server until ``stop`` is set or SIGTERM/SIGINT arrives; then shuts down.

    ``http=False`` serves gRPC only (``tensorflow_model_server --rest_api_port=0``);
    ``reload_models(models, manager)`` serves TF Serving's HandleReloadConfigRequest.
    The listeners open before the first repository scan (models load in the background,
    ``/v2/health/live`` answers at once, ready waits for the models). Shutdown, bounded by
    ``shutdown_grace_period``: readiness turns 503 while the listeners keep serving, until no
    request is in flight (or the grace period is nearly spent); then the listeners close,
    and the models unload with what is left of the grace period for stragglers.

    A worker of ``--workers N`` (``config.worker``) opens its listeners only once its
    models have loaded (the other workers serve meanwhile), shares the ports
    (``SO_REUSEPORT``), names itself in a response header, stops when its supervisor goes
    away, and calls ``on_serving`` once it listens.
    """
    # Imported here, not at the top: main() caps BLAS threads before numpy is first imported.
    from service.app import create_app

    worker = config.worker
    app = create_app(config, load_in_background=worker is None)
    if worker is not None:
        add_worker_header(app, worker.index)
    close_allowance = min(1.0, config.shutdown_grace_period / 4)  # to close idle connections
    runners, grpc_server = await _start_listeners(app, config, close_allowance, http, reload_models)
    log.info("event loop: %s", type(asyncio.get_running_loop()).__module__)
    stop = stop or asyncio.Event()
    if worker is not None:
        log.info(
            "worker %d of %d serving %d model(s) (pid %d)",
            worker.index,
            worker.count,
            len(app[MANAGER].model_names()),
            os.getpid(),
        )
        watch = asyncio.create_task(_stop_when_orphaned(stop), name="fs-parent-watch")
    if on_serving is not None:
        on_serving()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):
            pass
    try:
        await stop.wait()
    finally:
        if worker is not None:
            watch.cancel()
        await _drain(app, runners, grpc_server, config.shutdown_grace_period, close_allowance)
        log.info("stopped")


async def _stop_when_orphaned(stop: asyncio.Event) -> None:
    """A worker whose supervisor died (its parent changed) drains and stops."""
    parent = os.getppid()
    while os.getppid() == parent:
        await asyncio.sleep(0.5)
    log.warning("the supervisor (pid %d) is gone: stopping", parent)
    stop.set()


async def _start_listeners(
    app,
    config: ServerConfig,
    close_allowance: float,
    http: bool,
    reload_models: Callable[..., Awaitable[None]] | None,
) -> tuple[list, object | None]:
    """Starts the serving port (and the metrics and gRPC ports); returns the runners and
    the gRPC server (or None)."""
    from service.http import HardenedRunner

    # handler_cancellation: a client that disconnects cancels its request (and leaves the
    # batching queue) instead of occupying the model.
    runner = HardenedRunner(
        app,
        max_connections=config.max_connections,
        header_timeout=config.header_timeout,
        access_log_class=AccessLogger,
        access_log=logging.getLogger("flowserve.access"),
        shutdown_timeout=close_allowance / 2,
        handle_signals=False,
        handler_cancellation=True,
    )
    await runner.setup()
    return await _open_listeners(config, app, runner, http, reload_models)


async def _drain(app, runners: list, grpc_server, grace: float, close_allowance: float) -> None:
    """Not ready first; serve until nothing is in flight (at most until the grace period
    is nearly over); then close the listeners (gRPC too) and unload within what is left."""
    from service.app import in_flight_requests

    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace
    log.info(
        "shutting down: not ready any more, finishing in-flight requests (grace period %.1fs)",
        grace,
    )
    app[MANAGER].begin_shutdown(deadline)
    drained_by = deadline - close_allowance
    while in_flight_requests(app) and loop.time() < drained_by:
        await asyncio.sleep(0.02)
    left = in_flight_requests(app)
    if left:
        log.warning("grace period over with %d request(s) in flight; closing", left)
    if grpc_server is not None:
        await grpc_server.stop(max(0.0, min(close_allowance, deadline - loop.time())))
    for r in reversed(runners):
        await r.cleanup()


async def _open_listeners(
    config: ServerConfig,
    app: web.Application,
    runner: web.AppRunner,
    http: bool,
    reload_models: Callable[..., Awaitable[None]] | None,
) -> tuple[list[web.AppRunner], object | None]:
    """Opens the HTTP site (unless ``http`` is off), the ``--metrics-port`` site and the gRPC
    server; returns the runners to clean up and the gRPC server (or None). On a bind error
    everything opened so far is closed again."""
    from service.app import metrics_app

    runners = [runner]
    sites = []
    shared = config.worker is not None  # workers share each port (SO_REUSEPORT)
    if http:
        sites.append(
            web.TCPSite(
                runner,
                config.host,
                config.port,
                reuse_address=True,
                reuse_port=shared or None,
                ssl_context=config.ssl_context(),
            )
        )
    if config.metrics_port is not None:
        metrics_runner = web.AppRunner(metrics_app(app), access_log=None, shutdown_timeout=0.1)
        await metrics_runner.setup()
        runners.append(metrics_runner)
        sites.append(
            web.TCPSite(metrics_runner, config.host, config.metrics_port, reuse_port=shared or None)
        )
    grpc_server = None
    try:
        for site in sites:
            await site.start()
        if config.grpc_port:
            from service.protocols.grpc_server import GrpcServer

            reload = None
            if reload_models is not None:

                async def reload(models: list) -> None:
                    await reload_models(models, app[MANAGER])

            grpc_server = GrpcServer(app, reload_models=reload, reuse_port=shared)
            await grpc_server.start(config.host, config.grpc_port)
    except OSError:
        for r in reversed(runners):
            await r.cleanup()
        raise
    scheme = "https" if config.tls_cert else "http"
    for address in runner.addresses if http else []:  # the bound port, also when port is 0
        host, port = address[:2]
        log.info(
            "flowserve listening on %s://%s:%d (model repository %s)",
            scheme,
            host,
            port,
            config.model_repository,
        )
    if config.metrics_port is not None:
        for address in runners[-1].addresses:
            log.info("metrics on http://%s:%d/metrics", *address[:2])
    return runners, grpc_server


def limit_blas_threads(n: int) -> list[dict]:
    """``engine.threads.limit_blas_threads``: numpy's BLAS and OpenMP on ``n`` threads per
    call, process-wide (imported here, not at the top: ``flowserve --help`` and the worker
    supervisor never load numpy)."""
    from engine.threads import limit_blas_threads as limit

    return limit(n)


def set_intra_op_threads(n: int) -> list[dict]:
    """Lets one computation use ``n`` threads: numpy's BLAS runs one thread per call
    (``limit_blas_threads(1)``: the server already runs requests and batches in parallel,
    and BLAS threads on top of those oversubscribe the CPU), and the engine splits each large
    matrix product into blocks that the calling thread and ``n - 1`` helpers compute (see
    ``engine.ops.split_product``: unlike BLAS's own threads, they never wait for a thread
    that other work keeps off the CPU). The count is reserved with the engine, so a model's
    session asking for another (``ConfigProto.intra_op_parallelism_threads``) cannot change
    it. Returns the BLAS pools' description."""
    from engine import threads
    from engine.ops import split_product

    pools = limit_blas_threads(1)
    log.debug("BLAS/OpenMP thread pools: %s", pools)
    split_product.set_threads(threads.reserve_intra_op_threads(n))
    return pools


def set_switch_interval(micros: int) -> None:
    """Sets the interpreter's thread switch interval to ``micros`` microseconds; 0 changes
    nothing. A compute thread coming back from a numpy call that released the GIL waits for
    the event loop to let go of it: when the loop is busy (parsing requests), for up to the
    switch interval, once per call that released it."""
    if micros > 0:
        sys.setswitchinterval(micros / 1e6)


def tune_garbage_collector(threshold: int) -> None:
    """Sets the collector's young-generation threshold to ``threshold`` and freezes every
    object made so far (modules, classes, settings) out of its full passes; 0 changes
    nothing. Call it once at start, before models load (frozen objects are never freed, and
    an unloaded model must be).

    Why: with Python's default (a young pass every 700 net allocations), a burst of requests
    parsed before any is answered -- a batch forming -- set off a young pass per batch, each
    moving the in-flight requests' objects to older generations, and every few seconds a
    full pass over the ~60k objects of the imported libraries: 20-45 ms with the event
    loop stopped, every in-flight request waiting (``bench/batching.py``, 64 clients)."""
    if threshold <= 0:
        return
    gc.collect()
    gc.freeze()
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(threshold, middle, oldest)


def loop_factory(choice: str) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The event loop factory for ``--event-loop``: uvloop's when asked for, or for ``auto``
    when it is installed (the ``fast`` extra); None (asyncio's default loop) otherwise.
    Raises ConfigError when uvloop is asked for and missing."""
    if choice == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        if choice == "uvloop":
            raise ConfigError(
                "event_loop 'uvloop' needs the uvloop package (pip install 'flowserve[fast]')"
            ) from None
        return None
    return uvloop.new_event_loop


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        config = resolve_config(args)
    except ConfigError as e:
        print(f"flowserve: error: {e}", file=sys.stderr)
        return 2
    setup_logging(config.log_format, config.log_level)
    if config.worker_count > 1:
        try:
            return Supervisor(config).run()
        except OSError as e:
            log.error("cannot start the server: %s", e)
            return 1
    return run_server(config)


def run_server(config: ServerConfig, on_serving: Callable[[], None] | None = None) -> int:
    """Runs one server process with ``config`` (logging already set up) until it is
    stopped; the exit status. ``on_serving`` is called once its listeners are open."""
    set_intra_op_threads(config.intra_op_threads)
    tune_garbage_collector(config.gc_threshold)
    set_switch_interval(config.switch_interval_micros)
    exporter = tracing.configure()
    if exporter:
        log.info("OpenTelemetry tracing on (exporter %s)", exporter)
    try:
        new_loop = loop_factory(config.event_loop)
    except ConfigError as e:
        print(f"flowserve: error: {e}", file=sys.stderr)
        return 2
    try:
        with asyncio.Runner(loop_factory=new_loop) as runner:
            runner.run(serve(config, on_serving=on_serving))
    except OSError as e:
        log.error("cannot start the server: %s", e)
        return 1
    workers = [t for t in threading.enumerate() if t.name.startswith("fs-")]
    for t in workers:  # idle pool threads exit at once; a stuck computation does not
        t.join(timeout=0.2)
    if any(t.is_alive() for t in workers):
        # A computation outlived the grace period; exiting normally would join its thread.
        log.warning("exiting with computations still running (grace period over)")
        logging.shutdown()
        os._exit(0)
    return 0
