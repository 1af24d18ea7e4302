"""``tf.resource_loader``: paths to data files shipped next to a program or the engine.

As TF 1.15's: ``get_data_files_path()`` is the directory of the calling script,
``get_path_to_datafile(path)`` joins ``path`` onto it, ``load_resource(path)`` reads a file
relative to the package root (the engine's, as TF's is relative to ``tensorflow/``),
``get_root_dir_with_all_resources()`` is that root and ``readahead_file_path`` is identity.
"""

from __future__ import annotations

import inspect
import os
import sys

__all__ = [
    "get_data_files_path",
    "get_path_to_datafile",
    "get_root_dir_with_all_resources",
    "load_resource",
    "readahead_file_path",
]

_ROOT = os.path.dirname(os.path.abspath(__file__))


def _caller_dir(depth: int) -> str:
    return os.path.dirname(inspect.getfile(sys._getframe(depth + 1)))


def get_data_files_path() -> str:
    """The directory of the script that calls this."""
    return _caller_dir(1)


def get_path_to_datafile(path: str) -> str:
    """``path`` joined onto the directory of the script that calls this."""
    return os.path.join(_caller_dir(1), path)


def get_root_dir_with_all_resources() -> str:
    """The directory holding the engine's resources (the engine package's directory)."""
    return _ROOT


def load_resource(path: str) -> bytes:
    """The bytes of ``path``, relative to ``get_root_dir_with_all_resources()``; a missing
    file raises ``OSError`` (``FileNotFoundError``), as TF's."""
    with open(os.path.join(_ROOT, path), "rb") as f:
        return f.read()


def readahead_file_path(path: str, readahead: str = "128M") -> str:  # noqa: ARG001 - TF's signature
    """``path`` unchanged (TF's readahead is a no-op for local files, as here)."""
    return path
