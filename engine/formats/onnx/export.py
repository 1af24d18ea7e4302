"""Engine graph -> ONNX model, for graphs whose ops all have ONNX equivalents.

``export`` walks the ops a signature's outputs need (pruned to its inputs), writes each as
ONNX nodes (opset 17) and variable values as initializers. Ops without an equivalent are
reported all at once. The result is checked by ``onnx.checker`` and run in onnxruntime in
``tests/engine/test_onnx_export.py``.
"""

from __future__ import annotations

import os

import numpy as np

from engine import dtypes
from engine.formats.onnx import _tf as tf
from engine.formats.onnx.proto import encode
from engine.formats.onnx.tensors import NUMPY_TO_ONNX, array_to_tensor
from engine.framework.tensor_util import constant_value

__all__ = ["ExportError", "export", "EXPORT_OPSET"]

EXPORT_OPSET = 17


class ExportError(ValueError):
    """The graph cannot be written as ONNX (the message names every reason)."""


def _elem_type(dtype: dtypes.DType) -> int:
    np_dt = dtype.base_dtype.as_numpy_dtype
    code = NUMPY_TO_ONNX.get(np.dtype(np_dt)) if np_dt is not None else None
    if code is None:
        raise ExportError(f"dtype {dtype.base_dtype.name} has no ONNX element type")
    return code


def _attr(name: str, value) -> dict:
    if isinstance(value, float):
        return {"name": name, "type": 1, "f": value}
    if isinstance(value, (bool, int, np.integer)):
        return {"name": name, "type": 2, "i": int(value)}
    if isinstance(value, str):
        return {"name": name, "type": 3, "s": value.encode()}
    if isinstance(value, np.ndarray):
        return {"name": name, "type": 4, "t": array_to_tensor(value)}
    if isinstance(value, (list, tuple)) and all(isinstance(v, (int, np.integer)) for v in value):
        return {"name": name, "type": 7, "ints": [int(v) for v in value]}
    raise TypeError(f"attribute {name}: {type(value).__name__}")


class _Writer:
    def __init__(self, session):
        self.session = session
        self.nodes: list[dict] = []
        self.initializers: list[dict] = []
        self.names: dict[str, str] = {}
        self.count = 0

    def fresh(self, hint: str) -> str:
        self.count += 1
        return f"{hint}__{self.count}"

    def node(self, op_type: str, inputs, outputs=None, **attrs) -> str:
        outputs = outputs or [self.fresh(op_type)]
        self.nodes.append(
            {
                "op_type": op_type,
                "input": list(inputs),
                "output": list(outputs),
                "name": self.fresh(op_type),
                "attribute": [_attr(k, v) for k, v in sorted(attrs.items())],
            }
        )
        return outputs[0]

    def const(self, value, hint="const") -> str:
        name = self.fresh(hint)
        self.initializers.append(array_to_tensor(np.asarray(value), name))
        return name


def _const_input(op, i: int, what: str):
    v = constant_value(op.inputs[i])
    if v is None:
        raise ExportError(f"{op.type} '{op.name}' has a computed {what}")
    return np.asarray(v)


def _reduce(onnx_type: str):
    def write(w: _Writer, op, ins, out):
        axes = _const_input(op, 1, "axis").reshape(-1).astype(np.int64)
        keep = int(bool(op.get_attr("keep_dims")))
        if onnx_type == "ReduceSum":
            w.node(onnx_type, [ins[0], w.const(axes, "axes")], [out], keepdims=keep)
        else:
            w.node(onnx_type, [ins[0]], [out], axes=[int(a) for a in axes], keepdims=keep)

    return write


def _simple(onnx_type: str, **attrs):
    return lambda w, op, ins, out: w.node(onnx_type, ins, [out], **attrs)


def _matmul(w, op, ins, out):
    a, b = ins[:2]
    if op.type == "MatMul":
        ta, tb = op.get_attr("transpose_a"), op.get_attr("transpose_b")
    else:
        ta, tb = op.get_attr("adj_x"), op.get_attr("adj_y")
    rank_a, rank_b = op.inputs[0].shape.ndims, op.inputs[1].shape.ndims
    if ta:
        a = w.node("Transpose", [a], perm=_swap_last(rank_a, op))
    if tb:
        b = w.node("Transpose", [b], perm=_swap_last(rank_b, op))
    w.node("MatMul", [a, b], [out])


def _einsum(w, op, ins, out):
    w.node("Einsum", ins, [out], equation=op.get_attr("equation"))


def _swap_last(rank, op):
    if rank is None:
        raise ExportError(f"{op.type} '{op.name}' transposes an input of unknown rank")
    perm = list(range(rank))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return perm


def _bias_add(w, op, ins, out):
    if op.get_attr("data_format") != "NHWC":
        raise ExportError(f"BiasAdd '{op.name}' in NCHW")
    w.node("Add", ins, [out])


def _relu6(w, op, ins, out):
    dt = op.inputs[0].dtype.base_dtype.as_numpy_dtype
    w.node("Clip", [ins[0], w.const(np.array(0, dt)), w.const(np.array(6, dt))], [out])


def _softmax(onnx_type):
    return lambda w, op, ins, out: w.node(onnx_type, ins, [out], axis=-1)


def _cast(w, op, ins, out):
    w.node("Cast", ins, [out], to=_elem_type(op.get_attr("DstT")))


def _argmax(onnx_type):
    def write(w, op, ins, out):
        axis = int(_const_input(op, 1, "axis").reshape(-1)[0])
        if op.outputs[0].dtype.base_dtype == dtypes.int64:
            w.node(onnx_type, [ins[0]], [out], axis=axis, keepdims=0)
        else:
            idx = w.node(onnx_type, [ins[0]], axis=axis, keepdims=0)
            w.node("Cast", [idx], [out], to=_elem_type(op.outputs[0].dtype))

    return write


def _reshape(w, op, ins, out):
    shape = w.node("Cast", [ins[1]], to=7)
    w.node("Reshape", [ins[0], shape], [out])


def _transpose(w, op, ins, out):
    perm = _const_input(op, 1, "perm")
    w.node("Transpose", [ins[0]], [out], perm=[int(p) for p in perm])


def _concat(w, op, ins, out):
    axis = int(_const_input(op, len(op.inputs) - 1, "axis"))
    w.node("Concat", ins[:-1], [out], axis=axis)


def _expand_dims(w, op, ins, out):
    axis = _const_input(op, 1, "axis").reshape(-1).astype(np.int64)
    w.node("Unsqueeze", [ins[0], w.const(axis, "axes")], [out])


def _squeeze(w, op, ins, out):
    dims = list(op.get_attr("squeeze_dims") or [])
    if dims:
        w.node("Squeeze", [ins[0], w.const(np.array(dims, np.int64), "axes")], [out])
    else:
        w.node("Squeeze", [ins[0]], [out])


def _gather(w, op, ins, out):
    axis = int(_const_input(op, 2, "axis"))
    w.node("Gather", ins[:2], [out], axis=axis)


def _rsqrt(w, op, ins, out):
    w.node("Reciprocal", [w.node("Sqrt", ins)], [out])


def _square(w, op, ins, out):
    w.node("Mul", [ins[0], ins[0]], [out])


def _leaky_relu(w, op, ins, out):
    w.node("LeakyRelu", ins, [out], alpha=float(op.get_attr("alpha")))


def _shape(w, op, ins, out):
    if op.outputs[0].dtype.base_dtype == dtypes.int64:
        w.node("Shape", ins, [out])
    else:
        w.node("Cast", [w.node("Shape", ins)], [out], to=_elem_type(op.outputs[0].dtype))


WRITERS = {
    "Identity": _simple("Identity"),
    "StopGradient": _simple("Identity"),
    "AddV2": _simple("Add"),
    "Add": _simple("Add"),
    "Sub": _simple("Sub"),
    "Mul": _simple("Mul"),
    "RealDiv": _simple("Div"),
    "Neg": _simple("Neg"),
    "Abs": _simple("Abs"),
    "Exp": _simple("Exp"),
    "Log": _simple("Log"),
    "Sqrt": _simple("Sqrt"),
    "Rsqrt": _rsqrt,
    "Square": _square,
    "Reciprocal": _simple("Reciprocal"),
    "Floor": _simple("Floor"),
    "Ceil": _simple("Ceil"),
    "Sign": _simple("Sign"),
    "Pow": _simple("Pow"),
    "Maximum": _simple("Max"),
    "Minimum": _simple("Min"),
    "Relu": _simple("Relu"),
    "Relu6": _relu6,
    "Elu": _simple("Elu"),
    "LeakyRelu": _leaky_relu,
    "Softplus": _simple("Softplus"),
    "Sigmoid": _simple("Sigmoid"),
    "Tanh": _simple("Tanh"),
    "Sin": _simple("Sin"),
    "Cos": _simple("Cos"),
    "Softmax": _softmax("Softmax"),
    "LogSoftmax": _softmax("LogSoftmax"),
    "MatMul": _matmul,
    "BatchMatMulV2": _matmul,
    "Einsum": _einsum,
    "BiasAdd": _bias_add,
    "Cast": _cast,
    "ArgMax": _argmax("ArgMax"),
    "ArgMin": _argmax("ArgMin"),
    "Sum": _reduce("ReduceSum"),
    "Mean": _reduce("ReduceMean"),
    "Max": _reduce("ReduceMax"),
    "Min": _reduce("ReduceMin"),
    "Prod": _reduce("ReduceProd"),
    "Equal": _simple("Equal"),
    "Greater": _simple("Greater"),
    "GreaterEqual": _simple("GreaterOrEqual"),
    "Less": _simple("Less"),
    "LessEqual": _simple("LessOrEqual"),
    "LogicalAnd": _simple("And"),
    "LogicalOr": _simple("Or"),
    "LogicalNot": _simple("Not"),
    "SelectV2": _simple("Where"),
    "Reshape": _reshape,
    "Transpose": _transpose,
    "ConcatV2": _concat,
    "ExpandDims": _expand_dims,
    "Squeeze": _squeeze,
    "GatherV2": _gather,
    "Shape": _shape,
}


def _prune(outputs, inputs) -> list:
    """The ops the outputs need, in creation order, stopping at the inputs."""
    stop = {t.name for t in inputs}
    seen, stack = {}, [t.op for t in outputs]
    while stack:
        op = stack.pop()
        if op.name in seen:
            continue
        seen[op.name] = op
        for t in op.inputs:
            if t.name not in stop:
                stack.append(t.op)
    return sorted(seen.values(), key=lambda o: o._id if hasattr(o, "_id") else 0)


def _order(ops) -> list:
    """Topological order (inputs before users)."""
    done, out = set(), []
    by_name = {o.name: o for o in ops}

    def visit(op):
        stack = [(op, False)]
        while stack:
            o, expanded = stack.pop()
            if o.name in done:
                continue
            if expanded:
                done.add(o.name)
                out.append(o)
                continue
            stack.append((o, True))
            for t in o.inputs:
                if t.op.name in by_name and t.op.name not in done:
                    stack.append((t.op, False))

    for op in ops:
        visit(op)
    return out


def _value_info(name: str, tensor) -> dict:
    dims = tensor.shape.as_tuple()
    ttype = {"elem_type": _elem_type(tensor.dtype)}
    if dims is not None:
        ttype["shape"] = {
            "dim": [
                {"dim_param": f"d{i}"} if d is None else {"dim_value": d}
                for i, d in enumerate(dims)
            ]
        }
    return {"name": name, "type": {"tensor_type": ttype}}


def export_graph(graph, inputs: dict, outputs: dict, session=None) -> bytes:
    """``inputs``/``outputs``: ONNX name -> engine tensor (or tensor name) of ``graph``."""
    ins = {k: graph.get_tensor_by_name(v) if isinstance(v, str) else v for k, v in inputs.items()}
    outs = {k: graph.get_tensor_by_name(v) if isinstance(v, str) else v for k, v in outputs.items()}
    w = _Writer(session)
    for name, t in ins.items():
        w.names[t.name] = name
    ops = _order(_prune(list(outs.values()), list(ins.values())))
    missing = sorted(
        {
            op.type
            for op in ops
            if op.type not in WRITERS and op.type not in ("Const", "VariableV2", "Placeholder")
        }
    )
    if missing:
        raise ExportError(f"ops without an ONNX equivalent: {', '.join(missing)}")
    variables = [op for op in ops if op.type == "VariableV2"]
    if variables and session is None:
        raise ExportError("the graph reads variables: pass the session that holds their values")
    values = session.run([op.outputs[0] for op in variables]) if variables else []
    for op, value in zip(variables, values):
        w.names[op.outputs[0].name] = w.const(np.asarray(value), op.name.replace("/", "_"))
    for op in ops:
        if op.type == "Placeholder":
            if op.outputs[0].name not in w.names:
                raise ExportError(f"placeholder '{op.name}' is needed but is not an input")
            continue
        if op.type == "VariableV2":
            continue
        if op.type == "Const":
            w.names[op.outputs[0].name] = w.const(op.get_attr("value"), op.name.replace("/", "_"))
            continue
        arg_names = [w.names[t.name] for t in op.inputs]
        if len(op.outputs) != 1:
            raise ExportError(f"{op.type} '{op.name}' has {len(op.outputs)} outputs")
        out = w.fresh(op.name.replace("/", "_"))
        WRITERS[op.type](w, op, arg_names, out)
        w.names[op.outputs[0].name] = out
    graph_outputs = []
    for name, t in outs.items():
        w.node("Identity", [w.names[t.name]], [name])
        graph_outputs.append(_value_info(name, t))
    model = {
        "ir_version": 8,
        "producer_name": "flowserve",
        "opset_import": [{"domain": "", "version": EXPORT_OPSET}],
        "graph": {
            "name": "flowserve",
            "node": w.nodes,
            "initializer": w.initializers,
            "input": [_value_info(n, t) for n, t in ins.items()],
            "output": graph_outputs,
        },
    }
    return encode(model, "ModelProto")


def export(
    graph_or_saved_model,
    path: str | os.PathLike | None = None,
    *,
    inputs: dict | None = None,
    outputs: dict | None = None,
    session=None,
    signature: str = "serving_default",
) -> bytes:
    """Writes an engine graph (with ``inputs``/``outputs`` name -> tensor, and the ``session``
    holding its variables) or a SavedModel directory (its ``signature``) as an ONNX model.

    Returns the model's bytes and writes them to ``path`` when given. Raises ``ExportError``
    naming every op without an ONNX equivalent.
    """
    if isinstance(graph_or_saved_model, (str, os.PathLike)):
        graph = tf.Graph()
        with tf.Session(graph=graph) as sess:
            meta = tf.saved_model.load(sess, [tf.saved_model.SERVING], str(graph_or_saved_model))
            sig = meta.signature_def.get(signature)
            if sig is None:
                raise ExportError(
                    f"signature {signature!r} not found; the model has {sorted(meta.signature_def)}"
                )
            data = export_graph(
                graph,
                {k: v.name for k, v in sig.inputs.items()},
                {k: v.name for k, v in sig.outputs.items()},
                sess,
            )
    else:
        if inputs is None or outputs is None:
            raise ExportError("exporting a graph needs inputs= and outputs= (name -> tensor)")
        data = export_graph(graph_or_saved_model, inputs, outputs, session)
    if path is not None:
        with open(path, "wb") as f:
            f.write(data)
    return data
