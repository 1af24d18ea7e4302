"""Non-max suppression as TensorFlow's kernels compute it: ``NonMaxSuppression`` (V1..V5),
``NonMaxSuppressionWithOverlaps`` and ``CombinedNonMaxSuppression``.

TF's greedy NMS (``DoNonMaxSuppressionOp``) keeps a priority queue of the candidates scoring
above ``score_threshold`` (equal scores: the lower index first) and compares each candidate
with the boxes selected since it was last compared, newest first. Hard NMS drops it when the
IoU is strictly above the threshold; soft-NMS (V5, ``soft_nms_sigma`` > 0) multiplies its
score by ``exp(-iou**2 / (2 * sigma))`` and re-queues it while it stays above the score
threshold. Arithmetic is in the boxes' dtype, as TF's. The combined op runs that per batch
and class with a score-only comparator (libstdc++'s heap and sort, ``engine/ops/_stl.py``).
The kernels run on the host: the work is sequential and the outputs are small.
"""

from __future__ import annotations

import heapq

import numpy as np

from engine import dtypes, errors
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.registry import Attr, OpFlags, ShapeError, get, op
from engine.framework.tensor_util import constant_value
from engine.ops._common import create
from engine.ops._stl import PriorityQueue, std_sort
from engine.tensor_shape import TensorShape

__all__ = [
    "non_max_suppression",
    "non_max_suppression_padded",
    "non_max_suppression_with_scores",
    "non_max_suppression_overlaps",
    "combined_non_max_suppression",
    "non_max_suppression_indices",
    "raw_op",
]

_HALF_FLOAT = (dtypes.float16, dtypes.float32)
_CPU = OpFlags(device_types=("CPU",))


def _host(v) -> np.ndarray:
    return np.asarray(v.get() if hasattr(v, "get") else v)


def _invalid(message: str) -> errors.OpError:
    return errors.InvalidArgumentError(None, None, message)


# -- shape functions --------------------------------------------------------------------------


def _rank(t: Tensor, rank: int) -> tuple | None:
    dims = t._shape.as_tuple()
    if dims is not None and len(dims) != rank:
        raise ShapeError(f"Shape must be rank {rank} but is rank {len(dims)}")
    return dims


def _same_dim(a, b) -> None:
    if a is not None and b is not None and a != b:
        raise ShapeError(f"Dimensions must be equal, but are {a} and {b}")


def _nms_infer(outputs: str, square: bool = False):
    """Inputs (boxes or overlaps, scores, max_output_size, thresholds...): rank checks as
    TF's shape function; ``outputs`` names the outputs present."""

    def infer(o):
        first, scores = o._inputs[0], o._inputs[1]
        d = first._dtype.base_dtype
        allowed = (dtypes.float32,) if square or o.type == "NonMaxSuppression" else _HALF_FLOAT
        if d not in allowed or scores._dtype.base_dtype is not d:
            names = " or ".join(x.name for x in allowed)
            raise TypeError(
                f"{o.type} takes {names} boxes and scores of one dtype, got {d.name} and "
                f"{scores._dtype.base_dtype.name}"
            )
        b = _rank(first, 2)
        s = _rank(scores, 1)
        if b is not None and not square and b[1] is not None and b[1] != 4:
            raise ShapeError(f"Dimension must be 4 but is {b[1]}")
        if b is not None and square:
            _same_dim(b[0], b[1])
        _same_dim(b and b[0], s and s[0])
        for t in o._inputs[2:]:
            _rank(t, 0)
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


# -- the greedy selection ---------------------------------------------------------------------


def _check_boxes(boxes: np.ndarray, scores: np.ndarray, square: bool = False) -> None:
    if boxes.ndim != 2:
        raise _invalid(f"boxes must be 2-D{boxes.shape}")
    if not square and boxes.shape[1] != 4:
        raise _invalid(f"boxes must have 4 columns{boxes.shape}")
    if square and boxes.shape[0] != boxes.shape[1]:
        raise _invalid(f"overlaps must be square{boxes.shape}")
    if scores.ndim != 1 or scores.shape[0] != boxes.shape[0]:
        raise _invalid(f"scores has incompatible shape {list(scores.shape)}")


def iou_fn(boxes: np.ndarray):
    """IoU of box ``i`` with boxes ``js``, in the boxes' dtype (TF's ``IOU<T>``: empty boxes
    overlap nothing)."""
    y1 = np.minimum(boxes[:, 0], boxes[:, 2])
    y2 = np.maximum(boxes[:, 0], boxes[:, 2])
    x1 = np.minimum(boxes[:, 1], boxes[:, 3])
    x2 = np.maximum(boxes[:, 1], boxes[:, 3])
    area = (y2 - y1) * (x2 - x1)
    zero = boxes.dtype.type(0)

    def iou(i: int, js: np.ndarray) -> np.ndarray:
        ih = np.maximum(np.minimum(y2[i], y2[js]) - np.maximum(y1[i], y1[js]), zero)
        iw = np.maximum(np.minimum(x2[i], x2[js]) - np.maximum(x1[i], x1[js]), zero)
        inter = ih * iw
        ok = (area[i] > zero) & (area[js] > zero)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(ok, inter / (area[i] + area[js] - inter), zero)

    iou.symmetric = True  # iou(i, [j]) == iou(j, [i]) bit for bit (every step commutes)
    iou.x_range = (x1, x2)  # boxes apart in x overlap nothing (IoU 0)
    return iou


def _decayed(score, sims, threshold, score_threshold, scale):
    """A candidate's score after comparing it with ``sims`` (newest first), and whether it
    was hard-suppressed (TF's inner loop)."""
    soft = scale != 0
    for sim in sims:
        weight = np.exp(scale * sim * sim) if soft or sim <= threshold else 0 * score
        score = score * weight
        if not soft and sim > threshold:
            return score, True
        if score <= score_threshold:
            break
    return score, False


def greedy_nms(similarity, scores, max_out, threshold, score_threshold, sigma=None):
    """``(indices, scores)`` as TF's ``DoNonMaxSuppressionOp`` selects them; ``similarity(i,
    js)`` compares candidate ``i`` with selected boxes ``js``; ``score_threshold`` None keeps
    every box a candidate. Values are numpy scalars of the scores' dtype, so the arithmetic
    rounds as TF's."""
    t = scores.dtype.type
    if (sigma is None or not t(sigma) > 0) and getattr(similarity, "symmetric", False):
        return _greedy_hard(similarity, scores, max_out, t(threshold), score_threshold)
    if score_threshold is None:  # ONNX without a threshold: every box is a candidate
        score_threshold = t(-np.inf)
        heap = [(-s, i, 0) for i, s in enumerate(scores)]
    else:
        score_threshold = t(score_threshold)
        heap = [(-s, i, 0) for i, s in enumerate(scores) if s > score_threshold]
    threshold = t(threshold)
    sigma = t(0) if sigma is None else t(sigma)
    scale = t(-0.5) / sigma if sigma > 0 else t(0)
    heapq.heapify(heap)
    selected: list[int] = []
    kept: list = []
    while len(selected) < max_out and heap:
        neg, i, begin = heapq.heappop(heap)
        original = -neg
        sims = similarity(i, np.asarray(selected[begin:][::-1], np.int64)).astype(scores.dtype)
        score, hard = _decayed(original, sims, threshold, score_threshold, scale)
        if hard:
            continue
        if score == original:
            selected.append(i)
            kept.append(score)
        elif score > score_threshold:
            heapq.heappush(heap, (-score, i, len(selected)))
    return np.asarray(selected, np.int32), np.asarray(kept, scores.dtype)


def _greedy_hard(similarity, scores, max_out, threshold, score_threshold):
    """Hard NMS (no soft weights) with a symmetric similarity, as ``greedy_nms`` selects:
    candidates in (score descending, index ascending) order; each selected box suppresses at
    once every later candidate above ``threshold``. One vectorised comparison per selected
    box, where TF's lazy form compares each candidate with every selected box in turn (a
    Python loop per pair): the same selection, as the similarity is symmetric."""
    t = scores.dtype.type
    index = np.arange(scores.shape[0])
    if score_threshold is not None:
        index = index[scores > t(score_threshold)]
    order = index[np.lexsort((index, -scores[index]))]
    alive = np.ones(order.shape[0], bool)
    near = _x_neighbours(similarity, order)
    selected: list[int] = []
    for pos in range(order.shape[0]):
        if len(selected) >= max_out:
            break
        if not alive[pos]:
            continue
        i = int(order[pos])
        selected.append(i)
        if near is None:
            later = pos + 1 + np.flatnonzero(alive[pos + 1 :])
        else:
            window = near(pos)
            later = window[(window > pos) & alive[window]]
        if later.size:
            sims = similarity(i, order[later]).astype(scores.dtype)
            alive[later[sims > threshold]] = False
    picked = np.asarray(selected, np.int32)
    return picked, scores[picked].astype(scores.dtype)


def _x_neighbours(similarity, order: np.ndarray):
    """``near(pos)``: the positions in ``order`` whose boxes may overlap box ``order[pos]`` in
    x (every box starting less than the widest box's width before it ends), found by
    bisection in the boxes sorted by their left edge; None when the similarity has no
    geometry or the boxes are few. A superset of the boxes with IoU above 0: a threshold
    in [0, 1] suppresses only inside it, so the selection is unchanged."""
    x_range = getattr(similarity, "x_range", None)
    if x_range is None or order.shape[0] < 256:
        return None
    lo, hi = x_range[0][order], x_range[1][order]
    widest = np.max(hi - lo)
    if not np.isfinite(widest) or not np.all(np.isfinite(lo)):
        return None
    by_lo = np.argsort(lo, kind="stable")
    lo_sorted = lo[by_lo]

    def near(pos: int) -> np.ndarray:
        start = np.searchsorted(lo_sorted, lo[pos] - widest, side="left")
        stop = np.searchsorted(lo_sorted, hi[pos], side="right")
        return by_lo[start:stop]

    return near


def non_max_suppression_indices(
    boxes, scores, max_output_size, iou_threshold, score_threshold, sigma=0.0
):
    """``(indices, scores)`` TF's greedy NMS (V3..V5) selects from host arrays."""
    boxes, scores = np.asarray(boxes), np.asarray(scores)
    _check_boxes(boxes, scores)
    return greedy_nms(iou_fn(boxes), scores, max_output_size, iou_threshold, score_threshold, sigma)


def _nms_kernel(
    boxes,
    scores,
    max_output_size,
    iou_threshold,
    score_threshold,
    sigma=None,
    *,
    similarity=None,
    threshold_name="iou_threshold",
):
    boxes, scores = _host(boxes), _host(scores)
    max_out = int(_host(max_output_size))
    if max_out < 0:
        raise _invalid("output size must be non-negative")
    t = scores.dtype.type
    threshold = t(_host(iou_threshold))
    if similarity is None and not t(0) <= threshold <= t(1):
        raise _invalid(f"{threshold_name} must be in [0, 1]")
    if sigma is not None and t(_host(sigma)) < 0:
        raise _invalid("soft_nms_sigma must be non-negative")
    _check_boxes(boxes, scores, square=similarity is not None)
    if similarity is None:
        similarity = iou_fn(boxes)
    sig = None if sigma is None else _host(sigma)
    return greedy_nms(similarity, scores, max_out, threshold, t(_host(score_threshold)), sig)


def _padded(xp, idx, kept, max_out, pad):
    valid = np.int32(len(idx))
    if pad and len(idx) < max_out:
        idx = np.concatenate([idx, np.zeros(max_out - len(idx), np.int32)])
        kept = np.concatenate([kept, np.zeros(max_out - len(kept), kept.dtype)])
    return xp.asarray(idx), xp.asarray(kept), xp.asarray(valid)


_LOWEST = float(np.finfo(np.float32).min)


@op(
    "NonMaxSuppression",
    infer=_nms_infer("indices"),
    differentiable=False,
    inputs=("boxes", "scores", "max_output_size"),
    attrs=(Attr("iou_threshold", "float", default=0.5),),
    flags=_CPU,
)
def _nms_v1(xp, boxes, scores, max_output_size, *, iou_threshold=0.5):
    idx, _ = _nms_kernel(boxes, scores, max_output_size, iou_threshold, _LOWEST)
    return xp.asarray(idx)


@op(
    "NonMaxSuppressionV2",
    infer=_nms_infer("indices"),
    differentiable=False,
    inputs=("boxes", "scores", "max_output_size", "iou_threshold"),
    flags=_CPU,
)
def _nms_v2(xp, boxes, scores, max_output_size, iou_threshold):
    idx, _ = _nms_kernel(boxes, scores, max_output_size, iou_threshold, _LOWEST)
    return xp.asarray(idx)


_V3_INPUTS = ("boxes", "scores", "max_output_size", "iou_threshold", "score_threshold")
_PAD = (Attr("pad_to_max_output_size", "bool", default=False),)


@op(
    "NonMaxSuppressionV3",
    infer=_nms_infer("indices"),
    differentiable=False,
    inputs=_V3_INPUTS,
    flags=_CPU,
)
def _nms_v3(xp, boxes, scores, max_output_size, iou_threshold, score_threshold):
    idx, _ = _nms_kernel(boxes, scores, max_output_size, iou_threshold, score_threshold)
    return xp.asarray(idx)


@op(
    "NonMaxSuppressionV4",
    infer=_nms_infer("indices valid"),
    differentiable=False,
    inputs=_V3_INPUTS,
    attrs=_PAD,
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
    idx, kept = _nms_kernel(boxes, scores, max_output_size, iou_threshold, score_threshold)
    max_out = int(_host(max_output_size))
    out = _padded(xp, idx, kept, max_out, pad_to_max_output_size)
    return out[0], out[2]


@op(
    "NonMaxSuppressionV5",
    infer=_nms_infer("indices scores valid"),
    differentiable=False,
    inputs=(*_V3_INPUTS, "soft_nms_sigma"),
    attrs=_PAD,
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
    idx, kept = _nms_kernel(
        boxes, scores, max_output_size, iou_threshold, score_threshold, soft_nms_sigma
    )
    max_out = int(_host(max_output_size))
    return _padded(xp, idx, kept, max_out, pad_to_max_output_size)


@op(
    "NonMaxSuppressionWithOverlaps",
    infer=_nms_infer("indices", square=True),
    differentiable=False,
    inputs=("overlaps", "scores", "max_output_size", "overlap_threshold", "score_threshold"),
    flags=_CPU,
)
def _nms_overlaps(xp, overlaps, scores, max_output_size, overlap_threshold, score_threshold):
    table = _host(overlaps)
    idx, _ = _nms_kernel(
        table,
        scores,
        max_output_size,
        overlap_threshold,
        score_threshold,
        similarity=lambda i, js: table[i, js],
    )
    return xp.asarray(idx)


# -- CombinedNonMaxSuppression ----------------------------------------------------------------


def _combined_infer(o):
    boxes, scores = o._inputs[0], o._inputs[1]
    for t in o._inputs[:2] + o._inputs[4:]:
        if t._dtype.base_dtype is not dtypes.float32:
            raise TypeError(f"CombinedNonMaxSuppression takes float32 inputs, got {t.dtype.name}")
    b, s = _rank(boxes, 4), _rank(scores, 3)
    for t in o._inputs[2:]:
        _rank(t, 0)
    if b is not None and b[3] is not None and b[3] != 4:
        raise ShapeError(f"Dimension must be 4 but is {b[3]}")
    if b is not None and s is not None:
        _same_dim(b[0], s[0])
        _same_dim(b[1], s[1])
        if None not in (b[2], s[2]) and b[2] not in (1, s[2]):
            raise ShapeError(
                "third dimension of boxes must be either 1 or equal to the third dimension "
                "of scores"
            )
    per_class, total = constant_value(o._inputs[2]), constant_value(o._inputs[3])
    if total is not None and int(total) <= 0:
        raise ShapeError("max_total_size should be > 0")
    size = None if total is None else int(total)
    classes = s[2] if s is not None else None
    if o._attrs["pad_per_class"]:
        known = None not in (per_class, classes, size)
        size = min(int(per_class) * classes, size) if known else None
    batch = (b and b[0]) or (s and s[0])
    f32 = dtypes.float32
    return [
        (f32, TensorShape([batch, size, 4])),
        (f32, TensorShape([batch, size])),
        (f32, TensorShape([batch, size])),
        (dtypes.int32, TensorShape([batch])),
    ]


def _by_score(a, b) -> bool:
    return a[0] < b[0]


def _per_class(boxes, scores, per_class, iou_threshold, score_threshold):
    """One class's selection: TF's ``DoNMSPerClass`` (score-only heap, IoU strictly above
    the threshold suppresses)."""
    queue = PriorityQueue(_by_score)
    for i in np.flatnonzero(scores > score_threshold).tolist():
        queue.push((scores[i], i))
    iou = iou_fn(boxes)
    selected: list[int] = []
    while len(selected) < per_class and len(queue):
        score, i = queue.pop()
        sims = iou(i, np.asarray(selected[::-1], np.int64))
        if not (sims > iou_threshold).any():
            selected.append(i)
    return selected


def _combined_batch(boxes, scores, args):
    """One batch element: (boxes [size, 4], scores, classes, valid count)."""
    per_class, total, iou_threshold, score_threshold, pad_per_class, clip = args
    num_boxes, num_classes = scores.shape
    size_per_class = min(per_class, num_boxes)
    slots = [(np.float32(-1.0), -1, -1)] * (size_per_class * num_classes)
    for c in range(num_classes):
        class_boxes = boxes[:, c if boxes.shape[1] > 1 else 0]
        picked = _per_class(
            class_boxes, scores[:, c], size_per_class, iou_threshold, score_threshold
        )
        for k, i in enumerate(picked):
            slots[c * size_per_class + k] = (scores[i, c], i, c)
    std_sort(slots, lambda a, b: a[0] > b[0])
    size = min(total, per_class * num_classes) if pad_per_class else total
    found = sum(1 for s in slots if s[1] > -1)
    valid = min(found, size)
    out_boxes = np.zeros((size, 4), np.float32)
    out_scores = np.zeros(size, np.float32)
    out_classes = np.zeros(size, np.float32)
    for k, (score, i, c) in enumerate(slots[:valid]):
        box = boxes[i, c if boxes.shape[1] > 1 else 0]
        out_boxes[k] = np.clip(box, 0, 1) if clip else box
        out_scores[k], out_classes[k] = score, c
    return out_boxes, out_scores, out_classes, valid


@op(
    "CombinedNonMaxSuppression",
    infer=_combined_infer,
    differentiable=False,
    inputs=(
        "boxes",
        "scores",
        "max_output_size_per_class",
        "max_total_size",
        "iou_threshold",
        "score_threshold",
    ),
    attrs=(
        Attr("pad_per_class", "bool", default=False),
        Attr("clip_boxes", "bool", default=True),
    ),
    flags=_CPU,
)
def _combined_nms(
    xp,
    boxes,
    scores,
    max_output_size_per_class,
    max_total_size,
    iou_threshold,
    score_threshold,
    *,
    pad_per_class=False,
    clip_boxes=True,
):
    boxes, scores = _host(boxes), _host(scores)
    per_class, total = int(_host(max_output_size_per_class)), int(_host(max_total_size))
    if per_class <= 0:
        raise _invalid("max_size_per_class must be positive")
    if total <= 0:
        raise _invalid("max_total_size must be > 0")
    iou = np.float32(_host(iou_threshold))
    if not 0 <= iou <= 1:
        raise _invalid("iou_threshold must be in [0, 1]")
    if boxes.ndim != 4 or boxes.shape[3] != 4 or boxes.shape[2] not in (1, scores.shape[-1]):
        raise _invalid(f"boxes must be [batch, num_boxes, q, 4], got {list(boxes.shape)}")
    if scores.ndim != 3 or scores.shape[:2] != boxes.shape[:2]:
        raise _invalid(f"scores has incompatible shape {list(scores.shape)}")
    args = (per_class, total, iou, np.float32(_host(score_threshold)), pad_per_class, clip_boxes)
    parts = [_combined_batch(boxes[b], scores[b], args) for b in range(boxes.shape[0])]
    n = len(parts)
    size = min(total, per_class * scores.shape[2]) if pad_per_class else total
    return (
        xp.asarray(np.stack([p[0] for p in parts]) if n else np.zeros((0, size, 4), np.float32)),
        xp.asarray(np.stack([p[1] for p in parts]) if n else np.zeros((0, size), np.float32)),
        xp.asarray(np.stack([p[2] for p in parts]) if n else np.zeros((0, size), np.float32)),
        xp.asarray(np.array([p[3] for p in parts], np.int32)),
    )


# -- the tf.image functions -------------------------------------------------------------------


def raw_op(op_type: str, name: str | None = None, **kwargs):
    """Creates an op by its declared input and attr names (TF's ``tf.raw_ops.<op_type>``);
    returns its output, or the tuple of its outputs."""
    opdef = get(op_type)
    names = [n.rstrip("*") for n in opdef.input_names]
    missing = [n for n in names if n not in kwargs]
    if missing:
        raise TypeError(f"{op_type} lacks the inputs {missing}")
    with name_scope(name, op_type, [kwargs[n] for n in names]) as scope:
        ins = [convert_to_tensor(kwargs.pop(n), name=n) for n in names]
        outs = create(op_type, ins, kwargs, scope).outputs
    return outs[0] if len(outs) == 1 else tuple(outs)


def _nms_inputs(boxes, scores, max_output_size, thresholds):
    boxes = convert_to_tensor(boxes, name="boxes")
    scores = convert_to_tensor(scores, dtype=boxes.dtype.base_dtype, name="scores")
    size = convert_to_tensor(max_output_size, dtype=dtypes.int32, name="max_output_size")
    t = dtypes.float16 if boxes.dtype.base_dtype is dtypes.float16 else dtypes.float32
    rest = [convert_to_tensor(v, dtype=t, name=n) for n, v in thresholds]
    return [boxes, scores, size, *rest]


def non_max_suppression(
    boxes, scores, max_output_size, iou_threshold=0.5, score_threshold=float("-inf"), name=None
) -> Tensor:
    """Indices of the boxes greedy NMS keeps, best first (``tf.image.non_max_suppression``).

    ``boxes`` are ``[num_boxes, 4]`` corners ``[y1, x1, y2, x2]`` (either diagonal pair); a
    box is dropped when its IoU with a kept box is above ``iou_threshold``, or its score is
    not above ``score_threshold``. At most ``max_output_size`` int32 indices::

        keep = tf.image.non_max_suppression(boxes, scores, 100, iou_threshold=0.6)
        kept_boxes = tf.gather(boxes, keep)
    """
    with name_scope(name, "non_max_suppression", [boxes, scores]) as scope:
        thresholds = (("iou_threshold", iou_threshold), ("score_threshold", score_threshold))
        ins = _nms_inputs(boxes, scores, max_output_size, thresholds)
        return create("NonMaxSuppressionV3", ins, {}, scope).outputs[0]


def non_max_suppression_padded(
    boxes,
    scores,
    max_output_size,
    iou_threshold=0.5,
    score_threshold=float("-inf"),
    pad_to_max_output_size=False,
    name=None,
    sorted_input=False,
    canonicalized_coordinates=False,
    tile_size=512,
):
    """``(selected_indices, valid_outputs)`` of one image's ``[num_boxes, 4]`` boxes, as
    ``NonMaxSuppressionV4`` selects them; with ``pad_to_max_output_size`` the indices are
    zero-padded to ``max_output_size``. ``sorted_input``, ``canonicalized_coordinates`` and
    ``tile_size`` tune TF2's tiled implementation and do not change the selection here."""
    del sorted_input, canonicalized_coordinates, tile_size
    with name_scope(name, "non_max_suppression_padded", [boxes, scores]) as scope:
        thresholds = (("iou_threshold", iou_threshold), ("score_threshold", score_threshold))
        ins = _nms_inputs(boxes, scores, max_output_size, thresholds)
        attrs = {"pad_to_max_output_size": bool(pad_to_max_output_size)}
        o = create("NonMaxSuppressionV4", ins, attrs, scope)
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
        thresholds = (
            ("iou_threshold", iou_threshold),
            ("score_threshold", score_threshold),
            ("soft_nms_sigma", soft_nms_sigma),
        )
        ins = _nms_inputs(boxes, scores, max_output_size, thresholds)
        o = create("NonMaxSuppressionV5", ins, {"pad_to_max_output_size": False}, scope)
        return o.outputs[0], o.outputs[1]


def non_max_suppression_overlaps(
    overlaps,
    scores,
    max_output_size,
    overlap_threshold=0.5,
    score_threshold=float("-inf"),
    name=None,
) -> Tensor:
    """Greedy NMS on a precomputed ``[num_boxes, num_boxes]`` overlap table: a box is
    dropped when its overlap with a kept box is above ``overlap_threshold``."""
    with name_scope(name, "non_max_suppression_overlaps", [overlaps, scores]) as scope:
        thresholds = (
            ("overlap_threshold", overlap_threshold),
            ("score_threshold", score_threshold),
        )
        ins = _nms_inputs(overlaps, scores, max_output_size, thresholds)
        return create("NonMaxSuppressionWithOverlaps", ins, {}, scope).outputs[0]


def combined_non_max_suppression(
    boxes,
    scores,
    max_output_size_per_class,
    max_total_size,
    iou_threshold=0.5,
    score_threshold=float("-inf"),
    pad_per_class=False,
    clip_boxes=True,
    name=None,
):
    """Per batch element and class NMS, merged by score: ``(nmsed_boxes [batch, size, 4],
    nmsed_scores, nmsed_classes (float32), valid_detections)``. ``boxes`` are ``[batch,
    num_boxes, q, 4]`` (q is 1 or the number of classes), ``scores`` ``[batch, num_boxes,
    num_classes]``; ``size`` is ``max_total_size``, or with ``pad_per_class`` at most
    ``max_output_size_per_class * num_classes``; ``clip_boxes`` clips to [0, 1]."""
    with name_scope(name, "combined_non_max_suppression", [boxes, scores]) as scope:
        f32 = dtypes.float32
        ins = [
            convert_to_tensor(boxes, dtype=f32, name="boxes"),
            convert_to_tensor(scores, dtype=f32, name="scores"),
            convert_to_tensor(
                max_output_size_per_class, dtype=dtypes.int32, name="max_output_size_per_class"
            ),
            convert_to_tensor(max_total_size, dtype=dtypes.int32, name="max_total_size"),
            convert_to_tensor(iou_threshold, dtype=f32, name="iou_threshold"),
            convert_to_tensor(score_threshold, dtype=f32, name="score_threshold"),
        ]
        attrs = {"pad_per_class": bool(pad_per_class), "clip_boxes": bool(clip_boxes)}
        return tuple(create("CombinedNonMaxSuppression", ins, attrs, scope).outputs)
