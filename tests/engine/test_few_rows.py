"""Products of 2 or 3 rows are one gemv per row (``engine.ops.few_rows``): every row of such a
product has exactly the bits of that row multiplied alone, in the kernel and in compiled
plans; every other product keeps numpy's bits."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tf
from engine.ops.few_rows import few_rows, rows_product

CPU_ONLY = tf.ConfigProto(device_count={"GPU": 0, "TEST": 0})
SHAPES = [(784, 2048), (256, 128), (513, 77), (128, 10), (16, 8), (64, 1), (1, 32)]


def _alone(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Each row of ``a`` multiplied on its own (a fresh 1-row array, as a lone request)."""
    return np.concatenate([np.matmul(a[i].copy()[None, :], b) for i in range(a.shape[0])])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("k", "n"), SHAPES)
@pytest.mark.parametrize("rows", [2, 3])
def test_each_row_has_the_bits_of_the_row_alone(dtype, k, n, rows):
    rng = np.random.default_rng(k * n + rows)
    b = rng.standard_normal((k, n)).astype(dtype)
    for offset in range(3):  # rows starting at differently aligned addresses
        flat = rng.standard_normal(rows * k + offset).astype(dtype)
        a = flat[offset:].reshape(rows, k)
        assert few_rows(a, b)
        got = rows_product(a, b)
        assert got.shape == (rows, n) and got.dtype == dtype
        assert got.tobytes() == _alone(a, b).tobytes()


def test_few_rows_takes_only_what_it_should():
    b = np.ones((256, 128), np.float32)
    a = np.ones((2, 256), np.float32)
    assert few_rows(a, b) and few_rows(a[:, :].copy(), b)
    assert not few_rows(np.ones((1, 256), np.float32), b)  # one row: numpy's gemv already
    assert not few_rows(np.ones((4, 256), np.float32), b)  # four: gemm is fast there
    assert not few_rows(a.astype(np.float64), b)  # mixed dtypes
    assert not few_rows(a.astype(np.int32), b.astype(np.int32))  # not BLAS
    assert not few_rows(a, np.ones((255, 128), np.float32))  # inner dimensions differ
    assert not few_rows(np.ones((2, 3, 256), np.float32), b)  # not a matrix
    assert few_rows(a, np.ones((128, 256), np.float32).T)  # any layout of b
    assert few_rows(np.ones((3, 4), np.float64), np.ones((4, 2)))  # any size


def test_any_layout_of_a_gets_the_rows_alone():
    """Transposed, strided or unaligned (a buffer read from a file): the rows are copied
    as a lone request's rows are laid out, so the bits never depend on the address."""
    rng = np.random.default_rng(2)
    want = rng.standard_normal((3, 40)).astype(np.float32)
    b = rng.standard_normal((40, 24)).astype(np.float32)
    raw = np.zeros(3 * 40 * 4 + 1, np.uint8)
    unaligned = raw[1:].view(np.float32).reshape(3, 40)
    unaligned[:] = want
    assert not unaligned.flags.aligned
    strided = np.zeros((3, 80), np.float32)[:, ::2]
    strided[:] = want
    for a in (want.T.copy().T, strided, unaligned, want):
        assert few_rows(a, b)
        assert rows_product(a, b).tobytes() == _alone(want, b).tobytes()


def test_rows_product_writes_into_out_unless_it_cannot():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 256)).astype(np.float32)
    b = rng.standard_normal((256, 128)).astype(np.float32)
    out = np.empty((3, 128), np.float32)
    assert rows_product(a, b, out) is out
    assert out.tobytes() == _alone(a, b).tobytes()
    for wrong in (np.empty((2, 128), np.float32), np.empty((3, 128)), np.empty((128, 3)).T):
        got = rows_product(a, b, wrong)
        assert got is not wrong and got.tobytes() == _alone(a, b).tobytes()
    # An out= sharing memory with an operand would overwrite rows still to be read
    shared = np.zeros((3, 256), np.float32)
    shared[:] = a
    got = rows_product(shared, b, shared[:, :128])
    assert got.base is None and got.tobytes() == _alone(a, b).tobytes()


def _mlp(dtype, constant_weights: bool):
    """A 256-128-10 dense stack, as the served MLPs are."""
    rng = np.random.default_rng(7)
    x = tf.placeholder(dtype, [None, 256], name="x")
    h = x
    for units in (128, 10):
        value = rng.standard_normal((h.shape[1].value, units)).astype(dtype) / 16
        w = tf.constant(value) if constant_weights else tf.Variable(value)
        h = tf.nn.relu(tf.matmul(h, w) + tf.constant(np.full(units, 0.1, dtype)))
    return x, h


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("constant_weights", [False, True])
def test_a_merged_batch_of_few_rows_equals_its_rows_run_alone(dtype, constant_weights):
    x, y = _mlp(dtype, constant_weights)
    rng = np.random.default_rng(3)
    batch = rng.standard_normal((3, 256)).astype(dtype)
    with tf.Session(config=CPU_ONLY) as sess:
        sess.run(tf.global_variables_initializer())
        compiled = sess.make_callable(y, [x])
        slow = sess.make_callable(y, [x], accept_options=True)
        opts = tf.RunOptions()
        for rows in (2, 3, 1, 2, 3):  # the arena's buffers for each batch size come and go
            part = batch[:rows]
            alone = np.concatenate([compiled(part[i : i + 1].copy()) for i in range(rows)])
            for run in (compiled(part), slow(part, options=opts)):
                assert run.tobytes() == alone.tobytes()


def test_other_batch_sizes_keep_numpys_bits():
    rng = np.random.default_rng(5)
    w_value = rng.standard_normal((256, 128)).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 256])
    y = tf.matmul(x, tf.Variable(w_value))
    with tf.Session(config=CPU_ONLY) as sess:
        sess.run(tf.global_variables_initializer())
        fn = sess.make_callable(y, [x])
        for rows in (1, 4, 7, 64):
            a = rng.standard_normal((rows, 256)).astype(np.float32)
            assert fn(a).tobytes() == np.matmul(a, w_value).tobytes()
        a = rng.standard_normal((2, 256)).astype(np.float32)
        assert fn(a).tobytes() == _alone(a, w_value).tobytes()
