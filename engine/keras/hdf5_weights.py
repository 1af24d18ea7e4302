"""Keras HDF5 weights as tf_keras writes them: ``save_weights("w.h5")`` and
``load_weights("w.h5", by_name=...)``, and the bounded readers :mod:`engine.keras.hdf5` uses
for whole-model files.

The group ``model_weights`` of a model file (the root of a weights file) lists
``layer_names``; each layer's group lists its ``weight_names``, one dataset per weight.
Weights are matched layer by layer (those with weights, in order) or by layer name, and each
dataset's shape and dtype are checked against the layer's variable before it is read;
strings read from a file are bounded.
"""

from __future__ import annotations

import os
import zipfile

import numpy as np

from engine import tf_logging
from engine.keras import backend

try:
    import h5py
except ImportError:  # the keras extra: pip install flowserve[keras]
    h5py = None

__all__ = ["is_hdf5_path", "load_weights", "save_weights"]

KERAS_VERSION = "2.21.0"  # the tf_keras whose layout is written (TF 1.15's reads it too)
MAX_CONFIG_CHARS = 64 << 20  # a model config larger than this is not a model config
MAX_NAMES = 100_000  # layer or weight names in one list
MAX_NAME_BYTES = 4096
H5_SUFFIXES = (".h5", ".hdf5", ".keras")
LOG = tf_logging.get_logger()


def is_hdf5_path(filepath, save_format=None) -> bool:
    """Whether ``filepath`` (or ``save_format``) asks for an HDF5 file."""
    return save_format == "h5" or os.fspath(filepath).endswith(H5_SUFFIXES)


def is_hdf5_file(filepath) -> bool:
    """Whether ``filepath`` is a file that starts with HDF5's signature (TF1's
    ``load_weights`` reads a path that is no TF checkpoint as HDF5, whatever its name)."""
    if not os.path.isfile(filepath):
        return False
    with open(filepath, "rb") as f:
        return f.read(8) == b"\x89HDF\r\n\x1a\n"


def require_h5py() -> None:
    if h5py is None:
        raise ImportError(
            "Keras HDF5 files need h5py, which is not installed: pip install flowserve[keras]"
        )


def open_file(filepath, mode: str):
    """``h5py.File(filepath, mode)``, with a clear error for a file that is not HDF5."""
    require_h5py()
    path = os.fspath(filepath)
    if mode == "r" and not os.path.exists(path):
        raise FileNotFoundError(f"No file or directory found at {path}")
    if mode == "r" and zipfile.is_zipfile(path):
        raise OSError(
            f"{path} is a Keras 3 '.keras' archive (a zip), which is not supported: save the "
            "model as HDF5 (model.save('m.h5')) or as a SavedModel and load that"
        )
    try:
        return h5py.File(path, mode)
    except OSError as e:
        raise OSError(
            f"Unable to open {path} as a Keras HDF5 file (truncated, corrupt or not HDF5): {e}"
        ) from None


# -- bounded reads -------------------------------------------------------------------------


def str_attr(obj, key: str, limit: int | None = None):
    """A string attribute (None when absent), at most ``limit`` characters."""
    limit = MAX_CONFIG_CHARS if limit is None else limit
    if key not in obj.attrs:
        return None
    attr = obj.attrs.get_id(key)
    if attr.shape not in ((), None) or attr.dtype.kind not in "SOU":
        raise ValueError(f"HDF5 attribute {key!r} of {obj.name} must be one string")
    if attr.dtype.kind == "S" and attr.dtype.itemsize > limit:
        raise ValueError(f"HDF5 attribute {key!r} is longer than {limit} bytes")
    value = obj.attrs[key]
    if isinstance(value, bytes):
        value = value.decode("utf-8")
    if not isinstance(value, str) or len(value) > limit:
        raise ValueError(
            f"HDF5 attribute {key!r} of {obj.name} is not a string of <= {limit} chars"
        )
    return value


def _names_attr(obj, key: str) -> list[str]:
    """A list-of-names attribute (Keras writes them as fixed-length byte strings)."""
    if key not in obj.attrs:
        raise ValueError(
            f"HDF5 group {obj.name} has no {key!r} attribute: not a Keras weights group"
        )
    attr = obj.attrs.get_id(key)
    count = int(np.prod(attr.shape or (1,)))
    if len(attr.shape or ()) > 1 or count > MAX_NAMES:
        raise ValueError(f"HDF5 attribute {key!r} of {obj.name}: expected <= {MAX_NAMES} names")
    if attr.dtype.kind == "S" and attr.dtype.itemsize > MAX_NAME_BYTES:
        raise ValueError(
            f"HDF5 attribute {key!r} of {obj.name}: names longer than {MAX_NAME_BYTES}"
        )
    if count == 0:
        return []
    names = []
    for n in np.atleast_1d(obj.attrs[key]):
        n = n.decode("utf-8") if isinstance(n, bytes) else n
        if not isinstance(n, str) or len(n) > MAX_NAME_BYTES:
            raise ValueError(f"HDF5 attribute {key!r} of {obj.name} holds a bad name: {n!r}")
        names.append(n)
    return names


def _read_weight(group, name: str, variable, layer_name: str):
    """The dataset ``name`` of ``group``, checked against ``variable`` before it is read."""
    ds = group.get(name)
    if not isinstance(ds, h5py.Dataset):
        raise ValueError(f"Layer {layer_name!r}: the file has no weight dataset {name!r}")
    expected = tuple(variable.shape.as_list())
    if tuple(ds.shape) != expected:
        raise ValueError(
            f"Layer {layer_name!r}: weight {name!r} in the file has shape {tuple(ds.shape)}, "
            f"but the model's {variable.name} has shape {expected}"
        )
    if ds.dtype.kind not in "fiub":
        raise ValueError(f"Layer {layer_name!r}: weight {name!r} has non-numeric dtype {ds.dtype}")
    return np.asarray(ds[()]).astype(variable.dtype.base_dtype.as_numpy_dtype, copy=False)


# -- weights -------------------------------------------------------------------------------


def _weighted(model) -> list:
    return [layer for layer in model.layers if layer.weights]


def save_weights_to_group(group, model) -> None:
    """Writes ``model``'s weights into ``group`` in Keras' layout."""
    group.attrs["backend"] = "tensorflow"
    group.attrs["keras_version"] = KERAS_VERSION
    group.attrs["layer_names"] = np.array([x.name.encode("utf-8") for x in model.layers])
    values = backend.batch_get_value(model.weights)
    by_id = {id(w): v for w, v in zip(model.weights, values)}
    for layer in model.layers:
        g = group.create_group(layer.name)
        names = [w.name for w in layer.weights]
        g.attrs["weight_names"] = np.array([n.encode("utf-8") for n in names])
        for name, w in zip(names, layer.weights):
            g.create_dataset(name, data=by_id[id(w)])
    top = group.create_group("top_level_model_weights")
    top.attrs["weight_names"] = np.array([], dtype="float64")


def load_weights_from_group(group, model, by_name=False, skip_mismatch=False) -> None:
    """Sets ``model``'s weights from a Keras weights group (``model_weights`` or a root)."""
    file_layers = []
    for name in _names_attr(group, "layer_names"):
        g = group.get(name)
        if not isinstance(g, h5py.Group):
            raise ValueError(f"The weights file lists layer {name!r} but has no group for it")
        weight_names = _names_attr(g, "weight_names")
        if weight_names:
            file_layers.append((name, g, weight_names))
    pairs = (
        _match_by_name(file_layers, model, skip_mismatch)
        if by_name
        else _match_in_order(file_layers, model)
    )
    backend.batch_set_value(pairs)


def _layer_pairs(layer, name, g, weight_names) -> list:
    variables = layer.weights
    if len(weight_names) != len(variables):
        raise ValueError(
            f"Layer {layer.name!r} ({type(layer).__name__}) expects {len(variables)} weights, "
            f"but the saved layer {name!r} has {len(weight_names)} elements"
        )
    return [(v, _read_weight(g, wn, v, name)) for v, wn in zip(variables, weight_names)]


def _match_in_order(file_layers: list, model) -> list:
    layers = _weighted(model)
    if len(file_layers) != len(layers):
        raise ValueError(
            f"You are trying to load a weight file containing {len(file_layers)} layers into a "
            f"model with {len(layers)} layers (counting those with weights)"
        )
    pairs = []
    for layer, (name, g, weight_names) in zip(layers, file_layers):
        pairs += _layer_pairs(layer, name, g, weight_names)
    return pairs


def _match_by_name(file_layers: list, model, skip_mismatch: bool) -> list:
    by_name: dict[str, list] = {}
    for layer in _weighted(model):
        by_name.setdefault(layer.name, []).append(layer)
    pairs = []
    for name, g, weight_names in file_layers:
        for layer in by_name.get(name, []):
            try:
                pairs += _layer_pairs(layer, name, g, weight_names)
            except ValueError as e:
                if not skip_mismatch:
                    raise
                LOG.warning("Skipping loading weights for layer %r: %s", name, e)
    return pairs


def save_weights(model, filepath, overwrite=True) -> None:
    """``model.save_weights("w.h5")``."""
    require_h5py()
    path = os.fspath(filepath)
    if not overwrite and os.path.exists(path):
        raise FileExistsError(f"{path} exists and overwrite=False")
    with open_file(path, "w") as f:
        save_weights_to_group(f, model)


def load_weights(model, filepath, by_name=False, skip_mismatch=False) -> None:
    """``model.load_weights("w.h5", by_name=...)`` (a weights file or a whole-model file)."""
    with open_file(filepath, "r") as f:
        group = f["model_weights"] if "layer_names" not in f.attrs and "model_weights" in f else f
        load_weights_from_group(group, model, by_name=by_name, skip_mismatch=skip_mismatch)
