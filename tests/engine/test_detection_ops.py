"""Non-max suppression (V1..V5, with overlaps, combined) and crop_and_resize against
TensorFlow: values, gradients, static shapes and error messages recorded by
``fixtures/make_detection_fixtures.py`` from the same graphs (``build``, ``ERRORS``)."""

import numpy as np
import pytest

import engine as tf
from engine import errors
from tests.engine.fixtures import make_detection_fixtures as fx
from tests.engine.fixtures.oracle import assert_recorded, assert_recorded_error, load
from tests.engine.optable import Case, check_gradient

TF = load("detection_tf.npz")
VALUE_KEYS = sorted(
    k
    for k in TF.files
    if not k.startswith(("shape_", "error_", "range_error_", "tf_version", "graph"))
)


@pytest.fixture(scope="module")
def ours():
    g = tf.Graph()
    with g.as_default():
        fetch, shapes = fx.build(tf)
        with tf.Session(graph=g) as sess:
            return sess.run(fetch), shapes


def test_every_recorded_value_is_compared(ours):
    values, _ = ours
    assert sorted(values) == VALUE_KEYS
    assert str(TF["tf_version"]).count(".") == 2


def _tolerance(key: str) -> tuple[float, float]:
    if key.startswith("grad_boxes"):
        return 1e-5, 1e-5  # TF sums term by term in float32
    if "f16" in key or "half" in key:
        return 1e-3, 1e-3
    return 1e-6, 1e-6


@pytest.mark.parametrize("key", VALUE_KEYS)
def test_values_and_gradients_match_tensorflow(ours, key):
    values, _ = ours
    rtol, atol = _tolerance(key)
    assert_recorded(values[key], TF[key], key, rtol=rtol, atol=atol)


def test_static_shapes_match_tensorflow(ours):
    _, shapes = ours
    for key, dims in shapes.items():
        assert dims == TF[f"shape_{key}"].tolist(), key


def test_the_recorded_cases_exercise_what_they_claim():
    """IoU exactly at the threshold keeps the box (TF compares with '>'), a score equal to
    the threshold drops it, equal scores come out lowest index first, soft-NMS decays."""
    assert TF["v3_exact_50"].tolist() == [0, 1, 2, 3] and TF["v3_exact_49"].tolist() == [0, 3]
    assert TF["v3_score_eq"].tolist() == [0]
    ties = TF["v3_ties"]
    s = fx.SCORES[ties]
    assert (np.diff(s) <= 0).all() and any(
        s[i] == s[i + 1] and ties[i] < ties[i + 1] for i in range(len(s) - 1)
    )
    decayed = TF["v5_s5_t10_scores"] < fx.SCORES[TF["v5_s5_t10"]]
    assert decayed.any() and not decayed.all()
    assert int(TF["v4_pad1_valid"]) < len(TF["v4_pad1"])
    clipped, raw = TF["c_q1_boxes"], TF["c_q1_noclip_boxes"]
    assert ((clipped >= 0) & (clipped <= 1)).all() and ((raw < 0) | (raw > 1)).any()
    assert (TF["crop_bilinear_extrap"] == -1.5).any()


@pytest.mark.parametrize("key", sorted(fx.ERRORS))
def test_errors_match_tensorflow(key):
    assert_recorded_error(tf, TF, key, fx.ERRORS[key])


@pytest.mark.parametrize("key", sorted(fx.OUT_OF_RANGE))
def test_box_indices_out_of_range_match_tensorflow(key):
    with tf.Graph().as_default(), tf.Session() as sess:
        t = fx.OUT_OF_RANGE[key](tf)
        with pytest.raises(errors.OutOfRangeError) as info:
            sess.run(t)
    assert str(TF[f"range_error_{key}"]) in str(info.value)


def test_tensorflow_graph_def_imports_and_runs_as_tensorflow_ran_it():
    """A GraphDef TF wrote (V1, V2, with overlaps, combined, crop_and_resize and both of its
    gradient ops, placeholders fed) gives TF's values."""
    with tf.Graph().as_default():
        names = [f"{name}:0" for name in fx.GRAPH_FETCHES]
        outs = tf.import_graph_def(TF["graph_def"].tobytes(), return_elements=names, name="")
        ops = {op.type for op in tf.get_default_graph().get_operations()}
        assert {"CropAndResizeGradImage", "CropAndResizeGradBoxes", "NonMaxSuppression"} <= ops
        with tf.Session() as sess:
            feed = {"boxes:0": fx.BOXES, "scores:0": fx.SCORES, "image:0": fx.IMAGE}
            got = sess.run(outs, feed)
    for name, value in zip(fx.GRAPH_FETCHES, got):
        assert_recorded(value, TF[f"graph_{name}"], name, rtol=1e-5, atol=1e-5)


def test_nms_with_unknown_shapes_and_fed_thresholds():
    with tf.Graph().as_default():
        b = tf.placeholder(tf.float32, [None, 4])
        s = tf.placeholder(tf.float32, [None])
        thr = tf.placeholder(tf.float32, [])
        idx = tf.image.non_max_suppression(b, s, 30, thr, 0.3)
        assert idx.shape.as_list() == [None]
        with tf.Session() as sess:
            got = sess.run(idx, {b: fx.BOXES, s: fx.SCORES, thr: 0.4})
    np.testing.assert_array_equal(got, TF["v3"])


def test_combined_nms_with_unknown_batch():
    with tf.Graph().as_default():
        b = tf.placeholder(tf.float32, [None, None, 1, 4])
        s = tf.placeholder(tf.float32, [None, None, 3])
        out = tf.image.combined_non_max_suppression(b, s, 4, 7, 0.4, 0.1)
        assert out[0].shape.as_list() == [None, 7, 4]
        with tf.Session() as sess:
            got = sess.run(out, {b: fx.C_BOXES_1, s: fx.C_SCORES})
    for value, suffix in zip(got, ("boxes", "scores", "classes", "valid")):
        assert_recorded(value, TF[f"c_q1_{suffix}"], suffix, rtol=0)


_IMAGE = np.random.default_rng(3).standard_normal((2, 5, 6, 2))
# no sample on a pixel row or column: there the bilinear gradient is one-sided (as TF's)
_CROP_BOXES = np.array([[0.13, 0.17, 0.71, 0.83], [0.82, 0.91, 0.27, 0.06]])


def _crop(method):
    def build(image, boxes):
        return tf.image.crop_and_resize(
            image, tf.cast(boxes, tf.float32), [1, 0], (3, 4), method=method
        )

    return build


GRAD_CASES = [
    Case(
        "crop_and_resize_bilinear",
        _crop("bilinear"),
        [_IMAGE, _CROP_BOXES],
        None,
        grad_inputs=(0, 1),
    ),
    Case(
        "crop_and_resize_nearest", _crop("nearest"), [_IMAGE, _CROP_BOXES], None, grad_inputs=(0,)
    ),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=str)
def test_crop_and_resize_gradients_match_finite_differences(case):
    # float32 output: steps large enough for float32 rounding, bilinear is piecewise smooth
    check_gradient(case, tol=2e-3, delta=1e-3)


def round_trip_builder():
    """Every op of the detection modules, for test_graph_def's round-trip table."""
    fetch, _ = fx.build(tf)
    return list(fetch.values()), {}, []


@pytest.mark.parametrize("threshold", [0.0, 0.3, 0.7])
def test_the_vectorised_hard_nms_selects_as_the_pairwise_loop(threshold):
    # 3000 boxes in clusters, scores with many exact ties: enough boxes for the x-window
    # pruning, compared with TF's lazy loop (a similarity without the symmetric mark).
    from engine.ops.detection_ops import greedy_nms, iou_fn

    rng = np.random.default_rng(3)
    centers = rng.uniform(0, 200, size=(60, 2))
    pick = centers[rng.integers(0, 60, size=3000)] + rng.normal(0, 4, size=(3000, 2))
    size = rng.uniform(2, 20, size=(3000, 2))
    boxes = np.concatenate([pick, pick + size], axis=1).astype(np.float32)
    boxes[::7] = boxes[::7][:, [2, 3, 0, 1]]  # some in the other corner order
    scores = np.round(rng.uniform(0, 1, 3000), 2).astype(np.float32)
    fast = iou_fn(boxes)

    def loop(i, js):
        return fast(i, js)

    for limit, floor in ((3000, None), (50, np.float32(0.4))):
        want = greedy_nms(loop, scores, limit, threshold, floor)
        got = greedy_nms(fast, scores, limit, threshold, floor)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
