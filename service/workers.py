"""``--workers N``: a supervisor process and N server processes sharing the ports.

Python runs one request's parsing, encoding and bookkeeping at a time per process; worker
processes scale that part across cores. The supervisor (the ``flowserve`` process itself)
owns nothing but its children:

- **Ports.** It binds each port (HTTP, ``--metrics-port``, gRPC) once with ``SO_REUSEPORT``
  and keeps that socket bound, never listening: port 0 becomes one real port every worker
  shares, a port in use fails at once, and the port stays reserved while a worker restarts.
  Each worker opens its own listening sockets on those ports with ``SO_REUSEPORT``; the
  kernel spreads new connections across the listening workers.
- **Workers** are fresh interpreters (``python -m service.worker``) given the resolved
  settings in a private file, so each builds its own sessions, batchers and pollers, and
  ``prometheus_client`` starts in multiprocess mode (``PROMETHEUS_MULTIPROC_DIR``, a private
  directory the supervisor makes and removes). A worker opens its listeners once its models
  have loaded and then says so on a pipe: a restarted worker never receives requests for
  models it is still loading. Worker 0 starts first and the others once it serves, so a
  broken setup fails once, not N times, and the model files are read once from disk
  before N copies load.
- **Supervision.** A worker that exits is restarted, after a backoff that doubles with each
  exit that follows less than 30 s of serving (0.5 s up to 10 s). A worker that exits
  before serving, five times in a row, means the setup cannot work: the supervisor stops
  every worker and exits 1 with a log line saying so. A dead worker's multiprocess files
  are marked dead (``mark_process_dead``).
- **Stopping.** SIGTERM/SIGINT go to every worker, each drains as a single server does
  (not ready, in-flight requests finish, listeners close, models unload) within
  ``--shutdown-grace-period``; the supervisor waits that long plus a margin, kills what is
  left, and exits 0 (1 if it had to kill).

Per-process state that would silently diverge between workers is refused while workers run
(``WorkerRole.refuse``): explicit model load/unload, system shared memory registration, log
and trace setting changes, and per-model statistics (``/metrics`` sums the workers instead).
"""

from __future__ import annotations

import json
import logging
import math
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, fields

from aiohttp import web
from prometheus_client.multiprocess import mark_process_dead

from service.config import SERVER_SETTINGS, ConfigError, ServerConfig, WorkerRole

__all__ = [
    "Supervisor",
    "reserve_port",
    "worker_settings",
    "load_worker_config",
    "add_worker_header",
    "WORKER_HEADER",
    "START_FAILURES",
    "remove_stale_workdirs",
]

log = logging.getLogger("flowserve.workers")

WORKER_HEADER = "X-Flowserve-Worker"  # the answering worker's index, on every response
START_FAILURES = 5  # exits before serving, in a row, before the supervisor gives up
_BACKOFF_FIRST = 0.5
_BACKOFF_MAX = 10.0
_KILL_MARGIN = 5.0  # seconds past the grace period before workers are killed
_STABLE = 30.0  # seconds of serving after which an exit no longer grows the backoff
_READY = b"serving\n"
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_WORKDIR_PREFIX = "flowserve-workers-"  # then the supervisor's pid and a random part


def remove_stale_workdirs(root: str | None = None) -> list[str]:
    """Removes the private directories of supervisors that died without cleaning up (killed
    with SIGKILL, or out of memory): this user's ``flowserve-workers-<pid>-*`` directories
    whose pid is not running, or is this process's own (a container restarted as the same
    pid 1: it has not made its directory yet). Returns the removed paths."""
    root = root or tempfile.gettempdir()
    removed = []
    try:
        names = os.listdir(root)
    except OSError:
        return removed
    for name in names:
        pid_text = name[len(_WORKDIR_PREFIX) :].partition("-")[0]
        if not name.startswith(_WORKDIR_PREFIX) or not pid_text.isdigit():
            continue
        path = os.path.join(root, name)
        try:
            if os.lstat(path).st_uid != os.getuid() or not os.path.isdir(path):
                continue
        except OSError:
            continue
        if int(pid_text) == os.getpid() or not _running(int(pid_text)):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def reserve_port(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` with ``SO_REUSEPORT`` (not listening: it takes no
    connections) that holds the port for the workers; ``port`` 0 picks a free one.
    OSError if the port is taken by a socket without ``SO_REUSEPORT``."""
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
    except OSError:
        sock.close()
        raise
    return sock


def worker_settings(config: ServerConfig, ports: dict[str, int]) -> dict:
    """The settings a worker runs with: ``config``'s, with the ports the supervisor
    reserved, as plain JSON values. ``num_threads`` 0 (one compute thread per core) becomes
    the worker's share of the cores, so the server as a whole keeps one per core."""
    names = {name for name, _, _, _ in SERVER_SETTINGS}
    doc = {
        f.name: getattr(config, f.name)
        for f in fields(config)
        if f.name in names and getattr(config, f.name) is not None
    }
    doc.update(ports, workers="1")
    if not config.num_threads:
        doc["num_threads"] = max(1, math.ceil(config.compute_threads / config.worker_count))
    return doc


def load_worker_config(path: str, index: int, count: int) -> ServerConfig:
    """The settings file the supervisor wrote, validated, with this worker's role."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    metrics_dir = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not metrics_dir or not os.path.isdir(metrics_dir):
        raise ConfigError("a worker needs PROMETHEUS_MULTIPROC_DIR (set by the supervisor)")
    config = ServerConfig(**doc).validate()
    config.worker = WorkerRole(index=index, count=count, metrics_dir=metrics_dir)
    return config


def add_worker_header(app: web.Application, index: int) -> None:
    """Every response of ``app`` names the worker that answered (``X-Flowserve-Worker``)."""
    value = str(index)

    async def stamp(_request: web.Request, response: web.StreamResponse) -> None:
        response.headers[WORKER_HEADER] = value

    app.on_response_prepare.append(stamp)


@dataclass
class _Worker:
    index: int
    proc: subprocess.Popen | None = None
    ready_fd: int | None = None  # read end of the pipe the worker reports serving on
    serving: bool = False
    failures: int = 0  # exits without a stable run between them: the backoff grows
    start_failures: int = 0  # exits before serving, in a row: towards START_FAILURES
    served_at: float = 0.0  # monotonic time it reported serving
    started: bool = False  # started at least once
    restart_at: float | None = None  # monotonic time a restart is due


class Supervisor:
    """Runs ``config.worker_count`` workers until SIGTERM/SIGINT; see the module docstring.

    ``Supervisor(config).run()`` returns the process exit status."""

    def __init__(self, config: ServerConfig, python: str = sys.executable):
        self.config = config
        self.count = config.worker_count
        self.python = python
        self.workers = [_Worker(i) for i in range(self.count)]
        self._reserved: list[socket.socket] = []
        self._stop = False
        self._workdir: str | None = None
        self.metrics_dir: str | None = None
        self.settings_path: str | None = None
        self.gave_up = False
        self._first_served = False  # worker 0 has served: the others may start
        self._signal: int | None = None  # the signal that asked to stop

    # -- setup --------------------------------------------------------------------------
    def _reserve_ports(self) -> dict[str, int]:
        """Binds every port the workers will share; the actual port numbers."""
        if not hasattr(socket, "SO_REUSEPORT"):
            raise OSError("--workers above 1 needs SO_REUSEPORT (Linux, BSD, macOS)")
        config = self.config
        wanted = {"port": config.port}
        if config.metrics_port is not None:
            wanted["metrics_port"] = config.metrics_port
        if config.grpc_port:
            wanted["grpc_port"] = config.grpc_port
        ports = {}
        for name, port in wanted.items():
            try:
                sock = reserve_port(config.host, port)
            except OSError as e:
                raise OSError(f"cannot listen on {config.host}:{port} ({name}): {e}") from None
            self._reserved.append(sock)
            ports[name] = sock.getsockname()[1]
        return ports

    def _prepare(self) -> None:
        remove_stale_workdirs()
        self._workdir = tempfile.mkdtemp(prefix=f"{_WORKDIR_PREFIX}{os.getpid()}-")
        self.metrics_dir = os.path.join(self._workdir, "metrics")
        os.mkdir(self.metrics_dir, 0o700)
        ports = self._reserve_ports()
        self.settings_path = os.path.join(self._workdir, "settings.json")
        fd = os.open(self.settings_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(worker_settings(self.config, ports), f)
        log.info(
            "starting %d workers on %s:%d (each loads every model of %s: %d times the memory "
            "of one server)",
            self.count,
            self.config.host,
            ports["port"],
            self.config.model_repository,
            self.count,
        )

    def _cleanup(self) -> None:
        for sock in self._reserved:
            sock.close()
        self._reserved.clear()
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None

    # -- workers --------------------------------------------------------------------------
    def _spawn(self, w: _Worker) -> None:
        read_fd, write_fd = os.pipe()
        command = [
            self.python,
            "-m",
            "service.worker",
            "--settings",
            self.settings_path,
            "--index",
            str(w.index),
            "--count",
            str(self.count),
            "--ready-fd",
            str(write_fd),
        ]
        # The worker finds this package even when it is neither installed nor in the working
        # directory (a checkout run by path); appended, so it shadows nothing.
        path = os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), _PACKAGE_ROOT]))
        env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": self.metrics_dir, "PYTHONPATH": path}
        try:
            w.proc = subprocess.Popen(
                command, env=env, pass_fds=(write_fd,), stdin=subprocess.DEVNULL
            )
        except OSError:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        w.ready_fd, w.serving, w.restart_at, w.started = read_fd, False, None, True
        log.info("worker %d started (pid %d)", w.index, w.proc.pid)

    def _close_pipe(self, w: _Worker) -> None:
        if w.ready_fd is not None:
            os.close(w.ready_fd)
            w.ready_fd = None

    def _on_ready_pipe(self, w: _Worker) -> None:
        """The worker wrote to (or closed) its pipe: serving, or on its way out."""
        data = os.read(w.ready_fd, 64)
        if data.startswith(_READY):
            w.serving, w.start_failures, w.served_at = True, 0, time.monotonic()
            self._first_served = True
            log.info("worker %d serving (pid %d)", w.index, w.proc.pid)
        self._close_pipe(w)

    def _on_exit(self, w: _Worker, now: float) -> None:
        """Bookkeeping for a worker that exited; schedules its restart (or gives up)."""
        pid, code = w.proc.pid, w.proc.returncode
        mark_process_dead(pid, self.metrics_dir)
        if w.ready_fd is not None and select.select([w.ready_fd], [], [], 0)[0]:
            self._on_ready_pipe(w)  # it reported serving just before it exited
        self._close_pipe(w)
        w.proc = None
        if self._stop:
            return
        if w.serving and now - w.served_at >= _STABLE:
            w.failures = 0  # it ran well for a while: this exit starts a new count
        w.failures += 1
        if not w.serving:
            w.start_failures += 1
        if w.start_failures >= START_FAILURES:
            log.error(
                "worker %d exited %d times in a row before serving (last exit status %s): "
                "giving up; stopping every worker",
                w.index,
                w.start_failures,
                code,
            )
            self.gave_up = True
            self._stop = True
            return
        delay = min(_BACKOFF_MAX, _BACKOFF_FIRST * 2 ** (w.failures - 1))
        log.warning(
            "worker %d (pid %d) exited with status %s; restarting in %.1fs",
            w.index,
            pid,
            code,
            delay,
        )
        w.restart_at = now + delay

    def _may_start_others(self) -> bool:
        """Worker 0 goes first; the others once it served or exited (so a setup that cannot
        work fails once, and the first load warms the page cache for the rest)."""
        return self._first_served

    # -- main loop --------------------------------------------------------------------------
    def run(self) -> int:
        """Supervises the workers until asked to stop; the exit status (0: all drained)."""
        previous = {
            sig: signal.signal(sig, self._request_stop) for sig in (signal.SIGTERM, signal.SIGINT)
        }
        try:
            self._prepare()
            self._spawn(self.workers[0])
            while not self._stop:
                self._step(time.monotonic())
            return self._shutdown()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self._cleanup()

    def _request_stop(self, signum: int, _frame) -> None:
        # Only a flag: logging from a signal handler could re-enter a handler mid-write.
        self._signal = signum
        self._stop = True

    def _step(self, now: float) -> None:
        """One turn: read serving reports, reap exits, start due workers (at most 0.1 s)."""
        pipes = {w.ready_fd: w for w in self.workers if w.ready_fd is not None}
        try:
            readable, _, _ = select.select(list(pipes), [], [], 0.1) if pipes else ([], [], [])
        except InterruptedError:  # a signal: look at the stop flag first
            readable = []
        if not pipes:
            time.sleep(0.1)
        for fd in readable:
            self._on_ready_pipe(pipes[fd])
        for w in self.workers:
            if w.proc is not None and w.proc.poll() is not None:
                self._on_exit(w, now)
        if self._stop:
            return
        others_may_start = self._may_start_others()
        for w in self.workers:
            due = w.restart_at is not None and w.restart_at <= now
            first_start = not w.started
            if due or (first_start and others_may_start):
                self._spawn(w)

    def _shutdown(self) -> int:
        """Forwards SIGTERM to every worker and waits for them (grace period + margin)."""
        if self._signal is not None:
            log.info("%s: stopping every worker", signal.Signals(self._signal).name)
        live = [w for w in self.workers if w.proc is not None]
        for w in live:
            _signal(w.proc, signal.SIGTERM)
        deadline = time.monotonic() + self.config.shutdown_grace_period + _KILL_MARGIN
        killed = _wait_all(live, deadline, on_exit=lambda w: self._on_exit(w, time.monotonic()))
        for w in killed:
            log.error("worker %d (pid %d) outlived the grace period: killed", w.index, w.proc.pid)
            _signal(w.proc, signal.SIGKILL)
            w.proc.wait()
            self._on_exit(w, time.monotonic())
        if self.gave_up:
            return 1
        log.info("every worker stopped")
        return 1 if killed else 0


def _signal(proc: subprocess.Popen, sig: int) -> None:
    try:
        proc.send_signal(sig)
    except ProcessLookupError:
        pass


def _wait_all(
    workers: list[_Worker], deadline: float, on_exit: Callable[[_Worker], None]
) -> list[_Worker]:
    """Waits until every worker exited or ``deadline``; the workers still running."""
    running = list(workers)
    while running and time.monotonic() < deadline:
        for w in list(running):
            if w.proc.poll() is not None:
                running.remove(w)
                on_exit(w)
        if running:
            time.sleep(0.05)
    return running
