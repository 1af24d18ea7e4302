"""``SampleDistortedBoundingBoxV2`` (``tf.image.sample_distorted_bounding_box``, the crop
sampler of Inception-style ImageNet preprocessing), following TF's kernel: up to
``max_attempts`` draws of an aspect ratio and a crop height (TF's ``GenerateRandomCrop`` with
its ``lrintf`` roundings), accepted when the crop covers at least ``min_object_covered`` of
one box; otherwise the whole image. The random numbers are the session's, not TF's Philox
stream, so crops are TF's in distribution and constraints, not bit for bit."""

from __future__ import annotations

import math

import numpy as np

from engine import dtypes, errors
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.registry import Attr, OpFlags, ShapeError, op
from engine.ops._common import create
from engine.ops.random import get_seed
from engine.tensor_shape import TensorShape

__all__ = ["sample_distorted_bounding_box", "draw_bounding_boxes"]

_SIZE_TYPES = (dtypes.uint8, dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64)


def _infer(o):
    size, boxes, covered = o._inputs
    d = size._dtype.base_dtype
    if d not in _SIZE_TYPES:
        raise TypeError(f"image_size must be an integer tensor, got {d.name}")
    if size._shape.rank not in (None, 1):
        raise ShapeError(f"Shape must be rank 1 but is rank {size._shape.rank}")
    if boxes._shape.rank not in (None, 3):
        raise ShapeError(f"Shape must be rank 3 but is rank {boxes._shape.rank}")
    if covered._shape.rank not in (None, 0):
        raise ShapeError(f"Shape must be rank 0 but is rank {covered._shape.rank}")
    for name, n in (("aspect_ratio_range", 2), ("area_range", 2)):
        if len(o._attrs[name]) != n:
            raise ShapeError(f"{name} must have 2 values, got {o._attrs[name]}")
    lo, hi = o._attrs["area_range"]
    if not 0 < lo <= hi <= 1:
        raise ShapeError(f"area_range must be within (0, 1], got {o._attrs['area_range']}")
    if o._attrs["max_attempts"] < 1:
        raise ShapeError(f"max_attempts must be positive: {o._attrs['max_attempts']}")
    return [(d, TensorShape([3])), (d, TensorShape([3])), (dtypes.float32, TensorShape([1, 1, 4]))]


def _lrintf(x: float) -> int:
    """C's ``lrintf``: round half to even, in float32."""
    return int(np.rint(np.float32(x)))


def _random_crop(rng, width, height, min_area, max_area, aspect):
    """TF's ``GenerateRandomCrop``: (x, y, w, h) or None."""
    min_area = np.float32(min_area * width * height)
    max_area = np.float32(max_area * width * height)
    h = _lrintf(math.sqrt(min_area / aspect))
    max_h = _lrintf(math.sqrt(max_area / aspect))
    if _lrintf(max_h * aspect) > width:
        max_h = int((width + 0.5 - 1e-7) / aspect)
    max_h = min(max_h, height)
    h = min(h, max_h)
    if h < max_h:
        h += int(rng.integers(0, max_h - h + 1))
    w = _lrintf(h * aspect)
    area = float(w * h)
    if area < min_area:
        h += 1
        w = _lrintf(h * aspect)
        area = float(w * h)
    if area > max_area:
        h -= 1
        w = _lrintf(h * aspect)
        area = float(w * h)
    if area < min_area or area > max_area or w > width or h > height or w <= 0 or h <= 0:
        return None
    y = int(rng.integers(0, height - h)) if h < height else 0
    x = int(rng.integers(0, width - w)) if w < width else 0
    return x, y, w, h


def _covers(crop, boxes, min_covered) -> bool:
    x, y, w, h = crop
    if w * h < 1:
        return False
    for x0, y0, x1, y1 in boxes:
        area = (x1 - x0) * (y1 - y0)
        if area < 1:
            continue
        iw = max(0, min(x + w, x1) - max(x, x0))
        ih = max(0, min(y + h, y1) - max(y, y0))
        if iw * ih / area >= min_covered:
            return True
    return False


def _pixel_boxes(boxes, width, height) -> list:
    flat = np.asarray(boxes, np.float32).reshape(-1, 4)
    if np.any((flat < 0) | (flat > 1)):
        raise errors.InvalidArgumentError(
            None, None, "All bounding box coordinates must be in [0.0, 1.0]"
        )
    if np.any(flat[:, 0] > flat[:, 2]) or np.any(flat[:, 1] > flat[:, 3]):
        raise errors.InvalidArgumentError(
            None, None, "Bounding boxes must have ymin <= ymax and xmin <= xmax"
        )
    return [
        (int(b[1] * width), int(b[0] * height), int(b[3] * width), int(b[2] * height)) for b in flat
    ]


def _rng_bind(o, ctx):
    return {"rng": ctx.rng(o._attrs["seed"], o._attrs["seed2"])}


@op(
    "SampleDistortedBoundingBoxV2",
    infer=_infer,
    bind=_rng_bind,
    differentiable=False,
    inputs=("image_size", "bounding_boxes", "min_object_covered"),
    attrs=(
        Attr("seed", "int", default=0),
        Attr("seed2", "int", default=0),
        Attr("aspect_ratio_range", "list(float)", default=[0.75, 1.33]),
        Attr("area_range", "list(float)", default=[0.05, 1.0]),
        Attr("max_attempts", "int", default=100),
        Attr("use_image_if_no_bounding_boxes", "bool", default=False),
    ),
    flags=OpFlags(stateful=True, device_types=("CPU",), host_inputs=(0, 1, 2)),
)
def _sample_box(
    xp,
    image_size,
    boxes,
    min_covered,
    *,
    rng,
    seed=0,
    seed2=0,
    aspect_ratio_range=[0.75, 1.33],  # noqa: B006 - the declared default, never mutated
    area_range=[0.05, 1.0],  # noqa: B006
    max_attempts=100,
    use_image_if_no_bounding_boxes=False,
):
    attrs = {
        "aspect_ratio_range": aspect_ratio_range,
        "area_range": area_range,
        "max_attempts": max_attempts,
        "use_image_if_no_bounding_boxes": use_image_if_no_bounding_boxes,
    }
    size = np.asarray(image_size)
    if size.shape != (3,) or size[0] <= 0 or size[1] <= 0:
        raise errors.InvalidArgumentError(
            None, None, f"image_size must be 3 positive values [height, width, channels]: {size}"
        )
    height, width = int(size[0]), int(size[1])
    covered = float(np.asarray(min_covered))
    if covered < 0:
        raise errors.InvalidArgumentError(None, None, f"min_object_covered must be >= 0: {covered}")
    pixel_boxes = _pixel_boxes(boxes, width, height)
    if not pixel_boxes:
        if not attrs["use_image_if_no_bounding_boxes"]:
            raise errors.InvalidArgumentError(
                None,
                None,
                "No bounding boxes provided as input. One must enable "
                "use_image_if_no_bounding_boxes if you wish to not provide any bounding boxes.",
            )
        pixel_boxes = [(0, 0, width, height)]
    lo_ar, hi_ar = attrs["aspect_ratio_range"]
    lo_area, hi_area = attrs["area_range"]
    crop = (0, 0, width, height)
    for _ in range(attrs["max_attempts"]):
        aspect = float(np.float32(rng.random() * (hi_ar - lo_ar) + lo_ar))
        found = _random_crop(rng, width, height, lo_area, hi_area, aspect)
        if found is not None and _covers(found, pixel_boxes, covered):
            crop = found
            break
    x, y, w, h = crop
    dtype = size.dtype
    bbox = np.array([y / height, x / width, (y + h) / height, (x + w) / width], np.float32)
    return (
        np.array([y, x, 0], dtype),
        np.array([h, w, -1], dtype),
        bbox.reshape(1, 1, 4),
    )


def sample_distorted_bounding_box(
    image_size,
    bounding_boxes,
    seed=None,
    seed2=None,
    min_object_covered=0.1,
    aspect_ratio_range=None,
    area_range=None,
    max_attempts=None,
    use_image_if_no_bounding_boxes=None,
    name=None,
) -> tuple[Tensor, Tensor, Tensor]:
    """``(begin, size, bboxes)`` of a random crop of an image of ``image_size`` ([height,
    width, channels]) that covers ``min_object_covered`` of one of ``bounding_boxes``
    (``[batch, N, 4]``, normalized ``[ymin, xmin, ymax, xmax]``); feed ``begin``/``size`` to
    ``tf.slice``."""
    with name_scope(name, "SampleDistortedBoundingBoxV2", [image_size, bounding_boxes]) as scope:
        size = convert_to_tensor(image_size, name="image_size")
        boxes = convert_to_tensor(bounding_boxes, dtype=dtypes.float32, name="bounding_boxes")
        covered = convert_to_tensor(min_object_covered, dtype=dtypes.float32)
        s1, s2 = get_seed(seed)
        attrs = {
            "seed": s1 or 0,
            "seed2": (s2 or 0) if seed2 is None else int(seed2),
            "aspect_ratio_range": [float(v) for v in (aspect_ratio_range or (0.75, 1.33))],
            "area_range": [float(v) for v in (area_range or (0.05, 1.0))],
            "max_attempts": 100 if max_attempts is None else int(max_attempts),
            "use_image_if_no_bounding_boxes": bool(use_image_if_no_bounding_boxes),
        }
        op_ = create("SampleDistortedBoundingBoxV2", [size, boxes, covered], attrs, scope)
        return tuple(op_.outputs)


_COLORS = np.array(
    [
        [1, 1, 0, 1],
        [0, 0, 1, 1],
        [1, 0, 0, 1],
        [0, 1, 0, 1],
        [0.5, 0, 0.5, 1],
        [0.5, 0.5, 0, 1],
        [0.5, 0, 0, 1],
        [0, 0, 0.5, 1],
        [0, 1, 1, 1],
        [1, 0, 1, 1],
    ],
    np.float32,
)


def _draw_infer(o):
    images, boxes = o._inputs[:2]
    if images._dtype.base_dtype not in (dtypes.float32, dtypes.float16):
        raise TypeError(f"images must be float32 or float16, got {images._dtype.name}")
    dims = images._shape.as_tuple()
    if dims is not None:
        if len(dims) != 4:
            raise ShapeError(f"Shape must be rank 4 but is rank {len(dims)}")
        if dims[3] not in (None, 1, 3, 4):
            raise ShapeError(
                f"Channel depth should be either 1 (GRY), 3 (RGB), or 4 (RGBA), got {dims[3]}"
            )
    if boxes._shape.rank not in (None, 3):
        raise ShapeError(f"Shape must be rank 3 but is rank {boxes._shape.rank}")
    return [(images._dtype.base_dtype, images._shape)]


def _box_lines(box, height, width):
    """TF's truncated box edges, or None for a box it skips."""
    rows = [int(np.float32(box[0]) * (height - 1)), int(np.float32(box[2]) * (height - 1))]
    cols = [int(np.float32(box[1]) * (width - 1)), int(np.float32(box[3]) * (width - 1))]
    if rows[0] > rows[1] or cols[0] > cols[1]:
        return None
    if rows[0] >= height or rows[1] < 0 or cols[0] >= width or cols[1] < 0:
        return None
    return rows, cols


def _draw(images, boxes, colors):
    canvas = np.array(images, copy=True)
    _, height, width, depth = canvas.shape
    if depth not in (1, 3, 4):
        raise errors.InvalidArgumentError(
            None, None, f"Channel depth should be either 1 (GRY), 3 (RGB), or 4 (RGBA): {depth}"
        )
    boxes = np.asarray(boxes, np.float32)
    if boxes.shape[0] != canvas.shape[0] or boxes.shape[-1] != 4:
        raise errors.InvalidArgumentError(
            None, None, f"boxes must be [batch, num_boxes, 4], got {list(boxes.shape)}"
        )
    table = np.array(colors, np.float32).reshape(-1, 4)[:, :depth]
    if depth == 1:
        table[:, 0] = 1
    for b in range(canvas.shape[0]):
        for k, box in enumerate(boxes[b]):
            lines = _box_lines(box, height, width)
            if lines is None:
                continue
            (r0, r1), (c0, c1) = lines
            color = table[k % len(table)]
            rr0, rr1 = max(r0, 0), min(r1, height - 1)
            cc0, cc1 = max(c0, 0), min(c1, width - 1)
            if r0 >= 0:
                canvas[b, r0, cc0 : cc1 + 1] = color
            if r1 < height:
                canvas[b, r1, cc0 : cc1 + 1] = color
            if c0 >= 0:
                canvas[b, rr0 : rr1 + 1, c0] = color
            if c1 < width:
                canvas[b, rr0 : rr1 + 1, c1] = color
    return canvas


@op(
    "DrawBoundingBoxes",
    infer=_draw_infer,
    differentiable=False,
    inputs=("images", "boxes"),
    flags=OpFlags(device_types=("CPU",)),
)
def _draw_boxes(xp, images, boxes):
    return _draw(images, boxes, _COLORS)


@op(
    "DrawBoundingBoxesV2",
    infer=_draw_infer,
    differentiable=False,
    inputs=("images", "boxes", "colors"),
    flags=OpFlags(device_types=("CPU",)),
)
def _draw_boxes_v2(xp, images, boxes, colors):
    colors = np.asarray(colors, np.float32)
    if colors.size == 0:
        colors = _COLORS
    elif colors.ndim != 2 or colors.shape[1] < 3:
        raise errors.InvalidArgumentError(
            None, None, f"colors must be [num_colors, 3 or 4], got {list(colors.shape)}"
        )
    elif colors.shape[1] == 3:
        colors = np.concatenate([colors, np.ones((len(colors), 1), np.float32)], 1)
    return _draw(images, boxes, colors)


def draw_bounding_boxes(images, boxes, name=None, colors=None) -> Tensor:
    """``images`` (NHWC float, 1, 3 or 4 channels) with each box of ``boxes`` (``[batch, N,
    4]`` normalized ``[ymin, xmin, ymax, xmax]``) outlined one pixel wide, in TF's colour
    cycle or ``colors`` (``DrawBoundingBoxesV2``)."""
    with name_scope(name, "DrawBoundingBoxes", [images, boxes]) as scope:
        x = convert_to_tensor(images, name="images")
        b = convert_to_tensor(boxes, dtype=dtypes.float32, name="boxes")
        if colors is None:
            return create("DrawBoundingBoxes", [x, b], {}, scope).outputs[0]
        c = convert_to_tensor(colors, dtype=dtypes.float32, name="colors")
        return create("DrawBoundingBoxesV2", [x, b, c], {}, scope).outputs[0]
