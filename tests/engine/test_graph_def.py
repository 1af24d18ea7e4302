"""Graph serialization: every op round-trips bit for bit; import_graph_def semantics."""

import numpy as np
import pytest

import engine as tf
from engine.framework import registry
from engine.saving.graph_def import GraphDef, GraphDefError
from tests.engine import (
    test_array_grads,
    test_array_ops,
    test_bitcast,
    test_check_ops_more,
    test_conv3d,
    test_conv_ops,
    test_data,
    test_decode_ops,
    test_decompositions,
    test_detection_ops,
    test_embedding,
    test_image_codec,
    test_image_more,
    test_image_ops,
    test_input_pipeline,
    test_linalg_ops,
    test_losses,
    test_math_elementwise,
    test_math_more,
    test_nn_grads,
    test_nn_ops,
    test_onnx_detection,
    test_onnx_ops,
    test_optimizers_more,
    test_parsing_ops,
    test_partition_ops,
    test_queues,
    test_ragged_text,
    test_readers,
    test_reduction_grads,
    test_reduction_ops,
    test_segment_ops,
    test_sparse_ops,
    test_sparse_segment_ops,
    test_strings_more,
    test_summary,
    test_tensor_list,
    test_tfrecord_io,
)
from tests.engine.formats import test_tf_audio_ops, test_tf_legacy_ops

# Ops that never appear in a saved graph: py_func refuses to serialize (tested below) and
# Arg only exists inside function bodies (it is covered through If/While); the Test* ops are
# registered by tests.
NOT_ROUND_TRIPPED = {
    "PyFunc",
    "PyFuncStateless",
    "TestOpWithoutGradient",
    "TestOpDeclaredNotDifferentiable",
}
_VOCAB = str(__import__("pathlib").Path(__file__).parent / "lookup_vocab.txt")


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _forward_case(case):
    def build():
        ins = [tf.constant(v) for v in case.inputs]
        return _as_list(case.build(*ins)), {}, []

    return build


def _gradient_case(case):
    def build():
        ins = [
            tf.constant(np.asarray(v, np.float64) if np.asarray(v).dtype.kind == "f" else v)
            for v in case.inputs
        ]
        out = _as_list(case.build(*ins))[0]
        grads = tf.gradients(out, [ins[i] for i in case.grad_inputs])
        return [out] + [g for g in grads if g is not None], {}, []

    return build


def _variables_and_training():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2) / 10, name="w")
    counter = tf.Variable(0, name="counter")
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w)))
    trains = [
        opt.minimize(loss, name=f"train_{i}")
        for i, opt in enumerate(
            [
                tf.train.GradientDescentOptimizer(0.1),
                tf.train.MomentumOptimizer(0.1, 0.9),
                tf.train.AdamOptimizer(0.1),
                tf.train.AdagradOptimizer(0.1),
                tf.train.RMSPropOptimizer(0.1),
                tf.train.RMSPropOptimizer(0.1, centered=True),
            ]
        )
    ]
    init = tf.global_variables_initializer()
    fetches = [
        loss,
        tf.assign_add(counter, 2),
        tf.assign_sub(counter, 1),
        tf.is_variable_initialized(w),
        tf.report_uninitialized_variables(),
        w,
    ]
    feed = {"x:0": np.ones((2, 3), np.float32)}
    return fetches, feed, [init.name] + [t.name for t in trains]


def _random_ops():
    return (
        [
            tf.random_normal([3], seed=1),
            tf.random_uniform([2, 2], seed=2),
            tf.truncated_normal([4], seed=3),
            tf.random_uniform([3], 0, 10, tf.int32, seed=4),
        ],
        {},
        [],
    )


def _control_flow():
    x = tf.placeholder(tf.float32, [], name="x")
    c = tf.cond(x > 0, lambda: x * 2.0, lambda: x - 1.0)
    _, y = tf.while_loop(lambda i, y: i < 5, lambda i, y: (i + 1, y * x), [0, tf.constant(1.0)])
    g = tf.gradients(y + c, x)[0]
    ta = tf.TensorArray(tf.float32, size=3).unstack(tf.stack([x, x + 1, x + 2]))
    ta2 = tf.TensorArray(tf.float32, size=2).scatter([1, 0], tf.stack([[x], [-x]]))
    ta3 = tf.TensorArray(tf.float32, size=2).split(tf.stack([x, x, x]), [1, 2])
    ta4 = tf.TensorArray(tf.float32, size=1).write(0, x * 3.0)
    tas = [
        ta.stack(),
        ta.read(1),
        ta.gather([2, 0]),
        ta.size(),
        ta2.concat(),
        ta3.read(1),
        ta4.read(0),
    ]
    through = (
        tf.reduce_sum(ta.stack())
        + ta.read(1)
        + tf.reduce_sum(ta.gather([2, 0]))
        + tf.reduce_sum(ta3.read(1))
        + ta4.read(0)
        + tf.reduce_sum(ta2.read(0))
    )
    tas.append(tf.gradients(through, x)[0])
    return [c, y, g] + tas, {"x:0": np.float32(1.5)}, []


def _logging_and_misc():
    x = tf.placeholder_with_default(tf.constant([1.0, 2.0]), [None], name="x")
    printed = tf.Print(x, [x], message="value: ")
    with tf.control_dependencies([tf.assert_positive(x), tf.no_op()]):
        y = tf.identity(printed * 2.0)
    p = tf.placeholder(tf.float32, [2], name="p")
    top = tf.nn.in_top_k(tf.constant([[0.1, 0.9], [0.5, 0.2]]), [1, 1], 1)
    fetches = [y, p + 1.0, tf.invert_permutation([2, 0, 1]), tf.rank(p), top]
    return fetches, {"p:0": [1.0, 2.0]}, []


def _lookup_tables():
    keys = tf.constant(np.array([b"a", b"b"], dtype=object))
    t = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(keys, tf.constant(np.array([3, 4], np.int64))), -1
    )
    vocab = tf.lookup.StaticHashTable(
        tf.lookup.TextFileInitializer(
            tf.constant(_VOCAB), tf.string, -2, tf.int64, -1, delimiter=" "
        ),
        -7,
    )
    words = tf.constant(np.array([b"b", b"x", b"a"], dtype=object))
    init = tf.tables_initializer()
    return [t.lookup(words), vocab.lookup(words), t.size()], {}, [init.name]


def _string_ops():
    s = tf.constant(np.array([b"12.5", b"-3"], dtype=object))
    b64 = tf.constant(np.array([b"aGVsbG8", b"d29ybGQ_"], dtype=object))
    return (
        [
            tf.string_to_number(s),
            tf.as_string(tf.constant([1.5, 2.0]), precision=2),
            tf.decode_base64(b64),
            tf.substr(s, 1, 2),
        ],
        {},
        [],
    )


def _resizes():
    images = tf.constant(np.arange(24, dtype=np.float32).reshape(1, 3, 4, 2))
    return (
        [
            tf.image.resize_bilinear(images, (5, 3), half_pixel_centers=True),
            tf.image.resize_nearest_neighbor(images, (2, 7), align_corners=True),
        ],
        {},
        [],
    )


def _non_max_suppressions():
    boxes = tf.constant(test_image_ops._BOXES)
    scores = tf.constant(test_image_ops._SCORES)
    padded = tf.image.non_max_suppression_padded(boxes, scores, 4, 0.5, 0.7, True)
    soft = tf.image.non_max_suppression_with_scores(boxes, scores, 5, 0.9, soft_nms_sigma=0.5)
    return [tf.image.non_max_suppression(boxes, scores, 3), *padded, *soft], {}, []


def _set_ops():
    """Unique, UniqueWithCounts, ListDiff, Roll and EnsureShape (``engine/ops/set_ops.py``)."""
    x = tf.constant(np.array([3, 1, 3, 2], np.int64))
    fetches = [
        *tf.unique(x, out_idx=tf.int64),
        *tf.unique_with_counts(x),
        *tf.setdiff1d(x, tf.constant(np.array([1], np.int64))),
        tf.roll(tf.constant(np.arange(24.0).reshape(2, 3, 4)), [1, -2], [0, 2]),
        tf.ensure_shape(tf.placeholder_with_default(x, [None]), [4]),
        tf.repeat(tf.constant([[1.0, 2.0]]), [2, 3], axis=1),
    ]
    return fetches, {}, []


def _lrn_and_random_more():
    """LRN, LRNGrad (``engine/ops/lrn.py``), RandomShuffle and Multinomial
    (``engine/ops/random_more.py``)."""
    x = tf.constant(np.random.default_rng(3).standard_normal((2, 3, 3, 8)).astype(np.float32))
    y = tf.nn.lrn(x, 3, 1.0, 0.001 / 9.0, 0.75)
    fetches = [
        y,
        tf.gradients(tf.reduce_sum(y * y), x)[0],
        tf.random_shuffle(tf.range(10), seed=4),
        tf.multinomial(tf.log([[0.2, 0.8], [0.5, 0.5]]), 6, seed=5, output_dtype=tf.int32),
    ]
    return fetches, {}, []


SPECIAL = {
    "non_max_suppressions": _non_max_suppressions,
    "detection": test_detection_ops.round_trip_builder,
    "onnx_detection": test_onnx_detection.round_trip_builder,
    "set_ops": _set_ops,
    "resizes": _resizes,
    "lookup_tables": _lookup_tables,
    "string_ops": _string_ops,
    "variables_and_training": _variables_and_training,
    "random": _random_ops,
    "control_flow": _control_flow,
    "logging_misc": _logging_and_misc,
    "summaries": test_summary.round_trip_builder,
    "candidate_samplers": test_embedding.round_trip_builder,
    "datasets": test_data.round_trip_builder,
    "tensor_lists": test_tensor_list.round_trip_builder,
    "parse_examples": test_parsing_ops.round_trip_builder,
    "segments": test_segment_ops.round_trip_builder,
    "sparse": test_sparse_ops.round_trip_builder,
    "sparse_segments_and_feature_columns": test_sparse_segment_ops.round_trip_builder,
    "lrn_and_random_more": _lrn_and_random_more,
    "image_colour": test_image_more.round_trip_builder,
    "strings_more": test_strings_more.round_trip_builder,
    "optimizers_more": test_optimizers_more.round_trip_builder,
    "decode_ops": test_decode_ops.round_trip_builder,
    "image_codec": test_image_codec.round_trip_builder,
    "file_datasets": test_tfrecord_io.round_trip_builder,
    "bitcast": test_bitcast.round_trip_builder,
    "check_ops_more": test_check_ops_more.round_trip_builder,
    "queues": test_queues.round_trip_builder,
    "input_pipeline": test_input_pipeline.round_trip_builder,
    "readers": test_readers.round_trip_builder,
    "ragged_text": test_ragged_text.round_trip_builder,
    "tf_legacy_raw_ops": test_tf_legacy_ops.round_trip_builder,
    "audio": test_tf_audio_ops.round_trip_builder,
}


def _all_builders():
    out = {}
    for mod in (
        test_math_elementwise,
        test_math_more,
        test_array_ops,
        test_reduction_ops,
        test_nn_ops,
        test_onnx_ops,
        test_conv_ops,
        test_conv3d,
        test_linalg_ops,
        test_decompositions,
        test_partition_ops,
    ):
        for case in mod.CASES:
            out[f"{mod.__name__.rsplit('.', 1)[1]}:{case.id}"] = _forward_case(case)
    for mod, attr in (
        (test_math_elementwise, "GRAD_CASES"),
        (test_array_grads, "CASES"),
        (test_reduction_grads, "GRAD_CASES"),
        (test_nn_grads, "GRAD_CASES"),
        (test_losses, "GRAD_CASES"),
        (test_conv_ops, "GRAD_CASES"),
        (test_conv3d, "GRAD_CASES"),
        (test_segment_ops, "GRAD_CASES"),
        (test_partition_ops, "GRAD_CASES"),
        (test_linalg_ops, "GRAD_CASES"),
        (test_decompositions, "GRAD_CASES"),
        (test_math_more, "GRAD_CASES"),
        (test_sparse_segment_ops, "GRAD_CASES"),
    ):
        for case in getattr(mod, attr):
            if case.grad_inputs:
                out[f"{mod.__name__.rsplit('.', 1)[1]}:{case.id}"] = _gradient_case(case)
    for name, fn in SPECIAL.items():
        out[f"special:{name}"] = lambda fn=fn: fn()
    return out


BUILDERS = _all_builders()


def _round_trip(build):
    g1 = tf.Graph()
    with g1.as_default():
        fetches, feed, setup = build()
    data = g1.as_graph_def().to_bytes()
    g2 = tf.Graph()
    with g2.as_default():
        tf.import_graph_def(GraphDef.from_bytes(data), name="")
    names = [f.name for f in fetches]
    results = []
    for g in (g1, g2):
        with tf.Session(graph=g) as sess:
            for target in setup[:1]:
                sess.run(target, feed)
            for target in setup[1:]:
                sess.run(target, feed)
            results.append(sess.run(names, feed))
    return g1, names, results, g2


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_round_trip_is_bit_identical(name):
    g1, names, (a, b), g2 = _round_trip(BUILDERS[name])
    if not names:  # nothing to fetch (an unstack of zero rows): the same operations at least
        ops = [(op.name, op.type, len(op.outputs)) for op in g1.get_operations()]
        assert ops and [(op.name, op.type, len(op.outputs)) for op in g2.get_operations()] == ops
    for n, va, vb in zip(names, a, b):
        if va is None:
            assert vb is None
            continue
        va, vb = np.asarray(va), np.asarray(vb)
        assert va.dtype == vb.dtype and va.shape == vb.shape, n
        if va.dtype.kind == "O":
            assert va.tolist() == vb.tolist(), n
        else:
            assert va.tobytes() == vb.tobytes(), f"{name}: {n} differs after the round trip"


def _op_types(graph, into):
    for op in graph.get_operations():
        into.add(op.type)
        for v in op._attrs.values():
            if getattr(v, "_is_function_graph", False):
                _op_types(v, into)


def test_every_registered_op_is_round_tripped():
    seen = set()
    for build in BUILDERS.values():
        g = tf.Graph()
        with g.as_default():
            build()
        _op_types(g, seen)
    missing = set(registry.registered_types()) - seen - NOT_ROUND_TRIPPED
    assert not missing, f"ops without a round-trip case: {sorted(missing)}"


def test_py_func_cannot_be_exported_and_says_which_op():
    x = tf.constant([1.0])
    tf.py_func(lambda v: v * 2, [x], tf.float32, name="my_python_fn")
    with pytest.raises(ValueError, match="my_python_fn.*PyFunc"):
        tf.get_default_graph().as_graph_def()


# -- import_graph_def semantics ---------------------------------------------------------------


def _small_graph_def():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None], name="x")
        tf.multiply(x, 2.0, name="y")
    return g.as_graph_def()


def test_import_prefixes_input_map_and_return_elements():
    gd = _small_graph_def()
    a = tf.constant([1.0, 2.0], name="a")
    y, y_op = tf.import_graph_def(gd, input_map={"x:0": a}, return_elements=["y:0", "y"])
    assert y.name == "import/y:0" and y_op.name == "import/y" and y.shape.as_list() == [2]
    (y2,) = tf.import_graph_def(gd, return_elements=["y:0"])
    assert y2.name == "import_1/y:0" and y2.shape.as_list() == [None]
    (y3,) = tf.import_graph_def(gd, name="", return_elements=["y:0"])
    assert y3.name == "y:0"
    (y4,) = tf.import_graph_def(gd, name="scoped", input_map={"x": a}, return_elements=["y:0"])
    assert y4.name == "scoped/y:0"
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y), [2.0, 4.0])
        np.testing.assert_array_equal(sess.run(y4), [2.0, 4.0])
    assert tf.import_graph_def(gd) is None


def test_import_errors():
    gd = _small_graph_def()
    with pytest.raises(ValueError, match=r"not found in graph_def: \[zz:0\]"):
        tf.import_graph_def(gd, input_map={"zz:0": tf.constant(1.0)})
    with pytest.raises(ValueError, match="Requested return tensor 'nope:0' not found"):
        tf.import_graph_def(gd, return_elements=["nope:0"])
    with pytest.raises(ValueError, match="Requested return operation 'nope' not found"):
        tf.import_graph_def(gd, return_elements=["nope"])
    with pytest.raises(TypeError, match="GraphDef"):
        tf.import_graph_def({"nodes": []})


def _doc_with(mutate):
    gd = _small_graph_def()
    doc = gd._doc
    mutate(doc)
    import msgpack

    return msgpack.packb(doc, use_bin_type=True)


def test_graph_def_decoding_errors():
    def unknown_op(doc):
        doc["nodes"][1]["op"] = "FancyOp"

    def future(doc):
        doc["version"] = 99

    def bad_input(doc):
        doc["nodes"][1]["inputs"] = ["ghost:0"]

    with pytest.raises(GraphDefError, match="not registered 'FancyOp'"):
        tf.import_graph_def(GraphDef.from_bytes(_doc_with(unknown_op)))
    with pytest.raises(GraphDefError, match="newer than the supported"):
        GraphDef.from_bytes(_doc_with(future))
    with pytest.raises(GraphDefError, match="unknown input node 'ghost'"):
        tf.import_graph_def(GraphDef.from_bytes(_doc_with(bad_input)))
    with pytest.raises(GraphDefError, match="not valid msgpack"):
        GraphDef.from_bytes(b"\xc1\x00garbage")
    with pytest.raises(GraphDefError, match="not a flowserve.graph"):
        GraphDef.from_bytes(b"\x80")


def test_graph_def_listing_counts_and_write_graph(tmp_path):
    gd = _small_graph_def()
    assert gd.op_counts() == {"Const": 1, "Mul": 1, "Placeholder": 1}
    nodes = {n.name: n for n in gd.node}
    assert nodes["y"].op == "Mul" and nodes["y"].input == ["x:0", "y/y:0"]
    assert nodes["x"].attr["dtype"] == tf.float32
    path = tf.train.write_graph(gd, str(tmp_path), "g.msgpack", as_text=False)
    assert GraphDef.from_bytes(open(path, "rb").read()).op_counts() == gd.op_counts()
    text = tf.train.write_graph(gd, str(tmp_path), "g.txt")
    assert 'name: "y"' in open(text).read() and 'op: "Mul"' in open(text).read()


def test_control_inputs_devices_and_attrs_survive():
    g = tf.Graph()
    with g.as_default():
        a = tf.constant(1.0, name="a")
        with tf.device("/cpu:0"), tf.control_dependencies([a]):
            b = tf.constant(2.0, name="b")
        tf.cast(b, tf.int32, name="c")
    g2 = tf.Graph()
    with g2.as_default():
        tf.import_graph_def(g.as_graph_def(), name="")
    b2 = g2.get_operation_by_name("b")
    assert [c.name for c in b2.control_inputs] == ["a"]
    assert b2.device == "/device:CPU:0"
    assert g2.get_operation_by_name("c").get_attr("DstT") == tf.int32
