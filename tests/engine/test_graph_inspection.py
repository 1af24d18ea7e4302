"""engine.graph_inspection: what a computation would run, without running it."""

import doctest

import engine as tf
from engine import graph_inspection
from engine.graph_inspection import computation_ops, op_types, variable_writes


def test_the_module_example_holds():
    result = doctest.testmod(graph_inspection)
    assert result.attempted > 0 and result.failed == 0


def test_walk_stops_at_feeds_and_follows_control_inputs():
    with tf.Graph().as_default():
        v = tf.Variable(1.0, name="v")
        x = tf.placeholder(tf.float32, name="x")
        pre = tf.identity(x, name="pre")  # upstream of the feed: not run
        bump = tf.assign_add(v, 1.0, name="bump")
        with tf.control_dependencies([bump]):
            y = tf.multiply(pre, 2.0, name="y")
        names = {op.name for op in computation_ops([y], feeds=[pre])}
        assert "y" in names and "bump" in names
        assert "pre" not in names and "x" not in names
        assert [op.name for op in variable_writes([y], feeds=[pre])] == ["bump"]
        assert "AssignAdd" in op_types([y], feeds=[pre])
        # Without the control dependency the computation only reads.
        z = tf.add(pre, 1.0, name="z")
        assert variable_writes([z], feeds=[pre]) == []
        assert variable_writes([z.op]) == []  # operations are fetches too


def test_function_bodies_are_included():
    with tf.Graph().as_default():
        v = tf.Variable(0.0, name="v")
        x = tf.placeholder(tf.float32, shape=[], name="x")

        def body(i):
            with tf.control_dependencies([tf.assign_add(v, 1.0, name="inner_bump")]):
                return i + 1.0

        out = tf.while_loop(lambda i: i < x, body, [tf.constant(0.0)])
        writes = variable_writes([out], feeds=[x])
        assert [op.name for op in writes] == ["inner_bump"]
        assert writes[0].graph is not out.graph  # found inside the loop body
        types = op_types([out], feeds=[x])
        assert {"While", "AssignAdd", "Less"} <= types
        ops = computation_ops([out], feeds=[x])
        assert len(ops) == len(set(ops))  # each op once


def test_read_only_model_has_no_writes():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, shape=[None, 2], name="x")
        w = tf.Variable([[1.0], [2.0]], name="w")
        y = tf.matmul(x, w)
        assert variable_writes([y], feeds=[x]) == []
        # The variable is read (through its Identity), never initialized or assigned here.
        assert op_types([y], feeds=[x]) == {"MatMul", "Identity", "VariableV2"}
