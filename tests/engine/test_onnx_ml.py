"""ai.onnx.ml models: scikit-learn pipelines exported by skl2onnx (recorded with onnxruntime's
outputs by ``tests/engine/fixtures/make_sklearn_onnx_fixtures.py``), checked against the
recording and against onnxruntime itself on fresh inputs, plus single-operator models built
with onnx.helper for the attribute forms the fixtures do not reach."""

from pathlib import Path

import numpy as np
import pytest

import engine as tf
from engine.formats.onnx import mapping
from engine.formats.onnx.importer import summarize

onnx = pytest.importorskip("onnx", reason="test models are built with onnx.helper")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the oracle")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sklearn_onnx"
NAMES = sorted(p.stem for p in FIXTURES.glob("*.onnx"))
F, I64, S, D = TensorProto.FLOAT, TensorProto.INT64, TensorProto.STRING, TensorProto.DOUBLE
ML = "ai.onnx.ml"
rng = np.random.default_rng(5)


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def ml_model(nodes, inputs, outputs, ml_opset=3, opset=17) -> bytes:
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    imports = [helper.make_opsetid("", opset), helper.make_opsetid(ML, ml_opset)]
    m = helper.make_model(graph, opset_imports=imports)
    m.ir_version = 8
    return m.SerializeToString()


def run_engine(data, feeds) -> dict:
    m = tf.onnx.import_model(data)
    sig = m.signature
    with tf.Session(graph=m.graph) as sess:
        out = sess.run(
            {k: sig.outputs[k].name for k in sig.outputs},
            {sig.inputs[k].name: v for k, v in feeds.items()},
        )
    return {k: _plain(v) for k, v in out.items()}


def run_ort(data, feeds) -> dict:
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    out = {}
    for meta, value in zip(sess.get_outputs(), sess.run(None, feeds)):
        if isinstance(value, list):  # ZipMap: rows of {label: probability}, in class order
            value = np.array([list(row.values()) for row in value], dtype=np.float32)
        out[meta.name] = _plain(np.asarray(value))
    return out


def _plain(a: np.ndarray) -> np.ndarray:
    """String tensors (bytes from the engine, str from onnxruntime) as numpy unicode."""
    if a.dtype == object:
        return np.array([v.decode() if isinstance(v, bytes) else v for v in a.ravel()]).reshape(
            a.shape
        )
    return a


def assert_outputs(got: dict, want: dict, atol=1e-5):
    assert got.keys() == want.keys()
    for k, w in want.items():
        g = got[k]
        assert g.shape == w.shape, f"{k}: shape {g.shape}, expected {w.shape}"
        if w.dtype.kind == "f":
            assert g.dtype == w.dtype, k
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=atol, err_msg=k)
        else:
            assert g.dtype.kind == w.dtype.kind, f"{k}: {g.dtype} vs {w.dtype}"
            np.testing.assert_array_equal(g, w, err_msg=k)


def assert_same_as_ort(data, feeds, atol=1e-5):
    assert_outputs(run_engine(data, feeds), run_ort(data, feeds), atol)


# -----------------------------------------------------------------------------------------
# skl2onnx fixtures
# -----------------------------------------------------------------------------------------


def _recorded_feeds(recording) -> dict:
    feeds = {}
    for k in recording.files:
        if k.startswith("in_"):
            v = recording[k]
            feeds[k[3:]] = v.astype(object) if v.dtype.kind == "U" else v
    return feeds


def test_fixtures_are_small_and_say_where_they_come_from():
    assert len(NAMES) >= 20
    assert sum(p.stat().st_size for p in FIXTURES.iterdir()) < 2 << 20
    recording = np.load(FIXTURES / "tree_classifier.npz", allow_pickle=False)
    assert {"sklearn_version", "skl2onnx_version", "onnxruntime_version"} <= set(recording.files)


@pytest.mark.parametrize("name", NAMES)
def test_sklearn_models_match_the_recording(name):
    recording = np.load(FIXTURES / f"{name}.npz", allow_pickle=False)
    got = run_engine((FIXTURES / f"{name}.onnx").read_bytes(), _recorded_feeds(recording))
    want = {k[4:]: recording[k] for k in recording.files if k.startswith("out_")}
    assert_outputs(got, want)


def _fresh_like(value: np.ndarray, rows: int) -> np.ndarray:
    """New random values shaped like a recorded input (rows changed), of the same kind."""
    shape = (rows,) + value.shape[1:]
    if value.dtype.kind == "U":
        pool = np.unique(value).tolist() + ["never-seen"]
        return rng.choice(np.array(pool, dtype=object), size=shape)
    out = (rng.standard_normal(shape) * 2 + np.nanmean(value)).astype(value.dtype)
    flat = value.reshape(value.shape[0], -1)
    for j in range(flat.shape[1]):
        column = flat[:, j][~np.isnan(flat[:, j])]
        if np.all(column == np.round(column)):  # a categorical code column
            codes = rng.integers(column.min() - 1, column.max() + 2, rows)
            out.reshape(rows, -1)[:, j] = codes
    out.reshape(rows, -1)[rng.random(rows) < 0.1, 0] = np.nan  # the imputer's missing values
    return out


@pytest.mark.parametrize("name", NAMES)
def test_sklearn_models_match_onnxruntime_on_fresh_inputs(name):
    recording = np.load(FIXTURES / f"{name}.npz", allow_pickle=False)
    data = (FIXTURES / f"{name}.onnx").read_bytes()
    feeds = {k: _fresh_like(recording[f"in_{k}"], 57) for k in _recorded_feeds(recording)}
    if name != "preprocess":  # only the imputer pipeline is meant to see NaN
        feeds = {k: np.nan_to_num(v) if v.dtype.kind == "f" else v for k, v in feeds.items()}
    assert_same_as_ort(data, feeds)


def test_zipmap_output_is_the_probability_tensor():
    data = (FIXTURES / "logreg_binary_zipmap.onnx").read_bytes()
    m = tf.onnx.import_model(data)
    assert m.signature.outputs["output_probability"].dtype == tf.float32
    x = rng.standard_normal((5, 4)).astype(np.float32)
    got = run_engine(data, {"X": x})
    ort_maps = ort.InferenceSession(data).run(None, {"X": x})[1]
    assert list(ort_maps[0]) == [0, 1]  # columns in class order
    np.testing.assert_allclose(got["output_probability"][:, 1], [r[1] for r in ort_maps], 1e-5)
    outputs = dict((n, t) for n, t, _ in summarize(data).outputs)
    assert outputs["output_probability"] == "float32 (ZipMap probabilities)"


# -----------------------------------------------------------------------------------------
# Domains: the separate table, its opset, the unsupported report
# -----------------------------------------------------------------------------------------


def test_unsupported_ml_operators_are_named_with_their_domain():
    nodes = [
        helper.make_node("Scaler", ["x"], ["a"], domain=ML, scale=[2.0]),
        helper.make_node("NoSuchMlOp", ["a"], ["b"], domain=ML),
        helper.make_node("DictVectorizer", ["b"], ["c"], domain=ML),
        helper.make_node("Thing", ["c"], ["y"], domain="com.example"),
    ]
    data = ml_model(nodes, [vi("x", F, [2, 2])], [vi("y", F, [2, 2])])
    with pytest.raises(tf.onnx.UnsupportedModelError) as e:
        tf.onnx.import_model(data)
    message = str(e.value)
    assert (
        "3 unsupported operator(s): ai.onnx.ml.DictVectorizer, ai.onnx.ml.NoSuchMlOp, "
        "com.example.Thing" in message
    )


def test_each_domain_reads_its_own_opset_version():
    # The tree ensembles were removed at ai.onnx.ml opset 5: the same node is reported there.
    node = helper.make_node(
        "TreeEnsembleRegressor", ["x"], ["y"], domain=ML, **_forest_attrs(1, 1, 2, "target")
    )
    for ml_opset, ok in ((1, True), (3, True), (5, False)):
        data = ml_model([node], [vi("x", F, [None, 2])], [vi("y", F, [None, 1])], ml_opset)
        if ok:
            assert_same_as_ort(data, {"x": rng.standard_normal((4, 2)).astype(np.float32)})
        else:
            with pytest.raises(tf.onnx.UnsupportedModelError, match="ai.onnx.ml.TreeEnsemble"):
                tf.onnx.import_model(data)
    # An ML node without an ai.onnx.ml import is unsupported, default ops still convert.
    graph = helper.make_graph([node], "g", [vi("x", F, [None, 2])], [vi("y", F, [None, 1])])
    bare = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(tf.onnx.UnsupportedModelError, match="ai.onnx.ml.TreeEnsembleRegressor"):
        tf.onnx.import_model(bare.SerializeToString())


def test_ml_version_table_covers_the_installed_onnx():
    history = {}
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain == ML:
            history.setdefault(s.name, set()).add(s.since_version)
    table, versions = mapping.TABLES[ML]
    assert set(versions) <= set(history)
    missing = {k: sorted(history[k] - set(v)) for k, v in versions.items() if history[k] - set(v)}
    assert not missing, f"ai.onnx.ml operator versions not reviewed: {missing}"
    assert mapping.converter_for("LinearRegressor", 1, ML) is not None
    assert mapping.converter_for("LinearRegressor", 1) is None  # not in the default table


# -----------------------------------------------------------------------------------------
# Single operators
# -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("transform", ["NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO", "PROBIT"])
@pytest.mark.parametrize("labels", ["ints", "strings"])
def test_linear_classifier_multiclass(transform, labels):
    label_attr = (
        {"classlabels_ints": [4, 7, 9]}
        if labels == "ints"
        else {"classlabels_strings": ["a", "b", "c"]}
    )
    coefficients = rng.standard_normal(9).astype(np.float32) * 0.3
    node = helper.make_node(
        "LinearClassifier",
        ["x"],
        ["label", "scores"],
        domain=ML,
        coefficients=coefficients.tolist(),
        intercepts=[0.1, -0.2, 0.0],
        post_transform=transform,
        **label_attr,
    )
    out_type = I64 if labels == "ints" else S
    data = ml_model(
        [node], [vi("x", F, [None, 3])], [vi("label", out_type, [None]), vi("scores", F, None)]
    )
    x = rng.standard_normal((20, 3)).astype(np.float32)
    x[0] = 0  # SOFTMAX_ZERO's zeros
    if transform == "PROBIT":  # probit needs scores in (0, 1)
        x = (np.abs(x) * 0.1).astype(np.float32)
    assert_same_as_ort(data, {"x": x}, atol=1e-4 if transform == "PROBIT" else 1e-5)


@pytest.mark.parametrize("transform", ["NONE", "LOGISTIC", "SOFTMAX"])
@pytest.mark.parametrize("labels", [[3, 8], ["no", "yes"]])
def test_linear_classifier_one_score_column(transform, labels):
    attrs = {"coefficients": [0.5, -1.0, 0.25], "intercepts": [0.1], "post_transform": transform}
    if isinstance(labels, list) and isinstance(labels[0], str):
        attrs["classlabels_strings"] = labels
    else:
        attrs["classlabels_ints"] = labels
    node = helper.make_node("LinearClassifier", ["x"], ["label", "scores"], domain=ML, **attrs)
    out_type = S if "classlabels_strings" in attrs else I64
    data = ml_model(
        [node], [vi("x", F, [None, 3])], [vi("label", out_type, [None]), vi("scores", F, None)]
    )
    assert_same_as_ort(data, {"x": rng.standard_normal((12, 3)).astype(np.float32)})


@pytest.mark.parametrize("transform", ["NONE", "PROBIT"])
def test_linear_regressor(transform):
    node = helper.make_node(
        "LinearRegressor",
        ["x"],
        ["y"],
        domain=ML,
        coefficients=[0.1, 0.2, -0.1, 0.05, 0.0, 0.3],
        intercepts=[0.4, 0.5],
        targets=2,
        post_transform=transform,
    )
    data = ml_model([node], [vi("x", F, [None, 3])], [vi("y", F, [None, 2])])
    x = np.abs(rng.standard_normal((9, 3))).astype(np.float32)
    assert_same_as_ort(data, {"x": x}, atol=1e-4)


def _preprocessing_cases():
    x = rng.standard_normal((6, 4)).astype(np.float32)
    x[0, 0] = 0
    xi = rng.integers(-3, 4, (6, 4)).astype(np.int64)
    return {
        "scaler": (
            helper.make_node(
                "Scaler",
                ["x"],
                ["y"],
                domain=ML,
                offset=[1.0, 0.0, -1.0, 2.0],
                scale=[0.5, 2.0, 3.0, 4.0],
            ),
            {"x": x},
        ),
        "scaler_int": (
            helper.make_node("Scaler", ["x"], ["y"], domain=ML, offset=[1.0], scale=[2.0]),
            {"x": xi},
        ),
        "normalizer_l2": (
            helper.make_node("Normalizer", ["x"], ["y"], domain=ML, norm="L2"),
            {"x": x},
        ),
        "normalizer_zero_row": (
            helper.make_node("Normalizer", ["x"], ["y"], domain=ML, norm="L1"),
            {"x": np.vstack([x, np.zeros((1, 4), np.float32)])},
        ),
        "binarizer": (
            helper.make_node("Binarizer", ["x"], ["y"], domain=ML, threshold=0.1),
            {"x": x},
        ),
        "imputer_int": (
            helper.make_node(
                "Imputer", ["x"], ["y"], domain=ML, imputed_value_int64s=[9], replaced_value_int64=2
            ),
            {"x": xi},
        ),
        "imputer_value": (
            helper.make_node(
                "Imputer",
                ["x"],
                ["y"],
                domain=ML,
                imputed_value_floats=[1.0, 2.0, 3.0, 4.0],
                replaced_value_float=0.0,
            ),
            {"x": x},
        ),
    }


@pytest.mark.parametrize("name", sorted(_preprocessing_cases()))
def test_preprocessing_operators(name):
    node, feeds = _preprocessing_cases()[name]
    elem = I64 if feeds["x"].dtype == np.int64 else F
    out = I64 if name in ("imputer_int",) else F
    data = ml_model([node], [vi("x", elem, [None, 4])], [vi("y", out, None)])
    assert_same_as_ort(data, feeds)


def test_array_feature_extractor_and_feature_vectorizer():
    nodes = [
        helper.make_node("ArrayFeatureExtractor", ["x", "idx"], ["a"], domain=ML),
        helper.make_node("FeatureVectorizer", ["a", "z"], ["y"], domain=ML, inputdimensions=[2, 3]),
    ]
    inputs = [vi("x", F, [None, 4]), vi("idx", I64, [2]), vi("z", F, [None, 3])]
    data = ml_model(nodes, inputs, [vi("y", F, [None, 5])])
    feeds = {
        "x": rng.standard_normal((5, 4)).astype(np.float32),
        "idx": np.array([3, 1], np.int64),
        "z": rng.integers(0, 9, (5, 3)).astype(np.float32),
    }
    assert_same_as_ort(data, feeds)


def _encoder_cases():
    words = np.array(["a", "b", "zz", "c", "b"], dtype=object)
    codes = np.array([[1, 5], [2, 7]], np.int64)
    floats = np.array([0.5, 1.5, np.nan, 2.0], np.float32)
    tensor = numpy_helper.from_array
    return {
        "v1_strings": (1, {"classes_strings": ["b", "a"], "default_int64": 9}, words, S, I64),
        "v1_ints": (1, {"classes_strings": ["b", "a"], "default_string": "?"}, codes, I64, S),
        "v2_string_string": (
            2,
            {"keys_strings": ["a", "b"], "values_strings": ["x", "y"], "default_string": "-"},
            words,
            S,
            S,
        ),
        "v2_int_float": (
            2,
            {"keys_int64s": [1, 7], "values_floats": [0.5, 2.5], "default_float": -1.0},
            codes,
            I64,
            F,
        ),
        "v2_float_int": (2, {"keys_floats": [0.5, 2.0], "values_int64s": [3, 4]}, floats, F, I64),
        "v4_tensors": (
            4,
            {
                "keys_tensor": tensor(np.array([1.5, np.nan], np.float32)),
                "values_tensor": tensor(np.array([10, 20], np.int64)),
                "default_tensor": tensor(np.array([-7], np.int64)),
            },
            floats,
            F,
            I64,
        ),
    }


@pytest.mark.parametrize("name", sorted(_encoder_cases()))
def test_label_encoder(name):
    ml_opset, attrs, x, elem, out = _encoder_cases()[name]
    node = helper.make_node("LabelEncoder", ["x"], ["y"], domain=ML, **attrs)
    data = ml_model([node], [vi("x", elem, list(x.shape))], [vi("y", out, list(x.shape))], ml_opset)
    assert_same_as_ort(data, {"x": x})


@pytest.mark.parametrize("direction", ["to_int", "to_string"])
def test_category_mapper_and_one_hot(direction):
    attrs = {"cats_strings": ["u", "v", "w"], "cats_int64s": [10, 20, 30]}
    if direction == "to_int":
        x, elem, out = np.array([["v", "q"], ["w", "u"]], dtype=object), S, I64
    else:
        x, elem, out = np.array([[20, 11], [30, 10]], np.int64), I64, S
    nodes = [
        helper.make_node("CategoryMapper", ["x"], ["y"], domain=ML, **attrs),
        helper.make_node(
            "OneHotEncoder",
            ["x"],
            ["h"],
            domain=ML,
            **{
                "cats_strings" if elem == S else "cats_int64s": attrs[
                    "cats_strings" if elem == S else "cats_int64s"
                ]
            },
        ),
    ]
    outputs = [vi("y", out, [2, 2]), vi("h", F, [2, 2, 3])]
    assert_same_as_ort(ml_model(nodes, [vi("x", elem, [2, 2])], outputs), {"x": x})


# -----------------------------------------------------------------------------------------
# Tree ensembles and SVMs built node by node
# -----------------------------------------------------------------------------------------


def _forest_attrs(trees, depth, features, prefix, targets=1, modes=("BRANCH_LEQ",), seed=0):
    """Random trees (some leaves early) as TreeEnsemble attributes; thresholds are small
    integers so that EQ/NEQ and the strict/non-strict comparisons meet ties."""
    r = np.random.default_rng(seed)
    names = ("treeids", "nodeids", "featureids", "modes", "values", "truenodeids", "falsenodeids")
    nodes = {n: [] for n in names + ("missing_value_tracks_true",)}
    leaf = {n: [] for n in ("treeids", "nodeids", "ids", "weights")}

    def grow(tree, node_id, level, counter):
        branch = level < depth and (level == 0 or r.random() > 0.2)
        row = (tree, node_id, int(r.integers(features)) if branch else 0)
        children = (counter[0], counter[0] + 1) if branch else (0, 0)
        for name, value in zip(
            names,
            row
            + (
                str(r.choice(modes)) if branch else "LEAF",
                float(r.integers(-2, 3)) if branch else 0.0,
            )
            + children,
        ):
            nodes[name].append(value)
        nodes["missing_value_tracks_true"].append(int(r.integers(2)) if branch else 0)
        if branch:
            counter[0] += 2
            grow(tree, children[0], level + 1, counter)
            grow(tree, children[1], level + 1, counter)
            return
        for k in range(targets):
            if targets == 1 or r.random() < 0.8:
                for name, value in zip(
                    ("treeids", "nodeids", "ids", "weights"),
                    (tree, node_id, k, float(r.standard_normal())),
                ):
                    leaf[name].append(value)

    for tree in range(trees):
        grow(tree, 0, 0, [1])
    attrs = {f"nodes_{k}": v for k, v in nodes.items()}
    attrs.update({f"{prefix}_{k}": v for k, v in leaf.items()})
    if prefix == "target":
        attrs["n_targets"] = targets
    return attrs


def _integer_inputs(rows, features, nan=False):
    x = rng.integers(-3, 4, (rows, features)).astype(np.float32)
    if nan:
        x[rng.random((rows, features)) < 0.15] = np.nan
    return x


@pytest.mark.parametrize("aggregate", ["SUM", "AVERAGE", "MIN", "MAX"])
@pytest.mark.parametrize("targets", [1, 3])
def test_tree_ensemble_regressor_aggregates(aggregate, targets):
    attrs = _forest_attrs(4, 3, 3, "target", targets=targets, seed=targets)
    attrs.update(n_targets=targets, aggregate_function=aggregate)
    attrs["base_values"] = [0.5] if targets == 1 else [0.5, -1.0, 2.0]
    if targets == 3:
        attrs["post_transform"] = "SOFTMAX"
    node = helper.make_node("TreeEnsembleRegressor", ["x"], ["y"], domain=ML, **attrs)
    data = ml_model([node], [vi("x", F, [None, 3])], [vi("y", F, [None, targets])])
    assert_same_as_ort(data, {"x": _integer_inputs(40, 3)})


@pytest.mark.parametrize("ml_opset", [1, 3])
def test_tree_ensemble_every_branch_mode_and_missing_values(ml_opset):
    modes = ("BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ")
    attrs = _forest_attrs(6, 4, 4, "target", modes=modes, seed=3)
    if ml_opset == 3:  # the opset-3 tensor forms of the float lists
        for name in ("nodes_values", "target_weights"):
            attrs[f"{name}_as_tensor"] = numpy_helper.from_array(
                np.array(attrs.pop(name), np.float32)
            )
    node = helper.make_node("TreeEnsembleRegressor", ["x"], ["y"], domain=ML, **attrs)
    data = ml_model([node], [vi("x", F, [None, 4])], [vi("y", F, [None, 1])], ml_opset)
    assert_same_as_ort(data, {"x": _integer_inputs(80, 4, nan=True)})


def test_tree_ensemble_walks_every_row_and_tree_at_once():
    attrs = _forest_attrs(40, 7, 5, "target", seed=11)
    node = helper.make_node("TreeEnsembleRegressor", ["x"], ["y"], domain=ML, **attrs)
    data = ml_model([node], [vi("x", F, [None, 5])], [vi("y", F, [None, 1])])
    assert_same_as_ort(data, {"x": _integer_inputs(500, 5)})
    graph = tf.onnx.import_model(data).graph
    # One gather step per depth level, whatever the rows and trees: no loop per row or tree.
    assert len(graph.get_operations()) < 40 * 7


@pytest.mark.parametrize(
    "case", ["multi_softmax", "multi_strings", "binary_one_class", "binary_mixed", "binary_both"]
)
def test_tree_ensemble_classifier(case):
    classes = 2 if case.startswith("binary") else 3
    attrs = _forest_attrs(3, 3, 3, "class", targets=classes if case != "binary_one_class" else 1)
    if case == "binary_one_class":
        attrs["class_ids"] = [1] * len(attrs["class_ids"])
        attrs["class_weights"] = [abs(w) / 3 for w in attrs["class_weights"]]
    if case == "binary_mixed":
        attrs["class_ids"] = [0] * len(attrs["class_ids"])
        attrs["base_values"] = [0.2]
        attrs["post_transform"] = "LOGISTIC"
    if case == "multi_softmax":
        attrs.update(base_values=[0.1, 0.0, -0.1], post_transform="SOFTMAX")
    if case == "multi_strings":
        attrs["classlabels_strings"] = ["x", "y", "z"]
        out_type = S
    else:
        attrs["classlabels_int64s"] = list(range(classes))
        out_type = I64
    node = helper.make_node("TreeEnsembleClassifier", ["x"], ["label", "p"], domain=ML, **attrs)
    outputs = [vi("label", out_type, [None]), vi("p", F, [None, classes])]
    data = ml_model([node], [vi("x", F, [None, 3])], outputs)
    assert_same_as_ort(data, {"x": _integer_inputs(60, 3)})


def _svc_attrs(classes, per_class, features, kernel, seed):
    r = np.random.default_rng(seed)
    count, pairs = sum(per_class), classes * (classes - 1) // 2
    return {
        "kernel_type": kernel,
        "kernel_params": [0.3, 0.5, 3.0],
        "vectors_per_class": per_class,
        "support_vectors": r.standard_normal(count * features).tolist(),
        "coefficients": r.standard_normal((classes - 1) * count).tolist(),
        "rho": r.standard_normal(pairs).tolist(),
    }


@pytest.mark.parametrize("kernel", ["LINEAR", "POLY", "RBF", "SIGMOID"])
@pytest.mark.parametrize("proba", [False, True])
def test_svm_classifier_kernels(kernel, proba):
    attrs = _svc_attrs(4, [3, 2, 4, 3], 3, kernel, seed=len(kernel))
    attrs["classlabels_strings"] = ["a", "b", "c", "d"]
    if proba:
        attrs["prob_a"] = (-rng.random(6) * 2).tolist()
        attrs["prob_b"] = (rng.standard_normal(6) * 0.1).tolist()
    node = helper.make_node("SVMClassifier", ["x"], ["label", "p"], domain=ML, **attrs)
    outputs = [vi("label", S, [None]), vi("p", F, None)]
    data = ml_model([node], [vi("x", F, [None, 3])], outputs)
    assert_same_as_ort(data, {"x": rng.standard_normal((30, 3)).astype(np.float32)}, atol=1e-4)


@pytest.mark.parametrize("classes", [2, 3])
def test_svm_classifier_linear_mode(classes):
    attrs = {
        "coefficients": rng.standard_normal(classes * 3).tolist(),
        "rho": [0.2],
        "kernel_params": [0.1, 0.0, 3.0],
        "classlabels_ints": list(range(10, 10 + classes)),
    }
    node = helper.make_node("SVMClassifier", ["x"], ["label", "p"], domain=ML, **attrs)
    outputs = [vi("label", I64, [None]), vi("p", F, None)]
    data = ml_model([node], [vi("x", F, [None, 3])], outputs)
    assert_same_as_ort(data, {"x": rng.standard_normal((30, 3)).astype(np.float32)})


@pytest.mark.parametrize("form", ["linear", "poly_one_class"])
def test_svm_regressor_forms(form):
    if form == "linear":
        attrs = {"coefficients": [0.5, -1.0, 2.0], "rho": [0.1], "kernel_params": [0.1, 0.0, 3.0]}
    else:
        attrs = _svc_attrs(2, [4, 0], 3, "POLY", seed=2)
        attrs.update(n_supports=4, one_class=1, coefficients=attrs["coefficients"][:4])
        del attrs["vectors_per_class"]
        attrs["rho"] = attrs["rho"][:1]
    node = helper.make_node("SVMRegressor", ["x"], ["y"], domain=ML, **attrs)
    data = ml_model([node], [vi("x", F, [None, 3])], [vi("y", F, [None, 1])])
    assert_same_as_ort(data, {"x": rng.standard_normal((25, 3)).astype(np.float32)})


@pytest.mark.parametrize(
    "attrs,match",
    [
        ({"nodes_truenodeids": [5, 0, 0]}, "has no node 5"),
        ({"nodes_modes": ["BRANCH_XX", "LEAF", "LEAF"]}, "node modes"),
        ({"nodes_truenodeids": [0, 0, 0]}, "deeper than|cycle"),
        ({"target_ids": [0, 4]}, "target_ids outside"),
    ],
)
def test_damaged_tree_ensembles_are_refused_clearly(attrs, match):
    base = {
        "nodes_treeids": [0, 0, 0],
        "nodes_nodeids": [0, 1, 2],
        "nodes_featureids": [0, 0, 0],
        "nodes_modes": ["BRANCH_LEQ", "LEAF", "LEAF"],
        "nodes_values": [0.0, 0.0, 0.0],
        "nodes_truenodeids": [1, 0, 0],
        "nodes_falsenodeids": [2, 0, 0],
        "target_treeids": [0, 0],
        "target_nodeids": [1, 2],
        "target_ids": [0, 0],
        "target_weights": [1.0, 2.0],
    }
    base.update(attrs)
    node = helper.make_node("TreeEnsembleRegressor", ["x"], ["y"], domain=ML, **base)
    data = ml_model([node], [vi("x", F, [None, 1])], [vi("y", F, [None, 1])])
    with pytest.raises(tf.onnx.OnnxFormatError, match=match):
        tf.onnx.import_model(data)


def test_one_hot_encoder_without_zeros_fails_on_unknown_categories():
    node = helper.make_node("OneHotEncoder", ["x"], ["y"], domain=ML, cats_int64s=[1, 2], zeros=0)
    data = ml_model([node], [vi("x", I64, [None])], [vi("y", F, [None, 2])])
    assert_same_as_ort(data, {"x": np.array([2, 1, 1], np.int64)})
    with pytest.raises(ort.capi.onnxruntime_pybind11_state.Fail, match="Unknown Category"):
        run_ort(data, {"x": np.array([2, 5], np.int64)})
    with pytest.raises(tf.errors.InvalidArgumentError, match="not one of its 2 categories"):
        run_engine(data, {"x": np.array([2, 5], np.int64)})


def _stump(**extra):
    attrs = {
        "nodes_treeids": [0, 0, 0, 0, 0],
        "nodes_nodeids": [0, 1, 2, 3, 4],
        "nodes_featureids": [0, 0, 0, 3, 0],  # node 3 reads feature 3 of a 2-feature input
        "nodes_modes": ["BRANCH_LEQ", "LEAF", "LEAF", "BRANCH_LEQ", "LEAF"],
        "nodes_values": [0.5, 0.0, 0.0, 0.5, 0.0],
        "nodes_truenodeids": [3, 0, 0, 1, 0],
        "nodes_falsenodeids": [4, 0, 0, 2, 0],
        "target_treeids": [0, 0, 0],
        "target_nodeids": [1, 2, 4],
        "target_ids": [0, 0, 0],
        "target_weights": [1.0, 2.0, 3.0],
        "n_targets": 1,
    }
    attrs.update(extra)
    return attrs


def test_tree_feature_ids_past_the_input_width_fail_the_run():
    # Only the first row takes the bad path: without a check it would read the next row.
    node = helper.make_node("TreeEnsembleRegressor", ["x"], ["y"], domain=ML, **_stump())
    data = ml_model([node], [vi("x", F, [None, 2])], [vi("y", F, [None, 1])])
    x = np.array([[0.0, 0.0], [1.0, 0.0]], np.float32)
    with pytest.raises(ort.capi.onnxruntime_pybind11_state.Fail, match="requests feature 3"):
        run_ort(data, {"x": x})
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"requests feature 3.*\[2\] \[features\]"
    ):
        run_engine(data, {"x": x})
    wide = ml_model([node], [vi("x", F, [None, 4])], [vi("y", F, [None, 1])])
    assert_same_as_ort(wide, {"x": np.ones((3, 4), np.float32)})


@pytest.mark.parametrize(
    "op,prefix,labels,base",
    [
        ("TreeEnsembleRegressor", "target", None, [1.0, 2.0]),
        ("TreeEnsembleClassifier", "class", [0, 1], [0.1, 0.2, 0.3]),
        ("TreeEnsembleClassifier", "class", [0, 1, 2], [1.0, 2.0]),
    ],
)
def test_tree_base_values_of_the_wrong_length_are_refused(op, prefix, labels, base):
    attrs = _stump(nodes_featureids=[0, 0, 0, 1, 0], base_values=base)
    for k in ("treeids", "nodeids", "ids", "weights"):
        attrs[f"{prefix}_{k}"] = attrs.pop(f"target_{k}")
    outputs = [vi("y", F, None)]
    if labels is not None:
        del attrs["n_targets"]
        attrs["classlabels_int64s"] = labels
        outputs = [vi("label", I64, None), vi("y", F, None)]
    node = helper.make_node(op, ["x"], [o.name for o in outputs], domain=ML, **attrs)
    data = ml_model([node], [vi("x", F, [None, 2])], outputs)
    with pytest.raises(ort.capi.onnxruntime_pybind11_state.Fail, match="base_values"):
        run_ort(data, {"x": np.zeros((1, 2), np.float32)})
    with pytest.raises(tf.onnx.OnnxFormatError, match="base_values"):
        tf.onnx.import_model(data)


def _svc_probability_model(classes):
    attrs = _svc_attrs(classes, [1] * classes, 2, "RBF", seed=classes)
    pairs = classes * (classes - 1) // 2
    attrs["classlabels_ints"] = list(range(classes))
    attrs["prob_a"] = (-rng.random(pairs) * 2).tolist()
    attrs["prob_b"] = (rng.standard_normal(pairs) * 0.1).tolist()
    node = helper.make_node("SVMClassifier", ["x"], ["label", "p"], domain=ML, **attrs)
    outputs = [vi("label", I64, [None]), vi("p", F, None)]
    return ml_model([node], [vi("x", F, [None, 2])], outputs)


def test_svm_probability_tables_grow_with_the_square_of_the_classes():
    # Pairwise probabilities are placed by index (classes**2 entries), not by dense
    # [pairs, classes**2] matrices (classes**4 / 2 entries: gigabytes at a few hundred classes).
    data = _svc_probability_model(40)
    assert_same_as_ort(data, {"x": rng.standard_normal((5, 2)).astype(np.float32)}, atol=1e-4)
    graph = tf.onnx.import_model(data).graph
    sizes = [
        int(np.prod(op.get_attr("value").shape))
        for op in graph.get_operations()
        if op.type == "Const"
    ]
    assert max(sizes) <= 40 * 780


def test_svm_pair_tables_are_bounded(monkeypatch):
    from engine.formats.onnx import mapping_ml_svm

    monkeypatch.setattr(mapping_ml_svm, "MAX_PAIR_ENTRIES", 1000)
    with pytest.raises(tf.onnx.UnsupportedModelError, match="class pairs"):
        tf.onnx.import_model(_svc_probability_model(40))


@pytest.mark.parametrize("ml_opset", [2, 3, 4])
@pytest.mark.parametrize("keys", [[1.0, np.nan], [np.nan]])
def test_label_encoder_nan_keys_match_nan_only_from_opset_4(ml_opset, keys):
    node = helper.make_node(
        "LabelEncoder",
        ["x"],
        ["y"],
        domain=ML,
        keys_floats=keys,
        values_int64s=list(range(3, 3 + len(keys))),
    )
    data = ml_model([node], [vi("x", F, [None])], [vi("y", I64, [None])], ml_opset)
    assert_same_as_ort(data, {"x": np.array([1.0, np.nan, 2.0], np.float32)})


@pytest.mark.parametrize("aggregate", ["SUM", "MAX", "AVERAGE"])
@pytest.mark.parametrize("targets", [1, 2])
def test_tree_leaves_with_several_weights_for_one_target(aggregate, targets):
    # onnxruntime combines them with more than one target, and keeps the first with one.
    attrs = _stump(
        nodes_featureids=[0, 0, 0, 1, 0],
        n_targets=targets,
        aggregate_function=aggregate,
        target_treeids=[0, 0, 0, 0, 0],
        target_nodeids=[1, 2, 1, 4, 1],
        target_ids=[0, 0, targets - 1, 0, 0],
        target_weights=[1.0, 2.0, 4.0, 3.0, 5.0],
    )
    node = helper.make_node("TreeEnsembleRegressor", ["x"], ["y"], domain=ML, **attrs)
    data = ml_model([node], [vi("x", F, [None, 2])], [vi("y", F, [None, targets])])
    x = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0]], np.float32)
    assert_same_as_ort(data, {"x": x})


def test_array_feature_extractor_refuses_an_empty_index_list_as_onnxruntime():
    node = helper.make_node("ArrayFeatureExtractor", ["x", "idx"], ["y"], domain=ML)
    data = ml_model([node], [vi("x", F, [None, 4]), vi("idx", I64, [None])], [vi("y", F, None)])
    feeds = {"x": np.ones((2, 4), np.float32), "idx": np.zeros(0, np.int64)}
    with pytest.raises(ort.capi.onnxruntime_pybind11_state.InvalidArgument, match="num_indices"):
        run_ort(data, feeds)
    with pytest.raises(tf.errors.InvalidArgumentError, match="num_indices = 0"):
        run_engine(data, feeds)
    assert_same_as_ort(data, {"x": feeds["x"], "idx": np.array([2], np.int64)})
