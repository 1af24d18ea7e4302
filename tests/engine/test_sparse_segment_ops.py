"""Sparse segment reductions, string hash buckets and the parsing of sparse features against
TensorFlow: values, static shapes, gradients and error messages recorded by
``fixtures/make_sparse_segment_fixtures.py`` from the same graphs (``build``, ``ERRORS``);
finite-difference gradients, the FarmHash/SipHash functions on their own, hostile inputs."""

import numpy as np
import pytest

import engine as tf
from engine.ops.string_hash import fingerprint64, siphash24
from tests.engine.fixtures import make_sparse_segment_fixtures as fx
from tests.engine.fixtures.oracle import assert_recorded_error, load
from tests.engine.optable import Case, check_gradient

TF = load("sparse_segment_tf.npz")
VALUE_KEYS = sorted(k for k in TF.files if not k.startswith(("shape_", "error_", "tf_version")))


@pytest.fixture(scope="module")
def ours():
    g = tf.Graph()
    with g.as_default():
        fetch, shapes = fx.build(tf)
        with tf.Session(graph=g) as sess:
            return fx.plain(sess.run(fetch)), shapes


def test_every_recorded_value_is_compared(ours):
    values, _ = ours
    assert sorted(values) == VALUE_KEYS
    assert len(VALUE_KEYS) == 63


@pytest.mark.parametrize("key", VALUE_KEYS)
def test_values_and_gradients_match_tensorflow(ours, key):
    values, _ = ours
    expected, got = TF[key], np.asarray(values[key])
    assert got.dtype == expected.dtype and got.shape == expected.shape, key
    if expected.dtype.kind in "fc":
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7, err_msg=key)
    else:
        np.testing.assert_array_equal(got, expected, err_msg=key)


def test_static_shapes_match_tensorflow(ours):
    _, shapes = ours
    for key, dims in shapes.items():
        assert dims == TF[f"shape_{key}"].tolist(), key


def test_the_recorded_cases_exercise_what_they_claim():
    assert (TF["sum"][1] == 0).all() and (TF["mean_n"][4:] == 0).all()  # empty segments
    # Row 3 is read into segments 0 and 2: its gradient is the sum of their weights.
    w = fx.WEIGHTS["sum"]
    np.testing.assert_allclose(TF["grad_sum"][3], w[0] + w[2], rtol=1e-6)
    assert len(set(TF["hash_fast_7"].tolist())) > 1 and TF["hash_fast_big"].max() > 2**40
    assert TF["parse_tags_shape"].tolist() == [4, 3] and TF["parse_ids_values"].min() == -1
    assert TF["merge_indices"].tolist() == sorted(TF["merge_indices"].tolist())


@pytest.mark.parametrize("key", sorted(fx.ERRORS))
def test_errors_match_tensorflow(key):
    assert_recorded_error(tf, TF, key, fx.ERRORS[key])


def test_grad_ops_are_tensorflows():
    """The gradients are the SparseSegment*Grad ops TF builds (a GraphDef imports into TF)."""
    with tf.Graph().as_default() as g:
        x = tf.constant(fx.DATA)
        for kind in fx.KINDS:
            y = getattr(tf.sparse, f"segment_{kind}")(x, fx.INDICES, fx.SEG)
            tf.gradients(tf.reduce_sum(y), x)
    types = {o.type for o in g.get_operations()}
    assert {"SparseSegmentSumGrad", "SparseSegmentMeanGrad", "SparseSegmentSqrtNGrad"} <= types


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
def test_embedding_lookup_sparse_builds_the_sparse_segment_op(combiner):
    """As TF: unweighted lookups reduce the unique ids' rows with one SparseSegment op (its
    values are checked against TF in test_sparse_ops)."""
    op_type = {
        "sum": "SparseSegmentSum",
        "mean": "SparseSegmentMean",
        "sqrtn": "SparseSegmentSqrtN",
    }
    with tf.Graph().as_default() as g:
        sp = tf.SparseTensor([[0, 0], [0, 1], [2, 0]], np.array([3, 1, 3], np.int64), [3, 2])
        out = tf.nn.embedding_lookup_sparse(tf.constant(fx.DATA), sp, None, combiner=combiner)
    assert out.op.type == op_type[combiner]
    assert "Unique" in {o.type for o in g.get_operations()}


def test_half_floats_accumulate_in_float32():
    with tf.Graph().as_default():
        x = np.full((3000, 1), 1.0, np.float16)
        y = tf.sparse.segment_sum(x, np.arange(3000), np.zeros(3000, np.int32))
        with tf.Session() as sess:
            got = sess.run(y)
    assert got.dtype == np.float16 and float(got[0, 0]) == 3000.0


def test_integer_data_needs_sum():
    with tf.Graph().as_default(), pytest.raises(TypeError):
        tf.sparse.segment_mean(fx.DATA_INT, fx.INDICES, fx.SEG)


def test_hashes_of_strings_over_every_length_class():
    """The same hash functions, called directly: FarmHash over 64 bytes loops, SipHash pads
    the last block; the recorded buckets are TF's."""
    big = TF["hash_fast_big"]
    for s, expected in zip(fx.STRINGS, big):
        assert fingerprint64(s) % (2**62 + 1) == expected
    for s, expected in zip(fx.STRINGS, TF["hash_strong"]):
        assert siphash24(98765, (1 << 64) - 5, s) % 2**40 == expected


def test_sparse_parse_of_a_hostile_example_is_refused():
    with tf.Graph().as_default():
        s = tf.placeholder(tf.string, [None])
        out = tf.io.parse_example(s, {"t": tf.io.VarLenFeature(tf.int64)})
        with tf.Session() as sess:
            # A length prefix promising 2**40 bytes that are not there.
            bad = b"\x0a\x80\x80\x80\x80\x80\x20"
            with pytest.raises(tf.errors.InvalidArgumentError, match="Could not parse"):
                sess.run(out["t"].values, {s: np.array([bad], dtype=object)})
            many = fx.example(t=list(range(1000)))
            got = sess.run(out["t"], {s: np.array([many, b""], dtype=object)})
    assert got.dense_shape.tolist() == [2, 1000] and got.values.tolist() == list(range(1000))


_rng = np.random.default_rng(3)
GRAD_CASES = [
    Case(
        f"sparse_segment_{kind}{suffix}",
        lambda x, kind=kind, n=n: getattr(tf.sparse, f"segment_{kind}")(
            x, fx.INDICES, fx.SEG, num_segments=n
        ),
        [_rng.standard_normal((5, 3))],
        None,
        grad_inputs=(0,),
    )
    for kind in fx.KINDS
    for suffix, n in (("", None), ("_with_num_segments", 6))
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=str)
def test_gradients_match_finite_differences(case):
    check_gradient(case)


def _sparse_cross(g, hashed: bool):
    """SparseCross of a sparse string column, a sparse int64 one and a dense string one."""
    a = tf.SparseTensor([[0, 0], [0, 1], [2, 0]], np.array([b"x", b"y", b"z"], object), [3, 2])
    b = tf.SparseTensor([[0, 0], [1, 0], [2, 0]], np.array([4, 5, 6], np.int64), [3, 1])
    dense = tf.constant(np.array([[b"p"], [b"q"], [b"r"]], object))
    attrs = {
        "N": 2,
        "hashed_output": hashed,
        "num_buckets": 100 if hashed else 0,
        "hash_key": 0xDECAFCAFFE if hashed else 0,
        "sparse_types": [tf.string, tf.int64],
        "dense_types": [tf.string],
        "out_type": tf.int64 if hashed else tf.string,
        "internal_type": tf.int64,  # an int64 column makes it int64, as in TF
    }
    inputs = [a.indices, b.indices, a.values, b.values, a.dense_shape, b.dense_shape, dense]
    return g._create_op("SparseCross", inputs, attrs, "cross_hashed" if hashed else "cross")


def round_trip_builder():
    """The sparse segment ops and their gradients, the hash buckets, Bucketize, SparseCross,
    LookupTableImportV2 and a sparse parse, for test_graph_def's round-trip table."""
    g = tf.get_default_graph()
    x = tf.constant(fx.DATA)
    fetches = []
    for kind in fx.KINDS:
        for n in (None, 6):
            y = getattr(tf.sparse, f"segment_{kind}")(x, fx.INDICES, fx.SEG, num_segments=n)
            fetches += [y, tf.gradients(tf.reduce_sum(y * y), x)[0]]
    s = np.array(fx.STRINGS, dtype=object)
    fetches += [
        tf.strings.to_hash_bucket_fast(s, 9),
        tf.strings.to_hash_bucket_strong(s, 9, key=[1, 2]),
    ]
    fetches.append(
        g._create_op("Bucketize", [x], {"boundaries": [-0.5, 0.0, 0.5]}, "bucketize").outputs[0]
    )
    fetches += list(_sparse_cross(g, True).outputs) + list(_sparse_cross(g, False).outputs)
    table = g._create_op(
        "HashTableV2", [], {"key_dtype": tf.string, "value_dtype": tf.int64}, "table"
    ).outputs[0]
    keys, values = tf.constant(["a", "b"]), tf.constant([7, 8], tf.int64)
    imported = g._create_op("LookupTableImportV2", [table, keys, values], {}, "import")
    found = g._create_op(
        "LookupTableFindV2", [table, tf.constant(["b", "c"]), tf.constant(-1, tf.int64)], {}, "find"
    )
    parsed = tf.io.parse_example(
        np.array(fx.EXAMPLES, dtype=object), {"tags": tf.io.VarLenFeature(tf.string)}
    )["tags"]
    fetches += [found.outputs[0], parsed.indices, parsed.values, parsed.dense_shape]
    return fetches, {}, [imported.name]
