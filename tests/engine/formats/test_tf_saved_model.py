"""TensorFlow SavedModels loaded with the TF1 loader API, run by their signatures'
TensorInfo names, compared with the outputs TensorFlow recorded."""

from __future__ import annotations

import pathlib
import shutil

import numpy as np
import pytest

import engine as tf
from engine import errors

FIXTURES = pathlib.Path(__file__).parents[2] / "fixtures" / "tensorflow"
KINDS = [
    "saved_model_ref",
    "saved_model_resource",
    "saved_model_vocab",
    "tf2_module",
    "keras_cnn",
    "keras_lstm",
]


def _run_signature(export_dir, key="serving_default", loader=None):
    io = np.load(pathlib.Path(export_dir) / "io.npz")
    with tf.Graph().as_default() as g, tf.Session() as sess:
        meta = (loader or tf.saved_model.load)(sess, ["serve"], str(export_dir))
        sig = meta.signature_def[key]
        feeds = {sig.inputs[a].name: io[a] for a in sig.inputs}
        got = sess.run({a: i.name for a, i in sig.outputs.items()}, feeds)
        return got, io, meta, g


@pytest.mark.parametrize("kind", KINDS)
def test_signatures_match_tensorflow(kind):
    got, io, meta, _ = _run_signature(FIXTURES / kind)
    assert got
    for alias, value in got.items():
        assert value.dtype == io[alias].dtype, alias
        np.testing.assert_allclose(value, io[alias], rtol=1e-5, atol=1e-6, err_msg=alias)


def test_loader_namespace_and_signature_infos():
    got, io, meta, g = _run_signature(
        FIXTURES / "saved_model_resource", loader=tf.saved_model.loader.load
    )
    sig = meta.signature_def["serving_default"]
    assert sig.method_name == "tensorflow/serving/predict"
    assert sig.inputs["x"].name == "x:0" and sig.inputs["x"].dtype == 1
    assert [d.size for d in sig.inputs["x"].tensor_shape.dim] == [-1, 4]
    assert sig.outputs["count"].engine_dtype is tf.int64
    # resource variables became the engine's variables and were restored from the checkpoint
    assert g.get_operation_by_name("model/w").type == "VariableV2"
    assert sorted(meta.signature_def) == ["probs_only", "serving_default"]


def test_tf2_signature_names_and_restored_variables():
    got, io, meta, g = _run_signature(FIXTURES / "tf2_module")
    sig = meta.signature_def["serving_default"]
    assert sig.inputs["x"].name == "serving_default_x:0"
    assert sig.outputs["out"].name == "StatefulPartitionedCall:0"
    assert "__saved_model_init_op" not in meta.signature_def
    assert meta.restore_keys == {
        "w": "w/.ATTRIBUTES/VARIABLE_VALUE",
        "b": "b/.ATTRIBUTES/VARIABLE_VALUE",
    }


def test_import_scope_prefixes_signature_names():
    io = np.load(FIXTURES / "saved_model_ref" / "io.npz")
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.load(
            sess, ["serve"], str(FIXTURES / "saved_model_ref"), import_scope="m"
        )
        sig = meta.signature_def["probs_only"]
        assert sig.inputs["x"].name == "m/x:0"
        np.testing.assert_allclose(
            sess.run(sig.outputs["y"].name, {sig.inputs["x"].name: io["x"]}), io["y"], rtol=1e-5
        )


def test_wrong_tags_list_the_available_ones():
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(RuntimeError, match=r"\[\['serve'\]\]"):
            tf.saved_model.load(sess, ["train"], str(FIXTURES / "saved_model_ref"))


def test_contains_saved_model():
    assert tf.saved_model.contains_saved_model(str(FIXTURES / "tf2_module"))
    assert not tf.saved_model.contains_saved_model(str(FIXTURES / "checkpoint"))


def _copy(tmp_path, kind="saved_model_ref"):
    dst = tmp_path / kind
    shutil.copytree(FIXTURES / kind, dst)
    return dst


# Each damage names the error it must cause (type and message), so a load that fails for
# another reason does not pass.
DAMAGED_SAVED_MODEL_ERRORS = {
    "truncated_pb": (errors.DataLossError, "not a valid TensorFlow SavedModel"),
    "garbage_pb": (errors.DataLossError, "not a valid TensorFlow SavedModel"),
    "data_bit": (errors.DataLossError, "checksum mismatch for tensor 'model/b'"),
    "missing_index": (errors.NotFoundError, "No bundle index at .*variables\\.index"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGED_SAVED_MODEL_ERRORS))
def test_damaged_saved_models_raise_typed_errors(tmp_path, damage):
    d = _copy(tmp_path)
    pb = d / "saved_model.pb"
    if damage == "truncated_pb":
        pb.write_bytes(pb.read_bytes()[:1000])
    elif damage == "garbage_pb":
        pb.write_bytes(b"\x12\xff\xff\xff\xff\x0f" + b"\x00" * 50)
    elif damage == "data_bit":
        data = d / "variables" / "variables.data-00000-of-00001"
        raw = bytearray(data.read_bytes())
        raw[5] ^= 1
        data.write_bytes(bytes(raw))
    else:
        (d / "variables" / "variables.index").unlink()
    error, message = DAMAGED_SAVED_MODEL_ERRORS[damage]
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(error, match=message):
            tf.saved_model.load(sess, ["serve"], str(d))


def _with_fancy_ops(tmp_path):
    from engine.formats.tensorflow.proto import saved_model_pb2

    d = _copy(tmp_path)
    sm = saved_model_pb2.SavedModel.FromString((d / "saved_model.pb").read_bytes())
    for n in sm.meta_graphs[0].graph_def.node:
        if n.name == "y":
            n.op = "FancySoftmax"
        if n.op == "MatMul":
            n.op = "FancyMatMul"
    (d / "saved_model.pb").write_bytes(sm.SerializeToString())
    return d


def test_missing_ops_fail_at_load_naming_them_all(tmp_path):
    d = _with_fancy_ops(tmp_path)
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(errors.UnimplementedError, match="FancyMatMul.*FancySoftmax"):
            tf.saved_model.load(sess, ["serve"], str(d))


def test_cli_inspect_shows_tf_saved_models(capsys, tmp_path):
    from engine import cli

    assert cli.main(["inspect", str(FIXTURES / "tf2_module")]) == 0
    out = capsys.readouterr().out
    assert "TensorFlow SavedModel" in out and "written by TensorFlow 2." in out
    assert "'x'" in out and "serving_default_x:0" in out and "[None, 4]" in out
    assert "StatefulPartitionedCall" in out and "missing ops: none" in out
    assert "w/.ATTRIBUTES/VARIABLE_VALUE" in out
    d = _with_fancy_ops(tmp_path)
    assert cli.main(["inspect", str(d)]) == 0
    out = capsys.readouterr().out
    assert "missing ops (not implemented by flowserve): FancyMatMul (1), FancySoftmax (1)" in out


def test_cli_run_runs_a_tf_saved_model(tmp_path):
    from engine import cli

    io = np.load(FIXTURES / "tf2_module" / "io.npz")
    np.save(tmp_path / "x.npy", io["x"])
    args = ["run", str(FIXTURES / "tf2_module"), "--input", f"x={tmp_path / 'x.npy'}"]
    assert cli.main([*args, "--output-dir", str(tmp_path / "out")]) == 0
    np.testing.assert_allclose(np.load(tmp_path / "out" / "out.npy"), io["out"], rtol=1e-5)


def test_cli_convert_both_ways(tmp_path):
    """TF2 SavedModel -> flowserve format -> TensorFlow format, same outputs each time."""
    from engine import cli

    io = np.load(FIXTURES / "tf2_module" / "io.npz")
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    src = str(FIXTURES / "tf2_module")
    assert cli.main(["convert", src, str(ours), "--format", "flowserve"]) == 0
    assert cli.main(["convert", str(ours), str(theirs), "--format", "tensorflow"]) == 0
    assert (ours / "saved_model.msgpack").is_file() and (theirs / "saved_model.pb").is_file()
    for d in (ours, theirs):
        with tf.Graph().as_default(), tf.Session() as sess:
            meta = tf.saved_model.load(sess, ["serve"], str(d))
            sig = meta.signature_def["serving_default"]
            got = sess.run(sig.outputs["out"].name, {sig.inputs["x"].name: io["x"]})
            np.testing.assert_allclose(got, io["out"], rtol=1e-5)
            assert len(tf.global_variables()) == 2  # TF2 variables became Variables


# -- TF2 functional control flow (If / While with function attrs) ----------------------------

CONTROL_FLOW = FIXTURES / "tf2_control_flow"


def _stateless(tmp_path):
    """The fixture with its If/While recorded as StatelessIf/StatelessWhile (what TF writes
    for branches and bodies without stateful ops)."""
    from engine.formats.tensorflow.proto import saved_model_pb2

    d = _copy(tmp_path, "tf2_control_flow")
    sm = saved_model_pb2.SavedModel.FromString((d / "saved_model.pb").read_bytes())
    for f in sm.meta_graphs[0].graph_def.library.function:
        for n in f.node_def:
            if n.op in ("If", "While"):
                n.op = "Stateless" + n.op
    (d / "saved_model.pb").write_bytes(sm.SerializeToString())
    return d


@pytest.mark.parametrize("stateless", [False, True])
@pytest.mark.parametrize("case", ["pos", "neg"])
def test_tf2_if_and_while_match_tensorflow(case, stateless, tmp_path):
    io = np.load(CONTROL_FLOW / "io.npz")
    export_dir = _stateless(tmp_path) if stateless else CONTROL_FLOW
    with tf.Graph().as_default() as g, tf.Session() as sess:
        meta = tf.saved_model.load(sess, ["serve"], str(export_dir))
        sig = meta.signature_def["serving_default"]
        feeds = {sig.inputs["x"].name: io[f"x_{case}"], sig.inputs["n"].name: io[f"n_{case}"]}
        got = sess.run({a: i.name for a, i in sig.outputs.items()}, feeds)
        types = {op.type for op in g.get_operations()}
    # the cond took the branch TF took, the loop ran n times, the variable was read in both
    assert {"If", "While"} <= types
    np.testing.assert_allclose(got["y"], io[f"y_{case}"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["acc"], io[f"acc_{case}"], rtol=1e-5, atol=1e-5)


def test_ops_missing_inside_control_flow_functions_are_named_with_the_rest(tmp_path):
    from engine.formats.tensorflow.proto import saved_model_pb2

    d = _copy(tmp_path, "tf2_control_flow")
    sm = saved_model_pb2.SavedModel.FromString((d / "saved_model.pb").read_bytes())
    for f in sm.meta_graphs[0].graph_def.library.function:
        for n in f.node_def:
            if n.op == "Relu" and f.signature.name.startswith("cond_false"):
                n.op = "FancyRelu"
            if n.op == "Less" and f.signature.name.startswith("while_cond"):
                n.op = "FancyLess"
    (d / "saved_model.pb").write_bytes(sm.SerializeToString())
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(errors.UnimplementedError, match="FancyLess.*FancyRelu"):
            tf.saved_model.load(sess, ["serve"], str(d))


def test_control_flow_calling_an_unknown_function_is_a_typed_error(tmp_path):
    from engine.formats.tensorflow.proto import saved_model_pb2

    d = _copy(tmp_path, "tf2_control_flow")
    sm = saved_model_pb2.SavedModel.FromString((d / "saved_model.pb").read_bytes())
    for f in sm.meta_graphs[0].graph_def.library.function:
        for n in f.node_def:
            if n.op == "While":
                n.attr["body"].func.name = "no_such_function"
    (d / "saved_model.pb").write_bytes(sm.SerializeToString())
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(errors.OpError, match="unknown function 'no_such_function'"):
            tf.saved_model.load(sess, ["serve"], str(d))


def test_a_signature_dtype_the_graph_contradicts_serves_the_graphs(tmp_path, caplog):
    """TF runs the graph's tensor whatever a SignatureDef says (TF Serving's own
    saved_model_half_plus_three declares a string input as float32), so a TF SavedModel
    loads with the tensor's dtype and a warning; flowserve's own format stays strict."""
    from engine.formats.tensorflow.proto import saved_model_pb2, types_pb2

    d = _copy(tmp_path, "saved_model_ref")
    sm = saved_model_pb2.SavedModel.FromString((d / "saved_model.pb").read_bytes())
    sm.meta_graphs[0].signature_def["serving_default"].inputs["ids"].dtype = types_pb2.DT_FLOAT
    (d / "saved_model.pb").write_bytes(sm.SerializeToString())
    io = np.load(FIXTURES / "saved_model_ref" / "io.npz")
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.load(sess, ["serve"], str(d))
        sig = meta.signature_def["serving_default"]
        assert sig.inputs["ids"].dtype == types_pb2.DT_INT32
        got = sess.run(sig.outputs["looked"].name, {sig.inputs["ids"].name: io["ids"]})
    np.testing.assert_array_equal(got, io["looked"])
    assert "declares 'ids:0' ('ids') as float32" in caplog.text
