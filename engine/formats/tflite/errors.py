"""The errors a TensorFlow Lite model can raise on load (both name what was wrong)."""

from __future__ import annotations

__all__ = ["TFLiteFormatError", "UnsupportedModelError"]


class TFLiteFormatError(ValueError):
    """The file is not a well-formed TFLite flatbuffer (truncated, offsets or indices out of
    range, tensor shapes that do not match their buffers, limits exceeded)."""


class UnsupportedModelError(TFLiteFormatError):
    """A well-formed model that uses operators or types the importer does not map (custom
    ops, Flex/SELECT_TF_OPS ops, builtins not in the table)."""
