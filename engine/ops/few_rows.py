"""Matrix products of two or three rows, computed one row at a time.

OpenBLAS's single-threaded ``sgemm``/``dgemm`` is slow for a left operand of 2 or 3 rows: its
kernels work on 4 rows at once (the batch is the BLAS "n" of numpy's row-major call) and the
edge cases of 2 and 3 rows cost more than 4 full rows. Measured with OpenBLAS 0.3.31 on AMD
EPYC (one BLAS thread), a 2048x2048 float32 weight: 1 row 0.37 ms (``gemv``), 2 rows 1.53 ms,
3 rows 2.03 ms, 4 rows 1.13 ms; the same 2 and 3 rows as one ``gemv`` each: 0.78 and 1.00 ms.
Batching merges a few requests into such products all the time (8 concurrent clients make
runs of 2-3 rows), so a merged run cost more than its requests would have one by one.

So every product ``a @ b`` whose ``a`` has 2 or 3 rows (``few_rows``) is computed as one
1-row product per row: the very BLAS call (``gemv``) numpy makes for a 1-row ``a``. Each row
of the result therefore has exactly the bits of that row multiplied alone, which is what an
unbatched request computes: a merged batch of 2 or 3 requests gives every request the bits it
would get alone (for a model whose other ops work row by row, as dense layers do). It applies
whatever the size of ``b``: for a small ``b`` the calls cost a microsecond or two more than
one gemm, and a model with one small layer keeps the guarantee. Every other product (one
row, 4 rows or more, other dtypes) is numpy's as before.
"""

from __future__ import annotations

import numpy as np

__all__ = ["few_rows", "rows_product"]

_BLAS_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def few_rows(a, b) -> bool:
    """Whether ``a @ b`` is computed by ``rows_product``: host arrays of one BLAS float
    dtype (float32 or float64), ``a`` a matrix of 2 or 3 rows (any layout: the choice never
    depends on where an array lies in memory), ``b`` a matrix with as many rows as ``a`` has
    columns."""
    if a.__class__ is not np.ndarray or b.__class__ is not np.ndarray:
        return False
    if a.ndim != 2 or b.ndim != 2 or not 2 <= a.shape[0] <= 3:
        return False
    return a.shape[1] == b.shape[0] and a.dtype == b.dtype and a.dtype in _BLAS_FLOATS


def rows_product(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``a @ b`` (where ``few_rows(a, b)``) one row at a time, into ``out`` when it is a
    C-contiguous array of the product's shape and dtype that shares no memory with ``a`` or
    ``b`` (else a new array)."""
    shape = (a.shape[0], b.shape[1])
    flags = a.flags
    if not (flags.c_contiguous and flags.aligned):
        a = a.copy(order="C")  # each row as a lone request's row: contiguous and aligned
    if (
        out is None
        or out.__class__ is not np.ndarray
        or out.shape != shape
        or out.dtype != a.dtype
        or not out.flags.c_contiguous
        or np.may_share_memory(out, a)
        or np.may_share_memory(out, b)
    ):
        out = np.empty(shape, a.dtype)
    for i in range(shape[0]):
        np.matmul(a[i : i + 1], b, out=out[i : i + 1])
    return out
