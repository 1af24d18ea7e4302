"""``tf.image`` dtype conversion, colour and statistics, as TF 1.15's Python composes them:
``convert_image_dtype`` (TF's integer shifts and ``max + 0.5`` float scaling, optional
saturation), grayscale, brightness/contrast/saturation/hue/gamma and their seeded random
versions, ``per_image_standardization``, ``image_gradients``, ``total_variation`` and
``psnr``. The colour kernels TF keeps dedicated ops for live in ``engine/ops/image_color.py``.
"""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.image_geometry import image_rank
from engine.ops import array as array_ops
from engine.ops import array_transform, clip_ops, image_color, linalg, random, reduction, slicing
from engine.ops import math as math_ops

__all__ = [
    "convert_image_dtype",
    "rgb_to_grayscale",
    "grayscale_to_rgb",
    "adjust_brightness",
    "adjust_contrast",
    "adjust_saturation",
    "adjust_hue",
    "adjust_gamma",
    "random_brightness",
    "random_contrast",
    "random_saturation",
    "random_hue",
    "per_image_standardization",
    "image_gradients",
    "total_variation",
    "psnr",
]


def saturate_cast(value, dtype, name=None) -> Tensor:
    """``value`` clamped to ``dtype``'s range, then cast (TF's ``saturate_cast``)."""
    dtype = dtypes.as_dtype(dtype).base_dtype
    with name_scope(name, "saturate_cast", [value]) as scope:
        value = convert_to_tensor(value, name="value")
        np_dtype = value.dtype.base_dtype.as_numpy_dtype
        lo, hi = _saturation_limits(value.dtype.base_dtype, dtype)
        value = clip_ops.clip_by_value(value, np_dtype(lo), np_dtype(hi))
        return math_ops.cast(value, dtype, name=scope)


def _saturation_limits(src, dst):
    """TF 2's clamp limits: the tighter range, stepped inwards where the cast would round
    it past ``dst``'s range (float32's nearest value to int32's max is 2**31)."""
    np_dtype = src.as_numpy_dtype
    promoted = np.promote_types(np_dtype, dst.as_numpy_dtype)
    lo = np_dtype(np.maximum(src.min, dst.min))
    if np.array([lo, dst.min], promoted)[0] < np.array([lo, dst.min], promoted)[1]:
        lo = np.nextafter(lo, np_dtype(0), dtype=np_dtype)
    hi = np_dtype(np.minimum(float(src.max), float(dst.max)))
    if np.array([hi, dst.max], promoted)[0] > np.array([hi, dst.max], promoted)[1]:
        hi = np.nextafter(hi, np_dtype(0), dtype=np_dtype)
    return lo, hi


def convert_image_dtype(image, dtype, saturate=False, name=None) -> Tensor:
    """``image`` converted to ``dtype``, rescaling as TF does: floats span [0, 1], integers
    [0, MAX]; integer-to-integer shifts by whole powers of two; float-to-integer multiplies
    by ``MAX + 0.5`` and truncates (clamping first when ``saturate``)."""
    image = convert_to_tensor(image, name="image")
    dtype = dtypes.as_dtype(dtype).base_dtype
    src = image.dtype.base_dtype
    if not (dtype.is_floating or dtype.is_integer):
        raise AttributeError("dtype must be either floating point or integer")
    if not (src.is_floating or src.is_integer):
        raise AttributeError("image dtype must be either floating point or integer")
    if dtype == src:
        return array_ops.identity(image, name=name)
    cast = saturate_cast if saturate else math_ops.cast
    with name_scope(name, "convert_image", [image]) as scope:
        if src.is_integer and dtype.is_integer:
            if src.max > dtype.max:
                scale = (int(src.max) + 1) // (int(dtype.max) + 1)
                return cast(math_ops.floordiv(image, scale), dtype, name=scope)
            scale = (int(dtype.max) + 1) // (int(src.max) + 1)
            return math_ops.multiply(cast(image, dtype), scale, name=scope)
        if src.is_floating and dtype.is_floating:
            return math_ops.cast(image, dtype, name=scope)
        if src.is_integer:
            return math_ops.multiply(math_ops.cast(image, dtype), 1.0 / src.max, name=scope)
        scaled = math_ops.multiply(image, dtype.max + 0.5)
        return cast(scaled, dtype, name=scope)


def rgb_to_grayscale(images, name=None) -> Tensor:
    """Luma ``0.2989 R + 0.5870 G + 0.1140 B``, keeping a last axis of size 1."""
    with name_scope(name, "rgb_to_grayscale", [images]) as scope:
        images = convert_to_tensor(images, name="images")
        orig = images.dtype.base_dtype
        flt = convert_image_dtype(images, dtypes.float32)
        weights = convert_to_tensor(np.array([0.2989, 0.5870, 0.1140], np.float32))
        gray = array_ops.expand_dims(linalg.tensordot(flt, weights, [[-1], [-1]]), -1)
        return convert_image_dtype(gray, orig, name=scope)


def grayscale_to_rgb(images, name=None) -> Tensor:
    """The single channel of ``images`` repeated three times."""
    with name_scope(name, "grayscale_to_rgb", [images]) as scope:
        images = convert_to_tensor(images, name="images")
        dims = images.shape.as_list() if images.shape.rank is not None else None
        if dims is not None and (len(dims) < 2 or dims[-1] not in (None, 1)):
            raise ValueError(
                f"Last dimension of a grayscale image should be size 1 (shape {images.shape})"
            )
        rank_1 = array_ops.expand_dims(math_ops.subtract(array_ops.rank(images), 1), 0)
        multiples = array_transform.concat(
            [array_ops.ones(rank_1, dtype=dtypes.int32), array_ops.expand_dims(3, 0)], 0
        )
        rgb = array_transform.tile(images, multiples, name=scope)
        if dims is not None:
            rgb.set_shape([*dims[:-1], 3])
        return rgb


def _float_image(image):
    image = convert_to_tensor(image, name="image")
    orig = image.dtype.base_dtype
    if orig in (dtypes.float16, dtypes.float32):
        return image, orig
    return convert_image_dtype(image, dtypes.float32), orig


def adjust_brightness(image, delta) -> Tensor:
    """``image + delta`` in float, converted back (saturating) to the image's dtype."""
    with name_scope(None, "adjust_brightness", [image, delta]) as scope:
        flt, orig = _float_image(image)
        delta = math_ops.cast(convert_to_tensor(delta), flt.dtype)
        adjusted = math_ops.add(flt, delta, name=scope)
        return convert_image_dtype(adjusted, orig, saturate=True)


def adjust_contrast(images, contrast_factor) -> Tensor:
    """``(x - mean) * contrast_factor + mean`` per image and channel (``AdjustContrastv2``)."""
    with name_scope(None, "adjust_contrast", [images, contrast_factor]) as scope:
        flt, orig = _float_image(images)
        adjusted = image_color.adjust_contrastv2(flt, contrast_factor, name=scope)
        return convert_image_dtype(adjusted, orig, saturate=True)


def adjust_saturation(image, saturation_factor, name=None) -> Tensor:
    """HSV saturation scaled by ``saturation_factor`` and clamped to [0, 1]."""
    with name_scope(name, "adjust_saturation", [image]):
        flt, orig = _float_image(image)
        adjusted = image_color.adjust_saturation_op(flt, saturation_factor)
        return convert_image_dtype(adjusted, orig)


def adjust_hue(image, delta, name=None) -> Tensor:
    """Hue rotated by ``delta`` (a fraction of the colour wheel, in [-1, 1])."""
    with name_scope(name, "adjust_hue", [image]):
        flt, orig = _float_image(image)
        adjusted = image_color.adjust_hue_op(flt, delta)
        return convert_image_dtype(adjusted, orig)


def adjust_gamma(image, gamma=1, gain=1) -> Tensor:
    """``gain * image ** gamma`` in float; ``gamma`` must be non-negative."""
    with name_scope(None, "adjust_gamma", [image, gamma, gain]):
        flt, orig = _float_image(image)
        if not isinstance(gamma, Tensor) and gamma < 0:
            raise ValueError("Gamma should be a non-negative real number.")
        adjusted = math_ops.multiply(gain, math_ops.pow(flt, gamma))
        return convert_image_dtype(adjusted, orig, saturate=True)


def random_brightness(image, max_delta, seed=None) -> Tensor:
    """``adjust_brightness`` by a delta uniform in ``[-max_delta, max_delta)``."""
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    delta = random.random_uniform([], -max_delta, max_delta, seed=seed)
    return adjust_brightness(image, delta)


def _check_range(lower, upper):
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")


def random_contrast(image, lower, upper, seed=None) -> Tensor:
    """``adjust_contrast`` by a factor uniform in ``[lower, upper)``."""
    _check_range(lower, upper)
    return adjust_contrast(image, random.random_uniform([], lower, upper, seed=seed))


def random_saturation(image, lower, upper, seed=None) -> Tensor:
    """``adjust_saturation`` by a factor uniform in ``[lower, upper)``."""
    _check_range(lower, upper)
    return adjust_saturation(image, random.random_uniform([], lower, upper, seed=seed))


def random_hue(image, max_delta, seed=None) -> Tensor:
    """``adjust_hue`` by a delta uniform in ``[-max_delta, max_delta)``, ``max_delta <= 0.5``."""
    if max_delta > 0.5:
        raise ValueError("max_delta must be <= 0.5.")
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    return adjust_hue(image, random.random_uniform([], -max_delta, max_delta, seed=seed))


def per_image_standardization(image) -> Tensor:
    """``(x - mean) / max(stddev, 1 / sqrt(num_pixels))`` per image, in float32."""
    with name_scope(None, "per_image_standardization", [image]) as scope:
        image = convert_to_tensor(image, name="image")
        image_rank(image)
        image = math_ops.cast(image, dtypes.float32)
        dims = slicing.strided_slice(array_ops.shape(image), [-3], [0], end_mask=1)
        num_pixels = reduction.reduce_prod(dims)
        mean = reduction.reduce_mean(image, axis=[-1, -2, -3], keepdims=True)
        variance = reduction.reduce_mean(
            math_ops.squared_difference(image, mean), axis=[-1, -2, -3], keepdims=True
        )
        stddev = math_ops.sqrt(variance)
        min_stddev = math_ops.rsqrt(math_ops.cast(num_pixels, dtypes.float32))
        adjusted = math_ops.maximum(stddev, min_stddev)
        return math_ops.divide(math_ops.subtract(image, mean), adjusted, name=scope)


def image_gradients(image):
    """``(dy, dx)``: forward differences along height and width, zero in the last row/column."""
    if image.shape.rank != 4:
        raise ValueError(
            f"image_gradients expects a 4D tensor [batch_size, h, w, d], not {image.shape}."
        )
    shape = array_ops.shape(image)
    batch, height, width, depth = array_transform.unstack(shape)
    dy = math_ops.subtract(image[:, 1:, :, :], image[:, :-1, :, :])
    dx = math_ops.subtract(image[:, :, 1:, :], image[:, :, :-1, :])
    zeros_y = array_ops.zeros(array_transform.stack([batch, 1, width, depth]), image.dtype)
    zeros_x = array_ops.zeros(array_transform.stack([batch, height, 1, depth]), image.dtype)
    dy = array_ops.reshape(array_transform.concat([dy, zeros_y], 1), shape)
    dx = array_ops.reshape(array_transform.concat([dx, zeros_x], 2), shape)
    return dy, dx


def total_variation(images, name=None) -> Tensor:
    """Sum of absolute neighbour differences: a scalar for one image, ``[batch]`` for four."""
    with name_scope(name, "total_variation"):
        ndims = images.shape.rank
        if ndims == 3:
            dif1 = math_ops.subtract(images[1:, :, :], images[:-1, :, :])
            dif2 = math_ops.subtract(images[:, 1:, :], images[:, :-1, :])
            axis = None
        elif ndims == 4:
            dif1 = math_ops.subtract(images[:, 1:, :, :], images[:, :-1, :, :])
            dif2 = math_ops.subtract(images[:, :, 1:, :], images[:, :, :-1, :])
            axis = [1, 2, 3]
        else:
            raise ValueError("'images' must be either 3 or 4-dimensional.")
        return math_ops.add(
            reduction.reduce_sum(math_ops.abs(dif1), axis=axis),
            reduction.reduce_sum(math_ops.abs(dif2), axis=axis),
        )


def psnr(a, b, max_val, name=None) -> Tensor:
    """Peak signal-to-noise ratio per image, in dB, of images with values up to ``max_val``."""
    with name_scope(name, "PSNR", [a, b]):
        a = convert_to_tensor(a)
        b = convert_to_tensor(b)
        if a.dtype.base_dtype != b.dtype.base_dtype:
            raise TypeError(f"psnr: a is {a.dtype.name} but b is {b.dtype.name}")
        a.shape.assert_is_compatible_with(b.shape)
        max_val = convert_image_dtype(math_ops.cast(max_val, a.dtype), dtypes.float32)
        a = convert_image_dtype(a, dtypes.float32)
        b = convert_image_dtype(b, dtypes.float32)
        mse = reduction.reduce_mean(math_ops.squared_difference(a, b), [-3, -2, -1])
        value = math_ops.subtract(
            math_ops.divide(math_ops.multiply(20.0, math_ops.log(max_val)), math_ops.log(10.0)),
            math_ops.multiply(np.float32(10 / np.log(10)), math_ops.log(mse)),
            name="psnr",
        )
        return array_ops.identity(value)
