"""More of ``tf.image``, composed as TF's Python composes it: the YIQ and YUV colour spaces
(a ``tensordot`` with TF's matrices), ``sobel_edges`` (REFLECT padding and a depthwise
convolution) and ``resize_image_with_pad`` (aspect-preserving resize, then centred padding)."""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.framework.constant_op import constant, convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.image_geometry import image_rank, pad_to_bounding_box
from engine.ops import array as array_ops
from engine.ops import array_transform, image_ops, linalg, nn_conv, slicing
from engine.ops import math as math_ops

__all__ = [
    "rgb_to_yiq",
    "yiq_to_rgb",
    "rgb_to_yuv",
    "yuv_to_rgb",
    "sobel_edges",
    "resize_image_with_pad",
]

_RGB_TO_YIQ = [
    [0.299, 0.59590059, 0.2115],
    [0.587, -0.27455667, -0.52273617],
    [0.114, -0.32134392, 0.31119955],
]
_YIQ_TO_RGB = [
    [1, 1, 1],
    [0.95598634, -0.27201283, -1.10674021],
    [0.6208248, -0.64720424, 1.70423049],
]
_RGB_TO_YUV = [
    [0.299, -0.14714119, 0.61497538],
    [0.587, -0.28886916, -0.51496512],
    [0.114, 0.43601035, -0.10001026],
]
_YUV_TO_RGB = [[1, 1, 1], [0, -0.394642334, 2.03206185], [1.13988303, -0.58062185, 0]]


def _colour_space(images, matrix) -> Tensor:
    images = convert_to_tensor(images, name="images")
    kernel = convert_to_tensor(matrix, dtype=images.dtype, name="kernel")
    ndims = images.shape.rank
    if ndims is None:
        raise ValueError(f"images must have a known rank, got {images.shape}")
    return linalg.tensordot(images, kernel, axes=[[ndims - 1], [0]])


def rgb_to_yiq(images) -> Tensor:
    """RGB to YIQ on the last axis of a float image."""
    return _colour_space(images, _RGB_TO_YIQ)


def yiq_to_rgb(images) -> Tensor:
    """YIQ to RGB on the last axis of a float image."""
    return _colour_space(images, _YIQ_TO_RGB)


def rgb_to_yuv(images) -> Tensor:
    """RGB to YUV on the last axis of a float image."""
    return _colour_space(images, _RGB_TO_YUV)


def yuv_to_rgb(images) -> Tensor:
    """YUV to RGB on the last axis of a float image."""
    return _colour_space(images, _YUV_TO_RGB)


def sobel_edges(image) -> Tensor:
    """``[batch, h, w, d, 2]``: the vertical and horizontal Sobel responses of an NHWC
    float image, with REFLECT padding."""
    image = convert_to_tensor(image)
    static = image.shape
    shape = array_ops.shape(image)
    kernels = np.transpose(
        np.asarray([[[-1, -2, -1], [0, 0, 0], [1, 2, 1]], [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]]]),
        (1, 2, 0),
    )
    kernels_t = constant(np.expand_dims(kernels, -2), dtype=image.dtype)
    depth = slicing.strided_slice(shape, [-1], [0], end_mask=1)
    multiples = array_transform.concat([[1, 1], depth, [1]], 0)
    kernels_t = array_transform.tile(kernels_t, multiples, name="sobel_filters")
    padded = array_transform.pad(image, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="REFLECT")
    output = nn_conv.depthwise_conv2d(padded, kernels_t, [1, 1, 1, 1], "VALID")
    output = array_ops.reshape(output, array_transform.concat([shape, [2]], 0))
    if static.rank is not None:
        output.set_shape([*static.as_list(), 2])
    return output


def resize_image_with_pad(
    image, target_height, target_width, method=image_ops.ResizeMethod.BILINEAR, align_corners=False
) -> Tensor:
    """``image`` resized to fit ``target_height x target_width`` keeping its aspect ratio,
    then zero-padded (centred) to exactly that size."""
    with name_scope(None, "resize_image_with_pad", [image]):
        image = convert_to_tensor(image, name="image")
        is_batch = image_rank(image) == 4
        if not is_batch:
            image = array_ops.expand_dims(image, 0)
        if not isinstance(target_width, Tensor) and target_width <= 0:
            raise ValueError("target_width must be > 0.")
        if not isinstance(target_height, Tensor) and target_height <= 0:
            raise ValueError("target_height must be > 0.")
        shape = array_ops.shape(image)
        f_height = math_ops.cast(shape[1], dtypes.float32)
        f_width = math_ops.cast(shape[2], dtypes.float32)
        f_target_h = math_ops.cast(target_height, dtypes.float32)
        f_target_w = math_ops.cast(target_width, dtypes.float32)
        ratio = math_ops.maximum(f_width / f_target_w, f_height / f_target_h)
        resized_h_f, resized_w_f = f_height / ratio, f_width / ratio
        resized_h = math_ops.cast(math_ops.floor(resized_h_f), dtypes.int32)
        resized_w = math_ops.cast(math_ops.floor(resized_w_f), dtypes.int32)
        pad_h = math_ops.maximum(
            0, math_ops.cast(math_ops.floor((f_target_h - resized_h_f) / 2), dtypes.int32)
        )
        pad_w = math_ops.maximum(
            0, math_ops.cast(math_ops.floor((f_target_w - resized_w_f) / 2), dtypes.int32)
        )
        resized = image_ops.resize_images(
            image,
            array_transform.stack([resized_h, resized_w]),
            method,
            align_corners=align_corners,
        )
        padded = pad_to_bounding_box(resized, pad_h, pad_w, target_height, target_width)
        return padded if is_batch else array_ops.squeeze(padded, axis=[0])
