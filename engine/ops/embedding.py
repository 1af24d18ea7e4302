"""Embeddings and sampled losses: ``embedding_lookup`` over one or several (partitioned)
parameter tensors with TF's ``mod`` and ``div`` partition strategies, the candidate samplers
(``LogUniformCandidateSampler``, ``UniformCandidateSampler``), and ``nce_loss`` and
``sampled_softmax_loss`` composed as TF composes them (``_compute_sampled_logits``)."""

from __future__ import annotations

import numpy as np

from engine import dtypes, errors
from engine.framework.constant_op import constant, convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.registry import Attr, OpFlags, ShapeError, op
from engine.ops import array as array_ops
from engine.ops import array_transform, nn_losses, reduction, slicing
from engine.ops import math as math_ops
from engine.ops._common import create
from engine.ops.random import get_seed
from engine.tensor_shape import TensorShape

__all__ = [
    "embedding_lookup",
    "log_uniform_candidate_sampler",
    "uniform_candidate_sampler",
    "nce_loss",
    "sampled_softmax_loss",
]


# -----------------------------------------------------------------------------------------
# embedding_lookup
# -----------------------------------------------------------------------------------------


def _rows(p: Tensor):
    dims = p.shape.as_tuple()
    if dims is not None and dims[0] is not None:
        return constant(dims[0], dtype=dtypes.int64)
    return math_ops.cast(array_ops.shape(p)[0], dtypes.int64)


def embedding_lookup(
    params,
    ids,
    partition_strategy="mod",
    name=None,
    validate_indices=True,
    max_norm=None,
) -> Tensor:
    """Rows of ``params`` at ``ids``; ``params`` may be a list of shards of one table.

    With ``mod``, id ``i`` lives in shard ``i % n`` at row ``i // n``; with ``div`` the ids
    are split into contiguous ranges, the first ``total % n`` shards one row longer.
    ``max_norm`` clips each looked-up row to that L2 norm.
    """
    del validate_indices
    if partition_strategy not in ("mod", "div"):
        raise ValueError(f"Unrecognized partition strategy: {partition_strategy}")
    shards = list(params) if isinstance(params, (list, tuple)) else [params]
    if not shards:
        raise ValueError("Need at least one param")
    with name_scope(name, "embedding_lookup", shards + [ids]) as scope:
        shards = [convert_to_tensor(p, name="params") for p in shards]
        ids = convert_to_tensor(ids, name="ids")
        if ids.dtype.base_dtype not in (dtypes.int32, dtypes.int64):
            raise TypeError(f"ids must be int32 or int64, got {ids.dtype.name}")
        if len(shards) == 1:
            out = slicing.gather(shards[0], ids, name=scope if max_norm is None else None)
            return _clip(out, max_norm, scope)
        n = len(shards)
        ids64 = math_ops.cast(ids, dtypes.int64)
        if partition_strategy == "mod":
            part = math_ops.floormod(ids64, n)
            local = math_ops.floordiv(ids64, n)
        else:
            total = _rows(shards[0])
            for p in shards[1:]:
                total = total + _rows(p)
            per = math_ops.floordiv(total, n)
            extras = math_ops.floormod(total, n)
            # The first ``extras`` shards hold ``per + 1`` ids each.
            big = extras * (per + 1)
            part = math_ops.where_v2(
                math_ops.less(ids64, big),
                math_ops.floordiv(ids64, per + 1),
                extras + math_ops.floordiv(ids64 - big, math_ops.maximum(per, 1)),
            )
            local = math_ops.where_v2(
                math_ops.less(ids64, big),
                math_ops.floormod(ids64, per + 1),
                math_ops.floormod(ids64 - big, math_ops.maximum(per, 1)),
            )
        out = None
        for k, p in enumerate(shards):
            mine = math_ops.equal(part, k)
            rows = _rows(p)
            # Ids of other shards look up row 0 of this one and are masked away.
            safe = math_ops.where_v2(mine, local, array_ops.zeros_like(local))
            safe = math_ops.minimum(safe, math_ops.maximum(rows - 1, 0))
            got = slicing.gather(p, safe)
            rank_extra = got.shape.rank - mine.shape.rank if got.shape.rank is not None else 1
            mask = mine
            for _ in range(max(rank_extra, 0)):
                mask = array_ops.expand_dims(mask, -1)
            piece = math_ops.where_v2(mask, got, array_ops.zeros_like(got))
            out = piece if out is None else out + piece
        return _clip(
            array_ops.identity(out, name=scope if max_norm is None else None), max_norm, scope
        )


def _clip(x, max_norm, scope):
    if max_norm is None:
        return x
    # Each looked-up vector (the last axis) scaled down to at most ``max_norm``.
    norm = math_ops.sqrt(reduction.reduce_sum(math_ops.square(x), axis=-1, keepdims=True))
    limit = constant(max_norm, dtype=x.dtype.base_dtype)
    scale = math_ops.minimum(1.0, limit / math_ops.maximum(norm, limit))
    return math_ops.multiply(x, scale, name=scope)


# -----------------------------------------------------------------------------------------
# Candidate samplers
# -----------------------------------------------------------------------------------------


def _sampler_infer(o):
    t = o._inputs[0]
    if t._dtype.base_dtype is not dtypes.int64:
        raise TypeError(f"true_classes must be int64, got {t._dtype.name}")
    s = t._shape
    if s.rank not in (None, 2):
        raise ShapeError(f"Shape must be rank 2 but is rank {s.rank}")
    num_true, num_sampled = o._attrs["num_true"], o._attrs["num_sampled"]
    if s.rank == 2 and s.as_tuple()[1] not in (None, num_true):
        raise ShapeError(f"true_classes must have {num_true} columns, got {s}")
    batch = s.as_tuple()[0] if s.rank == 2 else None
    return [
        (dtypes.int64, TensorShape([num_sampled])),
        (dtypes.float32, TensorShape([batch, num_true])),
        (dtypes.float32, TensorShape([num_sampled])),
    ]


def _probability(kind: str, classes, range_max: int):
    classes = np.asarray(classes, dtype=np.float64)
    if kind == "log_uniform":
        return (np.log(classes + 2.0) - np.log(classes + 1.0)) / np.log(range_max + 1.0)
    return np.full(classes.shape, 1.0 / range_max)


def _expected(p, num_sampled, num_tries):
    if num_tries == num_sampled:
        return p * num_sampled
    return -np.expm1(num_tries * np.log1p(-p))


def _draw(kind, rng, n, range_max):
    if kind == "log_uniform":
        v = np.floor(np.exp(rng.random(n) * np.log(range_max + 1.0))).astype(np.int64) - 1
        return np.clip(v, 0, range_max - 1)
    return rng.integers(0, range_max, n, dtype=np.int64)


def _sample(kind, rng, true_classes, num_true, num_sampled, unique, range_max):
    true_classes = np.asarray(true_classes)
    if true_classes.ndim != 2 or true_classes.shape[1] != num_true:
        raise errors.InvalidArgumentError(
            None, None, f"true_classes must be a matrix with {num_true} columns"
        )
    if unique and num_sampled > range_max:
        raise errors.InvalidArgumentError(
            None, None, "Sampler's range is too small: num_sampled > range_max with unique"
        )
    if unique:
        chosen, seen, tries = [], set(), 0
        while len(chosen) < num_sampled:
            for v in _draw(kind, rng, num_sampled, range_max):
                tries += 1
                if v not in seen:
                    seen.add(int(v))
                    chosen.append(int(v))
                    if len(chosen) == num_sampled:
                        break
        sampled = np.array(chosen, dtype=np.int64)
    else:
        sampled = _draw(kind, rng, num_sampled, range_max)
        tries = num_sampled
    true_expected = _expected(_probability(kind, true_classes, range_max), num_sampled, tries)
    sampled_expected = _expected(_probability(kind, sampled, range_max), num_sampled, tries)
    return sampled, true_expected.astype(np.float32), sampled_expected.astype(np.float32)


def _sampler_bind(o, ctx):
    return {"rng": ctx.rng(o._attrs["seed"], o._attrs["seed2"])}


def _sampler_kernel(kind):
    def kernel(xp, true_classes, *, num_true, num_sampled, unique, range_max, seed=0, seed2=0, rng):
        host = np.asarray(true_classes.get() if hasattr(true_classes, "get") else true_classes)
        out = _sample(kind, rng, host, num_true, num_sampled, unique, range_max)
        return tuple(xp.asarray(v) for v in out)

    return kernel


for _kind, _type in (
    ("log_uniform", "LogUniformCandidateSampler"),
    ("uniform", "UniformCandidateSampler"),
):
    op(
        _type,
        infer=_sampler_infer,
        bind=_sampler_bind,
        differentiable=False,
        inputs=("true_classes",),
        attrs=(
            Attr("num_true", "int"),
            Attr("num_sampled", "int"),
            Attr("unique", "bool"),
            Attr("range_max", "int"),
            Attr("seed", "int", default=0),
            Attr("seed2", "int", default=0),
        ),
        flags=OpFlags(stateful=True, device_types=("CPU",)),
    )(_sampler_kernel(_kind))


def _sampler(op_type, true_classes, num_true, num_sampled, unique, range_max, seed, name):
    if int(range_max) < 1 or int(num_sampled) < 1 or int(num_true) < 1:
        raise ValueError("num_true, num_sampled and range_max must be positive")
    s1, s2 = get_seed(seed)
    with name_scope(name, op_type, [true_classes]) as scope:
        t = math_ops.cast(convert_to_tensor(true_classes), dtypes.int64)
        attrs = {
            "num_true": int(num_true),
            "num_sampled": int(num_sampled),
            "unique": bool(unique),
            "range_max": int(range_max),
            "seed": s1 or 0,
            "seed2": s2 or 0,
        }
        return tuple(create(op_type, [t], attrs, scope).outputs)


def log_uniform_candidate_sampler(
    true_classes, num_true, num_sampled, unique, range_max, seed=None, name=None
):
    """Samples ``num_sampled`` classes from Zipf's law over ``[0, range_max)``; returns
    ``(sampled_candidates, true_expected_count, sampled_expected_count)``."""
    return _sampler(
        "LogUniformCandidateSampler",
        true_classes,
        num_true,
        num_sampled,
        unique,
        range_max,
        seed,
        name,
    )


def uniform_candidate_sampler(
    true_classes, num_true, num_sampled, unique, range_max, seed=None, name=None
):
    """Samples ``num_sampled`` classes uniformly from ``[0, range_max)``."""
    return _sampler(
        "UniformCandidateSampler",
        true_classes,
        num_true,
        num_sampled,
        unique,
        range_max,
        seed,
        name,
    )


# -----------------------------------------------------------------------------------------
# Sampled losses
# -----------------------------------------------------------------------------------------


def _compute_sampled_logits(
    weights,
    biases,
    labels,
    inputs,
    num_sampled,
    num_classes,
    num_true,
    sampled_values,
    subtract_log_q,
    remove_accidental_hits,
    partition_strategy,
    seed,
    name,
):
    weights = list(weights) if isinstance(weights, (list, tuple)) else [weights]
    with name_scope(name, "compute_sampled_logits", weights + [biases, inputs, labels]):
        labels = math_ops.cast(convert_to_tensor(labels), dtypes.int64)
        inputs = convert_to_tensor(inputs)
        labels_flat = array_ops.reshape(labels, [-1])
        if sampled_values is None:
            sampled_values = log_uniform_candidate_sampler(
                labels, num_true, num_sampled, True, num_classes, seed=seed
            )
        sampled, true_expected, sampled_expected = (
            array_ops.stop_gradient(convert_to_tensor(s)) for s in sampled_values
        )
        sampled = math_ops.cast(sampled, dtypes.int64)
        all_ids = array_transform.concat([labels_flat, sampled], 0)
        all_w = embedding_lookup(weights, all_ids, partition_strategy=partition_strategy)
        n_true = array_ops.shape(labels_flat)[0]
        true_w = all_w[:n_true]
        sampled_w = all_w[n_true:]
        sampled_logits = math_ops.matmul(inputs, sampled_w, transpose_b=True)
        all_b = embedding_lookup(biases, all_ids, partition_strategy=partition_strategy)
        true_b = array_ops.reshape(all_b[:n_true], [-1, num_true])
        sampled_b = all_b[n_true:]
        dim = array_ops.shape(true_w)[1]
        true_w = array_ops.reshape(true_w, array_transform.stack([-1, num_true, dim]))
        true_logits = reduction.reduce_sum(array_ops.expand_dims(inputs, 1) * true_w, axis=2)
        true_logits = true_logits + math_ops.cast(true_b, true_logits.dtype.base_dtype)
        sampled_logits = sampled_logits + sampled_b
        if remove_accidental_hits:
            # A sampled class that is one of the row's labels gets -FLT_MAX added, as TF's
            # compute_accidental_hits + sparse_to_dense do.
            hits = math_ops.equal(
                array_ops.expand_dims(labels, 2), array_ops.reshape(sampled, [1, 1, -1])
            )
            hits = reduction.reduce_any(hits, axis=1)
            penalty = constant(-np.finfo(np.float32).max, dtype=sampled_logits.dtype.base_dtype)
            sampled_logits = sampled_logits + math_ops.where_v2(
                hits, penalty, array_ops.zeros_like(sampled_logits)
            )
        if subtract_log_q:
            true_logits -= math_ops.log(math_ops.cast(true_expected, true_logits.dtype.base_dtype))
            sampled_logits -= math_ops.log(
                math_ops.cast(sampled_expected, sampled_logits.dtype.base_dtype)
            )
        out_logits = array_transform.concat([true_logits, sampled_logits], 1)
        out_labels = array_transform.concat(
            [array_ops.ones_like(true_logits) / num_true, array_ops.zeros_like(sampled_logits)], 1
        )
        return out_logits, out_labels


def nce_loss(
    weights,
    biases,
    labels,
    inputs,
    num_sampled,
    num_classes,
    num_true=1,
    sampled_values=None,
    remove_accidental_hits=False,
    partition_strategy="mod",
    name="nce_loss",
    seed=None,
) -> Tensor:
    """Noise-contrastive estimation loss per example (``[batch]``), sampling negative classes
    from ``log_uniform_candidate_sampler`` unless ``sampled_values`` are given."""
    logits, labels = _compute_sampled_logits(
        weights,
        biases,
        labels,
        inputs,
        num_sampled,
        num_classes,
        num_true,
        sampled_values,
        True,
        remove_accidental_hits,
        partition_strategy,
        seed,
        name,
    )
    losses = nn_losses.sigmoid_cross_entropy_with_logits(
        labels=labels, logits=logits, name="sampled_losses"
    )
    return reduction.reduce_sum(losses, axis=1)


def sampled_softmax_loss(
    weights,
    biases,
    labels,
    inputs,
    num_sampled,
    num_classes,
    num_true=1,
    sampled_values=None,
    remove_accidental_hits=True,
    partition_strategy="mod",
    name="sampled_softmax_loss",
    seed=None,
) -> Tensor:
    """Softmax cross entropy over the true classes and ``num_sampled`` sampled ones, per
    example (``[batch]``)."""
    logits, labels = _compute_sampled_logits(
        weights,
        biases,
        labels,
        inputs,
        num_sampled,
        num_classes,
        num_true,
        sampled_values,
        True,
        remove_accidental_hits,
        partition_strategy,
        seed,
        name,
    )
    labels = array_ops.stop_gradient(labels, name="labels_stop_gradient")
    return nn_losses.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
