"""Image resizing as TF1 defines it: ``ResizeBilinear`` and ``ResizeNearestNeighbor`` on NHWC
batches, with ``align_corners`` and ``half_pixel_centers`` (non-max suppression and
``crop_and_resize``: ``detection_ops.py``, ``crop_and_resize.py``). Vectorized: the source rows and
columns are computed once per call and gathered, never looped over pixels."""

from __future__ import annotations

import numpy as np

from engine import dtypes, errors
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.registry import Attr, OpFlags, ShapeError, op
from engine.framework.tensor_util import constant_value
from engine.ops._common import create
from engine.tensor_shape import TensorShape

__all__ = [
    "resize_bilinear",
    "resize_nearest_neighbor",
    "resize_images",
]

_ATTRS = (
    Attr("align_corners", "bool", default=False),
    Attr("half_pixel_centers", "bool", default=False),
)


def _resize_infer(out_dtype):
    def infer(o):
        images, size = o._inputs
        if images._shape.rank is not None and images._shape.rank != 4:
            raise ShapeError(f"images must be rank 4 (NHWC), got rank {images._shape.rank}")
        if size._dtype.base_dtype is not dtypes.int32:
            raise TypeError("size must be an int32 [2] tensor (new height, width)")
        if o._attrs["align_corners"] and o._attrs["half_pixel_centers"]:
            raise ShapeError("If half_pixel_centers is True, align_corners must be False.")
        hw = constant_value(size)
        dims = [None, None] if hw is None else [int(v) for v in np.asarray(hw).ravel()]
        if len(dims) != 2:
            raise ShapeError("size must have two elements")
        s = images._shape
        n, c = (s.as_list()[0], s.as_list()[3]) if s.rank is not None else (None, None)
        dtype = out_dtype or images._dtype.base_dtype
        return [(dtype, TensorShape([n, *dims, c]))]

    return infer


def _scale(in_size, out_size, align_corners):
    if align_corners and out_size > 1:
        return (in_size - 1) / (out_size - 1)
    return in_size / out_size


def _check(xp, size):
    hw = [int(v) for v in np.asarray(size.get() if hasattr(size, "get") else size).ravel()]
    if len(hw) != 2 or min(hw) <= 0:
        raise errors.InvalidArgumentError(
            None, None, f"output size must be 2 positive ints, got {hw}"
        )
    return hw


def _bilinear_axis(in_size, out_size, align_corners, half_pixel):
    scale = _scale(in_size, out_size, align_corners)
    x = np.arange(out_size, dtype=np.float64)
    src = (x + 0.5) * scale - 0.5 if half_pixel else x * scale
    lower = np.floor(src)
    lerp = src - lower
    lo = np.clip(lower, 0, in_size - 1).astype(np.int64)
    hi = np.clip(np.ceil(src) if half_pixel else lower + 1, 0, in_size - 1).astype(np.int64)
    return lo, hi, lerp.astype(np.float32)


@op(
    "ResizeBilinear",
    infer=_resize_infer(dtypes.float32),
    differentiable=False,
    inputs=("images", "size"),
    attrs=_ATTRS,
    flags=OpFlags(host_inputs=(1,)),
)
def _resize_bilinear(xp, images, size, *, align_corners=False, half_pixel_centers=False):
    oh, ow = _check(xp, size)
    _, h, w, _ = images.shape
    y0, y1, dy = _bilinear_axis(h, oh, align_corners, half_pixel_centers)
    x0, x1, dx = _bilinear_axis(w, ow, align_corners, half_pixel_centers)
    img = images.astype(xp.float32)
    dy = xp.asarray(dy)[None, :, None, None]
    dx = xp.asarray(dx)[None, None, :, None]
    top = img[:, y0][:, :, x0] * (1 - dx) + img[:, y0][:, :, x1] * dx
    bottom = img[:, y1][:, :, x0] * (1 - dx) + img[:, y1][:, :, x1] * dx
    return (top * (1 - dy) + bottom * dy).astype(xp.float32)


def _nearest_axis(in_size, out_size, align_corners, half_pixel):
    scale = _scale(in_size, out_size, align_corners)
    x = np.arange(out_size, dtype=np.float64)
    if half_pixel:
        src = np.floor((x + 0.5) * scale)
    elif align_corners:
        src = np.floor(x * scale + 0.5)  # C roundf: halves away from zero
    else:
        src = np.floor(x * scale)
    return np.clip(src, 0, in_size - 1).astype(np.int64)


@op(
    "ResizeNearestNeighbor",
    infer=_resize_infer(None),
    differentiable=False,
    inputs=("images", "size"),
    attrs=_ATTRS,
    flags=OpFlags(host_inputs=(1,)),
)
def _resize_nearest(xp, images, size, *, align_corners=False, half_pixel_centers=False):
    oh, ow = _check(xp, size)
    _, h, w, _ = images.shape
    rows = _nearest_axis(h, oh, align_corners, half_pixel_centers)
    cols = _nearest_axis(w, ow, align_corners, half_pixel_centers)
    return images[:, rows][:, :, cols]


def _resize(op_type, images, size, align_corners, half_pixel_centers, name):
    with name_scope(name, op_type, [images, size]) as scope:
        x = convert_to_tensor(images, name="images")
        s = convert_to_tensor(size, dtype=dtypes.int32, name="size")
        attrs = {"align_corners": align_corners, "half_pixel_centers": half_pixel_centers}
        return create(op_type, [x, s], attrs, scope).outputs[0]


def resize_bilinear(
    images, size, align_corners=False, half_pixel_centers=False, name=None
) -> Tensor:
    """Bilinear resize of NHWC ``images`` to ``size`` (height, width); float32 result."""
    return _resize("ResizeBilinear", images, size, align_corners, half_pixel_centers, name)


def resize_nearest_neighbor(
    images, size, align_corners=False, half_pixel_centers=False, name=None
) -> Tensor:
    """Nearest-neighbour resize of NHWC ``images`` to ``size``; keeps the dtype."""
    return _resize("ResizeNearestNeighbor", images, size, align_corners, half_pixel_centers, name)


class ResizeMethod:
    BILINEAR = 0
    NEAREST_NEIGHBOR = 1


def resize_images(images, size, method=ResizeMethod.BILINEAR, align_corners=False, name=None):
    """TF1's ``tf.image.resize_images`` for the bilinear and nearest-neighbour methods."""
    if method in (ResizeMethod.BILINEAR, "bilinear"):
        return resize_bilinear(images, size, align_corners=align_corners, name=name)
    if method in (ResizeMethod.NEAREST_NEIGHBOR, "nearest"):
        return resize_nearest_neighbor(images, size, align_corners=align_corners, name=name)
    raise ValueError(f"Resize method {method!r} is not supported (bilinear, nearest)")
