"""A servable: one loaded model version with its long-lived engine Session(s).

Loading imports the SavedModel's serving graph, restores its variables, checks every
signature (a signature that would change a variable is refused), builds one
``make_callable`` per signature, finalizes the graph and runs warmup requests. After that a
request only executes a compiled plan: requests never add ops.

A version runs as one or more *instances* (Triton's instance groups): each is its own
Session on its own device ("cpu", "gpu:N" or, with "gpu", every GPU), loaded from the same
files. Each run goes to the least busy instance.
"""

from __future__ import annotations

import collections
import enum
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

import engine as tf
from engine import devices as engine_devices
from engine import errors as engine_errors
from engine import graph_inspection
from engine.formats import tflite as tflite_format
from engine.runtime import Cancellation
from service import tf_warmup
from service.config import ModelConfig
from service.errors import (
    Cancelled,
    DeadlineExceeded,
    Internal,
    InvalidInput,
    NotFound,
    ResourceExhausted,
    Unavailable,
)
from service.protocols.tf_examples import single_string_input
from service.tensors import TensorSpec, coerce, from_json_value

if TYPE_CHECKING:
    from engine.saving.meta_graph import MetaGraphDef
    from service.batching import Batcher, DirectScheduler

__all__ = ["Servable", "Signature", "VersionState"]

log = logging.getLogger("flowserve.servable")


class VersionState(enum.Enum):
    START = "START"
    LOADING = "LOADING"
    AVAILABLE = "AVAILABLE"
    UNLOADING = "UNLOADING"
    END = "END"


class InstancePool:
    """Picks the instance for each run: the least busy one (ties rotate), never blocking."""

    def __init__(self, labels: list[str]):
        self.labels = labels
        self.busy = [0] * len(labels)
        self.runs = [0] * len(labels)
        self._lock = threading.Lock()
        self._rotate = itertools.cycle(range(len(labels)))

    def acquire(self) -> int:
        with self._lock:
            start = next(self._rotate)
            n = len(self.busy)
            busy = self.busy
            best = min(((start + k) % n for k in range(n)), key=busy.__getitem__)
            self.busy[best] += 1
            self.runs[best] += 1
            return best

    def release(self, i: int) -> None:
        with self._lock:
            self.busy[i] -= 1


# Runs the compute-time estimate looks back over (see Signature.observe).
COST_WINDOW = 16


class Signature:
    """A servable signature: named inputs/outputs and, per instance, the callable that
    computes them."""

    def __init__(
        self,
        key: str,
        method_name: str,
        inputs: dict[str, TensorSpec],
        outputs: dict[str, TensorSpec],
        fn: Callable[..., list],
        pool: InstancePool | None = None,
    ):
        self.key = key
        self.method_name = method_name
        self.inputs = inputs
        self.outputs = outputs
        self.input_order = sorted(inputs)
        self.output_order = sorted(outputs)
        self.fns = [fn]
        # Changes variables (TF Serving's counter model): see ``make_stateful``
        self.stateful = False
        self.pinned = False  # another signature of the model changes variables
        self._state_lock = threading.Lock()
        # TF SavedModels: per instance, a callable taking inputs of any shape (see Servable)
        self.lenient_fns: list | None = None
        self.ordered_inputs = [inputs[a] for a in self.input_order]
        self.pool = pool
        # Seconds a run of ``cost_elements`` input elements takes, learned at warmup and kept
        # current from every run (None: never measured). Schedulers run requests estimated
        # under a small threshold on the event loop instead of handing them to a thread.
        self.cost_seconds: float | None = None
        self.cost_elements = 1
        self._recent_costs: collections.deque[float] = collections.deque(maxlen=COST_WINDOW)
        # On the CPU the estimate learns from the computing thread's CPU time, not wall
        # time: under load, wall time counts the waits for a core and for the GIL, so a
        # small model measured on a busy machine would never be judged cheap enough to run
        # inline. A GPU run waits for its device without using the CPU: it learns wall time.
        self.cpu_bound = True
        # Batchable: every input and output has an unknown leading (batch) dimension.
        self.batchable = all(
            s.dims is not None and len(s.dims) >= 1 and s.dims[0] is None
            for s in list(inputs.values()) + list(outputs.values())
        )

    def make_stateful(self) -> None:
        """Marks a signature that changes variables (an ``AssignAdd`` counter): it runs on
        instance 0 only, one request at a time, is never batched (a merged batch would run
        its update once for many requests) and never runs on the event loop."""
        self.stateful = True
        self.batchable = False

    def check_outputs(self, outputs: list[str] | None) -> list[str]:
        """The output aliases a request asks for (all, for None), each once, in order."""
        if outputs is None:
            return self.output_order
        unknown = [o for o in outputs if o not in self.outputs]
        if unknown:
            raise InvalidInput(
                f"unknown output(s) {unknown}; signature '{self.key}' has outputs "
                f"{self.output_order}"
            )
        return list(dict.fromkeys(outputs))

    def validate(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        """The request's inputs in feed order, cast and shape-checked."""
        if len(inputs) == 1 == len(self.input_order) and self.input_order[0] in inputs:
            alias = self.input_order[0]  # the common case, without the set arithmetic
            spec, arr = self.inputs[alias], inputs[alias]
            return [arr if spec.accepts(arr) else coerce(spec, arr)]
        missing = [a for a in self.input_order if a not in inputs]
        unknown = sorted(set(inputs) - set(self.inputs))
        if missing or unknown:
            parts = []
            if missing:
                parts.append(f"missing input(s) {missing}")
            if unknown:
                parts.append(f"unknown input(s) {unknown}")
            raise InvalidInput(
                f"signature '{self.key}' takes inputs {self.input_order}; " + " and ".join(parts)
            )
        return [coerce(self.inputs[a], inputs[a]) for a in self.input_order]

    def estimated_seconds(self, arrays: list[np.ndarray]) -> float | None:
        """The expected compute time of a run on ``arrays`` (scaled by input elements from
        the measured runs), or None before any run was measured."""
        if self.cost_seconds is None or self.stateful:
            return None
        elements = arrays[0].size if len(arrays) == 1 else sum(a.size for a in arrays)
        return self.cost_seconds * max(1.0, elements / self.cost_elements)

    def observe(
        self, arrays: list[np.ndarray], seconds: float, cpu_seconds: float | None = None
    ) -> None:
        """Folds a measured run into the cost estimate: the least of the last
        ``COST_WINDOW`` runs of the smallest input seen (``cost_elements`` elements), each
        its CPU time where given and the signature runs on the CPU, else its wall time. A
        smaller run than any before starts the window again at its size, so a lone row is
        judged on lone rows even after a bigger warmup.

        A bigger run (a batch) is left out. Its time per element is less than a lone row's
        (a dense layer reads its weights once per batch): folded in per element, a 64-row
        batch of a 784-2048-2048-10 MLP at 88 us per row made its 800 us rows look cheap
        enough for the loop, and whole 5.6 ms batches then ran on the event loop. Its whole
        time is far more than a row's: folded in whole, a small model's batches would push
        its lone rows (and so its batches) off the loop under load. Bigger inputs are
        estimated from the smallest in proportion (merging inputs never costs more than
        running them apart).

        The least, not an average: a run on a compute thread shares the machine with the
        event loop (on two hardware threads of one core, each runs slower), so an average
        taken while runs are on threads stays above what the same run costs on the loop,
        and a cheap model measured under load would never come back inline. A model that
        really got slower raises every run, and so the least, within the window."""
        if cpu_seconds is not None and self.cpu_bound:
            seconds = cpu_seconds
        elements = max(1, arrays[0].size if len(arrays) == 1 else sum(a.size for a in arrays))
        if self.cost_seconds is None or elements < self.cost_elements:
            self._recent_costs.clear()
            self.cost_elements = elements
        elif elements > self.cost_elements:
            return
        self._recent_costs.append(seconds)
        self.cost_seconds = min(self._recent_costs)

    def run(
        self,
        arrays: list[np.ndarray],
        instance: int | None = None,
        cancellation: Cancellation | None = None,
    ) -> dict[str, np.ndarray]:
        """Runs the signature (blocking; call off the event loop) on ``instance``, or on the
        least busy instance. ``cancellation`` (an engine ``Cancellation``) stops it early."""
        if self.stateful:
            with self._state_lock:  # one run at a time, on the instance holding the state
                return self._run_on(0, arrays, cancellation)
        if self.pinned:  # the model's state lives on instance 0: reads see it there
            return self._run_on(0, arrays, cancellation)
        return self._run_on(instance, arrays, cancellation)

    def _run_on(self, instance, arrays, cancellation) -> dict[str, np.ndarray]:
        fns = self.fns
        if self.lenient_fns is not None and not all(
            spec.shape_matches(a) for spec, a in zip(self.ordered_inputs, arrays)
        ):
            fns = self.lenient_fns
        try:
            if instance is not None:
                values = fns[instance](*arrays, cancellation=cancellation)
            elif self.pool is None:
                values = fns[0](*arrays, cancellation=cancellation)
            else:
                i = self.pool.acquire()
                try:
                    values = fns[i](*arrays, cancellation=cancellation)
                finally:
                    self.pool.release(i)
        except (engine_errors.InvalidArgumentError, engine_errors.OutOfRangeError) as e:
            raise InvalidInput(f"model rejected the input: {_first_line(e)}") from None
        except engine_errors.DeadlineExceededError as e:
            raise DeadlineExceeded(
                f"deadline exceeded running the model: {_first_line(e)}"
            ) from None
        except engine_errors.CancelledError as e:
            raise Cancelled(f"the run was cancelled: {_first_line(e)}") from None
        except engine_errors.ResourceExhaustedError as e:
            raise ResourceExhausted(
                f"out of resources running the model: {_first_line(e)}"
            ) from None
        except engine_errors.OpError as e:
            raise Internal(f"model failed: {_first_line(e)}") from None
        out = dict(zip(self.output_order, values))
        for a, v in out.items():
            if v.__class__ is not np.ndarray:  # a 0-d fetch comes as a numpy scalar
                # (a string scalar as Python bytes: kept as the object arrays strings are)
                v = out[a] = np.asarray(v, dtype=object if isinstance(v, (bytes, str)) else None)
            if v.dtype.kind in "SU":
                out[a] = v.astype(object)
        return out


def _first_line(e: Exception) -> str:
    text = str(e)
    return text.splitlines()[0] if text else type(e).__name__


class Servable:
    """One model version: its state, session and signatures."""

    def __init__(
        self,
        model: str,
        version: int,
        path: str | os.PathLike,
        config: ModelConfig,
        device: str = "cpu",
    ):
        self.model = model
        self.version = version
        self.path = Path(path)
        self.config = config
        self.device = device  # as requested: "cpu", "gpu", "gpu:N" (or a registered type)
        self.state = VersionState.START
        self.error: str | None = None
        self.load_seconds: float | None = None
        self.signatures: dict[str, Signature] = {}
        self.default_signature: str | None = None
        self.instances: list[str] = []  # the device of each loaded instance ("gpu:0", ...)
        self.device_note: str | None = None  # why it runs elsewhere than requested
        self.pool: InstancePool | None = None
        self._sessions: list = []
        self._graph = None
        self._inflight = 0
        # Requests take and give back the plain lock (no Python frames per request); unload
        # waits on the condition over the same lock, notified only while not AVAILABLE.
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self.scheduler = None  # set by the manager: runs requests (batching or direct)
        # Cancelled when the manager gives up on the load (load_timeout): stops warmup runs.
        self.load_cancellation = Cancellation()

    def __repr__(self) -> str:
        return f"<Servable {self.model}:{self.version} {self.state.value}>"

    @property
    def graph(self) -> tf.Graph | None:
        return self._graph

    # -- lifecycle ------------------------------------------------------------------------
    def load(self) -> bool:
        """Loads the SavedModel (blocking); True on success. On failure sets state END and
        ``error``. Success leaves the state LOADING: the manager marks the version AVAILABLE
        once requests can reach it (its scheduler is attached)."""
        self.state = VersionState.LOADING
        t0 = time.perf_counter()
        try:
            self._load()
        except Exception as e:  # noqa: BLE001 - any load failure is reported, not raised
            self.state = VersionState.END
            self.error = _first_line(e) if not isinstance(e, LoadError) else str(e)
            self._close_session()
            log.error(
                "model %s version %d failed to load: %s", self.model, self.version, self.error
            )
            return False
        self.load_seconds = time.perf_counter() - t0
        return True

    def publish(self, scheduler: Batcher | DirectScheduler) -> None:
        """Attaches the scheduler, then makes the version AVAILABLE (in that order)."""
        self.scheduler = scheduler
        self.state = VersionState.AVAILABLE
        log.info(
            "model %s version %d available (%d signature(s), %.2fs)",
            self.model,
            self.version,
            len(self.signatures),
            self.load_seconds or 0.0,
        )

    def _instance_configs(self) -> list[tuple[str, object]]:
        """(device label, session ConfigProto) for each instance to load."""
        n = self.config.instances
        soft = self.config.allow_soft_placement
        limit = self.config.max_intermediate_bytes  # 0: none
        accelerators = list(engine_devices.DEVICE_TYPES)
        kind, _, index = self.device.partition(":")
        cpu = [
            (
                "cpu",
                tf.ConfigProto(
                    allow_soft_placement=soft,
                    device_count={t: 0 for t in accelerators},
                    max_intermediate_bytes=limit,
                ),
            )
            for _ in range(n)
        ]
        if kind == "cpu":
            return cpu
        device_type = kind.upper()
        count, reason = engine_devices.device_count(device_type)
        wanted = list(range(count)) if not index else [int(index)]
        if count == 0 or wanted[-1] >= count:
            why = (
                reason
                if count == 0
                else (
                    f"this machine has {count} {kind.upper()} device(s) "
                    f"({', '.join(f'{kind}:{i}' for i in range(count))})"
                )
            )
            if soft:
                self.device_note = (
                    f"device {self.device} unavailable ({why}); running on "
                    "the CPU (allow_soft_placement)"
                )
                log.warning("model %s version %d: %s", self.model, self.version, self.device_note)
                return cpu
            raise LoadError(
                f"device {self.device} requested, but {why}. Set "
                '"allow_soft_placement": true in the model\'s config.json to fall '
                'back to the CPU, or set "device": "cpu"'
            )
        return [
            (
                f"{kind}:{k}",
                tf.ConfigProto(
                    allow_soft_placement=soft,
                    device_count={t: 0 for t in accelerators if t != device_type},
                    gpu_options=tf.GPUOptions(visible_device_list=str(k)),
                    max_intermediate_bytes=limit,
                ),
            )
            for k in wanted
            for _ in range(n)
        ]

    def _load(self) -> None:
        configs = self._instance_configs()
        for i, (label, config) in enumerate(configs):
            graph = tf.Graph()
            session = tf.Session(graph=graph, config=config)
            self._sessions.append(session)
            if i == 0:
                self._graph = graph
            meta = self._load_meta(session)
            self._add_instance(i, graph, session, meta)
            graph.finalize()
            self.instances.append(label)
        on_cpu = all(label.partition(":")[0] == "cpu" for label in self.instances)
        stateful = any(sig.stateful for sig in self.signatures.values())
        for sig in self.signatures.values():
            sig.cpu_bound = on_cpu
            sig.pinned = stateful
        if len(configs) > 1:
            self.pool = InstancePool(self.instances)
            for sig in self.signatures.values():
                sig.pool = self.pool
        self._warmup()

    @property
    def _tensorflow_format(self) -> bool:
        """Whether the version is TensorFlow's own SavedModel (served with TF's rules)."""
        return (
            not (self.path / "saved_model.msgpack").is_file()
            and (self.path / "saved_model.pb").is_file()
        )

    def _load_meta(self, session: tf.Session) -> MetaGraphDef:
        """Loads the version into ``session``: a SavedModel, else an ONNX ``model.onnx``,
        else a TensorFlow Lite ``model.tflite`` (TF Serving's layout for TFLite models)."""
        if (
            not (self.path / "saved_model.msgpack").is_file()
            and (self.path / tf.onnx.MODEL_FILENAME).is_file()
        ):
            try:
                return tf.onnx.load(session, str(self.path))
            except tf.onnx.OnnxFormatError as e:
                raise LoadError(f"cannot load {tf.onnx.MODEL_FILENAME}: {e}") from None
        saved = any((self.path / n).is_file() for n in ("saved_model.msgpack", "saved_model.pb"))
        if not saved and (self.path / tflite_format.MODEL_FILENAME).is_file():
            try:
                return tflite_format.load(session, str(self.path))
            except tflite_format.TFLiteFormatError as e:
                raise LoadError(f"cannot load {tflite_format.MODEL_FILENAME}: {e}") from None
        return tf.saved_model.load(
            session,
            [tf.saved_model.SERVING],
            str(self.path),
            options=tf.saved_model.LoadOptions(optimize=self.config.optimize),
        )

    def _add_instance(self, i: int, graph, session, meta) -> None:
        """Builds the signatures' callables on instance ``i`` (defines them when i == 0)."""
        if not meta.signature_def:
            raise LoadError("the SavedModel has no signatures to serve")
        for key, sig in sorted(meta.signature_def.items()):
            inputs = {
                a: TensorSpec(a, i.name, i.engine_dtype, i.shape) for a, i in sig.inputs.items()
            }
            outputs = {
                a: TensorSpec(a, i.name, i.engine_dtype, i.shape) for a, i in sig.outputs.items()
            }
            if not outputs:
                raise LoadError(f"signature {key!r} has no outputs")
            in_tensors = [graph.get_tensor_by_name(inputs[a].tensor_name) for a in sorted(inputs)]
            out_tensors = [
                graph.get_tensor_by_name(outputs[a].tensor_name) for a in sorted(outputs)
            ]
            writes = sorted(
                {
                    f"{op.name} ({op.type})"
                    for op in graph_inspection.variable_writes(out_tensors, feeds=in_tensors)
                }
            )
            if writes and i == 0:
                log.info(
                    "model %s version %d: signature %r changes variables (%s): served as TF "
                    "Serving serves it, one request at a time on one instance, never batched "
                    "or warmed up with made-up inputs",
                    self.model,
                    self.version,
                    key,
                    ", ".join(writes[:5]),
                )
            fn = session.make_callable(out_tensors, feed_list=in_tensors, accept_options=True)
            lenient = None
            if self._tensorflow_format:
                # TF Serving feeds a request of another shape than the signature's and lets
                # the graph decide ([1.0, 2.0, 5.0] to half_plus_two's [?, 1] input gives
                # [2.5, 3.0, 4.5]); such requests take this callable, the rest ``fn``
                for spec in inputs.values():
                    spec.trust_graph = True
                lenient = session.make_callable(
                    out_tensors, feed_list=in_tensors, accept_options=True, check_feed_shapes=False
                )
            if i == 0:
                self.signatures[key] = Signature(key, sig.method_name, inputs, outputs, fn)
                self.signatures[key].lenient_fns = [] if lenient is not None else None
                if writes:
                    self.signatures[key].make_stateful()
            else:
                self.signatures[key].fns.append(fn)
            if lenient is not None:
                self.signatures[key].lenient_fns.append(lenient)
        if i == 0:
            self.default_signature = (
                tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY
                if tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY in self.signatures
                else sorted(self.signatures)[0]
            )

    def _warmup(self) -> None:
        warmup = self.config.warmup
        if warmup is False:
            return
        tf_serving_file = tf_warmup.warmup_path(self.path)
        if tf_serving_file is not None:
            self._tf_serving_warmup(tf_serving_file)
        if isinstance(warmup, list):
            for i, req in enumerate(warmup):
                key = req.get("signature_name") or self.default_signature
                sig = self.signatures.get(key)
                if sig is None:
                    raise LoadError(f"warmup request {i} names unknown signature {key!r}")
                try:
                    arrays = sig.validate(
                        {
                            a: from_json_value(v, f"warmup input '{a}'")
                            for a, v in req["inputs"].items()
                        }
                    )
                    for k in range(1 if sig.stateful else len(sig.fns)):
                        sig.run(arrays, instance=k, cancellation=self.load_cancellation)
                    self._learn_cost(sig, arrays)
                except Exception as e:  # noqa: BLE001
                    raise LoadError(f"warmup request {i} failed: {_first_line(e)}") from None
            return
        if tf_serving_file is not None:
            return  # the model's own warmup requests replace the synthetic ones
        for sig in self.signatures.values():
            if sig.stateful:
                continue  # made-up inputs would change the model's state
            arrays = [_synthetic(spec) for spec in (sig.inputs[a] for a in sig.input_order)]
            try:
                for k in range(len(sig.fns)):
                    sig.run(arrays, instance=k, cancellation=self.load_cancellation)
                self._learn_cost(sig, arrays)
            except Exception as e:  # noqa: BLE001 - synthetic inputs may not suit every model
                # Empty strings are rarely valid images, WAVs or tf.Examples: expected, so
                # not a warning (a numeric signature failing on zeros is worth one)
                strings = any(s.dtype.base_dtype is tf.string for s in sig.inputs.values())
                (log.info if strings else log.warning)(
                    "synthetic warmup of %s:%d signature %r failed (serving anyway; a "
                    "warmup file or config warmup requests give real inputs): %s",
                    self.model,
                    self.version,
                    sig.key,
                    _first_line(e),
                )

    def _tf_serving_warmup(self, path: Path) -> None:
        """Runs the requests of TF Serving's warmup file on every instance; any failure
        (a malformed file, an unknown signature, a failing request) fails the load."""
        try:
            requests = tf_warmup.read_warmup(path)
        except tf_warmup.WarmupError as e:
            raise LoadError(str(e)) from None
        costed: set[str] = set()
        for req in requests:
            where = f"{tf_warmup.WARMUP_FILE} record {req.record}"
            key = req.signature_name or self.default_signature
            sig = self.signatures.get(key)
            if sig is None:
                raise LoadError(f"{where} names unknown signature {key!r}")
            try:
                if req.method is not None:
                    if sig.method_name != req.method:
                        raise InvalidInput(
                            f"signature {key!r} has method_name {sig.method_name!r}, "
                            f"not {req.method!r}"
                        )
                    inputs = {single_string_input(sig): req.examples}
                else:
                    inputs = req.inputs
                arrays = sig.validate(inputs)
                for k in range(1 if sig.stateful else len(sig.fns)):
                    sig.run(arrays, instance=k, cancellation=self.load_cancellation)
                if key not in costed:  # once per signature: a file may hold 1000 records
                    costed.add(key)
                    self._learn_cost(sig, arrays)
            except Exception as e:  # noqa: BLE001 - reported as the load's failure
                raise LoadError(f"{where} failed: {_first_line(e)}") from None
        log.info(
            "model %s version %d: ran %d warmup request(s) from %s",
            self.model,
            self.version,
            len(requests),
            tf_warmup.WARMUP_FILE,
        )

    def _learn_cost(self, sig: Signature, arrays: list[np.ndarray]) -> None:
        """Measures a warmed-up signature's compute time: the fastest of a few runs."""
        if sig.stateful:
            return  # each run would change the state; such signatures never run inline
        best = best_cpu = None
        for _ in range(3):
            t0, c0 = time.perf_counter(), time.thread_time()
            sig.run(arrays, instance=0, cancellation=self.load_cancellation)
            took, cpu = time.perf_counter() - t0, time.thread_time() - c0
            best = took if best is None else min(best, took)
            best_cpu = cpu if best_cpu is None else min(best_cpu, cpu)
        sig.cost_seconds = None
        sig.observe(arrays, best, best_cpu)

    def unload(self, drain_timeout: float = 30.0) -> None:
        """Waits for in-flight requests (up to ``drain_timeout``), then frees the session."""
        self.state = VersionState.UNLOADING
        deadline = time.monotonic() + drain_timeout
        with self._idle:
            while self._inflight and time.monotonic() < deadline:
                self._idle.wait(timeout=max(0.0, deadline - time.monotonic()))
        self._close_session()
        self.signatures = {}
        self.state = VersionState.END

    def discard(self, error: str) -> None:
        """Frees whatever a load that was given up on (load_timeout) left behind."""
        self._close_session()
        self.signatures = {}
        self.state = VersionState.END
        self.error = error

    def _close_session(self) -> None:
        for session in self._sessions:
            session.close()
        self._sessions = []

    def device_status(self) -> list[dict]:
        """Per device used: its name, the instances on it and (for accelerators) memory."""
        out = []
        seen: dict[str, dict] = {}
        for i, label in enumerate(self.instances):
            entry = seen.get(label)
            if entry is None:
                entry = seen[label] = {"device": label, "instances": 0}
                if self._sessions and label != "cpu":
                    memory = _device_memory(self._sessions[i])
                    if memory:
                        entry["memory_in_use_bytes"] = memory["in_use"]
                        entry["memory_limit_bytes"] = memory["limit"]
                out.append(entry)
            entry["instances"] += 1
        return out

    def accelerator_devices(self) -> list:
        """The engine Devices (not the host) that this version's sessions run on."""
        found = {}
        for session in self._sessions:
            for d in session.list_devices():
                if not d.is_host:
                    found.setdefault(id(d), d)
        return list(found.values())

    # -- request accounting ---------------------------------------------------------------
    def acquire(self) -> None:
        with self._lock:
            if self.state is not VersionState.AVAILABLE:
                raise Unavailable(
                    f"model {self.model} version {self.version} is {self.state.value}"
                )
            self._inflight += 1

    def release(self) -> None:
        with self._lock:
            self._inflight -= 1
            # unload() sets the state before it waits (under this lock): a release that
            # still reads AVAILABLE happened before that wait looked at the count.
            if not self._inflight and self.state is not VersionState.AVAILABLE:
                self._idle.notify_all()

    def signature(self, key: str | None) -> Signature:
        key = key or self.default_signature
        sig = self.signatures.get(key)
        if sig is None:
            raise NotFound(
                f"signature '{key}' not found in model {self.model} version "
                f"{self.version} (available: {sorted(self.signatures)})"
            )
        return sig


class LoadError(Exception):
    """A model version cannot be served; the message says why."""


def _device_memory(session) -> dict | None:
    for d in session.list_devices():
        if not d.is_host:
            try:
                return d.memory_info()
            except Exception:  # noqa: BLE001 - status must not fail on a driver hiccup
                return None
    return None


def _synthetic(spec: TensorSpec) -> np.ndarray:
    dims = spec.dims
    shape = [] if dims is None else [1 if d is None else d for d in dims]
    if spec.dtype.base_dtype is tf.string:
        arr = np.empty(shape, dtype=object)
        arr.fill(b"")
        return arr
    return np.zeros(shape, dtype=spec.dtype.base_dtype.np)
