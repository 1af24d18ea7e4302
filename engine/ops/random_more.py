"""Random shuffles and categorical draws (TF1's ``tf.random_shuffle`` and
``tf.multinomial`` / ``tf.random.categorical``), seeded as the other random ops
(``engine/ops/random.py``): one generator per op and session, the same values in every session
when a graph or op seed is set, new values on each run. The values cannot match TF's bits (TF
draws from Philox); the distributions and the seeding rules do.
"""

from __future__ import annotations

import numpy as np

from engine import dtypes, errors
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.registry import Attr, OpFlags, ShapeError, op
from engine.framework.tensor_util import constant_value
from engine.ops._common import INDEX, NUMERIC, check_dtype, create, dims_text
from engine.ops.random import _rng_bind, _seed_attrs
from engine.tensor_shape import TensorShape

__all__ = ["random_shuffle", "multinomial", "categorical"]

_SEED_ATTRS = (Attr("seed", "int?"), Attr("seed2", "int?"))


def _shuffle_infer(o):
    x = o._inputs[0]
    return [(x._dtype.base_dtype, x._shape)]


@op(
    "RandomShuffle",
    infer=_shuffle_infer,
    bind=_rng_bind,
    differentiable=False,
    inputs=("value",),
    attrs=_SEED_ATTRS,
    flags=OpFlags(stateful=True),
)
def _random_shuffle(xp, value, *, seed, seed2, rng):
    if value.ndim == 0 or value.shape[0] <= 1:
        return value.copy()
    perm = rng.permutation(value.shape[0])
    return value[perm if xp is np else xp.asarray(perm)]


def _multinomial_infer(o):
    logits, num_samples = o._inputs
    check_dtype(o, 0, NUMERIC)
    check_dtype(o, 1, frozenset([dtypes.int32]), "num_samples")
    if logits._shape.rank not in (None, 2):
        raise ShapeError(f"Shape must be rank 2 but is rank {logits._shape.rank}")
    if num_samples._shape.rank not in (None, 0):
        raise ShapeError(f"Shape must be rank 0 but is rank {num_samples._shape.rank}")
    out = o._attrs["output_dtype"]
    if out not in INDEX:
        raise TypeError(f"output_dtype must be int32 or int64, got {out.name}")
    batch = logits._shape.as_tuple()[0] if logits._shape.rank == 2 else None
    samples = constant_value(num_samples)
    return [(out, TensorShape([batch, None if samples is None else int(samples)]))]


def _check_multinomial(logits, num_samples) -> int:
    """TF's runtime checks, in its order; the number of samples."""
    if logits.ndim != 2:
        raise errors.InvalidArgumentError(
            None, None, f"logits should be a matrix, got shape {dims_text(logits.shape)}"
        )
    if np.ndim(num_samples) != 0:
        raise errors.InvalidArgumentError(
            None, None, f"num_samples should be a scalar, got shape {dims_text(num_samples.shape)}"
        )
    n = int(num_samples)
    if n < 0:
        raise errors.InvalidArgumentError(
            None, None, f"num_samples should be non-negative, got {n}"
        )
    if logits.shape[1] <= 0:
        raise errors.InvalidArgumentError(
            None, None, f"num_classes should be positive, got {logits.shape[1]}"
        )
    return n


def _upper_bounds(xp, cdf, targets):
    """Per row, how many entries of the ascending ``cdf`` are <= each target (C++'s
    ``upper_bound``): one binary search per row, so memory stays at the output's size."""
    out = xp.empty(targets.shape, dtype=np.int64)
    for row in range(cdf.shape[0]):
        out[row] = xp.searchsorted(cdf[row], targets[row], side="right")
    return out


@op(
    "Multinomial",
    infer=_multinomial_infer,
    bind=_rng_bind,
    differentiable=False,
    inputs=("logits", "num_samples"),
    attrs=(*_SEED_ATTRS, Attr("output_dtype", "type", default=dtypes.int64)),
    flags=OpFlags(stateful=True, host_inputs=(1,)),
)
def _multinomial(xp, logits, num_samples, *, seed, seed2, output_dtype=dtypes.int64, rng):
    n = _check_multinomial(logits, num_samples)
    batch = logits.shape[0]
    if batch == 0 or n == 0:
        return xp.zeros((batch, n), dtype=output_dtype.np)
    # As TF's CPU kernel: in float64, non-finite logits get no weight, and each draw is the
    # first class whose cumulative weight exceeds uniform * total (num_classes for a row
    # without finite logits).
    z = logits.astype(np.float64)
    finite = xp.isfinite(z)
    top = xp.max(xp.where(finite, z, -np.inf), axis=1, keepdims=True)
    top = xp.where(xp.isfinite(top), top, 0.0)
    cdf = xp.cumsum(xp.exp(xp.where(finite, z - top, -np.inf)), axis=1)
    uniform = rng.random((batch, n))
    targets = (uniform if xp is np else xp.asarray(uniform)) * cdf[:, -1:]
    return _upper_bounds(xp, cdf, targets).astype(output_dtype.np)


def random_shuffle(value, seed=None, name=None) -> Tensor:
    """``value`` with its first dimension randomly permuted (each run a new permutation).

    >>> rows = random_shuffle(constant([[1, 2], [3, 4], [5, 6]]), seed=7)
    """
    with name_scope(name, "RandomShuffle", [value]) as scope:
        x = convert_to_tensor(value, name="value")
        return create("RandomShuffle", [x], _seed_attrs(seed), scope).outputs[0]


def _draw_classes(logits, num_samples, dtype, seed) -> Tensor:
    dtype = dtypes.as_dtype(dtype or dtypes.int64).base_dtype
    if dtype not in INDEX:
        raise ValueError(
            f"Argument `dtype` got invalid value {dtype!r}. Accepted dtypes are "
            "(tf.int32, tf.int64)."
        )
    x = convert_to_tensor(logits, name="logits")
    ns = convert_to_tensor(num_samples, dtype_hint=dtypes.int32, name="num_samples")
    if ns.dtype.base_dtype is not dtypes.int32:
        raise TypeError(
            f"Input 'num_samples' of 'Multinomial' Op has type {ns.dtype.base_dtype.name} that "
            "does not match expected type of int32."
        )
    attrs = {"output_dtype": dtype, **_seed_attrs(seed)}
    return create("Multinomial", [x, ns], attrs, None).outputs[0]


def multinomial(logits, num_samples, seed=None, name=None, output_dtype=None) -> Tensor:
    """``num_samples`` class indices per row of the 2-D ``logits``, drawn from
    ``softmax(logits)`` (int64 unless ``output_dtype`` is int32).

    >>> samples = multinomial(log([[0.5, 0.5]]), 10)  # shape [1, 10], values in {0, 1}
    """
    with name_scope(name, "multinomial", [logits]):
        return _draw_classes(logits, num_samples, output_dtype, seed)


def categorical(logits, num_samples, dtype=None, seed=None, name=None) -> Tensor:
    """``tf.random.categorical``: ``multinomial`` with ``dtype`` for the output dtype."""
    with name_scope(name, "categorical", [logits]):
        return _draw_classes(logits, num_samples, dtype, seed)
