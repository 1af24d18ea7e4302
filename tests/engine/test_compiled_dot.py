"""Compiled MatMul steps call ``np.dot`` where numpy makes the very BLAS call ``np.matmul``
makes (``memplan.dot_operand``), and relus take ``maximum`` against a zero array: both keep
the interpreter's bits, on every layout, dtype and batch size, and fall back to matmul where
the routines could differ."""

from __future__ import annotations

import re

import numpy as np
import pytest

import engine as tf
from engine.runtime import memplan
from engine.runtime.compiled import _swap_buffer
from engine.runtime.memplan import c_buffers, dot_operand, plan_memory, zeros_like


class Subclass(np.ndarray):
    pass


SIZES = (0, 1, 2, 3, 7, 64, 1, 0, 5)  # batch sizes changing between calls
# Memory planning is for the CPU: tests of its decisions pin their sessions there (no GPU,
# nor the TEST devices of FLOWSERVE_TEST_DEVICE=test).
CPU_ONLY = tf.ConfigProto(device_count={"GPU": 0, "TEST": 0})


def interpreted(sess, fetches, feeds):
    fn = sess.make_callable(fetches, feeds, accept_options=True)
    opts = tf.RunOptions()
    return lambda *values: fn(*values, options=opts)


def check_same(sess, fetches, feeds, batches):
    fast, slow = sess.make_callable(fetches, feeds), interpreted(sess, fetches, feeds)
    for values in batches:
        got, want = fast(*values), slow(*values)
        if not isinstance(fetches, list):
            got, want = [got], [want]
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype and g.shape == w.shape
            assert g.tobytes() == w.tobytes()  # the bits, NaN payloads included
    return fast


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_transposed_operands_keep_the_interpreters_bits(dtype, transpose_a, transpose_b):
    rng = np.random.default_rng(4)
    k, n = 9, 6
    x = tf.placeholder(dtype, [k, None] if transpose_a else [None, k], name="x")
    w_value = rng.standard_normal((n, k) if transpose_b else (k, n)).astype(dtype)
    w = tf.Variable(w_value)
    h = tf.matmul(x, w, transpose_a=transpose_a, transpose_b=transpose_b)
    # A second product whose left operand is the first one's own buffer (after a relu)
    c = tf.constant(rng.standard_normal((n, 5)).astype(dtype))
    y = tf.matmul(tf.nn.relu(h + tf.constant(np.ones(n, dtype))), c)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        batches = []
        for m in SIZES:
            xb = rng.standard_normal((k, m) if transpose_a else (m, k)).astype(dtype)
            batches.append((xb,))
        check_same(sess, y, [x], batches)
        check_same(sess, [h, y], [x], batches)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_product_of_a_buffer_with_itself_keeps_its_bits(dtype):
    # A @ A.T and A.T @ A on one buffer: both numpy paths call syrk and copy the triangle
    rng = np.random.default_rng(5)
    x = tf.placeholder(dtype, [None, 8], name="x")
    h = tf.nn.relu(tf.matmul(x, tf.constant(rng.standard_normal((8, 8)).astype(dtype))))
    gram = tf.matmul(h, h, transpose_b=True)
    cov = tf.matmul(h, h, transpose_a=True)
    outer = tf.matmul(x, x, transpose_b=True)
    with tf.Session() as sess:
        batches = [(rng.standard_normal((m, 8)).astype(dtype),) for m in SIZES]
        check_same(sess, [gram, cov, outer], [x], batches)


def test_layouts_dot_would_treat_differently_keep_matmuls_bits():
    rng = np.random.default_rng(6)
    x = tf.placeholder(tf.float32, [None, None], name="x")
    w_np = rng.standard_normal((6, 4)).astype(np.float32)
    w = tf.Variable(w_np)
    col = tf.Variable(rng.standard_normal((6, 1)).astype(np.float32))  # n == 1
    one = tf.placeholder(tf.float32, [None, 1], name="one")
    row = tf.constant(rng.standard_normal((1, 5)).astype(np.float32))  # k == 1
    y = [tf.matmul(x, w), tf.matmul(x, col), tf.matmul(one, row)]
    xb = rng.standard_normal((7, 12)).astype(np.float32)
    buf = np.empty(7 * 6 * 4 + 1, np.uint8)[1:].view(np.float32).reshape(7, 6)  # unaligned
    buf[...] = xb[:, :6]
    assert not buf.flags.aligned
    feeds = [
        (xb[:, ::2], rng.standard_normal((3, 1)).astype(np.float32)),  # strided
        (np.asfortranarray(xb[:, :6]), np.zeros((0, 1), np.float32)),
        (buf, rng.standard_normal((1, 1)).astype(np.float32)),
        (xb[:1, :6], rng.standard_normal((4, 1)).astype(np.float32)),
    ]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        fast = check_same(sess, y, [x, one], feeds)
        # A variable holding a Fortran-ordered or strided value takes matmul too
        for value in (np.asfortranarray(w_np), np.repeat(w_np, 2, axis=1)[:, ::2]):
            sess.run(w.assign(value))
            want = interpreted(sess, y, [x, one])(*feeds[0])
            for got, ref in zip(fast(*feeds[0]), want, strict=True):
                assert got.tobytes() == ref.tobytes()


def test_dot_operand_accepts_only_what_numpy_hands_blas_alike():
    f32, f64 = np.dtype(np.float32), np.dtype(np.float64)
    a = np.ones((4, 3), np.float32)
    assert dot_operand(a, f32, right=True)
    frozen = a.copy()
    frozen.flags.writeable = False  # constants are read-only: dot reads them alike
    assert dot_operand(frozen, f32, right=True)
    assert dot_operand(np.ones((0, 3), np.float32), f32, right=False)
    assert dot_operand(np.ones((1, 3), np.float32), f32, right=False)
    assert not dot_operand(np.ones((1, 3), np.float32), f32, right=True)  # k == 1
    assert not dot_operand(np.ones((3, 1), np.float32), f32, right=True)  # n == 1
    assert not dot_operand(a, f64, right=False)
    assert not dot_operand(np.asfortranarray(a), f32, right=False)
    assert not dot_operand(a[:, ::2], f32, right=False)
    assert not dot_operand(np.ones(3, np.float32), f32, right=False)
    assert not dot_operand(a.view(Subclass), f32, right=False)
    assert not dot_operand(a.astype(">f4"), f32, right=False)
    unaligned = np.empty(4 * 3 * 4 + 1, np.uint8)[1:].view(np.float32).reshape(4, 3)
    assert not dot_operand(unaligned, f32, right=False)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dot_and_matmul_agree_bitwise_where_dot_operand_allows(dtype):
    # The premise itself, on this numpy and BLAS: every allowed layout, with and without out=
    rng = np.random.default_rng(7)
    for m, k, n in [(0, 5, 3), (1, 5, 3), (2, 2, 2), (3, 7, 5), (64, 784, 256), (33, 129, 17)]:
        for ta in (False, True):
            for tb in (False, True):
                a0 = rng.standard_normal((k, m) if ta else (m, k)).astype(dtype)
                b0 = rng.standard_normal((n, k) if tb else (k, n)).astype(dtype)
                assert dot_operand(a0, np.dtype(dtype), False)
                assert dot_operand(b0, np.dtype(dtype), True)
                a, b = (a0.T if ta else a0), (b0.T if tb else b0)
                want = np.matmul(a, b)
                out = np.empty((m, n), dtype)
                assert np.dot(a, b, out) is out
                assert want.tobytes() == np.dot(a, b).tobytes() == out.tobytes()


def test_c_buffers_are_the_matmul_chains():
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    h = tf.nn.relu(tf.matmul(x, tf.constant(np.ones((4, 4), np.float32))) + 1.0)
    y = tf.matmul(h, tf.constant(np.ones((4, 2), np.float32))) * x[:, :2]
    with tf.Session(config=CPU_ONLY) as sess:
        plan = sess._plan_for((x,), (y,))
        own = c_buffers(plan.steps, plan_memory(plan.steps, plan.fetch_slots))
        made_by = {s[2]: s[5]._type for s in plan.steps if s[5] is not None}
        assert sorted(made_by[s] for s in own) == ["AddV2", "MatMul", "MatMul", "Relu"]
        assert plan.feed_slots[0] not in own


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_against_zeros_keeps_nans_signed_zeros_and_infinities(dtype):
    special = np.array([np.nan, -np.nan, -0.0, 0.0, np.inf, -np.inf, 1e-45, -1e-45], dtype)
    nan_payload = np.array([0x7FC00123], np.uint32).view(np.float32).astype(dtype)
    x = tf.placeholder(dtype, [None, None], name="x")
    y = tf.nn.relu(tf.matmul(x, tf.constant(np.eye(3, dtype=dtype))) + x)
    rng = np.random.default_rng(8)
    with tf.Session() as sess:
        batches = []
        for m in (1, 64, 700, 0, 64):
            xb = rng.standard_normal((m, 3)).astype(dtype)
            flat = xb.reshape(-1)
            flat[: min(len(flat), 9)] = np.concatenate([special, nan_payload])[: len(flat)]
            batches.append((xb,))
        check_same(sess, y, [x], batches)
    zeros = zeros_like(np.dtype(dtype))
    big = rng.standard_normal(memplan.ZEROS_MAX + 1).astype(dtype)
    small = rng.standard_normal((5, 3)).astype(dtype)
    assert zeros(big).shape == () and zeros(small).shape == (5, 3)
    assert zeros(small) is zeros(small) and not zeros(small).flags.writeable
    for v in (big, small, np.concatenate([special, nan_payload])):
        assert np.maximum(v, zeros(v)).tobytes() == np.maximum(v, 0).tobytes()


def test_identity_steps_pass_their_input_on_without_a_call():
    # SavedModels end in Identity ops: the compiled code assigns, the interpreter calls the
    # kernel (``return x``); results, aliasing and a ref input (a variable) stay the same.
    rng = np.random.default_rng(9)
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    w = tf.Variable(rng.standard_normal((4, 3)).astype(np.float32))
    h = tf.identity(tf.nn.relu(tf.matmul(x, w)), name="hidden")
    y = tf.identity(tf.nn.softmax(tf.matmul(h, tf.constant(np.eye(3, dtype=np.float32)))))
    echo = tf.identity(x)
    with tf.Session(config=CPU_ONLY) as sess:
        sess.run(tf.global_variables_initializer())
        fast = sess.make_callable([y, echo, tf.identity(w)], [x])
        slow = interpreted(sess, [y, echo, tf.identity(w)], [x])
        # four Identity steps (echo's, w's and the two in the chain), each an assignment
        assert len(re.findall(r"^ +v\d+ = v\d+$", fast.plan_source, re.M)) == 4
        for m in (1, 5, 0):
            xb = rng.standard_normal((m, 4)).astype(np.float32)
            got, want = fast(xb), slow(xb)
            for g, v in zip(got, want, strict=True):
                assert g.tobytes() == v.tobytes() and g.dtype == v.dtype
            assert (got[1] is xb) == (want[1] is xb)
            sess.run(w.assign(w + 1.0))  # the identity of a variable reads it per call
            np.testing.assert_array_equal(fast(xb)[2], sess.run(w))


def test_alternating_batch_sizes_reuse_their_own_buffers(monkeypatch):
    rng = np.random.default_rng(10)
    x = tf.placeholder(tf.float32, [None, 6], name="x")
    h = x
    for n_in, n_out in ((6, 8), (8, 5), (5, 3)):
        h = tf.nn.relu(tf.matmul(h, tf.constant(rng.standard_normal((n_in, n_out)), tf.float32)))
    outs = []
    real_dot = np.dot

    def dot(a, b, out=None):  # the compiled code binds np.dot when it is compiled
        outs.append(out)
        return real_dot(a, b, out)

    with tf.Session(config=CPU_ONLY) as sess:
        xs = [rng.standard_normal((m, 6)).astype(np.float32) for m in (1, 4, 0, 9)]
        monkeypatch.setattr(np, "dot", dot)
        fast = sess.make_callable(h, [x])
        for xb in xs:  # compiles; each size makes its buffers once
            fast(xb)
        monkeypatch.undo()
        slow = interpreted(sess, h, [x])
        outs.clear()
        for _ in range(3):
            for xb in xs:
                assert fast(xb).tobytes() == slow(xb).tobytes()
        # two products write kept buffers (the last one's value is fetched: fresh)
        kept = [o for o in outs if o is not None]
        assert len(outs) == 3 * 3 * len(xs) and len(kept) == 2 * 3 * len(xs)
        assert len({id(o) for o in kept}) == 2 * len(xs)  # one per product and size


def test_swap_buffer_keeps_one_buffer_per_row_count():
    one, four = np.zeros((1, 3)), np.zeros((4, 3))
    arena = [one, {}]
    assert _swap_buffer(arena, 0, 4) is None and arena[1] == {1: one}
    arena[0] = four
    assert _swap_buffer(arena, 0, 1) is one and arena[1] == {4: four}
    for rows in range(20):  # many sizes: at most 8 kept
        arena[0] = np.zeros((rows, 3))
        _swap_buffer(arena, 0, -1)
        assert len(arena[1]) <= 8
