"""Quantized ONNX models (QOperator, QDQ and dynamic quantization) compared bit for bit with
onnxruntime: single operators built with onnx.helper, and small float models quantized by
onnxruntime.quantization."""

import numpy as np
import pytest

import engine as tf
from engine.formats.onnx.mapping import UnsupportedModelError

onnx = pytest.importorskip("onnx", reason="test models are built with onnx.helper")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the oracle")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

rng = np.random.default_rng(5)
F, F16, U8, I8 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.UINT8, TensorProto.INT8
U16, I16, I32 = TensorProto.UINT16, TensorProto.INT16, TensorProto.INT32
ELEM = {
    np.dtype(np.float32): F,
    np.dtype(np.float16): F16,
    np.dtype(np.uint8): U8,
    np.dtype(np.int8): I8,
    np.dtype(np.uint16): U16,
    np.dtype(np.int16): I16,
    np.dtype(np.int32): I32,
}


def single_node(op_type, feeds, consts, outputs, opset, **attrs) -> bytes:
    """One ``op_type`` node; ``feeds`` are graph inputs, ``consts`` initializers, both dicts
    in input order (a None value is an omitted optional input)."""
    names = list(feeds) + list(consts)
    order = attrs.pop("order", names)
    node = helper.make_node(op_type, [n or "" for n in order], [o for o, _ in outputs], **attrs)
    inputs = [helper.make_tensor_value_info(n, ELEM[v.dtype], v.shape) for n, v in feeds.items()]
    inits = [numpy_helper.from_array(v, n) for n, v in consts.items()]
    outs = [helper.make_tensor_value_info(o, t, None) for o, t in outputs]
    graph = helper.make_graph([node], "g", inputs, outs, inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10 if opset >= 21 else 8
    return m.SerializeToString()


def run_engine(data, feeds):
    m = tf.onnx.import_model(data)
    sig = m.signature
    with tf.Session(graph=m.graph) as sess:
        outs = sess.run(
            [sig.outputs[n].name for n in sig.outputs],
            {sig.inputs[k].name: v for k, v in feeds.items()},
        )
    return dict(zip(sig.outputs, outs))


def run_ort(data, feeds, optimize=True):
    opts = ort.SessionOptions()
    if not optimize:
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))


def run_reference(data, feeds):
    """The ONNX reference evaluator: the oracle where onnxruntime lacks a variant."""
    from onnx.reference import ReferenceEvaluator

    ref = ReferenceEvaluator(onnx.load_from_string(data))
    return dict(zip(ref.output_names, ref.run(None, feeds)))


def assert_exact(data, feeds, optimize=True, oracle=None):
    got = run_engine(data, feeds)
    want = oracle(data, feeds) if oracle else run_ort(data, feeds, optimize)
    assert got.keys() == want.keys()
    for k in want:
        g = np.asarray(got[k])
        assert g.dtype == want[k].dtype, k
        assert g.shape == want[k].shape, k
        np.testing.assert_array_equal(g, want[k], err_msg=k)
    return got


def q_range(dt):
    info = np.iinfo(dt)
    return int(info.min), int(info.max)


def ties_and_extremes(scale: float, dt, n: int) -> np.ndarray:
    """Values whose ``x / scale`` are exact .5 ties (both parities), far out of the type's
    range (saturation) and random."""
    lo, hi = q_range(dt)
    ties = (np.arange(-6, 6) + 0.5) * scale
    far = np.array([(lo - 300) * scale, (hi + 300) * scale, 1e30, -1e30])
    rand = rng.uniform(lo - 20, hi + 20, n) * scale
    return np.concatenate([ties, far, rand]).astype(np.float32)


# -----------------------------------------------------------------------------------------
# QuantizeLinear / DequantizeLinear / DynamicQuantizeLinear
# -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("opset", [10, 13, 19, 21])
@pytest.mark.parametrize("qtype", [np.uint8, np.int8])
def test_quantize_per_tensor_rounds_half_to_even_and_saturates(opset, qtype):
    scale = np.array(0.25, np.float32)  # a power of two: x / scale ties are exact
    x = ties_and_extremes(0.25, qtype, 40).reshape(4, 14)
    for zero in (0, 3, -7 if qtype == np.int8 else 200):
        data = single_node(
            "QuantizeLinear",
            {"x": x},
            {"s": scale, "z": np.array(zero, qtype)},
            [("y", ELEM[np.dtype(qtype)])],
            opset,
        )
        got = assert_exact(data, {"x": x})["y"]
        assert got.min() == q_range(qtype)[0] and got.max() == q_range(qtype)[1]


def test_quantize_without_zero_point_is_uint8():
    x = ties_and_extremes(0.5, np.uint8, 30)
    data = single_node(
        "QuantizeLinear", {"x": x}, {"s": np.array(0.5, np.float32)}, [("y", U8)], 13
    )
    assert assert_exact(data, {"x": x})["y"].dtype == np.uint8


@pytest.mark.parametrize("opset", [13, 19, 21])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_quantize_and_dequantize_per_axis(opset, axis):
    x = rng.standard_normal((3, 4, 5)).astype(np.float32) * 3
    c = x.shape[axis]
    scale = rng.uniform(0.01, 0.05, c).astype(np.float32)
    zero = rng.integers(-20, 20, c).astype(np.int8)
    q = single_node(
        "QuantizeLinear",
        {"x": x},
        {"s": scale, "z": zero},
        [("y", I8)],
        opset,
        axis=axis,
    )
    y = assert_exact(q, {"x": x})["y"]
    dq = single_node(
        "DequantizeLinear",
        {"y": y},
        {"s": scale, "z": zero},
        [("x", F)],
        opset,
        axis=axis,
    )
    assert_exact(dq, {"y": y})


@pytest.mark.parametrize("qtype", [np.uint16, np.int16])
def test_quantize_and_dequantize_16_bit(qtype):
    x = ties_and_extremes(2.0**-6, qtype, 50)
    zero = np.array(1000 if qtype == np.uint16 else -1000, qtype)
    q = single_node(
        "QuantizeLinear",
        {"x": x},
        {"s": np.array(2.0**-6, np.float32), "z": zero},
        [("y", ELEM[np.dtype(qtype)])],
        21,
    )
    y = assert_exact(q, {"x": x})["y"]
    dq = single_node(
        "DequantizeLinear",
        {"y": y},
        {"s": np.array(0.02, np.float32), "z": zero},
        [("x", F)],
        21,
    )
    assert_exact(dq, {"y": y})


def test_quantize_output_dtype_attribute_without_zero_point():
    x = ties_and_extremes(0.5, np.int8, 30)
    data = single_node(
        "QuantizeLinear",
        {"x": x},
        {"s": np.array(0.5, np.float32)},
        [("y", I8)],
        21,
        output_dtype=I8,
    )
    assert assert_exact(data, {"x": x})["y"].dtype == np.int8


def test_quantize_float16_input_and_dequantize_to_float16():
    x = (rng.standard_normal(64) * 2).astype(np.float16)
    scale = np.array(0.0137, np.float16)
    zero = np.array(128, np.uint8)
    q = single_node("QuantizeLinear", {"x": x}, {"s": scale, "z": zero}, [("y", U8)], 19)
    y = assert_exact(q, {"x": x})["y"]
    dq = single_node("DequantizeLinear", {"y": y}, {"s": scale, "z": zero}, [("x", F16)], 19)
    assert_exact(dq, {"y": y})


@pytest.mark.parametrize("op", ["QuantizeLinear", "DequantizeLinear"])
def test_blocked_quantization(op):
    x = rng.standard_normal((4, 10)).astype(np.float32)
    scale = rng.uniform(0.01, 0.05, (4, 4)).astype(np.float32)  # blocks of 3 along axis 1
    zero = rng.integers(0, 255, (4, 4)).astype(np.uint8)
    if op == "DequantizeLinear":
        x = rng.integers(0, 255, (4, 10)).astype(np.uint8)
    out = F if op == "DequantizeLinear" else U8
    data = single_node(
        op, {"x": x}, {"s": scale, "z": zero}, [("y", out)], 21, axis=1, block_size=3
    )
    assert_exact(data, {"x": x})


@pytest.mark.parametrize("opset", [10, 13])
def test_dequantize_int32(opset):
    x = rng.integers(-(2**30), 2**30, (3, 7)).astype(np.int32)
    data = single_node(
        "DequantizeLinear", {"x": x}, {"s": np.array(0.0031, np.float32)}, [("y", F)], opset
    )
    assert_exact(data, {"x": x})


@pytest.mark.parametrize(
    "x",
    [
        rng.standard_normal((3, 5)).astype(np.float32) * 4,
        rng.uniform(0.5, 3, (7,)).astype(np.float32),
        -rng.uniform(0.5, 3, (2, 2, 3)).astype(np.float32),
        np.zeros((4,), np.float32),
        np.array([-1.0, 1.0, 0.5, -0.25, 0.0], np.float32),
    ],
)
def test_dynamic_quantize_linear(x):
    data = single_node("DynamicQuantizeLinear", {"x": x}, {}, [("y", U8), ("s", F), ("z", U8)], 11)
    assert_exact(data, {"x": x})


# -----------------------------------------------------------------------------------------
# MatMulInteger, QLinearMatMul
# -----------------------------------------------------------------------------------------


def ints(dt, shape):
    lo, hi = q_range(dt)
    return rng.integers(lo, hi + 1, shape).astype(dt)


MATMUL_SHAPES = [((4, 6), (6, 5)), ((2, 3, 6), (6, 4)), ((2, 3, 6), (2, 6, 4)), ((3, 6), (2, 6, 4))]


@pytest.mark.parametrize("a_shape,b_shape", MATMUL_SHAPES)
@pytest.mark.parametrize("ta,tb", [(np.uint8, np.uint8), (np.uint8, np.int8), (np.int8, np.int8)])
@pytest.mark.parametrize("b_const", [True, False])
def test_matmul_integer(a_shape, b_shape, ta, tb, b_const):
    a, b = ints(ta, a_shape), ints(tb, b_shape)
    az = np.array(ints(ta, ()))
    bz = ints(tb, (b_shape[-1],)) if len(b_shape) == 2 else np.array(ints(tb, ()))
    feeds, consts = {"a": a}, {}
    (consts if b_const else feeds)["b"] = b
    consts.update(az=az, bz=bz)
    data = single_node(
        "MatMulInteger", feeds, consts, [("y", I32)], 10, order=["a", "b", "az", "bz"]
    )
    assert_exact(data, feeds)


def test_matmul_integer_per_row_zero_point_of_a():
    """A 1-D a_zero_point holds one entry per row of A (onnxruntime takes a scalar only, so
    each row is checked against onnxruntime with its own scalar zero point)."""
    a, b = ints(np.uint8, (4, 6)), ints(np.uint8, (6, 3))
    az, bz = ints(np.uint8, (4,)), np.array(7, np.uint8)
    data = single_node("MatMulInteger", {"a": a}, {"b": b, "az": az, "bz": bz}, [("y", I32)], 10)
    got = run_engine(data, {"a": a})["y"]
    for i in range(4):
        row = single_node(
            "MatMulInteger", {"a": a[i : i + 1]}, {"b": b, "az": az[i], "bz": bz}, [("y", I32)], 10
        )
        np.testing.assert_array_equal(got[i : i + 1], run_ort(row, {"a": a[i : i + 1]})["y"])


def test_matmul_integer_large_sums_stay_exact():
    """K large enough that float32 sums would round: the float64 path is taken."""
    a = np.full((2, 600), 255, np.uint8)
    a[1, ::3] = 0
    b = np.full((600, 3), 255, np.uint8)
    b[::7, 1] = 1
    data = single_node("MatMulInteger", {"a": a}, {"b": b}, [("y", I32)], 10)
    got = assert_exact(data, {"a": a})["y"]
    assert got[0, 0] == 600 * 255 * 255  # above 2**24


@pytest.mark.parametrize("a_shape,b_shape", MATMUL_SHAPES)
@pytest.mark.parametrize("ta,tb", [(np.uint8, np.uint8), (np.uint8, np.int8), (np.int8, np.int8)])
@pytest.mark.parametrize("per_column", [False, True])
def test_qlinear_matmul(a_shape, b_shape, ta, tb, per_column):
    a, b = ints(ta, a_shape), ints(tb, b_shape)
    # Per column: [N], or [batch, 1, N] for a batch of matrices (as onnxruntime reads it).
    cols = (b_shape[-1],) if len(b_shape) == 2 else (b_shape[0], 1, b_shape[-1])
    b_scale = rng.uniform(0.005, 0.02, cols if per_column else ()).astype(np.float32)
    b_zero = ints(tb, cols if per_column else ())
    consts = {
        "as": np.array(0.02, np.float32),
        "az": np.array(ints(ta, ())),
        "b": b,
        "bs": b_scale,
        "bz": b_zero,
        "ys": np.array(0.9, np.float32),
        "yz": np.array(ints(ta, ())),
    }
    order = ["a", "as", "az", "b", "bs", "bz", "ys", "yz"]
    data = single_node(
        "QLinearMatMul", {"a": a}, consts, [("y", ELEM[np.dtype(ta)])], 10, order=order
    )
    assert_exact(data, {"a": a})


# -----------------------------------------------------------------------------------------
# ConvInteger, QLinearConv
# -----------------------------------------------------------------------------------------

# (input shape, weight shape, attributes): groups, depthwise, pads, strides, dilations, 1-D.
CONVS = [
    ((1, 3, 7, 7), (4, 3, 3, 3), {}),
    ((2, 4, 8, 6), (6, 2, 3, 2), {"group": 2, "pads": [1, 0, 2, 1], "strides": [2, 1]}),
    ((1, 4, 9, 9), (4, 1, 3, 3), {"group": 4, "pads": [1, 1, 1, 1], "dilations": [2, 2]}),
    ((1, 2, 6, 5), (3, 2, 2, 2), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ((2, 3, 10), (5, 3, 3), {"pads": [2, 1], "strides": [2]}),
]


@pytest.mark.parametrize("x_shape,w_shape,attrs", CONVS)
@pytest.mark.parametrize("w_const", [True, False])
@pytest.mark.parametrize("per_channel", [False, True])
def test_conv_integer(x_shape, w_shape, attrs, w_const, per_channel):
    if per_channel and len(w_shape) != 4:
        pytest.skip("the reference evaluator broadcasts per-channel zero points for 2-D only")
    x, w = ints(np.uint8, x_shape), ints(np.uint8, w_shape)
    wz = ints(np.uint8, (w_shape[0],) if per_channel else ())
    feeds, consts = {"x": x}, {}
    (consts if w_const else feeds)["w"] = w
    consts.update(xz=np.array(ints(np.uint8, ())), wz=wz)
    data = single_node(
        "ConvInteger", feeds, consts, [("y", I32)], 10, order=["x", "w", "xz", "wz"], **attrs
    )
    # onnxruntime's ConvInteger takes a per-tensor weight zero point only.
    assert_exact(data, feeds, oracle=run_reference if per_channel else None)


def test_conv_integer_without_zero_points():
    x, w = ints(np.uint8, (1, 3, 5, 5)), ints(np.uint8, (2, 3, 3, 3))
    data = single_node("ConvInteger", {"x": x}, {"w": w}, [("y", I32)], 10, pads=[1, 1, 1, 1])
    assert_exact(data, {"x": x})


@pytest.mark.parametrize("x_shape,w_shape,attrs", CONVS)
@pytest.mark.parametrize("tx,tw", [(np.uint8, np.uint8), (np.uint8, np.int8), (np.int8, np.int8)])
@pytest.mark.parametrize("per_channel", [False, True])
def test_qlinear_conv(x_shape, w_shape, attrs, tx, tw, per_channel):
    m = w_shape[0]
    x, w = ints(tx, x_shape), ints(tw, w_shape)
    w_scale = rng.uniform(0.002, 0.01, m if per_channel else ()).astype(np.float32)
    w_zero = np.zeros(m if per_channel else (), tw)
    if tw == np.uint8:  # onnxruntime takes int8 weights symmetric (zero point 0) only
        w_zero = ints(tw, m if per_channel else ())
    consts = {
        "xs": np.array(0.03, np.float32),
        "xz": np.array(ints(tx, ())),
        "w": w,
        "ws": w_scale,
        "wz": w_zero,
        "ys": np.array(0.7, np.float32),
        "yz": np.array(ints(tx, ())),
        "b": rng.integers(-5000, 5000, m).astype(np.int32),
    }
    data = single_node(
        "QLinearConv",
        {"x": x},
        consts,
        [("y", ELEM[np.dtype(tx)])],
        10,
        order=["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"],
        **attrs,
    )
    assert_exact(data, {"x": x})


# -----------------------------------------------------------------------------------------
# Unsupported variants name what they are
# -----------------------------------------------------------------------------------------


def _unchecked_model(node, inputs, outputs, inits, opset=21) -> bytes:
    graph = helper.make_graph([node], "g", inputs, outputs, inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10
    return m.SerializeToString()


@pytest.mark.parametrize(
    "elem,name",
    [(TensorProto.FLOAT8E4M3FN, "FLOAT8E4M3FN"), (TensorProto.INT4, "INT4")],
)
def test_unsupported_quantized_types_are_named(elem, name):
    x = helper.make_tensor_value_info("x", F, [4])
    y = helper.make_tensor_value_info("y", elem, [4])
    zero = helper.make_tensor("z", elem, [], [0])
    s = numpy_helper.from_array(np.array(0.5, np.float32), "s")
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])
    with pytest.raises(UnsupportedModelError, match=name):
        tf.onnx.import_model(_unchecked_model(node, [x], [y], [s, zero]))
    node = helper.make_node("QuantizeLinear", ["x", "s"], ["y"], output_dtype=elem)
    with pytest.raises(UnsupportedModelError, match=name):
        tf.onnx.import_model(_unchecked_model(node, [x], [y], [s]))
    q = helper.make_tensor_value_info("q", elem, [4])
    out = helper.make_tensor_value_info("out", F, [4])
    node = helper.make_node("DequantizeLinear", ["q", "s"], ["out"])
    with pytest.raises(UnsupportedModelError, match=name):
        tf.onnx.import_model(_unchecked_model(node, [q], [out], [s]))


# -----------------------------------------------------------------------------------------
# Float models quantized by onnxruntime.quantization
# -----------------------------------------------------------------------------------------


def _float_model(path) -> None:
    """Conv + Relu + Reshape + MatMul + Add: what the quantizers rewrite."""
    e = np.random.default_rng(3)
    values = {
        "w": e.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.3,
        "b": e.standard_normal(4).astype(np.float32) * 0.1,
        "shape": np.array([-1, 4 * 6 * 6], np.int64),
        "w2": e.standard_normal((4 * 6 * 6, 5)).astype(np.float32) * 0.1,
        "b2": e.standard_normal(5).astype(np.float32) * 0.1,
    }
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Reshape", ["r", "shape"], ["f"]),
        helper.make_node("MatMul", ["f", "w2"], ["m"]),
        helper.make_node("Add", ["m", "b2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", F, ["n", 3, 6, 6])],
        [helper.make_tensor_value_info("y", F, ["n", 5])],
        [numpy_helper.from_array(v, n) for n, v in values.items()],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def _batches(n, seed):
    e = np.random.default_rng(seed)
    return [{"x": e.standard_normal((2, 3, 6, 6)).astype(np.float32)} for _ in range(n)]


def _assert_quantized_model_matches(path, op_types):
    model = onnx.load(path)
    found = {n.op_type for n in model.graph.node}
    assert op_types <= found, found
    data = model.SerializeToString()
    for feeds in _batches(3, 9):
        # onnxruntime's default graph optimizations fuse Q/DQ pairs into integer kernels;
        # the results agree with the unfused graph, and the engine gives both bit for bit.
        assert_exact(data, feeds)
        assert_exact(data, feeds, optimize=False)


@pytest.mark.parametrize("weight_type", ["QUInt8", "QInt8"])
def test_quantize_dynamic_model(tmp_path, weight_type):
    from onnxruntime.quantization import QuantType, quantize_dynamic

    _float_model(tmp_path / "float.onnx")
    out = tmp_path / "dynamic.onnx"
    quantize_dynamic(tmp_path / "float.onnx", out, weight_type=getattr(QuantType, weight_type))
    ops = {"DynamicQuantizeLinear", "MatMulInteger"}
    if weight_type == "QUInt8":
        ops.add("ConvInteger")
    _assert_quantized_model_matches(out, ops)


@pytest.mark.parametrize("quant_format", ["QDQ", "QOperator"])
@pytest.mark.parametrize("activation_type,per_channel", [("QUInt8", False), ("QInt8", True)])
def test_quantize_static_model(tmp_path, quant_format, activation_type, per_channel):
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    class Calibration(CalibrationDataReader):
        def __init__(self):
            self.batches = iter(_batches(4, 1))

        def get_next(self):
            return next(self.batches, None)

    _float_model(tmp_path / "float.onnx")
    out = tmp_path / f"{quant_format}.onnx"
    quantize_static(
        tmp_path / "float.onnx",
        out,
        Calibration(),
        quant_format=getattr(QuantFormat, quant_format),
        activation_type=getattr(QuantType, activation_type),
        weight_type=QuantType.QInt8,
        per_channel=per_channel,
        # Add would become com.microsoft's QLinearAdd in the QOperator format.
        op_types_to_quantize=["Conv", "MatMul"],
    )
    if quant_format == "QDQ":
        ops = {"QuantizeLinear", "DequantizeLinear", "Conv", "MatMul"}
    else:
        ops = {"QuantizeLinear", "QLinearConv", "QLinearMatMul", "DequantizeLinear"}
    _assert_quantized_model_matches(out, ops)
