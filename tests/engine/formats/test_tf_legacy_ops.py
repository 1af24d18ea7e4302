"""Op types of older TF graphs and TF's raw ops, imported from a GraphDef TensorFlow 2.21
ran (tests/fixtures/tensorflow/legacy_ops, a producer-6 graph as 2016 graphs were, written by
make_flow_fixtures.py) and compared with the outputs TF computed."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import engine as tf
from engine.formats.tensorflow import graph_def as tfg
from engine.formats.tensorflow.tensors import TFFormatError

FIXTURE = pathlib.Path(__file__).parents[2] / "fixtures" / "tensorflow" / "legacy_ops"
IO = np.load(FIXTURE / "io.npz")
OUTPUTS = sorted(k for k in IO.files if k not in ("x", "img", "ints"))


@pytest.fixture(scope="module")
def results():
    g = tf.Graph()
    with g.as_default():
        tf.import_graph_def(tf.GraphDef.FromString((FIXTURE / "model.pb").read_bytes()), name="")
    feeds = {f"{k}:0": IO[k] for k in ("x", "img", "ints")}
    with tf.Session(graph=g) as sess:
        return sess.run({k: f"out/{k}:0" for k in OUTPUTS}, feeds)


@pytest.mark.parametrize("key", OUTPUTS)
def test_legacy_and_raw_ops_match_tensorflow(results, key):
    got, want = results[key], IO[key]
    assert got.dtype == want.dtype, key
    assert got.shape == want.shape, key
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(got, want)


def test_a_computed_reverse_mask_is_refused_with_the_reason():
    from google.protobuf import text_format

    from engine.formats.tensorflow.proto import graph_pb2

    gd = text_format.Parse(
        """
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "m" op: "Placeholder" attr { key: "dtype" value { type: DT_BOOL } } }
node { name: "r" op: "Reverse" input: "x" input: "m" attr { key: "T" value { type: DT_FLOAT } } }
""",
        graph_pb2.GraphDef(),
    )
    with pytest.raises(TFFormatError, match=r"'r' \(Reverse\): its dims must be a constant"):
        tfg.graph_def_to_document(gd)


def _run_op(op_type, inputs, attrs=None):
    from engine.ops._common import create

    with tf.Graph().as_default():
        op = create(op_type, [tf.constant(v) for v in inputs], attrs or {}, None)
        with tf.Session() as sess:
            return sess.run(op.outputs[0])


@pytest.mark.parametrize(
    "op_type, inputs, attrs, message",
    [
        (
            "TensorScatterUpdate",
            [np.zeros((2, 3), "f"), np.array([[2, 0]]), np.ones(1, "f")],
            {},
            r"indices\[0\] = \[2, 0\] does not index into shape \[2, 3\]",
        ),
        (
            "TensorScatterAdd",
            [np.zeros((2, 3), "f"), np.array([[1]]), np.ones((1, 2), "f")],
            {},
            r"updates must have shape \[1, 3\]",
        ),
        ("LinSpace", [np.float32(0), np.float32(1), np.int32(0)], {}, "Requires num > 0"),
        ("BroadcastArgs", [np.array([2, 3]), np.array([4])], {}, "Incompatible shapes"),
        (
            "CTCGreedyDecoder",
            [np.zeros((3, 2, 4), "f"), np.array([3, 5], np.int32)],
            {},
            r"sequence_length must be in \[0, max_time=3\]",
        ),
        (
            "DenseBincount",
            [np.array([1, -1]), np.int32(3), np.zeros(0, "f")],
            {},
            "Input arr must be non-negative",
        ),
        (
            "FakeQuantWithMinMaxVars",
            [np.zeros(3, "f"), np.float32(1), np.float32(-1)],
            {},
            "min 1.0 must not be greater than max -1.0",
        ),
        (
            "QuantizeAndDequantizeV2",
            [np.zeros((2, 3), "f"), np.zeros(3, "f"), np.ones(3, "f")],
            {"range_given": True},
            "input_min must be a scalar",
        ),
        (
            "MatrixDiagV3",
            [np.ones(3, "f"), np.int32(0), np.int32(-1), np.int32(-1), np.float32(0)],
            {"align": "UP_DOWN"},
            "align must be one of",
        ),
        (
            "BatchNormWithGlobalNormalization",
            [np.ones((1, 2, 2, 3), "f")] + [np.ones(2, "f")] * 4,
            {"variance_epsilon": 0.001, "scale_after_normalization": True},
            "m must be a vector of the 3 channels of t",
        ),
    ],
)
def test_raw_op_errors_name_the_bad_input(op_type, inputs, attrs, message):
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        _run_op(op_type, inputs, attrs)


def test_resize_images_takes_bicubic_and_area_like_tf1():
    img = IO["img"]
    with tf.Graph().as_default(), tf.Session() as sess:
        bicubic = tf.image.resize_images(img, [5, 7], method=tf.image.ResizeMethod.BICUBIC)
        area = tf.image.resize_area(img, [3, 5])
        got = sess.run([bicubic, area])
    np.testing.assert_allclose(got[0], IO["resize_bicubic"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], IO["resize_area"], rtol=1e-5, atol=1e-6)


def round_trip_builder():
    """(fetches, feed, setup) for tests/engine/test_graph_def.py's round trip: the raw-op
    kernels (tf_raw_ops.py, quantize_ops.py) and the bicubic and area resizes."""
    from engine.ops._common import create

    x = tf.constant(IO["x"])
    img = tf.constant(IO["img"])
    f32 = np.float32
    raw = [
        (
            "BatchNormWithGlobalNormalization",
            [img] + [tf.constant(np.ones(3, "f"))] * 4,
            {"variance_epsilon": 0.001, "scale_after_normalization": True},
        ),
        ("LinSpace", [tf.constant(f32(0)), tf.constant(f32(1)), tf.constant(5)], {}),
        ("BroadcastArgs", [tf.constant([2, 1]), tf.constant([3])], {}),
        (
            "MatrixDiagV3",
            [x[0], tf.constant(0), tf.constant(-1), tf.constant(-1), tf.constant(f32(0))],
            {"align": "LEFT_RIGHT"},
        ),
        ("MatrixDiagPartV3", [x, tf.constant([-1, 1]), tf.constant(f32(9))], {}),
        ("MatrixSetDiagV3", [x, x[:, :, 0], tf.constant(0)], {}),
        ("FakeQuantWithMinMaxArgs", [x], {"min": -1.0, "max": 1.0}),
        ("FakeQuantWithMinMaxVars", [x, tf.constant(f32(-1)), tf.constant(f32(1))], {}),
        (
            "FakeQuantWithMinMaxVarsPerChannel",
            [x, tf.constant(-np.ones(4, "f")), tf.constant(np.ones(4, "f"))],
            {},
        ),
        ("QuantizeAndDequantizeV2", [x, tf.constant(f32(-1)), tf.constant(f32(1))], {}),
        (
            "QuantizeAndDequantizeV3",
            [x, tf.constant(f32(-1)), tf.constant(f32(1)), tf.constant(4)],
            {},
        ),
        ("QuantizeAndDequantizeV4", [x, tf.constant(f32(-1)), tf.constant(f32(1))], {}),
    ]
    fetches = [create(t, ins, attrs, None).outputs[0] for t, ins, attrs in raw]
    ids, none = tf.constant([[1, 2], [0, 7]]), tf.constant(np.zeros(0, "f"))
    fetches.append(create("DenseBincount", [ids, tf.constant(5), none], {}, None).outputs[0])
    fetches.append(create("Bincount", [ids[0], tf.constant(5), none], {}, None).outputs[0])
    splits = tf.constant(np.array([0, 1, 1, 2], np.int64))
    ragged = create("RaggedBincount", [splits, ids[0], tf.constant(5), none], {}, None)
    fetches.append(ragged.outputs[0])
    idx, upd = tf.constant([[0, 1]]), tf.constant(np.ones((1, 4), "f"))
    for t in ("Update", "Add", "Sub", "Max", "Min"):
        fetches.append(create(f"TensorScatter{t}", [x, idx, upd], {}, None).outputs[0])
    (decoded,), log_prob = tf.nn.ctc_greedy_decoder(tf.transpose(x, [2, 0, 1]), [4, 2])
    labels = tf.SparseTensor([[0, 0], [1, 0]], [1, 0], [2, 1])
    fetches.append(tf.nn.ctc_loss(labels, tf.transpose(x, [2, 0, 1]), [4, 2]))
    fetches += [decoded.indices, decoded.values, decoded.dense_shape, log_prob]
    fetches += [
        tf.image.resize_bicubic(img, [5, 7], half_pixel_centers=True),
        tf.image.resize_area(img, [3, 5], align_corners=True),
    ]
    return fetches, {}, []
