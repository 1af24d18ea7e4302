"""onnxruntime's com.microsoft operators (the ones its transformer optimizer and saved graph
optimizations write) against onnxruntime itself."""

import numpy as np
import pytest

import engine as tf
from engine.formats.onnx.mapping import UnsupportedModelError

onnx = pytest.importorskip("onnx", reason="test models are built with onnx.helper")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the oracle")
from onnx import TensorProto, helper  # noqa: E402

rng = np.random.default_rng(31)
F, I32 = TensorProto.FLOAT, TensorProto.INT32
MS = "com.microsoft"


def vi(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


def build(node, feeds, n_out=1, out_elems=None):
    elems = {np.dtype(np.float32): F, np.dtype(np.int32): I32, np.dtype(np.int64): 7}
    inputs = [vi(k, list(v.shape), elems[v.dtype]) for k, v in feeds.items()]
    outs = [vi(o, None, (out_elems or {}).get(o, F)) for o in node.output[:n_out] if o]
    graph = helper.make_graph([node], "g", inputs, outs)
    imports = [helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)]
    m = helper.make_model(graph, opset_imports=imports)
    m.ir_version = 8
    return m.SerializeToString()


def check(node, feeds, n_out=1, rtol=1e-5, atol=1e-5, out_elems=None):
    data = build(node, feeds, n_out, out_elems)
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    m = tf.onnx.import_model(data)
    names = [o for o in node.output[:n_out] if o]
    with tf.Session(graph=m.graph) as sess:
        got = sess.run(
            [m.signature.outputs[n].name for n in names],
            {m.signature.inputs[k].name: v for k, v in feeds.items()},
        )
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def f32(*shape, scale=1.0):
    return (rng.normal(size=shape) * scale).astype(np.float32)


def ms(op, inputs, outputs=("y",), **attrs):
    return helper.make_node(op, list(inputs), list(outputs), domain=MS, **attrs)


@pytest.mark.parametrize(
    "op,inputs,attrs",
    [
        ("Gelu", ["x"], {}),
        ("BiasGelu", ["x", "b"], {}),
        ("FastGelu", ["x"], {}),
        ("FastGelu", ["x", "b"], {}),
        ("QuickGelu", ["x"], {}),
        ("QuickGelu", ["x"], {"alpha": 1.5}),
    ],
)
def test_activations(op, inputs, attrs):
    all_feeds = {"x": f32(2, 3, 8, scale=2), "b": f32(8), "s": f32(2, 3, 8)}
    check(ms(op, inputs, **attrs), {k: all_feeds[k] for k in inputs})


def test_bias_add_adds_the_bias_and_the_skip():
    # onnxruntime implements BiasAdd on CUDA only: checked against numpy.
    x, b, s = f32(2, 3, 8), f32(8), f32(2, 3, 8)
    data = build(ms("BiasAdd", ["x", "b", "s"]), {"x": x, "b": b, "s": s})
    m = tf.onnx.import_model(data)
    feed = {m.signature.inputs[k].name: v for k, v in {"x": x, "b": b, "s": s}.items()}
    with tf.Session(graph=m.graph) as sess:
        got = sess.run(m.signature.outputs["y"].name, feed)
    np.testing.assert_allclose(got, x + b + s, rtol=1e-6)


@pytest.mark.parametrize("op", ["FusedMatMul", "TransposeMatMul"])
@pytest.mark.parametrize("ta,tb", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("batched", [False, True])
def test_fused_matmul(op, ta, tb, batched):
    a_shape, b_shape = ([4, 5] if not ta else [5, 4]), ([5, 3] if not tb else [3, 5])
    if batched:
        a_shape, b_shape = [2] + a_shape, [2] + b_shape
    feeds = {"a": f32(*a_shape), "b": f32(*b_shape)}
    check(ms(op, ["a", "b"], transA=ta, transB=tb, alpha=0.5), feeds)


@pytest.mark.parametrize(
    "activation,params",
    [
        (None, None),
        ("Relu", None),
        ("Tanh", None),
        ("Sigmoid", None),
        ("LeakyRelu", [0.2]),
        ("Clip", [-0.5, 0.5]),
        ("HardSigmoid", [0.3, 0.4]),
    ],
)
@pytest.mark.parametrize("with_z", [False, True])
def test_fused_conv(activation, params, with_z):
    feeds = {"x": f32(1, 3, 6, 6), "w": f32(4, 3, 3, 3), "b": f32(4)}
    inputs = ["x", "w", "b"]
    if with_z:
        feeds["z"] = f32(1, 4, 6, 6)
        inputs.append("z")
    attrs = {"pads": [1, 1, 1, 1], "kernel_shape": [3, 3]}
    if activation:
        attrs["activation"] = activation
    if params:
        attrs["activation_params"] = params
    check(ms("FusedConv", inputs, **attrs), feeds)


# onnxruntime's FusedGemm kernel needs an activation.
@pytest.mark.parametrize("activation", ["Relu", "LeakyRelu", "Sigmoid", "Tanh"])
def test_fused_gemm(activation):
    feeds = {"a": f32(4, 5), "b": f32(3, 5), "c": f32(3)}
    attrs = {"transB": 1, "alpha": 0.7, "beta": 0.5}
    if activation:
        attrs["activation"] = activation
    if activation == "LeakyRelu":
        attrs["activation_alpha"] = 0.3
    check(ms("FusedGemm", ["a", "b", "c"], **attrs), feeds)


@pytest.mark.parametrize("beta,bias", [(False, False), (True, False), (True, True)])
def test_skip_layer_normalization(beta, bias):
    feeds = {"x": f32(2, 5, 16), "skip": f32(2, 5, 16), "gamma": f32(16)}
    names = ["x", "skip", "gamma", "", ""]
    if beta:
        feeds["beta"] = f32(16)
        names[3] = "beta"
    if bias:
        feeds["bias"] = f32(16)
        names[4] = "bias"
    node = ms("SkipLayerNormalization", names, ["y", "", "", "sum"], epsilon=1e-5)
    check(node, feeds, n_out=4, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("bias", [False, True])
def test_skip_simplified_layer_normalization(bias):
    feeds = {"x": f32(2, 5, 16), "skip": f32(2, 5, 16), "gamma": f32(16)}
    names = ["x", "skip", "gamma"]
    if bias:
        feeds["bias"] = f32(16)
        names.append("bias")
    node = ms("SkipSimplifiedLayerNormalization", names, ["y", "", "", "sum"], epsilon=1e-6)
    check(node, feeds, n_out=4, rtol=1e-4, atol=1e-5)


def test_simplified_layer_normalization_in_the_default_domain():
    node = helper.make_node("SimplifiedLayerNormalization", ["x", "g"], ["y"], epsilon=1e-6)
    check(node, {"x": f32(3, 4, 32), "g": f32(32)}, rtol=1e-4)


@pytest.mark.parametrize(
    "segments,mask,positions", [(True, True, False), (False, False, False), (True, False, True)]
)
def test_embed_layer_normalization(segments, mask, positions):
    b, s, h = 2, 6, 16
    feeds = {
        "ids": rng.integers(0, 30, size=(b, s)).astype(np.int32),
        "seg": rng.integers(0, 2, size=(b, s)).astype(np.int32),
        "word": f32(30, h),
        "pos": f32(16, h),
        "segemb": f32(2, h),
        "gamma": f32(h),
        "beta": f32(h),
        "mask": np.array([[1] * 6, [1] * 4 + [0] * 2], np.int32),
        "posids": np.array([[5, 4, 3, 2, 1, 0]] * b, np.int32),
    }
    names = ["ids", "seg" if segments else "", "word", "pos", "segemb" if segments else ""]
    names += ["gamma", "beta", "mask" if mask else "", "posids" if positions else ""]
    while not names[-1]:
        names.pop()
    used = {k: feeds[k] for k in names if k}
    node = ms("EmbedLayerNormalization", names, ["y", "mask_index", "sum"], epsilon=1e-5)
    n_out = 3 if mask else 1
    check(node, used, n_out=n_out, rtol=1e-4, out_elems={"mask_index": I32})


ATTENTION_MASKS = {
    "none": None,
    "lengths": np.array([5, 3], np.int32),
    "raw": np.array([[1, 1, 1, 1, 0], [1, 1, 0, 0, 0]], np.int32),
    "3d": (rng.random((2, 5, 5)) > 0.3).astype(np.int32),
}


@pytest.mark.parametrize("mask", list(ATTENTION_MASKS))
@pytest.mark.parametrize("causal", [0, 1])
def test_attention(mask, causal):
    b, s, hidden, heads = 2, 5, 16, 4
    feeds = {
        "x": f32(b, s, hidden),
        "w": f32(hidden, 3 * hidden, scale=0.3),
        "bias": f32(3 * hidden),
    }
    names = ["x", "w", "bias"]
    if ATTENTION_MASKS[mask] is not None:
        feeds["mask"] = ATTENTION_MASKS[mask]
        names.append("mask")
    node = ms("Attention", names, num_heads=heads, unidirectional=causal)
    check(node, feeds, rtol=1e-4, atol=1e-5)


def test_attention_with_qkv_hidden_sizes_scale_and_attention_bias():
    b, s, heads = 2, 4, 2
    feeds = {
        "x": f32(b, s, 8),
        "w": f32(8, 8 + 8 + 12, scale=0.3),
        "bias": f32(28),
        "ab": f32(1, heads, s, s),
    }
    node = ms(
        "Attention",
        ["x", "w", "bias", "", "", "ab"],
        num_heads=heads,
        qkv_hidden_sizes=[8, 8, 12],
        scale=0.2,
    )
    check(node, feeds, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("bias,mask", [(False, False), (True, True)])
def test_multi_head_attention(bias, mask):
    b, s, kv, d, heads = 2, 3, 5, 8, 2
    feeds = {"q": f32(b, s, d), "k": f32(b, kv, d), "v": f32(b, kv, d)}
    names = ["q", "k", "v"]
    if bias:
        feeds["bias"] = f32(3 * d)
        names.append("bias")
    if mask:
        feeds["kpm"] = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.int32)
        names += [""] * (3 - len(names)) + ([] if bias else [""]) + ["kpm"]
    check(ms("MultiHeadAttention", names, num_heads=heads), feeds, rtol=1e-4, atol=1e-5)


def test_attention_with_a_cache_is_refused_by_name():
    feeds = {"x": f32(1, 2, 8), "w": f32(8, 24), "bias": f32(24)}
    node = ms("Attention", ["x", "w", "bias"], ["y", "present"], num_heads=2)
    data = build(node, feeds, n_out=2)
    with pytest.raises(UnsupportedModelError, match="present output is not supported"):
        tf.onnx.import_model(data)


def test_unknown_activation_of_a_fused_conv_is_named():
    node = ms("FusedConv", ["x", "w"], activation="Softsign", kernel_shape=[1, 1])
    data = build(node, {"x": f32(1, 2, 3, 3), "w": f32(2, 2, 1, 1)})
    with pytest.raises(UnsupportedModelError, match="activation 'Softsign'"):
        tf.onnx.import_model(data)


@pytest.mark.parametrize(
    "op,heads", [("Attention", 0), ("Attention", -2), ("MultiHeadAttention", 0)]
)
def test_attention_head_counts_that_are_not_positive_are_refused(op, heads):
    # onnxruntime refuses these sessions ("num_heads > 0 was false").
    x = f32(1, 3, 8)
    if op == "Attention":
        node, feeds = ms(op, ["x", "w"], num_heads=heads), {"x": x, "w": f32(8, 24)}
    else:
        node, feeds = ms(op, ["x", "x", "x"], num_heads=heads), {"x": x}
    data = build(node, feeds)
    with pytest.raises(Exception, match="num_heads"):
        ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    with pytest.raises(UnsupportedModelError, match=f"num_heads {heads}"):
        tf.onnx.import_model(data)


def test_simplified_layer_normalization_of_a_scalar_is_refused():
    node = helper.make_node("SimplifiedLayerNormalization", ["x", "g"], ["y"])
    data = build(node, {"x": np.float32(2.0).reshape(()), "g": np.ones((), np.float32)})
    with pytest.raises(UnsupportedModelError, match="rank 0"):
        tf.onnx.import_model(data)
