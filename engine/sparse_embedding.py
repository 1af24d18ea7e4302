"""``tf.nn.embedding_lookup_sparse`` and ``tf.nn.safe_embedding_lookup_sparse``: embedding rows
of the ids in each row of a SparseTensor, combined by sum, mean or sqrtn.

Composed as TF composes them (``tensorflow/python/ops/embedding_ops.py``): the unique ids'
rows reduced per example by one ``SparseSegmentSum``/``Mean``/``SqrtN`` (weighted lookups
scale the gathered rows and use segment sums), so they differentiate with respect to the
embedding table through those ops. The engine has no ``IndexedSlices``: the table's gradient
is a dense tensor of the table's shape (zero rows for ids not looked up), which optimizers
apply as any dense gradient (the same update, more memory for huge tables).
"""

from __future__ import annotations

from engine import dtypes
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import name_scope
from engine.framework.sparse_tensor import SparseTensor
from engine.ops import array as array_ops
from engine.ops import array_transform, reduction, slicing
from engine.ops import math as math_ops
from engine.ops.embedding import embedding_lookup
from engine.ops.math_more import div_no_nan
from engine.ops.segment_ops import segment_sum
from engine.ops.set_ops import unique
from engine.ops.sparse_segment_ops import (
    sparse_segment_mean,
    sparse_segment_sqrt_n,
    sparse_segment_sum,
)
from engine.sparse_api import sparse_fill_empty_rows, sparse_reshape, sparse_retain
from engine.tensor_shape import TensorShape, unknown_shape

__all__ = ["embedding_lookup_sparse", "safe_embedding_lookup_sparse"]

_COMBINERS = ("mean", "sqrtn", "sum")
_SEGMENT_REDUCTIONS = {
    "mean": sparse_segment_mean,
    "sqrtn": sparse_segment_sqrt_n,
    "sum": sparse_segment_sum,
}


def embedding_lookup_sparse(
    params,
    sp_ids,
    sp_weights,
    partition_strategy="mod",
    name=None,
    combiner=None,
    max_norm=None,
    allow_fast_lookup=False,
):
    """Per row ``r`` of ``sp_ids`` (``[batch, ...]`` int ids), the ``combiner`` of the
    embedding rows ``params[id]`` of its ids, weighted by ``sp_weights`` (same indices) when
    given: ``[last non-empty row + 1, dim]``.

    >>> emb = embedding_lookup_sparse(table, sp_ids, None, combiner="sum")
    """
    if combiner is None:
        combiner = "mean"
    if combiner not in _COMBINERS:
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner}")
    params = list(params) if isinstance(params, (list, tuple)) else [params]
    if not isinstance(sp_ids, SparseTensor):
        raise TypeError(f"sp_ids must be SparseTensor, got {type(sp_ids)}")
    if sp_weights is not None:
        if not isinstance(sp_weights, SparseTensor):
            raise TypeError(
                f"sp_weights must be either None or SparseTensor,got {type(sp_weights)}"
            )
        sp_ids.values.shape.assert_is_compatible_with(sp_weights.values.shape)
        sp_ids.indices.shape.assert_is_compatible_with(sp_weights.indices.shape)
        sp_ids.dense_shape.shape.assert_is_compatible_with(sp_weights.dense_shape.shape)
    values = [p for p in params if hasattr(p, "graph")] + [sp_ids.indices]
    with name_scope(name, "embedding_lookup_sparse", values) as scope:
        segment_ids = math_ops.cast(slicing.gather(sp_ids.indices, 0, axis=1), dtypes.int32)
        ids = sp_ids.values
        if allow_fast_lookup and sp_weights is None and len(params) == 1 and max_norm is None:
            table, idx = params[0], ids
        else:
            ids, idx = unique(ids)
            table = embedding_lookup(
                params, ids, partition_strategy=partition_strategy, max_norm=max_norm
            )
        if sp_weights is None:
            # TF's: one SparseSegment{Sum,Mean,SqrtN} over the looked-up rows.
            return _SEGMENT_REDUCTIONS[combiner](table, idx, segment_ids, name=scope)
        embeddings = slicing.gather(table, idx)
        return _combine_weighted(embeddings, sp_weights.values, segment_ids, combiner, scope)


def _combine_weighted(embeddings, weights, segment_ids, combiner: str, scope: str):
    """TF's weighted path: rows scaled by their weights, sums divided by the weights' sum
    (mean) or root sum of squares (sqrtn), 0 where that is 0."""
    segment_ids = math_ops.cast(segment_ids, dtypes.int32)
    if weights.dtype != embeddings.dtype:
        weights = math_ops.cast(weights, embeddings.dtype)
    ones = array_ops.ones(array_ops.expand_dims(array_ops.rank(embeddings) - 1, 0), dtypes.int32)
    bcast = array_transform.concat([array_ops.shape(weights), ones], 0)
    original = weights.shape
    weights = array_ops.reshape(weights, bcast)
    if embeddings.shape.rank is not None:
        weights.set_shape(original.concatenate([1] * (embeddings.shape.rank - 1)))
    embeddings = embeddings * weights
    if combiner == "sum":
        return segment_sum(embeddings, segment_ids, name=scope)
    sums = segment_sum(embeddings, segment_ids)
    if combiner == "mean":
        return div_no_nan(sums, segment_sum(weights, segment_ids), name=scope)
    weight_sum = segment_sum(math_ops.pow(weights, 2), segment_ids)
    return div_no_nan(sums, math_ops.sqrt(weight_sum), name=scope)


def safe_embedding_lookup_sparse(
    embedding_weights,
    sparse_ids,
    sparse_weights=None,
    combiner="mean",
    default_id=None,
    name=None,
    partition_strategy="div",
    max_norm=None,
    allow_fast_lookup=False,
):
    """``embedding_lookup_sparse`` that tolerates invalid ids (< 0, dropped), non-positive
    weights (dropped, except for ``sum``) and empty rows (``default_id``'s embedding, else
    zeros), and keeps every row of ``sparse_ids``' leading dims: ``[d0, ..., dn-1, dim]``."""
    del allow_fast_lookup  # one path serves both
    if embedding_weights is None:
        raise ValueError(f"Missing embedding_weights {embedding_weights}.")
    tables = embedding_weights
    tables = list(tables) if isinstance(tables, (list, tuple)) else [tables]
    if len(tables) < 1:
        raise ValueError(f"Missing embedding_weights {embedding_weights}.")
    dtype = sparse_weights.dtype if sparse_weights is not None else None
    tables = [convert_to_tensor(w, dtype=dtype) for w in tables]
    with name_scope(name, "embedding_lookup", tables + [sparse_ids.indices]) as scope:
        original_shape = sparse_ids.dense_shape
        rank_dim = sparse_ids.dense_shape.shape.as_list()[0]
        rank = array_ops.size(original_shape) if rank_dim is None else rank_dim
        rows = reduction.reduce_prod(slicing.slice(original_shape, [0], [rank - 1]))
        sparse_ids = sparse_reshape(
            sparse_ids, array_transform.stack([rows, slicing.gather(original_shape, rank - 1)])
        )
        if sparse_weights is not None:
            sparse_weights = SparseTensor(
                sparse_ids.indices, sparse_weights.values, sparse_ids.dense_shape
            )
        sparse_ids, sparse_weights = _prune(sparse_ids, sparse_weights, combiner)
        sparse_ids, is_row_empty = sparse_fill_empty_rows(sparse_ids, default_id or 0)
        if sparse_weights is not None:
            sparse_weights, _ = sparse_fill_empty_rows(sparse_weights, 1.0)
        result = embedding_lookup_sparse(
            tables,
            sparse_ids,
            sparse_weights,
            combiner=combiner,
            partition_strategy=partition_strategy,
            name=None if default_id is None else scope,
            max_norm=max_norm,
        )
        if default_id is None:
            width = array_ops.shape(result)[1]
            is_row_empty = array_transform.tile(
                array_ops.reshape(is_row_empty, [-1, 1]), array_transform.stack([1, width])
            )
            result = math_ops.where(is_row_empty, array_ops.zeros_like(result), result, name=scope)
        leading = slicing.slice(math_ops.cast(original_shape, dtypes.int32), [0], [rank - 1])
        tail = slicing.slice(array_ops.shape(result), [1], [-1])
        final = array_ops.reshape(result, array_transform.concat([leading, tail], 0))
        lead_shape = unknown_shape() if rank_dim is None else TensorShape([None] * (rank_dim - 1))
        final.set_shape(lead_shape.concatenate(result.shape[1:]))
        return final


def _prune(sparse_ids, sparse_weights, combiner: str):
    """TF's ``_prune_invalid_ids`` (ids < 0) and, unless summing, ``_prune_invalid_weights``
    (weights <= 0)."""
    valid = math_ops.greater_equal(sparse_ids.values, 0)
    sparse_ids = sparse_retain(sparse_ids, valid)
    if sparse_weights is not None:
        sparse_weights = sparse_retain(sparse_weights, valid)
    if combiner != "sum" and sparse_weights is not None:
        positive = math_ops.greater(sparse_weights.values, 0)
        sparse_ids = sparse_retain(sparse_ids, positive)
        sparse_weights = sparse_retain(sparse_weights, positive)
    return sparse_ids, sparse_weights
