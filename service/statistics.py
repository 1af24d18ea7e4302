"""Per model version inference statistics, as Triton's statistics extension reports them.

Counts and nanosecond totals: ``success``/``fail`` (whole requests, from arrival at the core to
the result), ``queue`` (time waiting to run: in the batching queue, then for a compute thread;
batched or not, one count per request), ``compute_input`` (validating and casting the
inputs), ``compute_infer`` (the session run, outputs brought to the host included) and
``compute_output`` (from the scheduler's result to the request's outputs: selecting the
requested ones; a batch's outputs are split into views before that, with no copy); per batch size
(``batch_stats``), the runs of that many rows; ``inference_count`` (inferences: a request of n
rows counts n) against ``execution_count`` (session runs: a batch counts once), and
``last_inference`` in milliseconds since the epoch.

``SchedulingObserver`` is what the schedulers report to: it forwards to the Prometheus metrics
and records here, so batching keeps one reporting seam.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from service.metrics import ServingMetrics

__all__ = ["InferenceStatistics", "SchedulingObserver"]


@dataclass
class _Duration:
    count: int = 0
    ns: int = 0

    def doc(self) -> dict:
        return {"count": self.count, "ns": self.ns}


@dataclass
class _Version:
    last_inference: int = 0
    inference_count: int = 0
    execution_count: int = 0
    stats: dict = field(
        default_factory=lambda: {
            k: _Duration()
            for k in (
                "success",
                "fail",
                "queue",
                "compute_input",
                "compute_infer",
                "compute_output",
                "cache_hit",
                "cache_miss",
            )
        }
    )
    batches: dict = field(default_factory=dict)  # batch size -> {"compute_*": _Duration}


class InferenceStatistics:
    """Statistics of every model version served; safe to update from any thread."""

    def __init__(self):
        self._versions: dict[tuple[str, str], _Version] = {}
        # The same entries by (model, version) as callers pass them (an int or a label):
        # the lookup of every update, without making the label each time.
        self._given: dict[tuple[str, int | str], _Version] = {}
        self._lock = threading.Lock()

    def _entry(self, model: str, version: int | str) -> _Version:
        entry = self._given.get((model, version))
        if entry is not None:
            return entry
        key = (model, str(version))
        entry = self._versions.get(key)
        if entry is None:
            entry = self._versions[key] = _Version()
        self._given[(model, version)] = entry
        return entry

    def finished(
        self,
        model: str,
        version: int | str,
        ok: bool,
        seconds: float,
        rows: int,
        input_seconds: float | None,
        output_seconds: float | None,
    ) -> None:
        """A finished request (``rows``: its inferences, when it succeeded), in one update
        with its ``compute_input`` time (None: its inputs were refused) and its
        ``compute_output`` time (None: it failed before)."""
        # Triton's last_inference is a wall-clock timestamp (ms since the epoch), not a
        # duration: time.time() is the right clock here.
        now = int(time.time() * 1000)
        with self._lock:
            entry = self._given.get((model, version)) or self._entry(model, version)
            stats = entry.stats
            if input_seconds is not None:
                d = stats["compute_input"]
                d.count += 1
                d.ns += int(input_seconds * 1e9)
            if output_seconds is not None:
                d = stats["compute_output"]
                d.count += 1
                d.ns += int(output_seconds * 1e9)
            d = stats["success" if ok else "fail"]
            d.count += 1
            d.ns += int(seconds * 1e9)
            if ok:
                entry.inference_count += rows
                entry.last_inference = now

    def queue(self, model: str, version: int | str, seconds: float, count: int = 1) -> None:
        """``seconds`` of queueing; ``count`` 0 adds to a request's queue time already counted."""
        ns = int(seconds * 1e9)
        with self._lock:
            queue = self._entry(model, version).stats["queue"]
            queue.count += count
            queue.ns += ns

    def queues(self, model: str, version: int | str, waits: list[float]) -> None:
        """One queue time per request (a batch's requests): ``queue`` of each, one lock."""
        ns = sum([int(seconds * 1e9) for seconds in waits])
        with self._lock:
            queue = self._entry(model, version).stats["queue"]
            queue.count += len(waits)
            queue.ns += ns

    def execution(self, model: str, version: int | str, rows: int, seconds: float) -> None:
        """One session run of ``rows`` rows taking ``seconds``."""
        ns = int(seconds * 1e9)
        with self._lock:
            _count_run(self._entry(model, version), rows, ns)

    def direct_run(
        self, model: str, version: int | str, waited: float, seconds: float, rows: int = 1
    ) -> None:
        """A request's own run: ``queue(waited)`` and ``execution(rows, seconds)`` in one
        update."""
        waited_ns, ns = int(waited * 1e9), int(seconds * 1e9)
        with self._lock:
            entry = self._given.get((model, version)) or self._entry(model, version)
            queue = entry.stats["queue"]
            queue.count += 1
            queue.ns += waited_ns
            _count_run(entry, rows, ns)

    def forget(self, model: str, version: int | str) -> None:
        with self._lock:
            entry = self._versions.pop((model, str(version)), None)
            self._given = {k: e for k, e in self._given.items() if e is not entry}

    def doc(self, model: str, version: int | str) -> dict:
        """Triton's ``model_stats`` entry of one version."""
        with self._lock:
            entry = self._versions.get((model, str(version))) or _Version()
            return {
                "name": model,
                "version": str(version),
                "last_inference": entry.last_inference,
                "inference_count": entry.inference_count,
                "execution_count": entry.execution_count,
                "inference_stats": {k: d.doc() for k, d in entry.stats.items()},
                "batch_stats": [
                    {"batch_size": size, **{k: d.doc() for k, d in batch.items()}}
                    for size, batch in sorted(entry.batches.items())
                ],
            }


class SchedulingObserver:
    """The schedulers' reporting seam: Prometheus metrics (if any) and the statistics."""

    def __init__(self, metrics: ServingMetrics | None, statistics: InferenceStatistics):
        self.metrics = metrics
        self.statistics = statistics

    def batch(self, model: str, version: str, rows: int, padding: int, seconds: float) -> None:
        if self.metrics is not None:
            self.metrics.batch(model, version, rows, padding, seconds)
        self.statistics.execution(model, version, rows + padding, seconds)

    def session_run(self, model: str, version: str, seconds: float, rows: int = 1) -> None:
        if self.metrics is not None:
            self.metrics.session_run(model, version, seconds)
        self.statistics.execution(model, version, rows, seconds)

    def direct_run(self, model: str, version: str, seconds: float, waited: float) -> None:
        """An unbatched request ran for ``seconds`` after waiting ``waited`` for a compute
        thread: ``executor_wait`` and ``session_run`` in one report."""
        if self.metrics is not None:
            self.metrics.session_run(model, version, seconds)
        self.statistics.direct_run(model, version, waited, seconds)

    def ran_at_once(self, model: str, version: str, rows: int, seconds: float) -> None:
        """A batched request run at once, as a batch of its own (no queue): ``queue_wait``
        of 0 and ``batch`` of its rows in one report."""
        if self.metrics is not None:
            self.metrics.queue_wait(model, version, 0.0)
            self.metrics.batch(model, version, rows, 0, seconds)
        self.statistics.direct_run(model, version, 0.0, seconds, rows)

    def queue_wait(self, model: str, version: str, seconds: float) -> None:
        if self.metrics is not None:
            self.metrics.queue_wait(model, version, seconds)
        self.statistics.queue(model, version, seconds)

    def queue_waits(self, model: str, version: str, waits: list[float]) -> None:
        """``queue_wait`` of each of a batch's requests, in one report."""
        if self.metrics is not None:
            self.metrics.queue_waits(model, version, waits)
        self.statistics.queues(model, version, waits)

    def executor_wait(self, model: str, version: str, seconds: float, batched: bool) -> None:
        """A request waited ``seconds`` for a compute thread: a direct request's whole queue
        time (counted), or added to a batched request's batching queue time."""
        self.statistics.queue(model, version, seconds, count=0 if batched else 1)

    def queue_depth(self, model: str, version: str, depth: int) -> None:
        if self.metrics is not None:
            self.metrics.queue_depth(model, version, depth)

    def rejected(self, model: str, version: str, reason: str) -> None:
        if self.metrics is not None:
            self.metrics.rejected(model, version, reason)


def _count_run(entry, rows: int, ns: int) -> None:
    """Counts one session run of ``rows`` rows taking ``ns`` in ``entry`` (lock held)."""
    entry.execution_count += 1
    infer = entry.stats["compute_infer"]
    infer.count += 1
    infer.ns += ns
    batch = entry.batches.get(rows)
    if batch is None:
        batch = entry.batches[rows] = {
            k: _Duration() for k in ("compute_input", "compute_infer", "compute_output")
        }
    # Inputs are validated per request before the run and outputs split per request after
    # it: a batch's own input and output times are 0.
    batch["compute_input"].count += 1
    infer = batch["compute_infer"]
    infer.count += 1
    infer.ns += ns
    batch["compute_output"].count += 1
