"""Loaders for the datasets bundled under ``models/data``."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

DATA_DIR = Path(__file__).resolve().parent / "data"


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """The UCI hand-written digits: images (1797, 64) float32 in [0, 16], labels int64."""
    with gzip.open(DATA_DIR / "digits.csv.gz", "rt") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.float32)
    return table[:, :-1], table[:, -1].astype(np.int64)


def train_test_split(x, y, test_fraction: float = 0.25, seed: int = 0):
    """A reproducible shuffled split into (x_train, y_train, x_test, y_test)."""
    order = np.random.default_rng(seed).permutation(len(x))
    n_test = int(round(len(x) * test_fraction))
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]
