"""``engine.onnx``: ONNX import, export and inspection (see ``engine/formats/onnx``)."""

from __future__ import annotations

from engine.formats.onnx import *  # noqa: F403
from engine.formats.onnx import __all__  # noqa: F401
