"""TF op types that imported graphs hold and the engine's Python API builds from other ops:
``BatchNormWithGlobalNormalization`` (2016-era graphs such as Inception v3's), ``LinSpace``,
``BroadcastArgs``, ``TensorScatterUpdate``/``Add``/``Sub``/``Max``/``Min``, ``Bincount``,
``DenseBincount`` and ``RaggedBincount`` (Keras' count and multi-hot encodings) and TF2's banded
diagonal ops ``MatrixDiagV3``/``MatrixDiagPartV3``/``MatrixSetDiagV3`` (with ``align``).
Kernels follow TF's CPU kernels; each is checked against TF 2.21's outputs
(tests/engine/formats/test_tf_legacy_ops.py)."""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.framework.registry import Attr, OpFlags, ShapeError, op
from engine.framework.tensor_util import constant_value
from engine.ops._common import INDEX, base, check_dtype
from engine.ops.array import _invalid
from engine.tensor_shape import TensorShape, unknown_shape

__all__ = []

_FLOATS = frozenset([dtypes.float16, dtypes.float32, dtypes.float64])


def _same_as_first(o):
    return [(base(o._inputs[0]), o._inputs[0]._shape)]


@op(
    "BatchNormWithGlobalNormalization",
    infer=_same_as_first,
    differentiable=False,
    inputs=("t", "m", "v", "beta", "gamma"),
    attrs=(Attr("variance_epsilon", "float"), Attr("scale_after_normalization", "bool")),
)
def _batch_norm_global(xp, t, m, v, beta, gamma, *, variance_epsilon, scale_after_normalization):
    for name, vec in (("m", m), ("v", v), ("beta", beta), ("gamma", gamma)):
        if vec.ndim != 1 or vec.shape[0] != t.shape[-1]:
            raise _invalid(f"{name} must be a vector of the {t.shape[-1]} channels of t")
    scaling = 1 / xp.sqrt(v + t.dtype.type(variance_epsilon))
    if scale_after_normalization:
        scaling = scaling * gamma
    return ((t - m) * scaling + beta).astype(t.dtype)


def _linspace_infer(o):
    check_dtype(o, 0, _FLOATS)
    check_dtype(o, 2, INDEX, "Tidx")
    num = constant_value(o._inputs[2])
    return [(base(o._inputs[0]), TensorShape([None if num is None else int(num)]))]


@op(
    "LinSpace",
    infer=_linspace_infer,
    differentiable=False,
    inputs=("start", "stop", "num"),
    flags=OpFlags(host_inputs=(2,)),
)
def _linspace(xp, start, stop, num):
    n = int(num)
    if n <= 0:
        raise _invalid(f"Requires num > 0: {n}")
    if np.ndim(start) or np.ndim(stop):
        raise _invalid("start and stop must be scalars")
    dtype = np.asarray(start).dtype.type
    if n == 1:
        return xp.asarray([start], dtype=dtype)
    step = (stop - start) / dtype(n - 1)
    return (start + xp.arange(n, dtype=dtype) * step).astype(dtype)


def _broadcast_args_infer(o):
    check_dtype(o, 0, INDEX)
    n = [t._shape.as_tuple()[0] if t._shape.rank == 1 else None for t in o._inputs]
    return [(base(o._inputs[0]), TensorShape([None if None in n else max(n)]))]


@op(
    "BroadcastArgs",
    infer=_broadcast_args_infer,
    differentiable=False,
    inputs=("s0", "s1"),
    flags=OpFlags(device_types=("CPU",)),
)
def _broadcast_args(xp, s0, s1):
    try:
        shape = np.broadcast_shapes(tuple(s0.tolist()), tuple(s1.tolist()))
    except ValueError:
        raise _invalid(f"Incompatible shapes: {s0.tolist()} vs. {s1.tolist()}") from None
    return np.asarray(shape, dtype=s0.dtype)


def _scatter_infer(o):
    check_dtype(o, 1, INDEX, "Tindices")
    if base(o._inputs[2]) is not base(o._inputs[0]):
        raise ShapeError(
            f"updates has dtype {base(o._inputs[2]).name}, tensor {base(o._inputs[0]).name}"
        )
    return [(base(o._inputs[0]), o._inputs[0]._shape)]


def _scatter(kind):
    def kernel(xp, tensor, indices, updates):
        idx = np.asarray(indices).astype(np.int64)
        k = idx.shape[-1] if idx.ndim else 0
        if idx.ndim == 0 or k > tensor.ndim:
            raise _invalid(f"indices must have a last dimension of at most {tensor.ndim}")
        want = idx.shape[:-1] + tensor.shape[k:]
        if tuple(updates.shape) != want:
            raise _invalid(f"updates must have shape {list(want)}, got {list(updates.shape)}")
        flat = idx.reshape(-1, k)
        bad = np.any((flat < 0) | (flat >= np.asarray(tensor.shape[:k])), axis=1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise _invalid(
                f"indices[{i}] = {flat[i].tolist()} does not index into shape {list(tensor.shape)}"
            )
        out = xp.array(tensor, copy=True)
        where = tuple(flat.T)
        vals = updates.reshape((-1,) + tuple(tensor.shape[k:]))
        if kind == "update":
            out[where] = vals
        else:
            getattr(np, kind).at(out, where, vals)
        return out

    return kernel


for _name, _kind in (
    ("TensorScatterUpdate", "update"),
    ("TensorScatterAdd", "add"),
    ("TensorScatterSub", "subtract"),
    ("TensorScatterMax", "maximum"),
    ("TensorScatterMin", "minimum"),
):
    op(
        _name,
        infer=_scatter_infer,
        differentiable=False,
        inputs=("tensor", "indices", "updates"),
        flags=OpFlags(device_types=("CPU",), host_inputs=(1,)),
    )(_scatter(_kind))


def _bincount_infer(o):
    check_dtype(o, 0, INDEX, "Tidx")
    size = constant_value(o._inputs[1])
    n = None if size is None else int(size)
    rows = o._inputs[0]._shape
    lead = [] if rows.rank in (None, 1) else [rows.as_tuple()[0]]
    if rows.rank is None:
        return [(base(o._inputs[2]), unknown_shape())]
    return [(base(o._inputs[2]), TensorShape(lead + [n]))]


def _count(values: np.ndarray, size: int, weights: np.ndarray, binary: bool, dtype):
    """Counts (or summed weights) of ``values`` in [0, size) along the last axis."""
    if values.size and values.min() < 0:
        raise _invalid("Input arr must be non-negative!")
    if size < 0:
        raise _invalid(f"size ({size}) must be non-negative")
    if weights.size and weights.shape != values.shape:
        raise _invalid(
            f"weights must be empty or have the shape of the input, got "
            f"{list(weights.shape)} and {list(values.shape)}"
        )
    rows = values.reshape(1, -1) if values.ndim <= 1 else values.reshape(-1, values.shape[-1])
    w = weights.reshape(rows.shape) if weights.size else None
    out = np.zeros((rows.shape[0], size), dtype)
    keep = rows < size
    r, c = np.nonzero(keep)
    if binary:
        out[r, rows[keep]] = 1
    else:
        np.add.at(out, (r, rows[keep]), 1 if w is None else w[r, c])
    return out.reshape(values.shape[:-1] + (size,)) if values.ndim > 1 else out[0]


@op(
    "DenseBincount",
    infer=_bincount_infer,
    differentiable=False,
    inputs=("input", "size", "weights"),
    attrs=(Attr("binary_output", "bool", default=False),),
    flags=OpFlags(device_types=("CPU",), host_inputs=(1,)),
)
def _dense_bincount(xp, values, size, weights, *, binary_output=False):
    values, weights = np.asarray(values), np.asarray(weights)
    if values.ndim > 2:
        raise _invalid(f"input must be at most rank 2, got rank {values.ndim}")
    return _count(values, int(size), weights, binary_output, weights.dtype)


@op(
    "Bincount",
    infer=_bincount_infer,
    differentiable=False,
    inputs=("arr", "size", "weights"),
    flags=OpFlags(device_types=("CPU",), host_inputs=(1,)),
)
def _bincount(xp, values, size, weights):
    values, weights = np.asarray(values), np.asarray(weights)
    return _count(values.reshape(-1), int(size), weights.reshape(-1), False, weights.dtype)


def _ragged_bincount_infer(o):
    check_dtype(o, 1, INDEX, "Tidx")
    size = constant_value(o._inputs[2])
    splits = o._inputs[0]._shape
    rows = splits.as_tuple()[0] - 1 if splits.rank == 1 and splits.as_tuple()[0] else None
    return [(base(o._inputs[3]), TensorShape([rows, None if size is None else int(size)]))]


@op(
    "RaggedBincount",
    infer=_ragged_bincount_infer,
    differentiable=False,
    inputs=("splits", "values", "size", "weights"),
    attrs=(Attr("binary_output", "bool", default=False),),
    flags=OpFlags(device_types=("CPU",), host_inputs=(2,)),
)
def _ragged_bincount(xp, splits, values, size, weights, *, binary_output=False):
    splits, values, weights = np.asarray(splits), np.asarray(values), np.asarray(weights)
    n = int(size)
    if splits.ndim != 1 or splits.size < 1 or splits[0] != 0 or np.any(np.diff(splits) < 0):
        raise _invalid("splits must start at 0 and not decrease")
    if splits[-1] != values.size:
        raise _invalid(f"splits end at {splits[-1]}, but there are {values.size} values")
    if weights.size and weights.shape != values.shape:
        raise _invalid("weights must be empty or have the shape of values")
    out = np.zeros((splits.size - 1, n), weights.dtype)
    for row, (a, b) in enumerate(zip(splits[:-1], splits[1:])):
        w = weights[a:b] if weights.size else np.zeros(0, weights.dtype)
        out[row] = _count(values[a:b], n, w, binary_output, weights.dtype)
    return out


# -- banded diagonals (TF2's V3 forms) ------------------------------------------------------

_ALIGN = ("RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT")


def _band(k) -> tuple[int, int]:
    ks = [int(v) for v in np.asarray(k).reshape(-1).tolist()]
    if not 1 <= len(ks) <= 2:
        raise _invalid(f"k must be a scalar or a pair, got {ks}")
    lo, hi = ks[0], ks[-1]
    if lo > hi:
        raise _invalid(f"k[0] must not be greater than k[1]: {lo} > {hi}")
    return lo, hi


def _diagonal_cells(rows: int, cols: int, lo: int, hi: int, align: str):
    """For each diagonal d in [lo, hi] (top first): its (row, col) cells and their slot in
    the packed diagonal, aligned as TF's ``align`` says."""
    if align not in _ALIGN:
        raise _invalid(f"align must be one of {_ALIGN}, got {align!r}")
    super_left = align.startswith("LEFT")
    sub_left = align.endswith("LEFT")
    width = max(
        min(rows + min(0, d), cols - max(0, d)) for d in range(lo, hi + 1)
    )  # longest diagonal in the band
    cells = []
    for slot_row, d in enumerate(range(hi, lo - 1, -1)):
        length = min(rows + min(0, d), cols - max(0, d))
        if length <= 0:
            continue
        right = (d >= 0 and not super_left) or (d <= 0 and not sub_left)
        offset = width - length if right else 0
        i = np.arange(length)
        r, c = i - min(0, d), i + max(0, d)
        cells.append((slot_row, r, c, i + offset))
    return max(width, 0), cells


def _diag_infer(o):
    return [(base(o._inputs[0]), unknown_shape())]


@op(
    "MatrixDiagV3",
    infer=_diag_infer,
    differentiable=False,
    inputs=("diagonal", "k", "num_rows", "num_cols", "padding_value"),
    attrs=(Attr("align", "string", default="RIGHT_LEFT"),),
    flags=OpFlags(device_types=("CPU",), host_inputs=(1, 2, 3)),
)
def _matrix_diag_v3(xp, diagonal, k, num_rows, num_cols, padding_value, *, align="RIGHT_LEFT"):
    lo, hi = _band(k)
    diag = np.asarray(diagonal)
    if lo == hi:
        diag = diag[..., None, :]
    width = diag.shape[-1]
    rows, cols = int(num_rows), int(num_cols)
    min_rows, min_cols = width - min(hi, 0), width + max(lo, 0)
    if rows == -1 and cols == -1:
        rows = cols = max(min_rows, min_cols)
    elif rows == -1:
        rows = min_rows
    elif cols == -1:
        cols = min_cols
    if rows < min_rows or cols < min_cols:
        raise _invalid(f"The number of rows or columns is too small for {width} diagonal values")
    out = np.full(diag.shape[:-2] + (rows, cols), padding_value, diag.dtype)
    _, cells = _diagonal_cells(rows, cols, lo, hi, align)
    for slot_row, r, c, slot in cells:
        out[..., r, c] = diag[..., slot_row, slot]
    return out


@op(
    "MatrixDiagPartV3",
    infer=_diag_infer,
    differentiable=False,
    inputs=("input", "k", "padding_value"),
    attrs=(Attr("align", "string", default="RIGHT_LEFT"),),
    flags=OpFlags(device_types=("CPU",), host_inputs=(1,)),
)
def _matrix_diag_part_v3(xp, x, k, padding_value, *, align="RIGHT_LEFT"):
    lo, hi = _band(k)
    x = np.asarray(x)
    rows, cols = x.shape[-2:]
    if not (-rows < lo <= hi < cols or (lo == hi == 0)):
        raise _invalid(f"k {[lo, hi]} is out of bounds for a {rows}x{cols} matrix")
    width, cells = _diagonal_cells(rows, cols, lo, hi, align)
    out = np.full(x.shape[:-2] + (hi - lo + 1, width), padding_value, x.dtype)
    for slot_row, r, c, slot in cells:
        out[..., slot_row, slot] = x[..., r, c]
    return out[..., 0, :] if lo == hi else out


@op(
    "MatrixSetDiagV3",
    infer=_same_as_first,
    differentiable=False,
    inputs=("input", "diagonal", "k"),
    attrs=(Attr("align", "string", default="RIGHT_LEFT"),),
    flags=OpFlags(device_types=("CPU",), host_inputs=(2,)),
)
def _matrix_set_diag_v3(xp, x, diagonal, k, *, align="RIGHT_LEFT"):
    lo, hi = _band(k)
    out = np.array(x, copy=True)
    diag = np.asarray(diagonal)
    if lo == hi:
        diag = diag[..., None, :]
    rows, cols = out.shape[-2:]
    width, cells = _diagonal_cells(rows, cols, lo, hi, align)
    if diag.shape[-1] != width or diag.shape[-2] != hi - lo + 1:
        raise _invalid(
            f"diagonal must have shape [..., {hi - lo + 1}, {width}], got {list(diag.shape)}"
        )
    for slot_row, r, c, slot in cells:
        out[..., r, c] = diag[..., slot_row, slot]
    return out
