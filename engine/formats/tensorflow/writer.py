"""Writing TensorFlow's formats: an engine graph as a ``GraphDef``, a SavedModel as
``saved_model.pb`` + a V2 checkpoint, that TensorFlow (and TF Serving) load.

Engine ops carry TF's op names and attr names; what TF needs beyond them are its type attrs
(``T``, ``Tidx``, ``N``, ...), derived here from the input dtypes (``TYPE_ATTRS``), and a
saver: ``save/RestoreV2`` with an ``Assign`` per variable and ``save/restore_all``, the way
``tf.compat.v1.train.Saver`` builds it, so TF's loaders restore the variables by name.
"""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.formats.tensorflow.proto import (
    attr_value_pb2,
    graph_pb2,
    meta_graph_pb2,
    saved_model_pb2,
    saver_pb2,
    types_pb2,
    variable_pb2,
)
from engine.formats.tensorflow.tensors import TFFormatError, array_to_proto, shape_to_proto
from engine.tensor_shape import TensorShape

__all__ = ["TYPE_ATTRS", "graph_to_tf", "meta_graph_to_tf", "saved_model_to_tf"]

PRODUCER = 1994  # a GraphDef version every TF 2.x reads

# TF type attrs, by op: attr -> the input whose dtype it is ("*" all inputs as a list,
# "N" the data-input count, "N-1" all but the last). Ops not listed get T from input 0.
TYPE_ATTRS: dict[str, dict[str, object]] = {
    "Const": {},
    "Placeholder": {},
    "VariableV2": {},
    "NoOp": {},
    "Range": {"Tidx": 0},
    "Cast": {"SrcT": 0},
    "Reshape": {"T": 0, "Tshape": 1},
    "Transpose": {"T": 0, "Tperm": 1},
    "ExpandDims": {"T": 0, "Tdim": 1},
    "Mean": {"T": 0, "Tidx": 1},
    "Sum": {"T": 0, "Tidx": 1},
    "Max": {"T": 0, "Tidx": 1},
    "Min": {"T": 0, "Tidx": 1},
    "Prod": {"T": 0, "Tidx": 1},
    "All": {"Tidx": 1},
    "Any": {"Tidx": 1},
    "ArgMax": {"T": 0, "Tidx": 1},
    "ArgMin": {"T": 0, "Tidx": 1},
    "ConcatV2": {"T": 0, "N": "N-1", "Tidx": -1},
    "Pack": {"T": 0, "N": "N"},
    "AddN": {"T": 0, "N": "N"},
    "Einsum": {"T": 0, "N": "N"},
    "GatherV2": {"Tparams": 0, "Tindices": 1, "Taxis": 2},
    "StridedSlice": {"T": 0, "Index": 1},
    "Slice": {"T": 0, "Index": 1},
    "Fill": {"T": 1, "index_type": 0},
    "Tile": {"T": 0, "Tmultiples": 1},
    "Pad": {"T": 0, "Tpaddings": 1},
    "PadV2": {"T": 0, "Tpaddings": 1},
    "MirrorPad": {"T": 0, "Tpaddings": 1},
    "Select": {"T": 1},
    "SelectV2": {"T": 1},
    "OneHot": {"T": 2, "TI": 0},
    "IdentityN": {"T": "*"},
    "PlaceholderWithDefault": {"dtype": 0},
    "Cumsum": {"T": 0, "Tidx": 1},
    "Cumprod": {"T": 0, "Tidx": 1},
    "Split": {"T": 1},
    "SplitV": {"T": 0, "Tlen": 1},
    "TopKV2": {"T": 0},
    "BroadcastTo": {"T": 0, "Tidx": 1},
    "ReverseV2": {"T": 0, "Tidx": 1},
    "Conv3DBackpropInputV2": {"T": 1, "Tshape": 0},
    "AvgPool3DGrad": {"T": 1},
    "MaxPool3DGrad": {"T": 2, "TInput": 0},
    "DecodeRaw": {},
    "DecodeJpeg": {},
    "DecodeAndCropJpeg": {},
    "DecodePng": {},
    "DecodeGif": {},
    "DecodeBmp": {},
    "DecodeImage": {},
    "EncodeJpeg": {},
    "EncodePng": {"T": 0},
    "ExtractJpegShape": {},
    "ReadFile": {},
    "WriteFile": {},
    "DecodeCSV": {},
    "EncodeBase64": {},
    "ParseTensor": {},
    "TFRecordDataset": {},
    "TextLineDataset": {},
    "FixedLengthRecordDatasetV2": {},
    "FIFOQueueV2": {},
    "RandomShuffleQueueV2": {},
    "PaddingFIFOQueueV2": {},
    "PriorityQueueV2": {},
    "QueueEnqueueV2": {},
    "QueueEnqueueManyV2": {},
    "QueueDequeueV2": {},
    "QueueDequeueManyV2": {},
    "QueueDequeueUpToV2": {},
    "QueueCloseV2": {},
    "QueueSizeV2": {},
    "QueueIsClosedV2": {},
    "TFRecordReaderV2": {},
    "TextLineReaderV2": {},
    "FixedLengthRecordReaderV2": {},
    "WholeFileReaderV2": {},
    "IdentityReaderV2": {},
    "ReaderReadV2": {},
    "ReaderReadUpToV2": {},
    "ReaderNumRecordsProducedV2": {},
    "ReaderNumWorkUnitsCompletedV2": {},
    "ReaderSerializeStateV2": {},
    "ReaderRestoreStateV2": {},
    "ReaderResetV2": {},
}


def _attr_value(value, where: str) -> attr_value_pb2.AttrValue | None:
    av = attr_value_pb2.AttrValue()
    if value is None:
        return None
    if isinstance(value, bool):
        av.b = value
    elif isinstance(value, int):
        av.i = value
    elif isinstance(value, float):
        av.f = value
    elif isinstance(value, str):
        av.s = value.encode("utf-8")
    elif isinstance(value, bytes):
        av.s = value
    elif isinstance(value, dtypes.DType):
        av.type = value.base_dtype.as_datatype_enum
    elif isinstance(value, TensorShape):
        av.shape.CopyFrom(shape_to_proto(value.as_tuple()))
    elif isinstance(value, np.ndarray):
        av.tensor.CopyFrom(array_to_proto(value))
    elif isinstance(value, (list, tuple)):
        lv = av.list
        lv.SetInParent()
        for v in value:
            if isinstance(v, bool):
                lv.b.append(v)
            elif isinstance(v, int):
                lv.i.append(v)
            elif isinstance(v, float):
                lv.f.append(v)
            elif isinstance(v, str):
                lv.s.append(v.encode("utf-8"))
            elif isinstance(v, dtypes.DType):
                lv.type.append(v.base_dtype.as_datatype_enum)
            elif isinstance(v, TensorShape):
                lv.shape.add().CopyFrom(shape_to_proto(v.as_tuple()))
            else:
                raise TFFormatError(f"{where}: cannot write list element {v!r}")
    else:
        raise TFFormatError(
            f"{where}: attr of type {type(value).__name__} cannot be written in TensorFlow's "
            "format (graphs with functional control flow are not supported yet)"
        )
    return av


def _type_attrs(op) -> dict[str, attr_value_pb2.AttrValue]:
    data = list(op.inputs)
    rule = TYPE_ATTRS.get(op.type)
    if rule is None:
        rule = {"T": 0} if data else {}
    out = {}
    for name, src in rule.items():
        av = attr_value_pb2.AttrValue()
        if src == "*":
            av.list.type.extend(t.dtype.base_dtype.as_datatype_enum for t in data)
        elif src == "N":
            av.i = len(data)
        elif src == "N-1":
            av.i = len(data) - 1
        else:
            av.type = data[src].dtype.base_dtype.as_datatype_enum
        out[name] = av
    return out


def _input_ref(t) -> str:
    return t.op.name if t.value_index == 0 else f"{t.op.name}:{t.value_index}"


def graph_to_tf(graph) -> graph_pb2.GraphDef:
    """``graph`` as TensorFlow's GraphDef (TypeError-free: TFFormatError when an op cannot
    be expressed)."""
    gd = graph_pb2.GraphDef()
    gd.versions.producer = PRODUCER
    for op in graph.get_operations():
        if not op._opdef.flags.serializable:
            raise TFFormatError(f"op {op.name!r} ({op.type}) runs Python code; cannot be saved")
        n = gd.node.add(name=op.name, op=op.type)
        n.input.extend(_input_ref(t) for t in op.inputs)
        n.input.extend("^" + c.name for c in op.control_inputs)
        if op.device:
            n.device = op.device
        for key, value in sorted(op._attrs.items()):
            if key.startswith("_"):
                continue
            declared = op._opdef.attr_by_name.get(key)
            if value is None and declared is not None and declared.type.startswith("shape"):
                value = TensorShape(None)  # TF writes an unknown shape, never leaves it out
            av = _attr_value(value, f"op {op.name!r} attr {key!r}")
            if av is not None:
                n.attr[key].CopyFrom(av)
        for key, av in _type_attrs(op).items():
            n.attr[key].CopyFrom(av)
    return gd


def _const(gd, name, value) -> str:
    n = gd.node.add(name=name, op="Const")
    n.attr["value"].tensor.CopyFrom(array_to_proto(value))
    n.attr["dtype"].type = n.attr["value"].tensor.dtype
    return name


def _free_scope(gd: graph_pb2.GraphDef, base: str) -> str:
    taken = {n.name.split("/")[0] for n in gd.node}
    scope, i = base, 0
    while scope in taken:
        i += 1
        scope = f"{base}_{i}"
    return scope


def _add_saver(gd: graph_pb2.GraphDef, variables: list) -> saver_pb2.SaverDef:
    """TF1's V2 Saver subgraph for ``variables`` (name, dtype) keyed by variable name, under
    the first free ``save``/``save_N`` scope."""
    scope = _free_scope(gd, "save")
    names = [v[0] for v in variables]
    dtypes_list = [v[1].as_datatype_enum for v in variables]
    default = gd.node.add(name=f"{scope}/filename/input", op="Const")
    default.attr["value"].tensor.CopyFrom(array_to_proto(np.array(b"model", dtype=object)))
    default.attr["dtype"].type = types_pb2.DT_STRING
    fn = gd.node.add(name=f"{scope}/filename", op="PlaceholderWithDefault", input=[default.name])
    fn.attr["dtype"].type = types_pb2.DT_STRING
    fn.attr["shape"].shape.SetInParent()
    prefix = gd.node.add(name=f"{scope}/Const", op="PlaceholderWithDefault", input=[fn.name])
    prefix.attr["dtype"].type = types_pb2.DT_STRING
    prefix.attr["shape"].shape.SetInParent()
    tensor_names = _const(
        gd, f"{scope}/tensor_names", np.array([n.encode() for n in names], object)
    )
    slices = _const(gd, f"{scope}/shape_and_slices", np.array([b""] * len(names), object))
    save = gd.node.add(
        name=f"{scope}/SaveV2", op="SaveV2", input=[prefix.name, tensor_names, slices, *names]
    )
    save.attr["dtypes"].list.type.extend(dtypes_list)
    ident = gd.node.add(
        name=f"{scope}/control_dependency", op="Identity", input=[prefix.name, f"^{scope}/SaveV2"]
    )
    ident.attr["T"].type = types_pb2.DT_STRING
    restore = gd.node.add(
        name=f"{scope}/RestoreV2", op="RestoreV2", input=[prefix.name, tensor_names, slices]
    )
    restore.attr["dtypes"].list.type.extend(dtypes_list)
    assigns = []
    for i, (name, dtype) in enumerate(variables):
        a = gd.node.add(
            name=f"{scope}/Assign_{i}",
            op="Assign",
            input=[name, f"{scope}/RestoreV2:{i}" if i else f"{scope}/RestoreV2"],
        )
        a.attr["T"].type = dtype.as_datatype_enum
        a.attr["validate_shape"].b = True
        a.attr["use_locking"].b = True
        assigns.append("^" + a.name)
    gd.node.add(name=f"{scope}/restore_all", op="NoOp", input=assigns)
    return saver_pb2.SaverDef(
        filename_tensor_name=f"{scope}/Const:0",
        save_tensor_name=f"{scope}/control_dependency:0",
        restore_op_name=f"{scope}/restore_all",
        max_to_keep=5,
        keep_checkpoint_every_n_hours=10000.0,
        version=saver_pb2.SaverDef.V2,
    )


def _tensor_info(info) -> meta_graph_pb2.TensorInfo:
    out = meta_graph_pb2.TensorInfo(name=info.name, dtype=info.engine_dtype.as_datatype_enum)
    out.tensor_shape.CopyFrom(shape_to_proto(info.shape.as_tuple()))
    return out


def meta_graph_to_tf(meta, graph) -> meta_graph_pb2.MetaGraphDef:
    """The engine meta graph ``meta`` (whose graph, imported, is ``graph``) as TF's."""
    mg = meta_graph_pb2.MetaGraphDef()
    mg.meta_info_def.tags.extend(meta.tags)
    mg.meta_info_def.meta_graph_version = "v2"
    mg.meta_info_def.tensorflow_version = "2.15.0"  # the TF1 API level we emit; TF parses it
    gd = graph_to_tf(graph)
    variables = []
    for rec in meta.variables:
        v = graph.get_operation_by_name(rec["name"])
        variables.append((rec["name"], v.outputs[0].dtype.base_dtype))
        vd = variable_pb2.VariableDef(
            variable_name=rec["name"] + ":0",
            initializer_name=rec["initializer"],
            snapshot_name=rec["snapshot"],
            initial_value_name=rec["initial_value"],
            trainable=bool(rec.get("trainable", True)),
        )
        key = "local_variables" if rec.get("local") else "variables"
        mg.collection_def[key].bytes_list.value.append(vd.SerializeToString())
        if rec.get("trainable", True):
            mg.collection_def["trainable_variables"].bytes_list.value.append(vd.SerializeToString())
    if variables:
        mg.saver_def.CopyFrom(_add_saver(gd, variables))
    mg.graph_def.CopyFrom(gd)
    if meta.init_op:
        mg.collection_def["saved_model_main_op"].node_list.value.append(meta.init_op)
    for key, sig in meta.signature_def.items():
        s = mg.signature_def[key]
        s.method_name = sig.method_name
        for alias, info in sig.inputs.items():
            s.inputs[alias].CopyFrom(_tensor_info(info))
        for alias, info in sig.outputs.items():
            s.outputs[alias].CopyFrom(_tensor_info(info))
    if meta.assets:
        raise TFFormatError("models with assets cannot be written in TensorFlow's format yet")
    return mg


def saved_model_to_tf(metas_and_graphs) -> saved_model_pb2.SavedModel:
    sm = saved_model_pb2.SavedModel(saved_model_schema_version=1)
    for meta, graph in metas_and_graphs:
        sm.meta_graphs.add().CopyFrom(meta_graph_to_tf(meta, graph))
    return sm
