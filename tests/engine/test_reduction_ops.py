"""Reductions, arg max/min, cumsum and tensordot: a table against numpy references, then static
shapes, names, numerical stability and errors checked one by one (expected values from TF)."""

import numpy as np
import pytest

import engine as tf
from engine import errors
from tests.engine.optable import Case, check_case

F = np.float32
I32 = np.int32
rng = np.random.default_rng(0)
x3 = rng.standard_normal((2, 3, 4)).astype(F)
m = rng.standard_normal((3, 4)).astype(F)
m64 = rng.standard_normal((3, 4))
im = np.array([[7, -7, 3], [0, 5, -2]], I32)
i8 = np.array([[100, 100, -3], [1, 2, 3]], np.int8)
u8 = np.array([[250, 250], [3, 4]], np.uint8)
bm = np.array([[True, False, True], [False, False, True]])
empty = np.zeros((0, 3), F)
ties = np.array([[1, 3, 3], [2, 2, 0], [5, 5, 5]], I32)
big = np.array([[1000.0, 1000.0, -1000.0], [-1000.0, -1000.0, -999.0]], F)


def axis_ref(fn):
    """A numpy reduction keeping the input's dtype (numpy widens int32 sums to int64)."""
    return lambda axis=None, keepdims=False: (
        lambda v: np.asarray(fn(v, axis=axis, keepdims=keepdims)).astype(v.dtype)
    )


np_sum, np_prod = axis_ref(np.sum), axis_ref(np.prod)
np_max, np_min = axis_ref(np.max), axis_ref(np.min)
np_any, np_all = axis_ref(np.any), axis_ref(np.all)


def np_mean(axis=None, keepdims=False):
    def ref(v):
        if v.dtype.kind == "f":
            return np.asarray(np.mean(v.astype(np.float64), axis=axis, keepdims=keepdims)).astype(
                v.dtype
            )
        s = np.sum(v.astype(np.int64), axis=axis, keepdims=keepdims)
        n = np.sum(np.ones(v.shape, np.int64), axis=axis, keepdims=keepdims)
        # C-style division, toward zero; an empty mean is 0.
        return np.asarray(np.trunc(s / np.maximum(n, 1))).astype(v.dtype)

    return ref


def np_logsumexp(axis=None, keepdims=False):
    def ref(v):
        mx = np.max(v, axis=axis, keepdims=True)
        mx = np.where(np.isfinite(mx), mx, 0)
        out = np.log(np.sum(np.exp(v - mx), axis=axis, keepdims=True)) + mx
        return (out if keepdims else np.squeeze(out, axis=axis)).astype(v.dtype)

    return ref


def np_cumsum(axis=0, exclusive=False, reverse=False):
    def ref(v):
        w = np.flip(v, axis) if reverse else v
        out = np.cumsum(w, axis=axis, dtype=v.dtype)
        if exclusive:
            out = np.concatenate(
                [
                    np.zeros_like(np.take(out, [0], axis=axis)),
                    np.take(out, np.arange(out.shape[axis] - 1), axis=axis),
                ],
                axis=axis,
            )
        return np.flip(out, axis) if reverse else out

    return ref


def np_arg(fn, axis=0, dtype=np.int64):
    return lambda v: np.asarray(fn(v, axis=axis)).astype(dtype)


CASES = [
    # reduce_sum: every axis form, keepdims, dtypes, empty inputs
    Case("sum_all", tf.reduce_sum, [x3], np_sum(), []),
    Case("sum_axis1", lambda t: tf.reduce_sum(t, 1), [x3], np_sum(1), [2, 4], rtol=1e-5),
    Case("sum_axis_neg", lambda t: tf.reduce_sum(t, axis=-1), [x3], np_sum(-1), [2, 3], rtol=1e-5),
    Case("sum_axis_list", lambda t: tf.reduce_sum(t, [0, 2]), [x3], np_sum((0, 2)), [3], rtol=1e-5),
    Case(
        "sum_keepdims",
        lambda t: tf.reduce_sum(t, (0, -1), keepdims=True),
        [x3],
        np_sum((0, 2), True),
        [1, 3, 1],
        rtol=1e-5,
    ),
    Case(
        "sum_keep_dims_old_names",
        lambda t: tf.reduce_sum(t, reduction_indices=[1], keep_dims=True),
        [m],
        np_sum(1, True),
        [3, 1],
        rtol=1e-5,
    ),
    Case(
        "sum_all_keepdims",
        lambda t: tf.reduce_sum(t, keepdims=True),
        [m],
        np_sum(None, True),
        [1, 1],
        rtol=1e-5,
    ),
    Case("sum_no_axes", lambda t: tf.reduce_sum(t, []), [m], np_sum(()), [3, 4]),
    Case(
        "sum_axis_tensor",
        tf.reduce_sum,
        [x3, np.array([2, 0], I32)],
        lambda v, a: np_sum((0, 2))(v),
        [3],
        rtol=1e-5,
        const_inputs=(1,),
    ),
    Case(
        "sum_axis_fed", tf.reduce_sum, [x3, np.array(1, I32)], lambda v, a: np_sum(1)(v), rtol=1e-5
    ),
    Case(
        "sum_axis_int64",
        tf.reduce_sum,
        [m, np.array([-1], np.int64)],
        lambda v, a: np_sum(-1)(v),
        [3],
        rtol=1e-5,
        const_inputs=(1,),
    ),
    Case("sum_int32", lambda t: tf.reduce_sum(t, 0), [im], np_sum(0), [3]),
    Case("sum_int8_wraps", lambda t: tf.reduce_sum(t, 1), [i8], np_sum(1), [2]),
    Case("sum_uint8", lambda t: tf.reduce_sum(t, 0), [u8], np_sum(0), [2]),
    Case("sum_float64", tf.reduce_sum, [m64], np_sum(), []),
    Case("sum_empty_axis0", lambda t: tf.reduce_sum(t, 0), [empty], np_sum(0), [3]),
    Case("sum_empty_axis1", lambda t: tf.reduce_sum(t, 1), [empty], np_sum(1), [0]),
    Case("sum_scalar", tf.reduce_sum, [F(3.5)], np_sum(), []),
    # reduce_mean: float and truncating int means
    Case("mean_all", tf.reduce_mean, [x3], np_mean(), [], rtol=1e-5),
    Case(
        "mean_axis",
        lambda t: tf.reduce_mean(t, -2, keepdims=True),
        [x3],
        np_mean(-2, True),
        [2, 1, 4],
        rtol=1e-5,
    ),
    Case(
        "mean_float16",
        lambda t: tf.reduce_mean(t, 1),
        [m.astype(np.float16)],
        np_mean(1),
        [3],
        rtol=2e-3,
        atol=2e-3,
    ),
    Case(
        "mean_int_truncates",
        lambda t: tf.reduce_mean(t, 1),
        [np.array([[1, 2], [-3, 0], [-9, 2], [7, 8]], I32)],
        np_mean(1),
        [4],
    ),
    Case("mean_int_all", tf.reduce_mean, [im], np_mean(), []),
    Case("mean_int32_no_overflow", tf.reduce_mean, [np.array([2**30, 2**30], I32)], np_mean(), []),
    Case("mean_uint8_no_overflow", lambda t: tf.reduce_mean(t, 1), [u8], np_mean(1), [2]),
    Case(
        "mean_empty_float",
        lambda t: tf.reduce_mean(t, 0),
        [empty],
        lambda v: np.full([3], np.nan, F),
        [3],
    ),
    Case("mean_empty_int", tf.reduce_mean, [np.zeros([0], I32)], np_mean(), []),
    # reduce_max / reduce_min
    Case("max_all", tf.reduce_max, [x3], np_max(), []),
    Case("max_axes", lambda t: tf.reduce_max(t, [1, -1]), [x3], np_max((1, 2)), [2]),
    Case(
        "max_int_keepdims",
        lambda t: tf.reduce_max(t, 1, keepdims=True),
        [im],
        np_max(1, True),
        [2, 1],
    ),
    Case(
        "max_nan",
        lambda t: tf.reduce_max(t, 0),
        [np.array([np.nan, 1.0], F)],
        lambda v: F(np.nan),
        [],
    ),
    Case(
        "max_empty_float",
        lambda t: tf.reduce_max(t, 0),
        [empty],
        lambda v: np.full([3], -np.inf, F),
        [3],
    ),
    Case(
        "max_empty_int",
        lambda t: tf.reduce_max(t, 0),
        [np.zeros((0, 2), I32)],
        lambda v: np.full([2], np.iinfo(I32).min, I32),
        [2],
    ),
    Case("min_axis", lambda t: tf.reduce_min(t, axis=2), [x3], np_min(2), [2, 3]),
    Case("min_uint8", tf.reduce_min, [u8], np_min(), []),
    Case("min_empty", tf.reduce_min, [empty], lambda v: F(np.inf), []),
    # reduce_prod
    Case("prod_axis", lambda t: tf.reduce_prod(t, 0), [m], np_prod(0), [4], rtol=1e-5),
    Case("prod_int8_wraps", lambda t: tf.reduce_prod(t, 1), [i8], np_prod(1), [2]),
    Case("prod_empty", lambda t: tf.reduce_prod(t, 0), [empty], lambda v: np.ones([3], F), [3]),
    # reduce_any / reduce_all
    Case("any_axis", lambda t: tf.reduce_any(t, 1), [bm], np_any(1), [2]),
    Case("any_all_axes", tf.reduce_any, [bm], np_any(), []),
    Case(
        "all_axis_keepdims",
        lambda t: tf.reduce_all(t, 0, keepdims=True),
        [bm],
        np_all(0, True),
        [1, 3],
    ),
    Case("all_all_axes", tf.reduce_all, [np.ones((2, 2), bool)], np_all(), []),
    Case("any_empty", tf.reduce_any, [np.zeros([0], bool)], lambda v: np.False_, []),
    Case("all_empty", tf.reduce_all, [np.zeros([0], bool)], lambda v: np.True_, []),
    # reduce_logsumexp
    Case(
        "logsumexp_axis", lambda t: tf.reduce_logsumexp(t, 1), [m], np_logsumexp(1), [3], rtol=1e-5
    ),
    Case("logsumexp_all", tf.reduce_logsumexp, [x3], np_logsumexp(), [], rtol=1e-5),
    Case(
        "logsumexp_keepdims",
        lambda t: tf.reduce_logsumexp(t, [0, -1], keepdims=True),
        [x3],
        np_logsumexp((0, 2), True),
        [1, 3, 1],
        rtol=1e-5,
    ),
    Case(
        "logsumexp_large",
        lambda t: tf.reduce_logsumexp(t, -1),
        [big],
        np_logsumexp(-1),
        [2],
        rtol=1e-6,
    ),
    Case("logsumexp_float64", lambda t: tf.reduce_logsumexp(t, 0), [m64], np_logsumexp(0), [4]),
    # count_nonzero
    Case("count_nonzero_all", tf.count_nonzero, [im], lambda v: np.int64(np.count_nonzero(v)), []),
    Case(
        "count_nonzero_axis",
        lambda t: tf.count_nonzero(t, 1),
        [np.where(m > 0, m, 0)],
        lambda v: np.count_nonzero(v, axis=1).astype(np.int64),
        [3],
    ),
    Case(
        "count_nonzero_keepdims_int32",
        lambda t: tf.count_nonzero(t, 0, keepdims=True, dtype=tf.int32),
        [bm],
        lambda v: np.count_nonzero(v, axis=0, keepdims=True).astype(I32),
        [1, 3],
    ),
    Case(
        "count_nonzero_strings",
        tf.count_nonzero,
        [np.array([b"", b"a", b"bc"], object)],
        lambda v: np.int64(2),
        [],
    ),
    # argmax / argmin
    Case("argmax_default_axis", tf.argmax, [m], np_arg(np.argmax), [4]),
    Case("argmax_axis1", lambda t: tf.argmax(t, 1), [x3], np_arg(np.argmax, 1), [2, 4]),
    Case("argmax_ties_first", lambda t: tf.argmax(t, axis=1), [ties], np_arg(np.argmax, 1), [3]),
    Case(
        "argmax_dimension_int32",
        lambda t: tf.argmax(t, dimension=0, output_type=tf.int32),
        [ties],
        np_arg(np.argmax, 0, I32),
        [3],
    ),
    Case("argmax_bool", lambda t: tf.argmax(t, -1), [bm], np_arg(np.argmax, -1), [2]),
    Case(
        "argmax_dim_fed", tf.argmax, [x3, np.array(-1, I32)], lambda v, a: np_arg(np.argmax, -1)(v)
    ),
    Case("argmin_axis_neg", lambda t: tf.argmin(t, -1), [x3], np_arg(np.argmin, -1), [2, 3]),
    Case("argmin_ties_first", lambda t: tf.argmin(t, 0), [ties], np_arg(np.argmin, 0), [3]),
    Case("argmin_vector", tf.argmin, [np.array([3, 1, 1], np.uint8)], np_arg(np.argmin), []),
    # cumsum
    Case("cumsum_axis0", tf.cumsum, [m], np_cumsum(0), [3, 4], rtol=1e-5),
    Case("cumsum_axis_neg", lambda t: tf.cumsum(t, -1), [x3], np_cumsum(2), [2, 3, 4], rtol=1e-5),
    Case(
        "cumsum_exclusive",
        lambda t: tf.cumsum(t, 1, exclusive=True),
        [im],
        np_cumsum(1, exclusive=True),
        [2, 3],
    ),
    Case(
        "cumsum_reverse",
        lambda t: tf.cumsum(t, 1, reverse=True),
        [im],
        np_cumsum(1, reverse=True),
        [2, 3],
    ),
    Case(
        "cumsum_exclusive_reverse",
        lambda t: tf.cumsum(t, 0, exclusive=True, reverse=True),
        [x3],
        np_cumsum(0, True, True),
        [2, 3, 4],
        rtol=1e-5,
    ),
    Case("cumsum_int8_wraps", lambda t: tf.cumsum(t, 1), [i8], np_cumsum(1), [2, 3]),
    Case(
        "cumsum_axis_fed", tf.cumsum, [m, np.array(1, I32)], lambda v, a: np_cumsum(1)(v), rtol=1e-5
    ),
    Case(
        "cumsum_empty",
        lambda t: tf.cumsum(t, 1, exclusive=True),
        [empty],
        lambda v: v.copy(),
        [0, 3],
    ),
    # tensordot, fed with unknown dims and unknown ranks too
    Case(
        "tensordot_int1",
        lambda a, b: tf.tensordot(a, b, 1),
        [x3, m.T.copy()],
        lambda a, b: np.tensordot(a, b, 1),
        [2, 3, 3],
        rtol=1e-5,
        atol=1e-5,
    ),
    Case(
        "tensordot_int2",
        lambda a, b: tf.tensordot(a, b, 2),
        [x3, m],
        lambda a, b: np.tensordot(a, b, 2),
        [2],
        rtol=1e-5,
        atol=1e-5,
    ),
    Case(
        "tensordot_int0_outer",
        lambda a, b: tf.tensordot(a, b, 0),
        [m[0], m[1]],
        lambda a, b: np.tensordot(a, b, 0),
        [4, 4],
        rtol=1e-6,
    ),
    Case(
        "tensordot_lists",
        lambda a, b: tf.tensordot(a, b, [[1, 2], [0, 1]]),
        [x3, rng.standard_normal((3, 4, 5)).astype(F)],
        lambda a, b: np.tensordot(a, b, [[1, 2], [0, 1]]),
        [2, 5],
        rtol=1e-5,
        atol=1e-5,
    ),
    Case(
        "tensordot_lists_transposed",
        lambda a, b: tf.tensordot(a, b, [[2, 0], [0, 2]]),
        [x3, rng.standard_normal((4, 5, 2)).astype(F)],
        lambda a, b: np.tensordot(a, b, [[2, 0], [0, 2]]),
        [3, 5],
        rtol=1e-5,
        atol=1e-5,
    ),
    Case(
        "tensordot_negative_axes",
        lambda a, b: tf.tensordot(a, b, [[-1], [-2]]),
        [m, x3.transpose(0, 2, 1).copy()],
        lambda a, b: np.tensordot(a, b, [[-1], [-2]]),
        [3, 2, 3],
        rtol=1e-5,
        atol=1e-5,
    ),
    Case(
        "tensordot_int_pair",
        lambda a, b: tf.tensordot(a, b, [0, 1]),
        [m, m.T.copy()],
        lambda a, b: np.tensordot(a, b, [[0], [1]]),
        [4, 4],
        rtol=1e-5,
        atol=1e-5,
    ),
    Case(
        "tensordot_int32",
        lambda a, b: tf.tensordot(a, b, [[1], [0]]),
        [im, im.T.copy()],
        lambda a, b: np.tensordot(a, b, [[1], [0]]).astype(I32),
        [2, 2],
    ),
    Case(
        "tensordot_empty_dim",
        lambda a, b: tf.tensordot(a, b, 1),
        [empty, m],
        lambda a, b: np.tensordot(a, b, 1),
        [0, 4],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_reduction_table(case):
    check_case(case)


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


# -----------------------------------------------------------------------------------------
# Static shapes
# -----------------------------------------------------------------------------------------


def test_unknown_axis_value_gives_unknown_rank_unless_keepdims():
    x = tf.placeholder(tf.float32, [None, 3])
    axis = tf.placeholder(tf.int32, [])
    assert tf.reduce_sum(x, axis).shape.rank is None
    assert tf.reduce_sum(x, axis, keepdims=True).shape.as_list() == [None, None]
    assert tf.reduce_max(x, tf.placeholder(tf.int32, [2]), keepdims=True).shape.rank == 2
    assert tf.reduce_sum(x, 1, keepdims=True).shape.as_list() == [None, 1]
    assert tf.reduce_mean(x, 0).shape.as_list() == [3]
    feed = {x: np.arange(6, dtype=F).reshape(2, 3), axis: 1}
    np.testing.assert_allclose(run(tf.reduce_sum(x, axis), feed), [3.0, 12.0])


def test_unknown_rank_input():
    u = tf.placeholder(tf.float32)
    assert tf.reduce_sum(u).shape.as_list() == []  # reducing all axes always gives a scalar
    assert tf.reduce_sum(u, keepdims=True).shape.rank is None
    assert tf.reduce_sum(u, 1).shape.rank is None
    assert tf.reduce_sum(u, 3, keepdims=True).shape.rank is None  # not checked until run
    assert tf.reduce_logsumexp(u).shape.as_list() == []
    assert tf.argmax(u, 1).shape.rank is None
    assert tf.cumsum(u, 1).shape.rank is None
    total = tf.reduce_sum(u)
    assert run(total, {u: np.ones((2, 3, 4), F)}) == 24.0
    assert total.op.inputs[1].op.type == "Range"  # [0, rank) computed when the graph runs


def test_partially_known_shapes():
    x = tf.placeholder(tf.float32, [None, 4, None])
    assert tf.reduce_sum(x, [1]).shape.as_list() == [None, None]
    assert tf.reduce_sum(x, -1, keepdims=True).shape.as_list() == [None, 4, 1]
    assert tf.reduce_all(tf.cast(x, tf.bool)).shape.as_list() == []
    assert tf.argmax(x, 1).shape.as_list() == [None, None]
    assert tf.argmax(x, tf.placeholder(tf.int32, [])).shape.as_list() == [None, None]
    assert tf.argmax(tf.placeholder(tf.float32, [5]), tf.placeholder(tf.int32)).shape == []
    assert tf.count_nonzero(x, 0).shape.as_list() == [4, None]
    assert tf.cumsum(x, 2).shape.as_list() == [None, 4, None]
    assert tf.reduce_logsumexp(x, 1).shape.as_list() == [None, None]


def test_reduction_of_constants_folds():
    t = tf.reduce_sum(tf.constant([[1, 2], [3, 4]]), 1)
    np.testing.assert_array_equal(tf.constant_value(t), [3, 7])


# -----------------------------------------------------------------------------------------
# Names and op types, as TF builds them
# -----------------------------------------------------------------------------------------


def _ops(g, start=0):
    return [(o.name, o.type) for o in g.get_operations()[start:]]


def test_op_names_and_types():
    g = tf.get_default_graph()
    x = tf.constant(np.ones((2, 3), F), name="x")
    s = tf.reduce_sum(x, 1)
    assert (s.name, s.op.type) == ("Sum:0", "Sum")
    assert s.op.inputs[1].op.name == "Sum/reduction_indices"
    assert s.op.get_attr("keep_dims") is False
    assert tf.reduce_sum(x).op.inputs[1].op.name == "Const"  # built outside the op's scope
    types = [tf.reduce_mean, tf.reduce_max, tf.reduce_min, tf.reduce_prod]
    assert [f(x).op.type for f in types] == ["Mean", "Max", "Min", "Prod"]
    b = x > 0
    assert (tf.reduce_any(b).op.type, tf.reduce_all(b).op.type) == ("Any", "All")
    assert tf.reduce_sum(x, name="total").name == "total:0"
    with tf.name_scope("outer"):
        assert tf.reduce_sum(x, 0).name == "outer/Sum:0"
    a = tf.argmax(x, 1)
    assert (a.name, a.dtype, a.op.inputs[1].op.name) == ("ArgMax:0", tf.int64, "ArgMax/dimension")
    assert tf.argmin(x, output_type=tf.int32).dtype == tf.int32
    c = tf.cumsum(x, 1, exclusive=True)
    assert (c.name, c.op.inputs[1].op.name) == ("Cumsum:0", "Cumsum/axis")
    assert c.op.get_attr("exclusive") is True and c.op.get_attr("reverse") is False
    assert tf.count_nonzero(x, 1).name == "count_nonzero/Sum:0"
    assert tf.count_nonzero(x, dtype=tf.int32).name == "count_nonzero_1/Cast_1:0"
    n = len(g.get_operations())
    lse = tf.reduce_logsumexp(x, 1)
    assert lse.name == "ReduceLogSumExp:0"
    assert _ops(g, n) == [
        ("ReduceLogSumExp/Max/reduction_indices", "Const"),
        ("ReduceLogSumExp/Max", "Max"),
        ("ReduceLogSumExp/IsFinite", "IsFinite"),
        ("ReduceLogSumExp/SelectV2/e", "Const"),
        ("ReduceLogSumExp/SelectV2", "SelectV2"),
        ("ReduceLogSumExp/StopGradient", "StopGradient"),
        ("ReduceLogSumExp/Sub", "Sub"),
        ("ReduceLogSumExp/Exp", "Exp"),
        ("ReduceLogSumExp/Sum/reduction_indices", "Const"),
        ("ReduceLogSumExp/Sum", "Sum"),
        ("ReduceLogSumExp/Log", "Log"),
        ("ReduceLogSumExp/Shape", "Shape"),
        ("ReduceLogSumExp/Reshape", "Reshape"),
        ("ReduceLogSumExp", "AddV2"),
    ]


def test_tensordot_names_and_shapes():
    a = tf.constant(np.ones((2, 3, 4), F), name="a")
    b = tf.constant(np.ones((4, 3, 5), F), name="b")
    t = tf.tensordot(a, b, 1)
    assert (t.name, t.op.type, t.shape.as_list()) == ("Tensordot:0", "Reshape", [2, 3, 3, 5])
    t = tf.tensordot(a, b, [[1, 2], [1, 0]])
    assert (t.name, t.shape.as_list()) == ("Tensordot_1/MatMul:0", [2, 5])  # no reshape back
    assert tf.tensordot(a, b, 0).shape.as_list() == [2, 3, 4, 4, 3, 5]
    p = tf.placeholder(tf.float32, [None, 3, 4])
    assert tf.tensordot(p, b, [[2], [0]]).shape.as_list() == [None, 3, 3, 5]
    assert tf.tensordot(tf.placeholder(tf.float32), b, 1).shape.rank is None


# -----------------------------------------------------------------------------------------
# Values that need care
# -----------------------------------------------------------------------------------------


def test_logsumexp_is_stable():
    x = tf.constant(
        np.array(
            [
                [1000.0, 1000.0],
                [-1000.0, -1000.0],
                [1000.0, -1000.0],
                [-np.inf, -np.inf],
                [np.inf, 1.0],
                [0.0, 0.0],
            ],
            F,
        )
    )
    got = run(tf.reduce_logsumexp(x, 1))
    log2 = np.log(2.0)
    np.testing.assert_allclose(got[:3], [1000 + log2, -1000 + log2, 1000.0], rtol=1e-6)
    assert got[3] == -np.inf and got[4] == np.inf
    np.testing.assert_allclose(got[5], log2, rtol=1e-6)
    assert run(tf.reduce_logsumexp(np.array([1000.0, 1000.0], F))) == pytest.approx(
        1000 + log2, rel=1e-6
    )


def test_argmax_ties_give_first_index_and_skip_nan():
    x = tf.constant(np.array([[1, 3, 3], [2, 2, 0]], I32))
    np.testing.assert_array_equal(run(tf.argmax(x, 1)), [1, 0])
    np.testing.assert_array_equal(run(tf.argmin(x, 1)), [0, 2])
    np.testing.assert_array_equal(run(tf.argmax(x)), [1, 0, 0])
    # TF's comparisons never pick NaN; an all-NaN slice gives index 0.
    nan = np.nan
    v = tf.constant(np.array([[1.0, nan, 3.0], [nan, 1.0, 0.0], [nan, nan, nan]], F))
    np.testing.assert_array_equal(run(tf.argmax(v, 1)), [2, 1, 0])
    np.testing.assert_array_equal(run(tf.argmin(v, 1)), [0, 2, 0])


def test_int_mean_truncates_and_keeps_dtype():
    assert run(tf.reduce_mean(np.array([1, 2], I32))) == 1
    assert run(tf.reduce_mean(np.array([-1, -2], I32))) == -1
    assert run(tf.reduce_mean(np.array([-5, -4, 0], I32))) == -3
    assert run(tf.reduce_mean(np.array([2**62, 2**62], np.int64))) == -(2**62)  # wraps
    for dtype in (np.int8, np.uint8, np.int16, np.int32, np.int64, np.float16, np.float64):
        for fn in (tf.reduce_sum, tf.reduce_mean, tf.reduce_max, tf.reduce_prod):
            t = fn(np.ones((2, 2), dtype), 0)
            assert t.dtype.as_numpy_dtype == dtype
            assert run(t).dtype == dtype


def test_sum_float16_accumulates_precisely():
    got = run(tf.reduce_sum(np.full([4096], 0.1, np.float16)))
    assert got.dtype == np.float16
    assert abs(float(got) - 409.5) < 1.0


def test_tensordot_with_placeholders():
    a_val = rng.standard_normal((5, 3, 4)).astype(F)
    b_val = rng.standard_normal((4, 3, 2)).astype(F)
    b_t = b_val.transpose(1, 0, 2).copy()  # (3, 4, 2)
    a = tf.placeholder(tf.float32, [None, 3, 4])
    b = tf.placeholder(tf.float32, [4, 3, None])
    t = tf.tensordot(a, b, [[1, 2], [1, 0]])
    assert t.shape.as_list() == [None, None]
    np.testing.assert_allclose(
        run(t, {a: a_val, b: b_val}),
        np.tensordot(a_val, b_val, [[1, 2], [1, 0]]),
        rtol=1e-5,
        atol=1e-5,
    )
    batch = tf.tensordot(a, tf.constant(b_t), 2)  # unknown batch against a static right side
    assert batch.shape.as_list() == [None, 2]
    np.testing.assert_allclose(
        run(batch, {a: a_val}), np.tensordot(a_val, b_t, 2), rtol=1e-5, atol=1e-5
    )
    ua, ub = tf.placeholder(tf.float32), tf.placeholder(tf.float32)
    t = tf.tensordot(ua, ub, 2)
    assert t.shape.rank is None
    np.testing.assert_allclose(
        run(t, {ua: a_val, ub: b_t}), np.tensordot(a_val, b_t, 2), rtol=1e-5, atol=1e-5
    )
    t = tf.tensordot(ua, ub, [[-1, 1], [0, 1]])
    np.testing.assert_allclose(
        run(t, {ua: a_val, ub: b_val}),
        np.tensordot(a_val, b_val, [[2, 1], [0, 1]]),
        rtol=1e-5,
        atol=1e-5,
    )


# -----------------------------------------------------------------------------------------
# Errors: build time (ValueError/TypeError, as TF raises them) and run time
# -----------------------------------------------------------------------------------------

x23 = np.zeros((2, 3), F)


BUILD_ERRORS = [
    (
        "sum_axis_out_of_range",
        lambda: tf.reduce_sum(x23, 2),
        ValueError,
        r"Invalid reduction dimension 2 for input with 2 dimensions\. for 'Sum'",
    ),
    (
        "max_negative_axis_out_of_range",
        lambda: tf.reduce_max(x23, [0, -3]),
        ValueError,
        "Invalid reduction dimension -3 for input with 2 dimensions",
    ),
    (
        "sum_scalar_axis_0",
        lambda: tf.reduce_sum(F(3), 0),
        ValueError,
        "Invalid reduction dimension 0 for input with 0 dimensions",
    ),
    (
        "sum_axis_rank2",
        lambda: tf.reduce_sum(x23, [[0]]),
        ValueError,
        "Shape must be at most rank 1 but is rank 2",
    ),
    ("sum_float_axis", lambda: tf.reduce_sum(x23, 0.5), TypeError, "'Tidx' of float32"),
    ("sum_bool", lambda: tf.reduce_sum(np.array([True, False])), TypeError, "'T' of bool"),
    ("mean_bool", lambda: tf.reduce_mean(np.array([True])), TypeError, "'T' of bool"),
    ("sum_string", lambda: tf.reduce_sum(np.array([b"a"], object)), TypeError, "'T' of string"),
    (
        "any_float",
        lambda: tf.reduce_any(tf.constant([1.0])),
        TypeError,
        "Input 'input' of 'Any' Op has type float32 that does not match expected type of bool",
    ),
    (
        "axis_and_reduction_indices",
        lambda: tf.reduce_sum(x23, axis=1, reduction_indices=1),
        ValueError,
        "Cannot specify both 'reduction_indices' and 'axis'",
    ),
    (
        "keepdims_and_keep_dims",
        lambda: tf.reduce_sum(x23, keepdims=True, keep_dims=True),
        ValueError,
        "Cannot specify both 'keep_dims' and 'keepdims'",
    ),
    (
        "logsumexp_int",
        lambda: tf.reduce_logsumexp(np.array([1, 2], I32)),
        TypeError,
        "'T' of int32",
    ),
    (
        "argmax_dim_out_of_range",
        lambda: tf.argmax(x23, 2),
        ValueError,
        r"Dimension \(2\) must be in the range \[-2, 2\), where 2 is the number of dimensions",
    ),
    (
        "argmax_dim_vector",
        lambda: tf.argmax(x23, tf.constant([1])),
        ValueError,
        "Shape must be rank 0 but is rank 1",
    ),
    (
        "argmax_axis_and_dimension",
        lambda: tf.argmax(x23, axis=1, dimension=1),
        ValueError,
        "Cannot specify both 'dimension' and 'axis'",
    ),
    (
        "argmax_float_output_type",
        lambda: tf.argmax(x23, 1, output_type=tf.float32),
        TypeError,
        "'output_type' of float32",
    ),
    ("argmax_string", lambda: tf.argmax(np.array([b"a"], object)), TypeError, "'T' of string"),
    ("cumsum_bool", lambda: tf.cumsum(np.array([True])), TypeError, "'T' of bool"),
    (
        "tensordot_negative_axes",
        lambda: tf.tensordot(x23, x23, -1),
        ValueError,
        "`axes` must be at least 0",
    ),
    (
        "tensordot_axes_too_large",
        lambda: tf.tensordot(x23, x23, 3),
        ValueError,
        "`axes` must not be larger than",
    ),
    (
        "tensordot_axes_one_list",
        lambda: tf.tensordot(x23, x23, [[1]]),
        ValueError,
        "must be an integer or have length 2",
    ),
    (
        "tensordot_axes_lengths_differ",
        lambda: tf.tensordot(x23, x23, [[1], [0, 1]]),
        ValueError,
        "Different number of contraction axes `a` and `b`, 1 != 2",
    ),
    (
        "tensordot_dims_mismatch",
        lambda: tf.tensordot(x23, x23, 1),
        ValueError,
        "Dimensions must be equal, but are 3 and 2",
    ),
]


@pytest.mark.parametrize(
    "build, exc, match", [pytest.param(*row[1:], id=row[0]) for row in BUILD_ERRORS]
)
def test_build_time_errors(build, exc, match):
    with pytest.raises(exc, match=match):
        build()


RUN_ERRORS = [
    (
        "sum_duplicate_axes",
        lambda p: tf.reduce_sum(x23, [0, 0]),
        None,
        "Invalid reduction arguments: Axes contains duplicate dimension: 0",
    ),
    (
        "sum_duplicate_negative_axes",
        lambda p: tf.reduce_sum(x23, [1, -1]),
        None,
        "Axes contains duplicate dimension: 1",
    ),
    (
        "sum_fed_axis_out_of_range",
        lambda p: tf.reduce_sum(x23, p),
        5,
        r"Invalid reduction dimension \(5 for input with 2",
    ),
    (
        "argmax_fed_dim_out_of_range",
        lambda p: tf.argmax(x23, p),
        3,
        r"Expected dimension in the range \[-2, 2\), but got 3",
    ),
    (
        "argmax_empty_axis",
        lambda p: tf.argmax(np.zeros((0, 3), F), 0),
        None,
        r"Reduction axis 0 is empty in shape \[0,3\]",
    ),
    (
        "argmax_scalar",
        lambda p: tf.argmax(F(1.0), 0),
        None,
        r"Expected dimension in the range \[0, 0\)",
    ),
    (
        "cumsum_axis_out_of_range",
        lambda p: tf.cumsum(x23, 2),
        None,
        r"ScanOp: Expected scan axis in the range \[-2, 2\), but got 2",
    ),
    (
        "cumsum_axis_not_scalar",
        lambda p: tf.cumsum(x23, [1]),
        None,
        r"ScanOp: axis must be a scalar, not \[1\]",
    ),
]


@pytest.mark.parametrize(
    "build, feed, match", [pytest.param(*row[1:], id=row[0]) for row in RUN_ERRORS]
)
def test_run_time_errors(build, feed, match):
    p = tf.placeholder(tf.int32)
    t = build(p)
    with pytest.raises(errors.InvalidArgumentError, match=match):
        run(t, {p: feed} if feed is not None else None)
