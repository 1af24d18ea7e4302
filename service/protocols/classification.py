"""Triton's classification extension: an output asked for with ``parameters.classification: k``
comes back as its top ``k`` classes instead of its values.

The output's last dimension holds the class scores (a ``[batch, classes]`` or ``[classes]``
tensor); the answer is a BYTES tensor ``[batch, k]`` (or ``[k]``) of ``"score:index"`` strings,
``"score:index:label"`` when the model version has labels, best first (ties: lower index
first). Labels are read from the version directory: ``<output>_labels.txt`` for that output, or
else ``labels.txt``, one label per line (line ``i`` names class ``i``). Label files are bounded
(1 MiB) and read once per version.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from service.errors import InvalidInput

if TYPE_CHECKING:
    from service.manager import InferResult, ModelManager

__all__ = ["class_count", "top_classes", "labels_for", "apply_classification"]

MAX_LABEL_FILE_BYTES = 1 << 20


def class_count(value: object, what: str) -> int:
    """The ``classification`` parameter: a positive integer."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(f"{what}: classification must be a positive integer, got {value!r}")
    return value


@functools.lru_cache(maxsize=256)
def _read_labels(path: str, _mtime_ns: int) -> tuple[str, ...] | None:
    """The labels in ``path`` (``_mtime_ns`` keys the cache: an edited file is read again)."""
    p = Path(path)
    if p.stat().st_size > MAX_LABEL_FILE_BYTES:
        raise InvalidInput(f"label file {p.name} is larger than {MAX_LABEL_FILE_BYTES} bytes")
    text = p.read_text(encoding="utf-8", errors="replace")
    return tuple(line.rstrip("\r") for line in text.split("\n") if line.strip() != "")


def labels_for(version_dir: Path | str, output: str) -> tuple[str, ...] | None:
    """The labels of ``output`` of the version at ``version_dir`` (None without a file)."""
    names = ["labels.txt"]
    if "/" not in output and "\\" not in output and not output.startswith("."):
        names.insert(0, f"{output}_labels.txt")  # aliases never name a path
    for name in names:
        path = Path(version_dir) / name
        try:
            stat = path.stat()
        except OSError:
            continue
        if path.is_file() and not path.is_symlink():
            return _read_labels(str(path), stat.st_mtime_ns)
    return None


def _format(value) -> str:
    if isinstance(value, (float, np.floating)):
        return f"{float(value):f}"
    return str(value)


def top_classes(arr: np.ndarray, k: int, labels: tuple[str, ...] | None, what: str) -> np.ndarray:
    """The top ``k`` entries of the last dimension of ``arr`` as Triton's strings."""
    if arr.ndim not in (1, 2) or arr.dtype.kind not in "biuf":
        raise InvalidInput(
            f"{what}: classification needs a numeric [classes] or [batch, classes] output, "
            f"got {arr.dtype} {list(arr.shape)}"
        )
    rows = arr.reshape(1, -1) if arr.ndim == 1 else arr
    k = min(k, rows.shape[1])
    out = np.empty((rows.shape[0], k), dtype=object)
    for r, row in enumerate(rows):
        order = np.argsort(-row.astype(np.float64), kind="stable")[:k]
        for j, index in enumerate(order):
            text = f"{_format(row[index])}:{int(index)}"
            if labels is not None and index < len(labels):
                text += f":{labels[index]}"
            out[r, j] = text.encode("utf-8")
    return out.reshape(k) if arr.ndim == 1 else out


def apply_classification(
    manager: ModelManager, result: InferResult, counts: dict[str, int]
) -> None:
    """Replaces each output named in ``counts`` by its top classes (``result`` in place)."""
    if not counts:
        return
    version_dir = manager.resolve(result.model, result.version).path
    for name, k in counts.items():
        what = f"output '{name}'"
        result.outputs[name] = top_classes(
            result.outputs[name], k, labels_for(version_dir, name), what
        )
