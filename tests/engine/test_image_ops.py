"""Image resizes and non-max suppression against the values TensorFlow computed
(tests/fixtures/tensorflow/resize and nms)."""

import pathlib

import numpy as np
import pytest

import engine as tf
from engine import errors
from tests.engine.optable import Case, check_case

IO = np.load(pathlib.Path(__file__).parents[1] / "fixtures/tensorflow/resize/io.npz")
CASES = [
    (method, size, ac, hp)
    for method in ("bilinear", "nearest")
    for size in ((5, 7), (2, 3))
    for ac, hp in ((False, False), (True, False), (False, True))
]


@pytest.mark.parametrize("method,size,ac,hp", CASES)
def test_resize_matches_tensorflow(method, size, ac, hp):
    fn = tf.image.resize_bilinear if method == "bilinear" else tf.image.resize_nearest_neighbor
    want = IO[f"{method}_{size[0]}x{size[1]}_{int(ac)}{int(hp)}"]
    with tf.Graph().as_default():
        images = tf.placeholder(tf.float32, [None, 3, 4, 2])
        out = fn(images, size, align_corners=ac, half_pixel_centers=hp)
        assert out.shape.as_list() == [None, *size, 2]
        with tf.Session() as sess:
            got = sess.run(out, {images: IO["images"]})
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_resize_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="align_corners"):
            tf.image.resize_bilinear(
                IO["images"], (2, 2), align_corners=True, half_pixel_centers=True
            )
        size = tf.placeholder(tf.int32, [2])
        out = tf.image.resize_nearest_neighbor(IO["images"], size)
        assert out.shape.as_list() == [2, None, None, 2]
        with tf.Session() as sess:
            with pytest.raises(errors.InvalidArgumentError, match="positive"):
                sess.run(out, {size: [0, 3]})


# -- non-max suppression -------------------------------------------------------------------

NMS = pathlib.Path(__file__).parents[1] / "fixtures/tensorflow/nms"


def test_nms_v3_v4_v5_graph_matches_tensorflow():
    io = np.load(NMS / "io.npz")
    names = ["v3/NonMaxSuppressionV3:0", "v4:0", "v4:1", "v5:0", "v5:1", "v5:2"]
    keys = ["v3", "v4", "v4_valid", "v5", "v5_scores", "v5_valid"]
    with tf.Graph().as_default() as g:
        outs = tf.import_graph_def((NMS / "model.pb").read_bytes(), return_elements=names)
        assert g.get_tensor_by_name("import/v4:0").shape.as_list() == [40]  # padded, constant
        with tf.Session() as sess:
            got = sess.run(outs, {"import/boxes:0": io["boxes"], "import/scores:0": io["scores"]})
    assert int(io["v4_valid"]) < 40  # the padding is exercised
    for key, value in zip(keys, got):
        assert value.dtype == io[key].dtype, key
        np.testing.assert_allclose(value, io[key], rtol=1e-5, err_msg=key)


_BOXES = np.array(
    [[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11], [1, 11, 0, 10.1]],
    np.float32,
)
_SCORES = np.array([0.9, 0.75, 0.6, 0.95, 0.5], np.float32)

# Boxes 1 and 2 overlap box 0 (IoU 0.82); box 4, given by its other diagonal, overlaps box 3.
NMS_CASES = [
    Case(
        "nms_v3",
        lambda b, s: tf.image.non_max_suppression(b, s, 3, iou_threshold=0.5),
        [_BOXES, _SCORES],
        lambda b, s: np.array([3, 0], np.int32),
    ),
    Case(
        "nms_v4_padded",
        lambda b, s: list(
            tf.image.non_max_suppression_padded(b, s, 4, 0.5, 0.7, pad_to_max_output_size=True)
        ),
        [_BOXES, _SCORES],
        lambda b, s: [np.array([3, 0, 0, 0], np.int32), np.int32(2)],
        static_shape=[[4], []],
    ),
    Case(
        "nms_v5_hard",
        lambda b, s: list(tf.image.non_max_suppression_with_scores(b, s, 5, 0.95)),
        [_BOXES, _SCORES],
        lambda b, s: [np.array([3, 0, 1, 2, 4], np.int32), s[[3, 0, 1, 2, 4]]],
    ),
]


@pytest.mark.parametrize("case", NMS_CASES, ids=str)
def test_nms_table(case):
    check_case(case)


def test_soft_nms_decays_overlapping_scores_instead_of_dropping():
    with tf.Graph().as_default(), tf.Session() as sess:
        idx, scores = sess.run(
            tf.image.non_max_suppression_with_scores(
                _BOXES, _SCORES, 10, iou_threshold=1.0, soft_nms_sigma=0.5
            )
        )
    assert sorted(idx.tolist()) == [0, 1, 2, 3, 4]
    assert idx[:2].tolist() == [3, 0]
    # the boxes overlapping a kept box keep a decayed score: exp(-iou**2 / (2 * sigma))
    assert np.all(scores[2:] < _SCORES[idx[2:]]) and np.all(np.diff(scores) <= 0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"iou_threshold": 1.5}, r"iou_threshold must be in \[0, 1\]"),
        ({"max_output_size": -1}, "output size must be non-negative"),
        ({"soft_nms_sigma": -0.5}, "soft_nms_sigma must be non-negative"),
    ],
)
def test_nms_bad_arguments_are_invalid_argument_errors(kwargs, message):
    args = {"max_output_size": 3, "iou_threshold": 0.5, "soft_nms_sigma": 0.0, **kwargs}
    with tf.Graph().as_default(), tf.Session() as sess:
        out = tf.image.non_max_suppression_with_scores(_BOXES, _SCORES, **args)
        with pytest.raises(errors.InvalidArgumentError, match=message):
            sess.run(out)


def test_nms_shape_errors_at_build_time():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Dimension must be 4 but is 5"):
            tf.image.non_max_suppression(np.zeros((3, 5), np.float32), np.zeros(3, np.float32), 2)
        with pytest.raises(ValueError, match="Dimensions must be equal, but are 3 and 2"):
            tf.image.non_max_suppression(np.zeros((3, 4), np.float32), np.zeros(2, np.float32), 2)
        with pytest.raises(TypeError, match="float16 or float32"):
            tf.image.non_max_suppression(np.zeros((3, 4), np.int32), np.zeros(3, np.int32), 2)
