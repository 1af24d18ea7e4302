"""The ``engine.layers`` namespace (TF1's ``tf.layers``): (being written)."""

from __future__ import annotations

__all__: list[str] = []
