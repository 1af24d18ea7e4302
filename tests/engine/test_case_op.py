"""``tf.case`` against TensorFlow's recordings (``fixtures/make_case_fixtures.py``) and its
run-time checks."""

import pytest

import engine as tf
from engine import errors
from tests.engine.fixtures.make_case_fixtures import FEEDS, evaluate
from tests.engine.fixtures.oracle import assert_recorded, load, recorded_keys

TF = load("case_tf.npz")


def test_case_matches_tensorflow():
    ours = evaluate(tf)
    assert TF["feeds"].tolist() == FEEDS
    for key in recorded_keys(TF, skip=("feeds",)):
        assert_recorded(ours[key], TF[key], key, rtol=0)


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


def test_exclusive_without_a_default_checks_the_pairs_before_the_last():
    """TF's rule: the last pair becomes the default, and only the others must be exclusive
    (so two true predicates where one is the last pass: the first wins)."""
    with tf.Graph().as_default():
        p = tf.placeholder(tf.bool, [])
        q = tf.placeholder(tf.bool, [])
        y = tf.case([(p, lambda: tf.constant(1)), (q, lambda: tf.constant(2))], exclusive=True)
        with tf.Session() as sess:
            assert sess.run(y, {p: True, q: True}) == 1
            assert sess.run(y, {p: False, q: True}) == 2
