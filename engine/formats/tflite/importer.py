"""TFLite model -> engine Graph + signatures.

``import_model`` reads and checks the flatbuffer (``reader.py``), refuses a model naming
*all* its unsupported operators at once, then builds each subgraph a signature uses, in the
file's (execution) order, with the rows of ``mapping.TABLE``.

Quantization is emulated in float, not reproduced bit for bit. Every value in the engine
graph is a real number: quantized constants (int8/uint8/int16 weights, int32 biases, with
per-tensor or per-channel scales) are dequantized at load, a quantized model input is
dequantized right after its placeholder, and each quantized op output (and QUANTIZE's) is
rounded to its own grid, ``scale * (clip(round(x / scale) + zero_point) - zero_point)``, so
saturation and the loss of precision between layers happen where TFLite's do. Quantized
model outputs are re-quantized to their integer type. TFLite's integer kernels round
intermediate products with fixed-point multipliers instead, so a value can land one step
away from TFLite's; dynamic-range models are computed with float activations, where TFLite
quantizes them on the fly. The tests measure both (tests/engine/formats/test_tflite.py).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from engine import dtypes
from engine.errors import OpError
from engine.formats.tflite import mapping_array as _array  # noqa: F401 - registers table rows
from engine.formats.tflite.errors import TFLiteFormatError, UnsupportedModelError
from engine.formats.tflite.mapping import TABLE, converts
from engine.formats.tflite.reader import Quantization, Subgraph, TensorDef, TFLiteModel, read_model
from engine.framework.constant_op import constant
from engine.framework.graph import Graph, Tensor, name_scope
from engine.framework.tensor_util import constant_value
from engine.ops import array, clip_ops, math
from engine.saving.meta_graph import SignatureDef, TensorInfo
from engine.tensor_shape import TensorShape

__all__ = ["DEFAULT_SIGNATURE", "TFLiteImport", "import_model", "unsupported_ops"]

DEFAULT_SIGNATURE = "serving_default"
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.\-/]")
# Quantized integer types (TensorType) and their ranges.
_QUANT_RANGES = {3: (0, 255), 9: (-128, 127), 7: (-32768, 32767)}
_ENGINE_DTYPES = {
    np.dtype("<f4"): dtypes.float32,
    np.dtype("<f2"): dtypes.float16,
    np.dtype("<f8"): dtypes.float64,
    np.dtype("<i4"): dtypes.int32,
    np.dtype("<i8"): dtypes.int64,
    np.dtype("<i2"): dtypes.int16,
    np.dtype("i1"): dtypes.int8,
    np.dtype("u1"): dtypes.uint8,
    np.dtype("<u2"): dtypes.uint16,
    np.dtype("<u4"): dtypes.uint32,
    np.dtype("<u8"): dtypes.uint64,
    np.dtype("bool"): dtypes.bool,
}


@dataclass
class TFLiteImport:
    """An imported model: its graph, its signatures (``serving_default`` always), and the
    file's own description."""

    graph: Graph
    signatures: dict[str, SignatureDef]
    version: int
    description: str
    op_histogram: dict[str, int] = field(default_factory=dict)


# QUANTIZE keeps the real value; the importer then rounds it to the output's grid.
# DEQUANTIZE reads a real value already (or a float16 constant, cast here).
@converts("QUANTIZE")
def _quantize_op(ctx, op):
    return [array.identity(ctx.input(op, 0))]


@converts("DEQUANTIZE")
def _dequantize_op(ctx, op):
    x = ctx.input(op, 0)
    return [x if x.dtype.base_dtype == dtypes.float32 else math.cast(x, dtypes.float32)]


def _op_name(name: str) -> str:
    name = name[:-2] if name.endswith(":0") else name
    clean = _NAME_CHARS.sub("_", name).lstrip("_-/.") or "tensor"
    return clean[:200]


def _engine_dtype(t: TensorDef, what: str):
    dt = _ENGINE_DTYPES.get(t.dtype) if t.dtype is not None else None
    if dt is None:
        raise UnsupportedModelError(f"{what} {t.name!r} has type {t.type_name}")
    return dt


def _is_quantized(t: TensorDef) -> bool:
    return t.quant is not None and t.type in _QUANT_RANGES


def _per_axis(values: np.ndarray, q: Quantization, rank: int, name: str) -> np.ndarray:
    """Scales or zero points shaped to broadcast along the quantized dimension."""
    if values.size == 1:
        return values.reshape(())
    if not 0 <= q.axis < rank:
        raise TFLiteFormatError(f"tensor {name!r}: quantized dimension {q.axis} of rank {rank}")
    shape = [1] * rank
    shape[q.axis] = values.size
    return values.reshape(shape)


def dequantize_constant(t: TensorDef) -> np.ndarray:
    """A constant's real value: quantized integers times their scales (per channel along
    the quantized dimension), other values as stored."""
    data = t.data
    if t.quant is None or data.dtype.kind not in "iu":
        return np.array(data)
    q = t.quant
    if q.scale.size not in (1, data.shape[q.axis] if 0 <= q.axis < data.ndim else -1):
        raise TFLiteFormatError(
            f"tensor {t.name!r}: {q.scale.size} scales for shape {list(data.shape)}"
        )
    scale = _per_axis(q.scale.astype(np.float64), q, data.ndim, t.name)
    zero = _per_axis(q.zero_point, q, data.ndim, t.name)
    return ((data.astype(np.float64) - zero) * scale).astype(np.float32)


def _round_half_away(x):
    # TFLite's Quantize rounds half away from zero (std::round), not half to even.
    return math.multiply(math.sign(x), math.floor(math.add(math.abs(x), 0.5)))


def _grid(t: TensorDef):
    q = t.quant
    if q.scale.size != 1:
        raise UnsupportedModelError(f"tensor {t.name!r}: per-channel quantized activations")
    lo, hi = _QUANT_RANGES[t.type]
    return float(q.scale[0]), float(q.zero_point[0]), float(lo), float(hi)


# How an op's integer kernel rounds its result, where it is not "half away from zero before
# adding the zero point" (QUANTIZE, and the rescaling of accumulators): RESIZE_BILINEAR
# rounds half up, AVERAGE_POOL_2D rounds the mean of the stored integers (zero point
# included) half away from zero. Both average, so exact .5 ties are common, and float32
# error in ``x / scale`` can land a tie just under .5: these are nudged by 1e-4 of a step
# (far below any other fraction they produce). Measured against TF 2.21's interpreter.
_ROUNDING = {"RESIZE_BILINEAR": "half_up", "AVERAGE_POOL_2D": "stored_away"}
_TIE = 0.5 + 1e-4


def quantize(x: Tensor, t: TensorDef, rounding: str = "away") -> Tensor:
    """``x``'s quantized integers on ``t``'s grid, as float32 (``rounding``: "away",
    "half_up" or "stored_away", see ``_ROUNDING``)."""
    scale, zero, lo, hi = _grid(t)
    if rounding == "half_up":  # an integer zero point does not change where ties go
        q = math.add(math.floor(math.add(math.realdiv(x, scale), _TIE)), zero)
    elif rounding == "stored_away":
        v = math.add(math.realdiv(x, scale), zero)
        q = math.multiply(math.sign(v), math.floor(math.add(math.abs(v), _TIE)))
    else:
        q = math.add(_round_half_away(math.realdiv(x, scale)), zero)
    return clip_ops.clip_by_value(q, lo, hi)


def fake_quantize(x: Tensor, t: TensorDef, rounding: str = "away") -> Tensor:
    """``x`` rounded to ``t``'s grid, still a real value."""
    scale, zero, _, _ = _grid(t)
    return math.multiply(math.subtract(quantize(x, t, rounding), zero), scale)


class _Context:
    """What converters see: the subgraph's tensors and the engine values built so far."""

    def __init__(self, sub: Subgraph):
        self.sub = sub
        self.values: dict[int, Tensor] = {}

    def tensor(self, index: int) -> TensorDef:
        return self.sub.tensors[index]

    def _index(self, op, i: int) -> int:
        if i >= len(op.inputs) or op.inputs[i] < 0:
            raise TFLiteFormatError(f"{op.op} operator {op.index} lacks input {i}")
        return op.inputs[i]

    def input(self, op, i: int) -> Tensor:
        return self.value(self._index(op, i))

    def optional(self, op, i: int) -> Tensor | None:
        if i >= len(op.inputs) or op.inputs[i] < 0:
            return None
        return self.value(op.inputs[i])

    def value(self, index: int) -> Tensor:
        if index in self.values:
            return self.values[index]
        t = self.sub.tensors[index]
        if t.data is None:
            raise TFLiteFormatError(
                f"tensor {t.name!r} is used before an operator produces it (the operators "
                "are not in execution order, or it is an unlisted input)"
            )
        self.values[index] = constant(dequantize_constant(t), name=_op_name(t.name))
        return self.values[index]

    def const(self, op, i: int) -> np.ndarray | None:
        """The value of input ``i`` if it is known at load (a constant), else None."""
        index = self._index(op, i)
        t = self.sub.tensors[index]
        if t.data is not None and t.quant is None:
            return np.asarray(t.data)
        v = constant_value(self.value(index))
        return None if v is None else np.asarray(v)

    def ints(self, op, i: int, what: str) -> list[int]:
        v = self.const(op, i)
        if v is None:
            raise UnsupportedModelError(
                f"{op.op} operator {op.index} with a computed (non-constant) {what}"
            )
        return [int(a) for a in v.reshape(-1)]


def unsupported_ops(model: TFLiteModel, subgraphs=None) -> dict[str, int]:
    """The operators of ``subgraphs`` (default: all) that the table does not map."""
    found: Counter = Counter()
    for sub in model.subgraphs if subgraphs is None else subgraphs:
        for op in sub.operators:
            if op.op == "CUSTOM" and op.custom_code.startswith("Flex"):
                found[f"Flex op {op.custom_code[4:]!r} (SELECT_TF_OPS: TensorFlow ops)"] += 1
            elif op.op == "CUSTOM":
                found[f"custom op {op.custom_code!r}"] += 1
            elif op.op not in TABLE:
                found[op.op] += 1
    return dict(sorted(found.items()))


def _signatures(model: TFLiteModel) -> list[tuple[str, int, dict, dict]]:
    """(key, subgraph, inputs, outputs) to serve: the file's SignatureDefs, else subgraph 0
    with its tensors' names; ``serving_default`` is the first when the file lacks one."""
    if model.signatures:
        out = [(s.key, s.subgraph, s.inputs, s.outputs) for s in model.signatures]
    else:
        sub = model.subgraphs[0]
        inputs = {sub.tensors[i].name: i for i in sub.inputs}
        outputs = {sub.tensors[i].name: i for i in sub.outputs}
        out = [(DEFAULT_SIGNATURE, 0, inputs, outputs)]
    keys = [s[0] for s in out]
    if len(set(keys)) != len(keys):
        raise TFLiteFormatError(f"signature keys repeat: {keys}")
    if DEFAULT_SIGNATURE not in keys:
        out.append((DEFAULT_SIGNATURE, *out[0][1:]))
    return out


def import_model(path_or_bytes, *, graph: Graph | None = None) -> TFLiteImport:
    """Imports a TFLite model (a path, a directory holding ``model.tflite``, or bytes).

    Raises ``UnsupportedModelError`` naming every unsupported operator at once, and
    ``TFLiteFormatError`` for damaged files.

    >>> m = import_model("model.tflite")
    >>> sig = m.signatures["serving_default"]
    >>> with tf.Session(graph=m.graph) as sess:
    ...     sess.run(sig.outputs["y"].name, {sig.inputs["x"].name: x})
    """
    model = read_model(path_or_bytes)
    plan = _signatures(model)
    used = sorted({s[1] for s in plan})
    found = unsupported_ops(model, [model.subgraphs[i] for i in used])
    if found:
        listed = ", ".join(f"{k} (x{v})" if v > 1 else k for k, v in found.items())
        raise UnsupportedModelError(f"model uses {len(found)} unsupported operator(s): {listed}")
    graph = graph if graph is not None else Graph()
    hist: Counter = Counter()
    signatures = {}
    with graph.as_default():
        built = {}
        for i in used:
            prefix = "" if len(used) == 1 else f"subgraph_{i}/"
            with name_scope(prefix or None):
                built[i] = _build_subgraph(model.subgraphs[i], hist)
        for key, index, inputs, outputs in plan:
            signatures[key] = _signature_def(model.subgraphs[index], built[index], inputs, outputs)
    return TFLiteImport(graph, signatures, model.version, model.description, dict(hist))


def _build_subgraph(sub: Subgraph, hist: Counter) -> tuple[dict, dict]:
    """Builds one subgraph; returns (placeholders, values) keyed by tensor index."""
    ctx = _Context(sub)
    placeholders = {}
    for index in sub.inputs:
        t = sub.tensors[index]
        dims = t.signature if t.signature is not None else t.shape
        shape = TensorShape([None if d < 0 else d for d in dims])
        ph = array.placeholder(_engine_dtype(t, "input"), shape=shape, name=_op_name(t.name))
        placeholders[index] = ph
        if _is_quantized(t):
            scale, zero, _, _ = _grid(t)
            ph = math.multiply(math.subtract(math.cast(ph, dtypes.float32), zero), scale)
        ctx.values[index] = ph
    for op in sub.operators:
        hist[op.op] += 1
        _convert(ctx, op)
    return placeholders, ctx.values


def _convert(ctx: _Context, op) -> None:
    try:
        with name_scope(f"{op.op.lower()}_{op.index}"):
            outs = TABLE[op.op](ctx, op)
            if len(outs) < len(op.outputs):
                raise UnsupportedModelError(
                    f"{op.op} operator {op.index}: {len(op.outputs)} outputs, built {len(outs)}"
                )
            for index, y in zip(op.outputs, outs):
                ctx.values[index] = _as_declared(y, ctx.tensor(index), _ROUNDING.get(op.op, "away"))
    except TFLiteFormatError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, OpError) as e:
        shapes = [(ctx.tensor(i).name, list(ctx.tensor(i).shape)) for i in op.inputs if i >= 0]
        raise TFLiteFormatError(
            f"cannot import {op.op} operator {op.index} (inputs {shapes}): {e}"
        ) from None


def _as_declared(y: Tensor, t: TensorDef, rounding: str = "away") -> Tensor:
    """An op's result as the model declares the tensor: on its grid when quantized, else
    in its declared type."""
    if _is_quantized(t):
        return fake_quantize(y, t, rounding)
    dt = _engine_dtype(t, "tensor")
    if y.dtype.base_dtype != dt:
        return math.cast(y, dt)
    return y


def _signature_def(sub: Subgraph, built, inputs: dict, outputs: dict) -> SignatureDef:
    placeholders, values = built
    sig_inputs = {}
    for name, index in inputs.items():
        if index not in placeholders:
            raise TFLiteFormatError(f"signature input {name!r} is not an input of its subgraph")
        ph = placeholders[index]
        sig_inputs[name] = TensorInfo(ph.name, ph.dtype.base_dtype, ph.shape)
    sig_outputs = {}
    for name, index in outputs.items():
        t = sub.tensors[index]
        if index not in values and t.data is None:
            raise TFLiteFormatError(f"signature output {name!r} is never computed")
        y = values[index] if index in values else _Context(sub).value(index)
        with name_scope(None):
            if _is_quantized(t):
                y = math.cast(quantize(y, t), _engine_dtype(t, "output"))
            y = array.identity(y, name=_op_name(t.name) + "_output")
        sig_outputs[name] = TensorInfo(y.name, y.dtype.base_dtype, y.shape)
    return SignatureDef(sig_inputs, sig_outputs)
