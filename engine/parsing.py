"""The Python API of ``tf.Example`` parsing (``tf.parse_example``, ``tf.io``'s features):
dense features as tensors, ``VarLenFeature``/``SparseFeature`` ones as ``SparseTensor``s, all
from one ``ParseExampleV2`` op (``engine/ops/parsing_ops.py``, the kernels)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from engine import dtypes, errors
from engine.framework.constant_op import constant, convert_to_tensor
from engine.framework.graph import name_scope
from engine.framework.sparse_tensor import SparseTensor
from engine.ops import array, array_transform, slicing
from engine.ops._common import create
from engine.sparse_api import sparse_reorder
from engine.tensor_shape import TensorShape

__all__ = [
    "FixedLenFeature",
    "SparseFeature",
    "VarLenFeature",
    "parse_example",
    "parse_single_example",
]


class FixedLenFeature(NamedTuple):
    """A dense feature of a fixed ``shape`` (TF's ``tf.io.FixedLenFeature``); without a
    ``default_value`` every example must have it."""

    shape: list
    dtype: dtypes.DType
    default_value: object = None


class VarLenFeature(NamedTuple):
    """A variable-length feature (TF's ``tf.io.VarLenFeature``), parsed into a
    ``SparseTensor`` of shape ``[batch, longest list]``."""

    dtype: dtypes.DType


class SparseFeature(NamedTuple):
    """A sparse feature from two lists of each example (TF's ``tf.io.SparseFeature``): the
    positions (``index_key``, int64) and the values (``value_key``) of a ``[size]`` vector."""

    index_key: str
    value_key: str
    dtype: dtypes.DType
    size: int
    already_sorted: bool = False


def _dense_default(f: FixedLenFeature):
    dtype, shape = dtypes.as_dtype(f.dtype), TensorShape(f.shape)
    if f.default_value is None:
        empty = np.empty(0, dtype=object if dtype is dtypes.string else dtype.np)
        return constant(empty, dtype=dtype)
    return constant(f.default_value, dtype=dtype, shape=shape.as_list())


def _string_vector(keys: list[str]):
    return constant(np.array([k.encode() for k in keys], dtype=object), dtype=dtypes.string)


def _flat_features(features: dict) -> tuple[dict, dict]:
    """``features`` as (sparse: {key: dtype}, dense: {key: FixedLenFeature}); a
    SparseFeature contributes its index and value lists as sparse features."""
    if not isinstance(features, dict) or not features:
        raise ValueError("parse_example needs a non-empty dict of features")
    sparse, dense = {}, {}
    for key, f in features.items():
        if isinstance(f, FixedLenFeature):
            dense[key] = f
        elif isinstance(f, VarLenFeature):
            sparse[key] = dtypes.as_dtype(f.dtype)
        elif isinstance(f, SparseFeature):
            sparse[f.index_key] = dtypes.int64
            sparse[f.value_key] = dtypes.as_dtype(f.dtype)
        else:
            raise errors.UnimplementedError(
                None,
                None,
                f"parse_example: feature '{key}' is a {type(f).__name__}; FixedLenFeature, "
                "VarLenFeature and SparseFeature are supported",
            )
    for key in sparse:
        if key in dense:
            raise ValueError(f"Feature '{key}' is both dense and sparse")
    return sparse, dense


def _sparse_feature(f: SparseFeature, parsed: dict):
    """TF's ``sparse_merge``: the value list placed at the index list's positions."""
    ids, values = parsed[f.index_key], parsed[f.value_key]
    rows = slicing.gather(ids.indices, [0], axis=1)
    cols = array_transform.concat([rows, array.expand_dims(ids.values, 1)], 1)
    shape = array_transform.concat([slicing.gather(ids.dense_shape, [0]), [int(f.size)]], 0)
    merged = SparseTensor(cols, values.values, shape)
    return merged if f.already_sorted else sparse_reorder(merged)


def parse_example(serialized, features: dict, name=None, example_names=None) -> dict:  # noqa: ARG001 - TF API compatibility
    """Parses a batch of serialized ``tf.Example``s into ``{key: tensor}``: dense tensors of
    shape ``serialized.shape + feature.shape`` for ``FixedLenFeature``s and ``SparseTensor``s
    for ``VarLenFeature``/``SparseFeature`` (a ``ParseExampleV2`` op, as TF 2.x builds it)::

        parsed = tf.parse_example(s, {"x": tf.FixedLenFeature([2], tf.float32),
                                      "tags": tf.VarLenFeature(tf.string)})
    """
    sparse, dense = _flat_features(features)
    skeys, dkeys = sorted(sparse), sorted(dense)
    with name_scope(name, "ParseExample", [serialized]) as scope:
        s = convert_to_tensor(serialized, dtype=dtypes.string)
        none = constant(np.empty(0, dtype=object), dtype=dtypes.string)
        attrs = {
            "Tdense": [dtypes.as_dtype(dense[k].dtype) for k in dkeys],
            "dense_shapes": [TensorShape(dense[k].shape) for k in dkeys],
            "num_sparse": len(skeys),
            "sparse_types": [sparse[k] for k in skeys],
            "ragged_value_types": [],
            "ragged_split_types": [],
        }
        inputs = [s, none, _string_vector(skeys), _string_vector(dkeys), none]
        inputs += [_dense_default(dense[k]) for k in dkeys]
        outs = create("ParseExampleV2", inputs, attrs, scope).outputs
        n = len(skeys)
        parsed = {
            k: SparseTensor(outs[i], outs[n + i], outs[2 * n + i]) for i, k in enumerate(skeys)
        }
        parsed.update(zip(dkeys, outs[3 * n :]))
    out = {}
    for key, f in features.items():
        out[key] = _sparse_feature(f, parsed) if isinstance(f, SparseFeature) else parsed[key]
    return out


def parse_single_example(serialized, features: dict, name=None, example_names=None) -> dict:  # noqa: ARG001 - TF API compatibility
    """``parse_example`` of one serialized ``tf.Example`` (a scalar string): dense features of
    ``feature.shape``, sparse ones of dense shape ``[longest list]``."""
    with name_scope(name, "ParseSingleExample", [serialized]):
        s = convert_to_tensor(serialized, dtype=dtypes.string)
        if s.shape.rank not in (None, 0):
            raise ValueError(f"serialized must be a scalar, got shape {s.shape}")
        return parse_example(s, features)
