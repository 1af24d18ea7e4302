"""Large products split across the intra-op threads (``engine.ops.split_product``): the same
bits as numpy's whole product, in the kernel, compiled plans and convolutions; a helper that
is busy is never waited for; errors reach the caller; a shape whose bits differ (decided by a
helper on random operands, while the shape's products run whole) is not split."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import engine as tf
from engine.ops import split_product as sp

CPU_ONLY = tf.ConfigProto(device_count={"GPU": 0, "TEST": 0})


@pytest.fixture
def threads():
    """Sets the intra-op threads for one test and restores one thread (and a fresh bits
    cache) after it."""
    sp._checked.clear()

    def set_(n):
        sp.set_threads(n)

    yield set_
    sp._wait_checks(60)
    sp.set_threads(1)
    sp._checked.clear()
    sp._probes.clear()


def _checked(a, b, out=None):
    """The first product of a shape: not split (numpy's, by the caller) while a helper
    compares the split's bits, unless the helper was done first; waits for that comparison."""
    got = sp.product(a, b, out)
    assert got is None or got.tobytes() == np.matmul(a, b).tobytes()
    sp._wait_checks(60)


def _operands(m, k, n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)


@pytest.mark.usefixtures("threads")
def test_one_thread_splits_nothing():
    a, b = _operands(64, 1024, 1024, np.float32)
    assert sp.threads() == 1
    assert sp.product(a, b) is None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    ("m", "k", "n"),
    [(64, 784, 2048), (32, 2048, 2048), (4, 2048, 2100), (16, 1024, 1033), (4096, 512, 64)],
)
@pytest.mark.parametrize("n_threads", [2, 3])
def test_split_products_have_the_bits_of_the_whole_product(threads, dtype, m, k, n, n_threads):
    threads(n_threads)
    a, b = _operands(m, k, n, dtype, seed=m + k + n)
    want = np.matmul(a, b)
    _checked(a, b)
    (same,) = sp._checked.values()
    if not same:  # this BLAS gives the blocks other bits: the shape is never split
        assert sp.product(a, b) is None
        return
    for _ in range(3):
        got = sp.product(a, b)
        assert got.dtype == dtype and got.shape == (m, n)
        assert got.tobytes() == want.tobytes()
    out = np.full((m, n), np.nan, dtype)
    assert sp.product(a, b, out) is out and out.tobytes() == want.tobytes()


def test_what_is_not_split(threads):
    threads(2)
    a, b = _operands(64, 1024, 1024, np.float32)
    assert sp.product(a[:3], b) is None  # too few rows
    assert sp.product(a[:, :16], b[:16, :16]) is None  # too little work
    assert sp.product(a.astype(np.int64), b.astype(np.int64)) is None  # not BLAS floats
    assert sp.product(a, b.astype(np.float64)) is None  # mixed dtypes
    assert sp.product(a[:, :1000], b) is None  # inner dimensions differ: numpy's error
    assert sp.product(a, b, np.empty((64, 1000), np.float32)) is None  # out of another shape
    assert sp.product(a[0], b) is None  # a vector
    assert sp.product(a[None], b) is None  # a stack of one product: nothing to share
    stack = np.ones((3, 64, 1024), np.float32)
    assert sp.product(stack, np.ones((2, 1024, 64), np.float32)) is None  # batches differ
    assert not sp._checked


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    ("sa", "sb"),
    [
        ((8, 64, 128), (8, 128, 256)),  # attention-like stacks
        ((8, 64, 128), (128, 256)),  # one matrix for every product of the stack
        ((1, 64, 128), (6, 128, 512)),  # a broadcast along the batch axis
        ((4, 2, 64, 192), (2, 192, 256)),  # two batch axes, the first only in a
        ((5, 300, 200), (5, 200, 70)),  # odd sizes
    ],
)
def test_stacked_products_have_the_bits_of_the_whole_product(threads, dtype, sa, sb):
    threads(3)
    rng = np.random.default_rng(len(sa) + sa[-1])
    a = rng.standard_normal(sa).astype(dtype)
    b = rng.standard_normal(sb).astype(dtype)
    want = np.matmul(a, b)
    _checked(a, b)
    (same,) = sp._checked.values()
    assert same  # numpy computes a stack one product at a time: each block is the same
    for _ in range(2):
        got = sp.product(a, b)
        assert got.shape == want.shape and got.tobytes() == want.tobytes()
    transposed = np.swapaxes(a, -1, -2).copy()  # a strided operand (adj_x's swapaxes)
    view = np.swapaxes(transposed, -1, -2)
    _checked(view, b)  # another layout: compared in its turn
    assert sp.product(view, b).tobytes() == want.tobytes()
    assert len(sp._checked) == 2 and all(sp._checked.values())


def _wrong_blocks(monkeypatch):
    """Makes every split wrong: each block multiplies by twice its ``b``."""
    real = sp._parts
    monkeypatch.setattr(sp, "_parts", lambda *args: [(x, y * 2, o) for x, y, o in real(*args)])


def test_the_bits_are_compared_on_random_operands_not_the_callers(threads, monkeypatch):
    """A first product of zeros (a warmup's) agrees whatever the order of the sums: the
    comparison must not be made on it. Here a split that is wrong for any nonzero value."""
    threads(2)
    _wrong_blocks(monkeypatch)
    zeros_a, zeros_b = np.zeros((64, 1024), np.float32), np.zeros((1024, 1024), np.float32)
    _checked(zeros_a, zeros_b)
    assert list(sp._checked.values()) == [False]
    assert sp.product(zeros_a, zeros_b) is None
    a, b = _operands(64, 1024, 1024, np.float32)
    assert sp.product(a, b) is None  # never split: numpy's own product


def test_blocks_are_never_slivers():
    for shape, parts in [((64, 321), 5), ((64, 1025), 8), ((4, 130), 2), ((1000, 9), 3)]:
        axis, blocks = sp._blocks(shape, parts)
        least = sp.MIN_COLUMNS if axis == 1 else sp.MIN_BLOCK_ROWS
        assert blocks[0][0] == 0 and blocks[-1][1] == shape[axis]
        assert all(lo < hi for lo, hi in blocks)
        assert all(b[1] == c[0] for b, c in zip(blocks, blocks[1:]))
        assert all(hi - lo >= least for lo, hi in blocks), (shape, parts, blocks)


def test_what_is_not_split_however_large(threads):
    threads(2)
    a, b = _operands(64, 1024, 1024, np.float32)
    assert sp.product(a, b, out=a) is None  # out is an operand: numpy handles the overlap
    assert not sp._checked
    wide = np.empty((64, 2048), np.float32)
    _checked(a, b, wide[:, :1024])
    assert sp.product(a, b, out=wide[:, :1024]) is not None  # a disjoint out is fine
    assert wide[:, :1024].tobytes() == np.matmul(a, b).tobytes()
    stepped = np.repeat(b, 2, axis=1)[:, ::2]  # sliced with a step: not a dense layout
    _checked(a, stepped)
    assert sp.product(a, stepped) is None
    assert list(sp._checked.values()) == [True, False]


def test_a_shape_whose_bits_differ_is_never_split(threads, monkeypatch):
    threads(2)
    _wrong_blocks(monkeypatch)
    calls = []
    monkeypatch.setattr(sp, "_run", lambda *args: calls.append(args))
    a, b = _operands(64, 1024, 1024, np.float32)
    _checked(a, b)
    assert list(sp._checked.values()) == [False]
    for _ in range(3):
        assert sp.product(a, b) is None
    assert not calls


def test_a_check_never_holds_up_a_product(threads, monkeypatch):
    """The comparison runs on a helper: the caller's first product of a shape returns at
    once (None: the caller computes it whole), however long the comparison takes."""
    threads(2)
    release = threading.Event()
    real = sp._check

    def slow_check(*args):
        release.wait(30)
        real(*args)

    monkeypatch.setattr(sp, "_check", slow_check)
    a, b = _operands(64, 1024, 1024, np.float32)
    assert sp.product(a, b) is None
    assert list(sp._checked.values()) == [None]  # decided later
    assert sp.product(a, b) is None  # still whole meanwhile; no second check
    assert len(sp._checks) == 1
    release.set()
    sp._wait_checks(60)
    assert list(sp._checked.values()) == [True]
    assert sp.product(a, b).tobytes() == np.matmul(a, b).tobytes()


def test_a_busy_helper_is_not_waited_for(threads):
    threads(2)
    a, b = _operands(64, 1024, 1024, np.float32)
    _checked(a, b)  # the bits compared; the pool made
    release = threading.Event()
    started = threading.Event()

    def hold():
        started.set()
        release.wait(30)

    sp._pool().submit(hold)  # the only helper is busy until released
    assert started.wait(10)
    done = []
    caller = threading.Thread(target=lambda: done.append(sp.product(a, b)))
    caller.start()
    caller.join(10)
    finished = not caller.is_alive()
    release.set()
    caller.join(10)
    assert finished, "the product waited for a helper that was busy"
    assert done[0].tobytes() == np.matmul(a, b).tobytes()


def test_an_error_in_a_block_reaches_the_caller(threads):
    threads(2)
    a, b = _operands(64, 1024, 1024, np.float32)
    out = np.empty((64, 1024), np.float32)
    _checked(a, b, out)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        sp.product(a, b, out)


@pytest.mark.parametrize("bad", [0, -1, 5000, 2.0, True, "2"])
def test_set_threads_refuses_what_is_not_a_thread_count(bad):
    with pytest.raises(ValueError, match="intra-op threads must be an integer from 1 to 4096"):
        sp.set_threads(bad)
    assert sp.threads() == 1


def test_a_forked_process_makes_its_own_helpers(threads, monkeypatch):
    threads(2)
    first = sp._pool()
    assert sp._pool() is first
    monkeypatch.setattr(sp._state, "pid", -1)  # as a child of fork sees its parent's pool
    assert sp._pool() is not first


def _mlp(rng):
    x = tf.placeholder(tf.float32, [None, 784], name="x")
    h = x
    for i, n in enumerate([1024, 512, 10]):
        w = tf.Variable(rng.standard_normal((h.shape[1].value, n)).astype(np.float32) * 0.05)
        h = tf.nn.bias_add(tf.matmul(h, w), tf.constant(np.full(n, 0.1, np.float32)))
        if i < 2:
            h = tf.nn.relu(h)
    return x, tf.nn.softmax(h)


def _conv(rng):
    x = tf.placeholder(tf.float32, [None, 32, 32, 16], name="img")
    f = tf.constant(rng.standard_normal((3, 3, 16, 32)).astype(np.float32))
    return x, tf.nn.relu(tf.nn.conv2d(x, f, [1, 1, 1, 1], "SAME"))


def _attention(rng):
    q = tf.placeholder(tf.float32, [None, 256, 64], name="q")
    k = tf.constant(rng.standard_normal((8, 256, 64)).astype(np.float32))
    scores = tf.nn.softmax(tf.matmul(q, k, transpose_b=True))  # BatchMatMulV2, adj_y
    return q, tf.matmul(scores, k)


@pytest.mark.parametrize(
    ("build", "shape"),
    [(_mlp, (64, 784)), (_conv, (8, 32, 32, 16)), (_attention, (8, 256, 64))],
)
def test_sessions_give_the_same_bits_with_split_products(threads, build, shape):
    """A dense stack (compiled recipes, the kernel for ``Session.run``), a convolution (its
    patches' product split by rows) and stacked products (BatchMatMulV2, split along the
    batch): the bits with one thread and with two."""
    rng = np.random.default_rng(5)
    with tf.Graph().as_default():
        x, y = build(rng)
        feed = rng.standard_normal(shape).astype(np.float32)
        with tf.Session(config=CPU_ONLY) as sess:
            sess.run(tf.global_variables_initializer())
            fn = sess.make_callable(y, feed_list=[x])
            want = fn(feed)
            assert sess.run(y, {x: feed}).tobytes() == want.tobytes()
            threads(2)
            for _ in range(2):  # the first product of each shape is checked, then split
                assert fn(feed).tobytes() == want.tobytes()
                assert sess.run(y, {x: feed}).tobytes() == want.tobytes()
                sp._wait_checks(60)
    assert sp._checked and all(sp._checked.values())
