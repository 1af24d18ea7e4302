"""TF1's dataflow control flow (Switch/Merge, Enter/Exit/NextIteration/LoopCond) imported as
functional If/While: frozen graphs and a TF1 SavedModel compared with what TensorFlow
recorded (tests/fixtures/tensorflow/tf1_control_flow), and hand-written graphs for the
structure and the error paths."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest
from google.protobuf import text_format

import engine as tf
from engine.formats.tensorflow import graph_def as tfg
from engine.formats.tensorflow.inspect import describe
from engine.formats.tensorflow.proto import graph_pb2
from engine.formats.tensorflow.tensors import TFFormatError

FIXTURE = pathlib.Path(__file__).parents[2] / "fixtures" / "tensorflow" / "tf1_control_flow"
OUTPUTS = [
    "checked",
    "c1",
    "a",
    "b",
    "nested",
    "passthrough",
    "bn",
    "acc",
    "capped",
    "tri",
    "alt",
    "mapped",
    "chosen",
    "word",
    "grown_ta",
    "grown_v",
    "picked",
    "bi_fw",
    "bi_bw",
    "scanned",
    "folded_left",
    "folded_right",
    "cond_ta",
    "case5",
    "limited",
    "no_backprop",
    "rnn_out",
    "rnn_c",
    "rnn_h",
]
CASES = ["pos", "neg", "one"]
V1_OPS = {"Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond"}


def _feeds(io, case, names=("x", "n", "training")):
    return {f"{k}:0": io[f"{k}_{case}"] for k in names}


def _check(got: dict, io, case):
    for k in OUTPUTS:
        want = io[f"{k}_{case}"]
        if want.dtype.kind == "S":  # a string scalar: TF1's session returns bytes
            assert got[k] == want.item(), k
            continue
        assert got[k].dtype == want.dtype, k
        assert got[k].shape == want.shape, k
        np.testing.assert_allclose(got[k], want, rtol=1e-5, atol=1e-5, err_msg=k)


@pytest.fixture(scope="module")
def frozen():
    data = (FIXTURE / "model.pb").read_bytes()
    g = tf.Graph()
    with g.as_default():
        tf.import_graph_def(tf.GraphDef.FromString(data), name="")
    return g


@pytest.mark.parametrize("case", CASES)
def test_frozen_tf1_control_flow_matches_tensorflow(frozen, case):
    io = np.load(FIXTURE / "io.npz")
    with tf.Session(graph=frozen) as sess:
        got = sess.run({k: f"{k}:0" for k in OUTPUTS}, _feeds(io, case))
    _check(got, io, case)


def test_frozen_graph_becomes_if_and_while_and_keeps_names(frozen):
    types = {op.type for op in frozen.get_operations()}
    assert {"If", "While"} <= types
    assert not types & V1_OPS
    # the Exit and Merge names TF wrote still name the loop's and the cond's results
    io = np.load(FIXTURE / "io.npz")
    with tf.Session(graph=frozen) as sess:
        exit_c, merge = sess.run(["rnn/while/Exit_3:0", "cond/Merge:0"], _feeds(io, "pos"))
    np.testing.assert_allclose(exit_c, io["rnn_c_pos"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(merge, io["c1_pos"], rtol=1e-6)


@pytest.mark.parametrize("case", CASES)
def test_tf1_saved_model_with_variables_in_loops_matches_tensorflow(case):
    io = np.load(FIXTURE / "io.npz")
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.load(sess, ["serve"], str(FIXTURE / "saved_model"))
        sig = meta.signature_def["serving_default"]
        feeds = {sig.inputs[k].name: io[f"{k}_{case}"] for k in ("x", "n", "training")}
        got = sess.run({k: sig.outputs[k].name for k in OUTPUTS}, feeds)
    _check(got, io, case)


def test_inspect_reports_no_missing_ops_for_tf1_control_flow():
    (info,) = describe(str(FIXTURE / "saved_model"))
    assert info["missing_ops"] == {}
    assert info["op_counts"]["Switch"] > 0  # the file's own op counts


# -- hand-written graphs -----------------------------------------------------------------

_ANY = 'attr { key: "shape" value { shape { unknown_rank: true } } }'
_HEAD = f"""
node {{ name: "p" op: "Placeholder" attr {{ key: "dtype" value {{ type: DT_BOOL }} }} {_ANY} }}
node {{ name: "x" op: "Placeholder" attr {{ key: "dtype" value {{ type: DT_FLOAT }} }} {_ANY} }}
node {{ name: "n" op: "Placeholder" attr {{ key: "dtype" value {{ type: DT_INT32 }} }} {_ANY} }}
"""
_T_FLOAT = 'attr { key: "T" value { type: DT_FLOAT } }'
_T_INT = 'attr { key: "T" value { type: DT_INT32 } }'

COND = f"""
node {{ name: "sw" op: "Switch" input: "x" input: "p" {_T_FLOAT} }}
node {{ name: "neg" op: "Neg" input: "sw" {_T_FLOAT} }}
node {{ name: "sq" op: "Square" input: "sw:1" {_T_FLOAT} }}
node {{ name: "m" op: "Merge" input: "neg" input: "sq" {_T_FLOAT}
        attr {{ key: "N" value {{ i: 2 }} }} }}
"""


def _loop(enter="Enter", extra=""):
    frame = 'attr { key: "frame_name" value { s: "L" } }'
    const = 'attr { key: "is_constant" value { b: true } }'
    one = (
        'attr { key: "dtype" value { type: DT_INT32 } } '
        'attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 1 } } }'
    )
    zero = one.replace("int_val: 1", "int_val: 0")
    return f"""
node {{ name: "i0" op: "Const" {zero} }}
node {{ name: "ei" op: "{enter}" input: "i0" {_T_INT} {frame} }}
node {{ name: "en" op: "{enter}" input: "n" {_T_INT} {frame} {const} }}
node {{ name: "ex" op: "{enter}" input: "x" {_T_FLOAT} {frame} {const} }}
node {{ name: "m" op: "Merge" input: "ei" input: "ni" {_T_INT} }}
node {{ name: "lt" op: "Less" input: "m" input: "en" {_T_INT} }}
node {{ name: "lc" op: "LoopCond" input: "lt" }}
node {{ name: "sw" op: "Switch" input: "m" input: "lc" {_T_INT} }}
node {{ name: "id" op: "Identity" input: "sw:1" {_T_INT} }}
node {{ name: "one" op: "Const" input: "^id" {one} }}
node {{ name: "add" op: "AddV2" input: "id" input: "one" {_T_INT} }}
node {{ name: "ni" op: "NextIteration" input: "add" {_T_INT} }}
node {{ name: "out" op: "Exit" input: "sw" {_T_INT} }}
{extra}
"""


def _graph(text: str) -> graph_pb2.GraphDef:
    return text_format.Parse(_HEAD + text, graph_pb2.GraphDef())


def _run(text, fetches, feeds):
    g = tf.Graph()
    with g.as_default():
        tf.import_graph_def(_graph(text), name="")
    with tf.Session(graph=g) as sess:
        return sess.run(fetches, feeds), {op.type for op in g.get_operations()}


def test_hand_written_cond_takes_the_branch_the_predicate_picks():
    x = np.array([1.5, -2.0], np.float32)
    (on, types) = _run(COND, "m:0", {"p:0": True, "x:0": x})
    (off, _) = _run(COND, "m:0", {"p:0": False, "x:0": x})
    np.testing.assert_array_equal(on, x * x)
    np.testing.assert_array_equal(off, -x)
    assert "If" in types and not types & V1_OPS


def test_hand_written_loop_counts_to_n():
    (got, types) = _run(_loop(), "out:0", {"n:0": 5})
    assert got == 5
    assert "While" in types and not types & V1_OPS
    (zero, _) = _run(_loop(), "out:0", {"n:0": -3})
    assert zero == 0


def test_a_merge_whose_value_index_is_read_is_reported():
    text = COND + f'node {{ name: "which" op: "Identity" input: "m:1" {_T_INT} }}'
    with pytest.raises(tfg.UnsupportedOpsError, match="value_index") as e:
        tf.GraphDef.from_tensorflow(_graph(text))
    assert "Merge" in e.value.missing and "Switch" in e.value.missing


def test_a_merge_of_unrelated_values_is_reported():
    text = COND.replace('input: "neg" input: "sq"', 'input: "x" input: "sq"')
    with pytest.raises(tfg.UnsupportedOpsError, match="not the two branches of one cond"):
        tf.GraphDef.from_tensorflow(_graph(text))


def test_loops_over_reference_variables_are_reported_with_the_reason():
    with pytest.raises(tfg.UnsupportedOpsError, match="reference variables") as e:
        tf.GraphDef.from_tensorflow(_graph(_loop(enter="RefEnter")))
    assert "RefEnter" in e.value.missing


def test_an_exit_outside_any_loop_is_an_error():
    bad = f'node {{ name: "stray" op: "Exit" input: "x" {_T_FLOAT} }}'
    with pytest.raises(TFFormatError, match="Exit node 'stray' is not inside a loop"):
        tf.GraphDef.from_tensorflow(_graph(bad))


def test_a_node_computed_each_iteration_that_nothing_reads_runs_in_the_body():
    # TF runs it every iteration; the loop's result is unchanged by it
    extra = f'node {{ name: "peek" op: "Identity" input: "add" {_T_INT} }}'
    (got, _) = _run(_loop(extra=extra), "out:0", {"n:0": 3})
    assert got == 3


def test_a_loop_with_two_loop_conds_is_reported():
    extra = 'node { name: "lc2" op: "LoopCond" input: "lt" }'
    with pytest.raises(tfg.UnsupportedOpsError, match="2 LoopCond nodes, expected 1"):
        tf.GraphDef.from_tensorflow(_graph(_loop(extra=extra)))


def test_tensor_array_concat_lengths_are_refused():
    text = """
node { name: "size" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
       attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 2 } } } }
node { name: "ta" op: "TensorArrayV3" input: "size" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "dynamic_size" value { b: false } } }
node { name: "cat" op: "TensorArrayConcatV3" input: "ta" input: "ta:1"
       attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "lens" op: "Identity" input: "cat:1" attr { key: "T" value { type: DT_INT64 } } }
"""
    with pytest.raises(TFFormatError, match="lengths output of TensorArrayConcatV3 'cat'"):
        tf.GraphDef.from_tensorflow(_graph(text))


def test_guarded_assert_inside_a_cond_still_fires(frozen):
    io = np.load(FIXTURE / "io.npz")
    feeds = _feeds(io, "pos")
    feeds["x:0"] = feeds["x:0"].copy()
    feeds["x:0"][0, 0] = np.nan
    with tf.Session(graph=frozen) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="assertion failed"):
            sess.run("checked:0", feeds)


def test_import_meta_graph_then_restore_runs_the_loops(tmp_path):
    from engine.formats.tensorflow.proto import saved_model_pb2

    sm = saved_model_pb2.SavedModel.FromString(
        (FIXTURE / "saved_model" / "saved_model.pb").read_bytes()
    )
    meta = tmp_path / "model.meta"
    meta.write_bytes(sm.meta_graphs[0].SerializeToString())
    io = np.load(FIXTURE / "io.npz")
    with tf.Graph().as_default(), tf.Session() as sess:
        saver = tf.train.import_meta_graph(str(meta))
        saver.restore(sess, str(FIXTURE / "saved_model" / "variables" / "variables"))
        got = sess.run({k: f"{k}:0" for k in OUTPUTS}, _feeds(io, "neg"))
    _check(got, io, "neg")
