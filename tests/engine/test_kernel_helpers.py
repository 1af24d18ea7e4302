"""Kernel helpers shared by numpy and cupy kernels (engine/ops/_common.py).

The cupy branch of ``scatter_add`` runs here against a stand-in ``cupyx`` that, like cupy's
``scatter_add`` (CUDA atomicAdd), refuses every dtype but int32, uint32, uint64 and floats.
"""

import sys
import types

import numpy as np
import pytest

from engine.ops._common import is_cupy, scatter_add

_ATOMIC_ADD = {
    np.dtype(d) for d in (np.int32, np.uint32, np.uint64, np.float16, np.float32, np.float64)
}


@pytest.fixture
def fake_cupy(monkeypatch):
    calls = []

    def _scatter_add(a, slices, value):
        if a.dtype not in _ATOMIC_ADD or value.dtype != a.dtype:
            raise TypeError(f"cupy.add.at does not support {a.dtype} / {value.dtype}")
        calls.append(a.dtype)
        np.add.at(a, slices, value)

    monkeypatch.setitem(sys.modules, "cupyx", types.SimpleNamespace(scatter_add=_scatter_add))
    xp = types.SimpleNamespace(__name__="cupy", zeros=np.zeros)
    return xp, calls


def test_is_cupy():
    assert not is_cupy(np)
    assert is_cupy(types.SimpleNamespace(__name__="cupy"))
    assert not is_cupy(object())


_DTYPES = [
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
    np.float16,
    np.float32,
    np.float64,
]


@pytest.mark.parametrize("dtype", _DTYPES)
def test_scatter_add_matches_add_at(fake_cupy, dtype):
    xp, calls = fake_cupy
    rng = np.random.default_rng(0)
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        # Values near the limits, repeated indices: the sums wrap around.
        values = rng.integers(info.max // 2, info.max, size=(12, 3), dtype=dt, endpoint=True)
        if dt.kind == "i":
            values[::2] = rng.integers(info.min, info.min // 2, size=(6, 3), dtype=dt)
        start = rng.integers(info.min, info.max, size=(5, 3), dtype=dt, endpoint=True)
    else:
        values = rng.standard_normal((12, 3)).astype(dt)
        start = rng.standard_normal((5, 3)).astype(dt)
    index = np.array([0, 4, 4, 1, 0, 0, 2, 4, 3, 3, 0, 1])

    expected = start.copy()
    with np.errstate(over="ignore"):
        np.add.at(expected, (index,), values)
    out = start.copy()
    with np.errstate(over="ignore"):
        scatter_add(xp, out, (index,), values)
    assert out.dtype == dt
    np.testing.assert_array_equal(out, expected)
    assert calls, "the cupy branch must go through cupyx.scatter_add"


def test_scatter_add_into_a_view_with_slices(fake_cupy):
    """GatherGrad scatters into ``out[b]`` with leading slices: it must write through."""
    xp, _ = fake_cupy
    out = np.zeros((2, 3, 4), dtype=np.int64)
    values = np.arange(-6, 6, dtype=np.int64).reshape(3, 4) * (2**40)
    scatter_add(xp, out[1], (slice(None), np.array([0, 0, 3, 1])), values)
    expected = np.zeros((2, 3, 4), dtype=np.int64)
    np.add.at(expected[1], (slice(None), np.array([0, 0, 3, 1])), values)
    np.testing.assert_array_equal(out, expected)


def test_scatter_add_numpy_uses_add_at():
    out = np.zeros(3, dtype=np.float32)
    scatter_add(np, out, (np.array([2, 2, 0]),), np.array([1, 2, 3], dtype=np.float32))
    np.testing.assert_array_equal(out, [3, 0, 3])
