"""Test-suite wide settings: kernel output verification on, a fresh default graph per test.

``FLOWSERVE_TEST_DEVICE`` picks the device every session places ops on by default:
unset or ``cpu`` (numpy), ``test`` (the numpy-backed TEST devices of ``tests/fake_device.py``,
which behave like GPUs, so placement and copies run everywhere) or ``gpu`` (cupy on a real
GPU; every test is skipped, with the reason, when cupy or a GPU is missing).
"""

import os

# Verify every kernel's output dtype and shape against the op's static inference.
os.environ.setdefault("FLOWSERVE_CHECK_KERNELS", "1")

import pytest  # noqa: E402

import engine  # noqa: E402
from engine import devices  # noqa: E402
from tests import fake_device  # noqa: E402

TEST_DEVICE = os.environ.get("FLOWSERVE_TEST_DEVICE", "cpu").strip().lower() or "cpu"
if TEST_DEVICE not in ("cpu", "test", "gpu"):
    raise SystemExit(f"FLOWSERVE_TEST_DEVICE must be cpu, test or gpu, got {TEST_DEVICE!r}")
if TEST_DEVICE == "test":
    fake_device.register(2)


def pytest_report_header():
    if TEST_DEVICE == "gpu":
        reason = devices.gpu_unavailable_reason()
        return f"flowserve test device: gpu ({'unavailable: ' + reason if reason else 'cupy'})"
    return f"flowserve test device: {TEST_DEVICE}"


def pytest_collection_modifyitems(items):
    if TEST_DEVICE != "gpu":
        return
    reason = devices.gpu_unavailable_reason()
    if reason:
        skip = pytest.mark.skip(reason=f"FLOWSERVE_TEST_DEVICE=gpu, but {reason}")
        for item in items:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _fresh_default_graph():
    engine.reset_default_graph()
    yield
    engine.reset_default_graph()
