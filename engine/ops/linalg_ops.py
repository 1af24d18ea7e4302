"""Batched matrix ops as TF1 declares them: inverse, determinant, Cholesky, solves, the
diagonal and band family, and the compositions TF builds from them (``matrix_transpose``,
``trace``, ``logdet``).

Every op works on the last two axes and batches over the leading ones. The kernels use
``xp.linalg`` (numpy or cupy: ``inv``, ``det``, ``slogdet``, ``cholesky``, ``solve``);
the triangular solve is a substitution written in ``xp`` ops, since neither numpy nor cupy
has ``solve_triangular`` in ``xp.linalg`` (scipy and cupyx do). LAPACK reports a failed
factorisation as ``LinAlgError``; cupy returns non-finite values instead, so both are turned
into TF's ``InvalidArgumentError``. Gradients are TF's (``linalg_grad.py``,
``array_grad.py``), composed from these same ops.
"""

from __future__ import annotations

import numpy as np

from engine import dtypes, errors
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.registry import Attr, OpFlags, ShapeError, op
from engine.ops import array as array_ops
from engine.ops import array_transform, reduction
from engine.ops import math as math_ops
from engine.ops._common import (
    ALL,
    INDEX,
    broadcast_shape,
    check_dtype,
    check_same_dtype,
    create,
    dims_text,
    is_cupy,
)
from engine.ops.grad_util import unbroadcast
from engine.tensor_shape import Dimension, TensorShape, unknown_shape

__all__ = [
    "adjoint",
    "cholesky",
    "diag",
    "diag_part",
    "logdet",
    "matrix_band_part",
    "matrix_determinant",
    "matrix_diag",
    "matrix_diag_part",
    "matrix_inverse",
    "matrix_set_diag",
    "matrix_solve",
    "matrix_transpose",
    "matrix_triangular_solve",
    "slogdet",
    "trace",
]

LINALG_FLOATS = frozenset([dtypes.float32, dtypes.float64])


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


# -----------------------------------------------------------------------------------------
# Shape functions
# -----------------------------------------------------------------------------------------


def _matrix_dims(
    shape: TensorShape, square: bool, cols_first: bool = False
) -> tuple[list, Dimension, Dimension] | None:
    """``(batch dims, rows, cols)`` of a rank >= 2 shape (rows merged with cols when
    ``square``; ``cols_first`` names them the other way in the error, as TF's determinant),
    or None for an unknown rank."""
    if shape.rank is None:
        return None
    if shape.rank < 2:
        raise ShapeError(f"Shape must be at least rank 2 but is rank {shape.rank}")
    dims = shape.as_list()
    rows, cols = Dimension(dims[-2]), Dimension(dims[-1])
    if square:
        if not rows.is_compatible_with(cols):
            pair = (dims[-1], dims[-2]) if cols_first else (dims[-2], dims[-1])
            raise ShapeError(f"Dimensions must be equal, but are {pair[0]} and {pair[1]}")
        rows = cols = rows.merge_with(cols)
    return dims[:-2], rows, cols


def _square_infer(o):
    """MatrixInverse, Cholesky: ``[..., M, M]`` in and out."""
    d = check_dtype(o, 0, LINALG_FLOATS)
    m = _matrix_dims(o._inputs[0]._shape, square=True)
    if m is None:
        return [(d, unknown_shape())]
    return [(d, TensorShape(m[0] + [m[1].value, m[2].value]))]


def _determinant_infer(o):
    """MatrixDeterminant, LogMatrixDeterminant: ``[..., M, M]`` -> ``[...]``."""
    d = check_dtype(o, 0, LINALG_FLOATS)
    m = _matrix_dims(o._inputs[0]._shape, square=True, cols_first=True)
    out = unknown_shape() if m is None else TensorShape(m[0])
    return [(d, out)]


def _solve_infer(o, broadcast: bool):
    """``[..., M, M]`` and ``[..., M, K]`` -> ``[..., M, K]``; the batch dims merge (MatrixSolve)
    or broadcast (MatrixTriangularSolve)."""
    d = check_same_dtype(o)
    if d not in LINALG_FLOATS:
        check_dtype(o, 0, LINALG_FLOATS)
    a = _matrix_dims(o._inputs[0]._shape, square=True)
    b = _matrix_dims(o._inputs[1]._shape, square=False)
    if a is None or b is None:
        return [(d, unknown_shape())]
    if not a[1].is_compatible_with(b[1]):
        raise ShapeError(f"Dimensions must be equal, but are {a[1].value} and {b[1].value}")
    rows = a[1].merge_with(b[1]).value
    if broadcast:
        batch = broadcast_shape(TensorShape(a[0]), TensorShape(b[0]))
    else:
        batch = TensorShape(a[0]).merge_with(TensorShape(b[0]))
    return [(d, batch.concatenate([rows, b[2].value]))]


# -----------------------------------------------------------------------------------------
# Kernel helpers
# -----------------------------------------------------------------------------------------


def _check_square(x, what: str = "Input") -> None:
    if x.ndim < 2:
        raise _invalid(f"{what} tensor must have rank >= 2, got shape {dims_text(x.shape)}")
    if x.shape[-1] != x.shape[-2]:
        raise _invalid(f"{what} matrix must be square.")


def _lapack(xp, fn, message: str, *args):
    """``fn(*args)``, with a failed factorisation (numpy's ``LinAlgError``, cupy's
    non-finite result) raised as TF's InvalidArgumentError ``message``."""
    try:
        result = fn(*args)
    except np.linalg.LinAlgError:
        raise _invalid(message) from None
    if is_cupy(xp) and not bool(xp.isfinite(result).all()):
        raise _invalid(message)
    return result


def _swap(xp, x):
    return xp.swapaxes(x, -1, -2)


# -----------------------------------------------------------------------------------------
# Inverse, determinants, Cholesky
# -----------------------------------------------------------------------------------------


def _inverse_grad(o, g):
    """-A^-H g A^-H (TF's _MatrixInverseGrad, ``adjoint`` swapping the sides)."""
    ainv = o.outputs[0]
    adj = o.get_attr("adjoint")
    inner = math_ops.matmul(g, ainv, adjoint_a=adj, adjoint_b=not adj)
    return [-math_ops.matmul(ainv, inner, adjoint_a=not adj)]


@op(
    "MatrixInverse",
    infer=_square_infer,
    inputs=("input",),
    attrs=(Attr("adjoint", "bool", default=False),),
    grad=_inverse_grad,
)
def _matrix_inverse_kernel(xp, x, *, adjoint=False):
    _check_square(x)
    if adjoint:
        x = _swap(xp, x)
    return xp.ascontiguousarray(_lapack(xp, xp.linalg.inv, "Input is not invertible.", x))


def _determinant_grad(o, g):
    """g * det(A) * A^-H, per matrix (TF's _MatrixDeterminantGrad)."""
    a, c = o.inputs[0], o.outputs[0]
    a_adj_inv = matrix_inverse(a, adjoint=True)
    shape = array_transform.concat([array_ops.shape(c), [1, 1]], 0)
    return [array_ops.reshape(g * c, shape) * a_adj_inv]


@op("MatrixDeterminant", infer=_determinant_infer, inputs=("input",), grad=_determinant_grad)
def _matrix_determinant_kernel(xp, x):
    _check_square(x)
    return xp.asarray(xp.linalg.det(x), dtype=x.dtype)


def _log_determinant_infer(o):
    ((d, out),) = _determinant_infer(o)
    return [(d, out), (d, out)]


def _log_determinant_grad(o, _, g):
    """g * A^-H: only log|det A| is differentiable (TF's _LogMatrixDeterminantGrad)."""
    a, c = o.inputs[0], o.outputs[1]
    a_adj_inv = matrix_inverse(a, adjoint=True)
    shape = array_transform.concat([array_ops.shape(c), [1, 1]], 0)
    return [array_ops.reshape(g, shape) * a_adj_inv]


@op(
    "LogMatrixDeterminant",
    infer=_log_determinant_infer,
    inputs=("input",),
    grad=_log_determinant_grad,
)
def _log_matrix_determinant_kernel(xp, x):
    _check_square(x)
    sign, logabs = xp.linalg.slogdet(x)
    return xp.asarray(sign, dtype=x.dtype), xp.asarray(logabs, dtype=x.dtype)


def _cholesky_grad(o, g):
    """TF's _CholeskyGrad (Murray 2016, "Differentiation of the Cholesky decomposition")."""
    chol = o.outputs[0]
    identity = matrix_diag(array_ops.ones_like(matrix_diag_part(chol)))
    chol_inverse = matrix_triangular_solve(chol, identity)
    middle = math_ops.matmul(chol, g, adjoint_a=True)
    middle = matrix_set_diag(middle, 0.5 * matrix_diag_part(middle))
    middle = matrix_band_part(middle, -1, 0)
    grad_a = math_ops.matmul(math_ops.matmul(chol_inverse, middle, adjoint_a=True), chol_inverse)
    grad_a += matrix_transpose(grad_a)
    return [grad_a * 0.5]


@op("Cholesky", infer=_square_infer, inputs=("input",), grad=_cholesky_grad)
def _cholesky_kernel(xp, x):
    _check_square(x)
    # Only the lower triangle is read, as TF's (and LAPACK's 'L') factorisation does.
    try:
        out = xp.linalg.cholesky(x)
    except np.linalg.LinAlgError:
        out = None
    if out is not None and (not is_cupy(xp) or bool(xp.isfinite(out).all())):
        return out
    # TF 2.21 does not raise: each matrix that fails gets NaN in its lower triangle.
    flat = x.reshape((-1,) + x.shape[-2:])
    nan = xp.tril(xp.full(x.shape[-2:], np.nan, x.dtype))
    parts = []
    for m in flat:
        try:
            part = xp.linalg.cholesky(m)
        except np.linalg.LinAlgError:
            part = nan
        parts.append(part if bool(xp.isfinite(part).all()) else nan)
    return xp.stack(parts).reshape(x.shape)


# -----------------------------------------------------------------------------------------
# Solves
# -----------------------------------------------------------------------------------------


def _solve_grad(o, g, band=None):
    """TF's _MatrixSolveGrad / _MatrixTriangularSolveGrad: ``grad_b`` solves the adjoint
    system, ``grad_a = -grad_b c^H`` (or ``-c grad_b^H`` for ``adjoint``)."""
    a, b, c = o.inputs[0], o.inputs[1], o.outputs[0]
    adj = o.get_attr("adjoint")
    if band is None:
        grad_b = matrix_solve(a, g, adjoint=not adj)
    else:
        grad_b = matrix_triangular_solve(a, g, lower=band, adjoint=not adj)
    if adj:
        grad_a = -math_ops.matmul(c, grad_b, adjoint_b=True)
    else:
        grad_a = -math_ops.matmul(grad_b, c, adjoint_b=True)
    if band is not None:
        grad_a = matrix_band_part(grad_a, -1, 0) if band else matrix_band_part(grad_a, 0, -1)
        return [unbroadcast(grad_a, a), unbroadcast(grad_b, b)]
    return [grad_a, grad_b]


def _check_rhs(a, b, same_batch: bool) -> None:
    _check_square(a)
    if b.ndim < 2:
        raise _invalid(f"Input tensor 1 must have rank >= 2, got shape {dims_text(b.shape)}")
    if a.shape[-1] != b.shape[-2]:
        raise _invalid(
            f"Input matrix and right-hand side must have the same number of rows: "
            f"{a.shape[-1]} vs. {b.shape[-2]}"
        )
    if same_batch and a.shape[:-2] != b.shape[:-2]:
        raise _invalid(
            f"All input tensors must have the same outer dimensions: "
            f"{dims_text(a.shape)} vs. {dims_text(b.shape)}"
        )


@op(
    "MatrixSolve",
    infer=lambda o: _solve_infer(o, broadcast=False),
    inputs=("matrix", "rhs"),
    attrs=(Attr("adjoint", "bool", default=False),),
    grad=_solve_grad,
)
def _matrix_solve_kernel(xp, a, b, *, adjoint=False):
    _check_rhs(a, b, same_batch=True)
    if adjoint:
        a = _swap(xp, a)
    if b.shape[-1] == 0 or b.shape[-2] == 0:
        return xp.zeros(b.shape, b.dtype)
    return _lapack(xp, xp.linalg.solve, "Input matrix is not invertible.", a, b)


@op(
    "MatrixTriangularSolve",
    infer=lambda o: _solve_infer(o, broadcast=True),
    inputs=("matrix", "rhs"),
    attrs=(Attr("lower", "bool", default=True), Attr("adjoint", "bool", default=False)),
    grad=lambda o, g: _solve_grad(o, g, band=o.get_attr("lower")),
)
def _matrix_triangular_solve_kernel(xp, a, b, *, lower=True, adjoint=False):
    _check_rhs(a, b, same_batch=False)
    batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    tri = xp.tril(a) if lower else xp.triu(a)
    if adjoint:
        tri, lower = _swap(xp, tri), not lower
    tri = xp.broadcast_to(tri, batch + a.shape[-2:])
    b = xp.broadcast_to(b, batch + b.shape[-2:])
    x = xp.zeros(b.shape, b.dtype)
    n = a.shape[-1]
    # Substitution row by row; rows not solved yet are zero, so each row's full product is
    # its partial sum. A zero on the diagonal gives inf/nan, as TF (which does not check).
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(n) if lower else range(n - 1, -1, -1):
            partial = xp.einsum("...j,...jk->...k", tri[..., i, :], x)
            x[..., i, :] = (b[..., i, :] - partial) / tri[..., i, i][..., None]
    return x


# -----------------------------------------------------------------------------------------
# Diagonals and bands (TF1's MatrixDiag family and Diag/DiagPart)
# -----------------------------------------------------------------------------------------


def _matrix_diag_infer(o):
    d = check_dtype(o, 0, ALL)
    s = o._inputs[0]._shape
    if s.rank is None:
        return [(d, unknown_shape())]
    if s.rank < 1:
        raise ShapeError(f"Shape must be at least rank 1 but is rank {s.rank}")
    return [(d, s.concatenate([s.as_list()[-1]]))]


@op(
    "MatrixDiag",
    infer=_matrix_diag_infer,
    inputs=("diagonal",),
    grad=lambda o, g: [matrix_diag_part(g)],
)
def _matrix_diag_kernel(xp, diagonal):
    if diagonal.ndim < 1:
        raise _invalid(f"input must be at least 1-dim, received shape: {dims_text(diagonal.shape)}")
    n = diagonal.shape[-1]
    out = xp.zeros(diagonal.shape + (n,), diagonal.dtype)
    idx = xp.arange(n)
    out[..., idx, idx] = diagonal
    return out


def _diag_length(rows, cols):
    return None if rows is None or cols is None else min(rows, cols)


def _matrix_diag_part_infer(o):
    d = check_dtype(o, 0, ALL)
    m = _matrix_dims(o._inputs[0]._shape, square=False)
    if m is None:
        return [(d, unknown_shape())]
    return [(d, TensorShape(m[0] + [_diag_length(m[1].value, m[2].value)]))]


def _matrix_diag_part_grad(o, g):
    """A square input's gradient is a diagonal matrix, any other one zeros with ``g`` set on
    the diagonal (TF's _MatrixDiagPartGrad)."""
    dims = o.inputs[0].shape.as_list()[-2:] if o.inputs[0].shape.rank is not None else None
    if dims and None not in dims and dims[0] == dims[1]:
        return [matrix_diag(g)]
    return [matrix_set_diag(array_ops.zeros_like(o.inputs[0]), g)]


@op(
    "MatrixDiagPart",
    infer=_matrix_diag_part_infer,
    inputs=("input",),
    grad=_matrix_diag_part_grad,
)
def _matrix_diag_part_kernel(xp, x):
    if x.ndim < 2:
        raise _invalid(f"input must be at least 2-dim, received shape: {dims_text(x.shape)}")
    return xp.ascontiguousarray(xp.diagonal(x, axis1=-2, axis2=-1)).copy()


def _matrix_set_diag_infer(o):
    d = check_same_dtype(o)
    check_dtype(o, 0, ALL)
    m = _matrix_dims(o._inputs[0]._shape, square=False)
    diag_shape = o._inputs[1]._shape
    if diag_shape.rank is not None and diag_shape.rank < 1:
        raise ShapeError(f"Shape must be at least rank 1 but is rank {diag_shape.rank}")
    if m is None:
        return [(d, unknown_shape())]
    want = TensorShape(m[0] + [_diag_length(m[1].value, m[2].value)])
    if not want.is_compatible_with(diag_shape):
        raise ShapeError(f"Shapes {want} and {diag_shape} are incompatible")
    batch = want.merge_with(diag_shape).as_list()[:-1]
    return [(d, TensorShape(batch + [m[1].value, m[2].value]))]


def _matrix_set_diag_grad(o, g):
    """The input keeps ``g`` off the diagonal, the diagonal gets ``g``'s diagonal."""
    diag_g = matrix_diag_part(g)
    return [matrix_set_diag(g, array_ops.zeros_like(diag_g)), diag_g]


@op(
    "MatrixSetDiag",
    infer=_matrix_set_diag_infer,
    inputs=("input", "diagonal"),
    grad=_matrix_set_diag_grad,
)
def _matrix_set_diag_kernel(xp, x, diagonal):
    if x.ndim < 2:
        raise _invalid(f"input must be at least 2-dim, received shape: {dims_text(x.shape)}")
    k = min(x.shape[-2:])
    if diagonal.shape != x.shape[:-2] + (k,):
        raise _invalid(
            f"must have diagonal.shape == input.shape[:-2] + [min(input.shape[-2:])], but "
            f"received input shape: {dims_text(x.shape)} and diagonal shape: "
            f"{dims_text(diagonal.shape)}"
        )
    out = x.copy()
    idx = xp.arange(k)
    out[..., idx, idx] = diagonal
    return out


def _band_part_infer(o):
    d = check_dtype(o, 0, ALL)
    check_dtype(o, 1, INDEX, "Tindex")
    check_dtype(o, 2, INDEX, "Tindex")
    for i in (1, 2):
        rank = o._inputs[i]._shape.rank
        if rank not in (None, 0):
            raise ShapeError(f"Shape must be rank 0 but is rank {rank}")
    s = o._inputs[0]._shape
    _matrix_dims(s, square=False)
    return [(d, s)]


@op(
    "MatrixBandPart",
    infer=_band_part_infer,
    inputs=("input", "num_lower", "num_upper"),
    grad=lambda o, g: [matrix_band_part(g, o.inputs[1], o.inputs[2]), None, None],
    flags=OpFlags(host_inputs=(1, 2)),
)
def _matrix_band_part_kernel(xp, x, num_lower, num_upper):
    if x.ndim < 2:
        raise _invalid(f"input must be at least 2-dim, received shape: {dims_text(x.shape)}")
    lower, upper = int(num_lower), int(num_upper)
    m, n = x.shape[-2:]
    if lower > m:
        raise _invalid(
            f"num_lower must be negative or less or equal to number of rows ({m}) got: {lower}"
        )
    if upper > n:
        raise _invalid(
            f"num_upper must be negative or less or equal to number of columns ({n}) got: {upper}"
        )
    offset = xp.arange(n)[None, :] - xp.arange(m)[:, None]  # column - row
    keep = ((lower < 0) | (-offset <= lower)) & ((upper < 0) | (offset <= upper))
    return xp.where(keep, x, xp.zeros((), x.dtype))


def _diag_infer(o):
    d = check_dtype(o, 0, ALL)
    s = o._inputs[0]._shape
    if s.rank is None:
        return [(d, unknown_shape())]
    if s.rank < 1:
        raise ShapeError(f"Shape must be at least rank 1 but is rank {s.rank}")
    return [(d, s.concatenate(s))]


@op("Diag", infer=_diag_infer, inputs=("diagonal",), grad=lambda o, g: [diag_part(g)])
def _diag_kernel(xp, diagonal):
    if diagonal.ndim < 1:
        raise _invalid("Input must be at least rank 1, got 0")
    n = diagonal.size
    out = xp.zeros((n, n), diagonal.dtype)
    idx = xp.arange(n)
    out[idx, idx] = diagonal.reshape(-1)
    return out.reshape(diagonal.shape + diagonal.shape)


def _diag_part_infer(o):
    d = check_dtype(o, 0, ALL)
    s = o._inputs[0]._shape
    if s.rank is None:
        return [(d, unknown_shape())]
    if s.rank == 0 or s.rank % 2:
        raise ShapeError(f"Input must have even rank <= 6, input rank is {s.rank}")
    half = s.rank // 2
    dims = s.as_list()
    out = []
    for a, b in zip(dims[:half], dims[half:]):
        if a is not None and b is not None and a != b:
            raise ShapeError(f"Dimensions must be equal, but are {a} and {b}")
        out.append(a if a is not None else b)
    return [(d, TensorShape(out))]


@op("DiagPart", infer=_diag_part_infer, inputs=("input",), grad=lambda o, g: [diag(g)])
def _diag_part_kernel(xp, x):
    half = x.ndim // 2
    if x.ndim == 0 or x.ndim % 2 or x.shape[:half] != x.shape[half:]:
        raise _invalid(
            f"Invalid shape {dims_text(x.shape)}: dimensions must be even-ranked and the "
            "first half must equal the second"
        )
    n = int(np.prod(x.shape[:half], dtype=np.int64))
    return xp.diagonal(x.reshape(n, n)).reshape(x.shape[:half]).copy()


# -----------------------------------------------------------------------------------------
# Public functions
# -----------------------------------------------------------------------------------------


def _unary(op_type: str, x, name, default_name: str, attrs=None) -> Tensor:
    with name_scope(name, default_name, [x]) as scope:
        x = convert_to_tensor(x, name="input")
        return create(op_type, [x], attrs or {}, scope).outputs[0]


def matrix_inverse(input, adjoint=False, name=None) -> Tensor:  # noqa: A002 - TF's name
    """The inverse of each ``[..., M, M]`` matrix (of its adjoint with ``adjoint``).

    >>> matrix_inverse([[2.0, 0.0], [0.0, 4.0]])  # [[0.5, 0], [0, 0.25]]
    """
    return _unary("MatrixInverse", input, name, "MatrixInverse", {"adjoint": bool(adjoint)})


def matrix_determinant(input, name=None) -> Tensor:  # noqa: A002 - TF's name
    """The determinant of each ``[..., M, M]`` matrix: shape ``[...]``."""
    return _unary("MatrixDeterminant", input, name, "MatrixDeterminant")


def slogdet(input, name=None) -> tuple[Tensor, Tensor]:  # noqa: A002 - TF's name
    """``(sign, log_abs_determinant)`` of each ``[..., M, M]`` matrix (LogMatrixDeterminant),
    finite where the determinant itself would overflow."""
    with name_scope(name, "LogMatrixDeterminant", [input]) as scope:
        x = convert_to_tensor(input, name="input")
        return tuple(create("LogMatrixDeterminant", [x], {}, scope).outputs)


def cholesky(input, name=None) -> Tensor:  # noqa: A002 - TF's name
    """The lower-triangular ``L`` with ``L L^H = input`` for each Hermitian positive-definite
    ``[..., M, M]`` matrix; only the lower triangle of ``input`` is read."""
    return _unary("Cholesky", input, name, "Cholesky")


def logdet(matrix, name=None) -> Tensor:
    """log(det(matrix)) of Hermitian positive-definite matrices, as TF composes it:
    ``2 * sum(log(diag(cholesky(matrix))))``."""
    with name_scope(name, "logdet", [matrix]):
        chol = cholesky(matrix)
        return 2.0 * reduction.reduce_sum(math_ops.log(matrix_diag_part(chol)), axis=[-1])


def _solve(op_type: str, matrix, rhs, attrs: dict, scope) -> Tensor:
    a = convert_to_tensor(matrix, name="matrix")
    b = convert_to_tensor(rhs, dtype=a.dtype.base_dtype, name="rhs")
    return create(op_type, [a, b], attrs, scope).outputs[0]


def matrix_solve(matrix, rhs, adjoint=False, name=None) -> Tensor:
    """``X`` with ``matrix @ X = rhs`` (``adjoint(matrix) @ X`` with ``adjoint``) for each
    ``[..., M, M]`` matrix and ``[..., M, K]`` right-hand side (equal batch dims)."""
    with name_scope(name, "MatrixSolve", [matrix, rhs]) as scope:
        return _solve("MatrixSolve", matrix, rhs, {"adjoint": bool(adjoint)}, scope)


def matrix_triangular_solve(matrix, rhs, lower=True, adjoint=False, name=None) -> Tensor:
    """``matrix @ X = rhs`` by substitution, reading only the lower (``lower``) or upper
    triangle of ``matrix``; batch dims broadcast (TF 2's MatrixTriangularSolve)."""
    with name_scope(name, "triangular_solve", [matrix, rhs]):
        attrs = {"lower": bool(lower), "adjoint": bool(adjoint)}
        return _solve("MatrixTriangularSolve", matrix, rhs, attrs, None)


def matrix_transpose(a, name="matrix_transpose", conjugate=False) -> Tensor:
    """``a`` with its last two axes swapped (composed: one Transpose, as TF).

    >>> matrix_transpose(ones([5, 2, 3])).shape  # (5, 3, 2)
    """
    with name_scope(name, "matrix_transpose", [a]):
        a = convert_to_tensor(a, name="a")
        ndims = a.shape.rank
        if ndims is not None:
            if ndims < 2:
                raise ValueError(
                    f"Argument `a` should be a (batch) matrix with rank >= 2.  Received `a` = "
                    f"{a} with shape: {a.shape}"
                )
            perm = list(range(ndims - 2)) + [ndims - 1, ndims - 2]
        else:
            a_rank = array_ops.rank(a)
            perm = array_transform.concat(
                [
                    array_ops.range(0, a_rank - 2, 1),
                    array_transform.stack([a_rank - 1, a_rank - 2]),
                ],
                0,
            )
        return array_ops.transpose(a, perm=perm, conjugate=conjugate)


def adjoint(matrix, name=None) -> Tensor:
    """The conjugate transpose of the last two axes (real inputs: ``matrix_transpose``)."""
    with name_scope(name, "adjoint", [matrix]):
        return matrix_transpose(convert_to_tensor(matrix, name="matrix"), conjugate=True)


def trace(x, name=None) -> Tensor:
    """The sum of each ``[..., M, N]`` matrix's main diagonal: shape ``[...]``."""
    with name_scope(name, "Trace", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        return reduction.reduce_sum(matrix_diag_part(x), [-1], name=scope)


def matrix_diag(diagonal, name="diag", k=0, num_rows=-1, num_cols=-1, padding_value=0) -> Tensor:
    """``[..., N]`` diagonals as ``[..., N, N]`` diagonal matrices (TF1's MatrixDiag; only
    the main diagonal, ``k=0``)."""
    if k != 0 or num_rows != -1 or num_cols != -1 or padding_value != 0:
        raise NotImplementedError("matrix_diag supports the main diagonal only (k=0, defaults)")
    return _unary("MatrixDiag", diagonal, name, "MatrixDiag")


def matrix_diag_part(input, name="diag_part", k=0, padding_value=0) -> Tensor:  # noqa: A002
    """The main diagonals of ``[..., M, N]`` matrices: ``[..., min(M, N)]``."""
    if k != 0 or padding_value != 0:
        raise NotImplementedError("matrix_diag_part supports the main diagonal only (k=0)")
    return _unary("MatrixDiagPart", input, name, "MatrixDiagPart")


def matrix_set_diag(input, diagonal, name="set_diag", k=0) -> Tensor:  # noqa: A002
    """``input`` with its main diagonals replaced by ``diagonal`` (``[..., min(M, N)]``)."""
    if k != 0:
        raise NotImplementedError("matrix_set_diag supports the main diagonal only (k=0)")
    with name_scope(name, "MatrixSetDiag", [input, diagonal]) as scope:
        x = convert_to_tensor(input, name="input")
        d = convert_to_tensor(diagonal, dtype=x.dtype.base_dtype, name="diagonal")
        return create("MatrixSetDiag", [x, d], {}, scope).outputs[0]


def matrix_band_part(input, num_lower, num_upper, name=None) -> Tensor:  # noqa: A002
    """``input`` with everything outside a band zeroed: ``num_lower`` subdiagonals and
    ``num_upper`` superdiagonals are kept (negative: all of them).

    >>> matrix_band_part(x, -1, 0)  # the lower triangle
    """
    with name_scope(name, "MatrixBandPart", [input, num_lower, num_upper]) as scope:
        x = convert_to_tensor(input, name="input")
        lower = convert_to_tensor(num_lower, dtype_hint=dtypes.int64, name="num_lower")
        upper = convert_to_tensor(num_upper, dtype=lower.dtype.base_dtype, name="num_upper")
        return create("MatrixBandPart", [x, lower, upper], {}, scope).outputs[0]


def diag(diagonal, name=None) -> Tensor:
    """A rank-2k tensor with ``diagonal`` (rank k) on its diagonal:
    ``out[i1..ik, i1..ik] = diagonal[i1..ik]``."""
    return _unary("Diag", diagonal, name, "Diag")


def diag_part(input, name=None) -> Tensor:  # noqa: A002 - TF's name
    """The inverse of ``diag``: ``out[i1..ik] = input[i1..ik, i1..ik]``."""
    return _unary("DiagPart", input, name, "DiagPart")
