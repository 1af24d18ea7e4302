"""``StringSplitV2`` and ``RaggedTensorToTensor`` against what TensorFlow 2.21 computed
(tests/fixtures/tensorflow/ragged_text.json, written by make_fixtures.py), their errors, and
the Keras ``TextVectorization`` model they serve (keras_text_vectorization)."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import engine as tf
from engine.ops._common import create

FIXTURES = pathlib.Path(__file__).parents[1] / "fixtures" / "tensorflow"
RECORDED = json.loads((FIXTURES / "ragged_text.json").read_text())


def _run(fetches):
    with tf.Session() as sess:
        return sess.run(fetches)


@pytest.mark.parametrize(
    "case", RECORDED["string_split_v2"], ids=lambda c: f"sep={c['sep']!r},max={c['maxsplit']}"
)
def test_string_split_v2_matches_tensorflow(case):
    with tf.Graph().as_default():
        texts = tf.constant([t.encode() for t in case["input"]])
        op = create(
            "StringSplitV2",
            [texts, tf.constant(case["sep"].encode())],
            {"maxsplit": case["maxsplit"]},
            None,
        )
        indices, values, shape = _run(list(op.outputs))
    assert indices.tolist() == case["indices"]
    assert [v.decode() for v in values] == case["values"]
    assert shape.tolist() == case["shape"]
    assert indices.dtype == np.int64 and values.dtype == object


def _ragged(case, **override):
    c = {**case, **override}
    dtype = {"float32": tf.float32, "int32": tf.int32, "string": tf.string}[c["dtype"]]
    values = c["values"]
    if c["dtype"] == "string":
        values = [v.encode() for v in values]
    shape = c["shape"]
    shape_t = tf.constant(
        -1 if shape == -1 else [-1 if d is None else d for d in shape], dtype=tf.int64
    )
    default = c["default"].encode() if c["dtype"] == "string" else c["default"]
    parts = [tf.constant(p, dtype=tf.int64) for p in c["parts"]]
    ins = [shape_t, tf.constant(values, dtype), tf.constant(default, dtype)] + parts
    return create("RaggedTensorToTensor", ins, {"row_partition_types": c["types"]}, None)


@pytest.mark.parametrize("case", RECORDED["ragged_to_tensor"], ids=lambda c: c["name"])
def test_ragged_tensor_to_tensor_matches_tensorflow(case):
    with tf.Graph().as_default():
        op = _ragged(case)
        got = _run(op.outputs[0])
        static = op.outputs[0].shape
    want = np.array(case["out"], dtype=object if case["dtype"] == "string" else case["dtype"])
    if case["dtype"] == "string":
        want = np.vectorize(lambda s: s.encode(), otypes=[object])(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert static.is_compatible_with(want.shape)


def test_ragged_tensor_to_tensor_errors_name_the_problem():
    base = RECORDED["ragged_to_tensor"][0]  # splits [0, 2, 2, 5] over 5 values
    with tf.Graph().as_default():
        op = _ragged(base, parts=[[0, 2, 2, 4]])
        with pytest.raises(tf.errors.InvalidArgumentError, match="describe 4 values, but there"):
            _run(op.outputs[0])
    with tf.Graph().as_default():
        op = _ragged(base, parts=[[1, 2, 5]])
        with pytest.raises(tf.errors.InvalidArgumentError, match="must start at 0"):
            _run(op.outputs[0])
    rowids = RECORDED["ragged_to_tensor"][4]
    with tf.Graph().as_default():
        op = _ragged(rowids, parts=[4, [0, 2, 1, 3]])
        with pytest.raises(tf.errors.InvalidArgumentError, match="must be non-decreasing"):
            _run(op.outputs[0])
    with tf.Graph().as_default():
        op = _ragged(rowids, parts=[2, [0, 0, 2, 2]])
        with pytest.raises(tf.errors.InvalidArgumentError, match="names row 2 of 2"):
            _run(op.outputs[0])
    with tf.Graph().as_default(), pytest.raises(ValueError, match="Unsupported partition type"):
        _ragged(base, types=["ROW_LENGTHS"])
    with tf.Graph().as_default(), pytest.raises(ValueError, match="has rank 3; the ragged"):
        _ragged(base, shape=[2, 2, 2])


@pytest.mark.parametrize("kind", ["keras_text_vectorization", "keras_text_multi_hot"])
def test_keras_text_vectorization_model_matches_tensorflow(kind):
    """Token ids padded by RaggedTensorToTensor; multi-hot and TF-IDF by RaggedBincount."""
    d = FIXTURES / kind
    io = np.load(d / "io.npz")
    texts = np.array([t.encode() for t in json.loads((d / "texts.json").read_text())], object)
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.load(sess, ["serve"], str(d))
        sig = meta.signature_def["serving_default"]
        (inp,) = sig.inputs.values()
        (out,) = sig.outputs.values()
        got = sess.run(out.name, {inp.name: texts})
    np.testing.assert_allclose(got, io["y"], rtol=1e-5, atol=1e-6)


def round_trip_builder():
    """(fetches, feed, setup) for tests/engine/test_graph_def.py's round trip."""
    split = create("StringSplitV2", [tf.constant([b"a b", b"c"]), tf.constant(b"")], {}, None)
    return list(split.outputs) + [_ragged(RECORDED["ragged_to_tensor"][4]).outputs[0]], {}, []
