"""The recurrent ONNX operators (LSTM, GRU, RNN): models built with onnx.helper, compared
with onnxruntime."""

import numpy as np
import pytest

import engine as tf
from engine.formats.onnx.mapping import UnsupportedModelError

onnx = pytest.importorskip("onnx", reason="test models are built with onnx.helper")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the oracle")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

F = TensorProto.FLOAT
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
DIRECTIONS = ("forward", "reverse", "bidirectional")
N_OUT = {"LSTM": 3, "GRU": 2, "RNN": 2}


def model_bytes(nodes, inputs, outputs, inits=(), opset=14) -> bytes:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
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


def run_ort(data, feeds):
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))


def assert_same_as_ort(data, feeds, oracle=None):
    got, want = run_engine(data, feeds), run_ort(oracle or data, feeds)
    assert got.keys() == want.keys()
    for k in want:
        assert got[k].dtype == want[k].dtype, k
        assert got[k].shape == want[k].shape, k
        np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-5, err_msg=k)
    return got


def rnn_model(
    kind,
    direction="forward",
    *,
    hidden=5,
    input_size=3,
    batch=4,
    seq=6,
    bias=False,
    lens=False,
    state=False,
    peepholes=False,
    layout=0,
    outputs=None,
    opset=14,
    seed=0,
    **attrs,
):
    """One recurrent node; X (dims symbolic), sequence_lens and initial states are graph
    inputs, weights are initializers. Returns (model bytes, feeds)."""
    rng = np.random.default_rng(seed)
    d, g = (2 if direction == "bidirectional" else 1), GATES[kind]
    inits = [
        numpy_helper.from_array(
            (rng.standard_normal((d, g * hidden, input_size)) * 0.5).astype(np.float32), "W"
        ),
        numpy_helper.from_array(
            (rng.standard_normal((d, g * hidden, hidden)) * 0.5).astype(np.float32), "R"
        ),
    ]
    x_shape = (batch, seq, input_size) if layout else (seq, batch, input_size)
    feeds = {"X": rng.standard_normal(x_shape).astype(np.float32)}
    inputs = [
        helper.make_tensor_value_info(
            "X", F, ["B", "T", input_size] if layout else ["T", "B", input_size]
        )
    ]
    names = ["X", "W", "R", "", "", "", "", ""]
    if bias:
        b = (rng.standard_normal((d, 2 * g * hidden)) * 0.5).astype(np.float32)
        inits.append(numpy_helper.from_array(b, "B"))
        names[3] = "B"
    if lens:
        feeds["L"] = np.asarray(lens, np.int32)
        inputs.append(helper.make_tensor_value_info("L", TensorProto.INT32, ["B"]))
        names[4] = "L"
    state_shape = (batch, d, hidden) if layout else (d, batch, hidden)
    for i, name in ((5, "H0"), (6, "C0")):
        if state and (name == "H0" or kind == "LSTM"):
            feeds[name] = rng.standard_normal(state_shape).astype(np.float32)
            inputs.append(helper.make_tensor_value_info(name, F, None))
            names[i] = name
    if peepholes:
        p = (rng.standard_normal((d, 3 * hidden)) * 0.5).astype(np.float32)
        inits.append(numpy_helper.from_array(p, "P"))
        names[7] = "P"
    while names and not names[-1]:
        names.pop()
    outs = outputs or ["Y", "Y_h", "Y_c"][: N_OUT[kind]]
    if layout:
        attrs["layout"] = layout
    node = helper.make_node(kind, names, outs, hidden_size=hidden, direction=direction, **attrs)
    graph_outs = [helper.make_tensor_value_info(o, F, None) for o in outs if o]
    return model_bytes([node], inputs, graph_outs, inits, opset), feeds


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("optional", [False, True])
def test_each_direction_with_and_without_optional_inputs(kind, direction, optional):
    data, feeds = rnn_model(
        kind,
        direction,
        bias=optional,
        state=optional,
        peepholes=optional and kind == "LSTM",
        seed=len(kind) * 10 + DIRECTIONS.index(direction) * 2 + optional,
    )
    got = assert_same_as_ort(data, feeds)
    d = 2 if direction == "bidirectional" else 1
    assert got["Y"].shape == (6, d, 4, 5)
    assert got["Y_h"].shape == (d, 4, 5)
    np.testing.assert_array_equal(got["Y_h"][0], got["Y"][0 if direction == "reverse" else -1, 0])


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("direction", DIRECTIONS)
def test_ragged_sequence_lens(kind, direction):
    data, feeds = rnn_model(kind, direction, bias=True, state=True, lens=[6, 2, 4, 1])
    got = assert_same_as_ort(data, feeds)
    # Past a sequence's end the outputs are zero.
    assert not got["Y"][2:, :, 1].any() and not got["Y"][4:, :, 2].any()
    assert got["Y"][1, :, 1].all()


def assert_layout_1_matches_layout_0(kind, **kw):
    """onnxruntime refuses layout=1, so the oracle is the same node with layout 0 run on
    transposed inputs, its outputs transposed back."""
    data, feeds = rnn_model(kind, "bidirectional", layout=1, **kw)
    oracle, _ = rnn_model(kind, "bidirectional", **kw)
    swap = {k: v if k == "L" else v.transpose(1, 0, 2) for k, v in feeds.items()}
    want = run_ort(oracle, swap)
    got = run_engine(data, feeds)
    assert got.keys() == want.keys()
    for k, v in want.items():
        v = v.transpose(2, 0, 1, 3) if k == "Y" else v.transpose(1, 0, 2)
        assert got[k].shape == v.shape, k
        np.testing.assert_allclose(got[k], v, rtol=1e-5, atol=1e-5, err_msg=k)
    return got


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_empty_sequences_end_in_zero_states(kind):
    data, feeds = rnn_model(kind, "bidirectional", bias=True, state=True, lens=[0, 3, 6, 2])
    got = assert_same_as_ort(data, feeds)
    assert not got["Y_h"][:, 0].any() and not got["Y"][:, :, 0].any()
    assert got["Y_h"][:, 1].all()


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_layout_1_is_batch_major(kind):
    got = assert_layout_1_matches_layout_0(kind, bias=True, state=True, batch=3)
    assert got["Y"].shape == (3, 6, 2, 5)
    assert got["Y_h"].shape == (3, 2, 5)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_layout_1_with_ragged_lengths(kind):
    assert_layout_1_matches_layout_0(kind, batch=3, lens=[2, 6, 5])


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_clip_bounds_the_activation_inputs(kind):
    data, feeds = rnn_model(kind, "bidirectional", bias=True, clip=0.3)
    got = assert_same_as_ort(data, feeds)
    unclipped, _ = rnn_model(kind, "bidirectional", bias=True)
    assert not np.allclose(got["Y"], run_ort(unclipped, feeds)["Y"], atol=1e-3)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_dynamic_sequence_length_runs_one_model_on_two_lengths(kind):
    data, feeds = rnn_model(kind, "bidirectional", bias=True, seq=7)
    m = tf.onnx.import_model(data)
    assert m.signature.outputs["Y"].shape.as_list()[0] is None
    assert_same_as_ort(data, feeds)
    assert_same_as_ort(data, {"X": feeds["X"][:3]})


def test_lstm_activations_with_alpha_and_beta():
    data, feeds = rnn_model(
        "LSTM",
        "bidirectional",
        bias=True,
        activations=["HardSigmoid", "LeakyRelu", "ScaledTanh", "Sigmoid", "Elu", "Softsign"],
        activation_alpha=[0.3, 0.2, 1.5, 0.7],
        activation_beta=[0.4, 0.8],
    )
    assert_same_as_ort(data, feeds)


def test_gru_and_rnn_other_activations():
    data, feeds = rnn_model(
        "GRU",
        "bidirectional",
        bias=True,
        activations=["Sigmoid", "Affine", "HardSigmoid", "Softplus"],
        activation_alpha=[0.5],
        activation_beta=[0.1],
    )
    assert_same_as_ort(data, feeds)
    for act in ("Relu", "ThresholdedRelu", "Softsign", "Affine", "Elu"):
        data, feeds = rnn_model("RNN", bias=True, activations=[act], activation_alpha=[0.1])
        assert_same_as_ort(data, feeds)


@pytest.mark.parametrize(
    "pair", [["HardSigmoid", "LeakyRelu"], ["Elu", "ThresholdedRelu"], ["Affine", "ScaledTanh"]]
)
def test_activation_defaults_follow_onnxruntime(pair):
    data, feeds = rnn_model("RNN", "bidirectional", bias=True, activations=pair)
    assert_same_as_ort(data, feeds)


def test_lstm_input_forget_couples_the_gates():
    data, feeds = rnn_model("LSTM", "bidirectional", bias=True, peepholes=True, input_forget=1)
    got = assert_same_as_ort(data, feeds)
    plain, _ = rnn_model("LSTM", "bidirectional", bias=True, peepholes=True)
    assert not np.allclose(got["Y"], run_ort(plain, feeds)["Y"], atol=1e-3)


@pytest.mark.parametrize("lbr", [0, 1])
def test_gru_linear_before_reset(lbr):
    data, feeds = rnn_model("GRU", "bidirectional", bias=True, state=True, linear_before_reset=lbr)
    assert_same_as_ort(data, feeds)


@pytest.mark.parametrize(
    "kind,outputs",
    [("LSTM", ["", "Y_h"]), ("LSTM", ["", "", "Y_c"]), ("GRU", ["Y"]), ("RNN", ["", "Y_h"])],
)
def test_outputs_may_be_omitted(kind, outputs):
    data, feeds = rnn_model(kind, "reverse", bias=True, lens=[3, 6, 1, 2], outputs=outputs)
    got = assert_same_as_ort(data, feeds)
    assert sorted(got) == sorted(o for o in outputs if o)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("opset", [1, 3, 7, 22])
def test_every_opset_version(kind, opset):
    data, feeds = rnn_model(kind, "bidirectional", bias=True, state=True, opset=opset)
    # onnxruntime implements these operators from opset 7; the older versions mean the same
    # for what a node without the removed attributes says.
    oracle = rnn_model(kind, "bidirectional", bias=True, state=True, opset=max(opset, 7))[0]
    assert tf.onnx.import_model(data).opset == opset
    assert_same_as_ort(data, feeds, oracle=oracle)


@pytest.mark.parametrize(
    "kind,attrs,match",
    [
        ("LSTM", {"direction": "sideways"}, "direction='sideways'"),
        ("GRU", {"activations": ["Sigmoid", "Gelu"]}, "activation 'Gelu'"),
        ("RNN", {"activations": ["Tanh", "Tanh", "Tanh"]}, "3 activations"),
        ("LSTM", {"input_forget": 2}, "input_forget=2"),
        ("GRU", {"linear_before_reset": 3}, "linear_before_reset=3"),
        ("RNN", {"layout": 2}, "layout=2"),
    ],
)
def test_unsupported_attribute_values_are_named(kind, attrs, match):
    data, _ = rnn_model(kind, **attrs)
    with pytest.raises(UnsupportedModelError, match=match):
        tf.onnx.import_model(data)


def test_weights_of_the_wrong_shape_are_reported():
    data, _ = rnn_model("LSTM", "bidirectional")
    m = onnx.load_from_string(data)
    next(a for a in m.graph.node[0].attribute if a.name == "hidden_size").i = 7
    with pytest.raises(tf.onnx.OnnxFormatError, match="W has shape"):
        tf.onnx.import_model(m.SerializeToString())


def _torch_lstm(hidden=6, input_size=4, layers=2):
    """The graph torch.onnx.export writes for ``nn.LSTM(input_size, hidden, num_layers=2,
    bidirectional=True, batch_first=True)`` called as ``lstm(x, (h0, c0))`` with dynamic batch
    and sequence axes: a Transpose to time-major, per layer a bidirectional LSTM on slices of
    h0/c0, Y transposed and reshaped to [T, B, 2H] for the next layer, and the states
    concatenated."""
    rng = np.random.default_rng(5)
    nodes, inits = [], []

    def const(name, value):
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    nodes.append(helper.make_node("Transpose", ["input"], ["x_t"], perm=[1, 0, 2]))
    layer_in, width, hs, cs = "x_t", input_size, [], []
    for k in range(layers):
        for s in ("h0", "c0"):
            nodes.append(
                helper.make_node(
                    "Slice",
                    [
                        s,
                        const(f"st{k}", [2 * k]),
                        const(f"en{k}_{s}", [2 * k + 2]),
                        const(f"ax{k}_{s}", [0]),
                    ],
                    [f"{s}_{k}"],
                )
            )
        w = const(f"W{k}", (rng.standard_normal((2, 4 * hidden, width)) * 0.4).astype("f"))
        r = const(f"R{k}", (rng.standard_normal((2, 4 * hidden, hidden)) * 0.4).astype("f"))
        b = const(f"B{k}", (rng.standard_normal((2, 8 * hidden)) * 0.4).astype("f"))
        nodes.append(
            helper.make_node(
                "LSTM",
                [layer_in, w, r, b, "", f"h0_{k}", f"c0_{k}"],
                [f"Y{k}", f"hn{k}", f"cn{k}"],
                hidden_size=hidden,
                direction="bidirectional",
                name=f"LSTM_{k}",
            )
        )
        nodes.append(helper.make_node("Transpose", [f"Y{k}"], [f"Yt{k}"], perm=[0, 2, 1, 3]))
        nodes.append(
            helper.make_node("Reshape", [f"Yt{k}", const(f"shape{k}", [0, 0, -1])], [f"out{k}"])
        )
        layer_in, width = f"out{k}", 2 * hidden
        hs.append(f"hn{k}")
        cs.append(f"cn{k}")
    nodes.append(helper.make_node("Transpose", [layer_in], ["output"], perm=[1, 0, 2]))
    nodes.append(helper.make_node("Concat", hs, ["hn"], axis=0))
    nodes.append(helper.make_node("Concat", cs, ["cn"], axis=0))
    inputs = [
        helper.make_tensor_value_info("input", F, ["batch", "seq", input_size]),
        helper.make_tensor_value_info("h0", F, [2 * layers, "batch", hidden]),
        helper.make_tensor_value_info("c0", F, [2 * layers, "batch", hidden]),
    ]
    outputs = [
        helper.make_tensor_value_info("output", F, ["batch", "seq", 2 * hidden]),
        helper.make_tensor_value_info("hn", F, [2 * layers, "batch", hidden]),
        helper.make_tensor_value_info("cn", F, [2 * layers, "batch", hidden]),
    ]
    return model_bytes(nodes, inputs, outputs, inits, opset=17)


def test_torch_exported_two_layer_bidirectional_batch_first_lstm():
    data = _torch_lstm()
    rng = np.random.default_rng(9)
    for batch, seq in ((3, 8), (2, 5)):
        feeds = {
            "input": rng.standard_normal((batch, seq, 4)).astype(np.float32),
            "h0": rng.standard_normal((4, batch, 6)).astype(np.float32),
            "c0": rng.standard_normal((4, batch, 6)).astype(np.float32),
        }
        got = assert_same_as_ort(data, feeds)
        assert got["output"].shape == (batch, seq, 12)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("lens", [[7, 2, 4, 1], [-1, 2, 4, 1]])
def test_sequence_lens_outside_the_sequence_fail_the_run(kind, lens):
    data, feeds = rnn_model(kind, "bidirectional", lens=lens)
    with pytest.raises(ort.capi.onnxruntime_pybind11_state.InvalidArgument, match="sequence_lens"):
        run_ort(data, feeds)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"sequence_lens.*\[6\]"):
        run_engine(data, feeds)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("bad", ["hidden", "batch"])
def test_initial_states_of_the_wrong_shape_fail_the_run(kind, bad):
    # [1, 1, 2*hidden] would reshape into [2, hidden]; [1, 1, hidden] would broadcast.
    data, feeds = rnn_model(kind, batch=2 if bad == "hidden" else 3, state=True, hidden=2)
    batch = feeds["X"].shape[1]
    wrong = (1, 1, 4) if bad == "hidden" else (1, 1, 2)
    for name in ("H0", "C0") if kind == "LSTM" else ("H0",):
        feeds_bad = dict(feeds, **{name: np.ones(wrong, np.float32)})
        with pytest.raises(ort.capi.onnxruntime_pybind11_state.Fail, match="must have shape"):
            run_ort(data, feeds_bad)
        with pytest.raises(
            tf.errors.InvalidArgumentError, match=rf"must have shape.*\[1 {batch} 2\]"
        ):
            run_engine(data, feeds_bad)
