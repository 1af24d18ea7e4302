"""ONNX NonMaxSuppression and RoiAlign imported and run by the engine, against onnxruntime."""

import numpy as np
import pytest

import engine as tf
from engine.formats.onnx.mapping import UnsupportedModelError
from engine.ops._common import create
from tests.engine.test_onnx_import import I64, F, assert_same_as_ort, model_bytes, run_engine, vi

onnx = pytest.importorskip("onnx", reason="test models are built with onnx.helper")
from onnx import helper  # noqa: E402

rng = np.random.default_rng(23)


def _boxes(batches: int, n: int, center: int) -> np.ndarray:
    """Overlapping boxes around three centres; corners in either order, or centre form."""
    centres = rng.uniform(0.2, 0.8, (3, 2))[rng.integers(0, 3, (batches, n))]
    centres += rng.normal(0, 0.05, (batches, n, 2))
    size = rng.uniform(0.1, 0.3, (batches, n, 2))
    if center:
        return np.concatenate([centres[..., ::-1], size[..., ::-1]], -1).astype(np.float32)
    b = np.concatenate([centres - size / 2, centres + size / 2], -1)
    flip = rng.random((batches, n)) < 0.3
    b[flip] = b[flip][:, [2, 3, 0, 1]]
    return b.astype(np.float32)


def _nms_model(opset, center, inputs=("max", "iou", "score")):
    names = {"max": "max_out", "iou": "iou", "score": "score_thr"}
    node_inputs = ["boxes", "scores"] + [names[k] if k in inputs else "" for k in names]
    while node_inputs[-1] == "":
        node_inputs.pop()
    node = helper.make_node("NonMaxSuppression", node_inputs, ["selected"], center_point_box=center)
    graph_inputs = [vi("boxes", F, None), vi("scores", F, None)]
    graph_inputs += [vi(names[k], I64 if k == "max" else F, [1]) for k in names if k in inputs]
    return model_bytes([node], graph_inputs, [vi("selected", I64, None)], opset=opset)


NMS_CASES = [
    # (opset, center_point_box, inputs given, max per class, iou, score threshold)
    (10, 0, ("max", "iou", "score"), 5, 0.5, 0.3),
    (11, 0, ("max", "iou", "score"), 20, 0.35, 0.0),
    (11, 1, ("max", "iou", "score"), 4, 0.6, 0.25),
    (11, 1, ("max", "iou"), 30, 0.3, None),
    (11, 0, ("max",), 30, None, None),
    (11, 0, (), None, None, None),  # max_output_boxes_per_class 0: nothing selected
    (11, 0, ("max", "iou", "score"), 0, 0.5, 0.0),
    (10, 0, ("max", "iou", "score"), 8, 0.0, 0.5),
]


@pytest.mark.parametrize("opset,center,given,limit,iou,score", NMS_CASES)
def test_non_max_suppression_matches_onnxruntime(opset, center, given, limit, iou, score):
    boxes = _boxes(2, 24, center)
    scores = (rng.integers(0, 12, (2, 3, 24)) / 12).astype(np.float32)  # with ties
    feeds = {"boxes": boxes, "scores": scores}
    for key, name, value, dtype in (
        ("max", "max_out", limit, np.int64),
        ("iou", "iou", iou, np.float32),
        ("score", "score_thr", score, np.float32),
    ):
        if key in given:
            feeds[name] = np.array([value], dtype)
    assert_same_as_ort(_nms_model(opset, center, given), feeds)


def test_nms_exact_iou_at_the_threshold_is_kept_as_onnxruntime_keeps_it():
    boxes = np.array([[[0, 0, 1, 1], [0, 0, 1, 0.5], [0, 0.5, 1, 1], [0, 0, 0.5, 1]]], np.float32)
    scores = np.array([[[0.9, 0.8, 0.8, 0.7]]], np.float32)
    feeds = {
        "boxes": boxes,
        "scores": scores,
        "max_out": np.array([4], np.int64),
        "iou": np.array([0.5], np.float32),
        "score_thr": np.array([0.7], np.float32),
    }
    data = _nms_model(11, 0)
    assert_same_as_ort(data, feeds)
    assert run_engine(data, feeds)["selected"][:, 2].tolist() == [0, 1, 2]


def test_nms_bad_iou_threshold_is_an_error():
    feeds = {
        "boxes": _boxes(1, 4, 0),
        "scores": np.ones((1, 1, 4), np.float32),
        "max_out": np.array([2], np.int64),
        "iou": np.array([1.5], np.float32),
        "score_thr": np.array([0.0], np.float32),
    }
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"iou_threshold must be in range"):
        run_engine(_nms_model(11, 0), feeds)


def _roi_model(opset, **attrs):
    node = helper.make_node("RoiAlign", ["x", "rois", "idx"], ["y"], **attrs)
    inputs = [vi("x", F, None), vi("rois", F, None), vi("idx", I64, None)]
    return model_bytes([node], inputs, [vi("y", F, None)], opset=opset)


ROI_CASES = [
    (10, {"output_height": 3, "output_width": 4, "spatial_scale": 0.25}),
    (10, {"output_height": 2, "output_width": 2, "sampling_ratio": 2, "mode": "max"}),
    (16, {"output_height": 3, "output_width": 3, "spatial_scale": 0.5}),
    (16, {"output_height": 4, "output_width": 2, "mode": "max", "spatial_scale": 0.5}),
    (
        16,
        {
            "output_height": 2,
            "output_width": 5,
            "sampling_ratio": 3,
            "coordinate_transformation_mode": "output_half_pixel",
        },
    ),
    (16, {"output_height": 1, "output_width": 1}),
]


@pytest.mark.parametrize("opset,attrs", ROI_CASES, ids=lambda v: str(v))
def test_roi_align_matches_onnxruntime(opset, attrs):
    x = rng.standard_normal((2, 3, 10, 12)).astype(np.float32)
    scale = attrs.get("spatial_scale", 1.0)
    rois = (
        np.array(
            [[1, 1, 9, 7], [0, 2, 30, 18], [-4, -2, 6, 5], [5, 5, 5.5, 6], [8, 3, 2, 1]], np.float32
        )
        / np.float32(scale)
        * np.float32(0.5 if scale == 1.0 else 1.0)
    )
    feeds = {"x": x, "rois": rois, "idx": np.array([0, 1, 1, 0, 1], np.int64)}
    assert_same_as_ort(_roi_model(opset, **attrs), feeds)


def test_roi_align_unknown_mode_is_refused():
    with pytest.raises(UnsupportedModelError, match="RoiAlign mode"):
        tf.onnx.import_model(_roi_model(16, mode="median"))


def _max_roi_model(**attrs):
    node = helper.make_node("MaxRoiPool", ["x", "rois"], ["y"], **attrs)
    return model_bytes([node], [vi("x", F, None), vi("rois", F, None)], [vi("y", F, None)])


@pytest.mark.parametrize(
    "attrs",
    [{"pooled_shape": [2, 3]}, {"pooled_shape": [3, 3], "spatial_scale": 0.5}],
    ids=str,
)
def test_max_roi_pool_matches_onnxruntime(attrs):
    x = rng.standard_normal((2, 3, 9, 11)).astype(np.float32)
    rois = np.array(
        [
            [0, 1, 1, 7, 6],
            [1, 0, 2.5, 10, 8],
            [1, -3, -2, 4, 3],
            [0, 6, 6, 6, 6],
            [1, 9, 7, 30, 20],
        ],
        np.float32,
    )
    assert_same_as_ort(_max_roi_model(**attrs), {"x": x, "rois": rois})


def round_trip_builder():
    """The ONNX detection ops, for test_graph_def's round-trip table."""
    boxes = tf.constant(_boxes(1, 6, 0))
    scores = tf.constant(np.linspace(0.1, 0.9, 12, dtype=np.float32).reshape(1, 2, 6))
    nms = create(
        "OnnxNonMaxSuppression",
        [boxes, scores, tf.constant(np.int64(3)), tf.constant(0.5), tf.constant(0.2)],
        {"center_point_box": 0, "has_score_threshold": True},
    ).outputs[0]
    x = tf.constant(rng.standard_normal((1, 2, 6, 6)).astype(np.float32))
    attrs = {
        "mode": "avg",
        "output_height": 2,
        "output_width": 3,
        "sampling_ratio": 0,
        "spatial_scale": 1.0,
        "half_pixel": True,
    }
    rois = tf.constant(np.array([[0.5, 1, 4, 5]], np.float32))
    roi = create("OnnxRoiAlign", [x, rois, tf.constant(np.zeros(1, np.int64))], attrs).outputs[0]
    pooled = {"pooled_shape": [2, 2], "spatial_scale": 1.0}
    rois5 = tf.constant(np.array([[0, 0.5, 1, 4, 5]], np.float32))
    pool = create("OnnxMaxRoiPool", [x, rois5], pooled).outputs[0]
    return [nms, roi, pool], {}, []


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_roi_align_rois_that_are_not_finite_fail_the_run(bad):
    # onnxruntime: "All 'rois' values must be finite."
    feeds = {
        "x": rng.standard_normal((1, 2, 8, 8)).astype(np.float32),
        "rois": np.array([[0, 0, bad, 4]], np.float32),
        "idx": np.zeros(1, np.int64),
    }
    data = _roi_model(16, output_height=2, output_width=2, sampling_ratio=2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="rois.*must be finite"):
        run_engine(data, feeds)


def test_roi_align_regions_needing_too_many_samples_fail_clearly():
    # sampling_ratio 0 takes ceil(roi size / bins) samples per bin and axis: 10**14 here.
    feeds = {
        "x": rng.standard_normal((1, 2, 8, 8)).astype(np.float32),
        "rois": np.array([[0, 0, 1e7, 1e7]], np.float32),
        "idx": np.zeros(1, np.int64),
    }
    with pytest.raises(tf.errors.InvalidArgumentError, match="samples"):
        run_engine(_roi_model(16, output_height=1, output_width=1), feeds)


@pytest.mark.parametrize("mode", ["avg", "max"])
def test_roi_align_in_channel_chunks_matches_onnxruntime(monkeypatch, mode):
    # Channels are taken a few at a time when a region has many samples.
    from engine.formats.onnx import mapping_detection

    monkeypatch.setattr(mapping_detection, "_ROI_CHUNK", 3 * 4032)  # 3 channels of 4032
    x = rng.standard_normal((1, 40, 64, 64)).astype(np.float32)
    rois = np.array([[0, 0, 63, 63], [3, 5, 40, 60]], np.float32)
    feeds = {"x": x, "rois": rois, "idx": np.zeros(2, np.int64)}
    assert_same_as_ort(_roi_model(16, output_height=2, output_width=3, mode=mode), feeds)


@pytest.mark.parametrize(
    "data",
    [
        lambda: _roi_model(16, output_height=1 << 16, output_width=1 << 16),
        lambda: _max_roi_model(pooled_shape=[1 << 16, 1 << 16]),
    ],
    ids=["RoiAlign", "MaxRoiPool"],
)
def test_roi_output_sizes_are_bounded(data):
    with pytest.raises(UnsupportedModelError, match="RoiAlign output size|MaxRoiPool pooled_shape"):
        tf.onnx.import_model(data())
