"""The serving core: model lifecycle and inference, independent of any transport.

``ModelManager`` scans the repository (at start and every ``poll_interval`` seconds), loads
the versions each model's version policy asks for in the background, and retires old versions
only once a newer one is available, so no request fails during a swap. A version that fails
to load is kept with state END and its error, and does not disturb the versions serving.
``infer`` resolves model/version/label/signature, validates inputs and runs the request off
the event loop.

Loading is concurrent and never blocks the rest: a scan only *plans* under the manager lock
(which versions to load, which to retire), then each load runs as its own task, bounded by
``model_load_threads``, and publishes its version the moment it is warm. The lock is never
held across a load or an unload's drain, so a slow or broken model holds nothing back.
Readiness (``ready``) is false until the first scan has been planned and, with
``strict_readiness``, until every model meant to serve is available.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from service.batching import Batcher, DirectScheduler, Overdue
from service.config import BatchingConfig, ModelConfig, ServerConfig, pool_threads
from service.errors import (
    FailedPrecondition,
    InvalidInput,
    ModelNotFound,
    NotFound,
    Unavailable,
)
from service.metrics import ServingMetrics
from service.model_entry import ModelEntry
from service.repository import ModelSource, parse_version, scan_repository, valid_model_name
from service.servable import Servable, Signature, VersionState
from service.statistics import InferenceStatistics, SchedulingObserver

__all__ = ["ModelManager", "InferResult", "VersionStatus"]

log = logging.getLogger("flowserve.manager")

# parse_version remembered (every request's metrics labels ask; bounded: clients send them)
_version_number = functools.lru_cache(maxsize=4096)(parse_version)


@dataclass
class InferResult:
    model: str
    version: int
    signature: str
    outputs: dict[str, np.ndarray]


@dataclass
class VersionStatus:
    model: str
    version: int
    state: str
    error: str | None
    # Loaded versions: per device, {"device", "instances"[, "memory_in_use_bytes",
    # "memory_limit_bytes"]}; and why it runs elsewhere than configured (soft placement).
    devices: list = field(default_factory=list)
    device_note: str | None = None


class ModelManager:
    """Loads, serves and retires model versions; the one API every protocol calls."""

    def __init__(self, config: ServerConfig, metrics: ServingMetrics | None = None):
        self.config = config
        self.metrics = metrics
        self.statistics = InferenceStatistics()
        self._observer = SchedulingObserver(metrics, self.statistics)
        self._models: dict[str, ModelEntry] = {}
        self._lock: asyncio.Lock | None = None
        self._load_slots: asyncio.Semaphore | None = None
        # Loads hold a thread each (bounded by _load_slots); two more so that unloads never
        # wait behind slow loads. Scans get their own thread for the same reason.
        self._load_pool = ThreadPoolExecutor(
            max_workers=config.model_load_threads + 2, thread_name_prefix="fs-load"
        )
        self._scan_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fs-scan")
        self.compute_pool = ThreadPoolExecutor(
            max_workers=pool_threads(config),
            thread_name_prefix="fs-compute",
        )
        self._poller: asyncio.Task | None = None
        self.stuck_loads = 0  # loads past load_timeout whose threads still run
        self.overdue = Overdue()  # computations past their deadline, still on a thread
        self._compute_threads = pool_threads(config)
        self._first_scan: asyncio.Task | None = None
        self._loads: set[asyncio.Task] = set()
        self._started = False
        self._scanned = False  # the first scan has been planned
        self._draining = False  # shutting down: not ready, still serving
        self._shutdown_deadline: float | None = None
        self._stopping = False
        if metrics is not None:
            metrics.device_source = self.device_usage

    # -- lifecycle ------------------------------------------------------------------------
    async def start(self, wait: bool = True) -> None:
        """Starts scanning and loading. ``wait``: return once the first scan's loads have
        finished (tests, embedding); otherwise at once, loading in the background (the
        server, so that its listeners open before the first scan)."""
        self._lock = asyncio.Lock()
        self._load_slots = asyncio.Semaphore(self.config.model_load_threads)
        self._started = True
        self._first_scan = asyncio.create_task(self._start_scanning(), name="fs-first-scan")
        if wait:
            await asyncio.shield(self._first_scan)

    async def _start_scanning(self) -> None:
        try:
            await self.poll_once(startup=True)
        except Exception:  # noqa: BLE001 - the server stays up (and not ready) to report it
            log.exception("model repository scan failed")
        if self.config.polls and not self._stopping:
            self._poller = asyncio.create_task(self._poll_forever(), name="fs-repo-poller")

    def begin_shutdown(self, deadline: float | None = None) -> None:
        """Readiness turns false; requests are still served (the first step of a drain).
        ``deadline`` (the loop's clock): when ``stop`` must be done draining."""
        self._draining = True
        self._shutdown_deadline = deadline

    async def stop(self, drain_timeout: float | None = None) -> None:
        """Stops scanning, waits for loads under way, then unloads every version, giving
        in-flight requests up to ``drain_timeout`` seconds (default: the grace period)."""
        self._draining = True
        self._stopping = True
        if drain_timeout is None:
            if self._shutdown_deadline is not None:
                loop_now = asyncio.get_running_loop().time()
                drain_timeout = max(0.0, self._shutdown_deadline - loop_now)
            else:
                drain_timeout = self.config.shutdown_grace_period
        deadline = time.monotonic() + drain_timeout
        for task in (self._first_scan, self._poller):
            if task is not None and not task.done():
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    pass
        if self._loads:
            # A load's thread cannot be interrupted: wait for it within the deadline only
            # (its task unloads what it loaded when it sees _stopping).
            await asyncio.wait(list(self._loads), timeout=max(0.0, deadline - time.monotonic()))
        async with self._lock:
            retired = [s for m in self._models.values() for s in m.versions.values()]
            for m in self._models.values():
                m.versions.clear()
            self._models.clear()
        await asyncio.gather(
            *(self._unload(s, max(0.0, deadline - time.monotonic())) for s in retired)
        )
        # A computation still running past the deadline is not waited for (its thread
        # cannot be interrupted): shutdown never overruns the grace period.
        for pool in (self._load_pool, self._scan_pool, self.compute_pool):
            pool.shutdown(wait=False, cancel_futures=True)

    @property
    def ready(self) -> bool:
        """Whether the server should receive traffic (``/v2/health/ready``)."""
        if not self._started or self._draining or self._saturated():
            return False  # saturated: every compute thread runs past a deadline
        if not self.config.strict_readiness:
            return True
        return self._scanned and all(m.ready() for m in self._models.values() if not m.disabled)

    def unready_models(self) -> dict[str, str]:
        """Why the server is not ready: each model meant to serve that is not, with its
        state (LOADING, FAILED, ...); ``{"": "..."}`` before the first scan, when draining or
        when saturated."""
        if self._draining:
            return {"": "SHUTTING_DOWN"}
        if not self._scanned:
            return {"": "STARTING"}
        if self._saturated():
            return {"": "SATURATED"}  # every compute thread runs past a deadline
        return {
            name: self.readiness(name)[0]
            for name, m in sorted(self._models.items())
            if not m.disabled and not m.ready()
        }

    def _saturated(self) -> bool:
        return len(self.overdue) >= self._compute_threads

    @property
    def draining(self) -> bool:
        return self._draining

    async def _poll_forever(self) -> None:
        await asyncio.sleep(self.config.poll_phase)  # workers of --workers N take turns
        while True:
            await asyncio.sleep(self.config.poll_interval)
            try:
                await self.poll_once(wait=False)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - the poller must survive anything
                log.exception("model repository scan failed")

    async def poll_once(self, wait: bool = True, startup: bool = False) -> None:
        """Scans the repository and brings every model to its desired versions. Loads run
        as tasks of their own; ``wait``: return once the loads this scan started are done.
        In explicit model control mode the first scan (``startup``) loads only the startup
        models; the others are known (listed in the repository index) but not loaded."""
        loop = asyncio.get_running_loop()
        sources = await loop.run_in_executor(self._scan_pool, self._scan)
        async with self._lock:
            if self._stopping:
                return
            wanted = self.config.startup_models
            if startup and wanted is not None and "*" not in wanted:
                missing = sorted(set(wanted) - set(sources))
                if missing:
                    log.error("--load-model names models not in the repository: %s", missing)
                for name in sources:
                    if name not in wanted and name not in self._models:
                        self._models[name] = ModelEntry(name, source=sources[name], disabled=True)
            loads, retired = [], []
            for name, src in sources.items():
                self._plan(name, src, loads, retired)
            for name in list(self._models):
                if name not in sources:
                    retired.extend(self._detach_model(name))
            self._scanned = True
        await asyncio.gather(*(self._unload(s) for s in retired))
        if wait and loads:
            await asyncio.gather(*loads)

    def _scan(self) -> dict[str, ModelSource]:
        return scan_repository(self.config.model_repository, self.config.follow_symlinks)

    def _detach_model(self, name: str) -> list[Servable]:
        model = self._models.pop(name, None)
        if model is None:
            return []
        log.info("model %s removed from the repository; unloading", name)
        return self._detach(model, list(model.versions))

    def _detach(self, model: ModelEntry, versions) -> list[Servable]:
        """Takes versions out of ``model`` (no request reaches them any more); returns those
        to unload. A version still loading is left to its load task, which unloads it."""
        out = []
        for v in versions:
            s = model.versions.pop(v)
            model.failed_stamp.pop(v, None)
            if s.state not in (VersionState.START, VersionState.LOADING):
                out.append(s)
        return out

    def _plan(self, name: str, source: ModelSource, loads: list, retired: list) -> None:
        """Under the lock: starts a load task per desired version not loaded (appended to
        ``loads``) and detaches the versions to retire (appended to ``retired``)."""
        model = self._models.get(name)
        if model is None:
            model = self._models[name] = ModelEntry(name)
        model.source = source
        if model.disabled:
            return
        if source.config_error:
            if model.config_error != source.config_error:
                log.error("model %s: %s", name, source.config_error)
            model.config_error = source.config_error
            return  # keep serving what is loaded with the last good config
        model.config_error = None
        model.config = source.config
        model.labels = dict(source.config.version_labels)
        model.desired = desired = source.config.version_policy.select(list(source.versions))
        for v in sorted(desired):
            current = model.versions.get(v)
            if current is not None:
                if (
                    current.state is VersionState.END
                    and current.error
                    and model.failed_stamp.get(v) != source.stamps.get(v)
                ):
                    del model.versions[v]  # the files changed since it failed: retry
                else:
                    continue
            s = Servable(
                name,
                v,
                source.versions[v],
                source.config,
                device=source.config.device or self.config.device,
            )
            model.versions[v] = s
            refused = source.refused.get(v)
            if refused:  # e.g. a symlink out of the repository: never read
                s.state, s.error = VersionState.END, refused
                model.failed_stamp[v] = source.stamps.get(v)
                log.error("model %s version %d refused: %s", name, v, refused)
                self._set_state(s)
                if self.metrics is not None:
                    self.metrics.model_load_failed(name, str(v))
                continue
            self._set_state(s)
            stamp = source.stamps.get(v)
            task = asyncio.create_task(self._load(model, s, stamp), name=f"fs-load-{name}-{v}")
            self._loads.add(task)
            task.add_done_callback(self._loads.discard)
            loads.append(task)
        retired.extend(self._retirable(model))

    def _retirable(self, model: ModelEntry) -> list[Servable]:
        """Under the lock: detaches the versions the policy no longer wants, once a desired
        version serves (or at once when their files are gone)."""
        source = model.source
        serving_desired = any(
            model.versions[v].state is VersionState.AVAILABLE
            for v in model.desired
            if v in model.versions
        )
        retire = []
        for v, s in sorted(model.versions.items()):
            if v in model.desired or s.state in (VersionState.START, VersionState.LOADING):
                continue
            gone = source is None or v not in source.versions
            if s.state is VersionState.AVAILABLE and not (serving_desired or gone):
                continue  # keep serving until a replacement is available
            retire.append(v)
        return self._detach(model, retire)

    async def _load(self, model: ModelEntry, s: Servable, stamp: str | None = None) -> None:
        """Loads one version (at most ``model_load_threads`` at once), publishes it as soon
        as it is warm, then retires what it replaces."""
        async with self._load_slots:
            if self._stopping or model.versions.get(s.version) is not s:
                self._set_state(s, removed=True)
                return  # retired or shut down while waiting for a slot
            s.state = VersionState.LOADING
            self._set_state(s)
            t0 = time.perf_counter()
            ok = await self._load_within_timeout(s)
        orphan = None
        async with self._lock:
            current = (
                not self._stopping
                and not model.disabled
                and self._models.get(model.name) is model
                and model.versions.get(s.version) is s
            )
            if ok and current:
                s.publish(self._scheduler_for(s))
                if self.metrics is not None:
                    self.metrics.model_loaded(s.model, str(s.version), time.perf_counter() - t0)
            elif ok:
                orphan = s  # detached while it loaded
            else:
                model.failed_stamp[s.version] = stamp
                if self.metrics is not None:
                    self.metrics.model_load_failed(s.model, str(s.version))
            self._set_state(s, removed=not current)
            retired = self._retirable(model) if current else []
        if orphan is not None and self._stopping:
            orphan.unload(0.0)  # the pools are shut down; nothing can be in flight on it
            self._set_state(orphan, removed=True)
        elif orphan is not None:
            await self._unload(orphan)
        await asyncio.gather(*(self._unload(r) for r in retired))

    async def _load_within_timeout(self, s: Servable) -> bool:
        """Runs ``s.load`` in a thread for at most ``load_timeout`` seconds. Past it the
        version fails with that reason; a load that cannot be stopped keeps its thread, is
        counted in ``stuck_loads``, and frees its sessions whenever it ends."""
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self._load_pool, s.load)
        timeout = self.config.load_timeout
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except TimeoutError:
            pass
        s.load_cancellation.cancel("load_timeout")  # stops warmup runs at their next op
        s.state = VersionState.END
        s.error = f"loading and warming up took longer than load_timeout ({timeout:g}s)"
        log.error("model %s version %d: %s", s.model, s.version, s.error)
        self.stuck_loads += 1

        def finished(_future) -> None:
            self.stuck_loads -= 1
            s.discard(s.error)

        future.add_done_callback(finished)
        return False

    def batching_for(self, s: Servable) -> BatchingConfig:
        """The batching parameters of a version: the server's, with its model's overrides."""
        batching = self.config.batching
        if s.config.batching is not None:
            batching = batching.merged(s.config.batching, f"model {s.model} batching")
        return batching

    def _scheduler_for(self, s: Servable):
        batching = self.batching_for(s)
        if batching.enabled and any(sig.batchable for sig in s.signatures.values()):
            return Batcher(
                batching,
                self.compute_pool,
                self._observer,
                s.model,
                str(s.version),
                instances=len(s.instances),
                overdue=self.overdue,
                inline_seconds=self.config.inline_compute_micros / 1e6,
                compute_threads=self._compute_threads,
            )
        return DirectScheduler(
            self.compute_pool,
            self._observer,
            s.model,
            str(s.version),
            overdue=self.overdue,
            inline_seconds=self.config.inline_compute_micros / 1e6,
        )

    async def _unload(self, s: Servable, drain_timeout: float | None = None) -> None:
        """Unloads a detached version: no new request reaches it; in-flight ones get up to
        ``drain_timeout`` seconds (default: the grace period) to finish."""
        if s.state in (VersionState.START, VersionState.END) and not s.signatures:
            self._set_state(s, removed=True)
            return
        log.info("unloading model %s version %d", s.model, s.version)
        s.state = VersionState.UNLOADING
        self._set_state(s)
        if drain_timeout is None:
            drain_timeout = self.config.shutdown_grace_period
        if s.scheduler is not None:
            await s.scheduler.close()
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._load_pool, s.unload, drain_timeout)
        if self.metrics is not None:
            self.metrics.model_unloaded(s.model, str(s.version))
        self._set_state(s, removed=True)
        self.statistics.forget(s.model, s.version)

    def _set_state(self, s: Servable, removed: bool = False) -> None:
        if self.metrics is not None:
            self.metrics.set_version_state(
                s.model, str(s.version), None if removed else s.state.value
            )

    def known_labels(self, model: str, version: str) -> tuple[str, str]:
        """(model, version) as metric labels: "" for a name the repository does not know,
        so that names taken from request URLs cannot grow the metrics without bound."""
        m = self._models.get(model)
        if m is None:
            return "", ""
        if version:
            v = _version_number(version)
            if v is None or v not in m.versions:
                return model, ""
        return model, version

    # -- lookup -----------------------------------------------------------------------------
    def _model(self, name: str) -> ModelEntry:
        model = self._models.get(name)
        if model is not None and not model.disabled:
            return model
        if not valid_model_name(name):
            raise ModelNotFound(
                f"Model name {name!r} is not valid (letters, digits, '_', '.', '-'; "
                "no path separators)",
                name,
            )
        model = self._models.get(name)
        if model is None:
            raise ModelNotFound(
                f"Servable not found for request: model '{name}' is not in the model repository",
                name,
            )
        if model.disabled and not model.versions:
            raise Unavailable(
                f"Model '{name}' was unloaded; load it again with POST "
                f"/v2/repository/models/{name}/load"
            )
        return model

    def resolve(
        self, name: str, version: int | str | None = None, label: str | None = None
    ) -> Servable:
        """The servable for model ``name`` at ``version``/``label`` (default: latest)."""
        model = self._model(name)
        if label is not None:
            if version is not None:
                raise InvalidInput("Specify a version or a label, not both")
            if label not in model.labels:
                raise NotFound(
                    f"Unrecognized servable version label '{label}' for model "
                    f"'{name}' (labels: {sorted(model.labels)})"
                )
            version = model.labels[label]
        if version is not None:
            v = version if isinstance(version, int) else parse_version(str(version))
            if v is None:
                raise NotFound(
                    f"Model '{name}' has no version {version!r} (versions are positive integers)"
                )
            s = model.versions.get(v)
            if s is None:
                raise ModelNotFound(
                    f"Servable not found for request: model '{name}' version {v}", name, v
                )
            if s.state is not VersionState.AVAILABLE:
                detail = f": {s.error}" if s.error else ""
                raise Unavailable(
                    f"Model '{name}' version {v} is not available (state {s.state.value}{detail})"
                )
            return s
        latest = None
        for s in model.versions.values():
            if s.state is VersionState.AVAILABLE and (latest is None or s.version > latest.version):
                latest = s
        if latest is None:
            states = ", ".join(
                f"v{v} {s.state.value}" + (f": {s.error}" if s.error else "")
                for v, s in sorted(model.versions.items())
            )
            detail = f" ({states})" if states else ""
            if model.config_error:
                detail += f"; config error: {model.config_error}"
            raise Unavailable(f"Model '{name}' has no available version{detail}")
        return latest

    # -- inference --------------------------------------------------------------------------
    async def infer(
        self,
        name: str,
        inputs: dict[str, np.ndarray],
        *,
        version: int | str | None = None,
        label: str | None = None,
        signature: str | None = None,
        outputs: list[str] | None = None,
        timeout: float | None = None,
        servable: Servable | None = None,
    ) -> InferResult:
        """Runs one request; raises ``service.errors`` types for every failure.

        ``servable`` is the version a caller already resolved with ``resolve(name, version,
        label)`` (to parse the request against its signatures): the request runs on it, with
        no second lookup that a version swap could fall between. If it is retired before the
        request starts, a request for the latest version runs on its successor, as when the
        version is resolved here. The request is released, and counted (Prometheus metrics,
        Triton statistics), whatever its outcome.
        """
        loop = asyncio.get_running_loop()
        timeout = self.config.request_timeout if timeout is None else timeout
        if timeout <= 0:
            raise InvalidInput(f"timeout must be positive, got {timeout}")
        deadline = loop.time() + timeout
        if len(self.overdue) >= self._compute_threads:  # (_saturated, without its call)
            raise Unavailable(
                f"all {self._compute_threads} compute threads are still running computations "
                "past their deadline; retry later"
            )
        s = servable if servable is not None else self.resolve(name, version, label)
        try:
            s.acquire()
        except Unavailable:
            # Retired since the lookup: gone if pinned; "latest" has a successor: look again
            if version is not None or label is not None:
                raise
            s = self.resolve(name, version, label)
            s.acquire()
        # Validated, run by its scheduler, counted (metrics, statistics: one update each).
        metrics = self.metrics
        children = metrics.infer_children(s.model, s.version) if metrics is not None else None
        if children is not None:
            children[0].inc()  # in flight
        started = time.perf_counter()
        ok = False
        rows = 1
        input_seconds = output_seconds = None
        try:
            sig = s.signature(signature)
            arrays = sig.validate(inputs)
            validated = time.perf_counter()
            input_seconds = validated - started
            if sig.batchable and arrays and isinstance(s.scheduler, Batcher):
                rows = arrays[0].shape[0]
            wanted = sig.output_order if outputs is None else sig.check_outputs(outputs)
            values = await s.scheduler.submit(sig, arrays, deadline)
            selecting = time.perf_counter()
            values = {a: values[a] for a in wanted}
            output_seconds = time.perf_counter() - selecting
            ok = True
        finally:
            s.release()
            if children is not None:
                children[0].dec()
            self.statistics.finished(
                s.model,
                s.version,
                ok,
                time.perf_counter() - started,
                rows,
                input_seconds,
                output_seconds,
            )
        if children is not None:
            children[1].inc(
                arrays[0].shape[0] if sig.batchable and arrays and arrays[0].ndim else 1
            )
        return InferResult(s.model, s.version, sig.key, values)

    def signature_info(
        self,
        name: str,
        version: int | str | None = None,
        label: str | None = None,
        signature: str | None = None,
    ) -> tuple[Servable, Signature]:
        s = self.resolve(name, version, label)
        return s, s.signature(signature)

    # -- status -----------------------------------------------------------------------------
    def model_names(self) -> list[str]:
        return sorted(self._models)

    def model_statistics(
        self, name: str | None = None, version: int | str | None = None
    ) -> list[dict]:
        """Triton's ``model_stats``: every loaded version of ``name`` (of every model when
        ``name`` is empty), or the one ``version``."""
        if self.config.worker is not None:
            raise FailedPrecondition(self.config.worker.refuse_statistics())
        if name:
            model = self._model(name)
            if version:
                s = self.resolve(name, version)
                return [self.statistics.doc(name, s.version)]
            versions = [(name, v) for v, s in sorted(model.versions.items())]
        else:
            versions = [
                (n, v) for n in sorted(self._models) for v in sorted(self._models[n].versions)
            ]
        return [self.statistics.doc(n, v) for n, v in versions]

    def status(
        self, name: str, version: int | str | None = None, label: str | None = None
    ) -> list[VersionStatus]:
        model = self._model(name)
        if label is not None:
            if label not in model.labels:
                raise NotFound(f"Unrecognized servable version label '{label}' for model '{name}'")
            version = model.labels[label]
        if version is not None:
            v = version if isinstance(version, int) else parse_version(str(version))
            s = model.versions.get(v) if v is not None else None
            if s is None:
                raise NotFound(f"Could not find version {version} of model '{name}'")
            return [_status_of(s)]
        if not model.versions and model.config_error:
            return [VersionStatus(name, 0, VersionState.END.value, model.config_error)]
        return [_status_of(s) for v, s in sorted(model.versions.items(), reverse=True)]

    def readiness(self, name: str, version: str | int | None = None) -> tuple[str, str | None]:
        """(state, error) of a model or version for readiness probes: READY, LOADING,
        FAILED (with the load error), UNLOADING or UNAVAILABLE. Raises NotFound."""
        model = self._model(name)
        if version is not None:
            v = version if isinstance(version, int) else parse_version(str(version))
            s = model.versions.get(v) if v is not None else None
            if s is None:
                raise NotFound(f"Servable not found for request: model '{name}' version {version}")
            candidates = [s]
        else:
            candidates = list(model.versions.values())
        return model.state_of(candidates)

    def index(self) -> list[VersionStatus]:
        """Every model and version known (the V2 repository index)."""
        out = []
        for name in sorted(self._models):
            model = self._models[name]
            if not model.versions:
                state = "UNAVAILABLE" if not model.disabled else "UNLOADED"
                out.append(VersionStatus(name, 0, state, model.config_error))
            for _v, s in sorted(model.versions.items()):
                out.append(_status_of(s))
        return out

    def device_usage(self) -> tuple[list, list]:
        """For metrics: the accelerator devices in use (deduplicated by name), and per
        loaded version (model, version, instance labels, runs per instance)."""
        found: dict[str, object] = {}  # by physical name: sessions may renumber devices
        versions = []
        for name in sorted(self._models):
            for v, s in sorted(self._models[name].versions.items()):
                if s.state is not VersionState.AVAILABLE:
                    continue
                for d in s.accelerator_devices():
                    found.setdefault(d.physical_name, d)
                runs = list(s.pool.runs) if s.pool is not None else None
                versions.append((name, str(v), list(s.instances), runs))
        return list(found.values()), versions

    # -- repository control (KServe V2 repository extension) --------------------------------
    def _check_model_control(self) -> None:
        if self.config.model_control_mode == "none":
            raise FailedPrecondition(
                "explicit model load / unload is not allowed: the server runs with "
                "--model-control-mode none"
            )
        if self.config.worker is not None:
            raise FailedPrecondition(self.config.worker.refuse("Explicit model load / unload"))

    async def load_model(self, name: str, config: ModelConfig | None = None) -> None:
        """(Re)loads a model from the repository; raises if no version becomes available.
        ``config`` replaces the repository's configuration of the model for this load (until
        the next load or repository scan)."""
        self._check_model_control()
        if not valid_model_name(name):
            raise InvalidInput(f"Model name {name!r} is not valid")
        loop = asyncio.get_running_loop()
        sources = await loop.run_in_executor(self._scan_pool, self._scan)
        source = sources.get(name)
        if source is None:
            raise NotFound(f"failed to load '{name}': no such model in the repository")
        if config is not None:
            source.config, source.config_error = config, None
        loads, retired = [], []
        async with self._lock:
            model = self._models.get(name)
            if model is not None:
                model.disabled = False
                model.failed_stamp.clear()
                for v, s in list(model.versions.items()):
                    if s.state is VersionState.END:
                        del model.versions[v]
                    elif (
                        source.config_error is None
                        and s.config != source.config
                        and s.state is VersionState.AVAILABLE
                    ):
                        # Loaded with another configuration: a load reloads it (as Triton).
                        retired.extend(self._detach(model, [v]))
            self._plan(name, source, loads, retired)
            model = self._models[name]
            pending = [
                s
                for s in model.versions.values()
                if s.state in (VersionState.START, VersionState.LOADING)
            ]
        await asyncio.gather(*(self._unload(s) for s in retired))
        await asyncio.gather(*loads)
        # Versions another scan had already started loading: wait for them too.
        while any(s.state in (VersionState.START, VersionState.LOADING) for s in pending):
            await asyncio.sleep(0.05)
        if model.config_error:
            raise InvalidInput(f"failed to load '{name}': {model.config_error}")
        if not any(s.state is VersionState.AVAILABLE for s in model.versions.values()):
            errors = [
                f"version {v}: {s.error}" for v, s in sorted(model.versions.items()) if s.error
            ]
            raise InvalidInput(
                f"failed to load '{name}': " + ("; ".join(errors) or "no version to load")
            )

    async def unload_model(self, name: str) -> None:
        self._check_model_control()
        model = self._model(name)
        async with self._lock:
            model.disabled = True
            retired = self._detach(model, list(model.versions))
        await asyncio.gather(*(self._unload(s) for s in retired))


def _status_of(s: Servable) -> VersionStatus:
    loaded = s.state is VersionState.AVAILABLE
    return VersionStatus(
        s.model,
        s.version,
        s.state.value,
        s.error,
        s.device_status() if loaded else [],
        s.device_note if loaded else None,
    )
