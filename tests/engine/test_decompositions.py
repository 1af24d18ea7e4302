"""QR, SVD and self-adjoint eigendecompositions against TensorFlow: sign-invariant values and
gradients recorded by ``fixtures/make_decomposition_fixtures.py`` from the same graphs; the
optable rows (``CASES``) and finite-difference checks (``GRAD_CASES``)."""

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures import make_decomposition_fixtures as fx
from tests.engine.fixtures.oracle import (
    assert_recorded_error,
    assert_recorded_scaled,
    load,
    run_graph,
)
from tests.engine.optable import Case, check_case, check_gradient

TF = load("decompositions_tf.npz")
VALUE_KEYS = sorted(k for k in TF.files if not k.startswith(("error_", "tf_version")))
# LAPACK (numpy) and Eigen (TF) take different routes to the same factorisation: float32
# results agree to a few ulps of the largest entry, float64 to ~1e-12 of it.
RTOL = {np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-9}
ATOL = {np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-10}


@pytest.fixture(scope="module")
def ours():
    return run_graph(tf, fx.build)


def test_every_recorded_value_is_compared(ours):
    assert sorted(ours) == VALUE_KEYS
    assert len(VALUE_KEYS) == 130


@pytest.mark.parametrize("key", VALUE_KEYS)
def test_values_and_gradients_match_tensorflow(ours, key):
    assert_recorded_scaled(ours[key], TF[key], key, RTOL, ATOL)


def test_the_recorded_cases_exercise_what_they_claim():
    a = fx.MATRICES[("f64", "wide")]
    np.testing.assert_allclose(TF["qr_wide_f64_qr"], a, atol=1e-12)
    np.testing.assert_allclose(TF["svd_tall_f64_s"], np.linalg.svd(fx.MATRICES[("f64", "tall")])[1])
    assert np.all(np.diff(TF["svd_wide_f64_s"], axis=-1) <= 0)  # descending
    assert np.all(np.diff(TF["eig_batch_f64_e"], axis=-1) > 0)  # ascending
    assert TF["qr_full_tall_f64_qtq"].shape == (2, 5, 5)
    assert TF["svd_full_f64_grad"].shape == (2, 4, 3)


@pytest.mark.parametrize("key", sorted(fx.ERRORS))
def test_errors_match_tensorflow(key):
    assert_recorded_error(tf, TF, key, fx.ERRORS[key])


def test_static_shapes_and_names():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [7, 5, 3])
        q, r = tf.qr(x, full_matrices=True)
        assert q.shape.as_list() == [7, 5, 5] and r.shape.as_list() == [7, 5, 3]
        s, u, v = tf.svd(tf.placeholder(tf.float64, [None, 3, 5]))
        assert [s.shape.as_list(), u.shape.as_list(), v.shape.as_list()] == [
            [None, 3],
            [None, 3, 3],
            [None, 5, 3],
        ]
        assert s.name == "svd/Svd:0" and q.name == "Qr:0"
        _, uf, vf = tf.svd(tf.placeholder(tf.float32, [4, None]), full_matrices=True)
        assert uf.shape.as_list() == [4, 4] and vf.shape.as_list() == [None, None]
        e = tf.self_adjoint_eigvals(tf.placeholder(tf.float32, [2, None, 3]))
        assert e.shape.as_list() == [2, 3] and e.op.outputs[1].shape.as_list() == [0]
        assert tf.linalg.eigh is tf.self_adjoint_eig and tf.linalg.svd is tf.svd
        assert tf.linalg.qr is tf.qr and tf.linalg.eigvalsh is tf.self_adjoint_eigvals
        with pytest.raises(TypeError, match="allowed values"):
            tf.qr(np.eye(2, dtype=np.int32))


def test_gradients_tf_declines_raise_at_build_time():
    """TF 1.15's _QrGrad (square and tall, full_matrices=False) and _SvdGrad's limits."""
    with tf.Graph().as_default():
        wide = tf.constant(np.ones((3, 5)))
        with pytest.raises(NotImplementedError, match="QrGrad"):
            tf.gradients(tf.qr(wide)[1], wide)
        tall = tf.constant(np.ones((5, 3)))
        with pytest.raises(NotImplementedError, match="QrGrad"):
            tf.gradients(tf.qr(tall, full_matrices=True)[1], tall)
        with pytest.raises(NotImplementedError, match="abs\\(m - n\\) > 1"):
            tf.gradients(tf.svd(tall, full_matrices=True)[0], tall)
        unknown = tf.placeholder(tf.float64, [None, 3])
        with pytest.raises(NotImplementedError, match="dynamic shapes"):
            tf.gradients(tf.qr(unknown)[1], unknown)
        with pytest.raises(NotImplementedError, match="unknown inner matrix shape"):
            tf.gradients(tf.svd(unknown)[0], unknown)


# -- table rows: unknown shapes, devices, finite differences --------------------------------

_rng = np.random.default_rng(12)
_TALL = _rng.standard_normal((2, 4, 3))
_WIDE = _rng.standard_normal((3, 5))
_SYM = _rng.standard_normal((2, 3, 3))
_SYM = _SYM + np.swapaxes(_SYM, -1, -2) + np.diag([0.0, 3.0, 6.0])


def _np_qr_sq(x):
    q, r = np.linalg.qr(x)
    return [np.abs(q), r * r]


def _np_usv(x):
    u, s, vh = np.linalg.svd(x, full_matrices=False)
    return [s, np.abs(u), np.abs(np.swapaxes(vh, -1, -2))]


def _np_eig(x):
    e, v = np.linalg.eigh(x)
    return [e, np.abs(v)]


CASES = [
    Case(
        "qr",
        lambda x: [tf.abs(t) if i == 0 else t * t for i, t in enumerate(tf.qr(x))],
        [_TALL],
        _np_qr_sq,
        [[2, 4, 3], [2, 3, 3]],
        1e-10,
        1e-12,
    ),
    Case(
        "qr_wide",
        lambda x: [tf.abs(t) if i == 0 else t * t for i, t in enumerate(tf.qr(x))],
        [_WIDE],
        _np_qr_sq,
        [[3, 3], [3, 5]],
        1e-10,
        1e-12,
    ),
    Case(
        "svd",
        lambda x: [t if i == 0 else tf.abs(t) for i, t in enumerate(tf.svd(x))],
        [_TALL],
        _np_usv,
        [[2, 3], [2, 4, 3], [2, 3, 3]],
        1e-10,
        1e-12,
    ),
    Case(
        "svd_wide_s",
        lambda x: tf.svd(x, compute_uv=False),
        [_WIDE],
        lambda x: np.linalg.svd(x, compute_uv=False),
        [3],
        1e-10,
        1e-12,
    ),
    Case(
        "eig",
        lambda x: [t if i == 0 else tf.abs(t) for i, t in enumerate(tf.self_adjoint_eig(x))],
        [_SYM],
        _np_eig,
        [[2, 3], [2, 3, 3]],
        1e-10,
        1e-12,
    ),
    Case("eigvals", tf.self_adjoint_eigvals, [_SYM], np.linalg.eigvalsh, [2, 3], 1e-10, 1e-12),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_table(case):
    check_case(case)


def _sym(x):
    """Symmetrised input: the ops read one triangle, the finite differences see both."""
    return (x + tf.matrix_transpose(x)) / 2


def _qr_loss(x):
    q, r = tf.qr(x)
    return tf.concat([tf.reshape(r * r, [-1]), tf.reshape(q * q, [-1])], 0)


def _svd_loss(full=False):
    def loss(x):
        s, u, v = tf.svd(x, full_matrices=full)
        return tf.concat([tf.reshape(s, [-1]), tf.reshape(u * u, [-1]), tf.reshape(v * v, [-1])], 0)

    return loss


def _eig_loss(x):
    e, v = tf.self_adjoint_eig(_sym(x))
    return tf.concat([tf.reshape(e, [-1]), tf.reshape(v * v, [-1])], 0)


GRAD_CASES = [
    Case("qr", _qr_loss, [_TALL], None, grad_inputs=(0,)),
    Case("svd_tall", _svd_loss(), [_TALL], None, grad_inputs=(0,)),
    Case("svd_wide", _svd_loss(), [_WIDE], None, grad_inputs=(0,)),
    Case("svd_full_off_by_one", _svd_loss(full=True), [_TALL], None, grad_inputs=(0,)),
    Case("svd_s_only", lambda x: tf.svd(x, compute_uv=False), [_WIDE], None, grad_inputs=(0,)),
    Case("eig", _eig_loss, [_SYM], None, grad_inputs=(0,)),
    Case("eigvals", lambda x: tf.self_adjoint_eigvals(_sym(x)), [_SYM], None, grad_inputs=(0,)),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=str)
def test_gradients_match_finite_differences(case):
    check_gradient(case)
