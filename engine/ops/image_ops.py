"""Image resizing as TF1 defines it: ``ResizeBilinear`` and ``ResizeNearestNeighbor`` on NHWC
batches, with ``align_corners`` and ``half_pixel_centers``. Vectorized: the source rows and
columns are computed once per call and gathered, never looped over pixels."""

from __future__ import annotations

import heapq

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
    "non_max_suppression",
    "non_max_suppression_padded",
    "non_max_suppression_with_scores",
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


# -----------------------------------------------------------------------------------------
# Non-max suppression (NonMaxSuppressionV3/V4/V5): greedy, with TF's soft-NMS form
# -----------------------------------------------------------------------------------------

_NMS_FLOAT = (dtypes.float16, dtypes.float32)


def _nms_infer(n_inputs: int, outputs: str):
    def infer(o):
        boxes, scores = o._inputs[0], o._inputs[1]
        d = boxes._dtype.base_dtype
        if d not in _NMS_FLOAT or scores._dtype.base_dtype is not d:
            raise TypeError(
                f"{o.type} takes float16 or float32 boxes and scores of one dtype, got "
                f"{d.name} and {scores._dtype.base_dtype.name}"
            )
        b, s = boxes._shape.as_tuple(), scores._shape.as_tuple()
        if b is not None and (len(b) != 2 or b[1] not in (None, 4)):
            raise ShapeError(f"boxes must be of shape [num_boxes, 4], got {boxes._shape}")
        if s is not None and len(s) != 1:
            raise ShapeError(f"scores must be 1-D, got {scores._shape}")
        if b is not None and s is not None and None not in (b[0], s[0]) and b[0] != s[0]:
            raise ShapeError(f"boxes ({b[0]}) and scores ({s[0]}) count different boxes")
        for i in range(2, n_inputs):
            if o._inputs[i]._shape.rank not in (None, 0):
                raise ShapeError(f"{o.type} input {i} must be a scalar")
        size = None
        if o._attrs.get("pad_to_max_output_size"):
            value = constant_value(o._inputs[2])
            size = None if value is None else int(value)
        out = [(dtypes.int32, TensorShape([size]))]
        if "scores" in outputs:
            out.append((d, TensorShape([size])))
        if "valid" in outputs:
            out.append((dtypes.int32, TensorShape([])))
        return out

    return infer


def _corners(boxes: np.ndarray):
    """(y1, x1, y2, x2, area) with the corners ordered: TF accepts either diagonal."""
    y1 = np.minimum(boxes[:, 0], boxes[:, 2])
    y2 = np.maximum(boxes[:, 0], boxes[:, 2])
    x1 = np.minimum(boxes[:, 1], boxes[:, 3])
    x2 = np.maximum(boxes[:, 1], boxes[:, 3])
    return y1, x1, y2, x2, (y2 - y1) * (x2 - x1)


def _iou_row(c, i: int, others: np.ndarray) -> np.ndarray:
    """IoU of box ``i`` with the boxes ``others``, as TF computes it (empty boxes: 0)."""
    y1, x1, y2, x2, area = c
    ih = np.maximum(np.minimum(y2[i], y2[others]) - np.maximum(y1[i], y1[others]), 0)
    iw = np.maximum(np.minimum(x2[i], x2[others]) - np.maximum(x1[i], x1[others]), 0)
    inter = ih * iw
    union = area[i] + area[others] - inter
    ok = (area[i] > 0) & (area[others] > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(ok, inter / np.where(ok, union, 1), 0.0)


def non_max_suppression_indices(
    boxes, scores, max_output_size, iou_threshold, score_threshold, sigma
):
    """``(indices, scores)`` TF's greedy NMS selects (its priority queue, ties to the lower
    index, soft-NMS re-queueing decayed candidates when ``sigma`` > 0). Memory is linear in
    the number of boxes: each candidate is compared with the boxes selected so far only."""
    boxes = np.asarray(boxes, np.float64)
    scores = np.asarray(scores, np.float64)
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise errors.InvalidArgumentError(
            None, None, f"boxes must be of shape [num_boxes, 4], got {list(boxes.shape)}"
        )
    if scores.shape != (boxes.shape[0],):
        raise errors.InvalidArgumentError(
            None,
            None,
            f"scores has incompatible shape {list(scores.shape)} for {boxes.shape[0]} boxes",
        )
    if max_output_size < 0:
        raise errors.InvalidArgumentError(None, None, "max_output_size must be non-negative")
    if not 0.0 <= iou_threshold <= 1.0:
        raise errors.InvalidArgumentError(None, None, "iou_threshold must be in [0, 1]")
    if sigma < 0:
        raise errors.InvalidArgumentError(None, None, "soft_nms_sigma must be non-negative")
    c = _corners(boxes)
    scale = -0.5 / sigma if sigma > 0 else 0.0
    heap = [(-s, i, 0) for i, s in enumerate(scores.tolist()) if s > score_threshold]
    heapq.heapify(heap)
    selected: list[int] = []
    kept: list[float] = []
    while len(selected) < max_output_size and heap:
        neg, i, begin = heapq.heappop(heap)
        score = original = -neg
        # the boxes selected since this candidate was last compared, newest first
        sims = _iou_row(c, i, np.asarray(selected[begin:][::-1], np.int64))
        if scale == 0.0:
            hard = bool((sims >= iou_threshold).any())
        else:
            hard = False
            for sim in sims.tolist():
                score *= np.exp(scale * sim * sim) if sim <= iou_threshold else 0.0
                if sim >= iou_threshold:
                    hard = True
                    break
                if score <= score_threshold:
                    break
        if hard:
            continue
        if score == original:
            selected.append(i)
            kept.append(score)
        elif score > score_threshold:
            heapq.heappush(heap, (-score, i, len(selected)))
    return np.asarray(selected, np.int32), np.asarray(kept)


def _nms_args(xp, max_output_size, iou_threshold, score_threshold, sigma=0.0):
    def host(v):
        return float(np.asarray(v.get() if hasattr(v, "get") else v))

    return int(host(max_output_size)), host(iou_threshold), host(score_threshold), host(sigma)


def _nms_run(xp, boxes, scores, args, pad, with_scores):
    host_boxes = boxes.get() if hasattr(boxes, "get") else boxes
    host_scores = scores.get() if hasattr(scores, "get") else scores
    max_out = args[0]
    idx, kept = non_max_suppression_indices(host_boxes, host_scores, *args)
    valid = np.int32(len(idx))
    if pad and len(idx) < max_out:
        idx = np.concatenate([idx, np.zeros(max_out - len(idx), np.int32)])
        kept = np.concatenate([kept, np.zeros(max_out - len(kept))])
    out = [xp.asarray(idx)]
    if with_scores:
        out.append(xp.asarray(kept.astype(host_scores.dtype)))
    return out, xp.asarray(valid)


_CPU = OpFlags(device_types=("CPU",))


@op(
    "NonMaxSuppressionV3",
    infer=_nms_infer(5, "indices"),
    differentiable=False,
    inputs=("boxes", "scores", "max_output_size", "iou_threshold", "score_threshold"),
    flags=_CPU,
)
def _nms_v3(xp, boxes, scores, max_output_size, iou_threshold, score_threshold):
    args = _nms_args(xp, max_output_size, iou_threshold, score_threshold)
    out, _ = _nms_run(xp, boxes, scores, args, False, False)
    return out[0]


@op(
    "NonMaxSuppressionV4",
    infer=_nms_infer(5, "indices valid"),
    differentiable=False,
    inputs=("boxes", "scores", "max_output_size", "iou_threshold", "score_threshold"),
    attrs=(Attr("pad_to_max_output_size", "bool", default=False),),
    flags=_CPU,
)
def _nms_v4(
    xp,
    boxes,
    scores,
    max_output_size,
    iou_threshold,
    score_threshold,
    *,
    pad_to_max_output_size=False,
):
    args = _nms_args(xp, max_output_size, iou_threshold, score_threshold)
    out, valid = _nms_run(xp, boxes, scores, args, pad_to_max_output_size, False)
    return out[0], valid


@op(
    "NonMaxSuppressionV5",
    infer=_nms_infer(6, "indices scores valid"),
    differentiable=False,
    inputs=(
        "boxes",
        "scores",
        "max_output_size",
        "iou_threshold",
        "score_threshold",
        "soft_nms_sigma",
    ),
    attrs=(Attr("pad_to_max_output_size", "bool", default=False),),
    flags=_CPU,
)
def _nms_v5(
    xp,
    boxes,
    scores,
    max_output_size,
    iou_threshold,
    score_threshold,
    soft_nms_sigma,
    *,
    pad_to_max_output_size=False,
):
    args = _nms_args(xp, max_output_size, iou_threshold, score_threshold, soft_nms_sigma)
    out, valid = _nms_run(xp, boxes, scores, args, pad_to_max_output_size, True)
    return out[0], out[1], valid


def _nms_inputs(boxes, scores, max_output_size, iou_threshold, score_threshold, extra=()):
    boxes = convert_to_tensor(boxes, name="boxes")
    d = boxes.dtype.base_dtype
    scores = convert_to_tensor(scores, dtype=d, name="scores")
    max_output_size = convert_to_tensor(max_output_size, dtype=dtypes.int32, name="max_output_size")
    t = d if extra else dtypes.float32
    rest = [
        convert_to_tensor(v, dtype=t, name=n)
        for v, n in ((iou_threshold, "iou_threshold"), (score_threshold, "score_threshold"), *extra)
    ]
    return [boxes, scores, max_output_size, *rest]


def non_max_suppression(
    boxes, scores, max_output_size, iou_threshold=0.5, score_threshold=float("-inf"), name=None
) -> Tensor:
    """Indices of the boxes greedy NMS keeps, best first (``tf.image.non_max_suppression``).

    ``boxes`` are ``[num_boxes, 4]`` corners ``[y1, x1, y2, x2]`` (any diagonal pair); a box
    is dropped when its IoU with a kept box reaches ``iou_threshold``, or its score is not
    above ``score_threshold``. At most ``max_output_size`` indices (int32).
    """
    with name_scope(name, "non_max_suppression", [boxes, scores]) as scope:
        ins = _nms_inputs(boxes, scores, max_output_size, iou_threshold, score_threshold)
        return create("NonMaxSuppressionV3", ins, {}, scope).outputs[0]


def non_max_suppression_padded(
    boxes,
    scores,
    max_output_size,
    iou_threshold=0.5,
    score_threshold=float("-inf"),
    pad_to_max_output_size=False,
    name=None,
):
    """``(selected_indices, valid_outputs)`` (TF1.15's form, ``NonMaxSuppressionV4``): with
    ``pad_to_max_output_size`` the indices are zero-padded to ``max_output_size``."""
    with name_scope(name, "non_max_suppression_padded", [boxes, scores]) as scope:
        ins = _nms_inputs(boxes, scores, max_output_size, iou_threshold, score_threshold)
        o = create(
            "NonMaxSuppressionV4",
            ins,
            {"pad_to_max_output_size": bool(pad_to_max_output_size)},
            scope,
        )
        return o.outputs[0], o.outputs[1]


def non_max_suppression_with_scores(
    boxes,
    scores,
    max_output_size,
    iou_threshold=0.5,
    score_threshold=float("-inf"),
    soft_nms_sigma=0.0,
    name=None,
):
    """``(selected_indices, selected_scores)``; ``soft_nms_sigma`` > 0 is Soft-NMS (Bodla et
    al.): overlapping boxes' scores decay by ``exp(-iou**2 / (2 * sigma))`` instead of being
    dropped (``NonMaxSuppressionV5``)."""
    with name_scope(name, "non_max_suppression_with_scores", [boxes, scores]) as scope:
        ins = _nms_inputs(
            boxes,
            scores,
            max_output_size,
            iou_threshold,
            score_threshold,
            ((soft_nms_sigma, "soft_nms_sigma"),),
        )
        o = create("NonMaxSuppressionV5", ins, {"pad_to_max_output_size": False}, scope)
        return o.outputs[0], o.outputs[1]
