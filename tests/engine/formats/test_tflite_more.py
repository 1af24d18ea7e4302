"""TFLite operator cases beyond test_tflite.py's, checked against TF Lite's interpreter, and
hostile or damaged files, which load or raise TFLiteFormatError and never allocate what they
claim. Models and values: tests/engine/fixtures/make_tflite_more_fixtures.py (TF 2.21)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import engine as tf

pytest.importorskip("tflite", reason="TFLite models need pip install flowserve[tflite]")
from engine.formats import tflite  # noqa: E402
from engine.formats.tflite.errors import TFLiteFormatError  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MODELS = FIXTURES / "tflite"
RECORDED = np.load(FIXTURES / "tflite_more_tf.npz")


def _recorded(case: str, part: str) -> dict[str, np.ndarray]:
    prefix = f"{case}/{part}/"
    return {k[len(prefix) :]: RECORDED[k] for k in RECORDED.files if k.startswith(prefix)}


def _run(case: str) -> tuple[dict, dict]:
    want = _recorded(case, "out")
    with tf.Session(graph=tf.Graph()) as sess:
        sig = tflite.load(sess, str(MODELS / f"more_{case}.tflite")).signature_def
        sig = sig["serving_default"]
        feeds = {sig.inputs[k].name: v for k, v in _recorded(case, "in").items()}
        got = sess.run({n: sig.outputs[n].name for n in want}, feeds)
    for name, value in got.items():
        assert sig.outputs[name].shape.is_compatible_with(value.shape), name
    return got, want


@pytest.mark.parametrize("case", ["convs", "arrays", "resizes", "softmax_beta", "misc"])
def test_float_cases_match_the_interpreter(case):
    got, want = _run(case)
    assert want
    for name, value in want.items():
        assert got[name].dtype == value.dtype and got[name].shape == value.shape, name
        if value.dtype.kind == "f":
            np.testing.assert_allclose(got[name], value, rtol=0, atol=1e-5, err_msg=name)
        else:  # comparisons, logical ops, integer floor division, range
            np.testing.assert_array_equal(got[name], value, err_msg=name)


@pytest.mark.parametrize("case", ["int_ops", "int_pool"])
def test_int8_elementwise_array_and_pooling_ops_match_exactly(case):
    # int_ops: conv, add/mul with different scales, logistic, tanh, concat, bilinear resize
    # (whose kernel rounds ties half up), mean, dense, softmax. int_pool: average pools
    # (whose kernel rounds the stored integers' mean half away from zero) and a mean.
    got, want = _run(case)
    for name, value in want.items():
        assert got[name].dtype == np.int8, name
        np.testing.assert_array_equal(got[name], value, err_msg=name)


def test_int32_div_truncates_toward_zero():
    got, want = _run("int_div")
    np.testing.assert_array_equal(want["div"], [3, -3, -3, 3, 3, 0])  # not floor division
    for name, value in want.items():
        assert got[name].dtype == np.int32, name
        np.testing.assert_array_equal(got[name], value, err_msg=name)


def test_a_constant_claiming_a_giant_shape_is_refused():
    with pytest.raises(TFLiteFormatError, match="needs 4611686018427387904 bytes, its buffer"):
        tflite.import_model(MODELS / "hostile_giant_constant.tflite")


@pytest.mark.parametrize("name", ["giant_fill", "giant_tile"])
def test_fill_or_tile_to_a_giant_shape_is_not_computed_at_load(name):
    # FILL([2^31 - 1], 7) and TILE([1], [2^30]) feed RESHAPE's shape: folding them while
    # building the graph would allocate gigabytes. They stay ops; the other outputs serve.
    with tf.Session(graph=tf.Graph()) as sess:
        sig = tflite.load(sess, str(MODELS / f"hostile_{name}.tflite"))
        sig = sig.signature_def["serving_default"]
        (reshaped,) = [op for op in sess.graph.get_operations() if op.name == "reshape_11/Reshape"]
        assert reshaped.outputs[0].shape.rank is None
        img = _recorded("convs", "in")["img"]
        got = sess.run(sig.outputs["same_s2_k2"].name, {sig.inputs["img"].name: img})
    np.testing.assert_allclose(got, _recorded("convs", "out")["same_s2_k2"], atol=1e-5)


def test_random_damage_to_every_fixture_loads_or_raises_the_format_error():
    # Byte flips and truncations of each fixture (a quick fuzz of 20,000 such cases found
    # nothing else): never an IndexError, MemoryError, RecursionError or a hang.
    rng = np.random.default_rng(11)
    paths = sorted(MODELS.glob("*.tflite"))
    outcomes = {"loaded": 0, "refused": 0}
    for case in range(200):
        data = bytearray(paths[case % len(paths)].read_bytes())
        if case % 7 == 0:
            data = data[: int(rng.integers(0, len(data)))]
        else:
            for pos in rng.integers(8, len(data), size=int(rng.choice([1, 4, 8]))):
                data[pos] = int(rng.integers(0, 256))
        try:
            with tf.Session(graph=tf.Graph()) as sess:
                tflite.import_model(bytes(data), graph=sess.graph)
            outcomes["loaded"] += 1
        except TFLiteFormatError:
            outcomes["refused"] += 1
    assert outcomes["loaded"] > 10 and outcomes["refused"] > 10
