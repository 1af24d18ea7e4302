"""Triton's system shared memory extension: POSIX shared memory regions that clients register
by name, and that requests read inputs from and write outputs to.

A region is ``(name, key, offset, byte_size)``: ``key`` names a POSIX shared memory object
(``/dev/shm/<key>`` on Linux, created by the client with ``shm_open``), and the region is the
``byte_size`` bytes from ``offset`` in it. Registering maps that window (read and write) after
checking that it lies inside the object; every access by a tensor (its own offset and size
within the region) is bounds-checked again; unregistering (one region, or all) and server
shutdown unmap. CUDA shared memory is refused with an explicit error: this server keeps
tensors in host memory.

Keys are confined to ``/dev/shm``: a key is one path component (an optional leading ``/`` as
``shm_open`` takes it, then no further ``/``), so a request cannot map arbitrary files.
"""

from __future__ import annotations

import mmap
import os
import re
import threading
from dataclasses import dataclass

from service.errors import FailedPrecondition, InvalidInput, NotFound

__all__ = ["SharedMemoryRegistry", "Region", "SHM_ROOT", "MAX_REGIONS"]

SHM_ROOT = "/dev/shm"
MAX_REGIONS = 1024  # a client registering in a loop must not exhaust the server's mappings
_KEY = re.compile(r"^/?[A-Za-z0-9_.\-]{1,200}$")


@dataclass
class Region:
    name: str
    key: str
    offset: int
    byte_size: int
    mapping: mmap.mmap
    start: int  # where the region begins inside ``mapping`` (mappings are page-aligned)

    def status(self) -> dict:
        return {
            "name": self.name,
            "key": self.key,
            "offset": self.offset,
            "byte_size": self.byte_size,
        }


class SharedMemoryRegistry:
    """The registered system shared memory regions of one server."""

    def __init__(self, root: str = SHM_ROOT):
        self.root = root
        self._regions: dict[str, Region] = {}
        self._lock = threading.Lock()
        # Why registering is refused (a worker of --workers N: regions are per process).
        self.refusal: str | None = None

    def register(self, name: str, key: str, offset: int, byte_size: int) -> None:
        if self.refusal is not None:
            raise FailedPrecondition(self.refusal)
        if not isinstance(name, str) or not name:
            raise InvalidInput("a shared memory region needs a non-empty 'name'")
        if not isinstance(key, str) or not _KEY.match(key) or key.strip("/") in (".", ".."):
            raise InvalidInput(
                f"shared memory key {key!r} is not valid: expected the name of a POSIX "
                "shared memory object (letters, digits, '_', '.', '-', optionally after one '/')"
            )
        for what, value in (("offset", offset), ("byte_size", byte_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidInput(
                    f"shared memory region '{name}': {what} must be a non-negative integer, "
                    f"got {value!r}"
                )
        if byte_size == 0:
            raise InvalidInput(f"shared memory region '{name}': byte_size must be positive")
        with self._lock:
            if name in self._regions:
                raise InvalidInput(
                    f"shared memory region '{name}' is already registered; unregister it first"
                )
            if len(self._regions) >= MAX_REGIONS:
                raise InvalidInput(
                    f"too many shared memory regions registered (the limit is {MAX_REGIONS})"
                )
            self._regions[name] = self._map(name, key, offset, byte_size)

    def _map(self, name: str, key: str, offset: int, byte_size: int) -> Region:
        path = os.path.join(self.root, key.lstrip("/"))
        try:
            fd = os.open(path, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            raise InvalidInput(
                f"Unable to open shared memory region '{name}': no shared memory object "
                f"with key '{key}'"
            ) from None
        except OSError as e:
            raise InvalidInput(
                f"Unable to open shared memory region '{name}' (key '{key}'): {e.strerror}"
            ) from None
        try:
            size = os.fstat(fd).st_size
            if offset + byte_size > size:
                raise InvalidInput(
                    f"shared memory region '{name}': offset {offset} + byte_size {byte_size} "
                    f"runs past the end of the {size}-byte object '{key}'"
                )
            aligned = offset - offset % mmap.ALLOCATIONGRANULARITY
            mapping = mmap.mmap(fd, offset + byte_size - aligned, offset=aligned)
        finally:
            os.close(fd)
        return Region(name, key, offset, byte_size, mapping, offset - aligned)

    def unregister(self, name: str | None = None) -> None:
        """Unmaps region ``name``, or every region when ``name`` is empty or None."""
        with self._lock:
            if not name:
                regions, self._regions = list(self._regions.values()), {}
            else:
                region = self._regions.pop(name, None)
                if region is None:
                    raise NotFound(f"Unable to find system shared memory region: '{name}'")
                regions = [region]
        for region in regions:
            region.mapping.close()

    def close(self) -> None:
        self.unregister(None)

    def status(self, name: str | None = None) -> list[dict]:
        with self._lock:
            if name:
                region = self._regions.get(name)
                if region is None:
                    raise NotFound(f"Unable to find system shared memory region: '{name}'")
                return [region.status()]
            return [r.status() for r in self._regions.values()]

    def _window(self, name: str, offset: int, byte_size: int, what: str) -> Region:
        region = self._regions.get(name)
        if region is None:
            raise InvalidInput(f"{what}: Unable to find shared memory region: '{name}'")
        for label, value in (("offset", offset), ("byte_size", byte_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidInput(
                    f"{what}: shared_memory_{label} must be a non-negative integer, got {value!r}"
                )
        if offset + byte_size > region.byte_size:
            raise InvalidInput(
                f"{what}: shared memory offset {offset} + byte size {byte_size} is out of "
                f"bounds of region '{name}' ({region.byte_size} bytes)"
            )
        return region

    def read(self, name: str, offset: int, byte_size: int, what: str) -> bytes:
        """A copy of ``byte_size`` bytes at ``offset`` of region ``name``."""
        with self._lock:
            region = self._window(name, offset, byte_size, what)
            start = region.start + offset
            return bytes(region.mapping[start : start + byte_size])

    def check_write(self, name: str, offset: int, byte_size: int, what: str) -> None:
        """Validates an output window before the model runs (``byte_size``: the room given)."""
        with self._lock:
            self._window(name, offset, byte_size, what)

    def write(self, name: str, offset: int, room: int, data: bytes, what: str) -> None:
        """Writes ``data`` at ``offset`` of region ``name``; it must fit in ``room`` bytes."""
        if len(data) > room:
            raise InvalidInput(
                f"{what}: the output takes {len(data)} bytes but its shared memory window "
                f"has {room}"
            )
        with self._lock:
            region = self._window(name, offset, room, what)
            start = region.start + offset
            region.mapping[start : start + len(data)] = data
