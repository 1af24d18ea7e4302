"""SavedModel directories, graph optimization for serving, and the ``python -m engine`` CLI."""

import os
import subprocess
import sys

import numpy as np
import pytest

import engine as tf
from engine import errors
from engine.cli import main as cli_main
from engine.saving.saved_model import LoadOptions

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _export_mlp(export_dir, extra_sigs=False):
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    h = tf.layers.dense(
        x, 8, activation=tf.nn.relu, kernel_initializer=tf.glorot_uniform_initializer(seed=1)
    )
    logits = tf.layers.dense(h, 3, kernel_initializer=tf.glorot_uniform_initializer(seed=2))
    probs = tf.nn.softmax(logits, name="probs")
    cls = tf.argmax(probs, 1, name="classes")
    xs = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        expected = sess.run(probs, {x: xs})
        sigs = {
            "serving_default": tf.saved_model.predict_signature_def(
                {"x": x}, {"probabilities": probs, "classes": cls}
            )
        }
        if extra_sigs:
            sigs["logits"] = tf.saved_model.predict_signature_def({"x": x}, {"logits": logits})
        b = tf.saved_model.Builder(export_dir)
        b.add_meta_graph_and_variables(
            sess, [tf.saved_model.tag_constants.SERVING], signature_def_map=sigs
        )
        assert b.save() == export_dir
    return xs, expected


def test_simple_save_load_gives_identical_outputs(tmp_path):
    d = str(tmp_path / "m")
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    w = tf.Variable([[1.0], [2.0]], name="w")
    y = tf.matmul(x, w, name="y")
    with tf.Session() as sess:
        sess.run(w.initializer)
        tf.saved_model.simple_save(sess, d, {"x": x}, {"y": y})
        before = sess.run(y, {x: [[1.0, 1.0]]})
    assert sorted(os.listdir(d)) == ["saved_model.msgpack", "variables"]
    assert tf.saved_model.contains_saved_model(d)
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.load(sess, ["serve"], d)
        sig = meta.signature_def[tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY]
        assert sig.method_name == "tensorflow/serving/predict"
        info = sig.inputs["x"]
        assert info.name == "x:0" and info.dtype == tf.float32.as_datatype_enum
        assert [d.size for d in info.tensor_shape.dim] == [-1, 2]
        assert sig.outputs["y"].shape.as_list() == [None, 1]
        after = sess.run(sig.outputs["y"].name, {info.name: [[1.0, 1.0]]})
        assert [v.name for v in tf.global_variables()] == ["w:0"]
    assert before.tobytes() == after.tobytes()


def test_builder_signatures_tags_and_import_scope(tmp_path):
    d = str(tmp_path / "mlp")
    xs, expected = _export_mlp(d, extra_sigs=True)
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.load(sess, ["serve"], d, import_scope="model")
        assert sorted(meta.signature_def) == ["logits", "serving_default"]
        sig = meta.signature_def["serving_default"]
        assert sig.inputs["x"].name == "model/x:0"
        out = sess.run(sig.outputs["probabilities"].name, {sig.inputs["x"].name: xs})
        cls = sess.run(sig.outputs["classes"].name, {sig.inputs["x"].name: xs})
    assert out.tobytes() == expected.tobytes()
    np.testing.assert_array_equal(cls, expected.argmax(1))
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(RuntimeError, match="could not be found in SavedModel.*'serve'"):
            tf.saved_model.load(sess, ["train"], d)


def test_existing_directory_is_never_overwritten(tmp_path):
    d = tmp_path / "taken"
    d.mkdir()
    (d / "precious.txt").write_text("keep me")
    with pytest.raises(errors.AlreadyExistsError, match="already exists, and isn't empty"):
        tf.saved_model.Builder(str(d))
    assert (d / "precious.txt").read_text() == "keep me"
    empty = tmp_path / "empty"
    empty.mkdir()
    tf.Variable(1.0)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        tf.saved_model.simple_save(sess, str(empty), {"c": tf.constant(1)}, {"d": tf.constant(2)})
    assert tf.saved_model.contains_saved_model(str(empty))
    # no temporary directories left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "taken"]


def test_builder_misuse_errors(tmp_path):
    b = tf.saved_model.Builder(str(tmp_path / "a"))
    with pytest.raises(AssertionError, match="add_meta_graph_and_variables"):
        b.add_meta_graph(["serve"])
    with pytest.raises(AssertionError, match="Nothing to save"):
        b.save()
    with tf.Session() as sess:
        b.add_meta_graph_and_variables(sess, ["serve"])
        with pytest.raises(AssertionError, match="already"):
            b.add_meta_graph(["serve"])
        b.add_meta_graph(["serve", "gpu"])
    b.save()
    with pytest.raises(ValueError, match="cannot be None or empty"):
        tf.saved_model.predict_signature_def({}, {"y": tf.constant(1)})
    x = tf.placeholder(tf.float32, name="x2")
    sig = tf.saved_model.build_signature_def({"x": tf.saved_model.build_tensor_info(x)})
    g = tf.Graph()
    with g.as_default(), tf.Session(graph=g) as sess:
        with pytest.raises(ValueError, match="not in the graph"):
            tf.saved_model.Builder(str(tmp_path / "b")).add_meta_graph_and_variables(
                sess, ["serve"], signature_def_map={"s": sig}
            )


def test_main_op_runs_on_load_and_assets_are_copied(tmp_path):
    asset = tmp_path / "vocab.txt"
    asset.write_text("a\nb\n")
    counter = tf.Variable(0, name="counter")
    main_op = tf.assign_add(counter, 10).op
    with tf.Session() as sess:
        sess.run(counter.initializer)
        b = tf.saved_model.Builder(str(tmp_path / "m"))
        b.add_meta_graph_and_variables(sess, ["serve"], main_op=main_op, assets_list=[str(asset)])
        b.save()
    assert (tmp_path / "m" / "assets" / "vocab.txt").read_text() == "a\nb\n"
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.saved_model.load(sess, ["serve"], str(tmp_path / "m"))
        assert sess.run("counter:0") == 10


def test_load_errors_name_the_directory(tmp_path):
    with tf.Session() as sess:
        with pytest.raises(errors.NotFoundError, match="does not exist"):
            tf.saved_model.load(sess, ["serve"], str(tmp_path / "nowhere"))
        (tmp_path / "empty").mkdir()
        with pytest.raises(errors.NotFoundError, match="not a SavedModel directory"):
            tf.saved_model.load(sess, ["serve"], str(tmp_path / "empty"))


def test_load_with_optimization_keeps_outputs_bit_identical(tmp_path):
    d = str(tmp_path / "mlp")
    xs, expected = _export_mlp(d)
    with tf.Graph().as_default() as g, tf.Session() as sess:
        meta = tf.saved_model.load(sess, ["serve"], d, options=LoadOptions(optimize=True))
        sig = meta.signature_def["serving_default"]
        out = sess.run(sig.outputs["probabilities"].name, {sig.inputs["x"].name: xs})
        optimized_ops = len(g.get_operations())
    with tf.Graph().as_default() as g2, tf.Session() as sess:
        tf.saved_model.load(sess, ["serve"], d)
        plain_ops = len(g2.get_operations())
    assert out.tobytes() == expected.tobytes()
    assert optimized_ops < plain_ops


# -- optimize ---------------------------------------------------------------------------------


def test_optimize_prunes_folds_merges_and_removes_identities():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    c1 = tf.constant([1.0, 2.0, 3.0]) * 2.0 + 1.0
    c2 = tf.constant([1.0, 2.0, 3.0]) * 2.0 + 1.0
    h = tf.identity(tf.identity(x * c1)) + c2
    tf.random_uniform([3])  # unused: pruned
    noise = tf.random_uniform([3], seed=1)  # stateful: never folded
    y = tf.identity(h + noise * 0.0, name="y")
    gd, report = tf.optimize(tf.get_default_graph().as_graph_def(), keep=["y:0", "x"])
    assert report.nodes_after < report.nodes_before
    assert report.pruned >= 1 and report.folded >= 2 and report.merged >= 1
    assert report.identities_removed == 2
    assert report.op_counts_after.get("RandomUniform") == 1
    assert "RandomUniform" in str(report) and "before" in str(report)
    g2 = tf.Graph()
    with g2.as_default():
        tf.import_graph_def(gd, name="")
    assert g2.get_operation_by_name("y").type == "Identity"  # kept names survive
    v = np.random.default_rng(0).random((2, 3)).astype(np.float32)
    with tf.Session() as s1, tf.Session(graph=g2) as s2:
        assert s1.run(y, {x: v}).tobytes() == s2.run("y:0", {"x:0": v}).tobytes()


def test_optimize_never_touches_stateful_ops_and_validates_keep():
    v = tf.Variable(1.0, name="v")
    a1 = tf.assign_add(v, 1.0)
    a2 = tf.assign_add(v, 1.0)
    gd, report = tf.optimize(
        tf.get_default_graph().as_graph_def(), keep=[a1.op.name, a2.op.name, v.initializer.name]
    )
    # the two identical assign_add ops both survive (only their constants merge)
    assert report.op_counts_after["AssignAdd"] == 2 and report.op_counts_after["Const"] == 1
    with pytest.raises(ValueError, match="not an op of the graph"):
        tf.optimize(tf.get_default_graph().as_graph_def(), keep=["missing:0"])
    with pytest.raises(ValueError, match="at least one"):
        tf.optimize(tf.get_default_graph().as_graph_def(), keep=[])


def test_optimize_removes_the_many_identical_ops_antipattern():
    x = tf.placeholder(tf.float32, [None], name="x")
    total = x
    for _ in range(50):
        total = total + tf.constant(1.0) * tf.constant(2.0)  # the same constant subgraph
    gd, report = tf.optimize(tf.get_default_graph().as_graph_def(), keep=[total.name])
    assert report.op_counts_before["Const"] >= 100
    assert report.op_counts_after.get("Const", 0) == 1
    assert report.op_counts_after.get("Mul", 0) == 0


# -- command line -----------------------------------------------------------------------------


def test_cli_inspect_and_run(tmp_path, capsys):
    d = str(tmp_path / "mlp")
    xs, expected = _export_mlp(d)
    assert cli_main(["inspect", d]) == 0
    out = capsys.readouterr().out
    assert "signature 'serving_default'" in out and "'probabilities'" in out
    assert "probs:0" in out and "(?, 3)" in out
    assert "MatMul" in out and "Variables: 4" in out
    np.save(tmp_path / "x.npy", xs)
    outdir = tmp_path / "out"
    assert (
        cli_main(["run", d, "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", str(outdir)]) == 0
    )
    got = np.load(outdir / "probabilities.npy", allow_pickle=False)
    assert got.tobytes() == expected.tobytes()
    assert cli_main(["run", d, "--input", "x=[[1, 2, 3, 4]]"]) == 0
    assert "probabilities (dtype float32, shape [1, 3])" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv,message",
    [
        (["run", "{d}", "--input", "z=[[1]]"], "missing ['x'], unknown ['z']"),
        (["run", "{d}", "--input", "x=[[1, 2]]"], "Cannot feed value of shape (1, 2)"),
        (["run", "{d}", "--signature", "nope", "--input", "x=[[1,2,3,4]]"], "signature 'nope'"),
        (["run", "{d}", "--input", "x={tmp}/missing.npy"], "does not exist"),
        (["run", "{d}", "--input", "x"], "expected ALIAS=PATH.npy"),
        (["inspect", "{tmp}/nowhere"], "does not exist"),
    ],
)
def test_cli_errors_are_one_line_and_exit_nonzero(tmp_path, capsys, argv, message):
    d = str(tmp_path / "mlp")
    _export_mlp(d)
    argv = [a.format(d=d, tmp=tmp_path) for a in argv]
    assert cli_main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err


def test_python_dash_m_engine_process(tmp_path):
    d = str(tmp_path / "mlp")
    _export_mlp(d)
    r = subprocess.run(
        [sys.executable, "-m", "engine", "inspect", d],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert r.returncode == 0 and "serving_default" in r.stdout
    r = subprocess.run(
        [sys.executable, "-m", "engine", "run", d],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert r.returncode == 1 and r.stderr.startswith("error: ")
