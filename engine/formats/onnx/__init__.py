"""ONNX models on the engine: import (``import_model``, ``load``), export, inspect.

An ONNX model becomes an ordinary engine ``Graph`` plus a signature whose inputs and outputs
keep their ONNX names; from there sessions, devices, the optimizer and the server treat it like
any other graph. See ``mapping.py`` for the operator table and ``proto.py`` for why we read
the protobuf ourselves.
"""

from __future__ import annotations

from engine.formats.onnx.export import EXPORT_OPSET, ExportError, export
from engine.formats.onnx.importer import (
    ModelSummary,
    OnnxModel,
    import_model,
    summarize,
)
from engine.formats.onnx.loader import MODEL_FILENAME, load
from engine.formats.onnx.mapping import TABLE, VERSIONS, UnsupportedModelError
from engine.formats.onnx.tensors import OnnxFormatError

__all__ = [
    "EXPORT_OPSET",
    "ExportError",
    "export",
    "MODEL_FILENAME",
    "ModelSummary",
    "OnnxFormatError",
    "OnnxModel",
    "TABLE",
    "UnsupportedModelError",
    "VERSIONS",
    "import_model",
    "load",
    "summarize",
]
