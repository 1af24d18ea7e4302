"""Matrix decompositions as TF1 declares them: ``Qr``, ``Svd`` and ``SelfAdjointEigV2``
(``tf.qr``, ``tf.svd``, ``tf.self_adjoint_eig``, ``tf.self_adjoint_eigvals``).

Each op works on the last two axes and batches over the leading ones; the kernels are
``xp.linalg.qr``, ``svd``, ``eigh`` and ``eigvalsh`` (numpy or cupy). Conventions are TF's:
eigenvalues ascend, singular values descend, ``Svd`` returns ``(s, u, v)`` with ``v`` not
transposed, and the vectors of every decomposition are unique only up to sign. Outputs an op
was asked not to compute (``compute_uv=False``, ``compute_v=False``) are empty ``[0]``
tensors, as TF's kernels leave them.

Gradients are TF's (``linalg_grad.py``: ``_QrGrad`` for square and tall matrices,
``_SvdGrad``, ``_SelfAdjointEigV2Grad``), with the reciprocals of eigenvalue and
singular-value gaps taken as TF 2's ``_SafeReciprocal``. Where TF declines a gradient (QR of
wide matrices or with ``full_matrices`` and m != n, SVD with ``full_matrices`` and
``|m - n| > 1``, unknown matrix dims) the same ``NotImplementedError`` is raised when the
gradient is built.
"""

from __future__ import annotations

import numpy as np

from engine import errors
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.registry import Attr, op
from engine.ops import array as array_ops
from engine.ops._common import check_dtype, create, dims_text, is_cupy
from engine.ops.linalg_ops import (
    LINALG_FLOATS,
    _matrix_dims,
    matrix_band_part,
    matrix_diag,
    matrix_diag_part,
    matrix_set_diag,
    matrix_transpose,
    matrix_triangular_solve,
)
from engine.ops.matmul import matmul
from engine.tensor_shape import TensorShape, unknown_shape

__all__ = ["qr", "self_adjoint_eig", "self_adjoint_eigvals", "svd"]

_EMPTY = TensorShape([0])


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _check_matrix(x) -> None:
    if x.ndim < 2:
        raise _invalid(f"Input tensor 0 must have rank >= 2, got shape {dims_text(x.shape)}")


def _run_lapack(xp, fn, *args, **kwargs):
    """``fn(*args)``; a failed decomposition (numpy's ``LinAlgError``, cupy's non-finite
    result) is TF's InvalidArgumentError."""
    try:
        result = fn(*args, **kwargs)
    except np.linalg.LinAlgError as e:
        raise _invalid(f"Decomposition failed: {e}") from None
    parts = result if isinstance(result, tuple) else (result,)
    if is_cupy(xp) and not all(bool(xp.isfinite(p).all()) for p in parts):
        raise _invalid("Decomposition failed: non-finite result")
    return result


def _safe_reciprocal(x, epsilon: float = 1e-20):
    """``x / (x^2 + epsilon)``: TF 2's ``_SafeReciprocal``, 0 where ``x`` is 0."""
    return x * (1.0 / (x * x + epsilon))


def _min_dim(m, n):
    return None if m is None or n is None else min(m, n)


# -----------------------------------------------------------------------------------------
# QR
# -----------------------------------------------------------------------------------------


def _qr_infer(o):
    """``[..., M, N]`` -> q ``[..., M, P]``, r ``[..., P, N]`` (P = min(M, N), or M with
    ``full_matrices``)."""
    d = check_dtype(o, 0, LINALG_FLOATS)
    dims = _matrix_dims(o._inputs[0]._shape, square=False)
    if dims is None:
        return [(d, unknown_shape()), (d, unknown_shape())]
    batch, m, n = dims[0], dims[1].value, dims[2].value
    p = m if o.get_attr("full_matrices") else _min_dim(m, n)
    return [(d, TensorShape(batch + [m, p])), (d, TensorShape(batch + [p, n]))]


def _upper_solve_right(x, r):
    """``x @ inv(r)^H`` for upper-triangular ``r`` (TF's ``_TriangularSolve``)."""
    return matrix_transpose(
        matrix_triangular_solve(r, matrix_transpose(x), lower=False, adjoint=False)
    )


def _qr_grad(o, dq, dr):
    """TF 1.15's _QrGrad: square and tall matrices with ``full_matrices=False`` only."""
    q, r = o.outputs
    r_dims = r.shape.as_list() if r.shape.rank is not None else None
    if r_dims is None or r_dims[-2] is None or r_dims[-1] is None:
        raise NotImplementedError(
            f"QrGrad not implemented with dynamic shapes. Received r.shape: {r.shape}"
        )
    if r_dims[-2] != r_dims[-1]:
        raise NotImplementedError(
            "QrGrad not implemented when ncols > nrows or full_matrices is true and ncols != "
            f"nrows. Received r.shape={r.shape}."
        )
    qdq = matmul(q, dq, adjoint_a=True)
    qdq_ = qdq - matrix_transpose(qdq)
    rdr = matmul(r, dr, adjoint_b=True)
    rdr_ = rdr - matrix_transpose(rdr)
    tril = matrix_band_part(qdq_ + rdr_, -1, 0)
    grad_a = matmul(q, dr + _upper_solve_right(tril, r))
    grad_b = _upper_solve_right(dq - matmul(q, qdq), r)
    return [grad_a + grad_b]


@op(
    "Qr",
    infer=_qr_infer,
    inputs=("input",),
    attrs=(Attr("full_matrices", "bool", default=False),),
    grad=_qr_grad,
)
def _qr_kernel(xp, x, *, full_matrices=False):
    _check_matrix(x)
    m, n = x.shape[-2:]
    if x.size == 0:
        p = m if full_matrices else min(m, n)
        q = xp.zeros(x.shape[:-2] + (m, p), x.dtype)
        q[..., range(min(m, p)), range(min(m, p))] = 1
        return q, xp.zeros(x.shape[:-2] + (p, n), x.dtype)
    q, r = _run_lapack(xp, xp.linalg.qr, x, mode="complete" if full_matrices else "reduced")
    return xp.ascontiguousarray(q.astype(x.dtype)), xp.ascontiguousarray(r.astype(x.dtype))


# -----------------------------------------------------------------------------------------
# SVD
# -----------------------------------------------------------------------------------------


def _svd_infer(o):
    """``[..., M, N]`` -> s ``[..., P]``, u ``[..., M, P]``, v ``[..., N, P]`` (P = min(M, N);
    u, v square with ``full_matrices``; both ``[0]`` without ``compute_uv``)."""
    d = check_dtype(o, 0, LINALG_FLOATS)
    dims = _matrix_dims(o._inputs[0]._shape, square=False)
    compute_uv = o.get_attr("compute_uv")
    if dims is None:
        vectors = unknown_shape() if compute_uv else _EMPTY
        return [(d, unknown_shape()), (d, vectors), (d, vectors)]
    batch, m, n = dims[0], dims[1].value, dims[2].value
    p = _min_dim(m, n)
    s = TensorShape(batch + [p])
    if not compute_uv:
        return [(d, s), (d, _EMPTY), (d, _EMPTY)]
    full = o.get_attr("full_matrices")
    u = TensorShape(batch + [m, m if full else p])
    v = TensorShape(batch + [n, n if full else p])
    return [(d, s), (d, u), (d, v)]


@op(
    "Svd",
    infer=_svd_infer,
    inputs=("input",),
    attrs=(
        Attr("compute_uv", "bool", default=True),
        Attr("full_matrices", "bool", default=False),
    ),
    grad=lambda o, gs, gu, gv: [_svd_grad(o, gs, gu, gv)],
)
def _svd_kernel(xp, x, *, compute_uv=True, full_matrices=False):
    _check_matrix(x)
    m, n = x.shape[-2:]
    empty = xp.zeros((0,), x.dtype)
    if x.size == 0:
        p = min(m, n)
        s = xp.zeros(x.shape[:-2] + (p,), x.dtype)
        if not compute_uv:
            return s, empty, empty.copy()
        cu, cv = (m, n) if full_matrices else (p, p)
        u = xp.zeros(x.shape[:-2] + (m, cu), x.dtype)
        v = xp.zeros(x.shape[:-2] + (n, cv), x.dtype)
        u[..., range(min(m, cu)), range(min(m, cu))] = 1
        v[..., range(min(n, cv)), range(min(n, cv))] = 1
        return s, u, v
    if not compute_uv:
        s = _run_lapack(xp, xp.linalg.svd, x, compute_uv=False)
        return xp.ascontiguousarray(s.astype(x.dtype)), empty, empty.copy()
    u, s, vh = _run_lapack(xp, xp.linalg.svd, x, full_matrices=full_matrices)
    v = xp.swapaxes(vh, -1, -2)
    return tuple(xp.ascontiguousarray(t.astype(x.dtype)) for t in (s, u, v))


def _svd_grad_s_only(o, grad_s):
    """compute_uv=False: ``u diag(grad_s) v^H`` from a second, full SVD."""
    a = o.inputs[0]
    _, u, v = svd(a, compute_uv=True)
    grad_a = matmul(u, matmul(matrix_diag(grad_s), v, adjoint_b=True))
    grad_a.set_shape(a.shape)
    return grad_a


def _svd_grad(o, grad_s, grad_u, grad_v):
    """TF's _SvdGrad (Giles 2008; Townsend's full_matrices=False derivation), real case."""
    if not o.get_attr("compute_uv"):
        return _svd_grad_s_only(o, grad_s)
    a_shape = o.inputs[0].shape.with_rank_at_least(2)
    gu_shape = grad_u.shape.with_rank_at_least(2)
    gv_shape = grad_v.shape.with_rank_at_least(2)
    m = a_shape.dims[-2].merge_with(gu_shape.dims[-2]).value
    n = a_shape.dims[-1].merge_with(gv_shape.dims[-2]).value
    if m is None or n is None:
        raise NotImplementedError(
            "SVD gradient has not been implemented for input with unknown inner matrix shape."
        )
    s, u, v = o.outputs
    use_adjoint = m > n
    if use_adjoint:  # the gradient of A^H = V S U^H, transposed at the end
        m, n, u, v, grad_u, grad_v = n, m, v, u, grad_v, grad_u
    full_matrices = o.get_attr("full_matrices")
    if full_matrices and abs(m - n) > 1:
        raise NotImplementedError(
            "svd gradient is not implemented for abs(m - n) > 1 when full_matrices is True. "
            f"Received: m={m} and n={n}."
        )
    grad_a = _svd_grad_wide(s, u, v, grad_s, grad_u, grad_v, m, n, full_matrices)
    if use_adjoint:
        grad_a = matrix_transpose(grad_a)
    grad_a.set_shape(a_shape)
    return grad_a


def _svd_grad_wide(s, u, v, grad_s, grad_u, grad_v, m, n, full_matrices):
    """The m <= n part of _SvdGrad: ``term1`` (+ ``term2`` when m < n)."""
    s_mat = matrix_diag(s)
    s2 = s * s
    gaps = array_ops.expand_dims(s2, -2) - array_ops.expand_dims(s2, -1)
    f = matrix_set_diag(_safe_reciprocal(gaps), array_ops.zeros_like(s))
    s_inv_mat = matrix_diag(_safe_reciprocal(s))
    v1 = v[..., :, :m]
    grad_v1 = grad_v[..., :, :m]
    f_u = f * matmul(u, grad_u, adjoint_a=True)
    f_v = f * matmul(v1, grad_v1, adjoint_a=True)
    term1_nouv = (
        matrix_diag(grad_s)
        + matmul(f_u + matrix_transpose(f_u), s_mat)
        + matmul(s_mat, f_v + matrix_transpose(f_v))
    )
    term1 = matmul(u, matmul(term1_nouv, v1, adjoint_b=True))
    if m == n:
        return term1
    gv1t = matrix_transpose(grad_v1)
    term2_nous = gv1t - matmul(matmul(gv1t, v1), v1, adjoint_b=True)
    if full_matrices:
        v2 = v[..., :, m:n]
        grad_v2 = grad_v[..., :, m:n]
        term2_nous -= matmul(matmul(v1, grad_v2, adjoint_a=True), v2, adjoint_b=True)
    return term1 + matmul(matmul(u, s_inv_mat), term2_nous)


# -----------------------------------------------------------------------------------------
# Self-adjoint eigendecomposition
# -----------------------------------------------------------------------------------------


def _eig_infer(o):
    """``[..., N, N]`` -> e ``[..., N]``, v ``[..., N, N]`` (``[0]`` without ``compute_v``)."""
    d = check_dtype(o, 0, LINALG_FLOATS)
    dims = _matrix_dims(o._inputs[0]._shape, square=True)
    compute_v = o.get_attr("compute_v")
    if dims is None:
        return [(d, unknown_shape()), (d, unknown_shape() if compute_v else _EMPTY)]
    batch, n = dims[0], dims[1].value
    v = TensorShape(batch + [n, n]) if compute_v else _EMPTY
    return [(d, TensorShape(batch + [n])), (d, v)]


def _eig_grad(o, grad_e, grad_v):
    """TF's _SelfAdjointEigV2Grad: only the lower triangle of the input is read, so the
    gradient is symmetrised onto it."""
    e = o.outputs[0]
    if o.get_attr("compute_v"):
        v = o.outputs[1]
        gaps = array_ops.expand_dims(e, -2) - array_ops.expand_dims(e, -1)
        f = matrix_set_diag(_safe_reciprocal(gaps), array_ops.zeros_like(e))
        inner = matrix_diag(grad_e) + f * matmul(v, grad_v, adjoint_a=True)
    else:
        _, v = self_adjoint_eig(o.inputs[0])
        inner = matrix_diag(grad_e)
    grad_a = matmul(v, matmul(inner, v, adjoint_b=True))
    grad_a = matrix_band_part(grad_a + matrix_transpose(grad_a), -1, 0)
    return [matrix_set_diag(grad_a, 0.5 * matrix_diag_part(grad_a))]


@op(
    "SelfAdjointEigV2",
    infer=_eig_infer,
    inputs=("input",),
    attrs=(Attr("compute_v", "bool", default=True),),
    grad=_eig_grad,
)
def _self_adjoint_eig_kernel(xp, x, *, compute_v=True):
    _check_matrix(x)
    if x.shape[-1] != x.shape[-2]:
        raise _invalid("Input matrix must be square.")
    empty = xp.zeros((0,), x.dtype)
    if x.size == 0:
        e = xp.zeros(x.shape[:-1], x.dtype)
        return e, (xp.zeros(x.shape, x.dtype) if compute_v else empty)
    if not compute_v:
        e = _run_lapack(xp, xp.linalg.eigvalsh, x, UPLO="L")
        return xp.ascontiguousarray(e.astype(x.dtype)), empty
    e, v = _run_lapack(xp, xp.linalg.eigh, x, UPLO="L")
    return xp.ascontiguousarray(e.astype(x.dtype)), xp.ascontiguousarray(v.astype(x.dtype))


# -----------------------------------------------------------------------------------------
# Public functions
# -----------------------------------------------------------------------------------------


def qr(input, full_matrices=False, name=None) -> tuple[Tensor, Tensor]:  # noqa: A002
    """``(q, r)`` with ``q`` orthonormal columns, ``r`` upper triangular and ``q @ r = input``
    for each ``[..., M, N]`` matrix; ``full_matrices`` makes ``q`` ``[..., M, M]``.

    >>> q, r = qr(ones([5, 4, 3]))  # q [5, 4, 3], r [5, 3, 3]
    """
    with name_scope(name, "Qr", [input]) as scope:
        x = convert_to_tensor(input, name="input")
        return tuple(create("Qr", [x], {"full_matrices": bool(full_matrices)}, scope).outputs)


def svd(tensor, full_matrices=False, compute_uv=True, name=None):
    """``(s, u, v)`` with ``tensor = u @ diag(s) @ transpose(v)`` per matrix, ``s`` descending;
    only ``s`` when ``compute_uv`` is False.

    >>> s, u, v = svd(ones([2, 4, 3]))  # s [2, 3], u [2, 4, 3], v [2, 3, 3]
    """
    with name_scope(name, "svd", [tensor]):
        x = convert_to_tensor(tensor, name="tensor")
        attrs = {"compute_uv": bool(compute_uv), "full_matrices": bool(full_matrices)}
        s, u, v = create("Svd", [x], attrs, None).outputs
        return (s, u, v) if compute_uv else s


def self_adjoint_eig(tensor, name=None) -> tuple[Tensor, Tensor]:
    """``(e, v)``: ascending eigenvalues and eigenvectors (columns of ``v``) of each
    self-adjoint ``[..., N, N]`` matrix, of which only the lower triangle is read."""
    with name_scope(name, "SelfAdjointEigV2", [tensor]) as scope:
        x = convert_to_tensor(tensor, name="input")
        return tuple(create("SelfAdjointEigV2", [x], {"compute_v": True}, scope).outputs)


def self_adjoint_eigvals(tensor, name=None) -> Tensor:
    """The ascending eigenvalues of each self-adjoint ``[..., N, N]`` matrix."""
    with name_scope(name, "SelfAdjointEigV2", [tensor]) as scope:
        x = convert_to_tensor(tensor, name="input")
        return create("SelfAdjointEigV2", [x], {"compute_v": False}, scope).outputs[0]
