"""The serving core: model lifecycle and inference, independent of any transport.

``ModelManager`` scans the repository (at start and every ``poll_interval`` seconds), loads
the versions each model's version policy asks for in the background, and retires old versions
only once a newer one is available, so no request fails during a swap. A version that fails
to load is kept with state END and its error, and does not disturb the versions serving.
``infer`` resolves model/version/label/signature, validates inputs and runs the request off
the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from service.batching import Batcher, DirectScheduler
from service.config import BatchingConfig, ModelConfig, ServerConfig
from service.errors import InvalidInput, NotFound, Unavailable
from service.metrics import ServingMetrics
from service.repository import (
    MODEL_FILES,
    ModelSource,
    parse_version,
    scan_repository,
    valid_model_name,
)
from service.servable import Servable, Signature, VersionState

__all__ = ["ModelManager", "InferResult", "VersionStatus"]

log = logging.getLogger("flowserve.manager")


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


@dataclass
class _Model:
    name: str
    source: ModelSource | None = None
    versions: dict[int, Servable] = field(default_factory=dict)
    labels: dict[str, int] = field(default_factory=dict)
    config: ModelConfig = field(default_factory=ModelConfig)
    config_error: str | None = None
    disabled: bool = False  # unloaded through the repository API
    failed_stamp: dict[int, int] = field(default_factory=dict)


def _stamp(path) -> int:
    stamps = []
    for name in MODEL_FILES:
        try:
            stamps.append(os.stat(os.path.join(path, name)).st_mtime_ns)
        except OSError:
            pass
    return max(stamps, default=-1)


class ModelManager:
    """Loads, serves and retires model versions; the one API every protocol calls."""

    def __init__(self, config: ServerConfig, metrics: ServingMetrics | None = None):
        self.config = config
        self.metrics = metrics
        self._models: dict[str, _Model] = {}
        self._lock: asyncio.Lock | None = None
        self._load_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="fs-load")
        self.compute_pool = ThreadPoolExecutor(
            max_workers=max(config.compute_threads, config.batching.threads),
            thread_name_prefix="fs-compute",
        )
        self._poller: asyncio.Task | None = None
        self._ready = False
        self._stopping = False
        if metrics is not None:
            metrics.device_source = self.device_usage

    # -- lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        self._lock = asyncio.Lock()
        await self.poll_once()
        self._ready = True
        if self.config.poll_interval > 0:
            self._poller = asyncio.create_task(self._poll_forever(), name="fs-repo-poller")

    async def stop(self) -> None:
        self._stopping = True
        self._ready = False
        if self._poller is not None:
            self._poller.cancel()
            try:
                await self._poller
            except asyncio.CancelledError:
                pass
        async with self._lock:
            for model in list(self._models.values()):
                for s in list(model.versions.values()):
                    await self._unload(s)
            self._models.clear()
        self._load_pool.shutdown(wait=True)
        self.compute_pool.shutdown(wait=True)

    @property
    def ready(self) -> bool:
        return self._ready

    async def _poll_forever(self) -> None:
        while True:
            await asyncio.sleep(self.config.poll_interval)
            try:
                await self.poll_once()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - the poller must survive anything
                log.exception("model repository scan failed")

    async def poll_once(self) -> None:
        """Scans the repository and brings every model to its desired versions."""
        loop = asyncio.get_running_loop()
        sources = await loop.run_in_executor(
            self._load_pool, scan_repository, self.config.model_repository
        )
        async with self._lock:
            if self._stopping:
                return
            await asyncio.gather(*(self._reconcile(name, src) for name, src in sources.items()))
            for name in list(self._models):
                if name not in sources:
                    await self._remove_model(name)

    async def _remove_model(self, name: str) -> None:
        model = self._models.pop(name, None)
        if model is None:
            return
        log.info("model %s removed from the repository; unloading", name)
        for s in list(model.versions.values()):
            await self._unload(s)

    async def _reconcile(self, name: str, source: ModelSource) -> None:
        model = self._models.get(name)
        if model is None:
            model = self._models[name] = _Model(name)
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
        desired = source.config.version_policy.select(list(source.versions))
        loads = []
        for v in sorted(desired):
            current = model.versions.get(v)
            if current is not None:
                if (
                    current.state is VersionState.END
                    and current.error
                    and model.failed_stamp.get(v) != _stamp(source.versions[v])
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
            self._set_state(s)
            loads.append(s)
        if loads:
            await asyncio.gather(*(self._load(model, s) for s in loads))
        serving_desired = any(
            model.versions[v].state is VersionState.AVAILABLE
            for v in desired
            if v in model.versions
        )
        for v, s in sorted(model.versions.items()):
            if v in desired:
                continue
            gone = v not in source.versions
            if s.state is VersionState.AVAILABLE and not (serving_desired or gone):
                continue  # keep serving until a replacement is available
            await self._unload(s)
            model.versions.pop(v, None)
            model.failed_stamp.pop(v, None)

    async def _load(self, model: _Model, s: Servable) -> None:
        loop = asyncio.get_running_loop()
        s.state = VersionState.LOADING
        self._set_state(s)
        t0 = time.perf_counter()
        if await loop.run_in_executor(self._load_pool, s.load):
            s.publish(self._scheduler_for(s))
            if self.metrics is not None:
                self.metrics.model_loaded(s.model, str(s.version), time.perf_counter() - t0)
        else:
            model.failed_stamp[s.version] = _stamp(s.path)
            if self.metrics is not None:
                self.metrics.model_load_failed(s.model, str(s.version))
        self._set_state(s)

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
                self.metrics,
                s.model,
                str(s.version),
                instances=len(s.instances),
            )
        return DirectScheduler(self.compute_pool, self.metrics, s.model, str(s.version))

    async def _unload(self, s: Servable) -> None:
        if s.state is VersionState.END and s.signatures == {}:
            self._set_state(s, removed=True)
            return
        log.info("unloading model %s version %d", s.model, s.version)
        s.state = VersionState.UNLOADING
        self._set_state(s)
        if s.scheduler is not None:
            await s.scheduler.close()
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(
            self._load_pool, s.unload, self.config.shutdown_grace_period + 5.0
        )
        self._set_state(s, removed=True)

    def _set_state(self, s: Servable, removed: bool = False) -> None:
        if self.metrics is not None:
            self.metrics.set_version_state(
                s.model, str(s.version), None if removed else s.state.value
            )

    # -- lookup -----------------------------------------------------------------------------
    def _model(self, name: str) -> _Model:
        model = self._models.get(name)
        if model is not None and not model.disabled:
            return model
        if not valid_model_name(name):
            raise NotFound(
                f"Model name {name!r} is not valid (letters, digits, '_', '.', '-'; "
                "no path separators)"
            )
        model = self._models.get(name)
        if model is None:
            raise NotFound(
                f"Servable not found for request: model '{name}' is not in the model repository"
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
                raise NotFound(f"Servable not found for request: model '{name}' version {v}")
            if s.state is not VersionState.AVAILABLE:
                detail = f": {s.error}" if s.error else ""
                raise Unavailable(
                    f"Model '{name}' version {v} is not available (state {s.state.value}{detail})"
                )
            return s
        available = [s for s in model.versions.values() if s.state is VersionState.AVAILABLE]
        if not available:
            states = ", ".join(
                f"v{v} {s.state.value}" + (f": {s.error}" if s.error else "")
                for v, s in sorted(model.versions.items())
            )
            detail = f" ({states})" if states else ""
            if model.config_error:
                detail += f"; config error: {model.config_error}"
            raise Unavailable(f"Model '{name}' has no available version{detail}")
        return max(available, key=lambda s: s.version)

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
        version is resolved here.
        """
        loop = asyncio.get_running_loop()
        timeout = self.config.request_timeout if timeout is None else timeout
        if timeout <= 0:
            raise InvalidInput(f"timeout must be positive, got {timeout}")
        deadline = loop.time() + timeout
        for attempt in range(2):
            if servable is not None and not attempt:
                s = servable
            else:
                s = self.resolve(name, version, label)
            try:
                s.acquire()
            except Unavailable:
                # Retired between lookup and use: a pinned version really is gone, but
                # "latest" has a successor, so look again once.
                if version is not None or label is not None or attempt:
                    raise
                continue
            try:
                sig = s.signature(signature)
                arrays = sig.validate(inputs)
                wanted = _check_outputs(sig, outputs)
                values = await s.scheduler.submit(sig, arrays, deadline)
            finally:
                s.release()
            return InferResult(s.model, s.version, sig.key, {a: values[a] for a in wanted})
        raise Unavailable(f"Model '{name}' has no available version")

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
    async def load_model(self, name: str) -> None:
        """(Re)loads a model from the repository; raises if no version becomes available."""
        if not valid_model_name(name):
            raise InvalidInput(f"Model name {name!r} is not valid")
        loop = asyncio.get_running_loop()
        sources = await loop.run_in_executor(
            self._load_pool, scan_repository, self.config.model_repository
        )
        source = sources.get(name)
        if source is None:
            raise NotFound(f"failed to load '{name}': no such model in the repository")
        async with self._lock:
            model = self._models.get(name)
            if model is not None:
                model.disabled = False
                model.failed_stamp.clear()
                for v, s in list(model.versions.items()):
                    if s.state is VersionState.END:
                        del model.versions[v]
            await self._reconcile(name, source)
            model = self._models[name]
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
        model = self._model(name)
        async with self._lock:
            model.disabled = True
            for s in list(model.versions.values()):
                await self._unload(s)
            model.versions.clear()


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


def _check_outputs(sig: Signature, outputs) -> list[str]:
    if outputs is None:
        return sig.output_order
    unknown = [o for o in outputs if o not in sig.outputs]
    if unknown:
        raise InvalidInput(
            f"unknown output(s) {unknown}; signature '{sig.key}' has outputs {sig.output_order}"
        )
    return list(dict.fromkeys(outputs))
