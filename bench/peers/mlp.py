"""The benchmark MLP (784-256-128-10, float32) in plain numpy, shared by every peer.

flowserve's bench (``run.py``), the MLServer runtime (``mlserver_mlp.py``) and the PyTriton
server (``pytriton_mlp.py``) all build their weights here with the same seed, so every server
computes the same probabilities. Only numpy is imported: the peers import this file from
their own virtualenvs, where the engine is not installed.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

LAYERS = (784, 256, 128, 10)
INPUT_NAME = "x"
OUTPUT_NAME = "probabilities"
MODEL_NAME = "mlp"


def weights(seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """(weight, bias) per layer, drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    return [
        (
            (rng.standard_normal((i, o)) / np.sqrt(i)).astype(np.float32),
            (rng.standard_normal(o) * 0.1).astype(np.float32),
        )
        for i, o in zip(LAYERS[:-1], LAYERS[1:])
    ]


def numpy_mlp(params: list[tuple[np.ndarray, np.ndarray]]) -> Callable[[np.ndarray], np.ndarray]:
    """The MLP by hand: relu, relu, softmax; rows in, probabilities out (float32)."""
    (w0, b0), (w1, b1), (w2, b2) = params

    def run(x: np.ndarray) -> np.ndarray:
        h = np.maximum(x @ w0 + b0, 0)
        h = np.maximum(h @ w1 + b1, 0)
        z = h @ w2 + b2
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    return run
