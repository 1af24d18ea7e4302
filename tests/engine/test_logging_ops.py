"""Print, Assert and the assert_* checks (build-time and run-time), and py_func (the other
side-effecting op family). Messages and formats are the ones TF prints."""

import numpy as np
import pytest

import engine as tf
from engine import errors
from engine.framework import registry
from engine.framework.tensor_util import constant_value
from engine.ops.logging_ops import summarize_value

# -----------------------------------------------------------------------------------------
# Print
# -----------------------------------------------------------------------------------------


def test_print_is_identity_and_prints_message_and_data(capsys):
    x = tf.constant([1, 2, 3, 4, 5])
    p = tf.Print(x, [x, tf.constant("hi"), tf.constant([[1.5, 2.0], [3.0, 4.0]])], message="msg: ")
    assert (p.op.type, p.name, p.dtype, p.shape.as_list()) == ("Print", "Print:0", tf.int32, [5])
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(p), [1, 2, 3, 4, 5])
    err = capsys.readouterr().err
    assert err == "msg: [1 2 3...][hi][[1.5 2][3...]...]\n"


def test_print_summarize_and_first_n(capsys):
    x = tf.placeholder(tf.int32, [None])
    p = tf.Print(x, [x], summarize=2, first_n=2)
    everything = tf.Print(x, [x, tf.constant(3.5), tf.constant(True), tf.zeros([0])], summarize=-1)
    with tf.Session() as sess:
        for _ in range(3):
            sess.run(p, {x: [1, 2, 3]})
        sess.run(everything, {x: [1, 2, 3, 4, 5]})
    assert capsys.readouterr().err == "[1 2...]\n[1 2...]\n[1 2 3 4 5][3.5][1][]\n"
    # first_n counts per session.
    with tf.Session() as sess:
        sess.run(p, {x: [7]})
    assert capsys.readouterr().err == "[7]\n"


def test_print_only_runs_on_the_fetch_path(capsys):
    x = tf.constant(2.0)
    p = tf.Print(x, [x], message="ran")
    y = x * 3.0
    with tf.Session() as sess:
        assert sess.run(y) == 6.0
        assert capsys.readouterr().err == ""
        assert sess.run(p * 3.0) == 6.0
    assert capsys.readouterr().err == "ran[2]\n"
    assert constant_value(p) is None  # never folded away at build time


def test_print_python_data_is_converted(capsys):
    x = tf.constant([1.0])
    p = tf.Print(x, ["label", 7])
    assert [t.op.name for t in p.op.inputs[1:]] == ["Print/data_0", "Print/data_1"]
    with tf.Session() as sess:
        sess.run(p)
    assert capsys.readouterr().err == "[label][7]\n"


@pytest.mark.parametrize(
    "value, summarize, expected",
    [
        (np.arange(24).reshape(2, 3, 4), 3, "[[0 1 2...]]..."),
        (
            np.arange(24).reshape(2, 3, 4),
            30,
            "[[0 1 2 3][4 5 6 7][8 9 10 11]][[12 13 14 15][16 17 18 19][20 21 22 23]]",
        ),
        (np.arange(6).reshape(3, 2, 1), 3, "[[0][1]][[2]]..."),
        (np.arange(6).reshape(1, 6), 3, "[0 1 2...]..."),
        (np.zeros((2, 0, 3)), 3, ""),
        (np.array(5), 0, "..."),
        (np.array([5, 6]), 0, "..."),
        (np.array([0.1, 1e10, 1.23456789, -0.0], np.float32), 10, "0.1 1e+10 1.23456788 -0"),
        (np.array([0.1, 1e10, 1.23456789, -0.0]), 10, "0.1 10000000000 1.23456789 -0"),
        (
            np.array([np.nan, np.inf, -np.inf, 1e-7, 123456789.0], np.float32),
            10,
            "nan inf -inf 1e-07 123456792",
        ),
        (np.array([1.5, 0.1], np.float16), 10, "1.5 0.0999755859"),
        (np.array([255], np.uint8), 3, "255"),
        (np.array([2**40], np.int64), 3, "1099511627776"),
        (np.array([True, False]), 3, "1 0"),
        (np.array([b"a\nb", b'q"t', "é".encode()], dtype=object), 10, 'a\\nb q\\"t é'),
    ],
)
def test_summarize_value_matches_tf(value, summarize, expected):
    assert summarize_value(value, summarize) == expected


# -----------------------------------------------------------------------------------------
# Assert
# -----------------------------------------------------------------------------------------


def test_assert_op_raises_with_data_when_false():
    x = tf.placeholder(tf.int32, [None])
    check = tf.Assert(tf.reduce_all(x > 0), [x, "str", tf.constant(2.5)])
    assert isinstance(check, tf.Operation) and check.type == "Assert"
    assert check.name == "Assert/Assert" and check.outputs == ()
    with tf.Session() as sess:
        assert sess.run(check, {x: [1, 2]}) is None
        with pytest.raises(errors.InvalidArgumentError) as e:
            sess.run(check, {x: [1, -2, 3, 4, 5]})
    assert "assertion failed: [1 -2 3...] [str] [2.5]" in e.value.message
    assert e.value.op is check


def test_assert_summarize_and_name():
    x = tf.placeholder(tf.int32, [None])
    check = tf.Assert(tf.reduce_all(x > 0), [x], summarize=-1, name="foo")
    assert check.name == "foo/Assert"
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError, match=r"assertion failed: \[1 -2 3 4 5\]"):
            sess.run(check, {x: [1, -2, 3, 4, 5]})


def test_assert_gates_dependent_ops():
    x = tf.placeholder(tf.float32, [None])
    with tf.control_dependencies([tf.Assert(tf.reduce_all(x >= 0), ["negative input:", x])]):
        y = tf.sqrt(x)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(y, {x: [4.0, 9.0]}), [2.0, 3.0])
        with pytest.raises(
            errors.InvalidArgumentError, match=r"assertion failed: \[negative input:\] \[4 -1\]"
        ):
            sess.run(y, {x: [4.0, -1.0]})


def test_assert_condition_errors():
    with pytest.raises(TypeError, match="bool"):
        tf.Assert(tf.constant(1), ["x"])
    c = tf.placeholder(tf.bool)
    check = tf.Assert(c, ["x"])
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError, match=r"In\[0\] should be a scalar: \[2\]"):
            sess.run(check, {c: [True, True]})
        sess.run(check, {c: [True]})  # a one-element vector is a legacy scalar


# -----------------------------------------------------------------------------------------
# assert_*: static (build time)
# -----------------------------------------------------------------------------------------


def test_assert_equal_static_failure_message():
    with pytest.raises(errors.InvalidArgumentError) as e:
        tf.assert_equal(1, 2)
    # The first name scope is opened (and discarded) before the check's own, as in TF.
    assert e.value.message == (
        "Condition x == y did not hold element-wise:\n"
        "x (assert_equal_1/x:0) = \n1\ny (assert_equal_1/y:0) = \n2"
    )


def test_assert_equal_static_with_message_and_data():
    with pytest.raises(
        errors.InvalidArgumentError,
        match=r"^boom\nCondition x == y did not "
        r"hold element-wise:\n.*\n\[1 2\]\n"
        r".*\n\[1 3\]$",
    ):
        tf.assert_equal([1, 2], [1, 3], message="boom")
    with pytest.raises(errors.InvalidArgumentError, match=r"^hey\n5$"):
        tf.assert_equal(tf.constant([1, 2]), tf.constant([1, 3]), data=["hey", tf.constant(5)])


def test_assert_equal_same_tensor_is_no_op():
    x = tf.placeholder(tf.float32)
    op = tf.assert_equal(x, x)
    assert op.type == "NoOp" and op.name == "assert_equal/NoOp"


@pytest.mark.parametrize(
    "fn, x, y, text",
    [
        (tf.assert_less, 2, 1, "Condition x < y did not hold element-wise:"),
        (tf.assert_less_equal, 2, 1, "Condition x <= y did not hold element-wise:"),
        (tf.assert_greater, 1, 2, "Condition x > y did not hold element-wise:"),
        (tf.assert_greater_equal, 1, 2, "Condition x >= y did not hold element-wise:"),
        (tf.assert_none_equal, [1, 2], [1, 3], "Condition x != y did not hold element-wise:"),
    ],
)
def test_binary_asserts_static_failure(fn, x, y, text):
    with pytest.raises(errors.InvalidArgumentError) as e:
        fn(x, y)
    assert e.value.message.startswith(text + "\nx (")


def test_binary_asserts_static_pass_return_runnable_op():
    checks = [
        tf.assert_less(1, 2),
        tf.assert_less_equal(2, 2),
        tf.assert_greater(3, 2),
        tf.assert_none_equal([1, 2], [3, 4]),
        tf.assert_equal([1, 2], [1, 2]),
        tf.assert_positive([1, 2]),
        tf.assert_non_negative([0, 2]),
    ]
    assert all(isinstance(c, tf.Operation) and c.type == "Assert" for c in checks)
    with tf.Session() as sess:
        assert sess.run(checks) == [None] * len(checks)


@pytest.mark.parametrize(
    "fn, name, text",
    [
        (tf.assert_positive, "assert_positive", "x > 0"),
        (tf.assert_non_negative, "assert_non_negative", "x >= 0"),
    ],
)
def test_unary_asserts_static_failure(fn, name, text):
    with pytest.raises(errors.InvalidArgumentError) as e:
        fn([1, -1])
    assert e.value.message == (
        f"\nCondition {text} did not hold element-wise:\nx ({name}/x:0) = \n[ 1 -1]"
    )


def test_unary_assert_message_prefix():
    with pytest.raises(errors.InvalidArgumentError, match=r"^careful\.  \nCondition x > 0"):
        tf.assert_positive([-1], message="careful")


def test_assert_dtype_mismatch_is_type_error():
    with pytest.raises(
        TypeError,
        match="Input 'y' of 'Equal' Op has type int32 that does not "
        "match type float32 of argument 'x'",
    ):
        tf.assert_equal(1.0, 2)


def test_assert_shape_mismatch_is_value_error():
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 3"):
        tf.assert_equal([1, 2], [1, 2, 3])


def test_assert_rank_static():
    with pytest.raises(
        ValueError,
        match=r"^Tensor Const:0 must have rank 2.  Received rank 1, "
        r"shape \(1,\)$",
    ):
        tf.assert_rank(tf.constant([1]), 2)
    ok = tf.assert_rank(tf.constant([1]), 1)
    assert ok.type == "NoOp" and ok.name == "assert_rank_1/static_checks_determined_all_ok"
    x = tf.placeholder(tf.float32, [None])
    with pytest.raises(
        ValueError,
        match=r"^hm.  Tensor Placeholder:0 must have rank 2.  "
        r"Received rank 1, shape \(\?,\)$",
    ):
        tf.assert_rank(x, 2, message="hm")
    with pytest.raises(ValueError, match="Rank must be a scalar."):
        tf.assert_rank(x, [1])
    with pytest.raises(TypeError, match="must be of type tf.int32; got tf.int64"):
        tf.assert_rank(x, tf.constant(1, tf.int64))


def test_assert_rank_at_least_static():
    with pytest.raises(
        ValueError,
        match=r"Tensor Const:0 must have rank at least 2.  Received "
        r"rank 1, shape \(1,\)",
    ):
        tf.assert_rank_at_least(tf.constant([1]), 2)
    assert tf.assert_rank_at_least(tf.constant([[1]]), 1).type == "NoOp"


def test_assert_type_and_scalar():
    with pytest.raises(TypeError, match=r"^Const:0 must be of type tf.float32; got tf.int32$"):
        tf.assert_type(tf.constant([1]), tf.float32)
    with pytest.raises(TypeError, match=r"^note.  Const_1:0 must be of type"):
        tf.assert_type(tf.constant([1]), tf.float32, message="note")
    ok = tf.assert_type(tf.constant([1]), tf.int32)
    assert ok.name == "assert_type_2/statically_determined_correct_type"
    with pytest.raises(
        ValueError,
        match=r"Expected scalar shape for Const_3:0, saw shape: "
        r"\(1,\).",
    ):
        tf.assert_scalar(tf.constant([1]))
    s = tf.constant(1)
    assert tf.assert_scalar(s) is s
    converted = tf.assert_scalar(3.0)
    assert converted.dtype == tf.float32 and converted.shape.rank == 0
    with pytest.raises(ValueError, match="saw shape: <unknown>"):
        tf.assert_scalar(tf.placeholder(tf.float32))


# -----------------------------------------------------------------------------------------
# assert_*: dynamic (run time)
# -----------------------------------------------------------------------------------------


def test_assert_equal_dynamic():
    x = tf.placeholder(tf.int32, [None])
    check = tf.assert_equal(x, [1, 2, 3])
    assert check.name == "assert_equal_1/Assert/Assert"
    with tf.Session() as sess:
        sess.run(check, {x: [1, 2, 3]})
        with pytest.raises(errors.InvalidArgumentError) as e:
            sess.run(check, {x: [1, 2, 4]})
    assert (
        "assertion failed: [Condition x == y did not hold element-wise:] "
        "[x (Placeholder:0) = ] [1 2 4] [y (assert_equal_1/y:0) = ] [1 2 3]"
    ) in e.value.message


def test_assert_less_dynamic_message_and_summarize():
    y = tf.placeholder(tf.float32)
    check = tf.assert_less(y, 1.0, message="small", summarize=1)
    with tf.Session() as sess:
        sess.run(check, {y: [0.5, 0.0]})
        with pytest.raises(
            errors.InvalidArgumentError,
            match=r"assertion failed: \[small\] \[Condition x < y did not hold "
            r"element-wise:\] \[x \(Placeholder:0\) = \] \[0.5\.\.\.\] "
            r"\[y \(assert_less/y:0\) = \] \[1\]",
        ):
            sess.run(check, {y: [0.5, 2.0]})


def test_assert_positive_dynamic():
    y = tf.placeholder(tf.float32)
    check = tf.assert_positive(y)
    assert check.name == "assert_positive/assert_less/Assert/Assert"
    with tf.Session() as sess:
        sess.run(check, {y: [1.0, 2.0]})
        with pytest.raises(
            errors.InvalidArgumentError,
            match=r"assertion failed: \[\] \[Condition x > 0 did not hold "
            r"element-wise:\] \[x \(Placeholder:0\) = \] \[1 -1\]",
        ):
            sess.run(check, {y: [1.0, -1.0]})


def test_assert_rank_dynamic():
    y = tf.placeholder(tf.float32)
    check = tf.assert_rank(y, 2)
    at_least = tf.assert_rank_at_least(y, 2)
    assert check.type == "Assert"
    with tf.Session() as sess:
        sess.run([check, at_least], {y: [[1.0]]})
        sess.run(at_least, {y: [[[1.0]]]})
        with pytest.raises(
            errors.InvalidArgumentError,
            match=r"assertion failed: \[\] \[Tensor Placeholder:0 must have "
            r"rank\] \[2\] \[Received shape: \] \[1\]",
        ):
            sess.run(check, {y: [1.0]})
        with pytest.raises(errors.InvalidArgumentError, match="must have rank at least"):
            sess.run(at_least, {y: [1.0]})


def test_assert_rank_with_fed_rank_checks_rank_is_scalar():
    y = tf.placeholder(tf.float32)
    r = tf.placeholder(tf.int32)
    check = tf.assert_rank(y, r)
    with tf.Session() as sess:
        sess.run(check, {y: [1.0], r: 1})
        with pytest.raises(errors.InvalidArgumentError, match="Rank must be a scalar"):
            sess.run(check, {y: [1.0], r: [1]})


def test_assert_ops_registered():
    assert registry.get("Assert").flags.stateful and registry.get("Print").flags.stateful
    assert registry.get("Print").flags.aliases


# -----------------------------------------------------------------------------------------
# py_func
# -----------------------------------------------------------------------------------------


def test_py_func_values_and_op():
    x = tf.constant([1.0, 2.0])
    y = tf.py_func(lambda a: a * 2, [x], tf.float32)
    assert (y.op.type, y.name, y.dtype) == ("PyFunc", "PyFunc:0", tf.float32)
    assert y.shape.rank is None
    token = y.op.get_attr("token")
    assert token.startswith("pyfunc_") and y.op.get_attr("Tout") == (tf.float32,)
    assert y.op.get_attr("Tin") == (tf.float32,)
    with tf.Session() as sess:
        got = sess.run(y)
    np.testing.assert_array_equal(got, [2.0, 4.0])
    assert got.dtype == np.float32


def test_py_func_multiple_outputs_and_conversion():
    x = tf.constant([1, 2, 3])
    outs = tf.py_func(
        lambda a: (a.sum(), a.astype(np.float64) / 2, [True, False]),
        [x],
        [tf.int32, tf.float32, tf.bool],
    )
    assert isinstance(outs, list) and [t.dtype for t in outs] == [tf.int32, tf.float32, tf.bool]
    one = tf.py_func(lambda a: a, [x], [tf.int32])
    assert isinstance(one, list) and len(one) == 1
    strings = tf.py_func(lambda: ["a", b"bc"], [], [tf.string, tf.string])
    with tf.Session() as sess:
        total, halves, flags = sess.run(outs)
        assert total == 6 and total.dtype == np.int32
        np.testing.assert_array_equal(halves, np.array([0.5, 1.0, 1.5], np.float32))
        assert halves.dtype == np.float32
        np.testing.assert_array_equal(flags, [True, False])
        np.testing.assert_array_equal(sess.run(one)[0], [1, 2, 3])
        assert sess.run(strings) == [b"a", b"bc"]


def test_py_func_receives_numpy_values():
    seen = []

    def record(scalar, vector):
        seen.append((type(scalar), vector.dtype, vector.flags.writeable))
        return scalar

    y = tf.py_func(record, [tf.constant(1.5), tf.constant([1, 2])], tf.float32)
    with tf.Session() as sess:
        assert sess.run(y) == 1.5
    assert seen == [(np.float32, np.dtype(np.int32), False)]


def test_py_func_runs_only_on_fetch_path():
    calls = []

    def f(a):
        calls.append(a.copy())
        return a + 1

    x = tf.placeholder(tf.int32, [None])
    y = tf.py_func(f, [x], tf.int32)
    z = x * 2
    with tf.Session() as sess:
        sess.run(z, {x: [1]})
        assert calls == []
        np.testing.assert_array_equal(sess.run(y, {x: [1, 2]}), [2, 3])
        sess.run(y, {x: [5]})
    assert [c.tolist() for c in calls] == [[1, 2], [5]]


def test_py_func_stateless_and_no_outputs():
    y = tf.py_func(lambda a, b: a + b, [1, 2], tf.int32, stateful=False, name="foo")
    assert (y.op.type, y.name) == ("PyFuncStateless", "foo:0")
    ran = []
    op = tf.py_func(lambda: ran.append(1), [], [])
    assert isinstance(op, tf.Operation) and op.outputs == ()
    with tf.Session() as sess:
        assert sess.run(y) == 3
        assert sess.run(op) is None
    assert ran == [1]


@pytest.mark.parametrize(
    "func, tout, error, text",
    [
        (
            lambda a: [1, 2],
            tf.int64,
            errors.InvalidArgumentError,
            "returns 2 values, but expects to see 1 values.",
        ),
        (
            lambda a: a,
            [tf.float32, tf.float32],
            errors.InvalidArgumentError,
            "returns 1 values, but expects to see 2 values.",
        ),
        (
            lambda a: 3.5,
            tf.int32,
            errors.InvalidArgumentError,
            "0-th value returned by pyfunc_[0-9]+ is double, but expects int32",
        ),
        (lambda a: "x", tf.float32, errors.InvalidArgumentError, "but expects float32"),
        (lambda a: 3, tf.string, errors.InvalidArgumentError, "is int, but expects string"),
    ],
)
def test_py_func_output_errors(func, tout, error, text):
    y = tf.py_func(func, [tf.constant([1.0])], tout)
    with tf.Session() as sess:
        with pytest.raises(error, match=text):
            sess.run(y)


@pytest.mark.parametrize(
    "exc, error",
    [
        (ValueError, errors.InvalidArgumentError),
        (TypeError, errors.InvalidArgumentError),
        (RuntimeError, errors.UnknownError),
        (NotImplementedError, errors.UnimplementedError),
    ],
)
def test_py_func_exceptions_become_op_errors(exc, error):
    def bad(_a):
        raise exc("nope")

    y = tf.py_func(bad, [tf.constant([1.0])], tf.float32, name="bad")
    with tf.Session() as sess:
        with pytest.raises(error, match="nope") as e:
            sess.run(y)
    assert e.value.op is y.op


def test_py_func_cannot_write_its_inputs():
    def mutate(a):
        a += 1
        return a

    x = tf.constant([1, 2])
    y = tf.py_func(mutate, [x], tf.int32)
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError, match="read-only"):
            sess.run(y)
        np.testing.assert_array_equal(sess.run(x), [1, 2])


def test_py_func_registration_is_local_and_unserializable():
    d = registry.get("PyFunc")
    assert d.flags.serializable is False and d.flags.stateful is True
    assert d.flags.device_types == frozenset(["CPU"])
    assert registry.get("PyFuncStateless").flags.serializable is False


def test_py_func_registry_forgets_functions_with_their_graph():
    import gc

    from engine.ops import script

    g = tf.Graph()
    with g.as_default():
        token = tf.py_func(lambda: np.float32(1), [], tf.float32).op.get_attr("token")
    assert token in script._callbacks
    del g
    gc.collect()
    assert token not in script._callbacks
