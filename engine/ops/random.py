"""Random ops: normal, uniform and truncated normal draws, seeded as in TF1.

Each random op owns a generator per session. With an op seed or a graph seed
(``set_random_seed``) the sequence of values is the same in every session and every run of the
program; without either it is fresh each time. Every ``Session.run`` draws new values.
"""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import get_default_graph, name_scope
from engine.framework.registry import Attr, OpFlags, ShapeError, op
from engine.framework.tensor_util import constant_value_as_shape
from engine.ops import math as math_ops
from engine.ops._common import FLOATS, INDEX, create

DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2**31 - 1


def set_random_seed(seed) -> None:
    """Sets the graph-level seed of the default graph."""
    get_default_graph().seed = seed


def get_seed(op_seed):
    """The (graph seed, op seed) pair a random op uses, following TF1's rules."""
    graph = get_default_graph()
    global_seed = graph.seed
    if global_seed is not None:
        if op_seed is None:
            op_seed = graph._next_id
        seeds = (int(global_seed), int(op_seed))
    elif op_seed is not None:
        seeds = (DEFAULT_GRAPH_SEED, int(op_seed))
    else:
        seeds = (None, None)
    if seeds == (0, 0):
        seeds = (0, _MAXINT32)  # (0, 0) means "unseeded" to the kernels
    return seeds


def _random_infer(o):
    shape = o._inputs[0]
    if shape._dtype.base_dtype not in INDEX:
        raise TypeError(f"shape must be int32 or int64, got {shape._dtype.name}")
    if shape._shape.rank not in (None, 1):
        raise ShapeError(f"Shape must be rank 1 but is rank {shape._shape.rank}")
    dtype = o._attrs["dtype"]
    if dtype not in FLOATS:
        raise TypeError(f"random ops produce floating dtypes, not {dtype.name}")
    return [(dtype, constant_value_as_shape(shape))]


def _rng_bind(o, ctx):
    return {"rng": ctx.rng(o._attrs["seed"], o._attrs["seed2"])}


def _dims(shape):
    dims = list(shape.tolist())  # one copy to the host, not one per element
    if any(d < 0 for d in dims):
        raise ValueError(f"shape must be non-negative, got {dims}")
    return dims


def _draw(xp, values, dtype):
    return values.astype(dtype.np, copy=False) if xp is np else xp.asarray(values, dtype.np)


@op(
    "RandomStandardNormal",
    infer=_random_infer,
    bind=_rng_bind,
    differentiable=False,
    inputs=("shape",),
    attrs=(
        Attr("dtype", "type"),
        Attr("seed", "int?"),
        Attr("seed2", "int?"),
    ),
    flags=OpFlags(stateful=True, host_inputs=(0,)),
)
def _standard_normal(xp, shape, *, dtype, seed, seed2, rng):
    return _draw(xp, rng.standard_normal(_dims(shape)), dtype)


@op(
    "RandomUniform",
    infer=_random_infer,
    bind=_rng_bind,
    differentiable=False,
    inputs=("shape",),
    attrs=(
        Attr("dtype", "type"),
        Attr("seed", "int?"),
        Attr("seed2", "int?"),
    ),
    flags=OpFlags(stateful=True, host_inputs=(0,)),
)
def _uniform(xp, shape, *, dtype, seed, seed2, rng):
    return _draw(xp, rng.random(_dims(shape)), dtype)


@op(
    "TruncatedNormal",
    infer=_random_infer,
    bind=_rng_bind,
    differentiable=False,
    inputs=("shape",),
    attrs=(
        Attr("dtype", "type"),
        Attr("seed", "int?"),
        Attr("seed2", "int?"),
    ),
    flags=OpFlags(stateful=True, host_inputs=(0,)),
)
def _truncated_normal(xp, shape, *, dtype, seed, seed2, rng):
    dims = _dims(shape)
    out = rng.standard_normal(dims)
    bad = np.abs(out) > 2.0
    # Redraw values beyond two standard deviations (about 4.6% of draws per round).
    while bad.any():
        out[bad] = rng.standard_normal(int(bad.sum()))
        bad = np.abs(out) > 2.0
    return _draw(xp, out, dtype)


def _uniform_int_infer(o):
    shape, lo, hi = o._inputs
    if lo._dtype.base_dtype is not hi._dtype.base_dtype or lo._dtype.base_dtype not in INDEX:
        raise TypeError("random_uniform with an integer dtype needs int32 or int64 bounds")
    return [(lo._dtype.base_dtype, constant_value_as_shape(shape))]


@op(
    "RandomUniformInt",
    infer=_uniform_int_infer,
    bind=_rng_bind,
    differentiable=False,
    inputs=("shape", "minval", "maxval"),
    attrs=(
        Attr("seed", "int?"),
        Attr("seed2", "int?"),
    ),
    flags=OpFlags(stateful=True, host_inputs=(0, 1, 2)),
)
def _uniform_int(xp, shape, lo, hi, *, seed, seed2, rng):
    if not lo < hi:
        raise ValueError(f"Need minval < maxval: {lo} >= {hi}")
    v = rng.integers(int(lo), int(hi), size=_dims(shape), dtype=lo.dtype)
    return v if xp is np else xp.asarray(v)


def _seed_attrs(seed):
    s1, s2 = get_seed(seed)
    return {"seed": 0 if s1 is None else s1, "seed2": 0 if s2 is None else s2}


def _shape_tensor(shape):
    return convert_to_tensor(shape, dtype_hint=dtypes.int32, name="shape")


def random_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    """Draws from a normal distribution with ``mean`` and ``stddev``."""
    dtype = dtypes.as_dtype(dtype).base_dtype
    with name_scope(name, "random_normal", [shape, mean, stddev]) as scope:
        s = _shape_tensor(shape)
        m = convert_to_tensor(mean, dtype=dtype, name="mean")
        sd = convert_to_tensor(stddev, dtype=dtype, name="stddev")
        rnd = create(
            "RandomStandardNormal", [s], {"dtype": dtype, **_seed_attrs(seed)}, None
        ).outputs[0]

        return math_ops.add(math_ops.multiply(rnd, sd, name="mul"), m, name=scope)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    """Draws from a normal distribution, redrawing values beyond two standard deviations."""
    dtype = dtypes.as_dtype(dtype).base_dtype
    with name_scope(name, "truncated_normal", [shape, mean, stddev]) as scope:
        s = _shape_tensor(shape)
        m = convert_to_tensor(mean, dtype=dtype, name="mean")
        sd = convert_to_tensor(stddev, dtype=dtype, name="stddev")
        rnd = create("TruncatedNormal", [s], {"dtype": dtype, **_seed_attrs(seed)}, None).outputs[0]

        return math_ops.add(math_ops.multiply(rnd, sd, name="mul"), m, name=scope)


def random_uniform(shape, minval=0, maxval=None, dtype=dtypes.float32, seed=None, name=None):
    """Draws uniformly from ``[minval, maxval)`` (``maxval`` defaults to 1 for floats)."""
    dtype = dtypes.as_dtype(dtype).base_dtype
    with name_scope(name, "random_uniform", [shape, minval, maxval]) as scope:
        s = _shape_tensor(shape)
        if dtype.is_integer:
            if maxval is None:
                raise ValueError(f"Must specify maxval for integer dtype {dtype.name}")
            lo = convert_to_tensor(minval, dtype=dtype, name="min")
            hi = convert_to_tensor(maxval, dtype=dtype, name="max")
            return create("RandomUniformInt", [s, lo, hi], _seed_attrs(seed), scope).outputs[0]
        lo = convert_to_tensor(minval, dtype=dtype, name="min")
        hi = convert_to_tensor(1 if maxval is None else maxval, dtype=dtype, name="max")
        rnd = create("RandomUniform", [s], {"dtype": dtype, **_seed_attrs(seed)}, None).outputs[0]

        rng = math_ops.subtract(hi, lo, name="sub")
        return math_ops.add(math_ops.multiply(rnd, rng, name="mul"), lo, name=scope)
