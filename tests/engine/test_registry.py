"""The op registry: declared attributes are each op's contract, checked when ops are created
and when graphs are read; runtime flags live in one object."""

import inspect

import numpy as np
import pytest

import engine as tf
from engine.framework import registry
from engine.framework.registry import Attr, OpFlags
from engine.ops._common import create
from engine.saving.graph_def import GraphDef, GraphDefError


def _kernel_keywords(opdef):
    params = inspect.signature(opdef.kernel).parameters.values()
    return {p.name: p.default for p in params if p.kind is p.KEYWORD_ONLY}


@pytest.mark.parametrize("op_type", registry.registered_types())
def test_declared_attrs_match_the_kernel_keywords(op_type):
    """Every declared attr is a keyword-only parameter of the kernel with the same default;
    the kernel's other keywords are supplied by the op's ``bind`` hook."""
    d = registry.get(op_type)
    keywords = _kernel_keywords(d)
    for a in d.attrs:
        assert a.name in keywords, f"{op_type}: declared attr {a.name!r} is not a kernel keyword"
        default = keywords[a.name]
        if a.required:
            assert default is inspect.Parameter.empty, f"{op_type}.{a.name} has a kernel default"
        else:
            assert default == a.default, f"{op_type}.{a.name}: defaults differ"
    undeclared = set(keywords) - set(d.attr_by_name)
    assert not undeclared or d.bind is not None, f"{op_type}: undeclared attrs {undeclared}"


def test_creating_an_op_checks_its_attrs_against_the_declaration():
    x = tf.constant([1.0, -2.0])
    with pytest.raises(TypeError, match=r"Op 'bad\w*' of type Sum has no attr 'keepdims'"):
        create("Sum", [x, tf.constant(0)], {"keepdims": True}, "bad")
    with pytest.raises(TypeError, match=r"Op 'bad\w*' of type Sum lacks the attr 'keep_dims'"):
        create("Sum", [x, tf.constant(0)], {}, "bad")
    with pytest.raises(TypeError, match=r"Attr 'keep_dims' of op 'bad\w*' \(Sum\) must be a bool"):
        create("Sum", [x, tf.constant(0)], {"keep_dims": "yes"}, "bad")
    with pytest.raises(TypeError, match=r"Attr 'DstT' of op 'bad\w*' \(Cast\) must be a type"):
        create("Cast", [x], {"DstT": "float32"}, "bad")
    # Graph annotations (leading underscore) are not attrs and are never checked.
    op = create("Sum", [x, tf.constant(0)], {"keep_dims": False, "_class": ["loc:@x"]}, "ok")
    assert op.get_attr("keep_dims") is False


def test_declared_defaults_are_filled_in_and_reach_the_kernel():
    x = tf.constant([1.7, -2.2])
    op = create("Cast", [x], {"DstT": tf.int32}, "cast")
    assert op.get_attr("Truncate") is False
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(op.outputs[0]), [1, -2])


def test_nullable_and_list_attrs():
    a = Attr("seed", "int?")
    assert a.accepts(None) and a.accepts(3) and not a.accepts(True) and not a.accepts(1.5)
    b = Attr("Tin", "list(type)")
    assert b.accepts((tf.float32, tf.int32)) and b.accepts(())
    assert not b.accepts(None) and not b.accepts((tf.float32, "int32"))
    assert Attr("alpha", "float").accepts(1) and not Attr("n", "int").accepts(1.0)
    assert b.serialized_kinds() == ("list",) and b.element_kinds() == ("dtype",)
    assert a.serialized_kinds() == ("i", "none")


def test_bad_declarations_are_refused():
    with pytest.raises(ValueError, match="unknown type 'integer'"):
        Attr("axis", "integer")
    with pytest.raises(ValueError, match="Default 'x' of attr 'axis' is not a int"):
        Attr("axis", "int", default="x")
    with pytest.raises(ValueError, match="not a valid attr name"):
        Attr("_class", "string")
    with pytest.raises(ValueError, match="declares an attr twice"):
        registry.OpDef("T", infer=None, attrs=(Attr("a", "int"), Attr("a", "bool")))


def test_flags_group_the_runtime_properties():
    f = OpFlags(stateful=True, ref_inputs=[0, 1], device_types=["CPU"])
    assert f.ref_inputs == (0, 1) and f.device_types == frozenset(["CPU"])
    assert not f.aliases and f.serializable and not f.hoist and not f.writes_variables
    assign = registry.get("Assign")
    assert assign.flags.writes_variables and assign.flags.ref_inputs == (0,)
    assert registry.get("Const").flags.hoist and registry.get("Relu").flags == OpFlags()


def test_the_importer_reads_the_declaration():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        tf.reduce_sum(x, axis=1, name="s")
    doc = g.as_graph_def()._doc
    sum_node = next(n for n in doc["nodes"] if n["op"] == "Sum")

    def fails(attrs, pattern):
        node = dict(sum_node, attrs=attrs)
        nodes = [node if n is sum_node else n for n in doc["nodes"]]
        bad = GraphDef(dict(doc, nodes=nodes))
        with tf.Graph().as_default(), pytest.raises(GraphDefError, match=pattern):
            tf.import_graph_def(bad)

    fails({}, r"node 's' \(Sum\) lacks the attrs \['keep_dims'\]")
    fails({"keep_dims": ["b", False], "axis": ["i", 1]}, r"has unknown attrs \['axis'\]")
    fails({"keep_dims": ["i", 0]}, r"attr 'keep_dims' must be a bool attr, got 'i'")
    ok = dict(sum_node["attrs"], _note=["s", "annotations are not attrs"])
    nodes = [dict(n, attrs=ok) if n is sum_node else n for n in doc["nodes"]]
    with tf.Graph().as_default():
        (s,) = tf.import_graph_def(GraphDef(dict(doc, nodes=nodes)), return_elements=["s:0"])
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(s, {"import/x:0": [[1, 2], [3, 4]]}), [3, 7])
