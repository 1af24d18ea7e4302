"""TensorList ops (TF2's functional lists, as Keras RNN loops use them): values, the
elements never set, and typed errors. Checked end to end by the Keras LSTM fixture in
tests/engine/formats/test_tf_saved_model.py."""

import numpy as np
import pytest

import engine as tf
from engine import errors
from engine.ops._common import create


def _list_ops(shape=(2,), n=3, dtype=tf.float32):
    reserve = create(
        "TensorListReserve",
        [tf.constant(list(shape), tf.int32), tf.constant(n, tf.int32)],
        {"element_dtype": dtype},
    ).outputs[0]
    return reserve


def _set(lst, i, item):
    item = tf.convert_to_tensor(item)
    return create(
        "TensorListSetItem",
        [lst, tf.constant(i), item],
        {"element_dtype": item.dtype.base_dtype},
    ).outputs[0]


def _get(lst, i, shape=(-1,), dtype=tf.float32):
    return create(
        "TensorListGetItem",
        [lst, tf.constant(i), tf.constant(list(shape), tf.int32)],
        {"element_dtype": dtype},
    ).outputs[0]


def _stack(lst, shape=(2,), dtype=tf.float32, n=-1):
    return create(
        "TensorListStack",
        [lst, tf.constant(list(shape), tf.int32)],
        {"element_dtype": dtype, "num_elements": n},
    ).outputs[0]


def round_trip_builder():
    """Every TensorList op, for test_graph_def's round-trip table."""
    lst = _list_ops()
    lst2 = _set(lst, 1, np.array([1.5, 2.5], np.float32))
    from_t = create(
        "TensorListFromTensor",
        [tf.constant(np.arange(6, dtype=np.float32).reshape(3, 2)), tf.constant([2])],
        {"element_dtype": tf.float32},
    ).outputs[0]
    return [_stack(lst2, n=3), _get(from_t, 2), _get(lst2, 0)], {}, []


def test_set_get_stack_values_and_unset_elements_read_as_zeros():
    with tf.Graph().as_default():
        fetches, _, _ = round_trip_builder()
        stacked, got, unset = fetches
        assert stacked.shape.as_list() == [3, 2] and got.shape.as_list() == [None]
        with tf.Session() as sess:
            s, g, u = sess.run([stacked, got, unset])
    np.testing.assert_array_equal(s, [[0, 0], [1.5, 2.5], [0, 0]])
    np.testing.assert_array_equal(g, [4.0, 5.0])
    np.testing.assert_array_equal(u, [0.0, 0.0])


def test_lists_are_values_a_set_never_changes_an_earlier_list():
    with tf.Graph().as_default(), tf.Session() as sess:
        lst = _list_ops(n=1)
        a = _set(lst, 0, np.array([1.0, 2.0], np.float32))
        b = _set(a, 0, np.array([3.0, 4.0], np.float32))
        got_a, got_b = sess.run([_stack(a), _stack(b)])
    np.testing.assert_array_equal(got_a, [[1.0, 2.0]])
    np.testing.assert_array_equal(got_b, [[3.0, 4.0]])


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: _get(_list_ops(), 3), "index 3 out of range for a list of 3"),
        (lambda: _set(_list_ops(), -1, np.zeros(2, np.float32)), "index -1 out of range"),
        (lambda: _set(_list_ops(), 0, np.zeros(3, np.float32)), "incompatible"),
        (lambda: _get(_list_ops(shape=(-1,)), 0), "never set and its shape"),
        (lambda: _stack(_list_ops(), n=5), "has 3 elements, expected 5"),
        (lambda: _list_ops(n=-2), "num_elements -2"),
    ],
)
def test_bad_uses_are_invalid_argument_errors(build, message):
    with tf.Graph().as_default(), tf.Session() as sess:
        out = build()
        with pytest.raises(errors.InvalidArgumentError, match=message):
            sess.run(out)


def test_item_dtype_must_match_at_build_time():
    with tf.Graph().as_default():
        lst = _list_ops()
        with pytest.raises(TypeError, match="the list holds float32"):
            create(
                "TensorListSetItem",
                [lst, tf.constant(0), tf.constant([1, 2])],
                {"element_dtype": tf.float32},
            )


def test_a_list_of_strings_from_a_tensor():
    """map_fn over a batch of image bytes (TF 2's export) starts with TensorListFromTensor of
    a string vector: each element a scalar string."""
    words = tf.constant(np.array([b"a", b"bc", b""], dtype=object))
    lst = create(
        "TensorListFromTensor", [words, tf.constant([], tf.int32)], {"element_dtype": tf.string}
    ).outputs[0]
    with tf.Session() as sess:
        one, every = sess.run([_get(lst, 1, (), tf.string), _stack(lst, (), tf.string)])
    assert one == b"bc" and every.tolist() == [b"a", b"bc", b""]
