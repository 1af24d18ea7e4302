"""Array ops' errors (split from ``test_array_ops.py``): what is refused when a graph is
built, and what fails when it runs, with TensorFlow 1.x's messages (checked with ``tfo``).
"""

import numpy as np
import pytest

import engine as tf
from engine import errors

F = np.float32
I32 = np.int32
I64 = np.int64

# -----------------------------------------------------------------------------------------
# Build-time errors
# -----------------------------------------------------------------------------------------


def _z(*shape):
    return tf.zeros(list(shape))


def _p(shape, dtype=tf.float32):
    return tf.placeholder(dtype, shape)


BUILD_ERRORS = [
    (
        "squeeze_not_one",
        lambda: tf.squeeze(_z(1, 2, 1), [1]),
        ValueError,
        r"Can not squeeze dim\[1\], expected a dimension of 1, got 2 for 'Squeeze' "
        r"\(op: 'Squeeze'\) with input shapes: \[1,2,1\]",
    ),
    (
        "squeeze_bad_axis",
        lambda: tf.squeeze(_z(1, 2, 1), [3]),
        ValueError,
        r"squeeze_dims\[0\] not in \[-3,3\)",
    ),
    (
        "squeeze_both_axes",
        lambda: tf.squeeze(_z(1), axis=[0], squeeze_dims=[0]),
        ValueError,
        "Cannot specify both 'squeeze_dims' and 'axis'",
    ),
    (
        "expand_dims_bad_axis",
        lambda: tf.expand_dims(_z(2, 3), 3),
        ValueError,
        r"dim 3 not in the interval \[-3, 2\]",
    ),
    (
        "expand_dims_bad_neg_axis",
        lambda: tf.expand_dims(_z(2, 3), -4),
        ValueError,
        r"dim -4 not in the interval \[-3, 2\]",
    ),
    (
        "expand_dims_no_axis",
        lambda: tf.expand_dims(_z(2, 3)),
        ValueError,
        "Must specify an axis argument",
    ),
    (
        "expand_dims_vector_axis",
        lambda: tf.expand_dims(_z(2, 3), [1, 2]),
        ValueError,
        "'dim' input must be a tensor with a single value",
    ),
    (
        "transpose_perm_range",
        lambda: tf.transpose(_z(2, 3), [0, 2]),
        ValueError,
        "perm dim 2 is out of range of input rank 2 for 'transpose'",
    ),
    (
        "transpose_perm_length",
        lambda: tf.transpose(_z(2, 3), [0, 1, 2]),
        ValueError,
        "Dimension must be 2 but is 3",
    ),
    (
        "transpose_perm_rank",
        lambda: tf.transpose(_z(2, 3), [[0, 1]]),
        ValueError,
        "Shape must be rank 1 but is rank 2",
    ),
    ("transpose_perm_dtype", lambda: tf.transpose(_z(2, 3), [0.0, 1.0]), TypeError, "Tperm"),
    (
        "concat_dims",
        lambda: tf.concat([_z(2, 3), _z(3, 3)], 1),
        ValueError,
        r"Dimension 0 in both shapes must be equal, but are 2 and 3. Shapes are \[2\] and \[3\]"
        r". for 'concat' \(op: 'ConcatV2'\) with input shapes: \[2,3\], \[3,3\], \[\]",
    ),
    (
        "concat_suffix_dims",
        lambda: tf.concat([_z(2, 3), _z(2, 4)], 0),
        ValueError,
        r"Dimension 0 in both shapes must be equal, but are 3 and 4",
    ),
    (
        "concat_rank",
        lambda: tf.concat([_z(2, 3), _z(3)], 1),
        ValueError,
        "Shape must be rank 2 but is rank 1",
    ),
    (
        "concat_axis",
        lambda: tf.concat([_z(2, 3), _z(2, 3)], 2),
        ValueError,
        "Shape must be at least rank 3 but is rank 2",
    ),
    (
        "concat_neg_axis",
        lambda: tf.concat([_z(2, 3), _z(2, 3)], -3),
        ValueError,
        "Shape must be at least rank 3 but is rank 2",
    ),
    (
        "concat_scalars",
        lambda: tf.concat([_z(), _z()], 0),
        ValueError,
        r"Can't concatenate scalars \(use tf.stack instead\)",
    ),
    (
        "concat_dtypes",
        lambda: tf.concat([_z(2), tf.zeros([2], tf.int32)], 0),
        TypeError,
        r"have types \[float32, int32\] that don't all match",
    ),
    (
        "concat_axis_vector",
        lambda: tf.concat([_z(2), _z(2)], [0]),
        ValueError,
        "Shape must be rank 0 but is rank 1",
    ),
    (
        "unstack_num",
        lambda: tf.unstack(_p([None, 2])),
        ValueError,
        r"Cannot infer argument `num` from shape \(\?, 2\)",
    ),
    (
        "unstack_axis",
        lambda: tf.unstack(_z(2, 3), axis=2),
        ValueError,
        r"Argument `axis` = 2 not in range \[-2, 2\)",
    ),
    (
        "unstack_wrong_num",
        lambda: tf.unstack(_z(2, 3), num=3),
        ValueError,
        "Dimension must be 3 but is 2",
    ),
    (
        "unstack_op_axis",
        lambda: tf.unstack(_z(2, 3), num=2, axis=3),
        ValueError,
        r"Invalid axis: 3; must be in \[-2,2\)",
    ),
    (
        "split_uneven",
        lambda: tf.split(_z(4, 6), 4, 1),
        ValueError,
        "Dimension size must be evenly divisible by 4 but is 6",
    ),
    (
        "split_sizes_sum",
        lambda: tf.split(_z(4, 6), [1, 2], 1),
        ValueError,
        r"can't split axis of size 6 into pieces of size \[1,2\]",
    ),
    (
        "split_two_minus_one",
        lambda: tf.split(_z(4, 6), [1, -1, -1], 1),
        ValueError,
        "size_splits can only have one -1",
    ),
    (
        "split_negative_rest",
        lambda: tf.split(_z(4, 6), [7, -1], 1),
        ValueError,
        "Split size at index 1 must be >= 0. Got: -1",
    ),
    (
        "split_axis",
        lambda: tf.split(_z(4, 6), 2, 2),
        ValueError,
        r"Dimension size, given by scalar input 2 must be in range \[-2, 2\)",
    ),
    (
        "split_v_axis",
        lambda: tf.split(_z(4, 6), [2, 4], -3),
        ValueError,
        r"must be in range \[-2, 2\)",
    ),
    ("split_zero", lambda: tf.split(_z(4, 6), 0), ValueError, "less than minimum 1"),
    (
        "split_scalar_tensor",
        lambda: tf.split(_z(4, 6), tf.constant(2)),
        ValueError,
        "Rank-0 tensors are not supported",
    ),
    (
        "split_unknown_num",
        lambda: tf.split(_z(4, 6), _p([None], tf.int32)),
        ValueError,
        "Cannot infer argument `num`",
    ),
    (
        "tile_length",
        lambda: tf.tile(_z(2, 3), [2]),
        ValueError,
        "Shape must be rank 1 but is rank 2 for 'Tile'",
    ),
    (
        "slice_past_end",
        lambda: tf.slice(_z(4, 6), [5, 2], [-1, 2]),
        ValueError,
        "Negative dimension size caused by subtracting 5 from 4",
    ),
    (
        "slice_rank",
        lambda: tf.slice(_z(4, 6), [1], [1]),
        ValueError,
        "Shape must be rank 1 but is rank 2",
    ),
    (
        "slice_lengths",
        lambda: tf.slice(_z(3, 3), [1, 1], [2]),
        ValueError,
        "Dimension 0 in both shapes must be equal, but are 2 and 1",
    ),
    (
        "slice_bad_size",
        lambda: tf.slice(_z(4, 6), [1, 2], [-2, 2]),
        ValueError,
        "Invalid value in tensor used for shape: -2",
    ),
    (
        "strided_zero_stride",
        lambda: tf.strided_slice(_z(2, 3), [0], [1], [0]),
        ValueError,
        r"strides\[0\] must be non-zero",
    ),
    (
        "strided_lengths",
        lambda: tf.strided_slice(_z(2, 3), [0, 0], [1], [1]),
        ValueError,
        "Dimension 0 in both shapes must be equal, but are 2 and 1",
    ),
    (
        "strided_shrink_stride",
        lambda: tf.strided_slice(_z(2, 3), [0], [1], [-1], shrink_axis_mask=1),
        ValueError,
        "only stride 1 allowed on non-range indexing",
    ),
    (
        "getitem_out_of_bounds",
        lambda: _z(2, 3, 4)[3],
        ValueError,
        "slice index 3 of dimension 0 out of bounds. for 'strided_slice'",
    ),
    (
        "getitem_neg_out_of_bounds",
        lambda: _z(2, 3, 4)[:, -4],
        ValueError,
        "slice index -1 of dimension 1 out of bounds",
    ),
    (
        "getitem_too_many",
        lambda: _z(2, 3, 4)[0, 0, 0, 0],
        ValueError,
        "Index out of range using input dim 3; input has only 3 dims",
    ),
    (
        "getitem_two_ellipses",
        lambda: _z(2, 3, 4)[..., ...],
        ValueError,
        "Multiple ellipses in slice spec not allowed",
    ),
    ("getitem_zero_step", lambda: _z(2, 3, 4)[::0], ValueError, r"strides\[0\] must be non-zero"),
    (
        "getitem_str",
        lambda: _z(2, 3)["a"],
        TypeError,
        r"Only integers, slices \(`:`\), ellipsis \(`...`\), tf.newaxis \(`None`\) and scalar "
        r"tf.int32/tf.int64 tensors are valid indices, got 'a'",
    ),
    ("getitem_float", lambda: _z(2, 3)[1.0], TypeError, "are valid indices, got 1.0"),
    ("getitem_float_slice", lambda: _z(2, 3)[1.5:], TypeError, "are valid indices"),
    (
        "getitem_vector_tensor",
        lambda: _z(2, 3)[tf.constant([1, 2])],
        TypeError,
        "are valid indices",
    ),
    ("getitem_float_tensor", lambda: _z(2, 3)[tf.constant(1.0)], TypeError, "are valid indices"),
    ("getitem_bool_scalar", lambda: _z(2, 3)[True], ValueError, "mask cannot be scalar"),
    (
        "gather_axis",
        lambda: tf.gather(_z(4, 6), [1, 2], axis=2),
        ValueError,
        "Shape must be at least rank 3 but is rank 2 for 'GatherV2'",
    ),
    (
        "gather_neg_axis",
        lambda: tf.gather(_z(4, 6), [1, 2], axis=-3),
        ValueError,
        "Shape must be at least rank 3 but is rank 2",
    ),
    (
        "gather_float_indices",
        lambda: tf.gather(_z(4, 6), [1.0, 2.0]),
        TypeError,
        r"(?s)'Tindices' of float32 is not in .*\(input 'indices' of op 'GatherV2'\)",
    ),
    (
        "gather_batch_dims_mismatch",
        lambda: tf.gather(_z(3, 4, 6), [[1], [2]], axis=2, batch_dims=1),
        ValueError,
        "Dimension 0 in both shapes must be equal, but are 3 and 2",
    ),
    ("one_hot_axis", lambda: tf.one_hot([1, 2], 3, axis=-2), ValueError, "axis must be >= -1"),
    (
        "one_hot_axis_high",
        lambda: tf.one_hot([1, 2], 3, axis=2),
        ValueError,
        r"Expected axis to be -1 or between \[0, 2\).  But received: 2",
    ),
    ("one_hot_depth", lambda: tf.one_hot([1, 2], -1), ValueError, "must be non-negative but is -1"),
    ("one_hot_float_indices", lambda: tf.one_hot([1.0, 2.0], 3), TypeError, "TI"),
    (
        "pad_mode",
        lambda: tf.pad(_z(2, 3), [[1, 1], [0, 1]], "FOO"),
        ValueError,
        'Value of argument `mode` expected to be one of "CONSTANT", "REFLECT", or "SYMMETRIC". '
        "Received `mode` = FOO",
    ),
    (
        "pad_negative",
        lambda: tf.pad(_z(2, 3), [[1, 1], [0, -1]]),
        ValueError,
        "Paddings must be non-negative for 'Pad'",
    ),
    (
        "pad_rows",
        lambda: tf.pad(_z(2, 3), [[1, 1]]),
        ValueError,
        "Shape must be rank 1 but is rank 2",
    ),
    (
        "pad_columns",
        lambda: tf.pad(_z(2, 3), [[1, 1, 1], [0, 1, 1]]),
        ValueError,
        "Dimension must be 2 but is 3",
    ),
    (
        "pad_value_dtype",
        lambda: tf.pad(_z(2, 3), [[1, 1], [0, 1]], constant_values=tf.constant(1)),
        TypeError,
        "Input 'constant_values' of 'PadV2' Op has type int32 that does not match type float32 "
        "of argument 'input'",
    ),
    ("where_string", lambda: tf.where(tf.constant(["a"])), TypeError, "string"),
    (
        "boolean_mask_shape",
        lambda: tf.boolean_mask(_z(2, 3), [True, False, True]),
        ValueError,
        r"Shapes \(2,\) and \(3,\) are incompatible",
    ),
    (
        "boolean_mask_unknown_rank",
        lambda: tf.boolean_mask(_z(2), _p(None, tf.bool)),
        ValueError,
        "Number of mask dimensions must be specified",
    ),
    (
        "reverse_axis",
        lambda: tf.reverse(_z(2, 3), [2]),
        ValueError,
        r"'axis'\[0\] = 2 is out of valid range \[0, 1 for 'ReverseV2'",
    ),
    (
        "reverse_twice",
        lambda: tf.reverse(_z(2, 3), [0, -2]),
        ValueError,
        "axis 0 specified more than once.",
    ),
    (
        "reverse_scalar_axis",
        lambda: tf.reverse(_z(2, 3), 1),
        ValueError,
        "Shape must be rank 1 but is rank 0",
    ),
    (
        "broadcast_incompatible",
        lambda: tf.broadcast_to(_z(3), [2, 4]),
        ValueError,
        "Dimensions must be equal, but are 3 and 4 for 'BroadcastTo'",
    ),
    (
        "broadcast_rank",
        lambda: tf.broadcast_to(_z(2, 3), [3]),
        ValueError,
        "Shape must be at most rank 1 but is rank 2",
    ),
]


@pytest.mark.parametrize(
    "build,exc,match", [e[1:] for e in BUILD_ERRORS], ids=[e[0] for e in BUILD_ERRORS]
)
def test_build_time_error(build, exc, match):
    with pytest.raises(exc, match=match):
        build()


# -----------------------------------------------------------------------------------------
# Run-time errors
# -----------------------------------------------------------------------------------------


def test_gather_out_of_range_names_index_and_op():
    params = tf.constant(np.array([1, 2, 3], I32))
    g = tf.gather(params, [0, 7])
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError) as info:
            sess.run(g)
    assert "indices[1] = 7 is not in [0, 3)" in str(info.value)
    assert "GatherV2" in str(info.value)
    assert info.value.op is g.op


@pytest.mark.parametrize(
    "indices,msg",
    [
        (np.array([[0, 1], [-1, 2]], I32), "indices[1,0] = -1 is not in [0, 3)"),
        (np.array([[0, 7]], I64), "indices[0,1] = 7 is not in [0, 3)"),
        (np.array(3, I32), "indices = 3 is not in [0, 3)"),
    ],
)
def test_gather_out_of_range_fed(indices, msg):
    i = tf.placeholder(tf.as_dtype(indices.dtype), None)
    g = tf.gather(tf.constant([1.0, 2.0, 3.0]), i, name="lookup")
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError, match="lookup") as info:
            sess.run(g, {i: indices})
    assert msg in str(info.value)


def _run(t, feeds=None):
    with tf.Session() as sess:
        return sess.run(t, feeds)


def _fed(shape, dtype=tf.float32):
    return tf.placeholder(dtype, shape)


RUN_ERRORS = [
    (
        "getitem_fed_index",
        lambda: (lambda i: (tf.constant([1, 2, 3])[i], {i: 5}))(_fed([], tf.int32)),
        "slice index 5 of dimension 0 out of bounds.",
    ),
    (
        "getitem_unknown_dim",
        lambda: (lambda q: (q[2], {q: [1.0, 2.0]}))(_fed([None])),
        "slice index 2 of dimension 0 out of bounds.",
    ),
    (
        "strided_shrink_stride",
        lambda: (
            lambda q: (tf.strided_slice(q, [0], [1], [-1], shrink_axis_mask=1), {q: [1.0, 2.0]})
        )(_fed([None])),
        "only stride 1 allowed on non-range indexing.",
    ),
    (
        "transpose_duplicate",
        lambda: (tf.transpose(_z(2, 3), [0, 0]), None),
        "1 is missing from {0,0}.",
    ),
    (
        "transpose_fed_range",
        lambda: (lambda p: (tf.transpose(_z(2, 3), p), {p: [0, 2]}))(_fed([2], tf.int32)),
        "2 is out of range [0 .. 2)",
    ),
    (
        "tile_negative",
        lambda: (tf.tile(_z(2, 3), [2, -1]), None),
        "Expected multiples[1] >= 0, but got -1",
    ),
    (
        "tile_fed_length",
        lambda: (lambda m: (tf.tile(_z(2, 3), m), {m: [1]}))(_fed([None], tf.int32)),
        "Expected multiples argument to be a vector of length 2",
    ),
    (
        "slice_size",
        lambda: (tf.slice(_z(4, 6), [1, 2], [4, 2]), None),
        "Expected size[0] in [0, 3], but got 4",
    ),
    (
        "slice_begin",
        lambda: (tf.slice(_z(4, 6), [-1, 2], [1, 2]), None),
        "Expected begin[0] in [0, 4], but got -1",
    ),
    (
        "mirror_pad_reflect",
        lambda: (tf.pad(_z(2, 3), [[1, 1], [0, 3]], "REFLECT"), None),
        "paddings must be less than the dimension size: 0, 3 not less than 3",
    ),
    (
        "mirror_pad_symmetric",
        lambda: (tf.pad(_z(2, 3), [[1, 1], [0, 4]], "SYMMETRIC"), None),
        "paddings must be no greater than the dimension size: 0, 4 greater than 3",
    ),
    (
        "broadcast_fed",
        lambda: (lambda q: (tf.broadcast_to(q, [2, 3]), {q: [1.0, 2.0]}))(_fed([None])),
        "Incompatible shapes: [2] vs. [2,3]",
    ),
    (
        "one_hot_fed_depth",
        lambda: (lambda d: (tf.one_hot([1, 2], d), {d: -1}))(_fed([], tf.int32)),
        "depth must be non-negative, got: -1",
    ),
    (
        "reverse_fed_twice",
        lambda: (lambda a: (tf.reverse(_z(2, 3), a), {a: [0, 0]}))(_fed([2], tf.int32)),
        "axis 0 specified more than once.",
    ),
    (
        "reverse_fed_range",
        lambda: (lambda a: (tf.reverse(_z(2, 3), a), {a: [0, 2]}))(_fed([2], tf.int32)),
        "'axis'[1] = 2 is out of valid range [0, 1",
    ),
    (
        "expand_dims_fed",
        lambda: (lambda d: (tf.expand_dims(_z(2, 3), d), {d: 5}))(_fed([], tf.int32)),
        "Tried to expand dim index 5 for tensor with 2 dimensions.",
    ),
    (
        "squeeze_fed",
        lambda: (lambda q: (tf.squeeze(q, [0]), {q: [1.0, 2.0]}))(_fed(None)),
        "Can not squeeze dim[0], expected a dimension of 1, got 2",
    ),
    (
        "concat_fed_axis",
        lambda: (lambda a: (tf.concat([_z(2, 2), _z(2, 2)], a), {a: 3}))(_fed([], tf.int32)),
        "ConcatOp : Expected concatenating dimensions in the range [-2, 2), but got 3",
    ),
    (
        "concat_fed_shapes",
        lambda: (lambda q: (tf.concat([q, _z(2, 3)], 0), {q: np.zeros((2, 2), F)}))(
            _fed([None, None])
        ),
        "ConcatOp : Dimension 1 in both shapes must be "
        "equal: shape[0] = [2,2] vs. shape[1] = [2,3]",
    ),
    (
        "unstack_fed",
        lambda: (lambda q: (tf.unstack(q, 3), {q: [1.0, 2.0]}))(_fed([None])),
        "Input shape axis 0 must equal 3, got shape [2]",
    ),
    (
        "split_fed",
        lambda: (lambda q: (tf.split(q, 3), {q: [1.0, 2.0]}))(_fed([None])),
        "Number of ways to split should evenly divide the split dimension, but got split_dim 0 "
        "(size = 2) and num_split 3",
    ),
    (
        "split_v_fed",
        lambda: (lambda q: (tf.split(q, [1, 2]), {q: [1.0, 2.0]}))(_fed([None])),
        "Determined shape must either match input shape along split_dim exactly",
    ),
    (
        "gather_fed_axis",
        lambda: (lambda a: (tf.gather(tf.constant([1.0]), [0], axis=a), {a: 1}))(
            _fed([], tf.int32)
        ),
        "Shape must be at least rank 2 but is rank 1",
    ),
    (
        "where_scalar",
        lambda: (tf.where(tf.constant(True)), None),
        "WhereOp : Unhandled input dimensions: 0",
    ),
]


@pytest.mark.parametrize("build,msg", [e[1:] for e in RUN_ERRORS], ids=[e[0] for e in RUN_ERRORS])
def test_run_time_error(build, msg):
    t, feeds = build()
    t = t[0] if isinstance(t, list) else t
    with pytest.raises(errors.InvalidArgumentError) as info:
        _run(t, feeds)
    assert msg in str(info.value)
    assert t.op.name in str(info.value)


def test_gather_of_one_string_is_a_scalar_string():
    """A scalar index into a string vector: the element as a 0-d string (it was bytes, which
    the runtime refused), as for numbers."""
    with tf.Session() as sess:
        word, number = sess.run(
            [tf.gather(tf.constant(["p", "q"]), 1), tf.gather(tf.constant([1.0, 2.0]), 1)]
        )
    assert word == b"q" and number == 2.0
