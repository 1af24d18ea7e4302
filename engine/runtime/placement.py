"""Placement: which device runs each op of a plan (TF1's placer for one process)."""

from __future__ import annotations

from engine import errors
from engine.devices import Device, gpu_unavailable_reason
from engine.framework.device_spec import DeviceSpec
from engine.framework.graph import Operation, Tensor

__all__ = ["Placer", "host_input_positions", "variable_device"]


class Placer:
    """Places ops on a session's devices.

    Ops reading or writing a variable through its reference go where the variable is; other
    ops go to their requested device when it exists and has a kernel for them, else --
    without a request -- to the default device (GPU:0 when there is a GPU) when it can run
    them, else to the CPU. ``allow_soft_placement`` turns an unsatisfiable request into a
    device of the same type, else the op's default device.
    """

    def __init__(self, devices: list[Device], soft: bool):
        self.devices = devices
        self.host = devices[0]
        self.soft = soft
        self.default_device = next((d for d in devices if d.kernel_type == "GPU"), self.host)
        self._spec_cache: dict[str, tuple] = {}

    def supports(self, op: Operation, device: Device) -> bool:
        """Can ``op`` run on ``device``: a kernel for its type, and no string tensors off
        the host?"""
        if device.kernel_type not in op._opdef.flags.device_types:
            return False
        return device.is_host or not _holds_host_only_values(op)

    def place(self, order, ref_home: dict, default: Device) -> dict[Operation, Device]:
        """A device for each op of ``order``; ``ref_home`` as in ``variable_device``."""
        placement: dict[Operation, Device] = {}
        host_fed = _only_read_on_host(order)
        for op in order:
            if op in host_fed and self._stays_on_host(op, placement):
                placement[op] = self.host
                continue
            colocate = self._variable_home(op, ref_home, placement)
            if colocate is not None:
                if self.supports(op, colocate):
                    placement[op] = colocate
                    continue
                if op._opdef.flags.writes_variables:
                    raise errors.InvalidArgumentError(
                        op.node_def,
                        op,
                        f"Cannot assign a device for operation {op._name}: "
                        f"it writes a variable on {colocate.name}, and "
                        f"{op._type} has no {colocate.kernel_type} kernel",
                    )
            placement[op] = self._device_for(op, default)
        return placement

    def _stays_on_host(self, op, placement) -> bool:
        """An op whose outputs are only read on the host (a shape constant, say) runs there
        when it requests no device and reads nothing from another device: its value then
        never goes to a GPU and back."""
        if op._device or not self.supports(op, self.host):
            return False
        return all(placement.get(t._op, self.host) is self.host for t in op._inputs)

    def _variable_home(self, op, ref_home, placement) -> Device | None:
        """The device of the variable ``op`` reads or writes through a reference, if any."""
        if op._type == "Identity" and op._inputs and op._inputs[0]._dtype._is_ref:
            return variable_device(op._inputs[0], ref_home, placement)
        ref_inputs = op._opdef.flags.ref_inputs
        if ref_inputs and ref_inputs != "all":
            for i in ref_inputs:
                if i < len(op._inputs) and op._inputs[i]._dtype._is_ref:
                    return variable_device(op._inputs[i], ref_home, placement)
        return None

    def _device_for(self, op, default: Device) -> Device:
        requested = op._device
        if not requested:
            return default if self.supports(op, default) else self.host
        found, spec = self._matching_devices(requested)
        chosen = next((d for d in found if self.supports(op, d)), None)
        if chosen is None and self.soft:
            chosen = next(
                (
                    d
                    for d in self.devices
                    if d.device_type == spec.device_type and self.supports(op, d)
                ),
                None,
            )
            if chosen is None:
                chosen = default if self.supports(op, default) else self.host
        if chosen is None:
            raise self._placement_error(op, requested, found, spec)
        return chosen

    def _matching_devices(self, requested: str) -> tuple[list[Device], DeviceSpec]:
        cached = self._spec_cache.get(requested)
        if cached is not None:
            return cached
        spec = DeviceSpec.from_string(requested)
        if (
            spec.job not in (None, "localhost")
            or spec.replica not in (None, 0)
            or spec.task not in (None, 0)
        ):
            found = []
        elif spec.device_type is None:
            found = [self.default_device] + [
                d for d in self.devices if d is not self.default_device
            ]
        else:
            found = [
                d
                for d in self.devices
                if d.device_type == spec.device_type
                and (spec.device_index in (None, "*") or d.index == spec.device_index)
            ]
        self._spec_cache[requested] = (found, spec)
        return found, spec

    def check_requests(self, order) -> None:
        """The single-device fast path skips placement, but still refuses (as TF does) an
        explicit device request no device can satisfy, unless ``allow_soft_placement``."""
        if self.soft:
            return
        for op in order:
            requested = op._device
            if not requested:
                continue
            found, spec = self._matching_devices(requested)
            if not any(self.supports(op, d) for d in found):
                raise self._placement_error(op, requested, found, spec)

    def _placement_error(self, op, requested, found, spec) -> errors.InvalidArgumentError:
        hint = (
            " Set allow_soft_placement=True in the session's ConfigProto to fall back to "
            "a device that can run it."
        )
        if not found:
            names = ", ".join(d.name for d in self.devices)
            msg = (
                f"Cannot assign a device for operation {op._name}: {{{{node {op._name}}}}} "
                f"was explicitly assigned to {requested} but available devices are "
                f"[ {names} ]. Make sure the device specification refers to a valid "
                "device."
            )
            if spec.device_type == "GPU" and not any(d.device_type == "GPU" for d in self.devices):
                reason = gpu_unavailable_reason() or "no GPU is configured for this session"
                msg += f" The requested device appears to be a GPU, but {reason}."
        else:
            msg = (
                f"Cannot assign a device for operation {op._name}: Could not satisfy "
                f"explicit device specification '{requested}' because no supported "
                f"kernel for {spec.device_type} devices is available."
            )
            if found[0].kernel_type in op._opdef.flags.device_types:
                msg += " String tensors live in host memory only."
        return errors.InvalidArgumentError(op.node_def, op, msg + hint)


def host_input_positions(op: Operation) -> frozenset[int]:
    """The positions of ``op``'s inputs read on the host (``OpFlags.host_inputs``, negative
    positions counted from the end)."""
    declared = op._opdef.flags.host_inputs
    if not declared:
        return frozenset()
    n = len(op._inputs)
    return frozenset(i % n for i in declared if -n <= i < n)


def _only_read_on_host(order) -> set[Operation]:
    """The ops of ``order`` whose values only the host reads: ops with integer outputs (shape
    values) and readers, each of which reads them at a host-input position or is such an
    op itself (a shape packed from constants, say)."""
    readers: dict[Operation, list] = {}
    for op in order:
        for i, t in enumerate(op._inputs):
            readers.setdefault(t._op, []).append((op, i))
    wanted: set[Operation] = set()
    for op in reversed(order):
        found = readers.get(op)
        if found and all(t._dtype.base_dtype.name in _SHAPE_TYPES for t in op._outputs):
            if all(r in wanted or i in host_input_positions(r) for r, i in found):
                wanted.add(op)
    return wanted


_SHAPE_TYPES = frozenset(("int32", "int64"))


# Tensors that live in host memory only: strings, and resource handles (tables, datasets),
# which are Python objects.
_HOST_ONLY = frozenset(("string", "resource"))


def _holds_host_only_values(op: Operation) -> bool:
    for t in op._inputs:
        if t._dtype.base_dtype.name in _HOST_ONLY:
            return True
    for t in op._outputs:
        if t._dtype.base_dtype.name in _HOST_ONLY:
            return True
    return False


def variable_device(t: Tensor, ref_home: dict, placement) -> Device | None:
    """The device of the variable a reference tensor points to. ``ref_home`` maps the
    plan's fed tensors to the device of the variable they carry into a function body (None:
    not a variable, or known only at run time)."""
    while True:
        if t in ref_home:
            return ref_home[t]
        op = t._op
        nxt = None
        for x in op._inputs:
            if x._dtype._is_ref:
                nxt = x
                break
        if nxt is None:
            return placement.get(op)
        t = nxt
