"""``tf.compat``: TF 1.15's compatibility helpers, and ``tf.compat.v1``, which is the engine
itself (the engine's API is TF1's), so that programs written against
``tensorflow.compat.v1`` (``tf.compat.v1.placeholder``, ``import engine.compat.v1 as tf``)
run unchanged. ``tf.compat.v2`` (eager TF2) is out of scope."""

from __future__ import annotations

import contextlib
import datetime
import numbers
import os

import numpy as np

from engine.tensor_shape import Dimension, as_shape

__all__ = [
    "as_bytes",
    "as_str",
    "as_str_any",
    "as_text",
    "bytes_or_text_types",
    "complex_types",
    "dimension_at_index",
    "dimension_value",
    "forward_compatibility_horizon",
    "forward_compatible",
    "integral_types",
    "path_to_str",
    "real_types",
]

integral_types = (numbers.Integral, np.integer)
real_types = (numbers.Real, np.integer, np.floating)
complex_types = (numbers.Complex, np.number)
bytes_or_text_types = (bytes, str)

# The day forward_compatible() compares with (TensorFlow 2.21's horizon: graphs may use ops
# and attributes that consumers built up to then understand).
_HORIZON = datetime.date(2026, 1, 16)
_horizon = _HORIZON


def as_bytes(bytes_or_text, encoding="utf-8") -> bytes:
    """``bytes_or_text`` as bytes (str encoded with ``encoding``)."""
    if isinstance(bytes_or_text, bytearray):
        return bytes(bytes_or_text)
    if isinstance(bytes_or_text, str):
        return bytes_or_text.encode(encoding)
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


def as_text(bytes_or_text, encoding="utf-8") -> str:
    """``bytes_or_text`` as str (bytes decoded with ``encoding``)."""
    if isinstance(bytes_or_text, str):
        return bytes_or_text
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text.decode(encoding)
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


as_str = as_text


def as_str_any(value, encoding="utf-8") -> str:
    """``value`` as str: bytes decoded, anything else through ``str``."""
    if isinstance(value, bytes):
        return as_str(value, encoding=encoding)
    return str(value)


def path_to_str(path):
    """A path-like object as str (other values unchanged)."""
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    return path


def dimension_value(dimension):
    """The int (or None) of a ``Dimension``, or ``dimension`` itself."""
    return getattr(dimension, "value", dimension)


def dimension_at_index(shape, index):
    """``shape[index]`` as a ``Dimension`` (unknown when the rank is)."""
    shape = as_shape(shape)
    if shape.rank is None:
        return Dimension(None)
    return Dimension(dimension_value(shape.dims[index]))


def forward_compatible(year: int, month: int, day: int) -> bool:
    """Whether the forward-compatibility horizon is past ``year-month-day``."""
    return _horizon > datetime.date(year, month, day)


@contextlib.contextmanager
def forward_compatibility_horizon(year: int, month: int, day: int):
    """Within the block, ``forward_compatible`` compares with ``year-month-day``."""
    global _horizon
    saved = _horizon
    _horizon = datetime.date(year, month, day)
    try:
        yield
    finally:
        _horizon = saved


def __getattr__(name):
    if name == "v2":
        raise AttributeError(
            "tf.compat.v2 is not available in flowserve's engine: TF2 behaviour (eager "
            "execution, tf.function) is out of scope; tf.compat.v1 is the engine itself"
        )
    raise AttributeError(f"module 'engine.compat' has no attribute '{name}'")
