"""``tf.case`` against TensorFlow's recordings (``fixtures/make_case_fixtures.py``) and its
run-time checks."""

import os

import numpy as np
import pytest

import engine as tf
from engine import errors
from tests.engine.fixtures.make_case_fixtures import FEEDS, build

TF = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "case_tf.npz"), allow_pickle=False)


def test_case_matches_tensorflow():
    g = tf.Graph()
    with g.as_default():
        x, fetch = build(tf)
        with tf.Session(graph=g) as sess:
            rows = [sess.run(fetch, {x: v}) for v in FEEDS]
    assert TF["feeds"].tolist() == FEEDS
    for key in fetch:
        got = np.array([r[key] for r in rows])
        assert got.dtype == TF[key].dtype, key
        np.testing.assert_array_equal(got, TF[key], err_msg=key)


def test_without_a_default_no_true_predicate_fails_the_run():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.int32, [])
        y = tf.case([(x < 0, lambda: tf.constant(-1)), (x > 10, lambda: tf.constant(5))])
        with tf.Session() as sess:
            assert sess.run(y, {x: 20}) == 5 and sess.run(y, {x: -3}) == -1
            with pytest.raises(errors.InvalidArgumentError, match="None of conditions"):
                sess.run(y, {x: 4})


def test_exclusive_fails_when_two_predicates_are_true():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.int32, [])
        y = tf.case(
            [(x < 5, lambda: tf.constant(1)), (x < 10, lambda: tf.constant(2))],
            default=lambda: tf.constant(3),
            exclusive=True,
        )
        with tf.Session() as sess:
            assert sess.run(y, {x: 7}) == 2 and sess.run(y, {x: 11}) == 3
            with pytest.raises(errors.InvalidArgumentError, match="exclusive=True"):
                sess.run(y, {x: 4})


def test_only_the_chosen_branch_runs():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.int32, [])
        v = tf.Variable(0)
        y = tf.case([(x > 0, lambda: tf.assign_add(v, 1))], default=lambda: tf.assign_add(v, 100))
        with tf.Session() as sess:
            sess.run(v.initializer)
            sess.run(y, {x: 1})
            sess.run(y, {x: 1})
            assert sess.run(v) == 2


def test_bad_arguments_are_clear_errors():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.int32, [])
        with pytest.raises(TypeError, match="must be Tensor of type bool"):
            tf.case([(x, lambda: x)])
        with pytest.raises(TypeError, match="must be callable"):
            tf.case([(x > 0, 3)])
        with pytest.raises(TypeError, match="2-tuple"):
            tf.case([(x > 0,)])
        with pytest.raises(TypeError, match="pred must be Tensor"):
            tf.case([(True, lambda: x)])
        with pytest.raises(ValueError, match="at least one"):
            tf.case([])
