"""ONNX Conv, ConvTranspose, MaxPool and AveragePool on 3-D (volumetric) data against
onnxruntime: pads, auto_pad, strides, dilations, groups, output_padding and output_shape,
ceil_mode and count_include_pad."""

import numpy as np
import pytest

from engine.formats.onnx import mapping
from tests.engine.test_onnx_import import assert_same_as_ort, init, model_bytes, run_engine, vi

onnx = pytest.importorskip("onnx", reason="test models are built with onnx.helper")
pytest.importorskip("onnxruntime", reason="onnxruntime is the oracle")
from onnx import TensorProto, helper  # noqa: E402

rng = np.random.default_rng(5)
F = TensorProto.FLOAT
X = rng.standard_normal((2, 4, 5, 6, 7)).astype(np.float32)  # N, C, D, H, W


def _conv_model(w_shape, bias=True, weight_input=False, **attrs):
    w = rng.standard_normal(w_shape).astype(np.float32)
    b = rng.standard_normal(w_shape[0]).astype(np.float32)
    names = ["x", "w"] + (["b"] if bias else [])
    node = helper.make_node("Conv", names, ["y"], **attrs)
    inputs = [vi("x", F, ["N", 4, 5, 6, 7])]
    inits = [init("b", b)] if bias else []
    if weight_input:
        inputs.append(vi("w", F, list(w_shape)))
    else:
        inits.append(init("w", w))
    feeds = {"x": X, **({"w": w} if weight_input else {})}
    return model_bytes([node], inputs, [vi("y", F, None)], inits), feeds


CONVS = {
    "pads_strides_dilations": ((3, 4, 2, 3, 2), {}, dict(pads=[1, 0, 2, 0, 1, 1],
                                                       strides=[1, 2, 2], dilations=[2, 1, 2])),
    "group2_same_upper": ((6, 2, 3, 3, 3), {}, dict(group=2, auto_pad="SAME_UPPER",
                                                   strides=[2, 1, 2])),
    "depthwise_same_lower": ((8, 1, 2, 2, 3), {}, dict(group=4, auto_pad="SAME_LOWER")),
    "no_bias_valid": ((5, 4, 1, 3, 2), {"bias": False}, dict(auto_pad="VALID")),
    "weight_input": ((3, 4, 2, 2, 2), {"weight_input": True}, dict(pads=[1, 1, 1, 1, 1, 1])),
}  # fmt: skip


@pytest.mark.parametrize("key", sorted(CONVS))
def test_conv_3d_matches_onnxruntime(key):
    w_shape, kw, attrs = CONVS[key]
    data, feeds = _conv_model(w_shape, **kw, **attrs)
    assert_same_as_ort(data, feeds)


def _transpose_model(w_shape, x_shape, **attrs):
    w = rng.standard_normal(w_shape).astype(np.float32)
    b = rng.standard_normal(w_shape[1]).astype(np.float32)
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)
    x = rng.standard_normal(x_shape).astype(np.float32)
    inits = [init("w", w), init("b", b)]
    data = model_bytes([node], [vi("x", F, list(x_shape))], [vi("y", F, None)], inits)
    return data, {"x": x}


TRANSPOSES = {
    "strides_pads": ((3, 2, 3, 3, 2), dict(strides=[2, 2, 1], pads=[1, 0, 0, 0, 1, 1])),
    "output_padding": ((3, 4, 2, 3, 3), dict(strides=[2, 3, 2], output_padding=[1, 2, 0])),
    "output_shape": ((3, 2, 3, 2, 2), dict(strides=[2, 2, 2], output_shape=[6, 7, 6])),
    "dilations_same_upper": ((3, 2, 2, 3, 2), dict(dilations=[2, 1, 2], auto_pad="SAME_UPPER",
                                                  strides=[2, 2, 2])),
}  # fmt: skip


@pytest.mark.parametrize("key", sorted(TRANSPOSES))
def test_conv_transpose_3d_matches_onnxruntime(key):
    w_shape, attrs = TRANSPOSES[key]
    data, feeds = _transpose_model(w_shape, (2, 3, 3, 4, 3), **attrs)
    assert_same_as_ort(data, feeds)


POOLS = {
    "max_pads_strides": ("MaxPool", dict(kernel_shape=[2, 3, 2], strides=[2, 2, 1],
                                         pads=[1, 0, 1, 0, 1, 0])),
    "max_same_upper": ("MaxPool", dict(kernel_shape=[3, 3, 3], strides=[2, 2, 2],
                                       auto_pad="SAME_UPPER")),
    "max_ceil": ("MaxPool", dict(kernel_shape=[2, 2, 3], strides=[2, 2, 2], ceil_mode=1)),
    "avg_pads_exclude": ("AveragePool", dict(kernel_shape=[3, 2, 3], strides=[1, 2, 2],
                                             pads=[1, 1, 0, 1, 0, 2])),
    "avg_pads_include": ("AveragePool", dict(kernel_shape=[3, 2, 3], strides=[1, 2, 2],
                                             pads=[1, 1, 0, 1, 0, 2], count_include_pad=1)),
    "avg_same_upper": ("AveragePool", dict(kernel_shape=[2, 3, 3], strides=[2, 1, 2],
                                           auto_pad="SAME_UPPER")),
    "avg_ceil": ("AveragePool", dict(kernel_shape=[3, 3, 2], strides=[2, 2, 2], ceil_mode=1)),
}  # fmt: skip


@pytest.mark.parametrize("key", sorted(POOLS))
def test_pool_3d_matches_onnxruntime(key):
    op_type, attrs = POOLS[key]
    node = helper.make_node(op_type, ["x"], ["y"], **attrs)
    data = model_bytes([node], [vi("x", F, ["N", 4, 5, 6, 7])], [vi("y", F, None)])
    assert_same_as_ort(data, {"x": X})


def test_four_spatial_dims_are_refused_by_name():
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[1, 1, 1, 1])
    data = model_bytes([node], [vi("x", F, [1, 1, 2, 2, 2, 2])], [vi("y", F, None)])
    with pytest.raises(mapping.UnsupportedModelError, match=r"MaxPool on 4-D data.*3-D run"):
        run_engine(data, {"x": np.zeros((1, 1, 2, 2, 2, 2), np.float32)})


@pytest.mark.parametrize("rank", [2, 3])
def test_conv_transpose_output_shape_puts_the_odd_pad_first(rank):
    # auto_pad NOTSET with output_shape pads as SAME_LOWER does (the ONNX spec, onnxruntime).
    w_shape = (3, 2, 3, 2, 2)[: 2 + rank]
    out = [6, 7, 6][:rank]
    data, feeds = _transpose_model(w_shape, (2, 3, 3, 4, 3)[: 2 + rank], strides=[2] * rank,
                                   output_shape=out)  # fmt: skip
    assert_same_as_ort(data, feeds)
