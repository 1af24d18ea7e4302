"""Graph building semantics: names, scopes, collections, dependencies, devices, conversion."""

import fractions
import threading
from collections import namedtuple

import numpy as np
import pytest

import engine as tf


def names(g=None):
    return [o.name for o in (g or tf.get_default_graph()).get_operations()]


# -- default graphs -------------------------------------------------------------------------


def test_default_graph_is_lazy_global_and_resettable():
    g = tf.get_default_graph()
    assert tf.get_default_graph() is g
    tf.constant(1.0)
    tf.reset_default_graph()
    g2 = tf.get_default_graph()
    assert g2 is not g and g2.get_operations() == []


def test_as_default_nests_and_restores():
    g1, g2 = tf.Graph(), tf.Graph()
    with g1.as_default():
        c = tf.constant("Node in g_1")
        with g2.as_default():
            d = tf.constant("Node in g_2")
            assert tf.get_default_graph() is g2
        assert tf.get_default_graph() is g1
    assert c.graph is g1 and d.graph is g2
    assert tf.get_default_graph() is not g1


def test_reset_inside_nested_graph_raises():
    with tf.Graph().as_default():
        with pytest.raises(AssertionError, match="nested graphs"):
            tf.reset_default_graph()


def test_default_graph_is_per_thread():
    g = tf.Graph()
    seen = []
    with g.as_default():
        t = threading.Thread(target=lambda: seen.append(tf.get_default_graph()))
        t.start()
        t.join()
    assert seen[0] is not g


def test_guide_multiple_graphs_example():
    g_1 = tf.Graph()
    with g_1.as_default():
        c = tf.constant("Node in g_1")
        sess_1 = tf.Session()
    g_2 = tf.Graph()
    with g_2.as_default():
        d = tf.constant("Node in g_2")
    sess_2 = tf.Session(graph=g_2)
    assert c.graph is g_1 and sess_1.graph is g_1
    assert d.graph is g_2 and sess_2.graph is g_2
    assert sess_1.run(c) == b"Node in g_1"
    assert sess_2.run(d) == b"Node in g_2"
    with pytest.raises(ValueError, match="not an element of this graph"):
        sess_1.run(d)


# -- names ----------------------------------------------------------------------------------


def test_guide_naming_example():
    c_0 = tf.constant(0, name="c")
    c_1 = tf.constant(2, name="c")
    with tf.name_scope("outer"):
        c_2 = tf.constant(2, name="c")
        with tf.name_scope("inner"):
            c_3 = tf.constant(3, name="c")
        c_4 = tf.constant(4, name="c")
        with tf.name_scope("inner"):
            c_5 = tf.constant(5, name="c")
    assert [c.op.name for c in (c_0, c_1, c_2, c_3, c_4, c_5)] == [
        "c",
        "c_1",
        "outer/c",
        "outer/inner/c",
        "outer/c_1",
        "outer/inner_1/c",
    ]
    assert c_0.name == "c:0"


def test_unique_names_are_case_insensitive_and_skip_taken():
    tf.constant(1, name="a")
    tf.constant(1, name="a_1")
    assert tf.constant(1, name="a").op.name == "a_2"
    assert tf.constant(1, name="A").op.name == "A_3"


def test_name_scope_yields_prefix_and_absolute_scopes():
    with tf.name_scope("foo") as s:
        assert s == "foo/"
    with tf.name_scope("foo") as s:
        assert s == "foo_1/"
        assert tf.constant(1, name="foo").name == "foo_1/foo:0"
    with tf.name_scope("a"):
        with tf.name_scope(None):
            assert tf.constant(1).name == "Const:0"
        with tf.name_scope("b/"):
            assert tf.constant(1).name == "b/Const:0"
        assert tf.get_default_graph().get_name_scope() == "a"


def test_op_default_names_follow_tf1():
    x = tf.constant([1.0, 2.0])
    y = x + 2
    assert y.op.name == "add" and y.op.type == "AddV2"
    assert y.op.inputs[1].op.name == "add/y"
    assert tf.add(x, x).op.name == "Add_1"  # names are unique case-insensitively, as in TF
    assert (x * x).op.name == "mul"
    assert tf.square(x).op.name == "Square"


def test_invalid_names_raise():
    with pytest.raises(ValueError, match="not a valid"):
        tf.constant(1, name="bad name")
    with pytest.raises(ValueError, match="not a valid scope name"):
        with tf.name_scope("-bad"):
            pass


def test_get_by_name_and_errors():
    c = tf.constant(1.0, name="c")
    g = tf.get_default_graph()
    assert g.get_operation_by_name("c") is c.op
    assert g.get_tensor_by_name("c:0") is c
    assert g.as_graph_element("c") is c.op
    with pytest.raises(KeyError, match="does not exist"):
        g.get_tensor_by_name("nope:0")
    with pytest.raises(KeyError, match="exists but only has 1 outputs"):
        g.get_tensor_by_name("c:3")
    with pytest.raises(ValueError, match="appears to refer to a Tensor"):
        g.get_operation_by_name("c:0")
    with pytest.raises(ValueError, match="refers to an Operation"):
        g.get_tensor_by_name("c")
    with pytest.raises(KeyError, match="not in the graph"):
        g.get_operation_by_name("nope")


def test_finalize_blocks_new_ops():
    g = tf.Graph()
    with g.as_default():
        tf.constant(1)
        g.finalize()
        assert g.finalized
        with pytest.raises(RuntimeError, match="finalized"):
            tf.constant(2)


def test_version_counts_ops():
    g = tf.Graph()
    v0 = g.version
    with g.as_default():
        tf.constant(1)
        tf.constant(2)
    assert g.version == v0 + 2


# -- tensors and operations -----------------------------------------------------------------


def test_tensor_and_operation_reprs():
    c = tf.constant(1, name="Const")
    assert repr(c) == '<Tensor "Const:0" shape=() dtype=int32>'
    assert str(c) == 'Tensor("Const:0", shape=(), dtype=int32)'
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    assert repr(x) == '<Tensor "x:0" shape=(?, 3) dtype=float32>'
    assert repr(x.op) == '<Operation "x" type=Placeholder>'
    assert 'op: "Placeholder"' in str(x.op)


def test_tensor_properties():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    y = tf.identity(x)
    assert x.op.outputs == (x,) and x.value_index == 0 and x.graph is tf.get_default_graph()
    assert y.op.inputs == (x,)
    assert x.consumers() == [y.op]
    assert x.get_shape() is x.shape
    assert x.shape.as_list() == [None, 3]
    assert x.shape[1].value == 3 and x.shape[0].value is None
    assert x.op.get_attr("dtype") == tf.float32
    with pytest.raises(ValueError, match="no attr named"):
        x.op.get_attr("nope")


def test_set_shape_merges_and_rejects():
    x = tf.placeholder(tf.float32, [None, 3])
    x.set_shape([5, None])
    assert x.shape.as_list() == [5, 3]
    with pytest.raises(ValueError, match="not compatible"):
        x.set_shape([2, 4])


def test_tensor_bool_iter_len_raise_and_hash_by_identity():
    c = tf.constant([1, 2])
    with pytest.raises(TypeError, match="bool"):
        bool(c)
    with pytest.raises(TypeError):
        if c:
            pass
    with pytest.raises(TypeError, match="not iterable"):
        iter(c)
    with pytest.raises(TypeError, match="len"):
        len(c)
    d = tf.constant([1, 2])
    assert len({c, d, c}) == 2
    assert (c == c) is True and (c == d) is False


def test_tensor_numpy_interop_uses_reflected_operators():
    x = tf.placeholder(tf.float32, [2])
    y = np.float32(2.0) * x
    assert isinstance(y, tf.Tensor)
    with pytest.raises(NotImplementedError, match="symbolic Tensor"):
        np.asarray(x)


# -- collections ----------------------------------------------------------------------------


def test_collections_and_scope_filter():
    a = tf.constant(1, name="a")
    with tf.name_scope("s"):
        b = tf.constant(2, name="b")
    tf.add_to_collection("things", a)
    tf.add_to_collections(["things", "more"], b)
    assert tf.get_collection("things") == [a, b]
    assert tf.get_collection("things", scope="s") == [b]
    assert tf.get_collection("missing") == []
    ref = tf.get_collection_ref("things")
    ref.append(a)
    assert len(tf.get_collection("things")) == 3
    copy = tf.get_collection("things")
    copy.clear()
    assert len(tf.get_collection("things")) == 3
    assert set(tf.get_default_graph().get_all_collection_keys()) >= {"things", "more"}


def test_variables_land_in_standard_collections():
    w = tf.Variable(1.0, name="w")
    n = tf.Variable(1.0, name="n", trainable=False)
    assert tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES) == [w, n]
    assert tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES) == [w]
    assert tf.GraphKeys.UPDATE_OPS == "update_ops"


# -- control dependencies and devices -------------------------------------------------------


def test_control_dependencies_nesting_clearing_and_implied():
    x = tf.constant(1.0, name="x")
    a = tf.constant(2.0, name="a")
    with tf.control_dependencies([x]):
        y = tf.constant(2.0, name="y")
        z = y + 1  # depends on y, created inside: the dependency on x is implied
        with tf.control_dependencies(None):
            w = tf.constant(3.0, name="w")
        with tf.control_dependencies([a]):
            q = tf.constant(4.0, name="q")
    assert y.op.control_inputs == [x.op]
    assert z.op.control_inputs == []
    assert w.op.control_inputs == []
    assert q.op.control_inputs == [a.op, x.op]


def test_control_dependencies_accept_tensors_ops_variables():
    v = tf.Variable(1.0)
    t = tf.constant(1.0)
    with tf.control_dependencies([v, t, t.op]):
        c = tf.constant(2.0)
    assert c.op.control_inputs == [v.op, t.op]
    with pytest.raises(TypeError, match="Can not convert"):
        with tf.control_dependencies([3]):
            pass


def test_device_scopes_merge_and_clear():
    with tf.device("/gpu:0"):
        a = tf.constant(1)
    with tf.device("/job:ps"):
        with tf.device("/task:1"):
            b = tf.constant(1)
        with tf.device("/cpu:0"):
            c = tf.constant(1)
        with tf.device(None):
            d = tf.constant(1)
    with tf.device("/device:GPU:1"):
        with tf.device("/job:w/cpu:0"):
            e = tf.constant(1)
    with tf.device(lambda op: "/cpu:0" if op.type == "Const" else "/gpu:0"):
        f = tf.constant(1)
    assert a.op.device == "/device:GPU:0"
    assert b.op.device == "/job:ps/task:1"
    assert c.op.device == "/job:ps/device:CPU:0"
    assert d.op.device == ""
    assert e.op.device == "/job:w/device:CPU:0"
    assert f.device == "/device:CPU:0"
    with pytest.raises(ValueError, match="Unknown attribute"):
        with tf.device("/bogus:thing"):
            pass


def test_device_spec_parse_and_print():
    spec = tf.DeviceSpec.from_string("/job:localhost/replica:0/task:0/device:GPU:0")
    assert (spec.job, spec.replica, spec.task, spec.device_type, spec.device_index) == (
        "localhost",
        0,
        0,
        "GPU",
        0,
    )
    assert spec.to_string() == "/job:localhost/replica:0/task:0/device:GPU:0"
    assert tf.DeviceSpec(device_type="GPU", device_index=0).to_string() == "/device:GPU:0"
    assert tf.DeviceSpec.from_string("/cpu:1").to_string() == "/device:CPU:1"


# -- conversion and dtypes ------------------------------------------------------------------


@pytest.mark.parametrize(
    "value,dtype,shape",
    [
        (1, tf.int32, []),
        (2**40, tf.int64, []),
        (1.5, tf.float32, []),
        (True, tf.bool, []),
        ("abc", tf.string, []),
        (b"abc", tf.string, []),
        ([1, 2.0], tf.float32, [2]),
        ([True, 1], tf.int32, [2]),
        ([[1, 2], [3, 4]], tf.int32, [2, 2]),
        (np.array([1.0]), tf.float64, [1]),
        (np.int64(3), tf.int64, []),
        (["a", b"b"], tf.string, [2]),
    ],
)
def test_convert_python_and_numpy_values(value, dtype, shape):
    t = tf.convert_to_tensor(value)
    assert t.dtype == dtype and t.shape.as_list() == shape


def test_convert_errors_and_casts():
    with pytest.raises(TypeError, match="Expected int32"):
        tf.constant(2.5, dtype=tf.int32)
    with pytest.raises(ValueError, match="None values not supported"):
        tf.constant(None)
    with pytest.raises(ValueError, match="ragged"):
        tf.constant([[1], [2, 3]])
    with pytest.raises(ValueError, match="requested dtype float32 for Tensor with dtype float64"):
        tf.convert_to_tensor(tf.constant(1.5, tf.float64), dtype=tf.float32)
    with pytest.raises(TypeError, match="does not match"):
        tf.constant(1.5) + tf.constant(1)
    assert tf.constant(np.array([1.5]), dtype=tf.int32).dtype == tf.int32
    assert (tf.constant(1.0) * np.float64(2.0)).dtype == tf.float32


def test_constant_shape_argument():
    with tf.Session() as sess:
        np.testing.assert_array_equal(
            sess.run(tf.constant([1, 2, 3, 4], shape=[2, 2])), [[1, 2], [3, 4]]
        )
        np.testing.assert_array_equal(sess.run(tf.constant(7, shape=[2, 3])), np.full((2, 3), 7))
    with pytest.raises(TypeError, match="elements"):
        tf.constant([1, 2], shape=[3])


def test_constant_copies_numpy_input():
    a = np.array([1.0, 2.0], np.float32)
    c = tf.constant(a)
    a[0] = 99
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(c), [1.0, 2.0])


def test_autopacking_lists_of_tensors():
    x = tf.constant(1.0)
    p = tf.convert_to_tensor([x, 2.0, [3.0, x][0]])
    assert p.op.type == "Pack" and p.op.name == "packed"
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(p), [1.0, 2.0, 3.0])


def test_register_tensor_conversion_function():
    Point = namedtuple("Point", "x y")

    class Pt:
        def __init__(self, x, y):
            self.p = Point(x, y)

    tf.register_tensor_conversion_function(
        Pt, lambda v, dtype=None, name=None, as_ref=False: tf.constant([v.p.x, v.p.y], dtype=dtype)
    )
    t = tf.constant(1.0) + Pt(2.0, 3.0)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(t), [3.0, 4.0])
    with pytest.raises(TypeError):
        tf.register_tensor_conversion_function(int, lambda *a, **k: None)


def test_dtypes():
    assert tf.as_dtype("float32") is tf.float32
    assert tf.as_dtype(np.float64) is tf.float64
    assert tf.as_dtype(float) is tf.float32 and tf.as_dtype(bool) is tf.bool
    assert tf.float32.as_numpy_dtype is np.float32
    assert tf.int32.max == 2**31 - 1 and tf.uint8.is_unsigned and tf.float16.is_floating
    ref = tf.as_dtype("float32_ref")
    assert ref.base_dtype is tf.float32 and ref.is_ref_dtype
    assert tf.float32.is_compatible_with(ref) and not ref.is_compatible_with(tf.float32)
    assert str(tf.float32) == "<dtype: 'float32'>"
    with pytest.raises(TypeError, match="Cannot convert"):
        tf.as_dtype("float33")
    for d in [
        tf.bool,
        tf.int8,
        tf.int16,
        tf.int32,
        tf.int64,
        tf.uint8,
        tf.float16,
        tf.float32,
        tf.float64,
        tf.string,
    ]:
        assert tf.as_dtype(d.name) is d


def test_tensor_shape_semantics():
    s = tf.TensorShape([None, 3])
    assert str(s) == "(?, 3)" and s.ndims == 2 and s.as_list() == [None, 3]
    assert s.merge_with([2, None]).as_list() == [2, 3]
    with pytest.raises(ValueError, match="not compatible"):
        s.merge_with([2, 4])
    u = tf.TensorShape(None)
    assert str(u) == "<unknown>" and u.ndims is None
    with pytest.raises(ValueError, match="unknown TensorShape"):
        u.as_list()
    assert s.is_compatible_with([5, 3]) and not s.is_compatible_with([5, 4])
    assert tf.TensorShape([2, 3]).num_elements() == 6 and s.num_elements() is None
    assert s.concatenate([4]).as_list() == [None, 3, 4]
    assert int(s[1]) == 3 and s[1] + 1 == 4 and (s[0] == 3) is None


def test_python_floats_keep_their_digits_in_float64_and_round_once_in_float16():
    """A Python float becomes a float64 constant exactly (it went through float32 first:
    0.1 was 0.10000000149011612) and a float16 one rounded once from its own value."""
    v = 2.825195331500825  # float32 first, then float16, rounds to 2.824; at once, 2.826
    with tf.Graph().as_default():
        fetch = [
            tf.constant(0.1, tf.float64),
            tf.convert_to_tensor([0.1, 1 / 3], dtype=tf.float64),
            tf.convert_to_tensor(0.1, dtype_hint=tf.float64),
            tf.constant(v, tf.float16),
            tf.constant(0.1),
        ]
        with tf.Session() as sess:
            c64, l64, hinted, c16, c32 = sess.run(fetch)
    assert c64 == 0.1 and hinted == 0.1 and l64.tolist() == [0.1, 1 / 3]
    assert c16 == np.float16(v) and c16 != np.float16(np.float32(v))
    assert c32.dtype == np.float32 and c32 == np.float32(0.1)


def test_python_ints_beyond_int64():
    """2**63 is a uint64 constant, as in TF; asked for as int64 it is out of range (not
    wrapped to -2**63); beyond uint64 (or below int64) a clear TypeError, not a recursion."""
    with tf.Graph().as_default():
        big = tf.constant(2**63)
        assert big.dtype == tf.uint64
        with pytest.raises(TypeError, match="out of range for int64"):
            tf.constant(2**63, tf.int64)
        for value in (2**64, -(2**63) - 1, [1, 2**70]):
            with pytest.raises(TypeError, match="beyond the int64 and uint64 ranges"):
                tf.constant(value)
        half = tf.constant([fractions.Fraction(1, 2), 2])
        with tf.Session() as sess:
            assert sess.run(big) == 2**63
            assert sess.run(half).tolist() == [0.5, 2.0] and half.dtype == tf.float32
