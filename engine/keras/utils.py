"""``tf.keras.utils`` and ``tf.keras.preprocessing.sequence``: ``to_categorical``,
``normalize``, ``Progbar``, ``get_file`` (cache only), ``Sequence`` (batches for
``fit_generator``), ``pad_sequences`` and ``get_source_inputs``."""

from __future__ import annotations

import numpy as np

from engine.keras.base_layer import keras_history
from engine.keras.data_utils import get_file
from engine.keras.progbar import Progbar

__all__ = [
    "Progbar",
    "Sequence",
    "get_file",
    "get_source_inputs",
    "normalize",
    "pad_sequences",
    "to_categorical",
]


def to_categorical(y, num_classes=None, dtype="float32") -> np.ndarray:
    """Class indices -> one-hot rows (the last axis grows by ``num_classes``)."""
    y = np.asarray(y, dtype="int64")
    shape = y.shape
    if shape and shape[-1] == 1 and len(shape) > 1:
        shape = shape[:-1]
    y = y.ravel()
    if y.size and y.min() < 0:
        raise ValueError(f"to_categorical: class indices must be >= 0, got {y.min()}")
    if num_classes is None:
        num_classes = int(y.max()) + 1 if y.size else 0
    elif y.size and y.max() >= num_classes:
        raise ValueError(
            f"to_categorical: class index {y.max()} is out of range for num_classes={num_classes}"
        )
    out = np.zeros((y.size, num_classes), dtype=dtype)
    out[np.arange(y.size), y] = 1
    return out.reshape((*shape, num_classes))


def normalize(x, axis=-1, order=2) -> np.ndarray:
    norm = np.atleast_1d(np.linalg.norm(x, order, axis))
    norm[norm == 0] = 1
    return x / np.expand_dims(norm, axis)


class Sequence:
    """Batches by index for ``fit_generator``: implement ``__len__`` and ``__getitem__``."""

    def __getitem__(self, index):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def on_epoch_end(self) -> None:
        """Called after each epoch (shuffle here)."""

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]


def pad_sequences(
    sequences, maxlen=None, dtype="int32", padding="pre", truncating="pre", value=0.0
) -> np.ndarray:
    """Lists of ints -> one (samples, maxlen) array, padded and truncated at the front
    ('pre') or back ('post'), as Keras does."""
    if not hasattr(sequences, "__len__"):
        raise ValueError("`sequences` must be iterable.")
    if padding not in ("pre", "post"):
        raise ValueError(f'Padding type "{padding}" not understood')
    if truncating not in ("pre", "post"):
        raise ValueError(f'Truncating type "{truncating}" not understood')
    lengths, sample_shape = [], ()
    for s in sequences:
        if not hasattr(s, "__len__"):
            raise ValueError(f"`sequences` must be a list of iterables. Found non-iterable: {s}")
        lengths.append(len(s))
        if len(s) and not sample_shape:
            sample_shape = np.asarray(s).shape[1:]
    maxlen = int(maxlen) if maxlen is not None else (max(lengths) if lengths else 0)
    is_str = np.issubdtype(np.dtype(dtype), np.str_) or np.dtype(dtype) == object
    if isinstance(value, str) and not is_str:
        raise ValueError(f"`dtype` {dtype} is not compatible with `value`'s type: str")
    out = np.full((len(sequences), maxlen, *sample_shape), value, dtype=dtype)
    for i, s in enumerate(sequences):
        if not len(s) or maxlen == 0:
            continue
        trunc = s[-maxlen:] if truncating == "pre" else s[:maxlen]
        trunc = np.asarray(trunc, dtype=dtype)
        if padding == "post":
            out[i, : len(trunc)] = trunc
        else:
            out[i, -len(trunc) :] = trunc
    return out


def get_source_inputs(tensor) -> list:
    """The ``Input`` tensors ``tensor`` was computed from."""
    h = keras_history(tensor)
    if h is None:
        return [tensor]
    node = h[0]._inbound_nodes[h[1]]
    if not node.input_tensors:
        return [tensor]
    out = []
    for t in node.input_tensors:
        out += [x for x in get_source_inputs(t) if all(x is not y for y in out)]
    return out
