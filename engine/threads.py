"""Threads: how many threads one op may use (``tf.config.threading``), process-wide.

TF1's ``ConfigProto(intra_op_parallelism_threads=N)`` sizes the pool that parallelizes a single
op, and TensorFlow creates that pool once per process, shared by every session. Here an op's
own parallelism is numpy's BLAS (matrix products, and whatever else BLAS or OpenMP computes),
so the first session that asks for N > 0 sets the BLAS and OpenMP thread limit to N, with
``threadpoolctl`` on the loaded libraries (it holds whether numpy was imported first or not);
0 leaves the library's own default (one thread per core). A later session asking for another
count runs on the first one's, with a warning, and ``set_intra_op_parallelism_threads`` then
raises ``RuntimeError``. (TensorFlow fixes its pool at the first session even when that one
asked for 0; here the first count asked for fixes it.)

    >>> sess = tf.Session(config=tf.ConfigProto(intra_op_parallelism_threads=1))
    >>> tf.config.threading.get_intra_op_parallelism_threads()
    1

A server that realizes the count its own way (``flowserve --intra-op-threads``: BLAS on one
thread, large products split across N threads) reserves it with ``reserve_intra_op_threads``,
so a model's session cannot change it afterwards.

Inter-op parallelism is recorded only: a step's ops run one after another on the caller's
thread (concurrent ``Session.run`` calls from several threads run in parallel).
"""

from __future__ import annotations

import logging
import threading

import numpy  # noqa: F401 - loads the BLAS library the limits apply to
import threadpoolctl

__all__ = [
    "apply_session_config",
    "get_inter_op_parallelism_threads",
    "get_intra_op_parallelism_threads",
    "limit_blas_threads",
    "reserve_intra_op_threads",
    "set_inter_op_parallelism_threads",
    "set_intra_op_parallelism_threads",
]

log = logging.getLogger("tensorflow")

_lock = threading.Lock()
_intra = 0  # 0: not set (the BLAS library's default)
_inter = 0


def _checked(value, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(
            f"{where} must be a non-negative integer (0: the system picks), got {value!r}"
        )
    return value


def _release_openblas() -> None:
    """threadpoolctl lets only the first thread that set OpenBLAS's (process-wide) limit set
    it again; any other thread's call silently does nothing. Limits here are process-wide
    decisions, made from whichever thread creates a session, so none keeps that role."""
    controller = getattr(threadpoolctl, "OpenBLASController", None)
    clear = getattr(controller, "clear_controlling_thread", None)
    if clear is not None:
        clear(force=True)


def limit_blas_threads(n: int) -> list[dict]:
    """Caps the threads numpy's BLAS (and OpenMP) use per call at ``n``, for the whole
    process, from any thread; returns threadpoolctl's description of the pools after."""
    with _lock:
        _release_openblas()
        try:
            threadpoolctl.threadpool_limits(limits=n, user_api="blas")
            threadpoolctl.threadpool_limits(limits=n, user_api="openmp")
        finally:
            _release_openblas()
    return threadpoolctl.threadpool_info()


def get_intra_op_parallelism_threads() -> int:
    """The threads one op may use in this process; 0 while none was set (the system picks)."""
    return _intra


def _claim(n: int, limit_blas: bool) -> int:
    """Sets the process's count to ``n`` unless one is set; the count in effect."""
    global _intra
    with _lock:
        if _intra:
            return _intra
        _intra = n
    if limit_blas:
        limit_blas_threads(n)
    return n


def set_intra_op_parallelism_threads(num_threads: int) -> None:
    """Sets the threads one op may use, for the whole process. ``RuntimeError`` once another
    count is in effect: like TensorFlow's pool, it is set once."""
    n = _checked(num_threads, "num_threads")
    if n and _claim(n, limit_blas=True) != n:
        raise RuntimeError(
            "Intra op parallelism cannot be modified after initialization: this process "
            f"already runs ops on {_intra} intra-op thread(s)"
        )


def reserve_intra_op_threads(num_threads: int) -> int:
    """Fixes the process's count at ``num_threads`` without touching BLAS, for a caller that
    realizes it another way (a server splitting large products across its own threads);
    the count in effect (an earlier one wins)."""
    return _claim(max(1, _checked(num_threads, "num_threads")), limit_blas=False)


def apply_session_config(config) -> None:
    """A new session's ``intra_op_parallelism_threads``: the first non-zero count sets the
    process's; a later, different one is ignored with a warning, as TensorFlow's shared pool
    ignores it."""
    n = _checked(config.intra_op_parallelism_threads, "ConfigProto.intra_op_parallelism_threads")
    if n and _claim(n, limit_blas=True) != n:
        log.warning(
            "ConfigProto.intra_op_parallelism_threads=%d ignored: this process already runs "
            "ops on %d intra-op thread(s), set first",
            n,
            _intra,
        )


def get_inter_op_parallelism_threads() -> int:
    """The inter-op count last set (0: the system picks); recorded only (see the module)."""
    return _inter


def set_inter_op_parallelism_threads(num_threads: int) -> None:
    """Records the inter-op count (a step's ops run one after another on the caller's
    thread, so it changes nothing; as in TensorFlow, a negative count means exactly that)."""
    global _inter
    if isinstance(num_threads, bool) or not isinstance(num_threads, int):
        raise ValueError(f"num_threads must be an integer, got {num_threads!r}")
    _inter = num_threads
