"""Devices a session can place ops on, and moving arrays between them.

Every session has ``CPU:0`` (numpy). ``GPU:n`` devices exist when cupy is installed and sees
CUDA devices; cupy is imported only when a session first looks for GPUs, so ``import engine``
and every CPU path work without it. Other device types can be registered with
``register_device_type``: the test suite registers ``TEST`` devices that run numpy kernels on
their own array type and behave like GPUs for placement (string tensors cannot live on them,
ops without a GPU kernel cannot run on them), so placement, soft placement and cross-device
copies are exercised on machines without a GPU.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

import numpy as np

__all__ = [
    "Device",
    "register_device_type",
    "unregister_device_type",
    "local_devices",
    "cupy_or_none",
    "gpu_count",
    "gpu_unavailable_reason",
    "device_count",
    "DEVICE_TYPES",
    "MemoryConfig",
    "to_host",
]


class Device:
    """A device: its canonical name, type, index, array module and copy functions.

    ``kernel_type`` is the device type whose kernels it runs ("CPU" or "GPU"): an op can be
    placed on the device only if its registry entry lists that type. Non-host devices hold
    no string tensors. ``context`` (optional) is a context-manager factory entered around every
    kernel and copy that runs on the device (cupy's current-device switch for GPUs past 0).
    """

    __slots__ = (
        "name",
        "device_type",
        "index",
        "xp",
        "kernel_type",
        "_to_device",
        "_to_host",
        "array_types",
        "is_host",
        "memory",
        "context",
        "_owns",
        "_memory_info",
        "physical_index",
    )

    def __init__(
        self,
        device_type: str,
        index: int,
        xp,
        kernel_type: str,
        to_device: Callable | None = None,
        to_host: Callable | None = None,
        array_types: tuple = (np.ndarray,),
        memory: MemoryConfig | None = None,
        context: Callable | None = None,
        owns: Callable | None = None,
        memory_info: Callable | None = None,
        physical_index: int | None = None,
    ):
        self.device_type = device_type
        self.index = index
        # The device's index on the machine: differs from ``index`` when
        # gpu_options.visible_device_list remaps devices for a session.
        self.physical_index = index if physical_index is None else physical_index
        self.xp = xp
        self.kernel_type = kernel_type
        self.name = f"/job:localhost/replica:0/task:0/device:{device_type}:{index}"
        self._to_device = to_device
        self._to_host = to_host
        self.array_types = array_types
        self.is_host = to_device is None
        self.memory = memory
        self.context = context
        self._owns = owns
        self._memory_info = memory_info

    @property
    def short_name(self) -> str:
        return f"{self.device_type}:{self.index}"

    @property
    def physical_name(self) -> str:
        """``gpu:1``: the machine's device, the same in every session."""
        return f"{self.device_type.lower()}:{self.physical_index}"

    @property
    def memory_limit_bytes(self) -> int:
        info = self.memory_info()
        return int(info.get("limit", 0)) if info else 0

    def to_device(self, value):
        """``value`` (an array on any device, or a host array) as an array on this device."""
        if self._to_device is None:
            return value if type(value) is np.ndarray else to_host(value)
        return self._to_device(value)

    def to_host(self, value) -> np.ndarray:
        """``value`` (an array on this device) as a numpy array."""
        if self._to_host is None:
            return value
        return self._to_host(value)

    def owns(self, value) -> bool:
        """Is ``value`` an array living on this device? (Used by checked mode.)"""
        if self._owns is not None:
            return self._owns(value)
        return type(value) is np.ndarray or isinstance(value, np.generic)

    def memory_info(self) -> dict | None:
        """``{"in_use": bytes, "reserved": bytes, "limit": bytes}`` for devices with their
        own memory (0 limit: none set); None for the host."""
        return self._memory_info() if self._memory_info is not None else None

    def wrap(self, kernel: Callable) -> Callable:
        """``kernel`` made to run with this device current."""
        context = self.context
        if context is None:
            return kernel

        def on_device(*args, _kernel=kernel):
            with context():
                return _kernel(*args)

        on_device.__wrapped__ = kernel
        return on_device

    def __repr__(self) -> str:
        return f"<Device {self.name}>"


def is_device_array(value) -> bool:
    """Is ``value`` an array that does not live in host memory?"""
    if type(value) is np.ndarray:
        return False
    return hasattr(value, "__cuda_array_interface__") or (
        isinstance(value, np.ndarray) and hasattr(value, "device_index")
    )


def to_host(value):
    """Any device array as a numpy array (numpy arrays and other values pass through)."""
    if type(value) is np.ndarray:
        return value
    if hasattr(value, "__cuda_array_interface__") and hasattr(value, "get"):
        return value.get()
    if isinstance(value, np.ndarray):  # an ndarray subclass (test devices)
        return np.array(value, copy=True, subok=False)
    return value


# -----------------------------------------------------------------------------------------
# Device types
# -----------------------------------------------------------------------------------------

# device_type -> factory(config) -> list[Device]; GPU first, so it is the default device.
DEVICE_TYPES: dict[str, Callable] = {}
_lock = threading.Lock()


def register_device_type(device_type: str, factory: Callable) -> None:
    """Adds a device type: ``factory(config)`` returns its devices for a session."""
    with _lock:
        if device_type in DEVICE_TYPES:
            raise KeyError(f"Device type {device_type!r} is already registered")
        DEVICE_TYPES[device_type] = factory


def unregister_device_type(device_type: str) -> None:
    with _lock:
        DEVICE_TYPES.pop(device_type, None)


_cupy = None
_cupy_checked = False
_cupy_error = ""


def cupy_or_none():
    """The cupy module if it is installed and a CUDA device is usable, else None."""
    global _cupy, _cupy_checked, _cupy_error
    if _cupy_checked:
        return _cupy
    with _lock:
        if not _cupy_checked:
            if os.environ.get("FLOWSERVE_DISABLE_GPU", "") not in ("", "0"):
                _cupy, _cupy_error = None, "GPUs are disabled by FLOWSERVE_DISABLE_GPU"
            else:
                try:
                    import cupy  # noqa: PLC0415 - optional, imported on first use

                    if cupy.cuda.runtime.getDeviceCount() > 0:
                        _cupy = cupy
                    else:
                        _cupy_error = "cupy sees no CUDA device"
                except ImportError:
                    _cupy_error = (
                        "cupy is not installed (install flowserve[gpu] or the cupy-cuda12x package)"
                    )
                except Exception as e:  # noqa: BLE001 - no driver or no device
                    _cupy_error = f"cupy cannot use CUDA: {type(e).__name__}: {e}"
            _cupy_checked = True
    return _cupy


def gpu_unavailable_reason() -> str:
    """Why there is no GPU ('' when there is one)."""
    cupy_or_none()
    return "" if _cupy is not None else _cupy_error


def gpu_count() -> int:
    cp = cupy_or_none()
    return 0 if cp is None else int(cp.cuda.runtime.getDeviceCount())


def device_count(device_type: str) -> tuple[int, str]:
    """How many devices of ``device_type`` this process has, and why there are none ('' when
    there are some, or when the type is unknown)."""
    device_type = device_type.upper()
    if device_type == "CPU":
        return 1, ""
    if device_type == "GPU":
        n = gpu_count()
        return n, "" if n else gpu_unavailable_reason()
    factory = DEVICE_TYPES.get(device_type)
    if factory is None:
        return 0, f"no device type {device_type} is registered"
    n = len(factory(None))
    return n, "" if n else f"no {device_type} devices are present"


class MemoryConfig:
    """GPU memory settings from ``ConfigProto.gpu_options``.

    ``per_process_gpu_memory_fraction`` caps the device's memory pool at that share of the
    card (allocations past it raise out-of-memory, which sessions report as
    ``ResourceExhaustedError``). cupy's pool always grows on demand and never preallocates,
    so ``allow_growth=True`` is its natural behaviour and ``allow_growth=False`` does not
    reserve the whole card up front. ``visible_device_list`` ("1,0") picks and orders the
    physical GPUs the session sees as GPU:0, GPU:1, ...
    """

    def __init__(self, gpu_options=None):
        fraction = float(getattr(gpu_options, "per_process_gpu_memory_fraction", 0.0) or 0.0)
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(
                f"gpu_options.per_process_gpu_memory_fraction must be in [0, 1], got {fraction}"
            )
        self.fraction = fraction
        self.allow_growth = bool(getattr(gpu_options, "allow_growth", False))
        visible = getattr(gpu_options, "visible_device_list", "") or ""
        try:
            self.visible = [int(v) for v in visible.split(",") if v.strip()] if visible else None
        except ValueError:
            raise ValueError(
                f"gpu_options.visible_device_list must be a comma-separated list "
                f"of GPU ids like '0,1', got {visible!r}"
            ) from None


def _gpu_devices(config) -> list[Device]:
    cp = cupy_or_none()
    if cp is None:
        return []
    memory = MemoryConfig(getattr(config, "gpu_options", None))
    count = cp.cuda.runtime.getDeviceCount()
    ids = memory.visible if memory.visible is not None else list(range(count))
    for gpu_id in ids:
        if not 0 <= gpu_id < count:
            raise ValueError(
                f"gpu_options.visible_device_list names GPU {gpu_id}, but this "
                f"machine has {count} GPU(s)"
            )
    devices = []
    for k, gpu_id in enumerate(ids):
        pool = cp.get_default_memory_pool()
        if memory.fraction:
            with cp.cuda.Device(gpu_id):
                pool.set_limit(fraction=memory.fraction)
        devices.append(_gpu_device(cp, k, gpu_id, memory, pool))
    return devices


def _gpu_device(cp, index: int, gpu_id: int, memory: MemoryConfig, pool) -> Device:
    def to_device(value):
        if isinstance(value, cp.ndarray):
            src_id = value.device.id
            if src_id == gpu_id:
                return value
            with cp.cuda.Device(src_id):
                src = cp.ascontiguousarray(value)
                cp.cuda.Stream.null.synchronize()
            with cp.cuda.Device(gpu_id):
                out = cp.empty(src.shape, src.dtype)
                if src.nbytes:
                    cp.cuda.runtime.memcpyPeer(
                        out.data.ptr, gpu_id, src.data.ptr, src_id, src.nbytes
                    )
            return out
        if type(value) is not np.ndarray:
            value = to_host(value)
        with cp.cuda.Device(gpu_id):
            return cp.asarray(value)

    def owns(value) -> bool:
        return isinstance(value, cp.ndarray) and value.device.id == gpu_id

    def memory_info() -> dict:
        with cp.cuda.Device(gpu_id):
            return {
                "in_use": int(pool.used_bytes()),
                "reserved": int(pool.total_bytes()),
                "limit": int(pool.get_limit()),
            }

    context = None if gpu_id == 0 else (lambda: cp.cuda.Device(gpu_id))
    return Device(
        "GPU",
        index,
        cp,
        "GPU",
        to_device=to_device,
        to_host=cp.asnumpy,
        array_types=(cp.ndarray,),
        memory=memory,
        context=context,
        owns=owns,
        memory_info=memory_info,
        physical_index=gpu_id,
    )


register_device_type("GPU", _gpu_devices)


def local_devices(config=None) -> list[Device]:
    """The devices a session with ``config`` (a ConfigProto) gets: CPU:0 first.

    ``config.device_count`` limits how many devices of a type are used (``{"GPU": 0}``
    hides every GPU, as in TF).
    """
    devices = [Device("CPU", 0, np, "CPU")]
    wanted = getattr(config, "device_count", None) or {}
    for device_type, factory in list(DEVICE_TYPES.items()):
        limit = wanted.get(device_type)
        if limit is not None and int(limit) <= 0:
            continue
        found = factory(config)
        devices.extend(found if limit is None else found[: int(limit)])
    return devices
