"""``tf.image.ssim``: structural similarity of two images (or batches), per image, with TF's
Gaussian window (a softmax of the squared distances), VALID depthwise filtering and
constants; composed from engine ops as TF's Python composes it."""

from __future__ import annotations

from engine import dtypes
from engine.framework.constant_op import constant, convert_to_tensor
from engine.framework.graph import Tensor, control_dependencies, name_scope
from engine.image_adjust import convert_image_dtype
from engine.ops import array as array_ops
from engine.ops import array_transform, logging_ops, nn, nn_conv, reduction, slicing
from engine.ops import math as math_ops

__all__ = ["ssim"]


def _gaussian_window(size: Tensor, sigma: Tensor) -> Tensor:
    """TF's ``_fspecial_gauss``: a ``[size, size, 1, 1]`` Gaussian that sums to 1."""
    coords = math_ops.cast(array_ops.range(size), sigma.dtype)
    coords = math_ops.subtract(coords, math_ops.cast(size - 1, sigma.dtype) / 2.0)
    g = math_ops.multiply(math_ops.square(coords), -0.5 / math_ops.square(sigma))
    g = array_ops.reshape(g, [1, -1]) + array_ops.reshape(g, [-1, 1])
    g = nn.softmax(array_ops.reshape(g, [1, -1]))
    return array_ops.reshape(g, array_transform.stack([size, size, 1, 1]))


def _check_shapes(img1: Tensor, img2: Tensor) -> list:
    shape1 = img1.shape.with_rank_at_least(3)
    shape2 = img2.shape.with_rank_at_least(3)
    shape1[-3:].assert_is_compatible_with(shape2[-3:])
    if shape1.rank is not None and shape2.rank is not None:
        for d1, d2 in zip(reversed(shape1.as_list()[:-3]), reversed(shape2.as_list()[:-3])):
            if not (d1 == 1 or d2 == 1 or d1 is None or d2 is None or d1 == d2):
                raise ValueError(f"Two images are not compatible: {shape1} and {shape2}")
    s1, s2 = array_ops.shape(img1), array_ops.shape(img2)
    same = reduction.reduce_all(
        math_ops.equal(slicing.strided_slice(s1, [-3], [0], end_mask=1), s2[-3:])
    )
    return [logging_ops.Assert(same, [s1, s2], summarize=10)]


def _ssim_per_channel(img1, img2, max_val, filter_size, filter_sigma, k1, k2, index_map):
    size = constant(filter_size, dtype=dtypes.int32)
    sigma = constant(filter_sigma, dtype=img1.dtype)
    shape1, shape2 = array_ops.shape(img1), array_ops.shape(img2)
    checks = [
        logging_ops.Assert(
            reduction.reduce_all(math_ops.greater_equal(shape[-3:-1], size)),
            [shape, size],
            summarize=8,
        )
        for shape in (shape1, shape2)
    ]
    with control_dependencies(checks):
        img1 = array_ops.identity(img1)
    kernel = array_transform.tile(
        _gaussian_window(size, sigma), array_transform.stack([1, 1, shape1[-1], 1])
    )

    def reducer(x):
        shape = array_ops.shape(x)
        x = array_ops.reshape(x, array_transform.concat([[-1], shape[-3:]], 0))
        y = nn_conv.depthwise_conv2d(x, kernel, strides=[1, 1, 1, 1], padding="VALID")
        return array_ops.reshape(y, array_transform.concat([shape[:-3], array_ops.shape(y)[1:]], 0))

    c1 = (k1 * max_val) ** 2
    c2 = (k2 * max_val) ** 2
    mean0, mean1 = reducer(img1), reducer(img2)
    num0 = mean0 * mean1 * 2.0
    den0 = math_ops.square(mean0) + math_ops.square(mean1)
    luminance = (num0 + c1) / (den0 + c1)
    num1 = reducer(img1 * img2) * 2.0
    den1 = reducer(math_ops.square(img1) + math_ops.square(img2))
    cs = (num1 - num0 + c2) / (den1 - den0 + c2)
    if index_map:
        return luminance * cs
    return reduction.reduce_mean(luminance * cs, constant([-3, -2], dtype=dtypes.int32))


def ssim(
    img1,
    img2,
    max_val,
    filter_size=11,
    filter_sigma=1.5,
    k1=0.01,
    k2=0.03,
    return_index_map=False,
) -> Tensor:
    """The SSIM of ``img1`` and ``img2`` (``[..., height, width, channels]``, values up to
    ``max_val``), averaged over channels: one value per image, or per window position with
    ``return_index_map``. Images must be at least ``filter_size`` high and wide."""
    with name_scope(None, "SSIM", [img1, img2]):
        img1 = convert_to_tensor(img1, name="img1")
        img2 = convert_to_tensor(img2, name="img2")
        with control_dependencies(_check_shapes(img1, img2)):
            img1 = array_ops.identity(img1)
        max_val = convert_image_dtype(math_ops.cast(max_val, img1.dtype), dtypes.float32)
        img1 = convert_image_dtype(img1, dtypes.float32)
        img2 = convert_image_dtype(img2, dtypes.float32)
        per_channel = _ssim_per_channel(
            img1, img2, max_val, filter_size, filter_sigma, k1, k2, return_index_map
        )
        return reduction.reduce_mean(per_channel, [-1])
