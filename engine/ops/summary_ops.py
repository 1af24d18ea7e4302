"""Summary ops: each turns tensors into a serialized ``Summary`` protobuf (a string scalar)
that ``summary.FileWriter.add_summary`` writes to an event file, as TF1's do.
CPU kernels only: their outputs are host bytes."""

from __future__ import annotations

import numpy as np

from engine import dtypes, errors
from engine.framework.registry import Attr, OpFlags, ShapeError, op
from engine.ops._common import ALL, NUMERIC, check_dtype
from engine.tensor_shape import TensorShape
from engine.util import summary_records as records

STRING = frozenset([dtypes.string])
REAL = NUMERIC - frozenset([dtypes.uint64])
_SCALAR = [(dtypes.string, TensorShape([]))]
_CPU_ONLY = OpFlags(device_types=("CPU",))


def _host(xp, a) -> np.ndarray:
    return np.asarray(a.get() if hasattr(a, "get") else a)


def _text(v) -> str:
    return v.decode("utf-8") if isinstance(v, bytes) else str(v)


def _out(data: bytes) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = data
    return out


def _scalar_summary_infer(o):
    check_dtype(o, 0, STRING, "tags")
    check_dtype(o, 1, REAL)
    a, b = o._inputs[0]._shape, o._inputs[1]._shape
    if a.rank is not None and b.rank is not None and not a.is_compatible_with(b):
        raise ShapeError(f"tags and values not the same shape: {a} != {b}")
    return _SCALAR


@op(
    "ScalarSummary",
    infer=_scalar_summary_infer,
    inputs=("tags", "values"),
    differentiable=False,
    flags=_CPU_ONLY,
)
def _scalar_summary(xp, tags, values):
    tags, values = _host(xp, tags), _host(xp, values)
    if tags.shape != values.shape:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"tags and values are not the same shape: [{','.join(map(str, tags.shape))}] != "
            f"[{','.join(map(str, values.shape))}]",
        )
    items = [
        records.summary_value(_text(t), simple_value=float(v))
        for t, v in zip(tags.reshape(-1), values.reshape(-1))
    ]
    return _out(records.summary(items))


def _tag_and_values_infer(allowed):
    def infer(o):
        check_dtype(o, 0, STRING, "tag")
        check_dtype(o, 1, allowed)
        s = o._inputs[0]._shape
        if s.rank not in (None, 0):
            raise ShapeError(f"Tags must be a scalar, got shape {s}")
        return _SCALAR

    return infer


def _scalar_tag(xp, tag) -> str:
    tag = _host(xp, tag)
    if tag.ndim != 0:
        raise errors.InvalidArgumentError(None, None, "tag must be a scalar")
    return _text(tag[()])


@op(
    "HistogramSummary",
    infer=_tag_and_values_infer(REAL),
    inputs=("tag", "values"),
    differentiable=False,
    flags=_CPU_ONLY,
)
def _histogram_summary(xp, tag, values):
    name = _scalar_tag(xp, tag)
    v = _host(xp, values).astype(np.float64).reshape(-1)
    if not np.all(np.isfinite(v)):
        what = "Nan" if np.isnan(v).any() else "Infinity"
        raise errors.InvalidArgumentError(None, None, f"{what} in summary histogram for: {name}")
    return _out(records.summary([records.summary_value(name, histo=records.histogram(v))]))


_IMAGE_TYPES = frozenset([dtypes.uint8, dtypes.float32, dtypes.float16, dtypes.float64])


def _image_infer(o):
    _tag_and_values_infer(_IMAGE_TYPES)(o)
    s = o._inputs[1]._shape
    if s.rank is not None:
        if s.rank != 4:
            raise ShapeError(f"Shape must be rank 4 but is rank {s.rank}")
        c = s.as_tuple()[3]
        if c is not None and c not in (1, 3, 4):
            raise ShapeError(f"Tensor must have 1, 3, or 4 channels, got {c}")
    return _SCALAR


def _to_uint8(images: np.ndarray) -> np.ndarray:
    """TF's float-image scaling, per image: non-negative images map their maximum to 255;
    images with negative values map the largest magnitude to 127 around 128."""
    if images.dtype == np.uint8:
        return images
    out = []
    for img in images.astype(np.float32):
        lo, hi = float(img.min(initial=0.0)), float(img.max(initial=0.0))
        if lo < 0:
            top = max(abs(lo), abs(hi))
            scale, offset = (0.0 if top < 1e-6 else 127.0 / top), 128.0
        else:
            scale, offset = (0.0 if hi < 1e-6 else 255.0 / hi), 0.0
        out.append(np.clip(img * scale + offset, 0, 255).astype(np.uint8))
    return np.stack(out) if out else images.astype(np.uint8)


@op(
    "ImageSummary",
    infer=_image_infer,
    inputs=("tag", "tensor"),
    attrs=(Attr("max_images", "int", default=3),),
    differentiable=False,
    flags=_CPU_ONLY,
)
def _image_summary(xp, tag, tensor, *, max_images=3):
    name = _scalar_tag(xp, tag)
    images = _host(xp, tensor)
    if images.ndim != 4 or images.shape[3] not in (1, 3, 4):
        raise errors.InvalidArgumentError(
            None,
            None,
            "Tensor must be 4-D with last dim 1, 3, or 4, not "
            f"[{','.join(map(str, images.shape))}]",
        )
    if not np.all(np.isfinite(images)) and images.dtype.kind == "f":
        raise errors.InvalidArgumentError(None, None, f"Image {name} has non-finite values")
    batch = min(images.shape[0], int(max_images))
    pixels = _to_uint8(images[:batch])
    items = []
    for i in range(batch):
        h, w, c = pixels[i].shape
        img = records.image(h, w, c, records.png(np.ascontiguousarray(pixels[i])))
        t = f"{name}/image" if batch == 1 else f"{name}/image/{i}"
        items.append(records.summary_value(t, image=img))
    return _out(records.summary(items))


def _tensor_summary_infer(o):
    check_dtype(o, 0, STRING, "tag")
    check_dtype(o, 1, ALL)
    check_dtype(o, 2, STRING, "serialized_summary_metadata")
    return _SCALAR


@op(
    "TensorSummaryV2",
    infer=_tensor_summary_infer,
    inputs=("tag", "tensor", "serialized_summary_metadata"),
    differentiable=False,
    flags=_CPU_ONLY,
)
def _tensor_summary(xp, tag, tensor, metadata):
    name = _scalar_tag(xp, tag)
    values = _host(xp, tensor)
    if values.dtype != object:
        raise errors.UnimplementedError(
            None, None, f"TensorSummaryV2 '{name}': only string tensors are supported"
        )
    meta = _host(xp, metadata)[()]
    item = records.summary_value(name, tensor=records.string_tensor(values), metadata=meta)
    return _out(records.summary([item]))


def _merge_infer(o):
    for i in range(len(o._inputs)):
        check_dtype(o, i, STRING, "inputs")
    return _SCALAR


@op(
    "MergeSummary",
    infer=_merge_infer,
    inputs=("inputs*",),
    differentiable=False,
    flags=_CPU_ONLY,
)
def _merge_summary(xp, *inputs):
    seen = set()
    parts = []
    for s in inputs:
        for data in _host(xp, s).reshape(-1):
            data = data if isinstance(data, bytes) else str(data).encode()
            try:
                tags = records.summary_tags(data)
            except ValueError as e:
                raise errors.InvalidArgumentError(
                    None, None, f"Could not parse one of the summary inputs: {e}"
                ) from None
            for t in tags:
                if t in seen:
                    raise errors.InvalidArgumentError(
                        None, None, f"Duplicate tag {t} found in summary inputs"
                    )
                seen.add(t)
            parts.append(data)
    # Concatenated Summary messages are one Summary with all their values.
    return _out(b"".join(parts))
