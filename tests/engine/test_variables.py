"""Variables, initializers, variable scopes, get_variable and templates."""

import numpy as np
import pytest

import engine as tf
from engine import errors


def op_names():
    return [o.name for o in tf.get_default_graph().get_operations()]


def test_variable_ops_and_properties_match_tf1():
    v = tf.Variable(3.0, name="w")
    assert op_names() == ["w/initial_value", "w", "w/Assign", "w/read"]
    assert v.name == "w:0" and v.op.type == "VariableV2" and v.dtype.name == "float32_ref"
    assert v.initializer.name == "w/Assign" and v.value().name == "w/read:0"
    assert tf.convert_to_tensor(v).name == "w/read:0"
    assert v.shape.as_list() == [] and v.trainable
    assert repr(v) == "<Variable 'w:0' shape=() dtype=float32_ref>"
    v2 = tf.Variable(lambda: tf.ones([2]))
    assert v2.op.name == "Variable" and "Variable/Initializer/ones" in op_names()


def test_variable_usable_as_tensor_everywhere():
    v = tf.Variable([1.0, 2.0])
    exprs = [v + 1, 1 + v, v * v, -v, v[0], tf.square(v), tf.identity(v)]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        vals = sess.run(exprs)
    np.testing.assert_array_equal(vals[0], [2.0, 3.0])
    np.testing.assert_array_equal(vals[1], [2.0, 3.0])
    np.testing.assert_array_equal(vals[2], [1.0, 4.0])
    np.testing.assert_array_equal(vals[3], [-1.0, -2.0])
    assert vals[4] == 1.0
    np.testing.assert_array_equal(vals[6], [1.0, 2.0])


def test_assign_ops_and_module_level_functions():
    v = tf.Variable([1.0, 2.0], name="v")
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(v.assign([5.0, 6.0])), [5.0, 6.0])
        np.testing.assert_array_equal(sess.run(v.assign_add([1.0, 1.0])), [6.0, 7.0])
        np.testing.assert_array_equal(sess.run(v.assign_sub([2.0, 2.0])), [4.0, 5.0])
        np.testing.assert_array_equal(sess.run(tf.assign(v, [0.0, 1.0])), [0.0, 1.0])
        np.testing.assert_array_equal(sess.run(tf.assign_add(v, [1.0, 1.0])), [1.0, 2.0])
        np.testing.assert_array_equal(sess.run(tf.assign_sub(v, [1.0, 1.0])), [0.0, 1.0])
        np.testing.assert_array_equal(v.eval(sess), [0.0, 1.0])
        v.load([9.0, 9.0], sess)
        np.testing.assert_array_equal(sess.run(v), [9.0, 9.0])
    with pytest.raises(ValueError, match="incompatible"):
        v.assign([1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="Expected float32"):
        v.assign(["a", "b"])


def test_assign_with_validate_shape_false_reshapes_variable():
    v = tf.Variable([1.0, 2.0], validate_shape=False)
    p = tf.placeholder(tf.float32)
    assign = tf.assign(v, p, validate_shape=False)
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(assign, {p: [1.0, 2.0, 3.0]})
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0, 3.0])


def test_assign_shape_mismatch_at_run_time():
    v = tf.Variable([1.0, 2.0])
    p = tf.placeholder(tf.float32)
    assign = tf.assign(v, p)
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(errors.InvalidArgumentError, match="Assign requires shapes"):
            sess.run(assign, {p: [1.0]})
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])  # state unchanged


def test_initializers_and_reporting():
    a = tf.Variable(1.0, name="a")
    tf.Variable(2.0, name="b")
    with tf.Session() as sess:
        assert list(sess.run(tf.report_uninitialized_variables())) == [b"a", b"b"]
        assert not sess.run(tf.is_variable_initialized(a))
        sess.run(tf.variables_initializer([a]))
        assert sess.run(tf.is_variable_initialized(a))
        assert list(sess.run(tf.report_uninitialized_variables())) == [b"b"]
        init = tf.global_variables_initializer()
        assert init.name.startswith("init") and init.type == "NoOp"
        sess.run(init)
        assert sess.run(tf.report_uninitialized_variables()).shape == (0,)
    assert tf.variables_initializer([]).type == "NoOp"


def test_initial_value_shape_required():
    p = tf.placeholder(tf.float32, [None])
    with pytest.raises(ValueError, match="must have a shape specified"):
        tf.Variable(p)
    v = tf.Variable(p, validate_shape=False)
    with tf.Session() as sess:
        sess.run(v.initializer, {p: [1.0, 2.0]})
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])


# -- variable scopes ------------------------------------------------------------------------


def test_get_variable_names_and_default_initializers():
    with tf.variable_scope("foo"):
        w = tf.get_variable("w", [20, 30])
        b = tf.get_variable("b", [3], initializer=tf.zeros_initializer())
        c = tf.get_variable("c", initializer=tf.constant([1.0, 2.0]))
        i = tf.get_variable("i", [2], dtype=tf.int32)
    assert [v.name for v in (w, b, c, i)] == ["foo/w:0", "foo/b:0", "foo/c:0", "foo/i:0"]
    names = op_names()
    assert "foo/w/Initializer/random_uniform" in names
    assert "foo/b/Initializer/zeros" in names
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        wv, bv, cv, iv = sess.run([w, b, c, i])
    limit = np.sqrt(6.0 / (20 + 30))  # glorot_uniform, TF1's default
    assert np.abs(wv).max() <= limit and np.abs(wv).max() > limit * 0.8
    np.testing.assert_array_equal(bv, [0, 0, 0])
    np.testing.assert_array_equal(cv, [1.0, 2.0])
    np.testing.assert_array_equal(iv, [0, 0])


def test_get_variable_reuse_modes_and_messages():
    with tf.variable_scope("foo"):
        w = tf.get_variable("w", [2, 3])
    with tf.variable_scope("foo"):
        with pytest.raises(
            ValueError,
            match="Variable foo/w already exists, disallowed. Did "
            "you mean to set reuse=True or reuse=AUTO_REUSE",
        ):
            tf.get_variable("w", [2, 3])
    with tf.variable_scope("foo", reuse=True):
        assert tf.get_variable("w") is w
        with pytest.raises(ValueError, match="Variable foo/zz does not exist"):
            tf.get_variable("zz", [1])
        with pytest.raises(ValueError, match=r"specified shape \(5,\) and found shape \(2, 3\)"):
            tf.get_variable("w", [5])
        with tf.variable_scope("inner"):  # reuse is inherited
            assert tf.get_variable_scope().reuse is True
    with tf.variable_scope("foo", reuse=tf.AUTO_REUSE):
        assert tf.get_variable("w") is w
        n = tf.get_variable("new", [1])
        assert tf.get_variable("new", [1]) is n
    with tf.variable_scope("foo") as scope:
        scope.reuse_variables()
        assert tf.get_variable("w") is w


def test_variable_scope_name_scopes_and_defaults():
    with tf.variable_scope("foo") as s:
        assert s.name == "foo" and s.original_name_scope == "foo/"
        assert tf.constant(1).name == "foo/Const:0"
    with tf.variable_scope("foo") as s2:
        assert s2.name == "foo" and tf.constant(1).name == "foo_1/Const:0"
    with tf.variable_scope(None, default_name="bar"):
        assert tf.get_variable("v", [1]).name == "bar/v:0"
    with tf.variable_scope(None, default_name="bar"):
        assert tf.get_variable("v", [1]).name == "bar_1/v:0"
    with tf.name_scope("ns"):
        with tf.variable_scope("vs"):
            v = tf.get_variable("v", [1])
            c = tf.constant(1)
    assert v.name == "vs/v:0" and c.name == "ns/vs/Const:0"
    with pytest.raises(TypeError, match="default_name is None"):
        with tf.variable_scope(None):
            pass


def test_reenter_scope_object_and_scope_initializer():
    with tf.variable_scope("model", initializer=tf.constant_initializer(0.5)) as scope:
        a = tf.get_variable("a", [2])
    with tf.variable_scope(scope, reuse=True):
        assert tf.get_variable("a") is a
    with tf.variable_scope(scope):
        b = tf.get_variable("b", [1])
    assert b.name == "model/b:0"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(a), [0.5, 0.5])


def test_regularizer_adds_loss():
    with tf.variable_scope("r", regularizer=lambda w: tf.multiply(w, 0.0, name="l2")):
        tf.get_variable("w", [2])
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert len(losses) == 1 and losses[0].op.name.startswith("r/w/Regularizer/")


def test_custom_getter_wraps_creation():
    seen = []

    def getter(next_getter, name, *args, **kwargs):
        seen.append(name)
        return next_getter(name, *args, **kwargs)

    with tf.variable_scope("cg", custom_getter=getter):
        tf.get_variable("w", [1])
    assert seen == ["cg/w"]


def test_make_template_shares_variables():
    def layer(x):
        w = tf.get_variable("w", [1], initializer=tf.ones_initializer())
        return x * w

    tmpl = tf.make_template("layer", layer)
    y1 = tmpl(tf.constant([2.0]))
    y2 = tmpl(tf.constant([3.0]))
    assert [v.name for v in tf.global_variables()] == ["layer/w:0"]
    assert tmpl.variable_scope.name == "layer"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(y1)[0] == 2.0 and sess.run(y2)[0] == 3.0
    tmpl2 = tf.make_template("layer", layer)
    tmpl2(tf.constant([1.0]))
    assert [v.name for v in tf.global_variables()] == ["layer/w:0", "layer_1/w:0"]

    def bad(x):
        return x * tf.Variable(1.0)

    t3 = tf.make_template("bad", bad)
    t3(tf.constant(1.0))
    with pytest.raises(
        ValueError, match="Trainable variable created when calling a template after the first time"
    ):
        t3(tf.constant(1.0))


@pytest.mark.parametrize(
    "init,check",
    [
        (tf.zeros_initializer(), lambda v: np.all(v == 0)),
        (tf.ones_initializer(), lambda v: np.all(v == 1)),
        (tf.constant_initializer(3.0), lambda v: np.all(v == 3)),
        (
            tf.random_normal_initializer(mean=5.0, stddev=0.1, seed=1),
            lambda v: abs(v.mean() - 5.0) < 0.05 and 0.05 < v.std() < 0.15,
        ),
        (
            tf.random_uniform_initializer(-2.0, -1.0, seed=1),
            lambda v: v.min() >= -2.0 and v.max() < -1.0,
        ),
        (tf.truncated_normal_initializer(stddev=1.0, seed=1), lambda v: np.abs(v).max() <= 2.0),
        (
            tf.glorot_normal_initializer(seed=1),
            lambda v: np.abs(v).max() <= 2 * np.sqrt(2 / 300) / 0.8796 + 1e-6,
        ),
        (
            tf.variance_scaling_initializer(scale=2.0, mode="fan_in", distribution="uniform"),
            lambda v: np.abs(v).max() <= np.sqrt(3 * 2.0 / 100),
        ),
    ],
)
def test_initializers(init, check):
    v = tf.get_variable("v", [100, 200], initializer=init)
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert check(sess.run(v))


def test_initializer_class_is_instantiated_with_dtype():
    v = tf.get_variable("v", [3], dtype=tf.float64, initializer=tf.ones_initializer)
    with tf.Session() as sess:
        sess.run(v.initializer)
        out = sess.run(v)
    assert out.dtype == np.float64 and np.all(out == 1)
