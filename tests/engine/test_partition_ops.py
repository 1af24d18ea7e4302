"""dynamic_partition, dynamic_stitch, space_to_depth/depth_to_space and the space/batch ops
against TensorFlow: values, static shapes, gradients and error messages recorded by
``fixtures/make_partition_fixtures.py`` from the same graphs (``build``, ``ERRORS``); table
cases (``CASES``) and finite-difference gradient checks (``GRAD_CASES``)."""

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures import make_partition_fixtures as fx
from tests.engine.fixtures.oracle import assert_recorded, assert_recorded_error, load
from tests.engine.optable import Case, check_case, check_gradient

TF = load("partition_tf.npz")
VALUE_KEYS = sorted(k for k in TF.files if not k.startswith(("shape_", "error_", "tf_version")))


@pytest.fixture(scope="module")
def ours():
    g = tf.Graph()
    with g.as_default():
        fetch, shapes = fx.build(tf, native_nchw=True)
        with tf.Session(graph=g) as sess:
            return sess.run(fetch), shapes


def test_every_recorded_value_is_compared(ours):
    values, _ = ours
    assert sorted(values) == VALUE_KEYS
    assert len(VALUE_KEYS) == 45


@pytest.mark.parametrize("key", VALUE_KEYS)
def test_values_and_gradients_match_tensorflow(ours, key):
    values, _ = ours
    assert_recorded(values[key], TF[key], key, rtol=1e-6, atol=1e-7)


def test_static_shapes_match_tensorflow(ours):
    _, shapes = ours
    for key, dims in shapes.items():
        assert dims == TF[f"shape_{key}"].tolist(), key


def test_the_recorded_cases_exercise_what_they_claim():
    """Empty partitions, later duplicates winning, zero gaps, gradients to every duplicate."""
    assert TF["dp_1"].shape == (0, 3) and TF["dp_int_1"].shape == (0, 2)
    np.testing.assert_array_equal(TF["dp_0"], fx.DATA[fx.PARTS == 0])
    np.testing.assert_array_equal(TF["ds"][2], fx.ST_DATA[1][0, 0])  # later list wins
    np.testing.assert_array_equal(TF["ds"][4], fx.ST_DATA[1][1, 0])
    assert TF["ds_gap"].tolist() == [1, 0, 3, 0, 0, 2]
    assert (TF["grad_ds_0"][1] == [4, 5]).all()  # index 2's gradient though overwritten
    assert TF["grad_dp"][3].tolist() == [0, 0, 0]  # unconnected partition 3


@pytest.mark.parametrize("key", sorted(fx.ERRORS))
def test_errors_match_tensorflow(key):
    assert_recorded_error(tf, TF, key, fx.ERRORS[key])


def test_bad_arguments_are_refused():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="partitions"):
            tf.dynamic_partition(fx.DATA, tf.constant(fx.PARTS, tf.int64), 4)
        with pytest.raises(ValueError, match="minimum 1"):
            tf.dynamic_partition(fx.DATA, fx.PARTS, 0)
        with pytest.raises(ValueError, match="minimum 2"):
            tf.space_to_depth(fx.X4, 1)
        with pytest.raises(ValueError, match="must match length"):
            tf.dynamic_stitch([[0]], [[1.0], [2.0]])


def test_parallel_stitch_lets_later_duplicates_win_too():
    with tf.Graph().as_default(), tf.Session() as sess:
        got = sess.run(tf.parallel_dynamic_stitch([[0, 1, 1], [1]], [[1, 2, 3], [4]]))
    assert got.tolist() == [1, 4]


def test_unknown_ranks_keep_unknown_shapes():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32)
        parts = tf.dynamic_partition(x, tf.placeholder(tf.int32), 2)
        assert parts[0].shape.rank is None
        s = tf.dynamic_stitch([tf.placeholder(tf.int32)], [x])
        assert s.shape.rank is None
        assert tf.space_to_depth(x, 2).shape.as_list() == [None] * 4


# -- table cases ----------------------------------------------------------------------------


def _s2d_ref(x, bs):
    n, h, w, c = x.shape
    return (
        x.reshape(n, h // bs, bs, w // bs, bs, c)
        .transpose(0, 1, 3, 2, 4, 5)
        .reshape(n, h // bs, w // bs, bs * bs * c)
    )


def _s2b_ref(x, block, pads):
    """Per element, as TF documents: output[b*B + n, i, j] = padded[n, i*b0 + b//b1, ...]."""
    p = np.pad(x, [(0, 0), *pads, (0, 0)])
    b0, b1 = block
    n, h, w, c = p.shape
    out = np.zeros((n * b0 * b1, h // b0, w // b1, c), x.dtype)
    for k in range(b0 * b1):
        out[k * n : (k + 1) * n] = p[:, k // b1 :: b0, k % b1 :: b1]
    return out


_PAD = np.array([[1, 1], [0, 3]], np.int32)
_BLOCK = np.array([2, 3], np.int32)

CASES = [
    Case(
        "dynamic_partition",
        lambda d, p: tf.dynamic_partition(d, p, 4),
        [fx.DATA, fx.PARTS],
        lambda d, p: [d[p == k] for k in range(4)],
        static_shape=[[None, 3]] * 4,
    ),
    Case(
        "dynamic_stitch",
        lambda i0, i1, d0, d1: tf.dynamic_stitch([i0, i1], [d0, d1]),
        [fx.ST_IDX[0], fx.ST_IDX[1], fx.ST_DATA[0], fx.ST_DATA[1]],
        lambda i0, i1, d0, d1: np.stack([d0[0], d1[0, 1], d1[0, 0], d1[1, 1], d1[1, 0]]),
        static_shape=[5, 2],
    ),
    Case(
        "parallel_dynamic_stitch",
        lambda i, d: tf.parallel_dynamic_stitch([i], [d]),
        [np.array([2, 0, 1], np.int32), np.array([5, 6, 7], np.int64)],
        lambda i, d: np.array([6, 7, 5], np.int64),
        static_shape=[3],
    ),
    Case(
        "space_to_depth",
        lambda x: tf.space_to_depth(x, 2),
        [fx.X4],
        lambda x: _s2d_ref(x, 2),
        static_shape=[2, 2, 3, 12],
    ),
    Case(
        "depth_to_space_nchw",
        lambda x: tf.depth_to_space(x, 2, data_format="NCHW"),
        [_s2d_ref(fx.X4, 2).transpose(0, 3, 1, 2)],
        lambda x: fx.X4.transpose(0, 3, 1, 2),
        static_shape=[2, 3, 4, 6],
    ),
    Case(
        "space_to_batch_nd",
        lambda x, b, p: tf.space_to_batch_nd(x, b, p),
        [fx.X4, _BLOCK, _PAD],
        lambda x, b, p: _s2b_ref(x, b, p),
        static_shape=[12, 3, 3, 3],
        const_inputs=(1, 2),
    ),
    Case(
        "batch_to_space_nd",
        lambda y, b, p: tf.batch_to_space_nd(y, b, p),
        [_s2b_ref(fx.X4, _BLOCK, _PAD), _BLOCK, _PAD],
        lambda y, b, p: fx.X4,
        static_shape=[2, 4, 6, 3],
        const_inputs=(1, 2),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_table_cases(case):
    check_case(case)


_rng = np.random.default_rng(8)
_X = _rng.standard_normal((2, 4, 4, 2))

GRAD_CASES = [
    Case(
        "dynamic_partition",
        lambda d: tf.dynamic_partition(d, fx.PARTS, 4)[2],
        [fx.DATA.astype(np.float64)],
        None,
        grad_inputs=(0,),
    ),
    Case(  # no duplicates: TF's gradient also reaches overwritten rows
        "dynamic_stitch",
        lambda d: tf.dynamic_stitch([fx.ST_IDX[0], [[1], [3]]], [d, fx.ST_DATA[1][:, :1] * 1.0]),
        [fx.ST_DATA[0].astype(np.float64)],
        None,
        grad_inputs=(0,),
    ),
    Case(
        "parallel_dynamic_stitch",
        lambda d: tf.parallel_dynamic_stitch([[1, 0], [2]], [d[:2], d[2:]]),
        [_rng.standard_normal((3, 2))],
        None,
        grad_inputs=(0,),
    ),
    Case(
        "space_to_depth",
        lambda x: tf.space_to_depth(x, 2, data_format="NCHW"),
        [_X],
        None,
        grad_inputs=(0,),
    ),
    Case(
        "depth_to_space",
        lambda x: tf.depth_to_space(x, 2),
        [_X.reshape(2, 2, 2, 8)],
        None,
        grad_inputs=(0,),
    ),
    Case(
        "space_to_batch_nd",
        lambda x: tf.space_to_batch_nd(x, [2, 1], [[1, 1], [0, 1]]),
        [_X],
        None,
        grad_inputs=(0,),
    ),
    Case(
        "batch_to_space_nd",
        lambda x: tf.batch_to_space_nd(x, [1, 2], [[0, 1], [1, 0]]),
        [_X],
        None,
        grad_inputs=(0,),
    ),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=str)
def test_gradients_match_finite_differences(case):
    check_gradient(case)
