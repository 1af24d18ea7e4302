"""A second device type for tests: ``TEST:n`` devices that behave like GPUs, backed by numpy.

Kernels placed on a TEST device run with ``xp`` = a numpy look-alike whose results are
``TestArray`` (an ndarray subclass tagged with its device index). Like cupy arrays, test
arrays refuse to be mixed with host numpy arrays or with arrays of another TEST device, and
never turn into numpy scalars, so a kernel that would break on cupy (by calling ``np.``
creation functions, returning host values or mixing devices) fails here too: checked mode
(``FLOWSERVE_CHECK_KERNELS=1``, on in the test suite) verifies that every kernel reads and
returns arrays of its own device. Sessions see TEST devices only while the type is
registered (``registered()`` or ``FLOWSERVE_TEST_DEVICE=test``).

A TEST device has a fake capacity of 64 MiB; ``gpu_options.per_process_gpu_memory_fraction``
caps single allocations at that share, raising an out-of-memory error like cupy's.
"""

from __future__ import annotations

import contextlib
import types

import numpy as np

from engine import devices

CAPACITY_BYTES = 64 << 20


class TestOutOfMemoryError(MemoryError):
    """What an allocation past a TEST device's limit raises (cupy's OutOfMemoryError is a
    MemoryError too)."""


class TestArray(np.ndarray):
    """A numpy array living on TEST device ``device_index``."""

    __test__ = False  # not a pytest test class

    def __array_finalize__(self, obj):
        self.device_index = getattr(obj, "device_index", 0)

    def __getitem__(self, key):
        result = super().__getitem__(_to_base(key) if isinstance(key, (TestArray, tuple)) else key)
        if isinstance(result, np.generic):  # cupy indexing yields 0-d device arrays
            return _wrap(result, self.device_index)
        return result

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        index = _device_of((inputs, out), f"{ufunc.__name__}.{method}")
        inputs = _to_base(inputs)
        if out is not None:
            kwargs["out"] = _to_base(out)
        result = getattr(ufunc, method)(*inputs, **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _wrap(result, index)

    def __array_function__(self, func, types_, args, kwargs):
        index = _device_of((args, kwargs), func.__name__)
        return _wrap(func(*_to_base(args), **_to_base(kwargs)), index)

    def __reduce__(self):  # never pickled: the project uses no pickle
        raise TypeError("TestArray cannot be pickled")

    def __repr__(self) -> str:
        return f"TestArray(TEST:{self.device_index}, {np.asarray(self.view(np.ndarray))!r})"


def _walk(obj):
    if isinstance(obj, (list, tuple)):
        for x in obj:
            yield from _walk(x)
    elif isinstance(obj, dict):
        for x in obj.values():
            yield from _walk(x)
    else:
        yield obj


def _device_of(args, what: str) -> int:
    """The TEST device of the arrays in ``args``; TypeError for host or cross-device mixes."""
    index = None
    host = False
    for x in _walk(args):
        if isinstance(x, TestArray):
            if index is None:
                index = x.device_index
            elif x.device_index != index:
                raise TypeError(
                    f"{what}: arrays on TEST:{index} and TEST:{x.device_index} "
                    "mixed in one kernel (a missing cross-device copy)"
                )
        elif type(x) is np.ndarray and x.ndim > 0:
            host = True
    if host and index is not None:
        raise TypeError(
            f"{what}: a host numpy array was mixed with TEST:{index} arrays "
            "(cupy refuses this too: move it with xp.asarray)"
        )
    return 0 if index is None else index


def _to_base(obj):
    if isinstance(obj, TestArray):
        return obj.view(np.ndarray)
    if isinstance(obj, tuple):
        return tuple(_to_base(x) for x in obj)
    if isinstance(obj, list):
        return [_to_base(x) for x in obj]
    if isinstance(obj, dict):
        return {k: _to_base(v) for k, v in obj.items()}
    return obj


def _check_size(arr: np.ndarray, index: int) -> None:
    limit = _limits.get(index)
    if limit and arr.nbytes > limit:
        raise TestOutOfMemoryError(
            f"Out of memory allocating {arr.nbytes:,} bytes on TEST:{index} (limit {limit:,} bytes)"
        )


def _wrap(result, index: int):
    if isinstance(result, np.ndarray):
        if result.dtype.kind == "O":
            raise TypeError("TEST devices hold no object (string) arrays")
        _check_size(result, index)
        out = result.view(TestArray)
        out.device_index = index
        return out
    if isinstance(result, np.generic):  # cupy never returns host scalars
        return _wrap(np.asarray(result), index)
    if isinstance(result, tuple):
        return tuple(_wrap(r, index) for r in result)
    if isinstance(result, list):
        return [_wrap(r, index) for r in result]
    return result


class _Namespace:
    """``numpy`` (or a submodule) whose functions return TestArrays on one device."""

    def __init__(self, module, index: int):
        self._module = module
        self._index = index
        self._cache: dict = {}

    def __getattr__(self, name):
        try:
            return self._cache[name]
        except KeyError:
            pass
        attr = getattr(self._module, name)
        if isinstance(attr, types.ModuleType):
            value = _Namespace(attr, self._index)
        elif isinstance(attr, np.ufunc):
            value = _UFunc(attr, self._index)
        elif callable(attr) and not isinstance(attr, type):
            value = self._function(attr, name)
        else:
            value = attr
        self._cache[name] = value
        return value

    def _function(self, fn, name):
        index = self._index
        creates = name in ("asarray", "array", "ascontiguousarray", "asanyarray")

        def call(*args, **kwargs):
            if not creates:
                found = _device_of((args, kwargs), name)
                if found != index and any(isinstance(x, TestArray) for x in _walk(args)):
                    raise TypeError(f"{name}: TEST:{found} arrays used by a kernel on TEST:{index}")
            else:
                for x in _walk(args[:1]):
                    if isinstance(x, TestArray) and x.device_index != index:
                        raise TypeError(
                            f"{name}: TEST:{x.device_index} array used on "
                            f"TEST:{index} without a copy"
                        )
            return _wrap(fn(*_to_base(args), **_to_base(kwargs)), index)

        call.__name__ = name
        return call

    def __repr__(self) -> str:
        return f"<test xp for TEST:{self._index} wrapping {self._module.__name__}>"


class _UFunc:
    def __init__(self, ufunc, index):
        self._ufunc = ufunc
        self._index = index
        self.__name__ = ufunc.__name__

    def __call__(self, *args, **kwargs):
        _device_of((args, kwargs), self.__name__)
        return _wrap(self._ufunc(*_to_base(args), **_to_base(kwargs)), self._index)

    def __getattr__(self, name):
        attr = getattr(self._ufunc, name)
        if not callable(attr):
            return attr
        index = self._index

        def method(*args, **kwargs):
            _device_of((args, kwargs), f"{self.__name__}.{name}")
            result = attr(*_to_base(args), **_to_base(kwargs))
            return None if result is None else _wrap(result, index)

        return method


_limits: dict[int, int] = {}


def _make_device(name_index: int, index: int, fraction: float) -> devices.Device:
    """TEST device ``index`` (arrays tagged with it), seen by a session as TEST:name_index."""
    _limits[index] = int(CAPACITY_BYTES * fraction) if fraction else 0
    xp = _Namespace(np, index)

    def to_device(value):
        if isinstance(value, TestArray) and value.device_index == index:
            return value
        if not isinstance(value, np.ndarray):
            value = devices.to_host(value)
        host = np.array(
            value.view(np.ndarray) if isinstance(value, TestArray) else value, copy=True
        )
        if host.dtype.kind == "O":
            raise TypeError("TEST devices hold no object (string) arrays")
        return _wrap(host, index)

    def to_host(value):
        return (
            np.array(value.view(np.ndarray), copy=True) if isinstance(value, TestArray) else value
        )

    def owns(value) -> bool:
        return isinstance(value, TestArray) and value.device_index == index

    def memory_info():
        return {"in_use": 0, "reserved": 0, "limit": _limits.get(index, 0)}

    return devices.Device(
        "TEST",
        name_index,
        xp,
        "GPU",
        to_device=to_device,
        to_host=to_host,
        array_types=(TestArray,),
        memory=None,
        owns=owns,
        memory_info=memory_info,
        physical_index=index,
    )


def make_factory(count: int = 2):
    def factory(config):
        # Like GPUs, TEST devices honour gpu_options: the memory fraction, and
        # visible_device_list ("1" makes physical TEST device 1 the session's TEST:0).
        memory = devices.MemoryConfig(getattr(config, "gpu_options", None))
        ids = memory.visible if memory.visible is not None else list(range(count))
        for k in ids:
            if not 0 <= k < count:
                raise ValueError(
                    f"visible_device_list names TEST device {k}, but there are {count}"
                )
        return [_make_device(i, k, memory.fraction) for i, k in enumerate(ids)]

    return factory


def register(count: int = 2) -> None:
    devices.register_device_type("TEST", make_factory(count))


def unregister() -> None:
    devices.unregister_device_type("TEST")


@contextlib.contextmanager
def registered(count: int = 2):
    """TEST:0..count-1 exist in sessions created inside (and stay in those sessions). Real
    GPUs are hidden meanwhile, so the TEST devices stand in for them on any machine."""
    saved = {t: devices.DEVICE_TYPES[t] for t in ("GPU", "TEST") if t in devices.DEVICE_TYPES}
    for device_type in saved:
        devices.unregister_device_type(device_type)
    register(count)
    try:
        yield
    finally:
        unregister()
        for device_type, factory in saved.items():
            devices.register_device_type(device_type, factory)


def default_device_name(session) -> str:
    """The device ``session`` places ops on when they request none (GPU:0/TEST:0 or CPU:0)."""
    found = [d for d in session.list_devices() if d.kernel_type == "GPU"]
    return (found or session.list_devices())[0].name
