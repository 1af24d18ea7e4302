"""Session configuration and run metadata: ``ConfigProto``, ``RunOptions``, ``RunMetadata``.

Plain Python objects with the field names of TF's protocol buffers, so TF1 code that builds
them (``ConfigProto(allow_soft_placement=True)``, ``config.gpu_options.allow_growth = True``)
runs unchanged. ``threading`` is ``tf.config.threading`` (``engine.threads``): the process's
intra-op thread count.
"""

from __future__ import annotations

from engine import threads as threading

__all__ = [
    "threading",
    "ConfigProto",
    "GPUOptions",
    "GraphOptions",
    "OptimizerOptions",
    "RunOptions",
    "RunMetadata",
    "StepStats",
    "DeviceStepStats",
    "NodeExecStats",
]


class _Message:
    """A small mutable record with keyword construction and a readable repr."""

    _fields: tuple[tuple[str, object], ...] = ()

    def __init__(self, **kwargs):
        for name, default in self._fields:
            value = default() if callable(default) else default
            setattr(self, name, value)
        for k, v in kwargs.items():
            if k not in dict(self._fields):
                raise ValueError(f'Protocol message {type(self).__name__} has no "{k}" field.')
            setattr(self, k, v)

    def __repr__(self) -> str:
        body = ", ".join(f"{n}={getattr(self, n)!r}" for n, _ in self._fields)
        return f"{type(self).__name__}({body})"

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and all(
            getattr(self, n) == getattr(other, n) for n, _ in self._fields
        )

    def CopyFrom(self, other) -> None:  # noqa: N802 - protobuf's name
        for n, _ in self._fields:
            setattr(self, n, getattr(other, n))


class GPUOptions(_Message):
    _fields = (
        ("allow_growth", False),
        ("per_process_gpu_memory_fraction", 0.0),
        ("visible_device_list", ""),
    )


class OptimizerOptions(_Message):
    L1 = 0
    L0 = -1
    _fields = (
        ("opt_level", 0),
        ("do_common_subexpression_elimination", False),
        ("do_constant_folding", False),
    )


class GraphOptions(_Message):
    _fields = (("optimizer_options", OptimizerOptions), ("build_cost_model", 0))


class ConfigProto(_Message):
    """Session configuration. Accepted fields mirror TF1's ``tf.ConfigProto``.

    ``allow_soft_placement`` and ``log_device_placement`` control placement;
    ``gpu_options`` control GPU memory; ``intra_op_parallelism_threads`` sets the threads
    one op may use, process-wide, from the first session that asks (``engine.threads``);
    ``inter_op_parallelism_threads`` is recorded (ops of a step run one after another on
    the caller's thread).
    """

    _fields = (
        ("allow_soft_placement", False),
        ("log_device_placement", False),
        ("intra_op_parallelism_threads", 0),
        ("inter_op_parallelism_threads", 0),
        ("use_per_session_threads", False),
        ("device_count", dict),
        ("gpu_options", GPUOptions),
        ("graph_options", GraphOptions),
        ("operation_timeout_in_ms", 0),
        ("isolate_session_state", False),
        # Not in TF: the default RunOptions.max_intermediate_bytes of the session's runs.
        ("max_intermediate_bytes", 0),
    )


class RunOptions(_Message):
    NO_TRACE = 0
    SOFTWARE_TRACE = 1
    HARDWARE_TRACE = 2
    FULL_TRACE = 3
    _fields = (
        ("trace_level", 0),
        ("timeout_in_ms", 0),
        ("output_partition_graphs", False),
        ("report_tensor_allocations_upon_oom", False),
        # Not in TF: a limit on the bytes of a run's live intermediates (0: none), failing
        # the run with ResourceExhaustedError naming the op that would exceed it.
        ("max_intermediate_bytes", 0),
    )


class NodeExecStats(_Message):
    """One executed op: name, type, device, start time and duration (microseconds)."""

    _fields = (
        ("node_name", ""),
        ("op_type", ""),
        ("device", ""),
        ("all_start_micros", 0),
        ("op_start_rel_micros", 0),
        ("op_end_rel_micros", 0),
        ("all_end_rel_micros", 0),
        ("all_start_nanos", 0),
        ("all_end_rel_nanos", 0),
        ("timeline_label", ""),
    )


class DeviceStepStats(_Message):
    _fields = (("device", ""), ("node_stats", list))


class StepStats(_Message):
    _fields = (("dev_stats", list),)


class RunMetadata(_Message):
    """Filled by ``Session.run(..., run_metadata=md)`` when tracing is requested."""

    _fields = (("step_stats", StepStats), ("partition_graphs", list), ("cost_graph", None))
