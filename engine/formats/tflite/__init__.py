"""TensorFlow Lite models on the engine: ``load(session, dir_or_file)``, ``import_model``.

A ``.tflite`` flatbuffer becomes an ordinary engine ``Graph`` plus its signatures (each
SignatureDef of the file, and ``serving_default``), as TF Serving serves a version directory
holding ``model.tflite`` (``--prefer_tflite_model``). ``reader.py`` reads and checks the
file with the ``tflite`` package's generated schema classes (``pip install
flowserve[tflite]``), ``mapping.py`` / ``mapping_array.py`` hold the operator table, and
``importer.py`` builds the graph and explains how quantized models are emulated in float.
"""

from __future__ import annotations

from engine.formats.tflite.errors import TFLiteFormatError, UnsupportedModelError
from engine.formats.tflite.importer import (
    DEFAULT_SIGNATURE,
    TFLiteImport,
    import_model,
    unsupported_ops,
)
from engine.formats.tflite.loader import MODEL_FILENAME, load
from engine.formats.tflite.mapping import TABLE
from engine.formats.tflite.reader import read_model, tflite

AVAILABLE = tflite is not None  # whether the optional tflite package is installed

__all__ = [
    "AVAILABLE",
    "DEFAULT_SIGNATURE",
    "MODEL_FILENAME",
    "TABLE",
    "TFLiteFormatError",
    "TFLiteImport",
    "UnsupportedModelError",
    "import_model",
    "load",
    "read_model",
    "unsupported_ops",
]
