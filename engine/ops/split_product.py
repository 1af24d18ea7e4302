"""Large matrix products split in blocks across the engine's intra-op threads.

One product ``a @ b`` can use several cores in two ways. OpenBLAS's own threads split it
inside the library, but they spin at a barrier: while other work holds one of the cores,
every product waits for the thread that is not running. ``bench/split_product.py``
(OpenBLAS 0.3.31, AMD EPYC, 2 cores, a 784-2048-2048-10 float32 MLP, 64-row batches): two
OpenBLAS threads give 12463 rows/s idle but 4613 rows/s (p99 75 ms) while another process
uses one core; one thread gives 6471 and 6499.

Here the product is cut instead into column blocks ``a @ b[:, lo:hi]`` (or, for an output
taller than it is wide, row blocks ``a[lo:hi] @ b``; for a stack of products, blocks of the
leading batch axis), each written into its block of the output, which the calling thread and
``threads() - 1`` helper threads take in turn (the server keeps BLAS at one thread). A
helper that is busy or not yet running takes nothing: the caller computes the blocks left
and never waits for a thread that has not started, only for a block a helper already took
(the same forwards through ``make_callable`` with two threads: 11686 rows/s idle, 6327
rows/s and a p99 of 13 ms with one core busy).

Bits: each block is the very BLAS call for those columns (rows). Whether a library gives a
block the bits it gives it in the whole product depends on its kernels (OpenBLAS, for one,
takes other code paths for small products, and its own threads change the bits), so the
first product of each shape, dtype and layout runs whole while a helper multiplies random
operands of that shape and layout both ways and compares them (on random values, never the
caller's: a warmup's zeros agree whatever the order of the sums); a shape whose bits differ
is never split, nor is an ``out`` overlapping an operand.

Only host ``float32``/``float64`` products of at least ``MIN_WORK`` multiply-adds (matrices
of at least ``MIN_ROWS`` rows, or stacks of them) are split, in blocks of at least
``MIN_COLUMNS`` columns (``MIN_BLOCK_ROWS`` rows, one stacked product); everything else (and
every product while ``threads()`` is 1, the default) is numpy's as before.
"""

from __future__ import annotations

import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

__all__ = ["matmul", "product", "set_threads", "threads"]

_BLAS_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
# Below these a product takes less than about 0.3 ms: handing half of it to another thread
# (a queue put, a wakeup and an event, longer on a loaded machine) costs about what it saves.
# With 4M, the 784-256-128-10 mlp's first layer split at 21+ rows and its p99 under load
# rose 1.2x.
MIN_ROWS = 4
MIN_WORK = 1 << 24
MIN_COLUMNS = 64
MIN_BLOCK_ROWS = 64
# The shapes whose split bits were compared (shape key -> equal); cleared past this many.
MAX_CHECKED = 4096
# The random operands those comparisons use, kept up to this many bytes in all.
PROBE_BYTES = 64 << 20


class _State:
    threads = 1
    pool: ThreadPoolExecutor | None = None
    pid = 0


_state = _State()
_lock = threading.Lock()
_checked: dict[tuple, bool] = {}
_probes: dict[tuple, np.ndarray | None] = {}
_checks: list = []  # the checks handed to helpers and not known to be done


def threads() -> int:
    """How many threads one product may use (1: products are not split)."""
    return _state.threads


def set_threads(n: int) -> None:
    """Lets one product use up to ``n`` threads: the caller and ``n - 1`` helpers, shared by
    every session in the process. 1 (the default) stops splitting."""
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 4096:
        raise ValueError(f"intra-op threads must be an integer from 1 to 4096, got {n!r}")
    with _lock:
        old = _state.pool
        _state.pool = None
        _state.threads = n
    if old is not None:
        old.shutdown(wait=False)


def _pool() -> ThreadPoolExecutor:
    """The helpers, made on first use in this process (a forked worker makes its own)."""
    pool = _state.pool
    if pool is None or _state.pid != os.getpid():
        with _lock:
            if _state.pool is None or _state.pid != os.getpid():
                _state.pool = ThreadPoolExecutor(
                    max(1, _state.threads - 1), thread_name_prefix="engine-intra-op"
                )
                _state.pid = os.getpid()
            pool = _state.pool
    return pool


def _blocks(shape: tuple, parts: int) -> tuple[int, list[tuple[int, int]]]:
    """How an output of ``shape`` is cut: the axis (1: columns, 0: rows, 2: the leading
    batch axis of a batched product) and up to ``parts`` ranges covering it, as even as the
    minimum block allows. A matrix is cut in columns when it is at least as wide as it is
    tall (every block then reads ``a`` whole and ``1/parts`` of ``b``, the large operand of
    a batched dense layer), else in rows (a convolution's patches)."""
    if len(shape) > 2:
        axis, size, least, align = 2, shape[0], 1, 1
    elif shape[1] >= shape[0]:
        axis, size, least, align = 1, shape[1], MIN_COLUMNS, 16
    else:
        axis, size, least, align = 0, shape[0], MIN_BLOCK_ROWS, 16
    parts = max(1, min(parts, size // least))
    step = -(-size // parts)
    step = -(-step // align) * align  # whole vector widths, so blocks start aligned
    blocks = [(lo, min(lo + step, size)) for lo in range(0, size, step)]
    if len(blocks) > 1 and blocks[-1][1] - blocks[-1][0] < least:
        blocks[-2:] = [(blocks[-2][0], size)]  # no sliver: a 1-column block is a gemv
    return axis, blocks


def _out_shape(a, b) -> tuple | None:
    """The shape of ``a @ b`` when it may be split: host arrays of one BLAS float dtype,
    matrices (``a`` of at least ``MIN_ROWS`` rows) or stacks of them whose batch dimensions
    broadcast, with at least ``MIN_WORK`` multiply-adds; else None."""
    if a.__class__ is not np.ndarray or b.__class__ is not np.ndarray:
        return None
    if a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-2]:
        return None
    if a.dtype != b.dtype or a.dtype not in _BLAS_FLOATS:
        return None
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    if a.ndim == 2 and b.ndim == 2:
        batch = ()
        if m < MIN_ROWS:
            return None
    else:
        try:
            batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        except ValueError:
            return None  # numpy's error, from the caller's own call
    count = 1
    for d in batch:
        count *= d
    if count * m * k * n < MIN_WORK:
        return None
    return (*batch, m, n)


def product(a, b, out=None):
    """``np.matmul(a, b, out=out)`` computed in blocks on the intra-op threads, or None when
    this product is not split (one thread, not a large host float product, or a shape whose
    split bits differ): the caller then computes it as usual."""
    n_threads = _state.threads
    if n_threads < 2:
        return None
    shape = _out_shape(a, b)
    if shape is None:
        return None
    if out is not None and (
        out.__class__ is not np.ndarray
        or out.shape != shape
        or out.dtype != a.dtype
        or np.may_share_memory(out, a)  # numpy handles the overlap; blocks would not
        or np.may_share_memory(out, b)
    ):
        return None
    axis, blocks = _blocks(shape, n_threads)
    if len(blocks) < 2:
        return None
    # The layouts decide the BLAS calls, so they are part of what was compared
    key = (a.shape, a.strides, b.shape, b.strides, a.dtype.char, axis, tuple(blocks))
    same = _checked.get(key, _UNSEEN)
    if same is _UNSEEN:
        _check_later(key, (a.shape, a.strides, a.dtype), (b.shape, b.strides, b.dtype))
        same = _checked.get(key)
    if not same:  # False, or None while its check waits for a helper
        return None
    if out is None:
        out = np.empty(shape, a.dtype)
    _run(a, b, out, axis, blocks)
    return out


def matmul(xp, a, b):
    """``xp.matmul(a, b)``, split across the intra-op threads when ``product`` takes it
    (the kernels' one entry point: MatMul, BatchMatMulV2, convolutions' patch products)."""
    if _state.threads > 1:
        out = product(a, b)
        if out is not None:
            return out
    return xp.matmul(a, b)


_UNSEEN = object()


def _check_later(key, layout_a, layout_b) -> None:
    """Has a helper decide whether products of ``key``'s shapes and layouts may be split
    (until it has, they are not). The decision never holds up a product: comparing costs
    two products and, the first time a weight's shape is seen, random values as large."""
    with _lock:
        if key in _checked:
            return
        if len(_checked) >= MAX_CHECKED:
            _checked.clear()
        _checked[key] = None
    try:
        future = _pool().submit(_check, key, layout_a, layout_b)
    except RuntimeError:  # set_threads shut this pool down meanwhile: decide another time
        _checked.pop(key, None)
        return
    with _lock:
        _checks[:] = [f for f in _checks if not f.done()]
        _checks.append(future)


def _check(key, layout_a, layout_b) -> None:
    """Whether a split gives the bits of the whole product, decided on random operands of
    the shapes, dtype and layouts in ``key``, never on a caller's values: zeros, say (a
    warmup's), agree whatever the order of the sums. The blocks are computed one after
    another here: each is the same BLAS call on whichever thread runs it."""
    same = False
    try:
        pa, pb = _like(*layout_a), _like(*layout_b)
        if pa is not None and pb is not None:
            want = np.matmul(pa, pb)
            split = np.empty_like(want)
            axis, blocks = key[-2], key[-1]
            for x, y, o in _parts(pa, pb, split, axis, blocks):
                np.matmul(x, y, out=o)
            same = bool(np.array_equal(want, split))
    finally:
        _checked[key] = same


def _wait_checks(timeout: float | None = None) -> None:
    """Waits for the checks handed to helpers so far (for tests)."""
    for f in list(_checks):
        f.result(timeout)


def _like(shape, strides, dtype):
    """Random values in [-0.5, 0.5) of ``shape`` and ``dtype`` laid out with ``strides``
    (a contiguous array with its axes permuted, as a transpose or ``swapaxes`` of one is),
    or None for other layouts (sliced with steps), which are never split. Kept for the next
    check using them (a weight's, whatever the batch size), within ``PROBE_BYTES``: making
    a large one costs more than the product."""
    key = (shape, strides, dtype.char)
    probe = _probes.get(key)
    if probe is not None or key in _probes:
        return probe
    order = sorted(range(len(shape)), key=lambda i: -strides[i])
    rng = np.random.default_rng(len(_probes))
    dense = rng.random([shape[i] for i in order], dtype=dtype)
    dense -= 0.5
    probe = dense.transpose(np.argsort(order))
    if probe.strides != strides:
        probe = None
    if probe is None or probe.nbytes <= PROBE_BYTES:
        with _lock:
            kept = sum(p.nbytes for p in _probes.values() if p is not None)
            if probe is not None and kept + probe.nbytes > PROBE_BYTES:
                _probes.clear()
            _probes[key] = probe
    return probe


def _parts(a, b, out, axis: int, blocks) -> list[tuple]:
    """Each block's operands and output: views, never copies."""
    if axis == 1:
        return [(a, b[:, lo:hi], out[:, lo:hi]) for lo, hi in blocks]
    if axis == 0:
        return [(a[lo:hi], b, out[lo:hi]) for lo, hi in blocks]

    def cut(x, lo, hi):  # an operand broadcast along the batch axis is read whole
        return x[lo:hi] if x.ndim == out.ndim and x.shape[0] != 1 else x

    return [(cut(a, lo, hi), cut(b, lo, hi), out[lo:hi]) for lo, hi in blocks]


class _Call:
    """One split product: the blocks not yet taken, and how many are not yet done."""

    __slots__ = ("parts", "taken", "left", "lock", "done", "error")

    def __init__(self, parts):
        self.parts = parts
        self.taken = itertools.count()  # next() is atomic: each block is taken once
        self.left = len(parts)
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.error: BaseException | None = None

    def work(self) -> None:
        parts = self.parts
        while True:
            i = next(self.taken)
            if i >= len(parts):
                return
            x, y, out = parts[i]
            try:
                np.matmul(x, y, out=out)
            except BaseException as e:  # noqa: BLE001 - raised again by the caller, once
                self.error = e  # every block taken is done (none still writes to out)
            with self.lock:
                self.left -= 1
                if self.left == 0:
                    self.done.set()


def _run(a, b, out, axis, blocks) -> None:
    call = _Call(_parts(a, b, out, axis, blocks))
    pool = _pool()
    try:
        for _ in range(min(_state.threads, len(blocks)) - 1):
            pool.submit(call.work)
    except RuntimeError:  # set_threads shut this pool down meanwhile: the caller does it all
        pass
    call.work()
    call.done.wait()
    if call.error is not None:
        raise call.error
