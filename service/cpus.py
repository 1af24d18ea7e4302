"""How many CPU cores this process may use: its CPU affinity, capped by a cgroup CPU quota.

A container limited to 2 CPUs (Kubernetes ``resources.limits.cpu: 2``, ``docker --cpus 2``)
still sees every core of its node in ``os.cpu_count()`` and in its affinity mask; only the
cgroup's quota says 2. ``--workers auto`` reads both, so it never starts one worker per node
core inside a small pod.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

__all__ = ["available_cores", "cgroup_cpu_limit"]


def _v2_paths(root: Path, proc_cgroup: Path) -> list[Path]:
    """The ``cpu.max`` files of this process's cgroup (v2) and of its ancestors, nearest
    first (inside a container the namespace root is the container's cgroup)."""
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        lines = []
    relative = next((line[3:] for line in lines if line.startswith("0::")), "/")
    paths = []
    here = Path(relative.strip() or "/")
    while True:
        paths.append(root / str(here).lstrip("/") / "cpu.max")
        if here == here.parent:
            break
        here = here.parent
    return paths


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def cgroup_cpu_limit(
    root: str = "/sys/fs/cgroup", proc_cgroup: str = "/proc/self/cgroup"
) -> float | None:
    """The CPUs the cgroup quota allows (quota / period, e.g. 1.5), or None without a
    quota. Reads cgroup v2's ``cpu.max`` (the tightest along the path) or v1's
    ``cpu/cpu.cfs_quota_us`` and ``cpu/cpu.cfs_period_us``."""
    base = Path(root)
    limits = []
    for path in _v2_paths(base, Path(proc_cgroup)):
        text = _read(path)
        if text:
            quota, _, period = text.partition(" ")
            if quota != "max" and quota.isdigit() and period.isdigit() and int(period) > 0:
                limits.append(int(quota) / int(period))
    if limits:
        return min(limits)
    quota = _read(base / "cpu" / "cpu.cfs_quota_us")
    period = _read(base / "cpu" / "cpu.cfs_period_us")
    if quota and period and quota.isdigit() and period.isdigit() and int(period) > 0:
        return int(quota) / int(period)  # -1 (no quota) is not all digits
    return None


def available_cores(root: str = "/sys/fs/cgroup", proc_cgroup: str = "/proc/self/cgroup") -> int:
    """Cores this process may run on: its affinity (else the machine's count), capped by the
    cgroup CPU quota rounded up; at least 1."""
    try:
        cores = len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    limit = cgroup_cpu_limit(root, proc_cgroup)
    if limit is not None:
        cores = min(cores, max(1, math.ceil(limit)))
    return cores
