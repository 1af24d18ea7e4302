"""SavedModels exported as TF1 Estimators export feature-column models (serialized
``tf.Example`` in, ParseExampleV2 with FixedLen and VarLen features, feature columns, dense
layers) load with ``tf.saved_model.load`` and compute TensorFlow's outputs, recorded by
``fixtures/make_feature_column_fixtures.py`` next to each model."""

from pathlib import Path

import numpy as np
import pytest

import engine as tf

MODELS = Path(__file__).resolve().parents[1] / "fixtures" / "tensorflow"
# The signatures and the ops each model's graph must hold (the feature-column ops under test).
CASES = {
    "fc_classifier": (
        {"serving_default": "examples", "classification": "inputs"},
        {
            "ParseExampleV2",
            "Bucketize",
            "SparseCross",
            "StringToHashBucketFast",
            "LookupTableImportV2",
            "SparseSegmentMean",
            "SparseSegmentSqrtN",
            "SparseSegmentSum",
            "SparseFillEmptyRows",
            "SparseReshape",
            "SparseToDense",
        },
    ),
    "fc_regressor": (
        {"serving_default": "examples", "regression": "inputs"},
        {
            "ParseExampleV2",
            "InitializeTableFromTextFileV2",
            "StringToHashBucketFast",
            "SparseSegmentSqrtN",
            "SparseSegmentSum",
            "SparseFillEmptyRows",
            "SparseReshape",
        },
    ),
}


def _recording(name: str):
    io = np.load(MODELS / name / "io.npz", allow_pickle=False)
    examples = np.array([bytes.fromhex(h) for h in io["examples"]], dtype=object)
    return io, examples


def _compare(got, expected, key: str) -> None:
    got = np.asarray(got)
    if expected.dtype.kind == "U":
        got = got.astype(str)
    assert got.shape == expected.shape, key
    if expected.dtype.kind == "f":
        assert got.dtype == expected.dtype, key
        np.testing.assert_allclose(got, expected, rtol=2e-5, atol=2e-5, err_msg=key)
    else:
        np.testing.assert_array_equal(got, expected, err_msg=key)


@pytest.fixture(scope="module", params=sorted(CASES))
def loaded(request):
    name = request.param
    g = tf.Graph()
    with g.as_default():
        sess = tf.Session(graph=g)
        meta = tf.saved_model.load(sess, ["serve"], str(MODELS / name))
    yield name, sess, meta
    sess.close()


def test_the_graph_holds_the_feature_column_ops(loaded):
    name, sess, _ = loaded
    types = {o.type for o in sess.graph.get_operations()}
    assert CASES[name][1] <= types, CASES[name][1] - types


def test_every_signature_computes_tensorflows_outputs(loaded):
    name, sess, meta = loaded
    io, examples = _recording(name)
    compared = 0
    for sig_name, alias in CASES[name][0].items():
        sig = meta.signature_def[sig_name]
        assert list(sig.inputs) == [alias]
        feed = {sig.inputs[alias].name: examples}
        for key, info in sig.outputs.items():
            recorded = {"scores": "probabilities"}.get(key, key)
            _compare(sess.run(info.name, feed), io[recorded], f"{sig_name}/{key}")
            compared += 1
    assert compared == sum(len(meta.signature_def[s].outputs) for s in CASES[name][0]) >= 2


def test_each_example_alone_gives_its_row_of_the_batch(loaded):
    """Sparse features of one example (empty lists, missing keys) parse to the same
    columns as in the batch: no state leaks between rows."""
    name, sess, meta = loaded
    io, examples = _recording(name)
    sig = meta.signature_def["serving_default"]
    key = sorted(sig.outputs)[0]
    for i, blob in enumerate(examples):
        got = sess.run(sig.outputs[key].name, {sig.inputs["examples"].name: [blob]})
        _compare(got, io[key][i : i + 1], f"{key}[{i}]")


def test_a_malformed_example_is_an_invalid_argument(loaded):
    name, sess, meta = loaded
    sig = meta.signature_def["serving_default"]
    out = sig.outputs[sorted(sig.outputs)[0]].name
    with pytest.raises(tf.errors.InvalidArgumentError, match="Could not parse example"):
        sess.run(out, {sig.inputs["examples"].name: [b"\x0a\xff\xff\xff\xff\x0f"]})
