"""``ExtractImagePatches`` (``tf.image.extract_patches``, TF1's ``tf.extract_image_patches``):
each output pixel holds the ``ksize_rows x ksize_cols`` patch around it, flattened in
(row, column, channel) order; ``rates`` dilate the patch, ``padding`` is VALID or SAME (zero
filled). The gradient, as TF's, scatters back through the patch of pixel indices: the same
kernel extracts an index image, and ``unsorted_segment_sum`` adds each patch entry to the
pixel it came from (padding lands in a discarded slot 0)."""

from __future__ import annotations

import math

from engine import dtypes
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.registry import Attr, ShapeError, op
from engine.ops import array as array_ops
from engine.ops import math as math_ops
from engine.ops import segment_ops, slicing
from engine.ops._common import create
from engine.tensor_shape import TensorShape

__all__ = ["extract_image_patches", "extract_patches"]

_ATTRS = (
    Attr("ksizes", "list(int)"),
    Attr("strides", "list(int)"),
    Attr("rates", "list(int)"),
    Attr("padding", "string"),
)


def _check_attrs(ksizes, strides, rates, padding):
    for name, v in (("ksizes", ksizes), ("strides", strides), ("rates", rates)):
        v = list(v)
        if len(v) != 4 or v[0] != 1 or v[3] != 1 or min(v) < 1:
            raise ShapeError(
                f"ExtractImagePatches: {name} must be [1, rows, cols, 1] of positive ints, got {v}"
            )
    if padding not in ("VALID", "SAME"):
        raise ShapeError(f"ExtractImagePatches: padding must be VALID or SAME, got {padding!r}")


def _out_size(size, k, stride, rate, padding):
    """(output size, padding before) for one spatial axis, as TF's ``GetWindowedOutputSize``."""
    k_eff = k + (k - 1) * (rate - 1)
    if padding == "VALID":
        return max(math.ceil((size - k_eff + 1) / stride), 0), 0
    out = math.ceil(size / stride)
    return out, max((out - 1) * stride + k_eff - size, 0) // 2


def _infer(o):
    x = o._inputs[0]
    a = o._attrs
    _check_attrs(a["ksizes"], a["strides"], a["rates"], a["padding"])
    dims = x._shape.as_tuple()
    if dims is None:
        return [(x._dtype.base_dtype, TensorShape([None] * 4))]
    if len(dims) != 4:
        raise ShapeError(f"Shape must be rank 4 but is rank {len(dims)}")
    n, h, w, c = dims
    out = []
    for size, i in ((h, 1), (w, 2)):
        out.append(
            None
            if size is None
            else _out_size(size, a["ksizes"][i], a["strides"][i], a["rates"][i], a["padding"])[0]
        )
    depth = None if c is None else a["ksizes"][1] * a["ksizes"][2] * c
    return [(x._dtype.base_dtype, TensorShape([n, out[0], out[1], depth]))]


@op(
    "ExtractImagePatches",
    infer=_infer,
    grad=lambda op, grad: [_extract_patches_grad(op, grad)],
    inputs=("images",),
    attrs=_ATTRS,
)
def _extract_patches(xp, images, *, ksizes, strides, rates, padding):
    n, h, w, c = images.shape
    kr, kc = ksizes[1], ksizes[2]
    oh, top = _out_size(h, kr, strides[1], rates[1], padding)
    ow, left = _out_size(w, kc, strides[2], rates[2], padding)
    rows = xp.arange(oh)[:, None] * strides[1] - top + xp.arange(kr)[None, :] * rates[1]
    cols = xp.arange(ow)[:, None] * strides[2] - left + xp.arange(kc)[None, :] * rates[2]
    # One zero row/column past the end stands in for every padded position.
    padded = xp.zeros((n, h + 1, w + 1, c), dtype=images.dtype)
    padded[:, :h, :w] = images
    rows = xp.where((rows < 0) | (rows >= h), h, rows)
    cols = xp.where((cols < 0) | (cols >= w), w, cols)
    # [n, oh, kr, ow, kc, c] -> [n, oh, ow, kr, kc, c]
    patches = padded[:, rows][:, :, :, cols]
    patches = patches.transpose(0, 1, 3, 2, 4, 5)
    return xp.ascontiguousarray(patches.reshape(n, oh, ow, kr * kc * c))


def _extract_patches_grad(op, grad):
    x = op.inputs[0]
    shape = array_ops.shape(x, out_type=dtypes.int64)
    count = array_ops.size(x, out_type=dtypes.int64)
    # Pixel i gets index i + 1; 0 marks padding and is dropped after the sum.
    idx = array_ops.reshape(array_ops.range(1, count + 1, dtype=dtypes.int64), shape)
    attrs = {k: op.get_attr(k) for k in ("ksizes", "strides", "rates", "padding")}
    idx_patches = create("ExtractImagePatches", [idx], attrs, None).outputs[0]
    sums = segment_ops.unsorted_segment_sum(
        array_ops.reshape(grad, [-1]),
        array_ops.reshape(idx_patches, [-1]),
        math_ops.add(count, 1),
    )
    return array_ops.reshape(slicing.strided_slice(sums, [1], [0], end_mask=1), shape)


def extract_image_patches(
    images, ksizes=None, strides=None, rates=None, padding=None, name=None, sizes=None
) -> Tensor:
    """TF1's ``tf.extract_image_patches`` (``sizes`` is the TF2 name of ``ksizes``)."""
    if ksizes is not None and sizes is not None:
        raise ValueError("Cannot specify both 'ksizes' and 'sizes'")
    ksizes = sizes if ksizes is None else ksizes
    for what, v in (("ksizes", ksizes), ("strides", strides), ("rates", rates)):
        if v is None:
            raise TypeError(f"extract_image_patches() missing required argument: '{what}'")
    if padding is None:
        raise TypeError("extract_image_patches() missing required argument: 'padding'")
    with name_scope(name, "ExtractImagePatches", [images]) as scope:
        x = convert_to_tensor(images, name="images")
        attrs = {
            "ksizes": [int(v) for v in ksizes],
            "strides": [int(v) for v in strides],
            "rates": [int(v) for v in rates],
            "padding": str(padding),
        }
        return create("ExtractImagePatches", [x], attrs, scope).outputs[0]


def extract_patches(images, sizes, strides, rates, padding, name=None) -> Tensor:
    """``tf.image.extract_patches``: the TF2 spelling of ``extract_image_patches``."""
    return extract_image_patches(images, sizes, strides, rates, padding, name=name)
