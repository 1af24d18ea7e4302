"""Defects found reviewing issue 13's per-request speed cuts (batchcut and glue), each a test
that failed because of the defect and passes since it was fixed: DirectScheduler read the CPU
clock for one inline run in 8 and taught the cost estimate from those runs only (a counter
shared by a version's signatures, and a model that got slower stayed on the loop ~8x
longer); every run now teaches it, the unsampled ones with their wall time."""

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from service import servable
from service.batching import DirectScheduler
from service.servable import COST_WINDOW, Signature

INLINE_LIMIT = 0.002  # seconds: runs estimated under this run on the event loop
SLOW = 0.004  # seconds a slow run takes (sleeping: wall time)


@pytest.fixture
def pool():
    with ThreadPoolExecutor(2) as p:
        yield p


def _signature(key: str, slow: bool, threads: list) -> Signature:
    """A signature with no outputs whose runs record their thread (and take ``SLOW``
    seconds when ``slow``); its estimate starts cheap, as a warmup measured it."""

    def fn(*arrays, cancellation=None):  # noqa: ARG001 - Signature.run's call
        threads.append(threading.get_ident())
        if slow:
            time.sleep(SLOW)
        return []

    sig = Signature(key, "tensorflow/serving/predict", {}, {}, fn)
    # A slow one learns wall time (a sleep is its cost); a fast one CPU time, as on the CPU
    # (a busy machine's preemption does not make it look slow).
    sig.cpu_bound = not slow
    sig.observe([np.zeros(1, np.float32)], 1e-6)  # the warmup: cheap
    return sig


async def test_a_signature_that_got_slow_leaves_the_loop_when_others_interleave(pool, monkeypatch):
    # A window of one run: a single measured slow run is enough to move it to a thread.
    monkeypatch.setattr(servable, "COST_WINDOW", 1)
    loop_thread = threading.get_ident()
    slow_threads = []
    fast = _signature("fast", False, [])
    slow = _signature("slow", True, slow_threads)
    scheduler = DirectScheduler(pool, None, "m", "1", inline_seconds=INLINE_LIMIT)
    deadline = asyncio.get_running_loop().time() + 60
    x = [np.zeros(1, np.float32)]
    for _ in range(16):  # (twice DirectScheduler.CPU_SAMPLE)
        await scheduler.submit(fast, x, deadline)
        await scheduler.submit(slow, x, deadline)
    # The slow signature's runs were never measured: all 16 blocked the event loop.
    assert any(t != loop_thread for t in slow_threads), "every slow run stayed on the loop"


async def test_a_model_that_got_slower_leaves_the_loop_within_a_few_dozen_runs(pool):
    loop_thread = threading.get_ident()
    threads = []
    sig = _signature("slow", True, threads)  # cheap at warmup, slow from now on
    scheduler = DirectScheduler(pool, None, "m", "1", inline_seconds=INLINE_LIMIT)
    deadline = asyncio.get_running_loop().time() + 60
    x = [np.zeros(1, np.float32)]
    for _ in range(2 * COST_WINDOW):
        await scheduler.submit(sig, x, deadline)
    # Every run since the warmup took SLOW > INLINE_LIMIT: once the window holds only slow
    # runs (COST_WINDOW of them), the next run goes to a compute thread.
    assert threads[-1] != loop_thread, (
        f"{threads.count(loop_thread)} of {len(threads)} slow runs blocked the event loop"
    )
