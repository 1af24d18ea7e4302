"""Image resizing as TF1 defines it: ``ResizeBilinear``, ``ResizeNearestNeighbor``,
``ResizeBicubic`` (TF's tabulated Keys kernel) and ``ResizeArea`` on NHWC batches, with
``align_corners`` and ``half_pixel_centers`` (non-max suppression and
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
    "resize_area",
    "resize_bicubic",
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
        if o._attrs["align_corners"] and o._attrs.get("half_pixel_centers"):
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


_TABLE_SIZE = 1024


def _cubic_table(keys: bool) -> np.ndarray:
    """TF's tabulated cubic convolution weights: A = -0.5 (Keys) with half-pixel centers,
    -0.75 otherwise; row i holds the weights at distance i/1024 and 1 + i/1024."""
    a = np.float32(-0.5 if keys else -0.75)
    x = (np.arange(_TABLE_SIZE + 1, dtype=np.float64) / _TABLE_SIZE).astype(np.float32)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    x1 = x + np.float32(1)
    far = ((a * x1 - 5 * a) * x1 + 8 * a) * x1 - 4 * a
    return np.stack([near, far], axis=1).astype(np.float32)


def _bicubic_axis(in_size, out_size, align_corners, half_pixel):
    """(indices [out, 4], weights [out, 4]) as TF's GetWeightsAndIndices."""
    scale = np.float32(_scale(in_size, out_size, align_corners))
    x = np.arange(out_size, dtype=np.float32)
    loc = (x + np.float32(0.5)) * scale - np.float32(0.5) if half_pixel else x * scale
    floor = np.floor(loc)
    offset = np.rint((loc - floor) * _TABLE_SIZE).astype(np.int64)  # lrintf
    table = _cubic_table(half_pixel)
    weights = np.stack(
        [
            table[offset, 1],
            table[offset, 0],
            table[_TABLE_SIZE - offset, 0],
            table[_TABLE_SIZE - offset, 1],
        ],
        axis=1,
    )
    taps = floor.astype(np.int64)[:, None] + np.arange(-1, 3)[None, :]
    index = np.clip(taps, 0, in_size - 1)
    if half_pixel:  # taps outside the image weigh 0; the rest are renormalized
        weights = np.where(index == taps, weights, np.float32(0))
        total = weights.sum(axis=1, keepdims=True)
        ok = np.abs(total) >= 1000.0 * np.finfo(np.float32).tiny
        weights = np.where(ok, weights / np.where(ok, total, 1), weights)
    return index, weights.astype(np.float32)


@op(
    "ResizeBicubic",
    infer=_resize_infer(dtypes.float32),
    differentiable=False,
    inputs=("images", "size"),
    attrs=_ATTRS,
    flags=OpFlags(host_inputs=(1,)),
)
def _resize_bicubic(xp, images, size, *, align_corners=False, half_pixel_centers=False):
    oh, ow = _check(xp, size)
    _, h, w, _ = images.shape
    ry, wy = _bicubic_axis(h, oh, align_corners, half_pixel_centers)
    rx, wx = _bicubic_axis(w, ow, align_corners, half_pixel_centers)
    img = images.astype(xp.float32)
    cols = sum(img[:, :, rx[:, k]] * xp.asarray(wx[:, k])[None, None, :, None] for k in range(4))
    out = sum(cols[:, ry[:, k]] * xp.asarray(wy[:, k])[None, :, None, None] for k in range(4))
    return out.astype(xp.float32)


def _area_axis(in_size, out_size, align_corners) -> np.ndarray:
    """[out, in] weights: the overlap of each output cell with each input cell."""
    scale = np.float32(_scale(in_size, out_size, align_corners))
    weights = np.zeros((out_size, in_size), np.float32)
    for o in range(out_size):
        lo, hi = np.float32(o) * scale, np.float32(o + 1) * scale
        for i in range(int(np.floor(lo)), int(np.ceil(hi))):
            overlap = min(np.float32(i + 1), hi) - max(np.float32(i), lo)
            weights[o, min(i, in_size - 1)] += overlap
    return weights, scale


@op(
    "ResizeArea",
    infer=_resize_infer(dtypes.float32),
    differentiable=False,
    inputs=("images", "size"),
    attrs=(Attr("align_corners", "bool", default=False),),
    flags=OpFlags(host_inputs=(1,)),
)
def _resize_area(xp, images, size, *, align_corners=False):
    oh, ow = _check(xp, size)
    _, h, w, _ = images.shape
    wy, sy = _area_axis(h, oh, align_corners)
    wx, sx = _area_axis(w, ow, align_corners)
    img = images.astype(xp.float32)
    out = xp.einsum("yi,bijc,xj->byxc", xp.asarray(wy), img, xp.asarray(wx))
    return (out * np.float32(1.0 / (sy * sx))).astype(xp.float32)


def _resize(op_type, images, size, align_corners, half_pixel_centers, name):
    with name_scope(name, op_type, [images, size]) as scope:
        x = convert_to_tensor(images, name="images")
        s = convert_to_tensor(size, dtype=dtypes.int32, name="size")
        attrs = {"align_corners": align_corners}
        if op_type != "ResizeArea":
            attrs["half_pixel_centers"] = half_pixel_centers
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
    BICUBIC = 2
    AREA = 3


def resize_images(images, size, method=ResizeMethod.BILINEAR, align_corners=False, name=None):
    """TF1's ``tf.image.resize_images``: bilinear, nearest-neighbour, bicubic or area."""
    if method in (ResizeMethod.BILINEAR, "bilinear"):
        return resize_bilinear(images, size, align_corners=align_corners, name=name)
    if method in (ResizeMethod.NEAREST_NEIGHBOR, "nearest"):
        return resize_nearest_neighbor(images, size, align_corners=align_corners, name=name)
    if method in (ResizeMethod.BICUBIC, "bicubic"):
        return resize_bicubic(images, size, align_corners=align_corners, name=name)
    if method in (ResizeMethod.AREA, "area"):
        return resize_area(images, size, align_corners=align_corners, name=name)
    raise ValueError(
        f"Resize method {method!r} is not supported (bilinear, nearest, bicubic, area)"
    )


def resize_bicubic(
    images, size, align_corners=False, half_pixel_centers=False, name=None
) -> Tensor:
    """Bicubic resize (TF1's ``tf.image.resize_bicubic``); float32 result."""
    return _resize("ResizeBicubic", images, size, align_corners, half_pixel_centers, name)


def resize_area(images, size, align_corners=False, name=None) -> Tensor:
    """Area-averaging resize (TF1's ``tf.image.resize_area``); float32 result."""
    return _resize("ResizeArea", images, size, align_corners, False, name)
