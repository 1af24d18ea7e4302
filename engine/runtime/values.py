"""Runtime values: variable storage, device copies and the device checks of checked mode."""

from __future__ import annotations

import numpy as np

from engine import errors
from engine.devices import Device

__all__ = [
    "VariableSlot",
    "Copy",
    "DeviceChecked",
    "deref",
    "deref_to",
    "guard_variable_device",
    "to_host",
]

_ndarray = np.ndarray


class VariableSlot:
    """The storage of one variable in one session (what a TF1 ref tensor points to)."""

    __slots__ = ("name", "value", "shape", "dtype", "device", "__weakref__")

    def __init__(self, name, dtype, shape, device):
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self.device = device
        self.value = None

    def read(self):
        v = self.value
        if v is None:
            raise errors.FailedPreconditionError(
                None, None, f"Attempting to use uninitialized value {self.name}"
            )
        return v

    def __repr__(self) -> str:
        state = "uninitialized" if self.value is None else f"shape={self.value.shape}"
        return f"<VariableSlot {self.name} {state}>"


def deref(ref):
    return ref.read() if ref.__class__ is VariableSlot else ref


def deref_to(device, ref):
    """Reads a variable whose device is known only at run time, as a value on ``device``."""
    v = ref.read() if ref.__class__ is VariableSlot else ref
    return device.to_device(v)


def guard_variable_device(kernel, device, ref_indices, *args):
    """Refuses to write a variable (captured by a control-flow body) from another device."""
    for i in ref_indices:
        slot = args[i]
        if slot.__class__ is VariableSlot and slot.device is not device:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"Variable {slot.name} lives on {slot.device.name}, but this op "
                f"writing it runs on {device.name} inside a control-flow body. "
                "Place the cond/while_loop on the variable's device "
                "(with tf.device(...)).",
            )
    return kernel(*args)


class Copy:
    """A plan step moving a value from one device to another."""

    __slots__ = ("src", "dst", "tensor_name", "_fn")

    def __init__(self, src: Device, dst: Device, tensor_name: str):
        self.src = src
        self.dst = dst
        self.tensor_name = tensor_name
        self._fn = src.to_host if dst.is_host else dst.to_device

    def __call__(self, value):
        return self._fn(value)

    def __repr__(self) -> str:
        return f"<copy {self.tensor_name} {self.src.short_name} -> {self.dst.short_name}>"


def _on_device(device: Device, value) -> bool:
    if isinstance(value, (_ndarray, np.generic)) or hasattr(value, "__cuda_array_interface__"):
        return device.owns(value)
    return True  # not an array: variable references, handles and Python objects


def _describe(value) -> str:
    return f"{type(value).__module__}.{type(value).__name__}" + (
        f" on TEST:{value.device_index}" if hasattr(value, "device_index") else ""
    )


class DeviceChecked:
    """Checked mode: a kernel must read and return arrays of the device it is placed on."""

    __slots__ = ("kernel", "device", "op", "refs", "host_in")

    def __init__(self, kernel, device, op, ins, ref_in, host_in=frozenset()):
        self.kernel = kernel
        self.device = device
        self.op = op
        self.refs = frozenset(range(len(ins))) if ref_in == "all" else frozenset(ref_in)
        self.host_in = frozenset() if device.is_host else host_in

    def __call__(self, *args):
        op, device = self.op, self.device
        for i, v in enumerate(args):
            if i in self.host_in:
                if type(v) is not np.ndarray:
                    raise errors.InternalError(
                        None,
                        op,
                        f"{op._type} op '{op._name}' placed on {device.name} was given "
                        f"input {i} as {_describe(v)}; it is read on the host (a missing copy)",
                    )
            elif i not in self.refs and not _on_device(device, v):
                raise errors.InternalError(
                    None,
                    op,
                    f"{op._type} op '{op._name}' placed on {device.name} was given "
                    f"input {i} as {_describe(v)} (a missing copy)",
                )
        r = self.kernel(*args)
        for k, v in enumerate(r if isinstance(r, (tuple, list)) else (r,)):
            if not _on_device(device, v):
                raise errors.InternalError(
                    None,
                    op,
                    f"{op._type} kernel placed on {device.name} returned output {k} "
                    f"as {_describe(v)}: kernels must build results with xp, "
                    "not numpy",
                )
        return r


def to_host(v):
    """A fetched value that is not a host ndarray, as the caller gets it: a device array
    downloaded, a variable read (and copied), anything else unchanged."""
    if hasattr(v, "get") and hasattr(v, "__cuda_array_interface__"):
        v = v.get()
        return v[()] if v.ndim == 0 else v
    if v.__class__ is VariableSlot:
        v = v.read()
        return v[()] if v.ndim == 0 else v.copy()
    return v
