"""map_fn, scan, foldl and foldr against TensorFlow: values and gradients recorded by
``fixtures/make_functional_fixtures.py`` from the same graphs (``build``, run by
``evaluate``); then graph size, static shapes and TF's errors."""

import numpy as np
import pytest

import engine as tf
from engine import errors
from tests.engine.fixtures.make_functional_fixtures import INTS, A, V, W, evaluate
from tests.engine.fixtures.oracle import load

TF = load("functional_tf.npz")
RECORDED = sorted(k for k in TF.files if k != "tf_version")


@pytest.fixture(scope="module")
def ours():
    return evaluate(tf)


def test_the_fixture_records_its_tensorflow_version():
    assert str(TF["tf_version"]).count(".") == 2


def test_every_recorded_value_is_computed_and_nothing_else(ours):
    assert sorted(ours) == RECORDED
    assert len(RECORDED) >= 50


@pytest.mark.parametrize("key", RECORDED)
def test_functional_ops_match_tensorflow(ours, key):
    expected = TF[key]
    got = np.asarray(ours[key])
    assert got.dtype == expected.dtype and got.shape == expected.shape, key
    np.testing.assert_allclose(got, expected, rtol=2e-6, atol=1e-7)


def test_the_recorded_cases_show_what_they_claim():
    """Sanity of the recorded values themselves, against numpy."""
    np.testing.assert_allclose(TF["scan_cumsum"], np.cumsum(V), rtol=1e-6)
    np.testing.assert_allclose(TF["scan_cumprod_init"], 2.0 * np.cumprod(V), rtol=1e-5)
    np.testing.assert_allclose(TF["scan_reverse"], np.cumsum(V[::-1])[::-1], rtol=1e-6)
    left = right = 0
    for x in INTS[1:]:
        left = (left or INTS[0]) * 2 + x
    for x in INTS[::-1][1:]:
        right = (right or INTS[-1]) * 2 + x
    assert TF["foldl_order"] == left and TF["foldr_order"] == right and left != right
    np.testing.assert_allclose(TF["grad_map_elems"], 2 * A * W, rtol=1e-6)
    np.testing.assert_allclose(TF["grad_map_w"], np.sum(A * A), rtol=1e-5)
    assert TF["map_empty"].shape == (0, 3) and TF["fed_rows0_0"].shape == (0,)
    assert TF["fed_rows0_1"].shape == (0, 3) and TF["fed_rows3_1"].shape == (3, 3)
    assert TF["map_int_to_float"].dtype == np.float32


def _functional_graph(n: int) -> tuple[tf.Graph, list]:
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(np.arange(n * 2, dtype=np.float32).reshape(n, 2))
        w = tf.Variable(2.0)
        mapped = tf.map_fn(lambda r: r * w, x)
        scanned = tf.scan(lambda a, r: a + r, x)
        folded = tf.foldr(lambda a, r: a * 0.5 + r, x)
        grads = tf.gradients(tf.reduce_sum(mapped) + tf.reduce_sum(scanned), [x, w])
        fetches = [mapped, scanned, folded, *grads]
    return g, fetches


def test_the_graph_does_not_grow_with_the_number_of_elements():
    sizes = {}
    for n in (2, 40):
        g, fetches = _functional_graph(n)
        sizes[n] = len(g.get_operations())
        with tf.Session(graph=g) as sess:
            sess.run(tf.variables_initializer(g.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)))
            mapped, scanned, folded, dx, dw = sess.run(fetches)
        x = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
        np.testing.assert_allclose(mapped, x * 2.0)
        np.testing.assert_allclose(scanned, np.cumsum(x, axis=0))
        np.testing.assert_allclose(dx, 2.0 + np.arange(n, 0, -1)[:, None] * np.ones((1, 2)))
        np.testing.assert_allclose(dw, x.sum())
        assert folded.shape == (2,)
    assert sizes[2] == sizes[40]


def test_static_shapes_follow_tensorflow():
    with tf.Graph().as_default():
        rows = tf.placeholder(tf.float32, [None, 3])
        assert tf.map_fn(tf.reduce_sum, rows).shape.as_list() == [None]
        both = tf.map_fn(lambda p: p[0] * 2, (tf.constant(A), rows), dtype=tf.float32)
        assert both.shape.as_list() == [4, 3]
        assert tf.scan(lambda a, r: a + r, tf.constant(A)).shape.as_list() == [4, 3]
        assert tf.foldl(lambda a, r: a + r, tf.constant(A)).shape.as_list() == [3]


def test_fn_output_not_matching_dtype_is_a_clear_error():
    with tf.Graph().as_default():
        x = tf.constant(A)
        with pytest.raises(ValueError, match="map_fn: fn's output does not match dtype"):
            tf.map_fn(lambda r: (r, r), x, dtype=(tf.float32,) * 3)
        with pytest.raises(ValueError, match="does not match dtype"):
            tf.map_fn(lambda r: (r, r), x)
        with pytest.raises(TypeError, match="same sequence type"):
            tf.map_fn(lambda r: [r, r], x, dtype=(tf.float32, tf.float32))
        with pytest.raises(TypeError, match="output 0 has dtype int32, but dtype says float32"):
            tf.map_fn(lambda r: tf.cast(r, tf.int32), x)
        with pytest.raises(ValueError, match="scan: fn's output does not match"):
            tf.scan(lambda a, r: (a, a), x)


def test_bad_arguments_are_clear_errors():
    with tf.Graph().as_default():
        x = tf.constant(A)
        with pytest.raises(ValueError, match="1\\+ dimensional Tensor, not a scalar"):
            tf.map_fn(lambda r: r, tf.constant(1.0))
        with pytest.raises(ValueError, match="same leading dimension"):
            tf.map_fn(lambda p: p[0], (x, tf.ones([5, 3])), dtype=tf.float32)
        with pytest.raises(ValueError, match="does not contain any Tensors|nested structure"):
            tf.map_fn(lambda p: p, ())
        for fn in (tf.map_fn, tf.scan, tf.foldl, tf.foldr):
            with pytest.raises(TypeError, match="fn must be callable"):
                fn(3, x)


def test_empty_elems_need_an_initializer_as_in_tensorflow():
    with tf.Graph().as_default():
        empty = tf.constant(np.zeros((0,), np.float32))
        add = lambda a, x: a + x  # noqa: E731
        failing = [tf.foldl(add, empty), tf.foldr(add, empty), tf.scan(add, empty)]
        ok = [
            tf.foldl(add, empty, initializer=3.0),
            tf.foldr(add, empty, initializer=4.0),
            tf.scan(add, empty, initializer=5.0),
            tf.map_fn(lambda x: x * 2.0, empty),
        ]
        with tf.Session() as sess:
            for t in failing:
                with pytest.raises(errors.InvalidArgumentError, match="index"):
                    sess.run(t)
            left, right, scanned, mapped = sess.run(ok)
    assert left == 3.0 and right == 4.0
    assert scanned.shape == (0,) and mapped.shape == (0,)


def test_fn_is_traced_once_whatever_the_length():
    calls = []

    def fn(x):
        calls.append(x)
        return x + 1.0

    with tf.Graph().as_default():
        rows = tf.placeholder(tf.float32, [None])
        out = tf.map_fn(fn, rows)
        with tf.Session() as sess:
            for n in (0, 1, 7):
                np.testing.assert_allclose(sess.run(out, {rows: np.arange(n)}), np.arange(n) + 1)
    assert len(calls) == 1
