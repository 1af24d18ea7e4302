"""engine.onnx.import_model: models built with onnx.helper, compared with onnxruntime."""

import os
from pathlib import Path

import numpy as np
import pytest

import engine as tf
from engine.formats.onnx import mapping
from engine.formats.onnx.mapping_ms import ORT_DEFAULT_DOMAIN_OPS
from engine.formats.onnx.proto import decode, encode

onnx = pytest.importorskip("onnx", reason="test models are built with onnx.helper")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the oracle")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

rng = np.random.default_rng(11)
F = TensorProto.FLOAT
I64 = TensorProto.INT64


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def init(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


def model_bytes(nodes, inputs, outputs, inits=(), opset=17) -> bytes:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m.SerializeToString()


def run_engine(data, feeds, **kw):
    m = tf.onnx.import_model(data, **kw)
    sig = m.signature
    with tf.Session(graph=m.graph) as sess:
        if m.initializer is not None:
            sess.run(m.initializer)
        outs = sess.run(
            [sig.outputs[n].name for n in sig.outputs],
            {sig.inputs[k].name: v for k, v in feeds.items()},
        )
    return dict(zip(sig.outputs, outs))


def run_ort(data, feeds):
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, feeds)))


def assert_same_as_ort(data, feeds, rtol=1e-5, atol=1e-5, **kw):
    got, want = run_engine(data, feeds, **kw), run_ort(data, feeds)
    assert got.keys() == want.keys()
    for k in want:
        assert got[k].dtype == want[k].dtype, k
        assert got[k].shape == want[k].shape, k
        np.testing.assert_allclose(got[k], want[k], rtol=rtol, atol=atol, err_msg=k)


def _transformer_block() -> bytes:
    """A BERT-style block: attention with a dynamic reshape chain, LayerNorm, Gelu."""
    d, h = 8, 2
    w = {n: rng.standard_normal((d, d)).astype(np.float32) * 0.3 for n in ("q", "k", "v", "o")}
    nodes = [
        helper.make_node("Shape", ["x"], ["shp"]),
        helper.make_node("Gather", ["shp", "zero"], ["batch"], axis=0),
        helper.make_node("Gather", ["shp", "one"], ["seq"], axis=0),
        helper.make_node("Unsqueeze", ["batch", "ax0"], ["b1"]),
        helper.make_node("Unsqueeze", ["seq", "ax0"], ["s1"]),
        helper.make_node("Concat", ["b1", "s1", "heads", "hd"], ["split_shape"], axis=0),
    ]
    for n in ("q", "k", "v"):
        nodes += [
            helper.make_node("MatMul", ["x", f"w{n}"], [f"{n}0"]),
            helper.make_node("Reshape", [f"{n}0", "split_shape"], [f"{n}1"]),
            helper.make_node(
                "Transpose", [f"{n}1"], [f"{n}2"], perm=[0, 2, 3, 1] if n == "k" else [0, 2, 1, 3]
            ),
        ]
    nodes += [
        helper.make_node("MatMul", ["q2", "k2"], ["scores0"]),
        helper.make_node("Div", ["scores0", "scale"], ["scores"]),
        helper.make_node("Softmax", ["scores"], ["probs"], axis=-1),
        helper.make_node("MatMul", ["probs", "v2"], ["ctx0"]),
        helper.make_node("Transpose", ["ctx0"], ["ctx1"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ctx1", "merge_shape"], ["ctx"]),
        helper.make_node("MatMul", ["ctx", "wo"], ["attn"]),
        helper.make_node("Add", ["attn", "x"], ["res"]),
        helper.make_node("LayerNormalization", ["res", "gamma", "beta"], ["ln"], axis=-1),
        helper.make_node("Gelu", ["ln"], ["y"])
        if False
        else helper.make_node("Erf", ["ln"], ["e"]),
        helper.make_node("Mul", ["ln", "e"], ["y"]),
    ]
    inits = [init(f"w{n}", v) for n, v in w.items()] + [
        init("zero", np.array(0, np.int64)),
        init("one", np.array(1, np.int64)),
        init("ax0", np.array([0], np.int64)),
        init("heads", np.array([h], np.int64)),
        init("hd", np.array([d // h], np.int64)),
        init("scale", np.array(np.sqrt(d // h), np.float32)),
        init("merge_shape", np.array([0, 0, d], np.int64)),
        init("gamma", rng.standard_normal(d).astype(np.float32)),
        init("beta", rng.standard_normal(d).astype(np.float32)),
    ]
    return model_bytes(
        nodes, [vi("x", F, ["batch", "seq", d])], [vi("y", F, ["batch", "seq", d])], inits
    )


def test_transformer_block_matches_onnxruntime():
    data = _transformer_block()
    for shape in ((1, 3, 8), (2, 5, 8)):
        assert_same_as_ort(data, {"x": rng.standard_normal(shape).astype(np.float32)})


def test_symbolic_dims_are_unknown_in_the_signature():
    m = tf.onnx.import_model(_transformer_block())
    assert m.signature.inputs["x"].shape.as_list() == [None, None, 8]
    assert m.opset == 17


CASES = {
    "gemm_trans_alpha_beta": (
        [helper.make_node("Gemm", ["a", "b", "c"], ["y"], transA=1, transB=1, alpha=0.5, beta=2.0)],
        {"a": (3, 2), "b": (4, 3)},
        [init("c", rng.standard_normal((1, 4)).astype(np.float32))],
    ),
    "slice_gather_negative": (
        [
            helper.make_node("Slice", ["a", "st", "en", "ax", "sp"], ["s"]),
            helper.make_node("Gather", ["s", "idx"], ["y"], axis=1),
        ],
        {"a": (4, 6)},
        [
            init("st", np.array([-1, 1], np.int64)),
            init("en", np.array([-1000, 100], np.int64)),
            init("ax", np.array([0, 1], np.int64)),
            init("sp", np.array([-1, 2], np.int64)),
            init("idx", np.array([-1, 0, 1], np.int64)),
        ],
    ),
    "split_concat_pad_tile": (
        [
            helper.make_node("Split", ["a", "sizes"], ["p", "q"], axis=1),
            helper.make_node("Pad", ["p", "pads"], ["pp"], mode="reflect"),
            helper.make_node("Tile", ["q", "reps"], ["qq"]),
            helper.make_node("Concat", ["pp", "qq"], ["y"], axis=1),
        ],
        {"a": (3, 5)},
        [
            init("sizes", np.array([3, 2], np.int64)),
            init("pads", np.array([0, 1, 0, 1], np.int64)),
            init("reps", np.array([1, 2], np.int64)),
        ],
    ),
    "reductions_argmax_topk": (
        [
            helper.make_node("ReduceMean", ["a", "axes"], ["m"], keepdims=0),
            helper.make_node("ReduceL2", ["a"], ["l2"], keepdims=1),
            helper.make_node("ArgMax", ["a"], ["am"], axis=1, select_last_index=1),
            helper.make_node("TopK", ["a", "k"], ["tv", "ti"], axis=0, largest=0),
            helper.make_node("Cast", ["am"], ["amf"], to=F),
            helper.make_node("Cast", ["ti"], ["tif"], to=F),
            helper.make_node("ReduceSum", ["amf"], ["s1"], keepdims=0),
            helper.make_node("ReduceSum", ["tif"], ["s2"], keepdims=0),
            helper.make_node("ReduceSum", ["l2"], ["s3"], keepdims=0),
            helper.make_node("ReduceSum", ["tv"], ["s4"], keepdims=0),
            helper.make_node("Sum", ["s1", "s2", "s3", "s4"], ["total"]),
            helper.make_node("Expand", ["total", "shape"], ["te"]),
            helper.make_node("Add", ["m", "te"], ["y"]),
        ],
        {"a": (4, 3)},
        [
            init("axes", np.array([0], np.int64)),
            init("k", np.array([2], np.int64)),
            init("shape", np.array([3], np.int64)),
        ],
    ),
    "where_clip_einsum_range": (
        [
            helper.make_node("Greater", ["a", "zero"], ["pos"]),
            helper.make_node("Clip", ["a", "lo", "hi"], ["c"]),
            helper.make_node("Where", ["pos", "a", "c"], ["w"]),
            helper.make_node("Einsum", ["w", "w"], ["g"], equation="ij,kj->ik"),
            helper.make_node("Range", ["r0", "r1", "r2"], ["r"]),
            helper.make_node("Cast", ["r"], ["rf"], to=F),
            helper.make_node("Add", ["g", "rf"], ["y"]),
        ],
        {"a": (3, 4)},
        [
            init("zero", np.array(0, np.float32)),
            init("lo", np.array(-0.5, np.float32)),
            init("hi", np.array(0.5, np.float32)),
            init("r0", np.array(0, np.int64)),
            init("r1", np.array(6, np.int64)),
            init("r2", np.array(2, np.int64)),
        ],
    ),
    "flatten_softmax_opset11": (
        [
            helper.make_node("Softmax", ["a"], ["s"], axis=1),
            helper.make_node("Flatten", ["s"], ["y"], axis=2),
        ],
        {"a": (2, 3, 4)},
        [],
    ),
    "batchnorm_global_pool_lrn": (
        [
            helper.make_node("BatchNormalization", ["a", "sc", "bi", "mu", "var"], ["bn"]),
            helper.make_node("LRN", ["bn"], ["l"], size=3),
            helper.make_node("GlobalAveragePool", ["l"], ["y"]),
        ],
        {"a": (2, 3, 4, 4)},
        [
            init("sc", rng.standard_normal(3).astype(np.float32)),
            init("bi", rng.standard_normal(3).astype(np.float32)),
            init("mu", rng.standard_normal(3).astype(np.float32)),
            init("var", rng.random(3).astype(np.float32) + 0.5),
        ],
    ),
    "resize_cubic_then_conv_pool": (
        [
            helper.make_node("Resize", ["a", "", "scales"], ["r"], mode="cubic", exclude_outside=1),
            helper.make_node(
                "Conv",
                ["r", "w"],
                ["c"],
                kernel_shape=[3, 3],
                pads=[1, 0, 1, 2],
                group=2,
                dilations=[2, 1],
                strides=[1, 2],
            ),
            helper.make_node(
                "AveragePool",
                ["c"],
                ["p"],
                kernel_shape=[3, 3],
                pads=[1, 1, 1, 1],
                ceil_mode=1,
                strides=[2, 2],
            ),
            helper.make_node("MaxPool", ["p"], ["y"], kernel_shape=[2, 2], auto_pad="SAME_UPPER"),
        ],
        {"a": (2, 4, 5, 6)},
        [
            init("scales", np.array([1, 1, 1.5, 2], np.float32)),
            init("w", rng.standard_normal((6, 2, 3, 3)).astype(np.float32)),
        ],
    ),
    "conv_transpose_depthwise": (
        [
            helper.make_node(
                "ConvTranspose",
                ["a", "wt"],
                ["t"],
                strides=[2, 2],
                pads=[1, 0, 0, 1],
                output_padding=[1, 1],
            ),
            helper.make_node("Conv", ["t", "dw", "b"], ["y"], kernel_shape=[3, 3], group=3),
        ],
        {"a": (1, 2, 4, 4)},
        [
            init("wt", rng.standard_normal((2, 3, 3, 3)).astype(np.float32)),
            init("dw", rng.standard_normal((6, 1, 3, 3)).astype(np.float32)),
            init("b", rng.standard_normal(6).astype(np.float32)),
        ],
    ),
    "squeeze_unsqueeze_constant_of_shape": (
        [
            helper.make_node("Unsqueeze", ["a", "ax"], ["u"]),
            helper.make_node("Squeeze", ["u", "ax"], ["s"]),
            helper.make_node("Shape", ["s"], ["shp"], start=-1),
            helper.make_node(
                "ConstantOfShape",
                ["shp"],
                ["ones"],
                value=numpy_helper.from_array(np.array([1.5], np.float32)),
            ),
            helper.make_node("Mul", ["s", "ones"], ["y"]),
        ],
        {"a": (2, 3)},
        [init("ax", np.array([-1, 0], np.int64))],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_models_match_onnxruntime(name):
    nodes, shapes, inits = CASES[name]
    opset = 11 if name.endswith("opset11") else 18
    inputs = [vi(n, F, list(s)) for n, s in shapes.items()]
    data = model_bytes(nodes, inputs, [vi("y", F, None)], inits, opset=opset)
    feeds = {n: rng.standard_normal(s).astype(np.float32) for n, s in shapes.items()}
    assert_same_as_ort(data, feeds)


def test_unsupported_operators_are_all_named_at_load():
    nodes = [
        helper.make_node("NoSuchOp", ["x"], ["a"]),
        helper.make_node("Relu", ["a"], ["b"]),
        helper.make_node("AnotherOne", ["b"], ["c"]),
        helper.make_node("NoSuchOp", ["c"], ["d"]),
        helper.make_node("Thing", ["d"], ["y"], domain="com.example"),
    ]
    graph = helper.make_graph(nodes, "g", [vi("x", F, [2])], [vi("y", F, [2])])
    m = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)],
    )
    with pytest.raises(tf.onnx.UnsupportedModelError) as e:
        tf.onnx.import_model(m.SerializeToString())
    assert "3 unsupported operator(s): AnotherOne, NoSuchOp (x2), com.example.Thing" in str(e.value)


def test_old_opsets_use_the_old_operator_versions():
    # Add-6 broadcasts only when asked, aligning B at ``axis`` of A.
    nodes = [helper.make_node("Add", ["x", "b"], ["y"], broadcast=1, axis=1)]
    data = model_bytes(
        nodes, [vi("x", F, [2, 3, 4]), vi("b", F, [3])], [vi("y", F, [2, 3, 4])], opset=6
    )
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    b = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(run_engine(data, {"x": x, "b": b})["y"], x + b[:, None])
    # Concat-1 (axis optional, defaulting to 1) has no row: reported, not misread.
    nodes = [helper.make_node("Concat", ["x", "w"], ["y"])]
    data = model_bytes(
        nodes, [vi("x", F, [2, 3]), vi("w", F, [2, 2])], [vi("y", F, [2, 5])], opset=3
    )
    with pytest.raises(tf.onnx.UnsupportedModelError, match="unsupported operator.*: Concat"):
        tf.onnx.import_model(data)


@pytest.mark.parametrize(
    "mutate,match",
    [
        (lambda b: b[: len(b) - 7], "damaged ONNX model"),
        (lambda b: b"\x0a\xff\xff\xff\xff\x0f" + b, "damaged ONNX model"),
        (lambda b: b"", "empty ONNX model"),
        (lambda b: b"\x08\x07", "no graph"),
    ],
)
def test_damaged_files_raise_format_errors(mutate, match):
    data = model_bytes(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        [vi("x", F, [3])],
        [vi("y", F, [3])],
        [init("w", np.ones(3, np.float32))],
    )
    with pytest.raises(tf.onnx.OnnxFormatError, match=match):
        tf.onnx.import_model(mutate(data))


def test_initializer_size_is_checked_against_its_dims():
    m = decode(
        model_bytes(
            [helper.make_node("Add", ["x", "w"], ["y"])],
            [vi("x", F, [3])],
            [vi("y", F, [3])],
            [init("w", np.ones(3, np.float32))],
        )
    )
    m["graph"]["initializer"][0]["dims"] = [1 << 40]
    with pytest.raises(tf.onnx.OnnxFormatError, match="'w'"):
        tf.onnx.import_model(encode(m))


def _external_model(tmp_path, location, offset=0, length=None, write=True):
    w = np.arange(6, dtype=np.float32)
    if write:
        (tmp_path / "weights.bin").write_bytes(b"\0" * 16 + w.tobytes())
    t = init("w", w)
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (
        ("location", location),
        ("offset", str(16 + offset)),
        ("length", str(length or w.nbytes)),
    ):
        e = t.external_data.add()
        e.key, e.value = k, v
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        "g",
        [vi("x", F, [6])],
        [vi("y", F, [6])],
        [t],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "model.onnx"
    path.write_bytes(m.SerializeToString())
    return path, w


def test_external_data_is_read_from_the_model_directory(tmp_path):
    path, w = _external_model(tmp_path, "weights.bin")
    x = np.ones(6, np.float32)
    np.testing.assert_array_equal(run_engine(path, {"x": x})["y"], x + w)
    np.testing.assert_array_equal(run_engine(tmp_path, {"x": x})["y"], x + w)


@pytest.mark.parametrize(
    "location,kw,match",
    [
        ("../weights.bin", {}, "leaves the model dir"),
        ("/etc/passwd", {}, "leaves the model dir"),
        ("missing.bin", {}, "not found"),
        ("weights.bin", {"offset": 8}, "does not hold"),
        ("weights.bin", {"length": 8}, "does not hold"),
    ],
)
def test_external_data_is_confined_and_size_checked(tmp_path, location, kw, match):
    path, _ = _external_model(tmp_path, location, **kw)
    with pytest.raises(tf.onnx.OnnxFormatError, match=match):
        tf.onnx.import_model(path)


def test_external_data_symlink_out_of_the_directory_is_refused(tmp_path):
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"\0" * 64)
    model_dir = tmp_path / "m"
    model_dir.mkdir()
    os.symlink(outside, model_dir / "weights.bin")
    path, _ = _external_model(model_dir, "weights.bin", write=False)
    with pytest.raises(tf.onnx.OnnxFormatError, match="leaves the model dir"):
        tf.onnx.import_model(path)


def test_external_data_needs_a_path(tmp_path):
    path, _ = _external_model(tmp_path, "weights.bin")
    with pytest.raises(tf.onnx.OnnxFormatError, match="load the model from a path"):
        tf.onnx.import_model(path.read_bytes())


def test_initializers_as_variables():
    data = model_bytes(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        [vi("x", F, ["n", 3])],
        [vi("y", F, ["n", 2])],
        [init("w", np.arange(6, dtype=np.float32).reshape(3, 2))],
    )
    m = tf.onnx.import_model(data, initializers_as_variables=True)
    assert [v.op.name for v in m.graph.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)] == ["w"]
    assert_same_as_ort(data, {"x": np.ones((2, 3), np.float32)}, initializers_as_variables=True)


def test_engine_load_fills_a_session_like_saved_model_load(tmp_path):
    data = _transformer_block()
    (tmp_path / "model.onnx").write_bytes(data)
    with tf.Session(graph=tf.Graph()) as sess:
        meta = tf.onnx.load(sess, str(tmp_path))
        sig = meta.signature_def["serving_default"]
        x = rng.standard_normal((1, 2, 8)).astype(np.float32)
        y = sess.run(sig.outputs["y"].name, {sig.inputs["x"].name: x})
    np.testing.assert_allclose(y, run_ort(data, {"x": x})["y"], rtol=1e-5, atol=1e-5)


def test_version_table_covers_the_installed_onnx():
    """Every ONNX version of a mapped operator was looked at (a new one fails this test)."""
    history = {}
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain in ("", "ai.onnx"):
            history.setdefault(s.name, set()).add(s.since_version)
    missing = {}
    for op_type, versions in mapping.VERSIONS.items():
        if op_type in ORT_DEFAULT_DOMAIN_OPS:
            continue
        assert op_type in history, op_type
        active_at_7 = max((v for v in history[op_type] if v <= 7), default=None)
        expected = {v for v in history[op_type] if v > 7} | ({active_at_7} - {None})
        if not expected <= set(versions):
            missing[op_type] = sorted(expected - set(versions))
    assert not missing, f"ONNX operator versions not reviewed: {missing}"


def test_cli_inspect_shows_onnx_models(tmp_path, capsys):
    from engine.cli import main

    (tmp_path / "model.onnx").write_bytes(_transformer_block())
    assert main(["inspect", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "opset 17" in out
    assert "input  'x'" in out and "float32  [?, ?, 8]" in out
    assert "MatMul" in out and "unsupported operators: none" in out
    nodes = [
        helper.make_node("Foo", ["x"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "g", [vi("x", F, [2])], [vi("y", F, [2])])
    bad = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    (tmp_path / "bad.onnx").write_bytes(bad.SerializeToString())
    assert main(["inspect", str(tmp_path / "bad.onnx")]) == 0
    assert "unsupported operators: Foo (x1)" in capsys.readouterr().out
    assert main(["run", str(tmp_path / "model.onnx"), "--input", "x=[[[0,0,0,0,0,0,0,1]]]"]) == 0
    assert "y (dtype float32, shape [1, 1, 8])" in capsys.readouterr().out


def test_batch_norm_after_conv_is_folded_into_the_conv():
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "sc", "bi", "mu", "var"], ["y"], epsilon=1e-3),
    ]
    inits = [
        init("w", rng.standard_normal((4, 3, 3, 3)).astype(np.float32)),
        init("b", rng.standard_normal(4).astype(np.float32)),
        init("sc", rng.standard_normal(4).astype(np.float32)),
        init("bi", rng.standard_normal(4).astype(np.float32)),
        init("mu", rng.standard_normal(4).astype(np.float32)),
        init("var", rng.random(4).astype(np.float32) + 0.5),
    ]
    data = model_bytes(nodes, [vi("x", F, ["n", 3, 6, 6])], [vi("y", F, ["n", 4, 6, 6])], inits)
    m = tf.onnx.import_model(data)
    types = {op.type for op in m.graph.get_operations()}
    assert "Conv2D" in types and "Rsqrt" not in types
    assert_same_as_ort(data, {"x": rng.standard_normal((2, 3, 6, 6)).astype(np.float32)})


def test_if_and_loop_match_onnxruntime():
    then_g = helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["t"])], "then", [], [vi("t", F, [3])]
    )
    else_g = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["e"])], "else", [], [vi("e", F, [3])]
    )
    body = helper.make_graph(
        [
            helper.make_node("Add", ["acc_in", "branch"], ["acc_out"]),
            helper.make_node("Cast", ["i"], ["fi"], to=F),
            helper.make_node("Mul", ["acc_out", "fi"], ["scan"]),
            helper.make_node("Identity", ["c_in"], ["c_out"]),
        ],
        "body",
        [vi("i", I64, []), vi("c_in", TensorProto.BOOL, []), vi("acc_in", F, [3])],
        [vi("c_out", TensorProto.BOOL, []), vi("acc_out", F, [3]), vi("scan", F, [3])],
    )
    nodes = [
        helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
        helper.make_node("Greater", ["s", "zero"], ["p"]),
        helper.make_node("If", ["p"], ["branch"], then_branch=then_g, else_branch=else_g),
        helper.make_node("Loop", ["trips", "", "x"], ["acc", "y"], body=body),
    ]
    inits = [
        init("two", np.array(2, np.float32)),
        init("zero", np.array(0, np.float32)),
        init("trips", np.array(4, np.int64)),
    ]
    data = model_bytes(nodes, [vi("x", F, [3])], [vi("acc", F, [3]), vi("y", F, [4, 3])], inits)
    for x in (np.array([1, 2, 3], np.float32), np.array([-1, -2, 0.5], np.float32)):
        assert_same_as_ort(data, {"x": x})


def test_unsupported_operators_inside_subgraphs_are_reported():
    then_g = helper.make_graph(
        [helper.make_node("Mystery", ["x"], ["t"])], "then", [], [vi("t", F, [3])]
    )
    else_g = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["e"])], "else", [], [vi("e", F, [3])]
    )
    nodes = [
        helper.make_node("Cast", ["x"], ["p"], to=TensorProto.BOOL),
        helper.make_node("ReduceMin", ["p"], ["q"], keepdims=0),
        helper.make_node("If", ["q"], ["y"], then_branch=then_g, else_branch=else_g),
    ]
    data = model_bytes(nodes, [vi("x", F, [3])], [vi("y", F, [3])], opset=17)
    with pytest.raises(tf.onnx.UnsupportedModelError, match=r"\): Mystery"):
        tf.onnx.import_model(data)


def _with_conv_outputs(path: Path) -> tuple[bytes, list[str]]:
    """The model with the outputs of its first and middle Conv added as graph outputs.

    The light models' weights are constant-filled, so every class gets the same logit and
    the softmax output is 0.001 everywhere whatever the input (and whatever a broken kernel
    computes): the activations inside are what tell a right run from a wrong one."""
    model = onnx.load(str(path))
    convs = [n for n in model.graph.node if n.op_type == "Conv"]
    inner = [convs[0].output[0], convs[len(convs) // 2].output[0]]
    model.graph.output.extend(vi(name, F, None) for name in inner)
    return model.SerializeToString(), inner


@pytest.mark.parametrize("name", ["light_inception_v1", "light_resnet50"])
def test_real_architectures_from_the_onnx_wheel_match_onnxruntime(name):
    """The wheel's 'light' models: real ImageNet architectures with constant-filled weights."""
    path = Path(onnx.__file__).parent / "backend/test/data/light" / f"{name}.onnx"
    if not path.is_file():
        pytest.skip(f"{path.name} is not in this onnx wheel")
    data, inner = _with_conv_outputs(path)
    m = tf.onnx.import_model(data)
    (name_in,) = m.signature.inputs
    shape = m.signature.inputs[name_in].shape.as_list()
    draw = np.random.default_rng(5)  # its own generator: the same inputs in any test order
    x, other = (draw.random(shape).astype(np.float32) for _ in range(2))
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    want = dict(zip(names, sess.run(None, {name_in: x})))
    elsewhere = dict(zip(names, sess.run(None, {name_in: other})))
    # float32 sums of many products: an absolute error in proportion to each output's scale.
    atol = {k: 1e-5 * float(np.abs(v).max()) for k, v in want.items()}
    for k in inner:  # the compared activations depend on the input beyond the tolerance
        assert not np.allclose(elsewhere[k], want[k], rtol=1e-4, atol=atol[k]), k
    got = run_engine(data, {name_in: x})
    assert sorted(got) == sorted(want)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-4, atol=atol[k], err_msg=k)


def test_scan_matches_onnxruntime():
    body = helper.make_graph(
        [
            helper.make_node("Add", ["sum_in", "row"], ["sum_out"]),
            helper.make_node("Mul", ["sum_out", "row"], ["prod"]),
        ],
        "body",
        [vi("sum_in", F, [3]), vi("row", F, [3])],
        [vi("sum_out", F, [3]), vi("prod", F, [3])],
    )
    nodes = [
        helper.make_node(
            "Scan",
            ["init", "xs"],
            ["final", "ys"],
            body=body,
            num_scan_inputs=1,
            scan_input_axes=[1],
            scan_input_directions=[1],
            scan_output_axes=[1],
        )
    ]
    data = model_bytes(
        nodes,
        [vi("init", F, [3]), vi("xs", F, [3, 5])],
        [vi("final", F, [3]), vi("ys", F, [3, 5])],
    )
    feeds = {
        "init": rng.standard_normal(3).astype(np.float32),
        "xs": rng.standard_normal((3, 5)).astype(np.float32),
    }
    assert_same_as_ort(data, feeds)


def test_mutated_models_fail_with_format_errors_only():
    """Random byte changes to a valid model: every failure is an OnnxFormatError (or its
    UnsupportedModelError), never another exception, a hang or a huge allocation."""
    data = _transformer_block()
    fuzz = np.random.default_rng(0)
    for _ in range(100):
        d = bytearray(data)
        for _ in range(int(fuzz.integers(1, 4))):
            d[int(fuzz.integers(0, len(d)))] = int(fuzz.integers(0, 256))
        try:
            tf.onnx.import_model(bytes(d))
        except tf.onnx.OnnxFormatError:
            pass
