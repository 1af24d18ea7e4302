"""onnxruntime's quantized com.microsoft operators, and models written by onnxruntime's own
quantization tool and graph optimizer, against onnxruntime."""

import numpy as np
import pytest

import engine as tf

onnx = pytest.importorskip("onnx", reason="test models are built with onnx.helper")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the oracle")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

rng = np.random.default_rng(41)
MS = "com.microsoft"
ELEM = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.uint8): TensorProto.UINT8,
    np.dtype(np.int8): TensorProto.INT8,
    np.dtype(np.int32): TensorProto.INT32,
}


def build(nodes, feeds, consts, outputs, opset=17):
    inputs = [
        helper.make_tensor_value_info(k, ELEM[v.dtype], list(v.shape)) for k, v in feeds.items()
    ]
    inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()]
    outs = [helper.make_empty_tensor_value_info(o) for o in outputs]
    graph = helper.make_graph(nodes, "g", inputs, outs, inits)
    m = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)]
    )
    m.ir_version = 8
    return m.SerializeToString()


def run_both(data, feeds):
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    m = tf.onnx.import_model(data)
    with tf.Session(graph=m.graph) as sess:
        got = sess.run(
            [m.signature.outputs[n].name for n in m.signature.outputs],
            {m.signature.inputs[k].name: v for k, v in feeds.items()},
        )
    return got, want


def check(nodes, feeds, consts, outputs=("y",), max_off=0, rtol=1e-6):
    got, want = run_both(build(nodes, feeds, consts, list(outputs)), feeds)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        if g.dtype.kind in "iu":
            # max_off: elementwise float kernels (sigmoid, MLAS's vector arithmetic) may land
            # on the other side of a rounding tie.
            off = np.abs(g.astype(np.int64) - w.astype(np.int64))
            assert off.max() <= max_off, off.max()
            assert np.mean(off > 0) <= (0.01 if max_off else 0)
        else:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-5)


def q(shape, dtype):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, size=shape).astype(dtype)


def qparams(dtype, prefix):
    zero = np.array(rng.integers(100, 156) if dtype == np.uint8 else rng.integers(-20, 20), dtype)
    return {f"{prefix}_scale": np.array(rng.uniform(0.01, 0.05), np.float32), f"{prefix}_zp": zero}


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("b_shape", [(2, 3, 4), (4,)])
def test_qlinear_binary(op, dtype, b_shape):
    feeds = {"a": q((2, 3, 4), dtype), "b": q(b_shape, dtype)}
    consts = qparams(dtype, "a") | qparams(dtype, "b") | qparams(dtype, "c")
    names = ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "c_scale", "c_zp"]
    node = helper.make_node(op, names, ["y"], domain=MS)
    check([node], feeds, consts, max_off=1)


@pytest.mark.parametrize("op,attrs", [("QLinearLeakyRelu", {"alpha": 0.1}), ("QLinearSigmoid", {})])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_qlinear_unary(op, attrs, dtype):
    feeds = {"x": q((3, 50), dtype)}
    consts = qparams(dtype, "x") | qparams(dtype, "y")
    consts["y_scale"] = np.array(1 / 256 if op == "QLinearSigmoid" else 0.03, np.float32)
    node = helper.make_node(
        op, ["x", "x_scale", "x_zp", "y_scale", "y_zp"], ["y"], domain=MS, **attrs
    )
    check([node], feeds, consts, max_off=1)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_qlinear_concat(dtype):
    feeds = {"a": q((2, 3, 4), dtype), "b": q((2, 5, 4), dtype), "c": q((2, 1, 4), dtype)}
    consts = qparams(dtype, "y") | qparams(dtype, "a") | qparams(dtype, "b") | qparams(dtype, "c")
    names = [
        "y_scale",
        "y_zp",
        "a",
        "a_scale",
        "a_zp",
        "b",
        "b_scale",
        "b_zp",
        "c",
        "c_scale",
        "c_zp",
    ]
    node = helper.make_node("QLinearConcat", names, ["y"], domain=MS, axis=1)
    check([node], feeds, consts, max_off=1)


@pytest.mark.parametrize("channels_last", [0, 1])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_qlinear_global_average_pool(channels_last, dtype):
    shape = (2, 5, 5, 3) if channels_last else (2, 3, 5, 5)
    feeds = {"x": q(shape, dtype)}
    consts = qparams(dtype, "x") | qparams(dtype, "y")
    node = helper.make_node(
        "QLinearGlobalAveragePool",
        ["x", "x_scale", "x_zp", "y_scale", "y_zp"],
        ["y"],
        domain=MS,
        channels_last=channels_last,
    )
    check([node], feeds, consts)


@pytest.mark.parametrize("channels_last", [0, 1])
@pytest.mark.parametrize("count_include_pad", [0, 1])
def test_qlinear_average_pool(channels_last, count_include_pad):
    shape = (1, 7, 7, 4) if channels_last else (1, 4, 7, 7)
    feeds = {"x": q(shape, np.uint8)}
    consts = qparams(np.uint8, "x") | qparams(np.uint8, "y")
    node = helper.make_node(
        "QLinearAveragePool",
        ["x", "x_scale", "x_zp", "y_scale", "y_zp"],
        ["y"],
        domain=MS,
        kernel_shape=[3, 3],
        strides=[2, 2],
        pads=[1, 1, 1, 1],
        count_include_pad=count_include_pad,
        channels_last=channels_last,
    )
    check([node], feeds, consts, max_off=1)


@pytest.mark.parametrize("trans_a,trans_b", [(0, 0), (1, 0), (0, 1)])
@pytest.mark.parametrize("with_c,quantized_out", [(False, True), (True, True), (True, False)])
def test_qgemm(trans_a, trans_b, with_c, quantized_out):
    m, k, n = 4, 6, 5
    feeds = {"a": q((k, m) if trans_a else (m, k), np.uint8)}
    consts = qparams(np.uint8, "a")
    consts["b"] = q((n, k) if trans_b else (k, n), np.int8)
    consts["b_scale"] = rng.uniform(0.01, 0.05, size=n).astype(np.float32)
    consts["b_zp"] = np.zeros(n, np.int8)
    names = ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "", "", ""]
    if with_c:
        consts["c"] = rng.integers(-500, 500, size=n).astype(np.int32)
        names[6] = "c"
    if quantized_out:
        consts |= qparams(np.uint8, "y")
        names[7:] = ["y_scale", "y_zp"]
    while not names[-1]:
        names.pop()
    node = helper.make_node(
        "QGemm", names, ["y"], domain=MS, transA=trans_a, transB=trans_b, alpha=0.5
    )
    check([node], feeds, consts, max_off=1, rtol=1e-5)


@pytest.mark.parametrize("per_column,with_bias", [(False, False), (True, True)])
def test_matmul_integer_to_float(per_column, with_bias):
    feeds = {"a": q((3, 4, 6), np.uint8)}
    consts = {"b": q((6, 5), np.int8), "a_scale": np.array(0.02, np.float32)}
    consts["b_scale"] = (rng.uniform(0.01, 0.05, size=5) if per_column else np.array(0.03)).astype(
        np.float32
    )
    consts["a_zp"] = np.array(128, np.uint8)
    consts["b_zp"] = (rng.integers(-3, 3, size=5) if per_column else np.array(0)).astype(np.int8)
    names = ["a", "b", "a_scale", "b_scale", "a_zp", "b_zp"]
    if with_bias:
        consts["bias"] = rng.normal(size=5).astype(np.float32)
        names.append("bias")
    node = helper.make_node("MatMulIntegerToFloat", names, ["y"], domain=MS)
    check([node], feeds, consts, rtol=1e-5)


@pytest.mark.parametrize("b_type", [np.uint8, np.int8])
@pytest.mark.parametrize("with_zero,with_bias", [(False, False), (True, True)])
def test_dynamic_quantize_matmul(b_type, with_zero, with_bias):
    feeds = {"a": rng.normal(size=(4, 8)).astype(np.float32)}
    consts = {"b": q((8, 3), b_type), "b_scale": np.array(0.02, np.float32)}
    names = ["a", "b", "b_scale", "", ""]
    if with_zero:
        consts["b_zp"] = np.array(3, b_type)
        names[3] = "b_zp"
    if with_bias:
        consts["bias"] = rng.normal(size=3).astype(np.float32)
        names[4] = "bias"
    while not names[-1]:
        names.pop()
    node = helper.make_node("DynamicQuantizeMatMul", names, ["y"], domain=MS)
    check([node], feeds, consts, rtol=1e-5)


def test_com_microsoft_quantize_and_dequantize_linear():
    feeds = {"x": rng.normal(size=(3, 4)).astype(np.float32)}
    consts = {"s": np.array(0.02, np.float32), "z": np.array(120, np.uint8)}
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], domain=MS),
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], domain=MS),
    ]
    check(nodes, feeds, consts, outputs=("q", "y"))


def _float_cnn(path):
    """Conv+Relu, a residual Add, global pooling, concat and a Gemm: what zoo CNNs hold."""
    w1 = rng.normal(size=(8, 3, 3, 3)).astype(np.float32) * 0.3
    w2 = rng.normal(size=(8, 8, 3, 3)).astype(np.float32) * 0.2
    wg = rng.normal(size=(16, 10)).astype(np.float32) * 0.3
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "r1"], ["s"]),
        helper.make_node("Relu", ["s"], ["r2"]),
        helper.make_node("AveragePool", ["r2"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["p"], ["g"]),
        helper.make_node("GlobalAveragePool", ["r1"], ["g1"]),
        helper.make_node("Concat", ["g", "g1"], ["cat"], axis=1),
        helper.make_node("Flatten", ["cat"], ["f"]),
        helper.make_node("Gemm", ["f", "wg", "bg"], ["y"]),
    ]
    inits = {
        "w1": w1,
        "b1": rng.normal(size=8).astype(np.float32) * 0.1,
        "w2": w2,
        "b2": rng.normal(size=8).astype(np.float32) * 0.1,
        "wg": wg,
        "bg": rng.normal(size=10).astype(np.float32) * 0.1,
    }
    graph = helper.make_graph(
        nodes,
        "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 10])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, str(path))


def _op_types(path):
    return {(n.domain, n.op_type) for n in onnx.load(str(path)).graph.node}


def test_a_qoperator_model_from_onnxruntimes_quantizer(tmp_path):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

    src, dst = tmp_path / "f.onnx", tmp_path / "q.onnx"
    _float_cnn(src)
    batches = [{"x": rng.normal(size=(1, 3, 8, 8)).astype(np.float32)} for _ in range(4)]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter(batches)

        def get_next(self):
            return next(self.it, None)

    quantize_static(str(src), str(dst), Reader(), quant_format=QuantFormat.QOperator)
    ops = _op_types(dst)
    for op in ("QLinearAdd", "QLinearGlobalAveragePool", "QLinearConcat", "QLinearAveragePool"):
        assert (MS, op) in ops, ops
    x = rng.normal(size=(2, 3, 8, 8)).astype(np.float32)
    got, want = run_both(dst.read_bytes(), {"x": x})
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)


def _optimized(src, dst, level):
    opts = ort.SessionOptions()
    opts.graph_optimization_level = level
    opts.optimized_model_filepath = str(dst)
    ort.InferenceSession(str(src), opts, providers=["CPUExecutionProvider"])


def test_models_saved_by_onnxruntimes_graph_optimizer(tmp_path):
    from onnxruntime.quantization import quantize_dynamic

    src = tmp_path / "f.onnx"
    _float_cnn(src)
    fused = tmp_path / "fused.onnx"
    _optimized(src, fused, ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED)
    assert (MS, "FusedConv") in _op_types(fused)
    dyn, dyn_opt = tmp_path / "dyn.onnx", tmp_path / "dyn_opt.onnx"
    quantize_dynamic(str(src), str(dyn))
    _optimized(dyn, dyn_opt, ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED)
    ops = _op_types(dyn_opt)
    assert {(MS, "DynamicQuantizeMatMul"), (MS, "MatMulIntegerToFloat")} & ops, ops
    x = rng.normal(size=(2, 3, 8, 8)).astype(np.float32)
    for path in (fused, dyn_opt):
        got, want = run_both(path.read_bytes(), {"x": x})
        np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-4)
