"""``tf.math``, ``tf.random`` and ``tf.linalg``: the namespaces TF 1.13+ programs write
(``tf.math.log``, ``tf.random.normal``, ``tf.linalg.matmul``), over the engine's ops. Each
holds TF's names for what the engine has; any other name raises an ``AttributeError`` that
lists what the namespace covers.
"""

from __future__ import annotations

from collections.abc import Mapping

from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import name_scope
from engine.ops import array as array_ops
from engine.ops import (
    check_ops_more,
    decompositions,
    linalg_ops,
    math_impl,
    math_more,
    random_more,
    reduction,
)
from engine.ops import math as math_ops
from engine.util.namespaces import Namespace, namespace

__all__ = ["build"]

# tf.math names that are the same functions at the top level (tf.math.log is tf.log).
MATH = (
    "abs add add_n argmax argmin ceil cos count_nonzero cumprod cumsum divide equal erf exp "
    "expm1 floor floordiv floormod greater greater_equal invert_permutation is_finite is_inf "
    "is_nan less less_equal log log1p logical_and logical_not logical_or logical_xor maximum "
    "minimum mod multiply negative not_equal pow reciprocal reduce_all reduce_any "
    "reduce_logsumexp reduce_max reduce_mean reduce_min reduce_prod reduce_sum round rsqrt "
    "sigmoid sign sin sqrt square squared_difference subtract tan tanh truediv "
    "segment_max segment_mean segment_min segment_prod segment_sum unsorted_segment_max "
    "unsorted_segment_mean unsorted_segment_min unsorted_segment_prod unsorted_segment_sqrt_n "
    "unsorted_segment_sum acos asin atan atan2 sinh cosh asinh acosh atanh erfc lgamma digamma "
    "polygamma rint"
).split()
# tf.math names with no top-level twin in TF1.
MATH_ONLY = "divide_no_nan multiply_no_nan reciprocal_no_nan xdivy xlogy".split()
# tf.math names that are tf.nn's functions.
MATH_FROM_NN = (
    "in_top_k l2_normalize log_softmax softmax softplus softsign top_k zero_fraction"
).split()
LINALG = "einsum eye matmul norm tensordot".split()
# tf.linalg's names for the top-level matrix functions (tf.linalg.inv is tf.matrix_inverse).
LINALG_RENAMED = {
    "inv": "matrix_inverse",
    "det": "matrix_determinant",
    "cholesky": "cholesky",
    "solve": "matrix_solve",
    "triangular_solve": "matrix_triangular_solve",
    "matrix_transpose": "matrix_transpose",
    "trace": "trace",
    "diag": "matrix_diag",
    "diag_part": "matrix_diag_part",
    "set_diag": "matrix_set_diag",
    "band_part": "matrix_band_part",
}


def build(top: Mapping, nn) -> tuple[Namespace, Namespace, Namespace]:
    """``(tf.math, tf.random, tf.linalg)`` from the engine's top-level names ``top`` and its
    ``tf.nn`` module."""
    math = namespace(
        "tf.math",
        **{n: top[n] for n in MATH},
        **{n: getattr(nn, n) for n in MATH_FROM_NN},
        **{n: getattr(math_more, n) for n in MATH_ONLY},
        log_sigmoid=math_impl.log_sigmoid,
        reduce_std=math_impl.reduce_std,
        reduce_variance=math_impl.reduce_variance,
    )
    random = namespace(
        "tf.random",
        normal=top["random_normal"],
        uniform=top["random_uniform"],
        truncated_normal=top["truncated_normal"],
        set_random_seed=top["set_random_seed"],
        get_seed=top["get_seed"],
        log_uniform_candidate_sampler=nn.log_uniform_candidate_sampler,
        uniform_candidate_sampler=nn.uniform_candidate_sampler,
        shuffle=top["random_shuffle"],
        multinomial=top["multinomial"],
        categorical=random_more.categorical,
    )
    linalg = namespace(
        "tf.linalg",
        **{n: top[n] for n in LINALG},
        **{n: top[t] for n, t in LINALG_RENAMED.items()},
        l2_normalize=nn.l2_normalize,
        adjoint=linalg_ops.adjoint,
        logdet=linalg_ops.logdet,
        slogdet=linalg_ops.slogdet,
        qr=decompositions.qr,
        svd=decompositions.svd,
        eigh=decompositions.self_adjoint_eig,
        eigvalsh=decompositions.self_adjoint_eigvals,
    )
    return math, random, linalg


DEBUGGING = (
    "Assert",
    "assert_equal",
    "assert_greater",
    "assert_greater_equal",
    "assert_less",
    "assert_less_equal",
    "assert_negative",
    "assert_non_negative",
    "assert_non_positive",
    "assert_none_equal",
    "assert_positive",
    "assert_rank",
    "assert_rank_at_least",
    "assert_scalar",
    "assert_type",
    "is_finite",
    "is_inf",
    "is_nan",
)
MANIP = (
    "batch_to_space_nd",
    "gather_nd",
    "reshape",
    "reverse",
    "roll",
    "scatter_nd",
    "space_to_batch_nd",
    "tile",
)


def _is_monotonic(x, strict: bool, name: str):
    with name_scope(None, name, [x]):
        flat = array_ops.reshape(convert_to_tensor(x, name="x"), [-1])
        diff = math_ops.subtract(flat[1:], flat[:-1])
        zero = array_ops.zeros_like(diff)
        ok = math_ops.greater(diff, zero) if strict else math_ops.greater_equal(diff, zero)
        return reduction.reduce_all(ok)


def is_non_decreasing(x, name=None):
    """True when ``x``'s elements, in row-major order, never decrease (TF's definition)."""
    return _is_monotonic(x, False, name or "is_non_decreasing")


def is_strictly_increasing(x, name=None):
    """True when ``x``'s elements, in row-major order, always increase."""
    return _is_monotonic(x, True, name or "is_strictly_increasing")


def build_more(top: Mapping) -> tuple[Namespace, Namespace, Namespace]:
    """``(tf.debugging, tf.bitwise, tf.manip)`` from the engine's top-level names."""
    debugging = namespace(
        "tf.debugging",
        **{n: top[n] for n in DEBUGGING},
        check_numerics=check_ops_more.check_numerics,
        assert_all_finite=check_ops_more.verify_tensor_all_finite,
        is_non_decreasing=is_non_decreasing,
        is_strictly_increasing=is_strictly_increasing,
    )
    bitwise = namespace(
        "tf.bitwise",
        bitwise_and=top["bitwise_and"],
        bitwise_or=top["bitwise_or"],
        bitwise_xor=top["bitwise_xor"],
        invert=top["invert"],
        left_shift=check_ops_more.left_shift,
        right_shift=check_ops_more.right_shift,
    )
    manip = namespace("tf.manip", **{n: top[n] for n in MANIP})
    return debugging, bitwise, manip
