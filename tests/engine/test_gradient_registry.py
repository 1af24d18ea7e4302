"""One gradient registry with TensorFlow's semantics: a name is registered once, and
``Graph.gradient_override_map`` chooses another registered gradient per op."""

import numpy as np
import pytest

import engine as tf
from engine.framework import registry
from engine.gradients import get_gradient_function
from engine.ops._common import create, same_as_input


# Registered once for this module (the registry is process-wide, like TF's).
@tf.RegisterGradient("TestHalfMulGrad")
def _half_mul_grad(_op, grad):
    return [grad * 0.5, grad * 0.5]


def _grad_value(y, x):
    with tf.Session() as sess:
        return sess.run(tf.gradients(y, x)[0])


def test_registering_a_gradient_for_a_builtin_op_type_raises_and_changes_nothing():
    with pytest.raises(KeyError, match="Registering two gradient with name 'Mul'"):

        @tf.RegisterGradient("Mul")
        def _zero(_op, grad):
            return [grad * 0.0, grad * 0.0]

    with pytest.raises(KeyError, match="gradient_override_map"):
        tf.RegisterGradient("TestHalfMulGrad")(lambda op, grad: [grad, grad])
    with tf.Graph().as_default():
        x = tf.constant(3.0)
        assert _grad_value(x * x, x) == 6.0


def test_gradient_override_map_overrides_only_the_ops_created_inside():
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(3.0)
        before = x * x
        with g.gradient_override_map({"Mul": "TestHalfMulGrad"}):
            overridden = x * x
            added = x + x  # not a mapped type
        after = x * x
        assert overridden.op.get_attr("_gradient_op_type") == "TestHalfMulGrad"
        assert get_gradient_function(overridden.op) is _half_mul_grad
        assert _grad_value(before, x) == 6.0
        assert _grad_value(overridden, x) == 1.0
        assert _grad_value(added, x) == 2.0
        assert _grad_value(after, x) == 6.0
        # Both paths at once: built-in 2x plus the override's 0.5 + 0.5.
        assert _grad_value(before + overridden, x) == 7.0


def test_override_to_another_op_types_gradient_and_nesting():
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(3.0)
        with g.gradient_override_map({"Mul": "AddV2"}):
            as_add = x * x
            with g.gradient_override_map({"Mul": "TestHalfMulGrad"}):
                inner = x * x
            back = x * x
        assert _grad_value(as_add, x) == 2.0  # AddV2's gradient passes grad to both inputs
        assert _grad_value(inner, x) == 1.0
        assert _grad_value(back, x) == 2.0


def test_override_to_an_unregistered_name_fails_naming_it():
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(3.0)
        with g.gradient_override_map({"Mul": "NoSuchGradient"}):
            y = x * x
        with pytest.raises(LookupError, match=r"op type: Mul, overridden as NoSuchGradient"):
            tf.gradients(y, x)


def test_override_map_must_map_strings_to_strings():
    g = tf.Graph()
    for bad in ({"Mul": 1}, [("Mul", "AddV2")]):
        with pytest.raises(TypeError, match="mapping strings to strings"):
            with g.gradient_override_map(bad):
                pass


def test_the_override_is_saved_with_the_graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [], name="x")
        with g.gradient_override_map({"Mul": "TestHalfMulGrad"}):
            tf.multiply(x, x, name="y")
    with tf.Graph().as_default():
        x, y = tf.import_graph_def(g.as_graph_def(), return_elements=["x:0", "y:0"])
        (dx,) = tf.gradients(y, x)
        with tf.Session() as sess:
            assert sess.run(dx, {x: 3.0}) == 1.0


def test_not_differentiable_registers_no_gradient_once():
    if not registry.lookup("TestOpDeclaredNotDifferentiable"):
        registry.op("TestOpDeclaredNotDifferentiable", infer=same_as_input)(lambda xp, v: v + 0)
        tf.NotDifferentiable("TestOpDeclaredNotDifferentiable")
    with pytest.raises(KeyError, match="Registering two gradient"):
        tf.NotDifferentiable("TestOpDeclaredNotDifferentiable")
    with pytest.raises(KeyError, match="Registering two gradient with name 'Mul'"):
        tf.NotDifferentiable("Mul")
    with tf.Graph().as_default():
        x = tf.constant(np.float32(2.0))
        y = create("TestOpDeclaredNotDifferentiable", [x], {}, "nd").outputs[0]
        assert tf.gradients(y, x) == [None]
    assert registry.gradient("ArgMax") is None
    assert registry.gradient("Mul") is not None
    with pytest.raises(LookupError, match="No gradient registered as 'NoSuchGradient'"):
        registry.gradient("NoSuchGradient")


def test_an_op_cannot_have_a_gradient_and_be_not_differentiable():
    with pytest.raises(ValueError, match="has a gradient and differentiable=False"):
        registry.op(
            "TestOpContradictory", infer=same_as_input, grad=_half_mul_grad, differentiable=False
        )(lambda xp, v: v)
    assert registry.lookup("TestOpContradictory") is None
