"""gather_nd, scatter_nd and the segment reductions against TensorFlow: values, static shapes,
gradients and error messages recorded by ``fixtures/make_segment_fixtures.py`` from the same
graphs (``build``, ``ERRORS``); finite-difference gradient checks (``GRAD_CASES``) and the
unknown-shape paths."""

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures import make_segment_fixtures as fx
from tests.engine.fixtures.oracle import assert_recorded_error, load
from tests.engine.optable import Case, check_gradient

TF = load("segment_tf.npz")
VALUE_KEYS = sorted(k for k in TF.files if not k.startswith(("shape_", "error_", "tf_version")))


@pytest.fixture(scope="module")
def ours():
    g = tf.Graph()
    with g.as_default():
        fetch, shapes = fx.build(tf)
        with tf.Session(graph=g) as sess:
            return sess.run(fetch), shapes


def test_the_fixture_records_its_tensorflow_version():
    assert str(TF["tf_version"]).count(".") == 2


def test_every_recorded_value_is_compared(ours):
    values, _ = ours
    assert sorted(values) == VALUE_KEYS
    assert len(VALUE_KEYS) == 84


@pytest.mark.parametrize("key", VALUE_KEYS)
def test_values_and_gradients_match_tensorflow(ours, key):
    values, _ = ours
    expected = TF[key]
    got = np.asarray(values[key])
    assert got.dtype == expected.dtype and got.shape == expected.shape, key
    if expected.dtype.kind in "fc":
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7, err_msg=key)
    else:
        np.testing.assert_array_equal(got, expected, err_msg=key)


def test_static_shapes_match_tensorflow(ours):
    _, shapes = ours
    for key, dims in shapes.items():
        assert dims == TF[f"shape_{key}"].tolist(), key


def test_the_recorded_cases_exercise_what_they_claim():
    """Sanity of the fixture itself: negative ids dropped, empty segments at TF's values,
    duplicates summed, ties splitting the gradient."""
    kept = fx.IDS >= 0
    np.testing.assert_allclose(TF["u_sum"].sum(0), fx.X[kept].sum(0), rtol=1e-5)
    lowest, highest = np.finfo(np.float32).min, np.finfo(np.float32).max
    assert (TF["u_max"][[1, 3, 5]] == lowest).all() and (TF["u_min"][[1, 3, 5]] == highest).all()
    assert (TF["u_max_int"][1] == np.iinfo(np.int32).min).all()
    assert (TF["u_prod"][[1, 3, 5]] == 1).all() and (TF["u_mean"][[1, 3, 5]] == 0).all()
    assert (TF["s_max"][[1, 4]] == 0).all() and (TF["s_prod"][[1, 4]] == 1).all()
    assert TF["u_mean_int"].dtype == np.float64 and TF["s_mean_int"].dtype == np.int32
    dup = [0, fx.UPD[0, 0] + fx.UPD[2, 0], 0, fx.UPD[1, 0], 0]
    np.testing.assert_allclose(TF["snd_dup"], dup, rtol=1e-6)
    # Rows 1 and 3 tie for segment 2's max and min in columns 0 and 1: each gets half.
    for key in ("grad_u_max", "grad_u_min"):
        g = TF[key]
        assert g[1, 0] == g[3, 0] != 0 and g[1, 1] == g[3, 1] != 0 and g[2].tolist() == [0] * 3
    assert TF["grad_s_max"][2, 0] == TF["grad_s_max"][4, 0] != 0
    assert TF["grad_s_min"][2, 1] == TF["grad_s_min"][4, 1] != 0
    assert TF["grad_u_prod_zeros"][[1, 3], 1].tolist() == [0, 0]  # two zeros: no gradient
    assert TF["grad_u_prod_zeros"][0, 0] != 0  # the one zero: the product of the others


@pytest.mark.parametrize("key", sorted(fx.ERRORS))
def test_errors_match_tensorflow(key):
    assert_recorded_error(tf, TF, key, fx.ERRORS[key])


def test_bad_dtypes_are_type_errors():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="Tindices"):
            tf.gather_nd(fx.P, tf.constant([[0.5]]))
        with pytest.raises(TypeError, match="allowed values"):
            tf.unsorted_segment_sum(tf.constant([True, False]), [0, 1], 2)
        with pytest.raises(TypeError, match="Tnumsegments"):
            tf.unsorted_segment_sum(fx.X, fx.IDS, 2.0)
        with pytest.raises(TypeError):
            tf.unsorted_segment_sqrt_n(fx.X_INT, fx.IDS, 6)
        with pytest.raises(NotImplementedError, match="batch_dims"):
            tf.gather_nd(fx.P, [[0]], batch_dims=1)


# -- unknown shapes -------------------------------------------------------------------------


def _placeholder(value, rank_known: bool):
    shape = [None] * np.ndim(value) if rank_known else None
    return tf.placeholder(tf.as_dtype(np.asarray(value).dtype), shape)


@pytest.mark.parametrize("rank_known", [True, False], ids=["unknown_dims", "unknown_rank"])
@pytest.mark.parametrize("kind", fx.UNSORTED)
def test_unsorted_ops_with_unknown_shapes(kind, rank_known):
    """The dynamic branches of the shape helpers (gradient masks, mean's segment sizes)."""
    with tf.Graph().as_default():
        x, ids = _placeholder(fx.X_3D, rank_known), _placeholder(fx.IDS_2D, rank_known)
        n = tf.placeholder(tf.int32, [])
        y = fx._unsorted(tf, kind)(x, ids, n)
        w = np.random.default_rng(400 + fx.UNSORTED.index(kind)).standard_normal((3, 2))
        grad = tf.gradients(tf.reduce_sum(y * w.astype(np.float32)), x)[0]
        with tf.Session() as sess:
            got, got_grad = sess.run([y, grad], {x: fx.X_3D, ids: fx.IDS_2D, n: 3})
    np.testing.assert_allclose(got, TF[f"u_{kind}_2d_ids"], rtol=1e-6)
    np.testing.assert_allclose(got_grad, TF[f"grad_u_{kind}_2d_ids"], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("kind", fx.SORTED)
def test_sorted_ops_with_unknown_shapes(kind):
    with tf.Graph().as_default():
        s, ids = _placeholder(fx.S, False), _placeholder(fx.SIDS, False)
        y = fx._segment(tf, kind)(s, ids)
        assert y.shape.rank is None
        w = np.random.default_rng(600 + fx.SORTED.index(kind)).standard_normal((6, 2))
        grad = tf.gradients(tf.reduce_sum(y * w.astype(np.float32)), s)[0]
        with tf.Session() as sess:
            got, got_grad = sess.run([y, grad], {s: fx.S, ids: fx.SIDS})
    np.testing.assert_allclose(got, TF[f"s_{kind}"], rtol=1e-6)
    np.testing.assert_allclose(got_grad, TF[f"grad_s_{kind}"], rtol=1e-6, atol=1e-7)


def test_gather_nd_and_scatter_nd_with_unknown_shapes():
    with tf.Graph().as_default():
        p = _placeholder(fx.P, False)
        idx = tf.placeholder(tf.int32, [None, None])
        y = tf.gather_nd(p, idx)
        s = tf.scatter_nd(idx, tf.placeholder_with_default(fx.UPD[:, 1], [None]), [2, 4])
        assert y.shape.rank is None and s.shape.as_list() == [2, 4]
        with tf.Session() as sess:
            a = sess.run(y, {p: fx.P, idx: [[1, 0], [0, 2], [1, 0]]})
            b = sess.run(s, {idx: [[1, 0], [0, 3], [1, 0]]})
    np.testing.assert_array_equal(a, fx.P[[1, 0, 1], [0, 2, 0]])
    np.testing.assert_allclose(b, TF["snd_2d"], rtol=1e-6)


# -- finite differences ---------------------------------------------------------------------

_rng = np.random.default_rng(5)
_DISTINCT = _rng.permutation(18).reshape(6, 3) / 5.0 - 1.7  # no ties: max/min are smooth
_POSITIVE = _rng.uniform(0.5, 1.5, (6, 3))
_ID6 = np.array([0, 2, -1, 2, 0, 2], np.int32)
_SID6 = np.array([0, 0, 1, 3, 3, 3], np.int32)
_IDX = np.array([[1, 2], [0, 1], [1, 2]], np.int32)

GRAD_CASES = [
    Case("gather_nd", lambda x: tf.gather_nd(x, _IDX), [_DISTINCT], None, grad_inputs=(0,)),
    Case(
        "scatter_nd",
        lambda u: tf.scatter_nd(_IDX, u, [2, 3, 3]),
        [_DISTINCT[:3]],
        None,
        grad_inputs=(0,),
    ),
    *[
        Case(
            f"unsorted_segment_{kind}",
            lambda x, kind=kind: fx._unsorted(tf, kind)(x, _ID6, 4),
            [_POSITIVE if kind == "prod" else _DISTINCT],
            None,
            grad_inputs=(0,),
        )
        for kind in fx.UNSORTED
    ],
    *[
        Case(
            f"segment_{kind}",
            lambda x, kind=kind: fx._segment(tf, kind)(x, _SID6),
            [_POSITIVE if kind == "prod" else _DISTINCT],
            None,
            grad_inputs=(0,),
        )
        for kind in fx.SORTED
    ],
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=str)
def test_gradients_match_finite_differences(case):
    check_gradient(case)


def test_second_order_gradients_of_gather_nd_and_scatter_nd():
    """GatherNd's gradient is a ScatterNd and the reverse: their gradients chain."""
    with tf.Graph().as_default():
        x = tf.constant(_DISTINCT)
        g = tf.gradients(tf.reduce_sum(tf.gather_nd(x, _IDX) ** 2), x)[0]
        gg = tf.gradients(tf.reduce_sum(g * _POSITIVE), x)[0]
        with tf.Session() as sess:
            got = sess.run(gg)
    counts = np.zeros((6, 3))
    np.add.at(counts, (_IDX[:, 0], _IDX[:, 1]), 1.0)
    np.testing.assert_allclose(got, 2 * counts * _POSITIVE * (counts > 0), rtol=1e-12)


def round_trip_builder():
    """Every op of this module, for test_graph_def's round-trip table."""
    fetch, _ = fx.build(tf)
    return list(fetch.values()), {}, []
