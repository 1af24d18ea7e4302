"""Op-table rows for ONNX's detection operators: NonMaxSuppression, RoiAlign, MaxRoiPool.

``NonMaxSuppression`` runs TF's greedy selection (``engine/ops/detection_ops.py``) per batch
element and class; onnxruntime's rules are the same (a box is suppressed by an IoU strictly
above the threshold, kept by a score strictly above the score threshold, equal scores in
index order), with boxes as corners (``center_point_box`` 0) or ``[x_centre, y_centre,
width, height]`` (1). The result is ``[num_selected, 3]`` int64 rows ``(batch, class, box)``.

``RoiAlign`` is onnxruntime's (Detectron's) average or max of bilinear samples on a regular
grid in each output bin (``sampling_ratio`` 0: ``ceil(roi size / output size)`` samples per
bin), with ``half_pixel`` coordinates (opset 16's default) or opset 10's
``output_half_pixel``; onnxruntime's "max" takes the largest weighted corner of each sample.

``MaxRoiPool`` is Caffe's RoI max pooling: rounded region corners, integer bins, 0 for an
empty bin.
"""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.formats.onnx.mapping import UnsupportedModelError, register
from engine.formats.onnx.ops import _bad, _onnx_op
from engine.framework.constant_op import convert_to_tensor
from engine.ops._common import FLOATS, check_dtype, create
from engine.ops.detection_ops import greedy_nms, iou_fn
from engine.tensor_shape import TensorShape

__all__: list[str] = []

MAX_ROI_ALIGN_BINS = 1 << 16  # output_height * output_width (vectorised bins)
MAX_ROI_POOL_BINS = 1 << 12  # MaxRoiPool's pooled_shape product (one numpy max per bin)
MAX_ROI_SAMPLES = 1 << 22  # bilinear samples of one region ([bins, grid] per axis)
_ROI_CHUNK = 1 << 24  # channels x samples gathered at once


def _host(v) -> np.ndarray:
    return np.asarray(v.get() if hasattr(v, "get") else v)


# -- NonMaxSuppression ------------------------------------------------------------------------


def _nms_infer(op):
    if op._inputs[0]._dtype.base_dtype is not dtypes.float32:
        raise TypeError("NonMaxSuppression takes float32 boxes")
    return [(dtypes.int64, TensorShape([None, 3]))]


def _corners(boxes: np.ndarray, center_point_box: int) -> np.ndarray:
    if not center_point_box:
        return boxes
    xc, yc, half_w, half_h = boxes[:, 0], boxes[:, 1], boxes[:, 2] / 2, boxes[:, 3] / 2
    return np.stack([yc - half_h, xc - half_w, yc + half_h, xc + half_w], 1)


@_onnx_op(
    "OnnxNonMaxSuppression",
    infer=_nms_infer,
    inputs=("boxes", "scores", "max_output_boxes_per_class", "iou_threshold", "score_threshold"),
    attrs=[("center_point_box", "int"), ("has_score_threshold", "bool")],
    cpu_only=True,
    host_inputs=(0, 1, 2, 3, 4),
)
def _nms(
    xp, boxes, scores, max_out, iou, score_threshold, *, center_point_box, has_score_threshold
):
    boxes, scores = _host(boxes).astype(np.float32), _host(scores).astype(np.float32)
    if boxes.ndim != 3 or boxes.shape[2] != 4:
        raise _bad(f"boxes must be [num_batches, spatial_dimension, 4], got {list(boxes.shape)}")
    if scores.ndim != 3 or scores.shape[0] != boxes.shape[0] or scores.shape[2] != boxes.shape[1]:
        raise _bad(
            f"scores must be [num_batches, num_classes, {boxes.shape[1]}] for boxes "
            f"{list(boxes.shape)}, got {list(scores.shape)}"
        )
    limit = int(_host(max_out).reshape(-1)[0]) if _host(max_out).size else 0
    iou = np.float32(_host(iou).reshape(-1)[0]) if _host(iou).size else np.float32(0)
    if not 0 <= iou <= 1:
        raise _bad(f"iou_threshold must be in range [0, 1], got {iou}")
    floor = np.float32(_host(score_threshold).reshape(-1)[0]) if has_score_threshold else None
    rows = []
    for b in range(boxes.shape[0] if limit > 0 else 0):
        similarity = iou_fn(_corners(boxes[b], center_point_box))
        for c in range(scores.shape[1]):
            picked, _ = greedy_nms(similarity, scores[b, c], limit, iou, floor)
            rows.extend((b, c, int(i)) for i in picked)
    return xp.asarray(np.asarray(rows, np.int64).reshape(-1, 3))


def _scalar_input(ctx, node, i, dtype, default):
    t = ctx.optional(node, i)
    if t is None:
        return convert_to_tensor(np.asarray(default, dtype.as_numpy_dtype))
    return t


def _non_max_suppression(ctx, node):
    center = int(ctx.attr(node, "center_point_box", 0))
    if center not in (0, 1):
        raise UnsupportedModelError(f"NonMaxSuppression center_point_box={center} (0 or 1)")
    has_threshold = ctx.optional(node, 4) is not None
    ins = [
        ctx.input(node, 0),
        ctx.input(node, 1),
        _scalar_input(ctx, node, 2, dtypes.int64, 0),
        _scalar_input(ctx, node, 3, dtypes.float32, 0.0),
        _scalar_input(ctx, node, 4, dtypes.float32, 0.0),
    ]
    attrs = {"center_point_box": center, "has_score_threshold": has_threshold}
    return [create("OnnxNonMaxSuppression", ins, attrs).outputs[0]]


register("NonMaxSuppression", (10, 11), _non_max_suppression)


# -- RoiAlign ---------------------------------------------------------------------------------


def _roi_infer(op):
    d = check_dtype(op, 0, FLOATS)
    x, rois = op._inputs[0]._shape.as_tuple(), op._inputs[1]._shape.as_tuple()
    n = rois[0] if rois is not None else None
    c = x[1] if x is not None else None
    a = op._attrs
    return [(d, TensorShape([n, c, a["output_height"], a["output_width"]]))]


def _bin_samples(start, size, bins: int, grid: int):
    """Sample coordinates [bins, grid] of one axis (float32, onnxruntime's order)."""
    f = np.float32
    bin_size = f(size / f(bins))
    steps = (np.arange(grid, dtype=f) + f(0.5)) * bin_size / f(grid)
    return f(start) + np.arange(bins, dtype=f)[:, None] * bin_size + steps[None, :]


def _axis_weights(coords: np.ndarray, size: int):
    """(low, high, low weight, high weight, valid) of bilinear taps along one axis."""
    f = np.float32
    valid = (coords >= -1.0) & (coords <= size)
    c = np.maximum(coords, f(0))
    low = c.astype(np.int64)
    at_end = low >= size - 1
    low = np.where(at_end, size - 1, low)
    high = np.where(at_end, size - 1, low + 1)
    c = np.where(at_end, low.astype(f), c)
    frac = (c - low).astype(f)
    return low, high, (f(1) - frac), frac, valid


def _roi_pool(x, roi, mode, out_hw, ratio, scale, half_pixel):
    """One region of one image ``x`` [C, H, W] -> [C, out_h, out_w]."""
    f = np.float32
    _, h, w = x.shape
    offset = f(0.5) if half_pixel else f(0)
    x1, y1, x2, y2 = (f(v) * f(scale) - offset for v in roi)
    roi_w, roi_h = f(x2 - x1), f(y2 - y1)
    if not half_pixel:
        roi_w, roi_h = max(roi_w, f(1)), max(roi_h, f(1))
    grid = [ratio or int(np.ceil(roi_h / f(n))) for n in out_hw]
    grid[1] = ratio or int(np.ceil(roi_w / f(out_hw[1])))
    if min(grid) <= 0:  # an empty region: no samples, onnxruntime's zero
        return np.zeros((x.shape[0], *out_hw), x.dtype)
    samples = out_hw[0] * grid[0] * out_hw[1] * grid[1]
    if samples > MAX_ROI_SAMPLES:
        raise _bad(
            f"RoiAlign region {[float(v) for v in roi]} needs {samples} bilinear samples "
            f"(grid {grid} per bin); the limit is {MAX_ROI_SAMPLES}"
        )
    ys = _bin_samples(y1, roi_h, out_hw[0], grid[0])
    xs = _bin_samples(x1, roi_w, out_hw[1], grid[1])
    ylo, yhi, wy0, wy1, yok = _axis_weights(ys, h)
    xlo, xhi, wx0, wx1, xok = _axis_weights(xs, w)
    ok = yok[:, :, None, None] & xok[None, None]  # [oh, gh, ow, gw]
    weights = [
        np.where(ok, wy[:, :, None, None] * wx[None, None], f(0)).astype(x.dtype)
        for wy in (wy0, wy1)
        for wx in (wx0, wx1)
    ]
    corners = [(rows, cols) for rows in (ylo, yhi) for cols in (xlo, xhi)]
    count = x.dtype.type(max(grid[0] * grid[1], 1))
    step = max(1, _ROI_CHUNK // samples)  # channels at a time: memory stays bounded
    out = []
    for c in range(0, x.shape[0], step):
        taps = [
            weight * x[c : c + step, rows[:, :, None, None], cols[None, None]]
            for weight, (rows, cols) in zip(weights, corners)
        ]  # each [C, oh, gh, ow, gw]
        if mode == "max":
            best = np.maximum(np.maximum(np.maximum(taps[0], taps[1]), taps[2]), taps[3])
            out.append(best.max(axis=(2, 4)))
        else:
            total = ((taps[0] + taps[1]) + taps[2]) + taps[3]
            out.append((total.sum(axis=(2, 4)) / count).astype(x.dtype))
    return np.concatenate(out) if out else np.zeros((0, *out_hw), x.dtype)


@_onnx_op(
    "OnnxRoiAlign",
    infer=_roi_infer,
    inputs=("x", "rois", "batch_indices"),
    attrs=[
        ("mode", "string"),
        ("output_height", "int"),
        ("output_width", "int"),
        ("sampling_ratio", "int"),
        ("spatial_scale", "float"),
        ("half_pixel", "bool"),
    ],
    cpu_only=True,
    host_inputs=(1, 2),
)
def _roi_align(
    xp,
    x,
    rois,
    batch_indices,
    *,
    mode,
    output_height,
    output_width,
    sampling_ratio,
    spatial_scale,
    half_pixel,
):
    image = _host(x)
    rois, idx = _host(rois).astype(image.dtype), _host(batch_indices).astype(np.int64)
    if rois.ndim != 2 or rois.shape[1] != 4 or idx.shape != (rois.shape[0],):
        raise _bad(
            f"rois must be [num_rois, 4] and batch_indices [num_rois], got "
            f"{list(rois.shape)} and {list(idx.shape)}"
        )
    if not np.isfinite(rois).all():
        raise _bad("All 'rois' values must be finite.")
    if idx.size and (idx.min() < 0 or idx.max() >= image.shape[0]):
        raise _bad(f"batch_indices must be in [0, {image.shape[0]}), got {idx.tolist()}")
    out = np.zeros((len(rois), image.shape[1], output_height, output_width), image.dtype)
    for n in range(len(rois)):
        out[n] = _roi_pool(
            image[idx[n]],
            rois[n],
            mode,
            (output_height, output_width),
            sampling_ratio,
            spatial_scale,
            half_pixel,
        )
    return xp.asarray(out)


def _roi_align_converter(default_transform: str):
    def convert(ctx, node):
        mode = ctx.attr(node, "mode", "avg")
        transform = ctx.attr(node, "coordinate_transformation_mode", default_transform)
        if mode not in ("avg", "max"):
            raise UnsupportedModelError(f"RoiAlign mode={mode!r} (avg or max)")
        if transform not in ("half_pixel", "output_half_pixel"):
            raise UnsupportedModelError(
                f"RoiAlign coordinate_transformation_mode={transform!r} "
                "(half_pixel or output_half_pixel)"
            )
        sizes = [int(ctx.attr(node, k, 1)) for k in ("output_height", "output_width")]
        ratio = int(ctx.attr(node, "sampling_ratio", 0))
        if min(sizes) < 1 or ratio < 0 or sizes[0] * sizes[1] > MAX_ROI_ALIGN_BINS:
            raise UnsupportedModelError(f"RoiAlign output size {sizes} / sampling_ratio {ratio}")
        attrs = {
            "mode": mode,
            "output_height": sizes[0],
            "output_width": sizes[1],
            "sampling_ratio": ratio,
            "spatial_scale": float(ctx.attr(node, "spatial_scale", 1.0)),
            "half_pixel": transform == "half_pixel",
        }
        ins = [ctx.input(node, i) for i in range(3)]
        return [create("OnnxRoiAlign", ins, attrs).outputs[0]]

    return convert


register(
    "RoiAlign",
    (10, 16, 22),
    {10: _roi_align_converter("output_half_pixel"), 16: _roi_align_converter("half_pixel")},
)


# -- MaxRoiPool -------------------------------------------------------------------------------


def _max_roi_infer(op):
    d = check_dtype(op, 0, FLOATS)
    x, rois = op._inputs[0]._shape.as_tuple(), op._inputs[1]._shape.as_tuple()
    n = rois[0] if rois is not None else None
    c = x[1] if x is not None else None
    return [(d, TensorShape([n, c, *op._attrs["pooled_shape"]]))]


def _c_round(v: np.float32) -> int:
    """C's ``round`` (halves away from zero)."""
    return int(np.sign(v) * np.floor(abs(float(v)) + 0.5))


def _max_roi_bins(start: int, end: int, pooled: int, size: int):
    """(begin, end) of each bin along one axis, clipped to the image (Caffe's RoI pooling)."""
    f = np.float32
    extent = max(end - start + 1, 1)
    bin_size = f(extent) / f(pooled)
    out = []
    for p in range(pooled):
        lo = int(np.floor(f(p) * bin_size)) + start
        hi = int(np.ceil(f(p + 1) * bin_size)) + start
        out.append((min(max(lo, 0), size), min(max(hi, 0), size)))
    return out


@_onnx_op(
    "OnnxMaxRoiPool",
    infer=_max_roi_infer,
    inputs=("x", "rois"),
    attrs=[("pooled_shape", "list(int)"), ("spatial_scale", "float")],
    cpu_only=True,
    host_inputs=(1,),
)
def _max_roi_pool(xp, x, rois, *, pooled_shape, spatial_scale):
    image, rois = _host(x), _host(rois)
    if rois.ndim != 2 or rois.shape[1] != 5:
        raise _bad(f"rois must be [num_rois, 5] (batch, x1, y1, x2, y2), got {list(rois.shape)}")
    _, _, h, w = image.shape
    out = np.zeros((len(rois), image.shape[1], *pooled_shape), image.dtype)
    scale = np.float32(spatial_scale)
    if not np.isfinite(rois).all():
        raise _bad("All 'rois' values must be finite.")
    for n, roi in enumerate(rois.astype(np.float32)):
        b = int(roi[0])
        if not 0 <= b < image.shape[0]:
            raise _bad(f"roi {n} names batch {b}, outside [0, {image.shape[0]})")
        x1, y1, x2, y2 = (_c_round(v * scale) for v in roi[1:])
        for ph, (top, bottom) in enumerate(_max_roi_bins(y1, y2, pooled_shape[0], h)):
            for pw, (left, right) in enumerate(_max_roi_bins(x1, x2, pooled_shape[1], w)):
                if bottom > top and right > left:
                    out[n, :, ph, pw] = image[b, :, top:bottom, left:right].max(axis=(1, 2))
    return xp.asarray(out)


def _max_roi_pool_converter(ctx, node):
    pooled = [int(v) for v in ctx.attr(node, "pooled_shape", None) or ()]
    if len(pooled) != 2 or min(pooled) < 1 or pooled[0] * pooled[1] > MAX_ROI_POOL_BINS:
        raise UnsupportedModelError(f"MaxRoiPool pooled_shape {pooled} (two positive sizes)")
    attrs = {
        "pooled_shape": pooled,
        "spatial_scale": float(ctx.attr(node, "spatial_scale", 1.0)),
    }
    ins = [ctx.input(node, 0), ctx.input(node, 1)]
    return [create("OnnxMaxRoiPool", ins, attrs).outputs[0]]


register("MaxRoiPool", (1, 22), _max_roi_pool_converter)
