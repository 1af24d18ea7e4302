"""Array ops (squeeze ... broadcast_to, ``Tensor.__getitem__``) against numpy references.

Static shapes, op names and error texts were checked against TensorFlow 1.x (``tfo``).
"""

import numpy as np
import pytest

import engine as tf
from engine.ops import array, array_transform, slicing
from tests.engine.optable import Case, check_case

F = np.float32
I32 = np.int32
I64 = np.int64
rng = np.random.default_rng(0)
a23 = rng.standard_normal((2, 3)).astype(F)
a46 = rng.standard_normal((4, 6)).astype(F)
a234 = np.arange(24, dtype=F).reshape(2, 3, 4)
a121 = rng.standard_normal((1, 2, 1)).astype(F)
i23 = np.arange(6, dtype=I32).reshape(2, 3)
e03 = np.zeros((0, 3), F)
mask3 = np.array([True, False, True])
mask23 = np.array([[True, False, True], [False, True, True]])


def _split_at(x, cuts, axis):
    return np.split(x, cuts, axis)


CASES = [
    Case("identity_n", lambda a, b: tf.identity_n([a, b]), [a23, a121], lambda a, b: [a, b]),
    Case("identity_n_one", lambda a: tf.identity_n([a]), [a23], lambda a: [a]),
    # squeeze / expand_dims
    Case("squeeze_all", tf.squeeze, [a121], np.squeeze, [2]),
    Case("squeeze_axis", lambda x: tf.squeeze(x, [2]), [a121], lambda x: np.squeeze(x, 2), [1, 2]),
    Case(
        "squeeze_neg_axis_int",
        lambda x: tf.squeeze(x, axis=-3),
        [a121],
        lambda x: np.squeeze(x, 0),
        [2, 1],
    ),
    Case(
        "squeeze_dims_alias",
        lambda x: tf.squeeze(x, squeeze_dims=[0, 2]),
        [a121],
        lambda x: x.reshape(2),
        [2],
    ),
    Case(
        "squeeze_empty",
        lambda x: tf.squeeze(x, [1]),
        [np.zeros((0, 1, 3), F)],
        lambda x: x.reshape(0, 3),
        [0, 3],
    ),
    Case("expand_dims_0", lambda x: tf.expand_dims(x, 0), [a23], lambda x: x[None], [1, 2, 3]),
    Case(
        "expand_dims_neg", lambda x: tf.expand_dims(x, -1), [a23], lambda x: x[..., None], [2, 3, 1]
    ),
    Case(
        "expand_dims_dim_alias",
        lambda x: tf.expand_dims(x, dim=1),
        [i23],
        lambda x: x[:, None],
        [2, 1, 3],
    ),
    Case(
        "expand_dims_fed_axis",
        tf.expand_dims,
        [a23, I32(-2)],
        lambda x, d: np.expand_dims(x, -2),
        [2, 1, 3],
    ),
    Case("expand_dims_scalar", lambda x: tf.expand_dims(x, 0), [F(3)], lambda x: x[None], [1]),
    # transpose
    Case("transpose_default", tf.transpose, [a234], np.transpose, [4, 3, 2]),
    Case(
        "transpose_perm",
        lambda x: tf.transpose(x, [1, 0, 2]),
        [a234],
        lambda x: x.transpose(1, 0, 2),
        [3, 2, 4],
    ),
    Case(
        "transpose_fed_perm",
        tf.transpose,
        [a234, np.array([2, 0, 1], I32)],
        lambda x, p: x.transpose(p),
        [4, 2, 3],
    ),
    Case("transpose_empty", tf.transpose, [e03], np.transpose, [3, 0]),
    Case(
        "transpose_int64_perm",
        lambda x: tf.transpose(x, np.array([1, 0], I64)),
        [i23],
        np.transpose,
        [3, 2],
    ),
    # concat
    Case(
        "concat_axis0",
        lambda x, y: tf.concat([x, y], 0),
        [a23, a23 * 2],
        lambda x, y: np.concatenate([x, y], 0),
        [4, 3],
    ),
    Case(
        "concat_axis1_three",
        lambda x, y: tf.concat([x, y, x], 1),
        [a23, a23 * 2],
        lambda x, y: np.concatenate([x, y, x], 1),
        [2, 9],
    ),
    Case(
        "concat_neg_axis",
        lambda x, y: tf.concat([x, y], -1),
        [a23, i23.astype(F)],
        lambda x, y: np.concatenate([x, y], -1),
        [2, 6],
    ),
    Case(
        "concat_empty",
        lambda x, y: tf.concat([x, y], 0),
        [e03, a23],
        lambda x, y: np.concatenate([x, y], 0),
        [2, 3],
    ),
    Case(
        "concat_int",
        lambda x: tf.concat([x, [[7, 8, 9]]], 0),
        [i23],
        lambda x: np.concatenate([x, np.array([[7, 8, 9]], I32)], 0),
        [3, 3],
    ),
    Case(
        "concat_fed_axis",
        lambda x, y, ax: tf.concat([x, y], ax),
        [a23, a23, I32(1)],
        lambda x, y, ax: np.concatenate([x, y], 1),
        [2, 6],
    ),
    Case("concat_single", lambda x: tf.concat([x], 0), [a23], lambda x: x, [2, 3]),
    # unstack (multi-output)
    Case(
        "unstack_axis0", lambda x: tf.unstack(x, num=2), [a23], lambda x: [x[0], x[1]], [[3], [3]]
    ),
    Case(
        "unstack_axis1",
        lambda x: tf.unstack(x, num=3, axis=1),
        [a23],
        lambda x: [x[:, i] for i in range(3)],
        [[2]] * 3,
    ),
    Case(
        "unstack_neg_axis_inferred",
        lambda x: tf.unstack(x, axis=-1),
        [a234],
        lambda x: [x[..., i] for i in range(4)],
        [[2, 3]] * 4,
        feed=False,
    ),
    Case("unstack_single", lambda x: tf.unstack(x, num=1), [a121], lambda x: [x[0]], [2, 1]),
    Case("unstack_empty", tf.unstack, [e03], lambda x: [], feed=False),
    # split (multi-output)
    Case(
        "split_num",
        lambda x: tf.split(x, 2, 1),
        [a46],
        lambda x: np.split(x, 2, 1),
        [[4, 3], [4, 3]],
    ),
    Case(
        "split_num_neg_axis",
        lambda x: tf.split(x, 3, -1),
        [a46],
        lambda x: np.split(x, 3, -1),
        [[4, 2]] * 3,
    ),
    Case(
        "split_sizes_minus_one",
        lambda x: tf.split(x, [1, -1, 2], 1),
        [a46],
        lambda x: _split_at(x, [1, 4], 1),
        [[4, 1], [4, 3], [4, 2]],
    ),
    Case(
        "split_size_tensor",
        lambda x, s: tf.split(x, s),
        [a46, np.array([3, 1], I32)],
        lambda x, s: _split_at(x, [3], 0),
        [[3, 6], [1, 6]],
        const_inputs=(1,),
    ),
    Case("split_one", lambda x: tf.split(x, 1, 0), [a23], lambda x: [x], [2, 3]),
    Case(
        "split_empty", lambda x: tf.split(x, 3, 1), [e03], lambda x: np.split(x, 3, 1), [[0, 1]] * 3
    ),
    Case(
        "split_zero_size",
        lambda x: tf.split(x, [0, 3], 1),
        [a23],
        lambda x: _split_at(x, [0], 1),
        [[2, 0], [2, 3]],
    ),
    # tile
    Case("tile", lambda x: tf.tile(x, [2, 1]), [a23], lambda x: np.tile(x, (2, 1)), [4, 3]),
    Case(
        "tile_fed_multiples",
        tf.tile,
        [i23, np.array([1, 3], I32)],
        lambda x, m: np.tile(x, m),
        [2, 9],
    ),
    Case("tile_zero", lambda x: tf.tile(x, [0, 2]), [a23], lambda x: np.tile(x, (0, 2)), [0, 6]),
    Case("tile_scalar", lambda x: tf.tile(x, np.zeros(0, I32)), [F(2)], lambda x: x, []),
    # slice
    Case("slice", lambda x: tf.slice(x, [1, 2], [2, 3]), [a46], lambda x: x[1:3, 2:5], [2, 3]),
    Case(
        "slice_to_end", lambda x: tf.slice(x, [1, 2], [-1, 2]), [a46], lambda x: x[1:, 2:4], [3, 2]
    ),
    Case(
        "slice_fed",
        tf.slice,
        [a46, np.array([0, 1], I32), np.array([2, -1], I32)],
        lambda x, b, s: x[0:2, 1:],
        [2, 5],
    ),
    Case("slice_empty", lambda x: tf.slice(x, [4, 0], [0, 6]), [a46], lambda x: x[4:4], [0, 6]),
    Case(
        "slice_int64",
        lambda x: tf.slice(x, np.array([1, 0], I64), np.array([1, 2], I64)),
        [i23],
        lambda x: x[1:2, 0:2],
        [1, 2],
    ),
    # strided_slice (explicit)
    Case(
        "strided_slice_basic",
        lambda x: tf.strided_slice(x, [0, 1], [2, 3], [1, 1]),
        [a234],
        lambda x: x[0:2, 1:3],
        [2, 2, 4],
    ),
    Case(
        "strided_slice_masks",
        lambda x: tf.strided_slice(
            x, [1, 0, 3], [0, 0, 0], [1, 1, -2], begin_mask=2, end_mask=6, shrink_axis_mask=1
        ),
        [a234],
        lambda x: x[1, :, 3::-2],
        [3, 2],
    ),
    Case(
        "strided_slice_ellipsis_newaxis",
        lambda x: tf.strided_slice(
            x, [0, 0, 1], [0, 0, 2], [1, 1, 1], ellipsis_mask=1, new_axis_mask=2
        ),
        [a234],
        lambda x: x[..., None, 1:2],
        [2, 3, 1, 1],
    ),
    Case(
        "strided_slice_fed",
        lambda x, b, e, s: tf.strided_slice(x, b, e, s),
        [a234, np.array([1, 2], I32), np.array([-3, 0], I32), np.array([-1, -1], I32)],
        lambda x, b, e, s: x[1:-3:-1, 2:0:-1],
        [2, 2, 4],
    ),
    Case(
        "strided_slice_default_strides",
        lambda x: tf.strided_slice(x, [1], [2]),
        [a234],
        lambda x: x[1:2],
        [1, 3, 4],
    ),
    # __getitem__
    Case("getitem_int", lambda x: x[1], [a234], lambda x: x[1], [3, 4]),
    Case("getitem_neg_int", lambda x: x[-1, -2], [a234], lambda x: x[-1, -2], [4]),
    Case(
        "getitem_slices_steps",
        lambda x: x[::-1, 1:, ::2],
        [a234],
        lambda x: x[::-1, 1:, ::2],
        [2, 2, 2],
    ),
    Case(
        "getitem_ellipsis_newaxis",
        lambda x: x[None, ..., tf.newaxis, 1],
        [a234],
        lambda x: x[None, ..., None, 1],
        [1, 2, 3, 1],
    ),
    Case(
        "getitem_tensor_index",
        lambda x, i: x[i, ..., i:],
        [a234, I32(1)],
        lambda x, i: x[1, ..., 1:],
        [3, 3],
    ),
    Case(
        "getitem_int64_tensor_index",
        lambda x, i: x[:, i],
        [a234, I64(-1)],
        lambda x, i: x[:, -1],
        [2, 4],
    ),
    Case("getitem_empty_range", lambda x: x[2:1], [a234], lambda x: x[2:1], [0, 3, 4]),
    Case(
        "getitem_out_of_range_slice",
        lambda x: x[:, -10:10:2],
        [a234],
        lambda x: x[:, -10:10:2],
        [2, 2, 4],
    ),
    Case("getitem_bool_mask", lambda x: x[mask23], [a234], lambda x: x[mask23], [None, 4]),
    Case("getitem_scalar_unchanged", lambda x: x[...], [F(5)], lambda x: x[...], []),
    # gather
    Case(
        "gather_axis0",
        lambda p, i: tf.gather(p, i),
        [a46, np.array([3, 0, 3], I32)],
        lambda p, i: p[i],
        [3, 6],
    ),
    Case(
        "gather_axis1_2d",
        lambda p, i: tf.gather(p, i, axis=1),
        [a46, np.array([[1, 2], [5, 0]], I64)],
        lambda p, i: np.take(p, i, axis=1),
        [4, 2, 2],
    ),
    Case(
        "gather_neg_axis_scalar",
        lambda p: tf.gather(p, 2, axis=-1),
        [a234],
        lambda p: p[..., 2],
        [2, 3],
    ),
    Case(
        "gather_empty",
        lambda p, i: tf.gather(p, i),
        [a46, np.zeros(0, I32)],
        lambda p, i: p[i],
        [0, 6],
    ),
    Case(
        "gather_batch_dims",
        lambda p, i: tf.gather(p, i, axis=1, batch_dims=1),
        [a234, np.array([[2, 0], [1, 1]], I32)],
        lambda p, i: np.stack([p[0][i[0]], p[1][i[1]]]),
        [2, 2, 4],
        feed=False,
    ),
    Case(
        "gather_fed_axis",
        lambda p, i, ax: tf.gather(p, i, axis=ax),
        [i23, np.array([2, 2], I32), I32(1)],
        lambda p, i, ax: p[:, i],
        [2, 2],
    ),
    # one_hot
    Case(
        "one_hot",
        lambda i: tf.one_hot(i, 4),
        [np.array([0, 3, 1], I32)],
        lambda i: np.eye(4, dtype=F)[i],
        [3, 4],
    ),
    Case(
        "one_hot_out_of_range",
        lambda i: tf.one_hot(i, 3),
        [np.array([-1, 3, 2], I64)],
        lambda i: np.array([[0, 0, 0], [0, 0, 0], [0, 0, 1]], F),
        [3, 3],
    ),
    Case(
        "one_hot_axis0_values",
        lambda i: tf.one_hot(i, 3, on_value=5, off_value=-1, axis=0),
        [np.array([2, 0], I32)],
        lambda i: np.where(np.eye(3, dtype=bool)[i].T, 5, -1).astype(I32),
        [3, 2],
    ),
    Case(
        "one_hot_2d_axis1_dtype",
        lambda i: tf.one_hot(i, 2, axis=1, dtype=tf.float64),
        [np.array([[0, 1, 1], [1, 0, 5]], I32)],
        lambda i: np.moveaxis(np.eye(2)[np.clip(i, 0, 1)] * (i < 2)[..., None], -1, 1),
        [2, 2, 3],
    ),
    Case(
        "one_hot_empty",
        lambda i: tf.one_hot(i, 3),
        [np.zeros(0, I32)],
        lambda i: np.zeros((0, 3), F),
        [0, 3],
    ),
    # pad
    Case(
        "pad_constant",
        lambda x: tf.pad(x, [[1, 0], [2, 1]]),
        [a23],
        lambda x: np.pad(x, [[1, 0], [2, 1]]),
        [3, 6],
    ),
    Case(
        "pad_constant_values",
        lambda x: tf.pad(x, [[0, 1], [1, 1]], constant_values=7),
        [i23],
        lambda x: np.pad(x, [[0, 1], [1, 1]], constant_values=7),
        [3, 5],
    ),
    Case(
        "pad_reflect",
        lambda x: tf.pad(x, [[1, 1], [2, 2]], "REFLECT"),
        [a23],
        lambda x: np.pad(x, [[1, 1], [2, 2]], mode="reflect"),
        [4, 7],
    ),
    Case(
        "pad_symmetric_lowercase",
        lambda x: tf.pad(x, [[2, 0], [0, 3]], mode="symmetric"),
        [a23],
        lambda x: np.pad(x, [[2, 0], [0, 3]], mode="symmetric"),
        [4, 6],
    ),
    Case(
        "pad_fed_paddings",
        tf.pad,
        [a23, np.array([[0, 0], [1, 2]], I32)],
        lambda x, p: np.pad(x, p),
        [2, 6],
    ),
    Case(
        "pad_empty",
        lambda x: tf.pad(x, [[1, 1], [0, 0]]),
        [e03],
        lambda x: np.zeros((2, 3), F),
        [2, 3],
    ),
    # where (coordinates) and boolean_mask
    Case("where_indices_bool", tf.where_indices, [mask23], np.argwhere, [None, 2]),
    Case("where_one_arg_numeric", tf.where, [np.array([0, 2, 0, -1], I32)], np.argwhere, [None, 1]),
    Case("where_none_true", tf.where, [np.zeros((2, 2), bool)], np.argwhere, [None, 2]),
    Case(
        "boolean_mask_1d",
        tf.boolean_mask,
        [a23, np.array([False, True])],
        lambda x, m: x[m],
        [None, 3],
        const_inputs=(1,),
    ),
    Case(
        "boolean_mask_2d",
        tf.boolean_mask,
        [a234, mask23],
        lambda x, m: x[m],
        [None, 4],
        const_inputs=(1,),
    ),
    Case(
        "boolean_mask_axis1",
        lambda x, m: tf.boolean_mask(x, m, axis=1),
        [a234, mask3],
        lambda x, m: x[:, m],
        [2, None, 4],
        const_inputs=(1,),
    ),
    Case(
        "boolean_mask_all_false",
        tf.boolean_mask,
        [a23, np.zeros(2, bool)],
        lambda x, m: x[m],
        [None, 3],
        const_inputs=(1,),
    ),
    # reverse / broadcast_to
    Case("reverse_axis0", lambda x: tf.reverse(x, [0]), [a23], lambda x: x[::-1], [2, 3]),
    Case(
        "reverse_neg_and_multi",
        lambda x: tf.reverse(x, [-1, 0]),
        [a234],
        lambda x: x[::-1, :, ::-1],
        [2, 3, 4],
    ),
    Case("reverse_none", lambda x: tf.reverse(x, np.zeros(0, I32)), [i23], lambda x: x, [2, 3]),
    Case("reverse_fed_axis", tf.reverse, [a234, np.array([1], I64)], lambda x, a: x[:, ::-1]),
    Case(
        "broadcast_to",
        lambda x: tf.broadcast_to(x, [2, 3]),
        [a23[0]],
        lambda x: np.broadcast_to(x, (2, 3)),
        [2, 3],
    ),
    Case(
        "broadcast_to_rank_up",
        lambda x: tf.broadcast_to(x, [2, 2, 3]),
        [a23[:1]],
        lambda x: np.broadcast_to(x, (2, 2, 3)),
        [2, 2, 3],
    ),
    Case(
        "broadcast_to_scalar_empty",
        lambda x: tf.broadcast_to(x, [0, 2]),
        [I32(4)],
        lambda x: np.zeros((0, 2), I32),
        [0, 2],
    ),
    Case(
        "broadcast_to_fed_shape",
        tf.broadcast_to,
        [i23, np.array([3, 2, 3], I32)],
        lambda x, s: np.broadcast_to(x, s),
        [3, 2, 3],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_array_op(case):
    check_case(case)


def test_every_public_name_is_exported():
    """The array families each export their own names; the ``engine`` namespace all."""
    array_ops_of = {n: m for m in (array, array_transform, slicing) for n in m.__all__}
    public = array.__all__ + array_transform.__all__ + slicing.__all__
    for name in public:
        assert getattr(tf, name) is getattr(array_ops_of[name], name), name
    assert tf.newaxis is None
    for name in [
        "squeeze",
        "expand_dims",
        "transpose",
        "concat",
        "unstack",
        "split",
        "tile",
        "slice",
        "strided_slice",
        "gather",
        "one_hot",
        "pad",
        "where_indices",
        "boolean_mask",
        "reverse",
        "broadcast_to",
        "newaxis",
    ]:
        assert name in public


# -----------------------------------------------------------------------------------------
# Static shapes with unknown dims and unknown rank (expected values from TF 1.x)
# -----------------------------------------------------------------------------------------


def _p(shape, dtype=tf.float32):
    return tf.placeholder(dtype, shape)


STATIC = [
    ("getitem_ellipsis", lambda: _p([None, 3])[..., 1:], [None, 2]),
    ("getitem_int", lambda: _p([None, 3])[1], [3]),
    ("getitem_newaxis", lambda: _p([None, 3])[:, None], [None, 1, 3]),
    ("getitem_reverse", lambda: _p([None, 3])[::-1], [None, 3]),
    ("getitem_unknown_rank", lambda: _p(None)[None, 1, ::2], None),
    ("getitem_mid_unknown", lambda: _p([None, 3, None])[1], [3, None]),
    ("getitem_shrink_range", lambda: _p([None, 3, None])[-1, 1:2, :], [1, None]),
    ("getitem_fed_index", lambda: _p([None, 3, None])[:, _p([], tf.int32)], [None, None]),
    ("getitem_fed_begin", lambda: _p([None, 3, None])[_p([], tf.int32) :], [None, 3, None]),
    ("getitem_fed_end", lambda: _p([None, 3, None])[:, 1 : _p([], tf.int32)], [None] * 3),
    ("getitem_newaxis_last", lambda: _p([None, 3, None])[..., None, 2], [None, 3, 1]),
    (
        "strided_fed_begin",
        lambda: tf.strided_slice(tf.zeros([2, 3, 4]), _p([2], tf.int32), [1, 2]),
        [None, None, 4],
    ),
    (
        "strided_fed_masked",
        lambda: tf.strided_slice(
            tf.zeros([2, 3, 4]),
            _p([2], tf.int32),
            _p([2], tf.int32),
            [-1, 1],
            begin_mask=3,
            end_mask=3,
        ),
        [2, 3, 4],
    ),
    (
        "strided_fed_strides",
        lambda: tf.strided_slice(tf.zeros([2, 3, 4]), [0, 0], [1, 2], _p([2], tf.int32)),
        None,
    ),
    ("squeeze_unknown_dim", lambda: tf.squeeze(_p([None, 2, 1])), None),
    ("squeeze_axis_unknown_dim", lambda: tf.squeeze(_p([None, 2, 1]), [2]), [None, 2]),
    ("expand_dims_fed_axis", lambda: tf.expand_dims(tf.zeros([2, 3]), _p([], tf.int32)), None),
    ("expand_dims_unknown_rank", lambda: tf.expand_dims(_p(None), 0), None),
    ("transpose_unknown_rank", lambda: tf.transpose(_p(None)), None),
    ("transpose_fed_perm", lambda: tf.transpose(_p([None, 3]), _p([2], tf.int32)), [None, None]),
    ("transpose_unknown_dim", lambda: tf.transpose(_p([None, 3])), [3, None]),
    ("concat_unknown_dim", lambda: tf.concat([tf.zeros([2, 3]), _p([None, 3])], 0), [None, 3]),
    ("concat_unknown_rank", lambda: tf.concat([_p(None), _p([None, 3])], -1), [None, None]),
    ("concat_all_unknown", lambda: tf.concat([_p(None), _p(None)], 0), None),
    (
        "concat_fed_axis",
        lambda: tf.concat([tf.zeros([2, 3]), _p([None, 3])], _p([], tf.int32)),
        [None, None],
    ),
    ("concat_sums", lambda: tf.concat([_p([2, None]), _p([None, 3])], 1), [2, None]),
    ("unstack_unknown_dim", lambda: tf.unstack(_p([None, 2]), axis=-1)[1], [None]),
    ("unstack_unknown_rank", lambda: tf.unstack(_p(None), num=2)[0], None),
    ("split_unknown_dim", lambda: tf.split(_p([None, 6]), 3, 1)[0], [None, 2]),
    ("split_v_unknown_dim", lambda: tf.split(_p([None, 6]), [1, -1])[1], [None, 6]),
    (
        "split_v_fed_sizes",
        lambda: tf.split(tf.zeros([4, 6]), _p([None], tf.int32), 1, num=2)[0],
        [4, None],
    ),
    ("split_fed_axis", lambda: tf.split(tf.zeros([4, 6]), 2, _p([], tf.int32))[0], [None, None]),
    ("tile_unknown_dim", lambda: tf.tile(_p([None, 3]), [2, 2]), [None, 6]),
    ("tile_unknown_rank", lambda: tf.tile(_p(None), [2, 2]), [None, None]),
    ("tile_fed_multiples", lambda: tf.tile(tf.zeros([2, 3]), _p([2], tf.int32)), [None, None]),
    ("slice_unknown_dim", lambda: tf.slice(_p([None, 6]), [1, 2], [-1, 3]), [None, 3]),
    ("slice_fed_begin", lambda: tf.slice(_p([None, 6]), _p([2], tf.int32), [2, -1]), [2, None]),
    ("slice_unknown_rank", lambda: tf.slice(_p(None), [1, 2], [3, 4]), [3, 4]),
    ("slice_fed_size", lambda: tf.slice(tf.zeros([3, 3]), [1, 1], _p([2], tf.int32)), [None, None]),
    ("gather_unknown", lambda: tf.gather(_p([None, 6]), _p([None], tf.int32)), [None, 6]),
    (
        "gather_fed_axis",
        lambda: tf.gather(tf.zeros([4, 6]), [1], axis=_p([], tf.int32)),
        [None, None],
    ),
    (
        "gather_batch_dims",
        lambda: tf.gather(tf.zeros([2, 4, 6]), [[1], [2]], axis=1, batch_dims=1),
        [2, 1, 6],
    ),
    ("one_hot_unknown", lambda: tf.one_hot(_p([None, None], tf.int64), 3, axis=1), [None, 3, None]),
    ("one_hot_fed_depth", lambda: tf.one_hot([1, 2], _p([], tf.int32)), [2, None]),
    ("pad_unknown_dim", lambda: tf.pad(_p([None, 3]), [[1, 1], [0, 2]], "reflect"), [None, 5]),
    (
        "pad_unknown_rank",
        lambda: tf.pad(_p(None), [[1, 1], [0, 2]], constant_values=3.0),
        [None, None],
    ),
    ("pad_fed_paddings", lambda: tf.pad(tf.zeros([2, 3]), _p([None, 2], tf.int32)), [None, None]),
    ("where_unknown_rank", lambda: tf.where(_p(None, tf.bool)), [None, None]),
    ("where_scalar", lambda: tf.where(tf.constant(True)), [None, 0]),
    (
        "boolean_mask_unknown",
        lambda: tf.boolean_mask(_p([None, 3, 4]), _p([None], tf.bool)),
        [None, 3, 4],
    ),
    ("reverse_unknown_rank", lambda: tf.reverse(_p(None), [0]), None),
    ("reverse_fed_axis", lambda: tf.reverse(_p([None, 3]), _p([1], tf.int32)), [None, 3]),
    ("broadcast_unknown_input", lambda: tf.broadcast_to(_p([None]), [2, 3]), [2, 3]),
    (
        "broadcast_fed_shape",
        lambda: tf.broadcast_to(tf.zeros([1, 3]), _p([3], tf.int32)),
        [None, None, 3],
    ),
    ("broadcast_unknown_rank", lambda: tf.broadcast_to(_p(None), [2, 3]), [2, 3]),
]


@pytest.mark.parametrize("build,want", [s[1:] for s in STATIC], ids=[s[0] for s in STATIC])
def test_static_shape(build, want):
    t = build()
    if want is None:
        assert t.shape.rank is None, t.shape
    else:
        assert t.shape.as_list() == want


# -----------------------------------------------------------------------------------------
# __getitem__ against numpy indexing
# -----------------------------------------------------------------------------------------


GETITEM_SPECS = [
    0,
    1,
    -1,
    -2,
    slice(1, None),
    slice(None, 1),
    slice(None, None, 2),
    slice(None, None, -1),
    slice(-1, 0, -1),
    slice(10, -10, -2),
    slice(5, None),
    slice(1, 1),
    slice(-10, 10),
    Ellipsis,
    None,
    (),
    (Ellipsis, 1),
    (1, Ellipsis, 2),
    (None,),
    (slice(None), None),
    (slice(None), None, Ellipsis, None),
    (1, slice(None, None, -2)),
    (-1, -1, -1),
    (Ellipsis, None, 2),
    (0, slice(1, 3), slice(None, None, -1)),
    (slice(-2, None), Ellipsis),
    (None, Ellipsis, None),
    (slice(None, None, -2), 2, slice(1, -1)),
    (1, None, 2, None, 3),
    (slice(2, 0, -1), Ellipsis, slice(3, None, -3)),
]


@pytest.mark.parametrize("spec", GETITEM_SPECS, ids=repr)
def test_getitem_matches_numpy(spec):
    x = np.arange(24, dtype=I32).reshape(2, 3, 4)
    want = x[spec]
    c = tf.constant(x)
    p = tf.placeholder(tf.int32, [None, None, None])
    r = tf.placeholder(tf.int32)
    got_c, got_p, got_r = c[spec], p[spec], r[spec]
    assert got_c.shape.as_list() == list(want.shape)
    assert got_p.shape.is_compatible_with(want.shape)
    assert got_p.shape.rank == want.ndim
    assert got_r.shape.rank is None
    assert got_c.op.name.startswith("strided_slice") and got_c.op.type == "StridedSlice"
    with tf.Session() as sess:
        vc, vp, vr = sess.run([got_c, got_p, got_r], {p: x, r: x})
    for v in (vc, vp, vr):
        np.testing.assert_array_equal(v, want)
        assert np.asarray(v).dtype == np.int32


@pytest.mark.parametrize(
    "spec",
    [
        lambda i, j: (i,),
        lambda i, j: (slice(i, None),),
        lambda i, j: (slice(None, j, -1),),
        lambda i, j: (Ellipsis, i),
        lambda i, j: (i, slice(None), j),
        lambda i, j: (slice(i, j),),
        lambda i, j: (slice(None), slice(None, None, j)),
    ],
    ids=["int", "begin", "end_neg_step", "ellipsis_int", "int_slice_int", "range", "step"],
)
@pytest.mark.parametrize("vals", [(1, -1), (-2, 3), (0, 2)])
def test_getitem_tensor_indices(spec, vals):
    x = np.arange(24, dtype=F).reshape(2, 3, 4)
    i, j = tf.placeholder(tf.int32, []), tf.placeholder(tf.int64, [])
    ci, cj = tf.constant(vals[0]), tf.constant(vals[1], tf.int64)
    want = x[spec(*vals)]
    fed = tf.constant(x)[spec(i, j)]
    const = tf.constant(x)[spec(ci, cj)]
    assert const.shape.as_list() == list(want.shape)
    assert fed.shape.is_compatible_with(want.shape)
    with tf.Session() as sess:
        got_fed, got_const = sess.run([fed, const], {i: vals[0], j: vals[1]})
    np.testing.assert_array_equal(got_fed, want)
    np.testing.assert_array_equal(got_const, want)


def test_getitem_list_is_a_tuple_of_indices():
    # TF treats a Python list like a tuple of indices (not numpy's fancy indexing).
    x = np.arange(24, dtype=F).reshape(2, 3, 4)
    t = tf.constant(x)[[1, 2]]
    assert t.shape.as_list() == [4]
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(t), x[1, 2])


def test_getitem_numpy_scalars_and_variables():
    x = np.arange(6, dtype=F).reshape(2, 3)
    v = tf.Variable(x)
    t = tf.constant(x)[np.int64(1), np.int32(-1)]
    w = v[1, ::-1]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got_t, got_w = sess.run([t, w])
    assert got_t == x[1, -1]
    np.testing.assert_array_equal(got_w, x[1, ::-1])


def test_getitem_op_names_match_tf():
    x = tf.placeholder(tf.float32, [None, 3])
    x[..., 1:]
    x[1]
    x[tf.constant(1)]
    names = [o.name for o in tf.get_default_graph().get_operations()]
    assert names[:5] == [
        "Placeholder",
        "strided_slice/stack",
        "strided_slice/stack_1",
        "strided_slice/stack_2",
        "strided_slice",
    ]
    assert "strided_slice_1" in names and "strided_slice_2" in names
    g = tf.get_default_graph()
    assert g.get_operation_by_name("strided_slice_2/stack").type == "Pack"
    ss = g.get_operation_by_name("strided_slice")
    assert ss.get_attr("begin_mask") == 0 and ss.get_attr("end_mask") == 2
    assert ss.get_attr("ellipsis_mask") == 1


def test_getitem_results_are_independent_of_feeds():
    x = np.arange(6, dtype=F).reshape(2, 3)
    p = tf.placeholder(tf.float32, [2, 3])
    with tf.Session() as sess:
        got = sess.run(p[0], {p: x})
    got[0] = 100.0
    assert x[0, 0] == 0.0


# -----------------------------------------------------------------------------------------
# Op names and wrappers
# -----------------------------------------------------------------------------------------


def test_default_op_names_and_types():
    z = tf.zeros([2, 3])
    built = [
        (tf.squeeze(tf.zeros([1, 3])), "Squeeze", "Squeeze"),
        (tf.expand_dims(z, 0), "ExpandDims", "ExpandDims"),
        (tf.transpose(z), "transpose", "Transpose"),
        (tf.concat([z, z], 0), "concat", "ConcatV2"),
        (tf.unstack(z)[0], "unstack", "Unpack"),
        (tf.split(z, 3, 1)[0], "split", "Split"),
        (tf.split(z, [1, 2], 1)[0], "split_1", "SplitV"),
        (tf.tile(z, [1, 2]), "Tile", "Tile"),
        (tf.slice(z, [0, 0], [1, 1]), "Slice", "Slice"),
        (tf.strided_slice(z, [0], [1]), "StridedSlice", "StridedSlice"),
        (tf.gather(z, [0]), "GatherV2", "GatherV2"),
        (tf.one_hot([1], 2), "one_hot", "OneHot"),
        (tf.pad(z, [[1, 1], [0, 0]]), "Pad", "Pad"),
        (tf.pad(z, [[1, 1], [0, 0]], constant_values=1.0), "PadV2", "PadV2"),
        (tf.pad(z, [[1, 1], [0, 0]], "REFLECT"), "MirrorPad", "MirrorPad"),
        (tf.where(z > 0), "Where", "Where"),
        (tf.boolean_mask(z, [True, False]), "boolean_mask/GatherV2", "GatherV2"),
        (tf.reverse(z, [0]), "ReverseV2", "ReverseV2"),
        (tf.broadcast_to(z, [2, 2, 3]), "BroadcastTo", "BroadcastTo"),
        (tf.concat([z], 0), "concat_1/concat", "Identity"),
    ]
    for t, name, op_type in built:
        assert (t.op.name, t.op.type) == (name, op_type)
    assert tf.get_default_graph().get_operation_by_name("Pad/paddings").type == "Const"
    assert tf.get_default_graph().get_operation_by_name("MirrorPad").get_attr("mode") == "REFLECT"
    with tf.name_scope("outer"):
        assert tf.concat([z, z], 1, name="joined").op.name == "outer/joined"


def test_split_and_unstack_return_lists():
    parts = tf.split(tf.constant(np.arange(6, dtype=F)), [2, -1])
    rows = tf.unstack(tf.constant(np.arange(6, dtype=F).reshape(3, 2)))
    assert isinstance(parts, list) and isinstance(rows, list)
    assert [p.name for p in parts] == ["split:0", "split:1"]
    with tf.Session() as sess:
        p0, p1, r2 = sess.run([parts[0], parts[1], rows[2]])
    np.testing.assert_array_equal(p0, [0, 1])
    np.testing.assert_array_equal(p1, [2, 3, 4, 5])
    np.testing.assert_array_equal(r2, [4, 5])


def test_one_hot_dtype_rules():
    assert tf.one_hot([1], 2).dtype == tf.float32
    assert tf.one_hot([1], 2, on_value=3).dtype == tf.int32
    assert tf.one_hot([1], 2, off_value=np.float64(0)).dtype == tf.float64
    assert tf.one_hot([1], 2, dtype=tf.int64).dtype == tf.int64
    with pytest.raises(TypeError, match="of on_value does not match dtype <dtype: 'int32'> of"):
        tf.one_hot([1, 2], 3, on_value=1.0, off_value=0)
    with pytest.raises(TypeError, match="does not match dtype parameter"):
        tf.one_hot([1, 2], 3, on_value=1.0, dtype=tf.int32)


def test_fills_of_another_dtype_with_a_shape_known_only_at_run_time():
    """``ones_like(x, dtype=tf.bool)`` of an unknown shape (a Fill of the converted value)
    and ``ones(shape_tensor, dtype)`` fill with the dtype's one/zero, as TF does; a Python 1
    was refused as a bool constant."""
    x = tf.placeholder(tf.float32, [None, 2])
    anything = tf.placeholder(tf.float32)
    n = tf.placeholder(tf.int32, [1])
    fetch = [
        tf.ones_like(x, dtype=tf.bool),
        tf.zeros_like(anything, dtype=tf.bool),
        tf.ones(n, tf.bool),
        tf.ones(n, tf.int64),
        tf.zeros(n, tf.string),
    ]
    with tf.Session() as sess:
        got = sess.run(fetch, {x: [[1.0, 2.0]], anything: [[1.0], [2.0]], n: [3]})
    assert got[0].tolist() == [[True, True]] and got[0].dtype == np.bool_
    assert got[1].tolist() == [[False], [False]]
    assert got[2].tolist() == [True] * 3 and got[3].tolist() == [1, 1, 1]
    assert got[3].dtype == np.int64 and got[4].tolist() == [b""] * 3
