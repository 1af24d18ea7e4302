"""Feature-column ops of TF1 serving graphs: ``Bucketize`` (the bucket of each value among
sorted boundaries) and ``SparseCross`` (crossed features of sparse and dense columns, as
strings joined by ``_X_`` or as FarmHash fingerprints chained by ``FingerprintCat64``).

``SparseCross`` follows TF's kernel: the columns are the sparse inputs then the dense ones;
each batch row crosses every combination of its columns' features, the last column varying
fastest; a row where a column has no feature has no cross. Hashed crosses fingerprint string
features (int64 ones are used as they are) and take the chain modulo ``num_buckets`` (or
``2**63 - 1`` when it is 0). The number of crosses of a row is bounded by
``MAX_CROSSES`` so a hostile example cannot ask for an unbounded product.
"""

from __future__ import annotations

import itertools

import numpy as np

from engine import dtypes, errors
from engine.framework.registry import Attr, OpFlags, ShapeError, op
from engine.ops._common import check_dtype
from engine.ops.string_hash import fingerprint64, fingerprint_cat64
from engine.tensor_shape import TensorShape

__all__ = ["MAX_CROSSES"]

MAX_CROSSES = 1 << 24
_CPU = OpFlags(device_types=("CPU",))
_INT64_MAX = (1 << 63) - 1


def _bucketize_infer(o):
    check_dtype(o, 0, (dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64))
    b = list(o._attrs["boundaries"])
    if any(x > y for x, y in zip(b, b[1:])):
        raise ValueError(f"Bucketize: expected sorted boundaries, got {b}")
    return [(dtypes.int32, o._inputs[0]._shape)]


@op(
    "Bucketize",
    infer=_bucketize_infer,
    differentiable=False,
    inputs=("input",),
    attrs=(Attr("boundaries", "list(float)"),),
)
def _bucketize(xp, x, *, boundaries):
    # TF's boundaries are floats: a value's bucket counts the boundaries <= it.
    edges = xp.asarray(np.asarray(boundaries, dtype=np.float32).astype(np.float64))
    out = xp.searchsorted(edges, x.astype(np.float64, copy=False).reshape(-1), side="right")
    return out.astype(np.int32).reshape(x.shape)


# -- SparseCross ----------------------------------------------------------------------------


def _cross_infer(o):
    n = o._attrs["N"]
    sparse_types, dense_types = o._attrs["sparse_types"], o._attrs["dense_types"]
    if len(o._inputs) != 3 * n + len(dense_types) or len(sparse_types) != n:
        raise ValueError(
            f"SparseCross expects N={n} sparse inputs (indices, values, shapes) and "
            f"{len(dense_types)} dense ones, got {len(o._inputs)} inputs"
        )
    for i, t in enumerate(o._inputs):
        if i < n or 2 * n <= i < 3 * n:
            check_dtype(o, i, (dtypes.int64,), "indices/shapes")
        elif t._dtype.base_dtype not in (dtypes.int64, dtypes.string):
            raise TypeError(
                f"SparseCross input {i} is {t._dtype.base_dtype.name}: expected int64 or string"
            )
    for t in o._inputs[3 * n :]:
        if t._shape.rank not in (None, 2):
            raise ShapeError(f"SparseCross dense inputs must be rank 2, got {t._shape}")
    if o._attrs["hashed_output"] != (o._attrs["out_type"] is dtypes.int64):
        raise ValueError("SparseCross: out_type must be int64 when hashed_output, else string")
    return [
        (dtypes.int64, TensorShape([None, 2])),
        (o._attrs["out_type"], TensorShape([None])),
        (dtypes.int64, TensorShape([2])),
    ]


def _invalid(msg: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, msg)


def _sparse_rows(indices, values, shape, i: int) -> list[list]:
    """The features of each batch row of sparse input ``i`` (rows in index order)."""
    if indices.ndim != 2 or indices.shape[1] != 2 or np.shape(shape) != (2,):
        raise _invalid(f"Input indices/shape {i} should be a matrix / 2-vector")
    if indices.shape[0] != np.size(values):
        raise _invalid(f"Expected size of values to be {indices.shape[0]} at input {i}")
    batch = int(shape[0])
    rows: list[list] = [[] for _ in range(max(batch, 0))]
    for (r, _), v in zip(indices.tolist(), np.asarray(values).reshape(-1).tolist()):
        if not 0 <= r < batch:
            raise _invalid(f"Input {i}: row index {r} out of range [0, {batch})")
        rows[r].append(v)
    return rows


def _feature(v, hashed: bool):
    if hashed:
        return fingerprint64(v) if isinstance(v, bytes) else int(v) & ((1 << 64) - 1)
    return v if isinstance(v, bytes) else str(int(v)).encode()


def _columns(args, n: int, hashed: bool) -> list[list[list]]:
    cols = [_sparse_rows(args[i], args[n + i], args[2 * n + i], i) for i in range(n)]
    for j, dense in enumerate(args[3 * n :]):
        if dense.ndim != 2:
            raise _invalid(f"Dense inputs should be a matrix, input {3 * n + j} is not")
        cols.append([list(row) for row in np.asarray(dense).tolist()])
    batch = {len(c) for c in cols}
    if len(batch) > 1:
        raise _invalid(f"Expected batch size to be the same for every input, got {sorted(batch)}")
    return [[[_feature(v, hashed) for v in row] for row in col] for col in cols]


def _cross(combo, hashed: bool, num_buckets: int, hash_key: int):
    if not hashed:
        return b"_X_".join(combo)
    h = hash_key & ((1 << 64) - 1)
    for f in combo:
        h = fingerprint_cat64(h, f)
    return h % (num_buckets if num_buckets > 0 else _INT64_MAX)


@op(
    "SparseCross",
    infer=_cross_infer,
    differentiable=False,
    inputs=("indices/values/shapes/dense*",),
    attrs=(
        Attr("N", "int"),
        Attr("hashed_output", "bool"),
        Attr("num_buckets", "int"),
        Attr("hash_key", "int"),
        Attr("sparse_types", "list(type)"),
        Attr("dense_types", "list(type)"),
        Attr("out_type", "type"),
        Attr("internal_type", "type"),
    ),
    flags=_CPU,
)
def _sparse_cross(
    xp,
    *args,
    N,
    hashed_output,
    num_buckets,
    hash_key,
    sparse_types,
    dense_types,
    out_type,
    internal_type,
):
    for v in (*args[N : 2 * N], *args[3 * N :]):
        is_string = np.asarray(v).dtype == object
        if internal_type is dtypes.string and not is_string:
            raise _invalid("Input values should be of internal type 7 but received 9")
    cols = _columns(args, N, hashed_output)
    batch = len(cols[0]) if cols else 0
    indices, values, width = [], [], 0
    for r in range(batch):
        count = int(np.prod([len(c[r]) for c in cols], dtype=object))
        if count > MAX_CROSSES or len(values) + count > MAX_CROSSES:
            raise _invalid(f"SparseCross: more than {MAX_CROSSES} crosses requested")
        for j, combo in enumerate(itertools.product(*(c[r] for c in cols))):
            indices.append((r, j))
            values.append(_cross(combo, hashed_output, num_buckets, hash_key))
        width = max(width, count)
    out_indices = np.array(indices, dtype=np.int64).reshape(-1, 2)
    if hashed_output:
        out_values = np.array(values, dtype=np.uint64).astype(np.int64)
    else:
        out_values = np.empty(len(values), dtype=object)
        out_values[:] = values
    return out_indices, out_values, np.array([batch, width], dtype=np.int64)
