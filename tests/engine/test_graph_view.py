"""describe_graph (the graph endpoint's and the offline viewer's description) and the
self-contained HTML page of ``python -m engine inspect DIR --html``."""

import json
import re
from pathlib import Path

import numpy as np

import engine as tf
from engine import graph_inspection, graph_view
from engine.cli import main as engine_main


def _graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        free = tf.placeholder(tf.float32, None, name="free")
        with tf.name_scope("layer"):
            w = tf.constant(np.arange(6, dtype=np.float32).reshape(3, 2), name="w")
            big = tf.constant(np.zeros((40, 40), np.float32), name="big")
            y = tf.matmul(x, w, name="y")
        with tf.control_dependencies([y.op]):
            z = tf.identity(free, name="z")
        tf.constant("</script><script>alert(1)</script>" + "a" * 300, name="text")
        tf.cond(tf.constant(True), lambda: z + 1.0, lambda: z - 1.0, name="branch")
    return g, big


def test_describe_graph_lists_ops_with_types_inputs_shapes_and_attrs():
    g, _ = _graph()
    doc = graph_inspection.describe_graph(g)
    ops = {op["name"]: op for op in doc["ops"]}
    assert doc["op_count"] == len(g.get_operations()) == len(doc["ops"])
    assert [op["name"] for op in doc["ops"]] == [op.name for op in g.get_operations()]
    y = ops["layer/y"]
    assert y["type"] == "MatMul" and y["device"] == ""
    assert y["inputs"] == ["x:0", "layer/w:0"] and y["control_inputs"] == []
    assert y["outputs"] == [{"dtype": "float32", "shape": [None, 2]}]
    assert y["attrs"] == {"transpose_a": False, "transpose_b": False}
    assert ops["z"]["control_inputs"] == ["layer/y"]
    assert ops["free"]["outputs"] == [{"dtype": "float32", "shape": None}]  # unknown rank
    assert ops["x"]["attrs"] == {"dtype": "float32", "shape": [None, 3]}
    w = ops["layer/w"]["attrs"]["value"]
    assert w == {"array": "float32 array of shape [3, 2]", "values": [0, 1, 2, 3, 4, 5]}
    assert ops["layer/big"]["attrs"]["value"] == {"array": "float32 array of shape [40, 40]"}
    text = ops["text"]["attrs"]["value"]
    assert text["array"].endswith("array of shape []")
    functions = [v for op in doc["ops"] for v in op["attrs"].values() if "function graph" in str(v)]
    assert functions and all(re.fullmatch(r"function graph \(\d+ ops\)", f) for f in functions)
    assert doc["scopes"] == [{"name": "layer", "ops": 3}]
    json.dumps(doc, allow_nan=False)  # plain JSON, nothing a browser cannot parse


def test_attr_summaries_clip_long_values():
    summarize = graph_inspection._summarize
    assert summarize("x" * 500).endswith("...") and len(summarize("x" * 500)) == 203
    assert summarize(b"\xffab") == "\\xffab"
    assert summarize(tuple(range(40)))[-1] == "... (40 items)"
    assert summarize(float("nan")) == "nan"
    assert summarize(tf.TensorShape(None)) is None
    assert summarize(tf.int64) == "int64"


def _embedded(page: str) -> dict:
    match = re.search(r'<script type="application/json" id="graph-data">(.*?)</script>', page, re.S)
    return json.loads(match.group(1))


def test_render_html_is_self_contained_and_embeds_the_description():
    g, _ = _graph()
    doc = graph_inspection.describe_graph(g)
    page = graph_view.render_html(doc, title="a <title>", subtitle="s")
    assert _embedded(page) == doc
    # Nothing is fetched: no external scripts, styles or links.
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", page)
    assert graph_view.asset("graph.js").decode() in page
    assert "var dagre=" in page and "FlowGraph.create(" in page
    # The op named in an attribute cannot end a script element early.
    assert page.count("</script>") == 4 and "<script>alert" not in page
    assert "<title>a &lt;title&gt;</title>" in page


def test_assets_are_the_allow_listed_files_only():
    for name in graph_view.ASSETS:
        assert graph_view.asset(name)
    assert b"Permission is hereby granted" in graph_view.asset("dagre.LICENSE")
    for name in ("../__init__.py", "vendor/dagre.min.js", "graph_view.py"):
        try:
            graph_view.asset(name)
        except KeyError:
            continue
        raise AssertionError(f"asset({name!r}) was served")


def test_cli_inspect_html_writes_the_digits_graph(tmp_path, capsys):
    out = tmp_path / "digits.html"
    digits = str(Path(__file__).resolve().parents[2] / "models" / "digits" / "1")
    assert engine_main(["inspect", digits, "--html", str(out)]) == 0
    doc = _embedded(out.read_text(encoding="utf-8"))
    names = {op["name"] for op in doc["ops"]}
    assert {"images", "hidden/MatMul", "output/BiasAdd", "probabilities", "classes"} <= names
    assert doc["signatures"]["serving_default"]["inputs"]["images"]["dtype"] == "float32"
    assert f"wrote {out} ({doc['op_count']} ops" in capsys.readouterr().out


def test_cli_inspect_html_of_a_missing_directory_is_an_error(tmp_path, capsys):
    assert engine_main(["inspect", str(tmp_path / "nope"), "--html", str(tmp_path / "o.html")]) == 1
    assert capsys.readouterr().err.startswith("error: ")
    assert not (tmp_path / "o.html").exists()


def test_cli_inspect_html_of_an_onnx_model(tmp_path):
    import onnx
    from onnx import TensorProto, helper

    node = helper.make_node("Relu", ["x"], ["y"], name="act/relu")
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    (tmp_path / "m").mkdir()
    onnx.save(model, str(tmp_path / "m" / "model.onnx"))
    out = tmp_path / "onnx.html"
    assert engine_main(["inspect", str(tmp_path / "m"), "--html", str(out)]) == 0
    doc = _embedded(out.read_text(encoding="utf-8"))
    assert "Relu" in {op["type"] for op in doc["ops"]}
    assert set(doc["signatures"]["serving_default"]["inputs"]) == {"x"}
