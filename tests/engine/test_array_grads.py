"""Gradients of the array ops: finite differences against the symbolic gradients.

Every case is checked three ways: with its inputs as constants (``check_gradient``: static
shapes known, so gradient graphs use constant shapes), and fed through placeholders of unknown
dims and of unknown rank (gradient graphs must fall back to Shape ops). Inputs listed in
``const_inputs`` stay constants in the fed variants; the other non-differentiated inputs (axes,
paddings, begin, ...) are fed too, which exercises the fully dynamic paths. Expected values of
the hand-written checks come from TensorFlow 1.x (``tfo``).
"""

from __future__ import annotations

import numpy as np
import pytest

import engine as tf
from engine.framework import registry
from tests.engine.optable import Case, check_gradient

F = np.float64
I32 = np.int32
I64 = np.int64
rng = np.random.default_rng(7)
x23 = rng.standard_normal((2, 3))
x34 = rng.standard_normal((3, 4))
x234 = rng.standard_normal((2, 3, 4))
x121 = rng.standard_normal((1, 2, 1))
x5 = rng.standard_normal(5)


def G(id, build, inputs, grad_inputs=(0,), **kw):
    """A gradient-only case: the forward values are covered by test_array_ops.py."""
    return Case(id, build, inputs, ref=None, grad_inputs=grad_inputs, **kw)


def _weighted(parts, axis=None):
    """The outputs, each scaled differently (catches swapped pieces): summed, or concatenated
    along ``axis`` when their shapes differ."""
    scaled = [p * float(i + 1) for i, p in enumerate(parts)]
    return tf.add_n(scaled) if axis is None else tf.concat(scaled, axis)


def _ta(size):
    return tf.TensorArray(tf.float64, size=size)


def _ta_write_read(a, b):
    ta = _ta(2).write(0, a).write(1, b * 2.0)
    return ta.read(1) * 3.0 + ta.read(0) * ta.read(0)


def _ta_while(x):
    """A running product of the rows, written to and read from arrays inside a while loop."""
    rows = _ta(3).unstack(x)

    def body(t, h, out):
        h = h * rows.read(t) + 1.0
        return t + 1, h, out.write(t, h)

    _, h, out = tf.while_loop(
        lambda t, h, out: t < 3, body, [tf.constant(0), tf.ones_like(x[0]), _ta(3)]
    )
    return out.stack() * h


CASES = [
    G("identity", tf.identity, [x23]),
    G(
        "reverse_sequence",
        lambda x: tf.reverse_sequence(x, [3, 1], seq_axis=1) * np.arange(24.0).reshape(2, 3, 4),
        [x234],
    ),
    G("identity_n", lambda x: _weighted(tf.identity_n([x, x * 2.0])), [x23]),
    G("print", lambda x: tf.Print(x, [tf.shape(x)], message="grad test ", first_n=1), [x23]),
    # reshaping
    G("reshape", lambda x: tf.reshape(x, [3, 2]), [x23]),
    G("reshape_minus_one", lambda x: tf.reshape(x, [-1]), [x234]),
    G("reshape_fed_shape", tf.reshape, [x234, np.array([4, -1], I32)]),
    G("squeeze_all", tf.squeeze, [x121]),
    G("squeeze_axis", lambda x: tf.squeeze(x, [0]), [x121]),
    G("expand_dims", lambda x: tf.expand_dims(x, -1), [x23]),
    G("expand_dims_fed_axis", tf.expand_dims, [x23, I32(1)]),
    G("transpose_default", tf.transpose, [x234]),
    G("transpose_perm", lambda x: tf.transpose(x, [1, 2, 0]), [x234]),
    G("transpose_fed_perm", tf.transpose, [x234, np.array([2, 0, 1], I32)]),
    G("transpose_int64_perm", tf.transpose, [x234, np.array([1, 2, 0], I64)]),
    # packing, concat, split
    G("stack", lambda a, b: tf.stack([a, b * 2.0], axis=1), [x23, x23 + 1], grad_inputs=(0, 1)),
    G("stack_neg_axis", lambda a, b: tf.stack([a, b], axis=-1), [x5, x5], grad_inputs=(1,)),
    G("unstack_all_outputs", lambda x: _weighted(tf.unstack(x, num=3, axis=1)), [x234]),
    G("unstack_one_output", lambda x: tf.unstack(x, num=4, axis=-1)[2], [x234]),
    G("concat_axis0", lambda a, b: tf.concat([a, b], 0), [x23, x34[:1, :3]], grad_inputs=(0, 1)),
    G(
        "concat_three_axis1",
        lambda a, b, c: tf.concat([a, b, c], 1),
        [x23, x34[:2], x5[:2].reshape(2, 1)],
        grad_inputs=(0, 1, 2),
    ),
    G(
        "concat_neg_axis",
        lambda a, b: tf.concat([a, b], -1),
        [x234, x234[..., :1]],
        grad_inputs=(0, 1),
    ),
    G(
        "concat_fed_axis",
        lambda a, b, c, axis: tf.concat([a, b, c], axis),
        [x23, x34[:2], x23, I32(1)],
        grad_inputs=(0, 1, 2),
    ),
    G(
        "concat_fed_int64_axis",
        lambda a, b, axis: tf.concat([a, b], axis),
        [x23, x34[:2], I64(-1)],
        grad_inputs=(1,),
    ),
    G(
        "concat_empty_piece",
        lambda a, b: tf.concat([a, b], 0),
        [x23, np.zeros((0, 3))],
        grad_inputs=(0,),
    ),
    G("split_all_outputs", lambda x: _weighted(tf.split(x, 2, axis=2)), [x234]),
    G("split_unused_outputs", lambda x: tf.split(x, 3, axis=1)[1], [x234]),
    G("split_fed_axis", lambda x, a: _weighted(tf.split(x, 2, axis=a)), [x234, I32(-1)]),
    G("split_v_all_outputs", lambda x: _weighted(tf.split(x, [1, -1, 1], axis=2), 2), [x234]),
    G("split_v_unused_outputs", lambda x: tf.split(x, [2, 1, 1], axis=-1)[2] * 3.0, [x234]),
    G(
        "split_v_fed_sizes",
        lambda x, s: _weighted(tf.split(x, s, axis=1, num=2), 1),
        [x234, np.array([1, 2], I64)],
    ),
    # tile
    G("tile", lambda x: tf.tile(x, [2, 3]), [x23]),
    G("tile_ones_and_zero", lambda x: tf.tile(x, [1, 2, 1]), [x234]),
    G("tile_fed_multiples", tf.tile, [x23, np.array([3, 2], I32)]),
    G("tile_int64_multiples", tf.tile, [x5, np.array([2], I64)]),
    # slice and strided_slice
    G("slice", lambda x: tf.slice(x, [1, 0, 1], [1, 2, -1]), [x234]),
    G("slice_fed_begin", tf.slice, [x234, np.array([0, 1, 1], I32), np.array([2, 2, 2], I32)]),
    G("slice_fed_int64", tf.slice, [x23, np.array([1, 1], I64), np.array([-1, 2], I64)]),
    G("getitem_basic", lambda x: x[1:3, ::2], [x34]),
    G("getitem_negative_strides", lambda x: x[::-1, 3:0:-2], [x34]),
    G("getitem_negative_index", lambda x: x[:, -1], [x34]),
    G("getitem_shrink", lambda x: x[1], [x234]),
    G("getitem_ellipsis_newaxis", lambda x: x[..., None, 1], [x234]),
    G("getitem_newaxis_first", lambda x: x[None, :, 1:], [x23]),
    G("getitem_ellipsis_middle", lambda x: x[1, ..., ::-2], [x234]),
    G("getitem_empty", lambda x: x[2:1] + 1.0, [x34]),
    G(
        "strided_slice_masks",
        lambda x: tf.strided_slice(x, [1, 3], [0, 0], [1, -1], begin_mask=1, end_mask=3),
        [x34],
    ),
    G(
        "strided_slice_fed",
        tf.strided_slice,
        [x34, np.array([2, -1], I32), np.array([0, 0], I32), np.array([-1, -2], I32)],
    ),
    # gather
    G("gather_repeated", lambda x: tf.gather(x, [0, 2, 0, 0]), [x34]),
    G("gather_axis1_2d_indices", lambda x: tf.gather(x, [[3, 1], [1, 1]], axis=1), [x34]),
    G("gather_neg_axis", lambda x: tf.gather(x, [2, 2, 0], axis=-1), [x234]),
    G(
        "gather_batch_dims",
        lambda x: tf.gather(x, [[0, 0, 2], [1, 1, 1]], axis=1, batch_dims=1),
        [x34[:2]],
    ),
    G(
        "gather_fed_indices",
        lambda x, i: tf.gather(x, i, axis=1),
        [x234, np.array([[2, 0], [2, 2]], I64)],
    ),
    G(
        "gather_fed_axis",
        lambda x, i, a: tf.gather(x, i, axis=a),
        [x234, np.array([1, 1, 0], I32), I32(0)],
    ),
    # padding
    G("pad", lambda x: tf.pad(x, [[1, 0], [2, 1]]), [x23]),
    G("pad_fed_paddings", tf.pad, [x23, np.array([[0, 2], [1, 1]], I32)]),
    G("pad_v2", lambda x: tf.pad(x, [[1, 1], [0, 2]], constant_values=3.0), [x23]),
    G(
        "pad_v2_fed_int64",
        lambda x, p: tf.pad(x, p, constant_values=-1.0),
        [x234, np.array([[1, 0], [0, 0], [2, 1]], I64)],
    ),
    G("mirror_reflect", lambda x: tf.pad(x, [[1, 1], [2, 2]], mode="REFLECT"), [x34]),
    G("mirror_reflect_max", lambda x: tf.pad(x, [[1, 0], [0, 2]], "reflect"), [x23]),
    G("mirror_symmetric", lambda x: tf.pad(x, [[2, 1], [3, 0]], mode="SYMMETRIC"), [x23]),
    G(
        "mirror_symmetric_fed",
        lambda x, p: tf.pad(x, p, mode="SYMMETRIC"),
        [x234, np.array([[2, 2], [0, 1], [4, 3]], I32)],
    ),
    # reverse, broadcast_to
    G("reverse", lambda x: tf.reverse(x, [0]), [x234]),
    G("reverse_two_axes", lambda x: tf.reverse(x, [-1, 1]), [x234]),
    G("reverse_fed_axis", tf.reverse, [x234, np.array([2, 0], I64)]),
    G("broadcast_to", lambda x: tf.broadcast_to(x, [2, 5]), [x5]),
    G("broadcast_to_rank_up", lambda x: tf.broadcast_to(x, [2, 2, 3]), [x23[:1]]),
    G("broadcast_to_fed_shape", tf.broadcast_to, [x23[:, :1], np.array([4, 2, 3], I32)]),
    # boolean_mask and Where (through their composition)
    G(
        "boolean_mask",
        lambda x, m: tf.boolean_mask(x, m),
        [x34, rng.random((3, 4)) > 0.4],
        const_inputs=(1,),
    ),
    G(
        "boolean_mask_axis",
        lambda x, m: tf.boolean_mask(x, m, axis=1),
        [x234, np.array([True, False, True])],
        const_inputs=(1,),
    ),
    G(
        "getitem_bool_mask",
        lambda x, m: x[m],
        [x34, np.array([True, False, True])],
        const_inputs=(1,),
    ),
    # fill
    G("fill", lambda v: tf.fill([2, 3], v), [F(1.5)]),
    G(
        "fill_fed_dims",
        lambda d, v: tf.fill(d, v),
        [np.array([3, 1, 2], I32), F(-2.0)],
        grad_inputs=(1,),
    ),
    # TensorArray: a read's gradient writes into the gradient array, a write's reads from it
    G("ta_unstack_stack", lambda x: _ta(3).unstack(x).stack() * 2.0, [x34]),
    G("ta_write_read", _ta_write_read, [x23, x23 + 1], grad_inputs=(0, 1)),
    G("ta_scatter_gather", lambda x: _ta(3).scatter([2, 0, 1], x).gather([1, 1, 2]), [x34]),
    G("ta_split_read", lambda x: _ta(2).split(x, [1, 2]).read(1) * 3.0, [x34]),
    G("ta_while_loop", _ta_while, [x34]),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_gradient_static_shapes(case):
    check_gradient(case)


def check_gradient_fed(case: Case, mode: str, tol: float = 1e-5, delta: float = 1e-6) -> None:
    """``check_gradient`` with inputs fed through placeholders of unknown dims or rank."""
    inputs = [
        np.asarray(v, np.float64) if np.asarray(v).dtype.kind == "f" else np.asarray(v)
        for v in case.inputs
    ]
    for gi in case.grad_inputs:
        g = tf.Graph()
        with g.as_default():
            ins, feeds = [], {}
            for i, v in enumerate(inputs):
                if i in case.const_inputs:
                    ins.append(tf.constant(v))
                    continue
                shape = [None] * np.ndim(v) if mode == "unknown_dims" else None
                p = tf.placeholder(tf.constant(v).dtype, shape=shape, name=f"in{i}")
                ins.append(p)
                feeds[p] = v
            x = ins[gi]
            out = case.build(*ins)
            out = out[0] if isinstance(out, list) else out
            extra = {p: v for p, v in feeds.items() if p is not x}
            with tf.Session(graph=g) as sess:
                y_shape = list(np.shape(sess.run(out, feeds)))
                err = tf.test.compute_gradient_error(
                    x,
                    list(np.shape(inputs[gi])),
                    out,
                    y_shape,
                    x_init_value=inputs[gi],
                    delta=delta,
                    extra_feed_dict=extra,
                )
        assert err < tol, f"{case.id} [{mode}]: gradient w.r.t. input {gi} off by {err}"


@pytest.mark.parametrize("mode", ["unknown_dims", "unknown_rank"])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_gradient_unknown_shapes(case, mode):
    check_gradient_fed(case, mode)


# -----------------------------------------------------------------------------------------
# Gradient ops of their own (StridedSliceGrad, GatherGrad, MirrorPadGrad): their gradients,
# i.e. second derivatives of the forward ops
# -----------------------------------------------------------------------------------------


def _vjp(forward, x_value):
    """``dy -> d<forward(x), dy>/dx`` at a constant ``x``: the forward op's gradient op."""

    def build(dy):
        x = tf.constant(x_value)
        return tf.gradients(forward(x), x, grad_ys=dy)[0]

    return build


SECOND_ORDER = [
    G("strided_slice_grad", _vjp(lambda x: x[::-1, 1:3, None], x34), [np.ones((3, 2, 1))]),
    G(
        "gather_grad",
        _vjp(lambda x: tf.gather(x, [2, 0, 2], axis=1), x34),
        [rng.standard_normal((3, 3))],
    ),
    G(
        "gather_grad_batch_dims",
        _vjp(lambda x: tf.gather(x, [[1, 1], [0, 3]], axis=1, batch_dims=1), x34[:2]),
        [rng.standard_normal((2, 2))],
    ),
    G(
        "mirror_pad_grad_reflect",
        _vjp(lambda x: tf.pad(x, [[2, 1], [1, 0]], "REFLECT"), x34),
        [rng.standard_normal((6, 5))],
    ),
    G(
        "mirror_pad_grad_symmetric",
        _vjp(lambda x: tf.pad(x, [[0, 3], [2, 2]], "SYMMETRIC"), x34),
        [rng.standard_normal((6, 8))],
    ),
]


@pytest.mark.parametrize("case", SECOND_ORDER, ids=str)
def test_gradient_of_gradient_ops(case):
    check_gradient(case)


# -----------------------------------------------------------------------------------------
# Values, static shapes and non-differentiable inputs
# -----------------------------------------------------------------------------------------


def _grad(y, x, feed=None, grad_ys=None):
    g = tf.gradients(y, x, grad_ys=grad_ys)
    with tf.Session() as sess:
        return sess.run(g, feed or {})


def test_gather_repeated_indices_sum():
    x = tf.constant(np.zeros((4, 2)))
    y = tf.gather(x, [1, 3, 1, 1])
    dy = np.arange(8.0).reshape(4, 2)
    (g,) = _grad(y, x, grad_ys=tf.constant(dy))
    # tfo: tf.convert_to_tensor(tf.gradients(tf.gather(x, [1,3,1,1]), x, dy)[0])
    np.testing.assert_array_equal(g, [[0, 0], [0 + 4 + 6, 1 + 5 + 7], [0, 0], [2, 3]])


def test_gather_grad_is_dense_with_static_shape():
    x = tf.placeholder(tf.float32, [5, None])
    g = tf.gradients(tf.gather(x, [0, 0], axis=0), x)[0]
    assert g.op.type == "GatherGrad"
    assert g.shape.as_list() == [5, None]
    with tf.Session() as sess:
        out = sess.run(g, {x: np.ones((5, 2), np.float32)})
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [[2, 2]] + [[0, 0]] * 4)


def test_gather_grad_float16_accumulates():
    x = tf.constant(np.zeros((2, 1), np.float16))
    idx = np.zeros(3000, np.int32)
    g = tf.gradients(tf.gather(x, idx), x)[0]
    with tf.Session() as sess:
        out = sess.run(g)
    assert out.dtype == np.float16
    # Summing 3000 ones in float16 one by one sticks at 2048; float32 accumulation does not.
    assert out[0, 0] == np.float16(3000)


def test_gather_grad_rejects_out_of_range_indices():
    x = tf.constant(np.zeros((3, 2)))
    i = tf.placeholder(tf.int32, [None])
    dy = tf.placeholder(tf.float64, [None, 2])
    g = tf.gradients(tf.gather(x, i), x, grad_ys=dy)[0]
    with (
        tf.Session() as sess,
        pytest.raises(tf.errors.InvalidArgumentError, match=r"not in \[0, 3\)"),
    ):
        sess.run(g, {i: [0, 3], dy: np.ones((2, 2))})


def test_concat_grad_keeps_static_shapes():
    a, b, c = (tf.placeholder(tf.float32, s) for s in ([2, 3], [2, 1], [2, 4]))
    grads = tf.gradients(tf.concat([a, b, c], 1), [a, b, c])
    assert [g.shape.as_list() for g in grads] == [[2, 3], [2, 1], [2, 4]]
    assert {g.op.type for g in grads} == {"SplitV"}
    assert not any(op.type == "Shape" for op in tf.get_default_graph().get_operations())


def test_concat_grad_partially_known_sizes():
    a = tf.placeholder(tf.float64, [None, 2])
    b = tf.placeholder(tf.float64, [None, None])
    y = tf.concat([a, b, a], axis=1)
    ga, gb = tf.gradients(y * y, [a, b])
    av, bv = np.ones((2, 2)), np.full((2, 3), 2.0)
    with tf.Session() as sess:
        ga_v, gb_v = sess.run([ga, gb], {a: av, b: bv})
    np.testing.assert_array_equal(ga_v, 4 * av)  # a appears twice
    np.testing.assert_array_equal(gb_v, 2 * bv)


def test_split_unused_outputs_get_zeros():
    x = tf.constant(np.arange(6.0).reshape(2, 3))
    parts = tf.split(x, [1, 1, 1], axis=1)
    (g,) = _grad(parts[1] * 2.0, x)
    np.testing.assert_array_equal(g, [[0, 2, 0], [0, 2, 0]])


def test_reshape_grad_uses_dynamic_shape():
    x = tf.placeholder(tf.float64, [None, 3])
    g = tf.gradients(tf.reshape(x, [-1]), x)[0]
    assert g.shape.as_list() == [None, 3]
    assert any(op.type == "Shape" for op in tf.get_default_graph().get_operations())
    with tf.Session() as sess:
        assert sess.run(g, {x: np.ones((4, 3))}).shape == (4, 3)


def test_transpose_grad_with_dynamic_perm_inverts_it():
    x = tf.placeholder(tf.float64, None)
    p = tf.placeholder(tf.int32, [None])
    y = tf.transpose(x, p)
    dy = tf.placeholder(tf.float64, None)
    g = tf.gradients(y, x, grad_ys=dy)[0]
    assert any(op.type == "InvertPermutation" for op in tf.get_default_graph().get_operations())
    dyv = rng.standard_normal((4, 2, 3))
    with tf.Session() as sess:
        out = sess.run(g, {x: np.zeros((2, 3, 4)), p: [2, 0, 1], dy: dyv})
    np.testing.assert_array_equal(out, dyv.transpose(1, 2, 0))


def test_invert_permutation():
    with tf.Session() as sess:
        assert sess.run(tf.invert_permutation([3, 4, 0, 2, 1])).tolist() == [2, 4, 3, 0, 1]
        p = tf.placeholder(tf.int32, [None])
        with pytest.raises(tf.errors.InvalidArgumentError, match="not a permutation"):
            sess.run(tf.invert_permutation(p), {p: [0, 0, 1]})


def test_mirror_pad_grad_values():
    # tfo: tf.gradients(tf.pad(x, [[2, 1]], "REFLECT"), x, [1., 2., 3., 4., 5., 6., 7.])
    x = tf.constant([10.0, 20.0, 30.0, 40.0])
    dy = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])
    (g,) = _grad(tf.pad(x, [[2, 1]], "REFLECT"), x, grad_ys=dy)
    np.testing.assert_array_equal(g, [3.0, 2.0 + 4.0, 1.0 + 5.0 + 7.0, 6.0])
    (g,) = _grad(tf.pad(x, [[2, 1]], "SYMMETRIC"), x, grad_ys=dy)
    np.testing.assert_array_equal(g, [3.0 + 2.0, 4.0 + 1.0, 5.0, 6.0 + 7.0])


def test_tile_grad_with_unknown_shape():
    x = tf.placeholder(tf.float64, None)
    m = tf.placeholder(tf.int32, [None])
    g = tf.gradients(tf.tile(x, m), x)[0]
    with tf.Session() as sess:
        out = sess.run(g, {x: np.ones((2, 3)), m: [2, 3]})
    np.testing.assert_array_equal(out, np.full((2, 3), 6.0))


def test_non_differentiable_inputs_get_none():
    x = tf.constant(x23)
    v = tf.constant(2.0, tf.float64)
    # TF passes the gradient through placeholder_with_default (to its default input).
    with tf.Session() as sess:
        g = tf.gradients(tf.placeholder_with_default(x, [2, 3]) * 2.0, x)[0]
        np.testing.assert_array_equal(sess.run(g), np.full((2, 3), 2.0))
    assert tf.gradients(tf.stop_gradient(x) * 2.0, x) == [None]
    assert tf.gradients(tf.zeros_like(x), x) == [None]
    assert tf.gradients(tf.ones_like(x), x) == [None]
    assert tf.gradients(tf.one_hot([0, 1], 2, on_value=v, off_value=v - 1.0), v) == [None]
    padded = tf.pad(x, [[1, 1], [0, 0]], constant_values=v)
    assert tf.gradients(padded, [x, v])[1] is None
    for op_type in (
        "Shape",
        "Size",
        "Rank",
        "ZerosLike",
        "OnesLike",
        "Range",
        "Where",
        "OneHot",
        "StopGradient",
        "InvertPermutation",
        "Assert",
        "PyFunc",
    ):
        assert registry.gradient(op_type) is None, op_type


def test_int_inputs_get_no_gradient():
    x = tf.constant(x23)
    i = tf.constant([[1, 2, 3]], tf.int32)
    y = tf.concat([tf.cast(tf.tile(i, [2, 1]), tf.float64), x], 0)
    gx, gi = tf.gradients(y, [x, i])
    assert gi is None
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(gx), np.ones((2, 3)))


def test_gradient_graph_serializes():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float64, [None, None], name="x")
        p = tf.placeholder(tf.int32, [None], name="p")
        y = tf.gather(x[::-1, 1:], [0, 0], axis=1)
        y = tf.pad(tf.transpose(y, p), [[1, 0], [0, 1]], mode="REFLECT")
        grad = tf.identity(tf.gradients(y * y, x)[0], name="grad")
        types = {op.type for op in g.get_operations()}
        assert {"StridedSliceGrad", "GatherGrad", "MirrorPadGrad", "InvertPermutation"} <= types
    data = g.as_graph_def().to_bytes()
    feed_vals = {"x:0": rng.standard_normal((3, 4)), "p:0": [1, 0]}
    with tf.Session(graph=g) as sess:
        want = sess.run(grad, {g.get_tensor_by_name(k): v for k, v in feed_vals.items()})
    g2 = tf.Graph()
    with g2.as_default():
        tf.import_graph_def(data, name="")
        with tf.Session(graph=g2) as sess:
            got = sess.run("grad:0", feed_vals)
    np.testing.assert_array_equal(got, want)
