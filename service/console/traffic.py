"""The console's traffic summary: the app's own Prometheus registry, read per model version.

No Prometheus server is involved: ``traffic_summary(registry)`` walks the registry's current
samples (the same values ``/metrics`` renders) and groups them by (model, version), summing
over the other labels (protocol, status code, ...). Counters and histograms are cumulative;
the console polls and turns two snapshots into rates and windowed percentiles, with
``histogram_quantile`` below (Prometheus' linear interpolation inside a bucket).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from prometheus_client import CollectorRegistry

__all__ = ["traffic_summary", "histogram_quantile"]

_REQUESTS = "flowserve_requests_total"
_LATENCY = "flowserve_request_duration_seconds"
_BATCH = "flowserve_batch_size_rows"
_QUEUE = "flowserve_batch_queue_depth"
_REJECTED = "flowserve_requests_rejected_total"
_QUANTILES = (0.5, 0.9, 0.99)


def histogram_quantile(q: float, buckets: Sequence[tuple[float, float]]) -> float | None:
    """The ``q`` quantile of a cumulative histogram ``[(upper_bound, count), ...]`` sorted by
    bound and ending with +Inf, as Prometheus' ``histogram_quantile``: linear interpolation
    inside the bucket holding the rank; the highest finite bound when the rank falls in the
    +Inf bucket; None without observations."""
    if not buckets or buckets[-1][1] <= 0:
        return None
    total = buckets[-1][1]
    rank = q * total
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if math.isinf(bound):
                return lower_bound
            if count == lower_count:
                return bound
            return lower_bound + (bound - lower_bound) * (rank - lower_count) / (
                count - lower_count
            )
        lower_bound, lower_count = bound, count
    return lower_bound


class _Entry:
    def __init__(self, model: str, version: str):
        self.model = model
        self.version = version
        self.requests = 0.0
        self.errors = 0.0
        self.rejected = 0.0
        self.queue_depth = 0.0
        self.latency: dict[float, float] = {}
        self.latency_sum = 0.0
        self.batch: dict[float, float] = {}
        self.batch_sum = 0.0

    def as_json(self) -> dict:
        latency = sorted(self.latency.items())
        batch = sorted(self.batch.items())
        return {
            "model": self.model,
            "version": self.version,
            "requests": self.requests,
            "errors": self.errors,
            "rejected": self.rejected,
            "queue_depth": self.queue_depth,
            "latency": {
                "buckets": [[_bound(b), c] for b, c in latency],
                "count": latency[-1][1] if latency else 0.0,
                "sum": self.latency_sum,
                "quantiles": {str(q): histogram_quantile(q, latency) for q in _QUANTILES},
            },
            "batch_size": {
                "buckets": [[_bound(b), c] for b, c in batch],
                "count": batch[-1][1] if batch else 0.0,
                "sum": self.batch_sum,
            },
        }


def _bound(b: float) -> float | str:
    return "+Inf" if math.isinf(b) else b


def _samples(registry: CollectorRegistry) -> Iterable:
    for family in registry.collect():
        if family.name.startswith("flowserve_"):
            yield from family.samples


def traffic_summary(registry: CollectorRegistry) -> dict:
    """Per (model, version) with traffic or a batching queue: request and error counts
    (status >= 400), scheduler rejections, queue depth, and the latency and batch-size
    histograms (cumulative buckets, count, sum, lifetime quantiles). Requests for unknown
    models (``model=""``) are left out."""
    entries: dict[tuple[str, str], _Entry] = {}
    for s in _samples(registry):
        model = s.labels.get("model")
        version = s.labels.get("version", "")
        if not model:
            continue
        key = (model, version)
        e = entries.get(key)
        if e is None:
            e = entries[key] = _Entry(model, version)
        _add(e, s)
    ordered = sorted(entries.values(), key=lambda e: (e.model, _version_key(e.version)))
    return {"models": [e.as_json() for e in ordered if _has_traffic(e)]}


def _add(e: _Entry, s) -> None:
    name, value = s.name, float(s.value)
    if name == _REQUESTS:
        e.requests += value
        code = s.labels.get("code", "")
        if code.isdigit() and int(code) >= 400:
            e.errors += value
    elif name == _REJECTED:
        e.rejected += value
    elif name == _QUEUE:
        e.queue_depth += value
    elif name == _LATENCY + "_bucket":
        bound = float(s.labels["le"])
        e.latency[bound] = e.latency.get(bound, 0.0) + value
    elif name == _LATENCY + "_sum":
        e.latency_sum += value
    elif name == _BATCH + "_bucket":
        bound = float(s.labels["le"])
        e.batch[bound] = e.batch.get(bound, 0.0) + value
    elif name == _BATCH + "_sum":
        e.batch_sum += value


def _has_traffic(e: _Entry) -> bool:
    return bool(e.requests or e.latency or e.batch or e.queue_depth or e.rejected)


def _version_key(version: str) -> tuple[int, str]:
    return (int(version), "") if version.isdigit() else (0, version)
