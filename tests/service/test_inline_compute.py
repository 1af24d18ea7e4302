"""Cheap computations run on the event loop; the rest on compute threads."""

import threading
import time

import numpy as np
import pytest

from service.batching import runs_inline
from service.servable import COST_WINDOW, Signature
from tests.service import models


def _record_threads(sig):
    seen = []
    fn = sig.fns[0]

    def recording(*args, **kw):
        seen.append(threading.get_ident())
        return fn(*args, **kw)

    sig.fns[0] = recording
    return seen


async def test_warmup_learns_the_cost_and_cheap_runs_stay_on_the_loop(tmp_path, manager_for):
    models.half_plus_two(tmp_path / "hpt" / "1")
    m = await manager_for(tmp_path, inline_compute_micros=1_000_000)
    sig = m.resolve("hpt").signature(None)
    assert sig.cost_seconds is not None and sig.cost_seconds > 0
    assert sig.cost_elements == 1  # the synthetic warmup input: one row
    seen = _record_threads(sig)
    r = await m.infer("hpt", {"x": np.array([1.0, 2.0])})
    assert r.outputs["y"].tolist() == [2.5, 3.0]
    assert seen == [threading.get_ident()]  # ran on the event loop's thread


async def test_inline_off_or_costly_runs_go_to_a_compute_thread(tmp_path, manager_for):
    models.half_plus_two(tmp_path / "off" / "1")
    models.half_plus_two(tmp_path / "on" / "1")
    off = await manager_for(tmp_path, inline_compute_micros=0)
    seen = _record_threads(off.resolve("off").signature(None))
    r = await off.infer("off", {"x": np.array([4.0])})
    assert r.outputs["y"].tolist() == [4.0]
    assert seen and threading.get_ident() not in seen

    on = await manager_for(tmp_path, inline_compute_micros=100)
    sig = on.resolve("on").signature(None)
    sig.cost_seconds, sig.cost_elements = 50e-6, 1  # 50 us per element
    seen = _record_threads(sig)
    await on.infer("on", {"x": np.array([1.0])})  # 50 us: inline
    await on.infer("on", {"x": np.zeros(10_000)})  # estimated 0.5 s: a thread
    assert seen[0] == threading.get_ident() and seen[1] != threading.get_ident()


def test_estimates_scale_with_input_elements_and_follow_measured_runs():
    sig = Signature("k", "predict", {}, {}, lambda *a, **kw: [])  # noqa: ARG005
    one = [np.zeros((1, 10))]
    assert sig.estimated_seconds(one) is None and not runs_inline(sig, one, 1.0)
    sig.observe(one, 20e-6)
    assert sig.cost_elements == 10 and sig.estimated_seconds(one) == 20e-6
    assert sig.estimated_seconds([np.zeros((100, 10))]) == 20e-6 * 100
    assert runs_inline(sig, one, 100e-6) and not runs_inline(sig, one, 0)
    assert not runs_inline(sig, [np.zeros((100, 10))], 100e-6)
    for _ in range(50):  # the model got slower: the estimate follows and it leaves the loop
        sig.observe(one, 400e-6)
    assert not runs_inline(sig, one, 100e-6)


def test_cpu_signatures_learn_cpu_time_and_device_ones_wall_time():
    one = [np.zeros((1, 10))]
    cpu = Signature("k", "predict", {}, {}, lambda *a, **kw: [])  # noqa: ARG005
    # A run that waited 5 ms for a core or the GIL but computed for 20 us: on the CPU the
    # estimate is the computation, so a busy machine does not push cheap models off the loop.
    cpu.observe(one, 5e-3, 20e-6)
    assert cpu.estimated_seconds(one) == 20e-6 and runs_inline(cpu, one, 100e-6)
    gpu = Signature("k", "predict", {}, {}, lambda *a, **kw: [])  # noqa: ARG005
    gpu.cpu_bound = False  # a device run waits for the device without using the CPU
    gpu.observe(one, 5e-3, 20e-6)
    assert gpu.estimated_seconds(one) == 5e-3 and not runs_inline(gpu, one, 100e-6)
    cpu.observe(one, 10e-6)  # no CPU time given: the wall time
    assert cpu.estimated_seconds(one) == 10e-6


def test_the_estimate_is_the_least_recent_run_so_contention_does_not_push_it_up():
    sig = Signature("k", "predict", {}, {}, lambda *a, **kw: [])  # noqa: ARG005
    one = [np.zeros((1, 10))]
    sig.observe(one, 50e-6)
    for _ in range(10):  # runs slowed down by sharing a core: the estimate stays
        sig.observe(one, 150e-6)
    assert sig.estimated_seconds(one) == 50e-6 and runs_inline(sig, one, 100e-6)
    for _ in range(COST_WINDOW):  # a whole window slower: the model itself got slower
        sig.observe(one, 150e-6)
    assert sig.estimated_seconds(one) == 150e-6 and not runs_inline(sig, one, 100e-6)
    sig.observe([np.zeros((4, 10))], 120e-6)  # a batch says nothing of a lone row
    assert sig.estimated_seconds(one) == 150e-6


@pytest.mark.parametrize(
    ("row", "batch", "inline"),
    [(800e-6, 5.6e-3, False), (40e-6, 190e-6, True)],
    ids=["wide_mlp: 88 us per batched row", "mlp: a 20-row batch over the limit"],
)
def test_batches_leave_the_estimate_of_a_lone_row_alone(row, batch, inline):
    """A batch costs less per row than a lone row (weights read once per batch) and more
    in all than one row: folded in per row, a wide model's batches made its 800 us rows
    look cheap (whole batches then ran on the event loop); folded in whole, a small model's
    20-row batches would push its 40 us rows off the loop."""
    sig = Signature("k", "predict", {}, {}, lambda *a, **kw: [])  # noqa: ARG005
    one = [np.zeros((1, 784))]
    sig.observe(one, row)  # the warmup: one row
    for _ in range(COST_WINDOW * 2):
        sig.observe([np.zeros((64, 784))], batch)
    assert sig.estimated_seconds(one) == row
    assert runs_inline(sig, one, 100e-6) is inline
    assert sig.estimated_seconds([np.zeros((64, 784))]) == row * 64
    half = [np.zeros((1, 392))]  # a smaller run starts the window again at its size
    sig.observe(half, row / 4)
    assert sig.cost_elements == 392 and sig.estimated_seconds(half) == row / 4
    assert sig.estimated_seconds(one) == row / 2  # bigger inputs: in proportion


def test_a_bigger_warmup_does_not_keep_lone_rows_off_the_loop():
    """An 8-row warmup record (60 us): lone rows are then measured at 30 us each, and it is
    their time, not the warmup's scaled down to a row's share or up, that decides."""
    sig = Signature("k", "predict", {}, {}, lambda *a, **kw: [])  # noqa: ARG005
    eight, one = [np.zeros((8, 10))], [np.zeros((1, 10))]
    sig.observe(eight, 60e-6)
    assert sig.estimated_seconds(one) == 60e-6  # nothing smaller measured yet: no less
    sig.observe(one, 30e-6)
    assert sig.cost_elements == 10 and sig.estimated_seconds(one) == 30e-6
    assert runs_inline(sig, one, 100e-6)
    sig.observe(eight, 70e-6)  # batches again: the lone row's estimate stays
    assert sig.estimated_seconds(one) == 30e-6


async def test_runs_that_wait_without_computing_keep_the_estimate_small(tmp_path, manager_for):
    models.half_plus_two(tmp_path / "hpt" / "1")
    m = await manager_for(tmp_path, inline_compute_micros=100)
    sig = m.resolve("hpt").signature(None)
    assert sig.cpu_bound
    fn = sig.fns[0]

    def slow_wall(*args, **kw):  # sleeps: wall time without CPU time
        time.sleep(0.01)
        return fn(*args, **kw)

    sig.fns[0] = slow_wall
    for _ in range(3):
        await m.infer("hpt", {"x": np.array([1.0])})
    assert sig.estimated_seconds([np.array([1.0])]) < 5e-3


async def test_inline_runs_read_cpu_time_for_one_run_in_cpu_sample(tmp_path, manager_for):
    from service.batching import DirectScheduler

    models.half_plus_two(tmp_path / "hpt" / "1")
    m = await manager_for(tmp_path, inline_compute_micros=1_000_000)
    s = m.resolve("hpt")
    sig = s.signature(None)
    taught = []
    observe = sig.observe
    sig.observe = lambda arrays, seconds, cpu=None: (
        taught.append(cpu) or observe(arrays, seconds, cpu)
    )
    seen = _record_threads(sig)
    runs = 2 * DirectScheduler.CPU_SAMPLE + 1
    before = m.statistics.doc("hpt", s.version)["execution_count"]
    for _ in range(runs):
        r = await m.infer("hpt", {"x": np.array([1.0])})
        assert r.outputs["y"].tolist() == [2.5]
    assert seen == [threading.get_ident()] * runs  # every run inline
    # Every run teaches the estimate; three of 17 (the 1st, 9th and 17th) with their CPU
    # time, the others with their wall time...
    assert len(taught) == runs
    sampled = [i for i, cpu in enumerate(taught) if cpu is not None]
    assert sampled == [0, 8, 16] and all(taught[i] >= 0 for i in sampled)
    # ... and the statistics count every run.
    assert m.statistics.doc("hpt", s.version)["execution_count"] == before + runs
