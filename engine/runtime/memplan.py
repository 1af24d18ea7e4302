"""Memory planning for compiled callables: which steps write into reused or in-place buffers.

The plan is known whole when a callable is compiled, so some steps need not allocate:

- A *recipe* is a step whose op (MatMul, BiasAdd, AddV2, Sub, Mul, RealDiv, Maximum, Minimum,
  Relu, Softmax on float32/float64, on the host with numpy) can take an output buffer. It
  computes exactly what the op's kernel computes, with the same numpy calls in the same
  order, so the bits are the same (a ufunc or ``matmul`` with ``out=`` gives the bits of its
  allocating form).
- A recipe runs *in place* on its first input when that value was made by a recipe in this
  run (so it is memory of the run's own, never a feed, constant or variable), has no other
  reader, is not fetched, and has the output's shape and dtype (checked on static shapes:
  the second operand broadcasts into the first). Recipes writing one buffer in turn form a
  *chain*: ``matmul -> bias add -> relu`` touches one buffer.
- A chain started by a MatMul writes into an *arena* buffer that the callable keeps between
  calls, unless the chain's last value escapes: fetched (the caller owns what it gets) or
  read by a non-recipe op (which might keep it or return a view of it). ``matmul`` refuses
  an ``out=`` of another shape, so a new batch size takes a new buffer.

Arenas are per call, never shared: a call takes one from its callable's pool (or makes one)
and gives it back when done, so threads calling one callable never write each other's
buffers.
"""

from __future__ import annotations

from functools import partial

import numpy as np

__all__ = [
    "Decision",
    "c_buffers",
    "dot_operand",
    "plan_memory",
    "recipe_for",
    "row_view",
    "softmax_into",
    "zeros_like",
]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))

# Ufuncs taking ``out`` as a third positional argument; Maximum/Minimum only take ``out=``.
_POSITIONAL_OUT = {
    "AddV2": np.add,
    "BiasAdd": np.add,
    "Sub": np.subtract,
    "Mul": np.multiply,
    "RealDiv": np.true_divide,
}
_KEYWORD_OUT = {"Maximum": np.maximum, "Minimum": np.minimum}


class Recipe:
    """How a step computes with numpy given an output buffer: ``kind`` names the emitted
    form (``ufunc``, ``ufunc_row``, ``ufunc_kw``, ``relu``, ``matmul``, ``softmax``); ``fn``
    the function called; ``const`` a constant operand (Relu's zero) or a helper
    (``row_view``); ``inplace_ok`` whether the output may reuse the first input's buffer."""

    __slots__ = ("kind", "fn", "const", "inplace_ok", "transpose")

    def __init__(self, kind, fn, const=None, inplace_ok=False, transpose=(False, False)):
        self.kind = kind
        self.fn = fn
        self.const = const
        self.inplace_ok = inplace_ok
        self.transpose = transpose


class Decision:
    """A recipe step's buffer: ``inplace`` (write into its first input) or ``arena`` (the
    index of the callable's kept buffer it writes; None: a fresh array)."""

    __slots__ = ("recipe", "inplace", "arena")

    def __init__(self, recipe: Recipe, inplace: bool):
        self.recipe = recipe
        self.inplace = inplace
        self.arena: int | None = None


def _static(t):
    """(rank, dims) of ``t``'s static shape; rank None when unknown."""
    dims = t._shape.as_tuple()
    return (None, None) if dims is None else (len(dims), dims)


def _broadcasts_into(x, y) -> bool:
    """Statically certain: ``y`` broadcast against ``x`` has ``x``'s shape."""
    rx, dx = _static(x)
    ry, dy = _static(y)
    if rx is None or ry is None or ry > rx:
        return False
    for a, b in zip(dx[rx - ry :], dy):
        if b is None or (b != 1 and (a is None or a != b)):
            return False
    return True


def _bias_add_static(op) -> bool:
    """A BiasAdd whose kernel reduces to ``add(x, b)`` and cannot fail on shapes."""
    x, b = op._inputs
    rx, dx = _static(x)
    rb, db = _static(b)
    if rx is None or rx < 2 or rb != 1:
        return False
    if op._attrs.get("data_format") == "NCHW" and rx >= 3:
        return False  # the channel axis is not the last one
    return dx[-1] is not None and dx[-1] == db[0]


def recipe_for(step) -> Recipe | None:
    """The recipe of a step, or None when it runs its kernel as it is."""
    fn, ins, _, nout, _, op = step
    if nout != 1 or op is None or fn.__class__ is not partial:
        return None
    if fn.func is not op._opdef.kernel or fn.args[0] is not np:
        return None  # wrapped (device checks) or not the host's numpy
    out_dtype = op._outputs[0]._dtype
    if out_dtype._is_ref or out_dtype.np not in _FLOATS:
        return None
    if any(t._dtype.np != out_dtype.np for t in op._inputs):
        return None
    kind = op._type
    if kind in _POSITIONAL_OUT or kind in _KEYWORD_OUT:
        if kind == "BiasAdd" and not _bias_add_static(op):
            return None
        x, y = op._inputs
        inplace_ok = _broadcasts_into(x, y)
        if kind in _POSITIONAL_OUT:
            if inplace_ok and _static(x)[0] == 2 and _static(y)[0] == 1:
                # A bias: one row of it when x is one row (see row_view)
                return Recipe("ufunc_row", _POSITIONAL_OUT[kind], row_view(), inplace_ok)
            return Recipe("ufunc", _POSITIONAL_OUT[kind], None, inplace_ok)
        return Recipe("ufunc_kw", _KEYWORD_OUT[kind], None, inplace_ok)
    if kind == "Relu":
        return Recipe("relu", np.maximum, zeros_like(out_dtype.np), True)
    if kind == "Softmax":
        if _static(op._inputs[0])[0] in (None, 0):
            return None  # the kernel's rank error stays the kernel's
        return Recipe("softmax", softmax_into, None, True)
    if kind == "MatMul":
        ra = _static(op._inputs[0])[0]
        rb = _static(op._inputs[1])[0]
        if ra != 2 or rb != 2:
            return None  # the kernel's rank errors stay the kernel's
        transpose = (bool(fn.keywords["transpose_a"]), bool(fn.keywords["transpose_b"]))
        # const: the operands' dtype, which the np.dot guard checks (see dot_operand)
        return Recipe("matmul", np.matmul, out_dtype.np, False, transpose)
    return None


def plan_memory(steps: list, fetch_slots) -> dict[int, Decision]:
    """Per recipe step (by index): its decision. See the module docstring for the rules."""
    readers: dict[int, int] = {}
    for step in steps:
        for s in step[1]:
            readers[s] = readers.get(s, 0) + 1
    fetched = {s for s in fetch_slots if s is not None}
    decisions: dict[int, Decision] = {}
    chain_of: dict[int, int] = {}  # slot made by a recipe -> its chain
    chains: list[list] = []  # [root step, last slot]
    for k, step in enumerate(steps):
        recipe = recipe_for(step)
        if recipe is None:
            continue
        src, out = step[1][0], step[2]
        inplace = (
            recipe.inplace_ok
            and src in chain_of
            and readers.get(src) == 1
            and src not in fetched
            and step[1].count(src) == 1
        )
        if inplace:
            c = chain_of[src]
            chains[c][1] = out
        else:
            c = len(chains)
            chains.append([k, out])
        chain_of[out] = c
        decisions[k] = Decision(recipe, inplace)
    arena = 0
    for root, last in chains:
        d = decisions[root]
        if d.recipe.kind != "matmul" or last in fetched:
            continue
        if all(k in decisions for k, step in enumerate(steps) if last in step[1]):
            d.arena = arena
            arena += 1
    return decisions


def softmax_into(x, out):
    """The Softmax kernel's arithmetic (float32/float64), writing into ``out`` (which may be
    ``x``; None: a new array): ``exp(x - max(x))`` divided by its row sums."""
    if x.size == 0:
        return np.empty_like(x)
    # The reductions ``x.max(axis=-1, keepdims=True)`` and ``e.sum(...)`` call, without the
    # Python wrappers of the array methods.
    if x.size == x.shape[-1]:
        # One row: reducing every axis reduces that row (the same elements in the same
        # order), and a 0-d operand spares the subtract and divide numpy's broadcasting.
        e = np.subtract(x, _max_reduce(x, None), out)
        np.exp(e, e)
        np.true_divide(e, _add_reduce(e, None), e)
        return e
    e = np.subtract(x, _max_reduce(x, -1, None, None, True), out)
    np.exp(e, e)
    np.true_divide(e, _add_reduce(e, -1, None, None, True), e)
    return e


def row_view():
    """``row(b)``: the 1-D ``b`` as one row, ``b.reshape(1, -1)``, remembered for the last
    ``b`` seen (a variable's value changes rarely). ``add(x, row, x)`` on a one-row ``x``
    has operands of one shape, which numpy runs without its broadcasting machinery (the same
    elementwise results, in half the time for a small ``x``)."""
    last = [(None, None)]

    def row(b):
        seen, view = last[0]
        if seen is b:
            return view
        view = b.reshape(1, -1)
        last[0] = (b, view)  # one assignment: threads never see a mismatched pair
        return view

    return row


_max_reduce = np.maximum.reduce
_add_reduce = np.add.reduce


def c_buffers(steps: list, decisions: dict[int, Decision]) -> set[int]:
    """The slots whose value is, in every run, a C-contiguous, aligned ndarray that a MatMul
    recipe allocated (or wrote into a kept buffer), possibly updated in place since."""
    own: set[int] = set()
    for k, d in decisions.items():
        _, ins, out, _, _, _ = steps[k]
        if d.recipe.kind == "matmul" or (d.inplace and ins[0] in own):
            own.add(out)
    return own


def dot_operand(v, dtype, right: bool) -> bool:
    """Whether ``v`` (before any transpose) may be an operand of ``np.dot`` in place of
    ``np.matmul``: an aligned C-contiguous 2-D ndarray of ``dtype`` (read-only or not); the
    right operand also has no dimension of 1.

    Why that suffices (numpy 2.x, ``_core/src/umath/matmul.c.src`` for matmul,
    ``_core/src/common/cblasfuncs.c`` ``cblas_matrixproduct`` for dot): with both operands
    aligned and either C-contiguous or transposed views of C-contiguous arrays (so
    F-contiguous), inner dimension k >= 2, columns n >= 2 and a C-contiguous output, both
    make the one same BLAS call with the same arguments:

    - m >= 2: ``cblas_?gemm(RowMajor, tA, tB, m, n, k, 1, A, lda, B, ldb, 0, C, n)``, with
      ``tX`` = Trans and ``ld`` = the leading extent for a transposed operand (``matmul``:
      not ``is_blasable2d`` as C, blasable as F; ``dot``: ``PyArray_IS_F_CONTIGUOUS``); or
      ``cblas_?syrk(RowMajor, Upper, tA, n, k, ...)`` and the same triangle copy for
      ``A @ A.T`` / ``A.T @ A`` on one buffer (both test the same pointer and strides).
      ``dot`` zeroes the output first, which ``beta = 0`` overwrites.
    - m == 1: ``cblas_?gemv(RowMajor (B as C) or ColMajor (B transposed), Trans, k, n, 1,
      B, ld, A, 1, 0, C, 1)`` (matmul's ``vector_matrix`` with the operands switched; dot's
      row-times-matrix case).
    - m == 0 or k == 0: no BLAS call; both give an empty or all-zero output.

    Left to ``matmul`` (their routines differ): k == 1 (matmul's loop vs dot's gemm), n == 1
    (gemv in another order, or dot products), strided or unaligned operands (dot copies
    them first), other dtypes, subclasses.
    """
    return (
        v.__class__ is np.ndarray
        and v.dtype is dtype
        and (flags := v.flags).c_contiguous
        and flags.aligned
        and v.ndim == 2
        and (not right or 1 not in v.shape)
    )


def zeros_like(dtype):
    """``zeros(x)``: a read-only zero array of ``x``'s shape and ``dtype`` (a 0-d zero for an
    ``x`` of more than ``ZEROS_MAX`` elements), remembered per shape (the last few).
    ``maximum(x, zeros(x), out=x)`` gives the bits of ``maximum(x, 0)`` (NaNs and signed
    zeros included: the same elementwise rule) in about half the time: numpy's SIMD loop for
    two arrays instead of an array and a broadcast scalar."""
    scalar = np.zeros((), dtype)
    kept: dict[tuple, np.ndarray] = {}

    def zeros(x):
        shape = x.shape
        z = kept.get(shape)
        if z is not None:
            return z
        if x.size > ZEROS_MAX:
            return scalar
        z = np.zeros(shape, dtype)
        z.flags.writeable = False
        if len(kept) >= 8:  # batch sizes come and go: keep the memory bounded
            kept.clear()
        kept[shape] = z
        return z

    return zeros


# The largest relu (in elements) that gets a zero array of its own shape.
ZEROS_MAX = 1 << 16
