"""TFLite's array, shape, reduction and type operators -> engine ops (rows of ``TABLE``).

Operands TFLite passes as tensors but TF takes as attributes (axes, permutations, split
sizes) are read from the model's constants; a computed one is used as a tensor where the
engine op takes one, and refused (naming the op) where it must be known at load.
"""

from __future__ import annotations

from engine import dtypes
from engine.formats.tflite.errors import UnsupportedModelError
from engine.formats.tflite.mapping import converts, fused_activation
from engine.ops import array, array_transform, math, reduction, slicing

__all__: list[str] = []

# TensorType -> engine dtype, for the ops whose options name an output type.
_TYPES = {
    0: dtypes.float32,
    1: dtypes.float16,
    2: dtypes.int32,
    3: dtypes.uint8,
    4: dtypes.int64,
    6: dtypes.bool,
    7: dtypes.int16,
    9: dtypes.int8,
    10: dtypes.float64,
}


def _out_type(op, code, what: str):
    if code not in _TYPES:
        raise UnsupportedModelError(f"{op.op} operator {op.index}: {what} type {code}")
    return _TYPES[code]


def _axis(ctx, op, index: int) -> int:
    values = ctx.ints(op, index, "axis")
    if len(values) != 1:
        raise UnsupportedModelError(f"{op.op} operator {op.index}: axis {values}")
    return values[0]


@converts("RESHAPE")
def _reshape(ctx, op):
    x = ctx.input(op, 0)
    shape = ctx.const(op, 1) if len(op.inputs) > 1 and op.inputs[1] >= 0 else None
    if shape is not None:
        return [array.reshape(x, [int(d) for d in shape.reshape(-1)])]
    if len(op.inputs) > 1 and op.inputs[1] >= 0:
        return [array.reshape(x, math.cast(ctx.input(op, 1), dtypes.int32))]
    return [array.reshape(x, list(op.options.get("NewShape", [])))]


@converts("SQUEEZE")
def _squeeze(ctx, op):
    dims = list(op.options.get("SqueezeDims", []))
    return [array.squeeze(ctx.input(op, 0), axis=dims or None)]


@converts("EXPAND_DIMS")
def _expand_dims(ctx, op):
    return [array.expand_dims(ctx.input(op, 0), _axis(ctx, op, 1))]


@converts("CONCATENATION")
def _concatenation(ctx, op):
    values = [ctx.input(op, i) for i in range(len(op.inputs))]
    y = array_transform.concat(values, int(op.options.get("Axis", 0)))
    return [fused_activation(y, op)]


@converts("PAD", "PADV2")
def _pad(ctx, op):
    paddings = ctx.const(op, 1)
    pads = ctx.input(op, 1) if paddings is None else paddings.astype("int64").tolist()
    value = ctx.optional(op, 2) if op.op == "PADV2" else None
    if value is None:
        return [array_transform.pad(ctx.input(op, 0), pads)]
    return [array_transform.pad(ctx.input(op, 0), pads, constant_values=value)]


@converts("MIRROR_PAD")
def _mirror_pad(ctx, op):
    mode = "REFLECT" if op.options.get("Mode", 0) == 0 else "SYMMETRIC"
    pads = ctx.ints(op, 1, "paddings")
    pairs = [pads[i : i + 2] for i in range(0, len(pads), 2)]
    return [array_transform.pad(ctx.input(op, 0), pairs, mode=mode)]


_REDUCERS = {
    "MEAN": reduction.reduce_mean,
    "SUM": reduction.reduce_sum,
    "REDUCE_MAX": reduction.reduce_max,
    "REDUCE_MIN": reduction.reduce_min,
    "REDUCE_PROD": reduction.reduce_prod,
    "REDUCE_ANY": reduction.reduce_any,
    "REDUCE_ALL": reduction.reduce_all,
}


@converts(*_REDUCERS)
def _reduce(ctx, op):
    axes = ctx.ints(op, 1, "axes")
    keep = bool(op.options.get("KeepDims", False))
    return [_REDUCERS[op.op](ctx.input(op, 0), axis=axes, keepdims=keep)]


@converts("ARG_MAX", "ARG_MIN")
def _arg(ctx, op):
    out = _out_type(op, op.options.get("OutputType", 4), "output")
    fn = reduction.argmax if op.op == "ARG_MAX" else reduction.argmin
    return [fn(ctx.input(op, 0), axis=_axis(ctx, op, 1), output_type=out)]


@converts("GATHER")
def _gather(ctx, op):
    o = op.options
    x, indices = ctx.input(op, 0), ctx.input(op, 1)
    return [slicing.gather(x, indices, axis=o.get("Axis", 0), batch_dims=o.get("BatchDims", 0))]


@converts("STRIDED_SLICE")
def _strided_slice(ctx, op):
    o = op.options
    begin, end = ctx.input(op, 1), ctx.input(op, 2)
    if o.get("Offset", False):  # end is a size from begin
        end = math.add(begin, end)
    return [
        slicing.strided_slice(
            ctx.input(op, 0),
            begin,
            end,
            ctx.input(op, 3),
            begin_mask=o.get("BeginMask", 0),
            end_mask=o.get("EndMask", 0),
            ellipsis_mask=o.get("EllipsisMask", 0),
            new_axis_mask=o.get("NewAxisMask", 0),
            shrink_axis_mask=o.get("ShrinkAxisMask", 0),
        )
    ]


@converts("SLICE")
def _slice(ctx, op):
    return [slicing.slice(ctx.input(op, 0), ctx.input(op, 1), ctx.input(op, 2))]


@converts("TRANSPOSE")
def _transpose(ctx, op):
    perm = ctx.const(op, 1)
    perm = ctx.input(op, 1) if perm is None else [int(p) for p in perm.reshape(-1)]
    return [array.transpose(ctx.input(op, 0), perm)]


@converts("BATCH_MATMUL")
def _batch_matmul(ctx, op):
    o = op.options
    a, b = ctx.input(op, 0), ctx.input(op, 1)
    return [math.matmul(a, b, adjoint_a=bool(o.get("AdjX")), adjoint_b=bool(o.get("AdjY")))]


@converts("SHAPE")
def _shape(ctx, op):
    out = _out_type(op, op.options.get("OutType", 2), "output")
    return [array.shape(ctx.input(op, 0), out_type=out)]


@converts("PACK")
def _pack(ctx, op):
    values = [ctx.input(op, i) for i in range(len(op.inputs))]
    return [array_transform.stack(values, axis=int(op.options.get("Axis", 0)))]


@converts("UNPACK")
def _unpack(ctx, op):
    o = op.options
    x = ctx.input(op, 0)
    return array_transform.unstack(x, num=o.get("Num") or None, axis=int(o.get("Axis", 0)))


@converts("SPLIT")
def _split(ctx, op):
    # Inputs: axis, value.
    n = int(op.options.get("NumSplits", len(op.outputs)))
    return array_transform.split(ctx.input(op, 1), n, axis=_axis(ctx, op, 0))


@converts("SPLIT_V")
def _split_v(ctx, op):
    # Inputs: value, size_splits, axis.
    sizes = ctx.ints(op, 1, "size_splits")
    return array_transform.split(ctx.input(op, 0), sizes, axis=_axis(ctx, op, 2))


@converts("CAST")
def _cast(ctx, op):
    out = ctx.tensor(op.outputs[0])
    return [math.cast(ctx.input(op, 0), _out_type(op, out.type, "output"))]


@converts("TILE")
def _tile(ctx, op):
    return [array_transform.tile(ctx.input(op, 0), ctx.input(op, 1))]


@converts("BROADCAST_TO")
def _broadcast_to(ctx, op):
    return [array_transform.broadcast_to(ctx.input(op, 0), ctx.input(op, 1))]


@converts("FILL")
def _fill(ctx, op):
    return [array.fill(ctx.input(op, 0), ctx.input(op, 1))]


@converts("RANGE")
def _range(ctx, op):
    return [array.range(ctx.input(op, 0), ctx.input(op, 1), ctx.input(op, 2))]


@converts("REVERSE_V2")
def _reverse(ctx, op):
    return [array_transform.reverse(ctx.input(op, 0), ctx.ints(op, 1, "axes"))]
