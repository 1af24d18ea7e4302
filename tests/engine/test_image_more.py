"""``tf.image`` geometry, conversion and colour against TensorFlow: values, static shapes and
names recorded by ``fixtures/make_image_more_fixtures.py`` from the same graphs; random
functions checked by the properties their recording cannot pin (the engine's random stream is
not TF's)."""

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures.make_image_more_fixtures import (
    HSV,
    IMG,
    RANDOM_KEYS,
    build_image,
    static_shapes,
)
from tests.engine.fixtures.oracle import (
    assert_recorded,
    assert_recorded_names,
    load,
    recorded_keys,
    run_graph,
)
from tests.engine.optable import Case, check_gradient

TF = load("image_more_tf.npz")
SHAPES = load("image_more_shapes_tf.npz")


@pytest.fixture(scope="module")
def ours():
    return run_graph(tf, build_image)


@pytest.mark.parametrize("key", recorded_keys(TF, skip=RANDOM_KEYS))
def test_image_functions_match_tensorflow(ours, key):
    # Hue and saturation round-trip through float32 HSV, as TF's kernels do; one uint8 step
    # of slack where a float lands a hair either side of .0 before truncation.
    atol = 1 if TF[key].dtype == np.uint8 else 2e-6
    if TF[key].dtype.kind == "f":
        assert_recorded(ours[key], TF[key], key, rtol=2e-5, atol=atol)
    else:
        got = np.asarray(ours[key])
        assert got.dtype == TF[key].dtype and got.shape == TF[key].shape, key
        np.testing.assert_allclose(got.astype(np.int64), TF[key].astype(np.int64), atol=atol)


def test_integer_conversions_are_exact(ours):
    for key in recorded_keys(TF, skip=RANDOM_KEYS):
        if key.startswith(("convert", "flip", "pad_box", "crop")):
            assert_recorded(ours[key], TF[key], key, rtol=0)


def test_static_shapes_match_tensorflow():
    got = static_shapes(tf)
    for key in recorded_keys(SHAPES):
        np.testing.assert_array_equal(got[key], SHAPES[key], err_msg=key)


def test_tensor_names_match_tensorflow(ours):
    assert_recorded_names(ours, TF)


def test_random_flips_flip_whole_images(ours):
    flipped, mirror = ours["rand_flip_lr"], IMG[:, :, ::-1]
    for i in range(2):
        assert np.array_equal(flipped[i], IMG[i]) or np.array_equal(flipped[i], mirror[i])
    single = ours["rand_flip_ud_single"]
    assert np.array_equal(single, IMG[1]) or np.array_equal(single, IMG[1, ::-1])


def test_random_flips_use_both_outcomes():
    seen = set()
    with tf.Graph().as_default():
        out = tf.image.random_flip_left_right(tf.constant(np.tile(IMG[:1], (64, 1, 1, 1))))
        with tf.Session() as sess:
            got = sess.run(out)
    for image in got:
        seen.add(bool(np.array_equal(image, IMG[0])))
    assert seen == {True, False}


def _is_window(window, value):
    for offs in np.ndindex(*(np.array(value.shape) - window.shape + 1)):
        region = tuple(slice(o, o + n) for o, n in zip(offs, window.shape))
        if np.array_equal(value[region], window):
            return True
    return False


def test_random_crops_are_windows(ours):
    assert _is_window(ours["rand_crop"], IMG)
    assert _is_window(ours["rand_crop_image"], IMG[1])


def test_random_adjustments_stay_in_their_range(ours):
    delta = ours["rand_brightness"] - IMG
    assert np.ptp(delta) < 1e-6 and abs(delta.flat[0]) <= 0.2
    means = IMG.mean(axis=(1, 2), keepdims=True)
    factor = (ours["rand_contrast"] - means) / (IMG - means)
    assert np.ptp(factor) < 1e-3 and 0.2 <= factor.flat[0] < 1.8
    hsv = TF["rgb_to_hsv"]
    got = run_graph(
        tf,
        lambda t: {
            "sat": t.image.rgb_to_hsv(ours["rand_saturation"]),
            "hue": t.image.rgb_to_hsv(ours["rand_hue"]),
        },
    )
    # Saturation keeps hue and value; a hue shift keeps value and saturation.
    coloured = hsv[..., 1] > 0.1
    np.testing.assert_allclose(got["sat"][..., 2], hsv[..., 2], atol=1e-6)
    np.testing.assert_allclose(got["sat"][..., 0][coloured], hsv[..., 0][coloured], atol=1e-5)
    np.testing.assert_allclose(got["hue"][..., 1:], hsv[..., 1:], atol=1e-5)
    shift = np.mod(got["hue"][..., 0] - hsv[..., 0] + 0.5, 1.0) - 0.5
    assert np.ptp(shift[coloured]) < 1e-4 and abs(shift[coloured][0]) <= 0.3


def test_hsv_round_trip_and_grey_pixels(ours):
    np.testing.assert_allclose(ours["hsv_round_trip"], IMG, atol=2e-6)
    assert ours["rgb_to_hsv"][0, 0, 0].tolist() == [0.0, 0.0, 0.5]
    assert not np.allclose(ours["hsv_to_rgb"], HSV)


def test_errors_are_tensorflows():
    with tf.Graph().as_default():
        img = tf.constant(IMG)
        with pytest.raises(ValueError, match="must be at least three-dimensional"):
            tf.image.flip_left_right(tf.constant(IMG[0, 0]))
        with pytest.raises(ValueError, match="must have either 3 or 4 dimensions"):
            tf.image.flip_up_down(tf.zeros([1, 2, 3, 4, 3]))
        with pytest.raises(ValueError, match=r"central_fraction must be within \(0, 1\]"):
            tf.image.central_crop(img, 0.0)
        with pytest.raises(ValueError, match="width must be >= target \\+ offset"):
            tf.image.crop_to_bounding_box(img, 0, 3, 2, 4)
        with pytest.raises(ValueError, match="height must be <= target - offset"):
            tf.image.pad_to_bounding_box(img, 2, 0, 6, 6)
        with pytest.raises(ValueError, match="target_width must be > 0"):
            tf.image.resize_image_with_crop_or_pad(img, 3, 0)
        with pytest.raises(ValueError, match="target_height must be > 0"):
            tf.image.resize_image_with_pad(img, 0, 4)
        with pytest.raises(ValueError, match="known rank"):
            tf.image.rgb_to_yuv(tf.placeholder(tf.float32))
        with pytest.raises(ValueError, match="max_delta must be <= 0.5"):
            tf.image.random_hue(img, 0.6)
        with pytest.raises(ValueError, match="upper must be > lower"):
            tf.image.random_contrast(img, 1.0, 1.0)
        with pytest.raises(ValueError, match="lower must be non-negative"):
            tf.image.random_saturation(img, -1.0, 1.0)
        with pytest.raises(ValueError, match="max_delta must be non-negative"):
            tf.image.random_brightness(img, -0.1)
        with pytest.raises(ValueError, match="image_gradients expects a 4D tensor"):
            tf.image.image_gradients(img[0])
        with pytest.raises(ValueError, match="Gamma should be a non-negative"):
            tf.image.adjust_gamma(img, -1.0)
        with pytest.raises(AttributeError, match="dtype must be either floating point or integer"):
            tf.image.convert_image_dtype(img, tf.string)
        with pytest.raises(ValueError, match="last dimension must be size 3"):
            tf.image.rgb_to_hsv(tf.zeros([2, 2, 4]))
        with pytest.raises(TypeError, match="float"):
            tf.image.rgb_to_hsv(tf.zeros([2, 2, 3], tf.int32))


def test_runtime_crop_checks_fail_at_run_time():
    with tf.Graph().as_default():
        unknown = tf.placeholder(tf.float32, [None, None, None, 3])
        out = tf.image.crop_to_bounding_box(unknown, 0, 0, 4, 4)
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="target \\+ offset"):
                sess.run(out, {unknown: IMG[:, :2]})
        crop = tf.random_crop(unknown, [1, 9, 9, 3])
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="Need value.shape >= size"):
                sess.run(crop, {unknown: IMG})


def test_ssim_and_unknown_rank_errors():
    with tf.Graph().as_default():
        img = tf.constant(IMG)
        with pytest.raises(ValueError, match="are incompatible"):
            tf.image.ssim(img, tf.zeros([2, 5, 7, 3]), 1.0)
        with pytest.raises(ValueError, match="known rank"):
            tf.image.flip_left_right(tf.placeholder(tf.float32))
        with pytest.raises(ValueError, match="negative"):  # 5x6 images, an 11x11 window
            tf.image.ssim(img, img, 1.0)
        unknown = tf.placeholder(tf.float32, [None, None, None, 3])
        small = tf.image.ssim(unknown, unknown, 1.0)
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError):
                sess.run(small, {unknown: IMG})


def test_sampled_boxes_satisfy_their_constraints():
    box = np.array([0.1, 0.2, 0.5, 0.9], np.float32)  # ymin, xmin, ymax, xmax
    with tf.Graph().as_default():
        begin, size, bboxes = tf.image.sample_distorted_bounding_box(
            [40, 60, 3], box.reshape(1, 1, 4), seed=7, min_object_covered=0.5
        )
        crop = tf.slice(tf.zeros([40, 60, 3]), begin, size)
        with tf.Session() as sess:
            draws = [sess.run([begin, size, bboxes, tf.shape(crop)]) for _ in range(40)]
    seen = set()
    for b, sz, bb, crop_shape in draws:
        y, x, h, w = b[0], b[1], sz[0], sz[1]
        assert crop_shape.tolist() == [h, w, 3] and 0 <= y and y + h <= 40 and x + w <= 60
        np.testing.assert_allclose(bb[0, 0], [y / 40, x / 60, (y + h) / 40, (x + w) / 60])
        assert 0.05 * 2400 - 1 <= h * w <= 2400
        bx0, by0, bx1, by1 = int(box[1] * 60), int(box[0] * 40), int(box[3] * 60), int(box[2] * 40)
        inter = max(0, min(x + w, bx1) - max(x, bx0)) * max(0, min(y + h, by1) - max(y, by0))
        whole = (h, w) == (40, 60)
        assert whole or (inter / ((bx1 - bx0) * (by1 - by0)) >= 0.5 and 0.7 <= w / h <= 1.4)
        seen.add((int(y), int(x), int(h), int(w)))
    assert len(seen) > 10  # the crops vary from run to run


def test_draw_bounding_boxes_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Channel depth should be either 1"):
            tf.image.draw_bounding_boxes(tf.zeros([1, 4, 4, 2]), tf.zeros([1, 1, 4]))
        with pytest.raises(TypeError, match="float32 or float16"):
            tf.image.draw_bounding_boxes(tf.zeros([1, 4, 4, 3], tf.int32), tf.zeros([1, 1, 4]))
        bad = tf.image.draw_bounding_boxes(tf.zeros([2, 4, 4, 3]), tf.zeros([1, 1, 4]))
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="batch, num_boxes, 4"):
                sess.run(bad)


def test_sample_distorted_bounding_box_errors():
    with tf.Graph().as_default():
        sample = tf.image.sample_distorted_bounding_box
        with pytest.raises(ValueError, match="area_range must be within"):
            sample([4, 4, 1], tf.zeros([1, 1, 4]), area_range=(0.0, 1.0))
        with pytest.raises(TypeError, match="integer"):
            sample(tf.constant([4.0, 4.0, 1.0]), tf.zeros([1, 1, 4]))
        no_boxes = sample([4, 4, 1], tf.zeros([1, 0, 4]))
        bad = sample([4, 4, 1], [[[0.5, 0.0, 0.2, 1.0]]])
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="No bounding boxes"):
                sess.run(no_boxes)
            with pytest.raises(tf.errors.InvalidArgumentError, match="ymin <= ymax"):
                sess.run(bad)


def round_trip_builder():
    """The colour kernels (``engine/ops/image_color.py``) for the GraphDef round-trip test."""
    img = tf.constant(IMG)
    fetches = [
        tf.image.rgb_to_hsv(img),
        tf.image.hsv_to_rgb(tf.constant(HSV)),
        tf.image.adjust_contrast(img, 1.5),
        tf.image.adjust_saturation(img, 0.5),
        tf.image.adjust_hue(img, 0.2),
        tf.extract_image_patches(img, [1, 2, 2, 1], [1, 1, 2, 1], [1, 2, 1, 1], "SAME"),
        tf.gradients(tf.reduce_sum(tf.image.rgb_to_hsv(img)), img)[0],
        tf.image.sample_distorted_bounding_box(
            [5, 6, 3],
            tf.zeros([1, 0, 4]),
            area_range=(1.0, 1.0),
            aspect_ratio_range=(1.2, 1.2),
            use_image_if_no_bounding_boxes=True,
        )[1],
        tf.image.draw_bounding_boxes(img, [[[0.1, 0.1, 0.8, 0.6]], [[0.0, 0.2, 1.0, 0.5]]]),
        tf.image.draw_bounding_boxes(img, [[[0.1, 0.1, 0.8, 0.6]]] * 2, colors=[[1.0, 0.5, 0.0]]),
    ]
    return fetches, {}, []


_SMOOTH = np.random.default_rng(5).random((2, 3, 4, 3)) * 0.8 + 0.1  # no ties, no zeros

GRAD_CASES = [
    Case("rgb_to_hsv", lambda x: tf.image.rgb_to_hsv(x), [_SMOOTH], None, grad_inputs=(0,)),
    Case(
        "extract_patches_same",
        lambda x: tf.extract_image_patches(x, [1, 2, 3, 1], [1, 2, 1, 1], [1, 1, 2, 1], "SAME"),
        [_SMOOTH],
        None,
        grad_inputs=(0,),
    ),
    Case(
        "extract_patches_valid",
        lambda x: tf.image.extract_patches(x, [1, 2, 2, 1], [1, 1, 2, 1], [1, 1, 1, 1], "VALID"),
        [_SMOOTH],
        None,
        grad_inputs=(0,),
    ),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.id)
def test_gradients_match_finite_differences(case):
    check_gradient(case)


def test_extract_patches_errors():
    with tf.Graph().as_default():
        img = tf.constant(IMG)
        with pytest.raises(ValueError, match="ksizes must be"):
            tf.extract_image_patches(img, [2, 2, 2, 1], [1, 1, 1, 1], [1, 1, 1, 1], "SAME")
        with pytest.raises(ValueError, match="padding must be VALID or SAME"):
            tf.extract_image_patches(img, [1, 2, 2, 1], [1, 1, 1, 1], [1, 1, 1, 1], "FULL")
        with pytest.raises(ValueError, match="rank 4"):
            tf.extract_image_patches(img[0], [1, 2, 2, 1], [1, 1, 1, 1], [1, 1, 1, 1], "SAME")
