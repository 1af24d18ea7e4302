"""TF's dedicated colour kernels: ``RGBToHSV``, ``HSVToRGB``, ``AdjustContrastv2``,
``AdjustSaturation`` and ``AdjustHue``, computed in float32 as TensorFlow's CPU kernels do.

The hue/saturation adjustments follow TF's per-pixel helpers (``adjust_hsv_op``): saturation
goes through a full HSV round trip, hue through TF's ``rgb_to_hv``/``hv_to_rgb`` with hue on a
0..6 scale, so pixels where two channels tie land exactly where TF puts them. Vectorized over
pixels with ``xp.where`` chains in TF's branch order. TF registers no gradient for these
except ``RGBToHSV`` (``image_color_grad.py``)."""

from __future__ import annotations

from engine import dtypes
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.registry import ShapeError, op
from engine.ops._common import FLOATS, create
from engine.ops.image_color_grad import rgb_to_hsv_grad

__all__ = ["rgb_to_hsv", "hsv_to_rgb", "adjust_contrastv2", "adjust_saturation_op", "adjust_hue_op"]


def _last_dim_3(o, what):
    x = o._inputs[0]
    dims = x._shape.as_tuple()
    if dims is not None:
        if len(dims) < 1:
            raise ShapeError(f"Shape must be at least rank 1 but is rank {len(dims)}")
        if dims[-1] is not None and dims[-1] != 3:
            raise ShapeError(f"{what}: last dimension must be size 3, got {dims[-1]}")
    if x._dtype.base_dtype not in FLOATS:
        raise TypeError(f"{what} takes a float tensor, got {x._dtype.base_dtype.name}")


def _image_infer(what, rank=1):
    def infer(o):
        _last_dim_3(o, what)
        x = o._inputs[0]
        dims = x._shape.as_tuple()
        if dims is not None and len(dims) < rank:
            raise ShapeError(f"Shape must be at least rank {rank} but is rank {len(dims)}")
        for extra in o._inputs[1:]:
            if extra._shape.rank not in (None, 0):
                raise ShapeError(f"{what}: factor must be a scalar, got {extra._shape}")
        return [(x._dtype.base_dtype, x._shape)]

    return infer


def _split(xp, images):
    x = images if images.dtype == xp.float64 else images.astype(xp.float32)
    return x[..., 0], x[..., 1], x[..., 2]


def _rgb_to_hsv(xp, r, g, b):
    v = xp.maximum(r, xp.maximum(g, b))
    rng = v - xp.minimum(r, xp.minimum(g, b))
    s = xp.where(v > 0, rng / xp.where(v > 0, v, 1), 0).astype(v.dtype)
    with_range = xp.where(rng > 0, rng, 1)
    norm = (1.0 / (6.0 * with_range)).astype(v.dtype)
    h = xp.where(
        r == v,
        norm * (g - b),
        xp.where(g == v, norm * (b - r) + 2.0 / 6.0, norm * (r - g) + 4.0 / 6.0),
    )
    h = xp.where(rng > 0, h, 0)
    h = xp.where(h < 0, h + 1, h)
    return h.astype(v.dtype), s, v


def _hsv_to_rgb(xp, h, s, v):
    dh = h * 6
    dr = xp.clip(xp.abs(dh - 3) - 1, 0, 1)
    dg = xp.clip(-xp.abs(dh - 2) + 2, 0, 1)
    db = xp.clip(-xp.abs(dh - 4) + 2, 0, 1)
    one_s = -s + 1
    return [(one_s + s * d) * v for d in (dr, dg, db)]


def _stack(xp, channels, dtype):
    return xp.stack(channels, axis=-1).astype(dtype)


@op(
    "RGBToHSV",
    infer=_image_infer("RGBToHSV"),
    grad=lambda op, grad: [rgb_to_hsv_grad(op, grad)],
    inputs=("images",),
)
def _rgb_to_hsv_kernel(xp, images):
    return _stack(xp, _rgb_to_hsv(xp, *_split(xp, images)), images.dtype)


@op("HSVToRGB", infer=_image_infer("HSVToRGB"), differentiable=False, inputs=("images",))
def _hsv_to_rgb_kernel(xp, images):
    return _stack(xp, _hsv_to_rgb(xp, *_split(xp, images)), images.dtype)


def _contrast_infer(o):
    x = o._inputs[0]
    dims = x._shape.as_tuple()
    if dims is not None and len(dims) < 3:
        raise ShapeError(f"Shape must be at least rank 3 but is rank {len(dims)}")
    if x._dtype.base_dtype not in (dtypes.float16, dtypes.float32):
        raise TypeError(f"AdjustContrastv2 takes float16/float32, got {x._dtype.base_dtype.name}")
    if o._inputs[1]._shape.rank not in (None, 0):
        raise ShapeError(f"contrast_factor must be scalar: {o._inputs[1]._shape}")
    return [(x._dtype.base_dtype, x._shape)]


@op(
    "AdjustContrastv2",
    infer=_contrast_infer,
    differentiable=False,
    inputs=("images", "contrast_factor"),
)
def _adjust_contrast(xp, images, factor):
    x = images.astype(xp.float32)
    mean = x.mean(axis=(-3, -2), keepdims=True, dtype=xp.float32)
    return ((x - mean) * xp.float32(factor) + mean).astype(images.dtype)


def _hsv_adjust_infer(what):
    base = _image_infer(what, rank=3)

    def infer(o):
        if o._inputs[0]._dtype.base_dtype not in (dtypes.float16, dtypes.float32):
            raise TypeError(f"{what} takes float16/float32, got {o._inputs[0]._dtype.name}")
        return base(o)

    return infer


@op(
    "AdjustSaturation",
    infer=_hsv_adjust_infer("AdjustSaturation"),
    differentiable=False,
    inputs=("images", "scale"),
)
def _adjust_saturation(xp, images, scale):
    h, s, v = _rgb_to_hsv(xp, *_split(xp, images))
    s = xp.clip(s * xp.float32(scale), 0.0, 1.0)
    return _stack(xp, _hsv_to_rgb_sectors(xp, h, s, v), images.dtype)


def _hsv_to_rgb_sectors(xp, h, s, v):
    """TF's scalar ``hsv_to_rgb`` of ``adjust_saturation``: six sectors of ``h * 6``."""
    c = s * v
    m = v - c
    dh = h * 6
    category = dh.astype(xp.int32)
    fmodu = xp.mod(dh, 2.0)
    x = c * (1 - xp.abs(fmodu - 1))
    zero = xp.zeros_like(c)
    table = [(c, x, zero), (x, c, zero), (zero, c, x), (zero, x, c), (x, zero, c), (c, zero, x)]
    out = []
    for ch in range(3):
        val = zero
        for k, row in enumerate(table):
            val = xp.where(category == k, row[ch], val)
        out.append(val + m)
    return out


@op(
    "AdjustHue",
    infer=_hsv_adjust_infer("AdjustHue"),
    differentiable=False,
    inputs=("images", "delta"),
)
def _adjust_hue(xp, images, delta):
    r, g, b = _split(xp, images)
    h, v_min, v_max = _rgb_to_hv(xp, r, g, b)
    h = h + xp.float32(delta) * xp.float32(6.0)
    h = xp.mod(h, xp.float32(6.0)).astype(xp.float32)
    h = xp.where(h >= 6.0, h - 6.0, h)
    return _stack(xp, _hv_to_rgb(xp, h, v_min, v_max), images.dtype)


def _rgb_to_hv(xp, r, g, b):
    """TF's ``rgb_to_hv``: the hue sector from the channels' order, hue on 0..6."""
    rg = r < g
    conds = [
        (rg & (b < r), g, r, b, 1),
        (rg & (b > g), b, g, r, 3),
        (rg, g, b, r, 2),
        (~rg & (b < g), r, g, b, 0),
        (~rg & (b > r), b, r, g, 4),
    ]
    v_max, v_mid, v_min, cat = r, b, g, xp.full(r.shape, 5, xp.int32)
    for cond, mx, md, mn, k in reversed(conds):
        v_max = xp.where(cond, mx, v_max)
        v_mid = xp.where(cond, md, v_mid)
        v_min = xp.where(cond, mn, v_min)
        cat = xp.where(cond, k, cat)
    span = v_max - v_min
    ratio = (v_mid - v_min) / xp.where(span == 0, 1, span)
    h = cat + xp.where(cat % 2 == 0, ratio, 1 - ratio)
    return xp.where(span == 0, 0, h).astype(xp.float32), v_min, v_max


def _hv_to_rgb(xp, h, v_min, v_max):
    cat = h.astype(xp.int32)
    ratio = h - cat
    ratio = xp.where(cat % 2 == 0, ratio, 1 - ratio)
    v_mid = v_min + ratio * (v_max - v_min)
    table = [
        (v_max, v_mid, v_min),
        (v_mid, v_max, v_min),
        (v_min, v_max, v_mid),
        (v_min, v_mid, v_max),
        (v_mid, v_min, v_max),
    ]
    out = []
    for ch, default in enumerate((v_max, v_min, v_mid)):
        val = default
        for k, row in enumerate(table):
            val = xp.where(cat == k, row[ch], val)
        out.append(val)
    return out


def _unary(op_type, images, name, default_name):
    with name_scope(name, default_name, [images]) as scope:
        x = convert_to_tensor(images, name="images")
        return create(op_type, [x], {}, scope).outputs[0]


def rgb_to_hsv(images, name=None) -> Tensor:
    """RGB -> HSV on the last axis of a float image, all three in [0, 1] (``RGBToHSV``)."""
    return _unary("RGBToHSV", images, name, "RGBToHSV")


def hsv_to_rgb(images, name=None) -> Tensor:
    """HSV -> RGB on the last axis of a float image (``HSVToRGB``)."""
    return _unary("HSVToRGB", images, name, "HSVToRGB")


def _binary(op_type, images, factor, name):
    x = convert_to_tensor(images, name="images")
    f = convert_to_tensor(factor, dtype=dtypes.float32, name="factor")
    return create(op_type, [x, f], {}, name).outputs[0]


def adjust_contrastv2(images, contrast_factor, name=None) -> Tensor:
    return _binary("AdjustContrastv2", images, contrast_factor, name)


def adjust_saturation_op(images, scale, name=None) -> Tensor:
    return _binary("AdjustSaturation", images, scale, name)


def adjust_hue_op(images, delta, name=None) -> Tensor:
    return _binary("AdjustHue", images, delta, name)
