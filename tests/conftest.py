"""Test-suite wide settings: kernel output verification on, a fresh default graph per test."""

import os

# Verify every kernel's output dtype and shape against the op's static inference.
os.environ.setdefault("FLOWSERVE_CHECK_KERNELS", "1")

import pytest  # noqa: E402

import engine  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_default_graph():
    engine.reset_default_graph()
    yield
    engine.reset_default_graph()
