"""TensorFlow Lite models on the engine, checked against TF Lite's own interpreter.

The models and the interpreter's outputs were recorded by
tests/engine/fixtures/make_tflite_fixtures.py (TF 2.21's TFLiteConverter from small
tf.function models). Float models match within 1e-5. Quantized models are emulated in float
(engine/formats/tflite/importer.py explains how), with these measured deviations:

* full-integer int8 CNN: all 120 output values equal TFLite's (also with float input and
  output, QUANTIZE/DEQUANTIZE at its edges), since AVERAGE_POOL_2D rounds as its kernel
  does (before: 4 of 120 one step away, and 1 of 120). TFLite's integer kernels rescale
  accumulators with fixed-point multipliers and round there; the emulation rounds the
  exact real value, so a value near a rounding boundary may land on the neighbouring
  step. The tests allow 1 step, on at most 2 values.
* dynamic-range CNN (int8 weights): max |diff| 1.1e-4 on softmax outputs. TFLite's hybrid
  kernels quantize each activation row to int8 on the fly before the integer product; the
  engine multiplies the float activations with the dequantized weights, which is the value
  those kernels approximate. The test allows 5e-4.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import engine as tf

pytest.importorskip("tflite", reason="TFLite models need pip install flowserve[tflite]")
from engine.formats import tflite  # noqa: E402
from engine.formats.tflite.errors import TFLiteFormatError, UnsupportedModelError  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MODELS = FIXTURES / "tflite"
RECORDED = np.load(FIXTURES / "tflite_tf.npz")
FLOAT_CASES = ["mlp", "cnn", "two_signatures", "half_plus_two", "elementwise", "array_ops"]
FLOAT_CASES += ["image_ops", "cnn_float16"]


def _recorded(case: str, key: str, part: str) -> dict[str, np.ndarray]:
    prefix = f"{case}/{key}/{part}/"
    return {k[len(prefix) :]: RECORDED[k] for k in RECORDED.files if k.startswith(prefix)}


def _signature_keys(case: str) -> list[str]:
    return sorted({k.split("/")[1] for k in RECORDED.files if k.startswith(case + "/")})


def _run(path, key: str, feeds: dict, fetch=None):
    with tf.Session(graph=tf.Graph()) as sess:
        meta = tflite.load(sess, str(path))
        sig = meta.signature_def[key]
        names = fetch or list(sig.outputs)
        got = sess.run(
            {n: sig.outputs[n].name for n in names},
            {sig.inputs[k].name: v for k, v in feeds.items()},
        )
    for name, value in got.items():  # the static shapes agree with the computed ones
        assert sig.outputs[name].shape.is_compatible_with(value.shape), name
    return got


@pytest.mark.parametrize(
    "case,key", [(c, k) for c in FLOAT_CASES for k in _signature_keys(c)], ids=str
)
def test_float_models_match_the_interpreter(case, key):
    expected = _recorded(case, key, "out")
    got = _run(MODELS / f"{case}.tflite", key, _recorded(case, key, "in"), list(expected))
    for name, want in expected.items():
        assert got[name].dtype == want.dtype, name
        assert got[name].shape == want.shape, name
        np.testing.assert_allclose(got[name], want, rtol=0, atol=1e-5, err_msg=name)


def test_full_integer_model_is_within_one_quantization_step():
    feeds = _recorded("cnn_int8", "serving_default", "in")
    want = _recorded("cnn_int8", "serving_default", "out")["probs"]
    got = _run(MODELS / "cnn_int8.tflite", "serving_default", feeds)["probs"]
    assert feeds["image"].dtype == np.int8
    assert got.dtype == np.int8 and want.dtype == np.int8
    steps = np.abs(got.astype(np.int32) - want.astype(np.int32))
    assert steps.max() <= 1
    assert np.count_nonzero(steps) <= 2
    assert np.array_equal(got.argmax(-1), want.argmax(-1))


def test_int8_model_with_float_io_quantizes_and_dequantizes_at_its_edges():
    # QUANTIZE after the float input, DEQUANTIZE before the float output; softmax's int8
    # output scale is 1/256, so one step is 0.0039.
    feeds = _recorded("cnn_int8_float_io", "serving_default", "in")
    want = _recorded("cnn_int8_float_io", "serving_default", "out")["probs"]
    got = _run(MODELS / "cnn_int8_float_io.tflite", "serving_default", feeds)["probs"]
    assert got.dtype == np.float32
    np.testing.assert_allclose(got * 256, np.rint(got * 256), atol=1e-3)  # on the int8 grid
    steps = np.rint(np.abs(got - want) * 256).astype(np.int32)
    assert steps.max() <= 1
    assert np.count_nonzero(steps) <= 2
    assert np.array_equal(got.argmax(-1), want.argmax(-1))


def test_dynamic_range_model_is_close_to_the_hybrid_kernels():
    feeds = _recorded("cnn_dynamic", "serving_default", "in")
    want = _recorded("cnn_dynamic", "serving_default", "out")["probs"]
    got = _run(MODELS / "cnn_dynamic.tflite", "serving_default", feeds)["probs"]
    np.testing.assert_allclose(got, want, rtol=0, atol=5e-4)
    # The int8 weights are used (dequantized), not ignored: the float model's answer differs
    # from the quantized one by more than the engine does.
    float_probs = _recorded("cnn", "serving_default", "out")["probs"]
    assert np.abs(float_probs - want).max() > np.abs(got - want).max()


def test_signatures_keep_the_model_names_and_each_signature_is_served():
    with tf.Session(graph=tf.Graph()) as sess:
        meta = tflite.load(sess, str(MODELS / "two_signatures.tflite"))
    sigs = meta.signature_def
    assert set(sigs) == {"serving_default", "scale"}
    assert set(sigs["serving_default"].inputs) == {"a", "b"}
    assert set(sigs["serving_default"].outputs) == {"sum", "diff"}
    assert set(sigs["scale"].inputs) == {"a"} and set(sigs["scale"].outputs) == {"scaled"}
    assert sigs["serving_default"].inputs["a"].shape.as_list() == [None, 3]


def test_a_model_without_signatures_is_served_by_tensor_names():
    with tf.Session(graph=tf.Graph()) as sess:
        meta = tflite.load(sess, str(MODELS / "mlp_no_signatures.tflite"))
        (sig,) = meta.signature_def.values()
        assert list(meta.signature_def) == ["serving_default"]
        (name,) = sig.inputs
        assert name == "serving_default_x:0"
        x = _recorded("mlp", "serving_default", "in")["x"]
        (out,) = sig.outputs.values()
        got = sess.run(out.name, {sig.inputs[name].name: x[:2]})  # a different batch size
    np.testing.assert_allclose(
        got, _recorded("mlp", "serving_default", "out")["probs"][:2], rtol=0, atol=1e-5
    )


def test_signatures_kept_in_metadata_name_the_inputs_and_outputs():
    """The older way (TF's set_signature_defs; TF Serving's half_plus_two_tflite_with_sigdef
    test model): a FlexBuffer map of serialized SignatureDefs in the model's metadata."""
    with tf.Session(graph=tf.Graph()) as sess:
        meta = tflite.load(sess, str(MODELS / "mlp_metadata_signatures.tflite"))
        sig = meta.signature_def["serving_default"]
        assert sorted(sig.inputs) == ["features"] and sorted(sig.outputs) == ["scores"]
        x = _recorded("mlp", "serving_default", "in")["x"]
        got = sess.run(sig.outputs["scores"].name, {sig.inputs["features"].name: x})
    np.testing.assert_allclose(
        got, _recorded("mlp", "serving_default", "out")["probs"], rtol=0, atol=1e-5
    )
    with (
        tf.Session(graph=tf.Graph()) as sess,
        pytest.raises(TFLiteFormatError, match="signature 'serving_default' is not a SignatureDef"),
    ):
        tflite.load(sess, str(MODELS / "bad_metadata_signature.tflite"))


def test_half_plus_two_in_a_version_directory(tmp_path):
    (tmp_path / "model.tflite").write_bytes((MODELS / "half_plus_two.tflite").read_bytes())
    got = _run(tmp_path, "serving_default", {"x": np.array([1, 2, 5, 0.5], np.float32)})
    np.testing.assert_array_equal(got["y"], [2.5, 3.0, 4.5, 2.25])


def test_the_table_covers_the_operators_converted_models_use():
    ops = """ADD SUB MUL DIV CONV_2D DEPTHWISE_CONV_2D TRANSPOSE_CONV FULLY_CONNECTED
    AVERAGE_POOL_2D MAX_POOL_2D MEAN SUM REDUCE_MAX RESHAPE SQUEEZE EXPAND_DIMS CONCATENATION
    PAD PADV2 SOFTMAX LOGISTIC TANH RELU RELU6 RELU_N1_TO_1 LEAKY_RELU HARD_SWISH GELU EXP LOG
    SQRT RSQRT SQUARE POW MAXIMUM MINIMUM GATHER STRIDED_SLICE SLICE TRANSPOSE BATCH_MATMUL
    SHAPE PACK UNPACK SPLIT SPLIT_V ARG_MAX ARG_MIN CAST RESIZE_BILINEAR RESIZE_NEAREST_NEIGHBOR
    L2_NORMALIZATION LOCAL_RESPONSE_NORMALIZATION SPACE_TO_DEPTH DEPTH_TO_SPACE QUANTIZE
    DEQUANTIZE""".split()
    assert [op for op in ops if op not in tflite.TABLE] == []
    # and the recorded models exercise every one of them.
    used = set()
    for path in MODELS.glob("[!bh]*.tflite"):  # not bad_* or hostile_*
        used.update(op.op for g in tflite.read_model(path).subgraphs for op in g.operators)
    assert set(ops) - used == set()


# -- damaged and unsupported models ---------------------------------------------------------
@pytest.mark.parametrize(
    "name,error,message",
    [
        ("bad_custom_op", UnsupportedModelError, "custom op 'MyFancyOp'"),
        ("bad_flex_op", UnsupportedModelError, "Flex op 'TensorListReserve' (SELECT_TF_OPS"),
        ("bad_unsupported_op", UnsupportedModelError, "1 unsupported operator(s): LSH_PROJ"),
        ("bad_far_buffer", TFLiteFormatError, "is past the end of the file"),
        ("bad_short_buffer", TFLiteFormatError, "needs 32 bytes, its buffer 3 holds 28"),
        ("bad_bad_tensor_index", TFLiteFormatError, "tensor index 9999 is not in [0, 12)"),
    ],
)
def test_bad_models_raise_naming_what_is_wrong(name, error, message):
    with pytest.raises(error) as info, tf.Session(graph=tf.Graph()) as sess:
        tflite.load(sess, str(MODELS / f"{name}.tflite"))
    assert message in str(info.value)


@pytest.mark.parametrize("cut", [0, 7, 100, 1000, -200, -1])
def test_a_truncated_file_is_refused(cut):
    data = (MODELS / "mlp.tflite").read_bytes()[:cut]
    with pytest.raises(TFLiteFormatError):
        tflite.import_model(data)


def test_not_a_tflite_file_and_a_bad_root_offset():
    with pytest.raises(TFLiteFormatError, match="no TFL3 file identifier"):
        tflite.import_model(b"\x08\x00\x00\x00ONNXsomething")
    data = bytearray((MODELS / "mlp.tflite").read_bytes())
    data[0:4] = (0xFFFFFF00).to_bytes(4, "little")
    with pytest.raises(TFLiteFormatError, match="root table offset"):
        tflite.import_model(bytes(data))


def test_corrupted_bytes_load_or_raise_the_format_error():
    # Every corruption either still loads or raises TFLiteFormatError: never an IndexError,
    # a struct.error or a hang from the flatbuffer accessors.
    original = (MODELS / "mlp.tflite").read_bytes()
    rng = np.random.default_rng(5)
    outcomes = {"loaded": 0, "refused": 0}
    for _ in range(150):
        data = bytearray(original)
        for pos in rng.integers(8, len(data), size=3):
            data[pos] = int(rng.integers(0, 256))
        try:
            tflite.import_model(bytes(data))
            outcomes["loaded"] += 1
        except TFLiteFormatError:
            outcomes["refused"] += 1
    assert outcomes["refused"] > 0 and outcomes["loaded"] > 0
