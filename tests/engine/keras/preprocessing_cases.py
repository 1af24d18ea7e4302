"""Keras preprocessing (text, sequence, image) cases run with TF's ``compat.v1`` or the
engine; each returns ``{key: array}``."""

from __future__ import annotations

CASES: list = []
