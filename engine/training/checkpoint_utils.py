"""``tf.train.list_variables`` / ``load_checkpoint``: read checkpoints without a graph.

Both formats are read: the engine's own bundles and TensorFlow's V2 checkpoints (tensor
bundles), with their checksums verified.
"""

from __future__ import annotations

import os

import numpy as np

from engine import dtypes, errors
from engine.saving import bundle
from engine.training.saver import latest_checkpoint

__all__ = [
    "CheckpointReader",
    "NewCheckpointReader",
    "list_variables",
    "load_checkpoint",
    "load_variable",
]


def _prefix(ckpt_dir_or_file: str) -> str:
    path = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(path):
        found = latest_checkpoint(path)
        if found is None:
            raise ValueError(
                f"Couldn't find 'checkpoint' file or checkpoints in given directory {path}"
            )
        return found
    if not bundle.bundle_exists(path):
        raise errors.NotFoundError(
            None,
            None,
            "Unsuccessful TensorSliceReader constructor: Failed to find any matching files "
            f"for {path}",
        )
    return path


class CheckpointReader:
    """The tensors of one checkpoint: ``get_tensor``, ``has_tensor``, and name -> shape/dtype
    maps, as TF's ``CheckpointReader``."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        _, entries = bundle.read_index(prefix)
        self._entries = {e.name: e for e in entries}

    def has_tensor(self, name: str) -> bool:
        return name in self._entries

    def get_tensor(self, name: str) -> np.ndarray:
        if name not in self._entries:
            raise errors.NotFoundError(None, None, f"Key {name} not found in checkpoint")
        return bundle.read_bundle(self.prefix, names=[name])[name]

    def get_variable_to_shape_map(self) -> dict[str, list[int]]:
        return {n: list(e.shape) for n, e in self._entries.items()}

    def get_variable_to_dtype_map(self) -> dict[str, dtypes.DType]:
        return {n: e.dtype for n, e in self._entries.items()}


def load_checkpoint(ckpt_dir_or_file: str) -> CheckpointReader:
    """A reader for the checkpoint at a prefix, or the latest one in a directory."""
    return CheckpointReader(_prefix(ckpt_dir_or_file))


def NewCheckpointReader(filepattern: str) -> CheckpointReader:  # noqa: N802 - TF1's name
    """TF1's ``tf.train.NewCheckpointReader``: a reader for the checkpoint at a prefix
    (``model.ckpt-100``; a directory reads its latest checkpoint)."""
    return load_checkpoint(filepattern)


def list_variables(ckpt_dir_or_file: str) -> list[tuple[str, list[int]]]:
    """``[(name, shape)]`` of every tensor in the checkpoint, sorted by name."""
    reader = load_checkpoint(ckpt_dir_or_file)
    return sorted(reader.get_variable_to_shape_map().items())


def load_variable(ckpt_dir_or_file: str, name: str) -> np.ndarray:
    """The value of one tensor of the checkpoint."""
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)
