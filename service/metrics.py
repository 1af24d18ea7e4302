"""Prometheus metrics, in a registry per application (tests can build many apps).

Names carry units; labels are few and bounded: model names come from the repository (a
request for an unknown model is counted under ``model=""``), versions from the repository,
protocols and status codes from small fixed sets.

With ``--workers N`` each worker process is built with ``multiprocess_dir`` (Prometheus'
multiprocess mode, ``PROMETHEUS_MULTIPROC_DIR`` set before ``prometheus_client`` is
imported): every worker writes its values to files there and a scrape of any worker renders
the sum over all of them. Gauges say how they combine (``multiprocess_mode``); the process,
platform and GC collectors cannot be combined and are left out; the device collector reports
the answering worker's own devices and instances.

In a single process the series a request updates (requests, latency, in flight, rows,
session runs, batches, queue waits and depths, rejections) are tallied in plain Python
numbers (``_Tally``, ``_HistogramTally``: no lock, no method layers) and copied into their
``prometheus_client`` children when the registry is collected (``_TallyFlush``, the first
collector registered). Every update comes from the event loop's thread (HTTP, gRPC and the
batchers' completion callbacks all run there), so each tally has one writer; a scrape only
reads them. The values are those the children would hold had they been updated directly: a
count is an exact integer, and a histogram's sum is accumulated in the same order.
"""

from __future__ import annotations

import threading
from bisect import bisect_left

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    gc_collector,
    generate_latest,
    platform_collector,
    process_collector,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector

__all__ = ["ServingMetrics", "CONTENT_TYPE"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_LATENCY_BUCKETS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)
_STATES = ("START", "LOADING", "AVAILABLE", "UNLOADING", "END")
# The series a scheduler updates per run, by their ServingMetrics attribute (_run_series).
_RUN_SERIES = (
    "compute_seconds",
    "executions",
    "batch_rows",
    "batch_padding",
    "batches",
    "queue_wait_seconds",
    "queued",
)


class ServingMetrics:
    """The server's Prometheus metrics. ``tally``: keep the per-request series in tallies
    (see the module's docstring); only without ``multiprocess_dir``."""

    def __init__(self, multiprocess_dir: str | None = None, *, tally: bool = True):
        self.registry = CollectorRegistry(auto_describe=True)
        # Tallies (single process only: a worker's values must reach its multiprocess files
        # as they change); the flush is registered first, so a collection sees them folded.
        self._tallies: list | None = None
        self._tally_of: dict[int, object] = {}  # id(child) -> its tally
        if multiprocess_dir is None and tally:
            self._tallies = []
            self.registry.register(_TallyFlush(self._tallies))
        # Collectors read at scrape time from this process only.
        self._local = _local_registry(self.registry, multiprocess_dir)
        self.multiprocess_dir = multiprocess_dir
        r = self.registry
        self._request_children: dict = {}
        self._children: dict = {}  # label children of the scheduling metrics
        self._infer_children: dict = {}  # (model, version) -> children (infer_children)
        self._run_children: dict = {}  # (model, version) -> children (session_run)
        self.requests = Counter(
            "flowserve_requests",
            "Requests by model, version, protocol, endpoint and HTTP status code.",
            ["model", "version", "protocol", "endpoint", "code"],
            registry=r,
        )
        self.request_seconds = Histogram(
            "flowserve_request_duration_seconds",
            "End-to-end request latency in seconds, from the request's arrival to its response.",
            ["model", "version", "protocol", "endpoint"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.in_flight = Gauge(
            "flowserve_requests_in_flight",
            "Inference requests a model is working on (queued or running).",
            ["model"],
            registry=r,
            multiprocess_mode="livesum",
        )
        self.inference_rows = Counter(
            "flowserve_inference_rows",
            "Rows (inferences) answered: a request of N rows counts N (Triton's inference count).",
            ["model", "version"],
            registry=r,
        )
        self.executions = Counter(
            "flowserve_model_executions",
            "Session runs: one per batch, or per request without batching (Triton's "
            "execution count).",
            ["model", "version"],
            registry=r,
        )
        self.loads = Counter(
            "flowserve_model_loads",
            "Model versions loaded and made available.",
            ["model"],
            registry=r,
        )
        self.unloads = Counter(
            "flowserve_model_unloads",
            "Model versions unloaded.",
            ["model"],
            registry=r,
        )
        self.version_state = Gauge(
            "flowserve_model_version_state",
            "1 for the state each model version is in (with --workers: in any live worker).",
            ["model", "version", "state"],
            registry=r,
            multiprocess_mode="livemax",
        )
        self.load_seconds = Histogram(
            "flowserve_model_load_duration_seconds",
            "Time to load a model version, in seconds.",
            ["model"],
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
            registry=r,
        )
        self.load_failures = Counter(
            "flowserve_model_load_failures",
            "Model version loads that failed.",
            ["model"],
            registry=r,
        )
        mv = ["model", "version"]
        self.batch_rows = Histogram(
            "flowserve_batch_size_rows",
            "Rows executed per batch (padding excluded).",
            mv,
            buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
            registry=r,
        )
        self.batch_padding = Counter(
            "flowserve_batch_padding_rows",
            "Padding rows added to reach an allowed batch size.",
            mv,
            registry=r,
        )
        self.batches = Counter("flowserve_batches", "Batches executed.", mv, registry=r)
        self.queue_wait_seconds = Histogram(
            "flowserve_batch_queue_wait_seconds",
            "Time requests waited in the batching queue.",
            mv,
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.compute_seconds = Histogram(
            "flowserve_session_run_seconds",
            "Time spent running the model (one session run per batch or unbatched request).",
            mv,
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.queued = Gauge(
            "flowserve_batch_queue_depth",
            "Requests waiting to be batched.",
            mv,
            registry=r,
            multiprocess_mode="livesum",
        )
        self.rejections = Counter(
            "flowserve_requests_rejected",
            "Requests rejected by the scheduler, by reason (queue_full, deadline, too_large).",
            mv + ["reason"],
            registry=r,
        )
        # Devices: read from the manager at scrape time (set_device_source).
        self.device_source = None
        self._local.register(_DeviceCollector(self))

    def observe_request(
        self,
        model: str,
        version: str,
        protocol: str,
        code: int,
        seconds: float,
        endpoint: str = "other",
    ) -> None:
        # Label children are cached: labels() costs a few microseconds per call.
        key = (model, version, protocol, endpoint, code)
        children = self._request_children.get(key)
        if children is None:
            children = (
                self._tallied(self.requests.labels(model, version, protocol, endpoint, str(code))),
                self._tallied(self.request_seconds.labels(model, version, protocol, endpoint)),
            )
            if len(self._request_children) < 10_000:
                self._request_children[key] = children
        children[0].inc()
        children[1].observe(seconds)

    def flush(self) -> None:
        """Copies the tallies into their ``prometheus_client`` children (a collection of the
        registry does it first; this is for readers of the children themselves)."""
        if self._tallies is not None:
            _flush(self._tallies)

    def set_version_state(self, model: str, version: str, state: str | None) -> None:
        for s in _STATES:
            if state is None and self.multiprocess_dir is not None:
                # Multiprocess files cannot drop a series: a retired version reads 0.
                self.version_state.labels(model, version, s).set(0.0)
            elif state is None:
                try:
                    self.version_state.remove(model, version, s)
                except KeyError:
                    pass
            else:
                self.version_state.labels(model, version, s).set(1.0 if s == state else 0.0)

    def model_loaded(self, model: str, version: str, seconds: float) -> None:  # noqa: ARG002 - events name the version; load metrics keep the model label only
        self.load_seconds.labels(model).observe(seconds)
        self.loads.labels(model).inc()

    def model_unloaded(self, model: str, version: str) -> None:  # noqa: ARG002 - event interface
        self.unloads.labels(model).inc()

    def inflight(self, model: str, delta: int) -> None:
        self._child(self.in_flight, model).inc(delta)

    def inferred(self, model: str, version: str, rows: int) -> None:
        self._child(self.inference_rows, model, version).inc(rows)

    def infer_children(self, model: str, version: int | str) -> tuple:
        """The label children a request of ``model`` ``version`` updates in the core, looked
        up once: (``flowserve_requests_in_flight``, ``flowserve_inference_rows``)."""
        key = (model, version)
        children = self._infer_children.get(key)
        if children is None:
            children = self._infer_children[key] = (
                self._child(self.in_flight, model),
                self._child(self.inference_rows, model, str(version)),
            )
        return children

    def model_load_failed(self, model: str, version: str) -> None:  # noqa: ARG002 - events name the version; load metrics keep the model label only
        self.load_failures.labels(model).inc()

    # -- scheduling -------------------------------------------------------------------------
    def _child(self, metric, *labels):
        """The label child of ``metric`` (its tally in a single process), made once."""
        key = (id(metric), labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = self._tallied(metric.labels(*labels))
        return child

    def _tallied(self, child):
        """``child``'s tally, kept for the flush (in a single process); else ``child``."""
        if self._tallies is None:
            return child
        # One tally per child: several keys may share one (a latency child serves every
        # status code of its labels).
        tally = self._tally_of.get(id(child))
        if tally is None:
            if hasattr(child, "_upper_bounds"):  # a histogram's child
                tally = _HistogramTally(child._upper_bounds)
            else:
                tally = _Tally()
            self._tally_of[id(child)] = tally
            self._tallies.append((tally, child))  # (holds the child: its id stays unique)
        return tally

    def _run_series(self, model: str, version: str) -> list:
        """The scheduling series of ``model`` ``version`` (``_RUN_SERIES``), each child made
        when first updated (a series appears once it has a value, as before), found by one
        lookup per update instead of one per series."""
        children = self._run_children.get((model, version))
        if children is None:
            children = self._run_children[(model, version)] = [None] * len(_RUN_SERIES)
        return children

    def _made(self, children: list, i: int, model: str, version: str):
        child = children[i] = self._child(getattr(self, _RUN_SERIES[i]), model, version)
        return child

    def batch(self, model: str, version: str, rows: int, padding: int, seconds: float) -> None:
        children = self._run_children.get((model, version)) or self._run_series(model, version)
        (children[2] or self._made(children, 2, model, version)).observe(rows)
        if padding:
            (children[3] or self._made(children, 3, model, version)).inc(padding)
        (children[4] or self._made(children, 4, model, version)).inc()
        (children[0] or self._made(children, 0, model, version)).observe(seconds)
        (children[1] or self._made(children, 1, model, version)).inc()

    def session_run(self, model: str, version: str, seconds: float) -> None:
        children = self._run_children.get((model, version)) or self._run_series(model, version)
        (children[0] or self._made(children, 0, model, version)).observe(seconds)
        (children[1] or self._made(children, 1, model, version)).inc()

    def queue_wait(self, model: str, version: str, seconds: float) -> None:
        children = self._run_children.get((model, version)) or self._run_series(model, version)
        (children[5] or self._made(children, 5, model, version)).observe(seconds)

    def queue_waits(self, model: str, version: str, waits: list[float]) -> None:
        """``queue_wait`` of each of a batch's requests (one label lookup)."""
        children = self._run_children.get((model, version)) or self._run_series(model, version)
        observe = (children[5] or self._made(children, 5, model, version)).observe
        for seconds in waits:
            observe(seconds)

    def queue_depth(self, model: str, version: str, depth: int) -> None:
        children = self._run_children.get((model, version)) or self._run_series(model, version)
        (children[6] or self._made(children, 6, model, version)).set(depth)

    def executor_wait(self, model: str, version: str, seconds: float, batched: bool) -> None:
        """Time work waited for a compute thread: Triton's statistics count it as queue time
        (``SchedulingObserver``); no Prometheus series of its own."""

    def rejected(self, model: str, version: str, reason: str) -> None:
        self._child(self.rejections, model, version, reason).inc()

    def combined(self) -> CollectorRegistry:
        """The serving metrics of the whole server: this registry, or with ``--workers N``
        one that reads (and sums) every worker's multiprocess files."""
        if self.multiprocess_dir is None:
            return self.registry
        combined = CollectorRegistry()
        MultiProcessCollector(combined, self.multiprocess_dir)
        return combined

    def render(self) -> bytes:
        self.flush()
        if self.multiprocess_dir is None:
            return generate_latest(self.registry)
        return generate_latest(self.combined()) + generate_latest(self._local)


def _local_registry(registry: CollectorRegistry, multiprocess_dir: str | None):
    """Where the per-process collectors go: the serving registry of a single-process server
    (with the process, platform and GC collectors); a registry of their own in a worker of
    ``--workers N``, whose values files other workers cannot read (without those three,
    which would describe one worker as if it were the server)."""
    if multiprocess_dir is not None:
        return CollectorRegistry(auto_describe=True)
    process_collector.ProcessCollector(registry=registry)
    platform_collector.PlatformCollector(registry=registry)
    gc_collector.GCCollector(registry=registry)
    return registry


class _Tally:
    """A counter's or gauge's value, updated in place (see the module's docstring)."""

    __slots__ = ("value",)

    def __init__(self):
        self.value = 0

    def inc(self, amount: float = 1) -> None:
        self.value += amount

    def dec(self, amount: float = 1) -> None:
        self.value -= amount

    def set(self, value: float) -> None:
        self.value = value

    def fold(self, child) -> None:
        child._value.set(float(self.value))


class _HistogramTally:
    """A histogram's bucket counts (each observation in the first bucket that holds it,
    as ``prometheus_client`` counts it) and its sum."""

    __slots__ = ("bounds", "buckets", "sum")

    def __init__(self, bounds: list[float]):
        self.bounds = list(bounds)
        self.buckets = [0] * len(bounds)
        self.sum = 0.0

    def observe(self, amount: float) -> None:
        self.sum += amount
        if amount == amount:  # a NaN lands in no bucket, as in prometheus_client
            self.buckets[bisect_left(self.bounds, amount)] += 1

    def fold(self, child) -> None:
        child._sum.set(self.sum)
        for value, count in zip(child._buckets, list(self.buckets)):
            value.set(float(count))


_FLUSH_LOCK = threading.Lock()  # scrapes may run at once (in executor threads)


def _flush(tallies: list) -> None:
    with _FLUSH_LOCK:
        for tally, child in list(tallies):  # list(): made in one step, under the GIL
            tally.fold(child)


class _TallyFlush:
    """The first collector of a single-process registry: folds the tallies into their
    children before the metrics after it are collected. Yields nothing itself."""

    def __init__(self, tallies: list):
        self._tallies = tallies

    def describe(self):
        return []

    def collect(self):
        _flush(self._tallies)
        return []


class _DeviceCollector:
    """Model instances per device, runs per instance, and accelerator memory."""

    def __init__(self, metrics: ServingMetrics):
        self._metrics = metrics

    def describe(self):
        return []  # label sets are only known at scrape time

    def collect(self):
        source = self._metrics.device_source
        if source is None:
            return
        devices, versions = source()
        instances = GaugeMetricFamily(
            "flowserve_model_instances",
            "Session instances of each loaded model version, by device (cpu, gpu:N).",
            labels=["model", "version", "device"],
        )
        runs = CounterMetricFamily(
            "flowserve_model_instance_runs",
            "Session runs (batches or requests) dispatched "
            "to each instance of versions with several instances.",
            labels=["model", "version", "instance", "device"],
        )
        for model, version, labels, counts in versions:
            per_device: dict[str, int] = {}
            for label in labels:
                per_device[label] = per_device.get(label, 0) + 1
            for label, n in per_device.items():
                instances.add_metric([model, version, label], n)
            if counts is not None:
                for i, (label, n) in enumerate(zip(labels, counts)):
                    runs.add_metric([model, version, str(i), label], n)
        yield instances
        yield runs
        memory = GaugeMetricFamily(
            "flowserve_device_memory_bytes",
            "Accelerator memory of the devices models run on: "
            "in_use by arrays, reserved by the memory pool, and the pool's limit (0: none).",
            labels=["device", "kind"],
        )
        for d in devices:
            try:
                info = d.memory_info()
            except Exception:  # noqa: BLE001 - a scrape must not fail on a driver hiccup
                info = None
            if info:
                for kind in ("in_use", "reserved", "limit"):
                    memory.add_metric([d.physical_name, kind], float(info.get(kind, 0)))
        yield memory
