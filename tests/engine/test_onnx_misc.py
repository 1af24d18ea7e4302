"""GroupNormalization, LpPool/GlobalLpPool, Unique, the windows and CenterCropPad against
onnxruntime; the random generators by their contracts (shapes, dtypes, seeds, statistics)."""

import numpy as np
import pytest

import engine as tf

onnx = pytest.importorskip("onnx", reason="test models are built with onnx.helper")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the oracle")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

rng = np.random.default_rng(23)
F = TensorProto.FLOAT


def build(node, inputs, outputs, inits=(), opset=18):
    graph = helper.make_graph([node], "g", inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 9 if opset < 21 else 10
    return m.SerializeToString()


def engine_run(data, feeds):
    m = tf.onnx.import_model(data)
    names = list(m.signature.outputs)
    with tf.Session(graph=m.graph) as sess:
        return sess.run(
            [m.signature.outputs[n].name for n in names],
            {m.signature.inputs[k].name: v for k, v in feeds.items()},
        )


def ort_run(data, feeds):
    return ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)


def check(data, feeds, rtol=1e-5, atol=1e-6, exact=False):
    got, want = engine_run(data, feeds), ort_run(data, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        if exact:
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return got


def vi(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


@pytest.mark.parametrize("opset", [18, 21])
@pytest.mark.parametrize("shape,groups", [((2, 6, 5), 3), ((1, 4, 3, 3), 2), ((2, 4, 2, 2, 2), 4)])
def test_group_normalization(opset, shape, groups):
    x = rng.normal(2.0, 3.0, size=shape).astype(np.float32)
    n = groups if opset == 18 else shape[1]
    scale = numpy_helper.from_array(rng.normal(size=n).astype(np.float32), "scale")
    bias = numpy_helper.from_array(rng.normal(size=n).astype(np.float32), "bias")
    node = helper.make_node(
        "GroupNormalization", ["x", "scale", "bias"], ["y"], num_groups=groups, epsilon=1e-3
    )
    data = build(node, [vi("x", shape)], [vi("y", shape)], [scale, bias], opset)
    check(data, {"x": x}, rtol=1e-4, atol=1e-5)


LP_CASES = [
    dict(kernel_shape=[3], p=2),
    dict(kernel_shape=[2], strides=[2], pads=[1, 1], p=3),
    dict(kernel_shape=[2, 2], p=1),
    dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 0, 1, 2], p=2),
    dict(kernel_shape=[3, 2], auto_pad="SAME_UPPER", p=2),
    dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1, p=2),
]


@pytest.mark.parametrize("attrs", LP_CASES, ids=lambda a: "-".join(f"{k}{v}" for k, v in a.items()))
def test_lp_pool(attrs):
    spatial = (7,) if len(attrs["kernel_shape"]) == 1 else (6, 7)
    x = rng.normal(size=(2, 3) + spatial).astype(np.float32)
    node = helper.make_node("LpPool", ["x"], ["y"], **attrs)
    data = build(node, [vi("x", x.shape)], [vi("y", None)])
    check(data, {"x": x})


@pytest.mark.parametrize("p", [1, 2, 3])
def test_global_lp_pool(p):
    x = rng.normal(size=(2, 3, 4, 5)).astype(np.float32)
    node = helper.make_node("GlobalLpPool", ["x"], ["y"], p=p)
    check(build(node, [vi("x", x.shape)], [vi("y", None)]), {"x": x})


@pytest.mark.parametrize(
    "op,attrs",
    [
        ("LpPool", dict(kernel_shape=[2, 2], dilations=[2, 2], p=2)),
        ("MaxPool", dict(kernel_shape=[2, 3], dilations=[2, 1], strides=[1, 2])),
        ("MaxPool", dict(kernel_shape=[3, 3], dilations=[2, 2], pads=[2, 1, 0, 2], ceil_mode=1)),
        ("AveragePool", dict(kernel_shape=[2, 2], dilations=[2, 3], pads=[1, 1, 1, 1])),
        (
            "AveragePool",
            dict(kernel_shape=[2, 2], dilations=[2, 2], pads=[1, 0, 1, 1], count_include_pad=1),
        ),
        # (auto_pad SAME with dilations: onnxruntime sizes the padding without the dilation,
        # against the spec, so its output is smaller; the engine follows the spec.)
        ("MaxPool", dict(kernel_shape=[2, 2, 2], dilations=[2, 1, 2], pads=[1, 0, 1, 0, 1, 1])),
    ],
)
def test_dilated_pools(op, attrs):
    spatial = (6, 7, 8) if len(attrs["kernel_shape"]) == 3 else (7, 9)
    x = rng.normal(size=(2, 3) + spatial).astype(np.float32)
    node = helper.make_node(op, ["x"], ["y"], **attrs)
    opset = 19 if op == "AveragePool" else 18
    check(build(node, [vi("x", x.shape)], [vi("y", None)], opset=opset), {"x": x})


UNIQUE_X = {
    "flat": np.array([2, 1, 1, 3, 4, 3, 2, 2], np.float32),
    "matrix": np.array([[1, 3], [1, 3], [2, 1], [1, 3], [0, 0]], np.float32),
}


@pytest.mark.parametrize("sort", [0, 1])
@pytest.mark.parametrize(
    "name,axis", [("flat", None), ("matrix", None), ("matrix", 0), ("matrix", 1), ("matrix", -2)]
)
def test_unique(sort, name, axis):
    x = UNIQUE_X[name]
    kw = {} if axis is None else {"axis": axis}
    outs = ["y", "indices", "inverse", "counts"]
    node = helper.make_node("Unique", ["x"], outs, sorted=sort, **kw)
    i64 = TensorProto.INT64
    out_vi = [vi("y", None)] + [vi(n, None, i64) for n in outs[1:]]
    check(build(node, [vi("x", x.shape)], out_vi, opset=11), {"x": x}, exact=True)


@pytest.mark.parametrize("op", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("periodic", [0, 1])
@pytest.mark.parametrize("out_type", [TensorProto.FLOAT, TensorProto.DOUBLE])
def test_windows(op, periodic, out_type):
    node = helper.make_node(op, ["size"], ["w"], periodic=periodic, output_datatype=out_type)
    data = build(node, [vi("size", [], TensorProto.INT64)], [vi("w", None, out_type)], opset=17)
    check(data, {"size": np.array(10, np.int64)}, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(
    "shape,target,axes",
    [
        ((20, 10, 3), [10, 7, 3], None),
        ((10, 7, 3), [20, 10, 3], None),
        ((20, 8, 3), [10, 10, 3], None),
        ((3, 20, 8), [10, 9], [1, 2]),
        ((3, 20, 8), [10, 9], [-2, -1]),
        ((3, 4), [-1, 2], None),  # onnxruntime: a negative target is an empty axis
    ],
)
def test_center_crop_pad(shape, target, axes):
    x = rng.normal(size=shape).astype(np.float32)
    kw = {} if axes is None else {"axes": axes}
    node = helper.make_node("CenterCropPad", ["x", "shape"], ["y"], **kw)
    inputs = [vi("x", shape), vi("shape", [len(target)], TensorProto.INT64)]
    data = build(node, inputs, [vi("y", None)])
    check(data, {"x": x, "shape": np.array(target, np.int64)}, exact=True)


def _run_twice(data, feeds=None):
    m = tf.onnx.import_model(data)
    names = [m.signature.outputs[n].name for n in m.signature.outputs]
    feed = {m.signature.inputs[k].name: v for k, v in (feeds or {}).items()}
    with tf.Session(graph=m.graph) as sess:
        first = sess.run(names, feed)
    m = tf.onnx.import_model(data)
    with tf.Session(graph=m.graph) as sess:
        second = sess.run(names, feed)
    return first, second


@pytest.mark.parametrize(
    "op,attrs,mean,std",
    [
        ("RandomNormal", dict(mean=2.0, scale=0.5), 2.0, 0.5),
        ("RandomUniform", dict(low=-1.0, high=3.0), 1.0, 4 / np.sqrt(12)),
    ],
)
def test_random_generators_follow_their_parameters_and_seeds(op, attrs, mean, std):
    node = helper.make_node(op, [], ["y"], shape=[200, 100], seed=7.0, **attrs)
    data = build(node, [], [vi("y", [200, 100])], opset=11)
    (a,), (b,) = _run_twice(data)
    np.testing.assert_array_equal(a, b)
    assert a.dtype == np.float32 and a.shape == (200, 100)
    assert abs(a.mean() - mean) < 0.05 and abs(a.std() - std) < 0.05
    if op == "RandomUniform":
        assert a.min() >= -1.0 and a.max() < 3.0


def test_random_like_takes_shape_and_dtype_from_its_input():
    node = helper.make_node("RandomNormalLike", ["x"], ["y"], seed=1.0)
    data = build(node, [vi("x", [3, 4], TensorProto.DOUBLE)], [vi("y", None, TensorProto.DOUBLE)])
    (a,), _ = _run_twice(data, {"x": np.zeros((3, 4))})
    assert a.dtype == np.float64 and a.shape == (3, 4)


def test_bernoulli_draws_zero_and_one_at_the_extremes():
    p = np.array([[0.0, 1.0, 0.0], [1.0, 1.0, 0.0]], np.float32)
    node = helper.make_node("Bernoulli", ["p"], ["y"], seed=3.0)
    data = build(node, [vi("p", [None, None])], [vi("y", None)], opset=15)
    (a,), _ = _run_twice(data, {"p": p})
    np.testing.assert_array_equal(a, p)
    half = np.full((100, 100), 0.5, np.float32)
    (b,), (c,) = _run_twice(data, {"p": half})
    np.testing.assert_array_equal(b, c)
    assert 0.45 < b.mean() < 0.55


def test_multinomial_samples_the_only_possible_class():
    logits = np.log(np.array([[1e-30, 1.0, 1e-30], [1.0, 1e-30, 1e-30]], np.float32))
    node = helper.make_node("Multinomial", ["x"], ["y"], sample_size=5, seed=2.0)
    data = build(node, [vi("x", [2, 3])], [vi("y", None, TensorProto.INT32)], opset=7)
    (a,), _ = _run_twice(data, {"x": logits})
    assert a.dtype == np.int32
    np.testing.assert_array_equal(a, [[1] * 5, [0] * 5])


def test_split_sizes_and_squeeze_axes_computed_at_run_time():
    # Sizes and axes that arrive as graph inputs (onnxruntime accepts them): split into one
    # part per output, and axes normalized and checked when the run sees them.
    x = rng.normal(size=(2, 6, 1)).astype(np.float32)
    i64 = TensorProto.INT64
    nodes = [
        helper.make_node("Split", ["x", "sizes"], ["a", "b"], axis=1),
        helper.make_node("Squeeze", ["a", "sq"], ["a2"]),
        helper.make_node("Unsqueeze", ["b", "unsq"], ["b2"]),
    ]
    inputs = [vi("x", [2, 6, 1]), vi("sizes", [2], i64), vi("sq", [1], i64), vi("unsq", [2], i64)]
    graph = helper.make_graph(nodes, "g", inputs, [vi("a2", None), vi("b2", None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 9
    data = m.SerializeToString()
    feeds = {
        "x": x,
        "sizes": np.array([2, 4], np.int64),
        "sq": np.array([-1], np.int64),
        "unsq": np.array([0, -1], np.int64),
    }
    got = check(data, feeds, exact=True)
    assert got[0].shape == (2, 2) and got[1].shape == (1, 2, 4, 1, 1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Squeeze: dimension 1"):
        engine_run(data, dict(feeds, sq=np.array([1], np.int64)))
    with pytest.raises(tf.errors.InvalidArgumentError, match="repeated axes"):
        engine_run(data, dict(feeds, unsq=np.array([0, 0], np.int64)))


@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("layout,rotary_dim", [("3d", 0), ("4d", 0), ("4d", 4)])
@pytest.mark.parametrize("with_positions", [True, False])
def test_rotary_embedding(interleaved, layout, rotary_dim, with_positions):
    # Against onnxruntime (opset 23's RotaryEmbedding).
    b, s, heads, head = 2, 5, 2, 8
    half = (rotary_dim or head) // 2
    shape = (b, s, heads * head) if layout == "3d" else (b, heads, s, head)
    feeds = {"x": rng.normal(size=shape).astype(np.float32)}
    angles = rng.uniform(0, 3, size=(10, half))
    if with_positions:
        feeds["cos"] = np.cos(angles).astype(np.float32)
        feeds["sin"] = np.sin(angles).astype(np.float32)
        feeds["pos"] = rng.integers(0, 10, size=(b, s)).astype(np.int64)
    else:
        feeds["cos"] = np.cos(angles[:s])[None].repeat(b, 0).astype(np.float32)
        feeds["sin"] = np.sin(angles[:s])[None].repeat(b, 0).astype(np.float32)
    attrs = {"interleaved": interleaved, "rotary_embedding_dim": rotary_dim}
    if layout == "3d":
        attrs["num_heads"] = heads
    names = ["x", "cos", "sin"] + (["pos"] if with_positions else [])
    node = helper.make_node("RotaryEmbedding", names, ["y"], **attrs)
    elems = {"pos": TensorProto.INT64}
    inputs = [vi(k, list(v.shape), elems.get(k, F)) for k, v in feeds.items()]
    check(build(node, inputs, [vi("y", None)], opset=23), feeds, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample(mode, padding, align):
    # Grid points inside and well outside [-1, 1], against onnxruntime (opset 16, 4-D).
    x = rng.normal(size=(2, 3, 5, 6)).astype(np.float32)
    grid = rng.uniform(-1.6, 1.6, size=(2, 4, 7, 2)).astype(np.float32)
    node = helper.make_node(
        "GridSample", ["x", "grid"], ["y"], mode=mode, padding_mode=padding, align_corners=align
    )
    data = build(
        node, [vi("x", list(x.shape)), vi("grid", list(grid.shape))], [vi("y", None)], opset=16
    )
    if (mode, padding) != ("bicubic", "border"):
        check(data, {"x": x, "grid": grid}, rtol=1e-5, atol=1e-5)
        return
    # onnxruntime 1.32 departs from the spec here (0.03-0.13 off the ONNX reference
    # implementation); the engine follows the reference.
    from onnx.reference import ReferenceEvaluator

    (want,) = ReferenceEvaluator(_cubic_opset20(data)).run(None, {"x": x, "grid": grid})
    (got,) = engine_run(data, {"x": x, "grid": grid})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _cubic_opset20(data):
    """The same GridSample at opset 20, whose mode names the reference evaluator reads."""
    m = onnx.load_from_string(data)
    for a in m.graph.node[0].attribute:
        if a.name == "mode":
            a.s = b"cubic"
    m.opset_import[0].version = 20
    m.ir_version = 9
    return m


@pytest.mark.parametrize("mode", ["linear", "nearest"])
def test_grid_sample_volumes(mode):
    x = rng.normal(size=(1, 2, 3, 4, 5)).astype(np.float32)
    grid = rng.uniform(-1.2, 1.2, size=(1, 2, 3, 4, 3)).astype(np.float32)
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], mode=mode, padding_mode="border")
    data = build(
        node, [vi("x", list(x.shape)), vi("grid", list(grid.shape))], [vi("y", None)], opset=20
    )
    from onnx.reference import ReferenceEvaluator

    (want,) = ReferenceEvaluator(onnx.load_from_string(data)).run(None, {"x": x, "grid": grid})
    (got,) = engine_run(data, {"x": x, "grid": grid})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "opset,attrs,signal",
    [
        (17, {}, (2, 8, 1)),
        (17, {"onesided": 1}, (2, 8, 1)),
        (17, {"inverse": 1}, (2, 8, 2)),
        (17, {"axis": 2}, (2, 3, 6, 2)),
        (20, {}, (2, 8, 2)),
        (20, {"onesided": 1}, (3, 6, 1)),
        (20, {"inverse": 1}, (2, 5, 2)),
    ],
)
def test_dft(opset, attrs, signal):
    x = rng.normal(size=signal).astype(np.float32)
    node = helper.make_node("DFT", ["x"], ["y"], **attrs)
    check(build(node, [vi("x", list(x.shape))], [vi("y", None)], opset=opset), {"x": x}, 1e-4, 1e-4)


def test_dft_with_a_length_and_an_axis_input():
    x = rng.normal(size=(2, 4, 6, 1)).astype(np.float32)
    node = helper.make_node("DFT", ["x", "n", "axis"], ["y"])
    inputs = [
        vi("x", list(x.shape)),
        vi("n", [], TensorProto.INT64),
        vi("axis", [], TensorProto.INT64),
    ]
    data = build(node, inputs, [vi("y", None)], opset=20)
    feeds = {"x": x, "n": np.array(8, np.int64), "axis": np.array(-3, np.int64)}
    check(data, feeds, rtol=1e-4, atol=1e-4)
    with pytest.raises(tf.errors.InvalidArgumentError, match="not a signal axis"):
        engine_run(data, dict(feeds, axis=np.array(-1, np.int64)))


@pytest.mark.parametrize("onesided,window", [(1, True), (0, True), (1, False)])
def test_stft(onesided, window):
    x = rng.normal(size=(2, 40, 1)).astype(np.float32)
    feeds = {"x": x, "step": np.array(6, np.int64)}
    names = ["x", "step"]
    inputs = [vi("x", list(x.shape)), vi("step", [], TensorProto.INT64)]
    if window:
        feeds["w"] = np.hanning(16).astype(np.float32)
        names.append("w")
        inputs.append(vi("w", [16]))
    else:
        feeds["len"] = np.array(16, np.int64)
        names += ["", "len"]
        inputs.append(vi("len", [], TensorProto.INT64))
    node = helper.make_node("STFT", names, ["y"], onesided=onesided)
    check(build(node, inputs, [vi("y", None)], opset=17), feeds, rtol=1e-4, atol=1e-4)


def test_mel_weight_matrix():
    i64 = TensorProto.INT64
    names = ["bins", "n", "rate", "lo", "hi"]
    inputs = [
        vi("bins", [], i64),
        vi("n", [], i64),
        vi("rate", [], i64),
        vi("lo", []),
        vi("hi", []),
    ]
    node = helper.make_node("MelWeightMatrix", names, ["y"])
    feeds = {
        "bins": np.array(10, np.int64),
        "n": np.array(64, np.int64),
        "rate": np.array(16000, np.int64),
        "lo": np.array(50.0, np.float32),
        "hi": np.array(7000.0, np.float32),
    }
    got = check(build(node, inputs, [vi("y", None)], opset=17), feeds)
    assert got[0].shape == (33, 10)


def _untyped(name):
    return helper.make_empty_tensor_value_info(name)


def test_loop_and_scan_outputs_without_types_are_typed_from_the_body():
    # Exporters often leave a body's outputs untyped; onnxruntime infers them. The body reads
    # an outer value (`scale`) and an outer constant-folded shape.
    i64 = TensorProto.INT64
    loop_body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Add", ["acc_in", "scale"], ["acc_out"]),
            helper.make_node("Cast", ["i"], ["i_f"], to=TensorProto.FLOAT),
            helper.make_node("Mul", ["acc_out", "i_f"], ["step_out"]),
        ],
        "loop_body",
        [vi("i", [], i64), vi("cond_in", [], TensorProto.BOOL), _untyped("acc_in")],
        [_untyped("cond_out"), _untyped("acc_out"), _untyped("step_out")],
    )
    scan_body = helper.make_graph(
        [
            helper.make_node("Add", ["state_in", "row"], ["state_out"]),
            helper.make_node("Cast", ["row"], ["row_i"], to=i64),
        ],
        "scan_body",
        [_untyped("state_in"), _untyped("row")],
        [_untyped("state_out"), _untyped("row_i")],
    )
    nodes = [
        helper.make_node("Loop", ["trips", "", "acc0"], ["acc", "steps"], body=loop_body),
        helper.make_node(
            "Scan", ["s0", "rows"], ["total", "ints"], body=scan_body, num_scan_inputs=1
        ),
    ]
    inputs = [
        vi("trips", [], i64),
        vi("acc0", [2]),
        vi("scale", [2]),
        vi("s0", [3]),
        vi("rows", [4, 3]),
    ]
    outs = [vi(n, None) for n in ("acc", "steps", "total")] + [vi("ints", None, i64)]
    graph = helper.make_graph(nodes, "g", inputs, outs)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    m.ir_version = 8
    feeds = {
        "trips": np.array(3, np.int64),
        "acc0": np.array([1.0, 2.0], np.float32),
        "scale": np.array([0.5, -1.0], np.float32),
        "s0": np.zeros(3, np.float32),
        "rows": (rng.normal(size=(4, 3)) * 4).astype(np.float32),
    }
    got = check(m.SerializeToString(), feeds)
    assert got[1].dtype == np.float32 and got[1].shape == (3, 2)
    assert got[3].dtype == np.int64 and got[3].shape == (4, 3)
