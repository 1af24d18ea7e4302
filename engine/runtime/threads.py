"""Intra-op threads: how many threads one op may use, process-wide.

TF1's ``ConfigProto(intra_op_parallelism_threads=N)`` sizes the pool that parallelizes a single
op; TensorFlow creates that pool once, for the first session that asks, and every later
session shares it. Here an op's own parallelism is numpy's BLAS (matrix products, and
whatever else BLAS or OpenMP computes), so N becomes the BLAS and OpenMP thread limit, set
with ``threadpoolctl`` on the loaded libraries (it holds whether numpy was imported first or
not). ``0`` leaves the library's own default (one thread per core).

    >>> sess = tf.Session(config=tf.ConfigProto(intra_op_parallelism_threads=1))
    >>> tf.config.threading.get_intra_op_parallelism_threads()
    1

As in TensorFlow, the first non-zero value wins: a later session asking for another count
runs on the threads already set (a warning says so), and ``set_intra_op_parallelism_threads``
after that raises ``RuntimeError``.
"""

from __future__ import annotations

import logging
import threading

__all__ = [
    "apply_session_config",
    "get_intra_op_parallelism_threads",
    "set_intra_op_parallelism_threads",
]

log = logging.getLogger("tensorflow")

_lock = threading.Lock()
_threads = 0  # 0: not set (the BLAS library's default)


def _checked(value, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(
            f"{where} must be a non-negative integer (0: the system picks), got {value!r}"
        )
    return value


def _limit_blas(n: int) -> None:
    import numpy  # noqa: F401 - loads the BLAS library the limit is applied to
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=n, user_api="blas")
    threadpool_limits(limits=n, user_api="openmp")


def get_intra_op_parallelism_threads() -> int:
    """The threads one op may use in this process; 0 while none was set (the system picks)."""
    return _threads


def _claim(n: int) -> int:
    """Sets the process's count to ``n`` unless one is set; the count in effect."""
    global _threads
    with _lock:
        if not _threads:
            _limit_blas(n)
            _threads = n
        return _threads


def set_intra_op_parallelism_threads(num_threads: int) -> None:
    """Sets the threads one op may use, for the whole process (``tf.config.threading``).
    ``RuntimeError`` once another count is in effect: like TensorFlow's pool, it is set
    once."""
    n = _checked(num_threads, "num_threads")
    if n and _claim(n) != n:
        raise RuntimeError(
            "Intra op parallelism cannot be modified after initialization: this process "
            f"already runs ops on {_threads} intra-op thread(s)"
        )


def apply_session_config(config) -> None:
    """A new session's ``intra_op_parallelism_threads``: the first non-zero value sets the
    process's count; a later, different one is ignored with a warning, as TensorFlow's shared
    pool ignores it."""
    n = _checked(config.intra_op_parallelism_threads, "ConfigProto.intra_op_parallelism_threads")
    if n and _claim(n) != n:
        log.warning(
            "ConfigProto.intra_op_parallelism_threads=%d ignored: this process already runs "
            "ops on %d intra-op thread(s), set by the first session that asked",
            n,
            _threads,
        )
