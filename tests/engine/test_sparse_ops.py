"""The sparse API against TensorFlow: values (each sparse result as its three parts),
gradients, static shapes, errors and a trained model recorded by
``fixtures/make_sparse_fixtures.py`` from the same graphs (``build``); finite-difference
gradient cases and a GraphDef round-trip builder for every sparse op type."""

import collections

import numpy as np
import pytest

import engine as tf
from tests import fake_device
from tests.engine.fixtures.make_sparse_fixtures import (
    ERRORS,
    IND,
    IND3,
    SHAPE,
    SHAPE3,
    TABLE,
    VAL,
    VAL3,
    build,
    feeds,
    shape_code,
    train,
)
from tests.engine.fixtures.oracle import assert_recorded, assert_recorded_error, load
from tests.engine.optable import Case, check_gradient

TF = load("sparse_tf.npz")
VALUE_KEYS = sorted(
    k
    for k in TF.files
    if not k.startswith(("shape_", "error_", "tf_version", "train_", "graph_def_"))
)
GRAPH_DEF_KEYS = sorted(
    k[len("graph_def_name_") :] for k in TF.files if k.startswith("graph_def_name_")
)
SHAPE_KEYS = sorted(k[len("shape_") :] for k in TF.files if k.startswith("shape_"))
ERROR_KEYS = sorted(k[len("error_") :] for k in TF.files if k.startswith("error_"))


@pytest.fixture(scope="module")
def ours():
    g = tf.Graph()
    with g.as_default():
        fetch, shapes = build(tf)
        with tf.Session(graph=g) as sess:
            return sess.run(fetch, feeds(tf)), shapes


def test_the_fixture_records_its_tensorflow_version():
    assert str(TF["tf_version"]).count(".") == 2


def test_every_recorded_value_is_built():
    assert len(VALUE_KEYS) > 180 and len(SHAPE_KEYS) > 100 and len(ERROR_KEYS) >= 20


@pytest.mark.parametrize("key", VALUE_KEYS)
def test_values_match_tensorflow(ours, key):
    values, _ = ours
    assert_recorded(values[key], TF[key], key, rtol=2e-5, atol=1e-6)


# Sparse results whose dense shape the engine folds from constants where TF does not (the
# engine's constant_value runs any stateless kernel on constant inputs; TF's knows a fixed
# list of ops): the engine's static shape is of known rank, compatible with TF's and with the
# value's, and knows more.
MORE_SPECIFIC = {
    "add_hidden",
    "reduce_sparse_all",
    "reduce_sparse_axis02_keep",
    "reduce_sparse_axis1",
    "reduce_sparse_last",
    "reduce_sparse_old_names",
    "slice",
    "slice_2d",
    "slice_nothing",
    *(f"split_{k}_{i}" for k in ("3d", "last", "rows") for i in (0, 1)),
    *(f"split_uneven_{i}" for i in (0, 1, 2)),
}


def _decoded(code) -> tf.TensorShape:
    code = code.tolist()
    return (
        tf.TensorShape(None)
        if code == [-2]
        else tf.TensorShape([None if d < 0 else d for d in code])
    )


def test_values_match_tensorflow_placed_on_a_device():
    """Every graph again with a TEST device (a cupy stand-in, tests/fake_device.py): the
    kernels keep to their device's array module."""
    g = tf.Graph()
    with g.as_default():
        fetch, _ = build(tf)
        with fake_device.registered(1), tf.Session(graph=g) as sess:
            got = sess.run(fetch, feeds(tf))
    for key in VALUE_KEYS:
        assert_recorded(got[key], TF[key], key, rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("key", SHAPE_KEYS)
def test_static_shapes_match_tensorflow(ours, key):
    _, shapes = ours
    if key in MORE_SPECIFIC:
        theirs, mine = _decoded(TF[f"shape_{key}"]), shapes[key]
        actual = tf.TensorShape(TF[f"{key}_dense_shape"].tolist())
        assert mine.rank is not None and mine.is_compatible_with(actual), key
        assert theirs.is_compatible_with(mine) and not theirs.is_fully_defined(), key
        return
    np.testing.assert_array_equal(shape_code(shapes[key]), TF[f"shape_{key}"], err_msg=key)


@pytest.mark.parametrize("key", ERROR_KEYS)
def test_errors_match_tensorflow(key):
    assert_recorded_error(tf, TF, key, ERRORS[key])


def test_training_a_sparse_linear_model_matches_tensorflow():
    got = train(tf)
    losses = got["train_losses"]
    assert losses[-1] < losses[0] * 0.7
    for key in ("train_losses", "train_w", "train_bias"):
        np.testing.assert_allclose(got[key], TF[key], rtol=1e-5, atol=1e-6, err_msg=key)


def test_a_tensorflow_graph_def_of_every_sparse_op_imports_and_runs():
    """TF's own GraphDef (TF's op types, attrs and the sparse placeholder's three parts)."""
    g = tf.Graph()
    with g.as_default():
        names = [str(TF[f"graph_def_name_{k}"]) for k in GRAPH_DEF_KEYS]
        outs = tf.import_graph_def(TF["graph_def_bytes"].tobytes(), return_elements=names, name="")
        types = {op.type for op in g.get_operations()}
        with tf.Session() as sess:
            got = sess.run(outs, {"sp/indices:0": IND, "sp/values:0": VAL, "sp/shape:0": SHAPE})
    assert {"SparseAddGrad", "SparseFillEmptyRowsGrad", "SparseSliceGrad", "SparseSplit"} <= types
    assert len(GRAPH_DEF_KEYS) == 19
    for key, value in zip(GRAPH_DEF_KEYS, got):
        assert_recorded(value, TF[f"graph_def_{key}"], key, rtol=2e-5, atol=1e-6)


# -- SparseTensor, SparseTensorValue and sessions -------------------------------------------


def test_sparse_tensor_parts_shape_and_graph():
    with tf.Graph().as_default() as g:
        sp = tf.SparseTensor([[0, 0], [1, 2]], [1.0, 2.0], [3, 4])
        assert sp.indices.dtype == tf.int64 and sp.dense_shape.dtype == tf.int64
        assert sp.dtype == tf.float32 and sp.shape.as_list() == [3, 4]
        assert sp.get_shape().as_list() == [3, 4] and sp.graph is g and sp.op is sp.values.op
        assert tf.sparse.SparseTensor is tf.SparseTensor
        same = tf.SparseTensor.from_value(sp)
        assert same is sp
        with pytest.raises(TypeError, match="neither a SparseTensor nor SparseTensorValue"):
            tf.SparseTensor.from_value([[0, 0]])
        with pytest.raises(ValueError):
            tf.SparseTensor([[0, 0]], [1.0, 2.0], [3, 4])  # 1 index, 2 values
        sp.set_shape([3, None])
        with pytest.raises(ValueError):
            sp.set_shape([2, 4])
        with tf.Session():
            value = sp.eval()
    assert isinstance(value, tf.SparseTensorValue)
    np.testing.assert_array_equal(value.indices, [[0, 0], [1, 2]])
    assert value.values.dtype == np.float32 and value.dense_shape.tolist() == [3, 4]


def test_fetch_structures_rebuild_sparse_values():
    with tf.Graph().as_default():
        sp = tf.SparseTensor(IND, VAL, SHAPE)
        dense = tf.sparse.to_dense(sp)
        with tf.Session() as sess:
            pair = collections.namedtuple("Pair", "sparse dense")
            out = sess.run({"nested": [sp, (sp, dense)], "one": sp, "pair": pair(sp, dense)})
            call = sess.make_callable([sp, dense])
            from_callable = call()
    assert type(out["pair"]).__name__ == "Pair" and out["pair"].dense.shape == (4, 5)
    for v in (
        out["one"],
        out["nested"][0],
        out["nested"][1][0],
        out["pair"].sparse,
        from_callable[0],
    ):
        assert isinstance(v, tf.SparseTensorValue)
        np.testing.assert_array_equal(v.indices, IND)
        np.testing.assert_array_equal(v.values, VAL)
        np.testing.assert_array_equal(v.dense_shape, SHAPE)
    assert out["nested"][1][1].shape == (4, 5)


def test_feeding_a_sparse_placeholder_takes_a_value_or_a_triple():
    with tf.Graph().as_default():
        p = tf.sparse_placeholder(tf.float32, shape=[None, 5])
        total = tf.sparse.reduce_sum(p)
        dense = tf.sparse.to_dense(p)
        assert dense.shape.as_list() == [None, None] or dense.shape.rank == 2
        with tf.Session() as sess:
            a = sess.run(total, {p: tf.SparseTensorValue(IND, VAL, SHAPE)})
            b = sess.run(total, {p: (IND.tolist(), VAL.tolist(), SHAPE.tolist())})
            echoed = sess.run(p, {p: [IND, VAL, SHAPE]})
            call = sess.make_callable(total, [p])
            c = call(tf.SparseTensorValue(IND, VAL, SHAPE))
            with pytest.raises(TypeError, match="SparseTensorValue"):
                sess.run(total, {p: np.zeros((4, 5), np.float32)})
            with pytest.raises(ValueError, match="3 parts"):
                sess.run(total, {p: (IND, VAL)})
            with pytest.raises(ValueError, match="Cannot feed value of shape"):
                sess.run(total, {p: (IND[:, :1], VAL, SHAPE)})  # indices must be [N, 2]
            with pytest.raises(TypeError, match="takes 1 feed value"):
                call()
    assert a == pytest.approx(float(VAL.sum()), rel=1e-6) and b == a and c == a
    assert isinstance(echoed, tf.SparseTensorValue) and echoed.values.dtype == np.float32


def test_sparse_placeholder_dense_shape_defaults_to_the_given_shape():
    with tf.Graph().as_default():
        p = tf.sparse_placeholder(tf.float32, shape=[4, 5])
        q = tf.sparse.placeholder(tf.float32)
        assert p.shape.as_list() == [4, 5] and q.shape.rank is None
        with tf.Session() as sess:
            got = sess.run(p.dense_shape)
            with pytest.raises(tf.errors.InvalidArgumentError):
                sess.run(q.dense_shape)
    np.testing.assert_array_equal(got, [4, 5])


def test_sparse_ops_refuse_dense_inputs_and_unknown_combiners():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="Input must be a SparseTensor"):
            tf.sparse.to_dense(tf.constant([[1.0]]))
        with pytest.raises(TypeError, match="At least one input should be SparseTensor"):
            tf.sparse.add(tf.constant(1.0), tf.constant(2.0))
        sp = tf.SparseTensor(IND, np.arange(5), SHAPE)
        with pytest.raises(ValueError, match="combiner must be one of"):
            tf.nn.embedding_lookup_sparse(tf.constant(TABLE), sp, None, combiner="max")
        with pytest.raises(TypeError, match="sp_ids must be SparseTensor"):
            tf.nn.embedding_lookup_sparse(tf.constant(TABLE), tf.constant([1]), None)


def test_sparse_dense_cwise_add_has_no_gradient_as_in_tensorflow():
    from engine.ops import sparse_ops  # noqa: PLC0415

    with tf.Graph().as_default():
        v = tf.constant(VAL)
        out = sparse_ops.sparse_dense_cwise(
            "SparseDenseCwiseAdd", IND, v, SHAPE, np.ones(5, np.float32)
        )
        with pytest.raises(NotImplementedError, match="SparseDenseCwiseAdd"):
            tf.gradients(tf.reduce_sum(out), v)


# -- finite-difference gradients (tests/engine/test_gradient_coverage.py) -------------------


def _sp(values, ind=IND, shape=SHAPE):
    return tf.SparseTensor(tf.constant(ind), values, tf.constant(shape))


_B = np.arange(15.0).reshape(5, 3) / 7 - 1
_DENSE45 = np.arange(20.0).reshape(4, 5) / 9 + 0.5
_TABLE = np.arange(21.0).reshape(7, 3) / 5 - 2
_IDS = tf.SparseTensorValue(
    np.array([[0, 0], [0, 1], [1, 0], [3, 0]], np.int64), np.array([1, 4, 2, 1], np.int64), [4, 2]
)

GRAD_CASES = [
    Case(
        "sparse_dense_matmul",
        lambda v, b: tf.sparse.matmul(_sp(v), b, adjoint_b=False),
        [VAL, _B],
        None,
        grad_inputs=(0, 1),
    ),
    Case(
        "sparse_to_dense",
        lambda v, d: tf.sparse_to_dense(IND, SHAPE, v, d),
        [VAL, np.float64(0.5)],
        None,
        grad_inputs=(0, 1),
    ),
    Case(
        "sparse_dense_add",
        lambda v, d: tf.sparse.add(_sp(v), d),
        [VAL, _DENSE45],
        None,
        grad_inputs=(0, 1),
    ),
    Case(
        "sparse_dense_cwise_mul",
        lambda v, d: (_sp(v) * d).values,
        [VAL, _DENSE45[1]],
        None,
        grad_inputs=(0, 1),
    ),
    Case(
        "sparse_dense_cwise_div",
        lambda v, d: (_sp(v) / d).values,
        [VAL, _DENSE45[:, :1]],
        None,
        grad_inputs=(0, 1),
    ),
    Case(
        "sparse_reduce_sum",
        lambda v: tf.sparse.reduce_sum(_sp(v, IND3, SHAPE3), [0, 2]),
        [VAL3],
        None,
        grad_inputs=(0,),
    ),
    Case(
        "sparse_softmax",
        lambda v: tf.sparse.softmax(_sp(v, IND3, SHAPE3)).values,
        [VAL3],
        None,
        grad_inputs=(0,),
    ),
    Case(
        "sparse_reorder",
        lambda v: tf.sparse.reorder(_sp(v, IND[::-1])).values * np.arange(1.0, 6.0),
        [VAL],
        None,
        grad_inputs=(0,),
    ),
    Case(
        "sparse_add",
        lambda a, b: tf.sparse.add(_sp(a), _sp(b, IND[1:4])).values * np.arange(1.0, 6.0),
        [VAL, VAL[:3] + 1],
        None,
        grad_inputs=(0, 1),
    ),
    Case(
        "sparse_fill_empty_rows",
        lambda v, d: tf.sparse.fill_empty_rows(_sp(v), d)[0].values * np.arange(1.0, 7.0),
        [VAL, np.float64(-1.0)],
        None,
        grad_inputs=(0, 1),
    ),
    Case(
        "sparse_slice",
        lambda v: tf.sparse.slice(_sp(v, IND3, SHAPE3), [0, 1, 1], [2, 2, 5]).values * [2.0, -1.0],
        [VAL3],
        None,
        grad_inputs=(0,),
    ),
    Case(
        "embedding_lookup_sparse_sqrtn",
        lambda t: tf.nn.embedding_lookup_sparse(
            t, tf.SparseTensor.from_value(_IDS), None, combiner="sqrtn"
        ),
        [_TABLE],
        None,
        grad_inputs=(0,),
    ),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.id)
def test_gradients_match_finite_differences(case):
    check_gradient(case)


# -- GraphDef round trip (tests/engine/test_graph_def.py) ------------------------------------


def _parts(sp):
    return [sp.indices, sp.values, sp.dense_shape]


def round_trip_builder():
    """Every sparse op type, for a bit-identical save/load round trip."""
    sp = tf.SparseTensor(IND, tf.constant(VAL), SHAPE)
    sp3 = tf.SparseTensor(IND3, tf.constant(VAL3), SHAPE3)
    summed = tf.sparse.add(sp, tf.SparseTensor(IND[1:4], tf.constant(VAL[:3]), SHAPE))
    filled, empty = tf.sparse.fill_empty_rows(tf.SparseTensor(IND, sp.values, [6, 5]), 2.0)
    fetches = [
        tf.sparse.matmul(sp, np.ones((5, 2), np.float32), adjoint_a=False),
        tf.sparse.to_dense(sp, default_value=1.0),
        tf.sparse.add(sp, np.ones((4, 5), np.float32)),
        (sp * np.float32(2.0)).values,
        (sp / np.ones(5, np.float32)).values,
        tf.sparse.reduce_sum(sp3, 1, keepdims=True),
        *_parts(tf.sparse.reduce_sum_sparse(sp3, [0])),
        tf.sparse.softmax(sp3).values,
        tf.sparse.reorder(tf.SparseTensor(IND[::-1], VAL, SHAPE)).indices,
        tf.sparse.reshape(sp, [2, -1]).indices,
        tf.sparse.concat(1, [sp, sp]).indices,
        summed.indices,
        filled.values,
        empty,
        *tf.gradients(tf.reduce_sum(summed.values) + tf.reduce_sum(filled.values), sp.values),
        *_parts(tf.sparse.slice(sp3, [0, 1, 0], [2, 2, 3])),
        tf.gradients(tf.sparse.slice(sp3, [0, 1, 0], [2, 2, 3]).values, sp3.values)[0],
        *_parts(tf.sparse.split(sp_input=sp, num_split=3, axis=1)[2]),
    ]
    from engine.ops import sparse_ops  # noqa: PLC0415

    fetches.append(
        sparse_ops.sparse_dense_cwise("SparseDenseCwiseAdd", IND, sp.values, SHAPE, np.float32(1))
    )
    return fetches, {}, []


def test_round_trip_builder_covers_every_sparse_op_type():
    from engine.framework import registry  # noqa: PLC0415

    g = tf.Graph()
    with g.as_default():
        round_trip_builder()
    types = {op.type for op in g.get_operations()}
    sparse_types = {
        t
        for t in registry.registered_types()
        if t.startswith("Sparse")
        and (registry.get(t).kernel.__module__.startswith("engine.ops.sparse"))
        # the sparse segment reductions have their own builder (test_sparse_segment_ops)
        and registry.get(t).kernel.__module__ != "engine.ops.sparse_segment_ops"
    }
    assert sparse_types <= types, sorted(sparse_types - types)
