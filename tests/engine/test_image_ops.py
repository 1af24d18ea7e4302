"""Image resizes against the values TensorFlow computed (tests/fixtures/tensorflow/resize)."""

import pathlib

import numpy as np
import pytest

import engine as tf
from engine import errors

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
