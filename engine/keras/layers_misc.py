"""Keras layers (filled in by its own change)."""

__all__: list[str] = []
