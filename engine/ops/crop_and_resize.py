"""``CropAndResize`` (bilinear and nearest, with an extrapolation value) and its gradients
``CropAndResizeGradImage`` and ``CropAndResizeGradBoxes``, as TensorFlow's CPU kernels
compute them.

A box ``[y1, x1, y2, x2]`` in normalized coordinates samples ``crop_size`` points spread
from ``y1 * (height - 1)`` to ``y2 * (height - 1)`` (one point: the centre); points outside
the image take ``extrapolation_value``. Sampling coordinates are float32 and computed in
TF's order, so the points (and ``roundf``'s choice for nearest) are TF's. The sampling grid
is built on the host from the (small) boxes; the pixels are gathered with ``xp``.
"""

from __future__ import annotations

import numpy as np

from engine import dtypes, errors
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.registry import Attr, OpFlags, ShapeError, op
from engine.framework.tensor_util import constant_value
from engine.ops._common import FLOATS, create
from engine.ops.array import shape as shape_of
from engine.tensor_shape import TensorShape

__all__ = ["crop_and_resize"]

_F32 = np.float32
_METHODS = ("bilinear", "nearest")
_IMAGE_TYPES = FLOATS | frozenset(
    [dtypes.uint8, dtypes.uint16, dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64]
)


def _host(v) -> np.ndarray:
    return np.asarray(v.get() if hasattr(v, "get") else v)


def _dims(t: Tensor, rank: int) -> tuple:
    dims = t._shape.as_tuple()
    if dims is None:
        return (None,) * rank
    if len(dims) != rank:
        raise ShapeError(f"Shape must be rank {rank} but is rank {len(dims)}")
    return dims


def _check_boxes_shape(boxes: Tensor, box_ind: Tensor) -> int | None:
    b, ind = _dims(boxes, 2), _dims(box_ind, 1)
    if b[1] is not None and b[1] != 4:
        raise ShapeError(f"Dimension must be 4 but is {b[1]}")
    if None not in (b[0], ind[0]) and b[0] != ind[0]:
        raise ShapeError(f"Dimensions must be equal, but are {b[0]} and {ind[0]}")
    if boxes._dtype.base_dtype is not dtypes.float32:
        raise TypeError(f"boxes must be float32, got {boxes._dtype.base_dtype.name}")
    if box_ind._dtype.base_dtype is not dtypes.int32:
        raise TypeError(f"box_ind must be int32, got {box_ind._dtype.base_dtype.name}")
    return b[0] if b[0] is not None else ind[0]


def _check_method(o, allowed=_METHODS) -> None:
    method = o._attrs["method"]
    if method not in allowed:
        names = ", ".join(f'"{m}"' for m in allowed)
        raise ShapeError(
            f"Attr 'method' of '{o.type}' Op passed string '{method}' not in: {names}."
        )


def _two_ints(t: Tensor, what: str) -> list:
    value = constant_value(t)
    if value is None:
        return [None, None]
    dims = [int(v) for v in np.asarray(value).ravel()]
    if len(dims) != 2:
        raise ShapeError(f"{what} must have two elements, got {dims}")
    return dims


def _crop_infer(o):
    image, boxes, box_ind, crop_size = o._inputs
    _check_method(o)
    if image._dtype.base_dtype not in _IMAGE_TYPES:
        raise TypeError(f"CropAndResize cannot crop {image._dtype.base_dtype.name} images")
    img = _dims(image, 4)
    n = _check_boxes_shape(boxes, box_ind)
    _dims(crop_size, 1)
    return [(dtypes.float32, TensorShape([n, *_two_ints(crop_size, "crop_size"), img[3]]))]


# -- the sampling grid ------------------------------------------------------------------------


def _axis(lo: np.ndarray, hi: np.ndarray, size: int, crop: int, by_ratio: bool):
    """Per box, the float32 source coordinates of one axis' ``crop`` points and whether each
    lies inside ``[0, size - 1]`` (TF's ``in_y``/``in_x``; the boxes' gradient scales by a
    precomputed ratio, the other kernels multiply, then divide)."""
    if crop > 1:
        if by_ratio:
            scale = (hi - lo) * (_F32(size - 1) / _F32(crop - 1))
        else:
            scale = (hi - lo) * _F32(size - 1) / _F32(crop - 1)
        steps = np.arange(crop, dtype=_F32)
        src = lo[:, None] * _F32(size - 1) + steps[None, :] * scale[:, None]
    else:
        src = (0.5 * (lo + hi).astype(np.float64) * (size - 1)).astype(_F32)[:, None]
    inside = (src >= 0) & (src <= size - 1)
    return np.where(inside, src, _F32(0)), inside


def _grid(boxes: np.ndarray, image_shape, crop: tuple, by_ratio: bool = False):
    """(ys, y_in, xs, x_in): the boxes' source coordinates, [num_boxes, crop_h / crop_w]."""
    _, h, w, _ = image_shape
    ys, y_in = _axis(boxes[:, 0], boxes[:, 2], h, crop[0], by_ratio)
    xs, x_in = _axis(boxes[:, 1], boxes[:, 3], w, crop[1], by_ratio)
    return ys, y_in, xs, x_in


def _roundf(x: np.ndarray) -> np.ndarray:
    """C's ``roundf`` of non-negative values (halves away from zero), exactly."""
    lower = np.floor(x)
    return np.where(x - lower >= 0.5, lower + 1, lower).astype(np.int64)


def _check_run(boxes, box_ind, batch: int, crop) -> None:
    if boxes.ndim != 2 or boxes.shape[1] != 4 or box_ind.shape != (boxes.shape[0],):
        raise errors.InvalidArgumentError(
            None,
            None,
            f"boxes must be [num_boxes, 4] and box_index [num_boxes], got "
            f"{list(boxes.shape)} and {list(box_ind.shape)}",
        )
    if len(crop) != 2 or min(crop) <= 0:
        raise errors.InvalidArgumentError(None, None, "crop dimensions must be positive")
    if box_ind.size and (box_ind.min() < 0 or box_ind.max() >= batch):
        raise errors.OutOfRangeError(None, None, "box_index has values outside [0, batch_size)")


def _lerp_terms(ys, xs):
    """Per box: (top, bottom, y_lerp) rows and (left, right, x_lerp) columns."""
    top, left = np.floor(ys), np.floor(xs)
    rows = (top.astype(np.int64), np.ceil(ys).astype(np.int64), (ys - top).astype(_F32))
    cols = (left.astype(np.int64), np.ceil(xs).astype(np.int64), (xs - left).astype(_F32))
    return rows, cols


def _gather(xp, image, box_ind, rows, cols):
    """image[box_ind[b], rows[b, i], cols[b, j], :] as float32: [num_boxes, h, w, depth]."""
    b = xp.asarray(box_ind)[:, None, None]
    r = xp.asarray(rows)[:, :, None]
    c = xp.asarray(cols)[:, None, :]
    return image[b, r, c].astype(xp.float32)


@op(
    "CropAndResize",
    infer=_crop_infer,
    grad=lambda op, grad: _crop_and_resize_grad(op, grad),
    inputs=("image", "boxes", "box_ind", "crop_size"),
    attrs=(
        Attr("method", "string", default="bilinear"),
        Attr("extrapolation_value", "float", default=0.0),
    ),
    flags=OpFlags(host_inputs=(1, 2, 3)),
)
def _crop_and_resize(
    xp, image, boxes, box_ind, crop_size, *, method="bilinear", extrapolation_value=0.0
):
    boxes, box_ind = _host(boxes).astype(_F32), _host(box_ind)
    crop = [int(v) for v in _host(crop_size).ravel()]
    _check_run(boxes, box_ind, image.shape[0], crop)
    ys, y_in, xs, x_in = _grid(boxes, image.shape, crop)
    if method == "nearest":
        out = _gather(xp, image, box_ind, _roundf(ys), _roundf(xs))
    else:
        (top, bottom, dy), (left, right, dx) = _lerp_terms(ys, xs)
        dx = xp.asarray(dx)[:, None, :, None]
        dy = xp.asarray(dy)[:, :, None, None]
        tl, tr = (_gather(xp, image, box_ind, top, c) for c in (left, right))
        bl, br = (_gather(xp, image, box_ind, bottom, c) for c in (left, right))
        upper = tl + (tr - tl) * dx
        lower = bl + (br - bl) * dx
        out = upper + (lower - upper) * dy
    inside = xp.asarray(y_in[:, :, None, None] & x_in[:, None, :, None])
    return xp.where(inside, out, xp.float32(extrapolation_value)).astype(xp.float32)


# -- gradients --------------------------------------------------------------------------------


def _grad_image_infer(o):
    grads, boxes, box_ind, image_size = o._inputs
    _check_method(o)
    if o._attrs["T"] not in FLOATS:
        raise TypeError(f"T must be a floating type, got {o._attrs['T'].name}")
    _dims(grads, 4)
    _check_boxes_shape(boxes, box_ind)
    _dims(image_size, 1)
    value = constant_value(image_size)
    dims = [None] * 4 if value is None else [int(v) for v in np.asarray(value).ravel()]
    return [(o._attrs["T"], TensorShape(dims))]


def _scatter_image(xp, out, box_ind, rows, cols, values):
    """Adds ``values`` [num_boxes, h, w, k, depth] at the pixels (rows [.., k], cols [.., k])
    in TF's loop order (box, y, x, corner), so the float sums round as TF's do."""
    n, h, w, k, depth = values.shape
    b = np.broadcast_to(box_ind[:, None, None, None], (n, h, w, k))
    flat = out.reshape(-1, depth)
    index = (b * out.shape[1] + rows) * out.shape[2] + cols
    host = np.zeros(flat.shape, out.dtype) if xp is not np else flat
    np.add.at(host, index.reshape(-1), _host(values).reshape(-1, depth).astype(out.dtype))
    return xp.asarray(host).reshape(out.shape) if xp is not np else out


@op(
    "CropAndResizeGradImage",
    infer=_grad_image_infer,
    differentiable=False,
    inputs=("grads", "boxes", "box_ind", "image_size"),
    attrs=(Attr("T", "type"), Attr("method", "string", default="bilinear")),
    flags=OpFlags(host_inputs=(1, 2, 3)),
)
def _crop_grad_image(xp, grads, boxes, box_ind, image_size, *, T, method="bilinear"):
    boxes, box_ind = _host(boxes).astype(_F32), _host(box_ind)
    shape = tuple(int(v) for v in _host(image_size).ravel())
    if len(shape) != 4 or min(shape) < 0:
        raise errors.InvalidArgumentError(None, None, f"image_size must be 4 sizes, got {shape}")
    crop = tuple(grads.shape[1:3])
    _check_run(boxes, box_ind, shape[0], crop)
    out = np.zeros(shape, T.as_numpy_dtype)
    ys, y_in, xs, x_in = _grid(boxes, shape, crop)
    inside = (y_in[:, :, None] & x_in[:, None, :])[..., None, None]
    g = _host(grads).astype(_F32)[:, :, :, None, :]
    if method == "nearest":
        rows = np.broadcast_to(_roundf(ys)[:, :, None, None], inside.shape[:4])
        cols = np.broadcast_to(_roundf(xs)[:, None, :, None], inside.shape[:4])
        values = np.where(inside, g, _F32(0))
    else:
        (top, bottom, dy), (left, right, dx) = _lerp_terms(ys, xs)
        grid = (len(boxes), *crop)
        rows = np.stack(
            [np.broadcast_to(r[:, :, None], grid) for r in (top, top, bottom, bottom)], -1
        )
        cols = np.stack(
            [np.broadcast_to(c[:, None, :], grid) for c in (left, right, left, right)], -1
        )
        dy, dx = dy[:, :, None, None, None], dx[:, None, :, None, None]
        dtop, dbottom = (_F32(1) - dy) * g[..., 0:1, :], dy * g[..., 0:1, :]
        weights = [(_F32(1) - dx) * dtop, dx * dtop, (_F32(1) - dx) * dbottom, dx * dbottom]
        values = np.where(inside, np.concatenate(weights, 3), _F32(0))
    return xp.asarray(_scatter_image(np, out, box_ind, rows, cols, values))


def _grad_boxes_infer(o):
    grads, image, boxes, box_ind = o._inputs
    _check_method(o, ("bilinear",))
    _dims(grads, 4)
    _dims(image, 4)
    n = _check_boxes_shape(boxes, box_ind)
    return [(dtypes.float32, TensorShape([n, 4]))]


@op(
    "CropAndResizeGradBoxes",
    infer=_grad_boxes_infer,
    differentiable=False,
    inputs=("grads", "image", "boxes", "box_ind"),
    attrs=(Attr("method", "string", default="bilinear"),),
    flags=OpFlags(host_inputs=(2, 3)),
)
def _crop_grad_boxes(xp, grads, image, boxes, box_ind, *, method="bilinear"):
    boxes, box_ind = _host(boxes).astype(_F32), _host(box_ind)
    _, h, w, _ = image.shape
    crop = tuple(grads.shape[1:3])
    _check_run(boxes, box_ind, image.shape[0], crop)
    ys, y_in, xs, x_in = _grid(boxes, image.shape, crop, by_ratio=True)
    (top, bottom, dy), (left, right, dx) = _lerp_terms(ys, xs)
    tl, tr = (_host(_gather(xp, image, box_ind, top, c)) for c in (left, right))
    bl, br = (_host(_gather(xp, image, box_ind, bottom, c)) for c in (left, right))
    dx, dy = dx[:, None, :, None], dy[:, :, None, None]
    g = _host(grads).astype(_F32)
    grad_y = ((_F32(1) - dx) * (bl - tl) + dx * (br - tr)) * g
    grad_x = ((_F32(1) - dy) * (tr - tl) + dy * (br - bl)) * g
    inside = (y_in[:, :, None] & x_in[:, None, :])[..., None]
    grad_y, grad_x = np.where(inside, grad_y, 0), np.where(inside, grad_x, 0)
    out = np.zeros((len(boxes), 4), np.float64)
    for axis, (grad, size, n_crop) in enumerate(((grad_y, h, crop[0]), (grad_x, w, crop[1]))):
        summed = grad.sum(axis=(2, 3) if axis == 0 else (1, 3), dtype=np.float64)  # [n, crop]
        if n_crop > 1:
            ratio = _F32(size - 1) / _F32(n_crop - 1)
            step = np.arange(n_crop, dtype=_F32) * ratio
            first, second = _F32(size - 1) - step, step
        else:
            first = second = np.full(1, 0.5 * (size - 1))
        out[:, axis] = (summed * first).sum(1)
        out[:, axis + 2] = (summed * second).sum(1)
    return xp.asarray(out.astype(_F32))


def _crop_and_resize_grad(op, grad):
    """TF's ``_CropAndResizeGrad``: the image's gradient (floating images only) and the
    boxes' (bilinear's, for the nearest method too); none for indices and sizes."""
    image, boxes, box_ind = op.inputs[0], op.inputs[1], op.inputs[2]
    method = op.get_attr("method")
    grad_image = None
    if image.dtype.base_dtype in FLOATS:
        dims = image.shape.as_list() if image.shape.is_fully_defined() else None
        size = convert_to_tensor(dims, dtype=dtypes.int32) if dims else shape_of(image)
        grad_image = create(
            "CropAndResizeGradImage",
            [grad, boxes, box_ind, size],
            {"T": image.dtype.base_dtype, "method": method},
        ).outputs[0]
    grad_boxes = create(
        "CropAndResizeGradBoxes", [grad, image, boxes, box_ind], {"method": "bilinear"}
    ).outputs[0]
    return [grad_image, grad_boxes, None, None]


def crop_and_resize(
    image,
    boxes,
    box_ind=None,
    crop_size=None,
    method="bilinear",
    extrapolation_value=0,
    name=None,
    box_indices=None,
) -> Tensor:
    """Crops ``boxes`` (normalized ``[y1, x1, y2, x2]``, float32 ``[num_boxes, 4]``) out of
    the NHWC ``image`` batch entries ``box_ind`` and resizes each to ``crop_size``
    (height, width): a float32 ``[num_boxes, crop_h, crop_w, depth]`` tensor. ``method`` is
    ``"bilinear"`` or ``"nearest"``; samples outside the image are ``extrapolation_value``::

        crops = tf.image.crop_and_resize(images, [[0.1, 0.1, 0.6, 0.9]], [0], (7, 7))
    """
    if box_indices is not None:
        if box_ind is not None:
            raise ValueError("Cannot specify both 'box_ind' and 'box_indices'")
        box_ind = box_indices
    if box_ind is None or crop_size is None:
        raise TypeError("crop_and_resize needs box_ind (box_indices) and crop_size")
    with name_scope(name, "CropAndResize", [image, boxes, box_ind]) as scope:
        ins = [
            convert_to_tensor(image, name="image"),
            convert_to_tensor(boxes, dtype=dtypes.float32, name="boxes"),
            convert_to_tensor(box_ind, dtype=dtypes.int32, name="box_ind"),
            convert_to_tensor(crop_size, dtype=dtypes.int32, name="crop_size"),
        ]
        attrs = {"method": method, "extrapolation_value": float(extrapolation_value)}
        return create("CropAndResize", ins, attrs, scope).outputs[0]
