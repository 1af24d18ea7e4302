"""Matrix ops against TensorFlow: values, gradients and error messages recorded by
``fixtures/make_linalg_fixtures.py`` from the same graphs (``build``, ``ERRORS``); the
optable rows (``CASES``: unknown shapes, devices) and finite-difference checks
(``GRAD_CASES``)."""

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures import make_linalg_fixtures as fx
from tests.engine.fixtures.oracle import (
    assert_recorded_error,
    assert_recorded_scaled,
    load,
    run_graph,
)
from tests.engine.optable import Case, check_case, check_gradient

TF = load("linalg_tf.npz")
VALUE_KEYS = sorted(k for k in TF.files if not k.startswith(("error_", "tf_version")))
# LAPACK (numpy) and Eigen (TF) order their sums differently: float32 results of chained
# solves and inverses differ in the last few ulps, relative to the largest entry.
RTOL = {np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-10}
ATOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}


@pytest.fixture(scope="module")
def ours():
    return run_graph(tf, fx.build)


def test_every_recorded_value_is_compared(ours):
    assert sorted(ours) == VALUE_KEYS
    assert len(VALUE_KEYS) == 106


@pytest.mark.parametrize("key", VALUE_KEYS)
def test_values_and_gradients_match_tensorflow(ours, key):
    assert_recorded_scaled(ours[key], TF[key], key, RTOL, ATOL)


def test_the_recorded_cases_exercise_what_they_claim():
    a = fx.SQUARE["f64"]
    np.testing.assert_allclose(TF["inv_f64"] @ a, np.broadcast_to(np.eye(4), a.shape), atol=1e-12)
    chol = TF["chol_f64"]
    np.testing.assert_allclose(chol @ np.swapaxes(chol, -1, -2), fx.SPD["f64"], rtol=1e-12)
    assert np.all(TF["slogdet_sign_f64"] == np.sign(np.linalg.det(-a)))
    assert np.isnan(TF["chol_not_pd"][0]).any() and not np.isnan(TF["chol_not_pd"][1]).any()
    assert TF["tri_lo_f32"].shape == (3, 4, 3)  # the [1, 4, 4] matrix broadcast


@pytest.mark.parametrize("key", sorted(fx.ERRORS))
def test_errors_match_tensorflow(key):
    assert_recorded_error(tf, TF, key, fx.ERRORS[key])


def test_triangular_solve_reads_one_triangle_and_a_zero_pivot_is_not_an_error():
    with tf.Graph().as_default():
        m = np.array([[2.0, 99.0], [1.0, 0.0]])
        lo = tf.matrix_triangular_solve(m, np.ones((2, 1)))
        up = tf.matrix_triangular_solve(np.array([[2.0, 1.0], [99.0, 4.0]]), [[1.0], [2.0]], False)
        with tf.Session() as sess:
            got_lo, got_up = sess.run([lo, up])
    assert got_lo[0, 0] == 0.5 and not np.isfinite(got_lo[1, 0])
    np.testing.assert_allclose(got_up, [[0.25], [0.5]])


def test_names_and_namespaces():
    assert tf.linalg.inv is tf.matrix_inverse and tf.linalg.diag is tf.matrix_diag
    assert tf.linalg.band_part is tf.matrix_band_part and tf.linalg.solve is tf.matrix_solve
    with tf.Graph().as_default():
        assert tf.matrix_diag([1.0, 2.0]).name == "diag:0"
        assert tf.matrix_triangular_solve([[1.0]], [[1.0]]).op.name.startswith("triangular_solve")
        with pytest.raises(TypeError, match="allowed values"):
            tf.matrix_inverse(np.eye(2, dtype=np.int32))
        with pytest.raises(ValueError, match="rank >= 2"):
            tf.matrix_transpose([1.0, 2.0])
        with pytest.raises(ValueError, match="Dimensions must be equal"):
            tf.matrix_solve(np.eye(3), np.ones((2, 1)))


# -- table rows: unknown shapes, devices, finite differences --------------------------------

_rng = np.random.default_rng(8)
_A = (_rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)).astype(np.float64)
_B = _rng.standard_normal((2, 3, 2))
_S = _A @ np.swapaxes(_A, -1, -2)
_X = _rng.standard_normal((2, 3, 4))
_D = _rng.standard_normal((2, 3))
_ONE = np.int64(1)


def _band(x, lo, up):
    r, c = np.indices(x.shape[-2:])
    return np.where(((lo < 0) | (r - c <= lo)) & ((up < 0) | (c - r <= up)), x, 0)


def _set_diag(x, d):
    out = x.copy()
    i = np.arange(d.shape[-1])
    out[..., i, i] = d
    return out


def _tri(a, b, lower=True):
    return np.linalg.solve(np.tril(a) if lower else np.triu(a), b)


CASES = [
    Case("inv", tf.matrix_inverse, [_A], np.linalg.inv, [2, 3, 3], 1e-10, 1e-12),
    Case("det", tf.matrix_determinant, [_A], np.linalg.det, [2], 1e-10, 1e-12),
    Case("cholesky", tf.cholesky, [_S], np.linalg.cholesky, [2, 3, 3], 1e-10, 1e-12),
    Case("solve", tf.matrix_solve, [_A, _B], np.linalg.solve, [2, 3, 2], 1e-10, 1e-12),
    Case("tri_solve", tf.matrix_triangular_solve, [_A, _B], _tri, [2, 3, 2], 1e-10, 1e-12),
    Case(
        "slogdet",
        lambda x: list(tf.linalg.slogdet(x)),
        [_A],
        lambda x: list(np.linalg.slogdet(x)),
        [[2], [2]],
        1e-10,
        1e-12,
    ),
    Case("matrix_diag", tf.matrix_diag, [_D], lambda d: d[..., None] * np.eye(3), [2, 3, 3]),
    Case("diag_part", tf.matrix_diag_part, [_X], lambda x: np.diagonal(x, 0, -2, -1), [2, 3]),
    Case("set_diag", tf.matrix_set_diag, [_X, _D], _set_diag, [2, 3, 4]),
    Case("band", tf.matrix_band_part, [_X, _ONE, np.int64(-1)], _band, [2, 3, 4]),
    Case("diag", tf.diag, [_D], lambda d: np.diag(d.ravel()).reshape(2, 3, 2, 3), [2, 3, 2, 3]),
    Case(
        "diag_part_2k",
        tf.diag_part,
        [np.diag(_D.ravel()).reshape(2, 3, 2, 3)],
        lambda x: _D,
        [2, 3],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_table(case):
    check_case(case)


GRAD_CASES = [
    Case("inv", tf.matrix_inverse, [_A], None, grad_inputs=(0,)),
    Case("inv_adjoint", lambda x: tf.matrix_inverse(x, adjoint=True), [_A], None, grad_inputs=(0,)),
    Case("det", tf.matrix_determinant, [_A], None, grad_inputs=(0,)),
    Case("slogdet", lambda x: tf.linalg.slogdet(x)[1], [_A], None, grad_inputs=(0,)),
    # Cholesky reads one triangle: symmetrise so the finite differences see TF's gradient.
    Case(
        "cholesky",
        lambda x: tf.cholesky((x + tf.matrix_transpose(x)) / 2),
        [_S],
        None,
        grad_inputs=(0,),
    ),
    Case("solve", tf.matrix_solve, [_A, _B], None, grad_inputs=(0, 1)),
    Case("solve_adj", lambda a, b: tf.matrix_solve(a, b, True), [_A, _B], None, grad_inputs=(0, 1)),
    Case("tri_lower", tf.matrix_triangular_solve, [_A, _B], None, grad_inputs=(0, 1)),
    Case(
        "tri_upper_adj_broadcast",
        lambda a, b: tf.matrix_triangular_solve(a, b, lower=False, adjoint=True),
        [_A[:1], _B],
        None,
        grad_inputs=(0, 1),
    ),
    Case("matrix_diag", tf.matrix_diag, [_D], None, grad_inputs=(0,)),
    Case("diag_part", tf.matrix_diag_part, [_X], None, grad_inputs=(0,)),
    Case("set_diag", tf.matrix_set_diag, [_X, _D], None, grad_inputs=(0, 1)),
    Case("band", lambda x: tf.matrix_band_part(x, 1, 0), [_X], None, grad_inputs=(0,)),
    Case("diag", tf.diag, [_D], None, grad_inputs=(0,)),
    Case("diag_part_2k", tf.diag_part, [np.ones((2, 3, 2, 3))], None, grad_inputs=(0,)),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=str)
def test_gradients_match_finite_differences(case):
    check_gradient(case)
