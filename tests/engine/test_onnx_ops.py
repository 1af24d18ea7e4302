"""Op-table rows for the ONNX-only engine ops (engine/formats/onnx/ops.py)."""

import math

import numpy as np
import pytest

import engine as tf
from engine.formats.onnx.ops import ONNX_OP_TYPES
from engine.ops import array as array_ops
from engine.ops._common import create
from tests.engine.onnx_text_cases import TEXT_CASES
from tests.engine.optable import Case, check_case

F = np.float32
rng = np.random.default_rng(7)
a = rng.standard_normal((2, 3)).astype(F)
b = rng.standard_normal((3, 4)).astype(F)
x4 = rng.standard_normal((2, 5, 3, 3)).astype(F)
ints = np.array([[7, -7, 8], [-9, 9, 3]], np.int32)
divs = np.array([[2, 2, -3], [4, -4, 2]], np.int32)
I64 = np.int64


def _op(op_type, attrs=None, n=0):
    return lambda *xs: create(op_type, list(xs), attrs or {}).outputs[n]


def _lrn_ref(x, size, alpha, beta, bias):
    sq = x.astype(np.float64) ** 2
    out = np.zeros_like(sq)
    c = x.shape[1]
    for i in range(c):
        lo, hi = max(0, i - (size - 1) // 2), min(c - 1, i + size - 1 - (size - 1) // 2)
        out[:, i] = sq[:, lo : hi + 1].sum(axis=1)
    return (x / (bias + alpha / size * out) ** beta).astype(x.dtype)


_erf = np.vectorize(math.erf)
_Q = rng.standard_normal((1, 4, 3, 2)).astype(F)
_KV = rng.standard_normal((1, 2, 3, 2)).astype(F)


def _attention_ref(q, k, v):
    k, v = np.repeat(k, 2, axis=1), np.repeat(v, 2, axis=1)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    scores = np.where(np.tril(np.ones((3, 3), bool)), scores, -np.inf)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    return ((p / p.sum(-1, keepdims=True)) @ v).astype(F)


_RESIZE = {
    "mode": "nearest",
    "coordinate_transformation_mode": "half_pixel",
    "nearest_mode": "floor",
    "cubic_coeff_a": -0.75,
    "exclude_outside": 0,
    "extrapolation_value": 0.0,
    "axes": [],
    "keep_aspect_ratio_policy": "stretch",
}

CASES = [
    Case("erf", _op("OnnxErf"), [a * 2], lambda x: _erf(x).astype(F), rtol=2e-6, atol=2e-7),
    Case(
        "erf_f64",
        _op("OnnxErf"),
        [np.linspace(-4, 4, 17)],
        lambda x: _erf(x),
        rtol=2e-7,
        atol=2e-7,
    ),
    Case(
        "trunc_div",
        _op("OnnxTruncDiv"),
        [ints, divs],
        lambda x, y: np.trunc(x / y).astype(np.int32),
    ),
    Case("fmod_int", _op("OnnxFmod"), [ints, divs], lambda x, y: np.fmod(x, y)),
    Case("fmod_float", _op("OnnxFmod"), [a, a * 0 + F(0.7)], lambda x, y: np.fmod(x, y)),
    Case("matmul_2d", _op("OnnxMatMul"), [a, b], np.matmul, [2, 4], rtol=1e-5),
    Case("matmul_vec", _op("OnnxMatMul"), [a[0], b], np.matmul, [4], rtol=1e-5),
    Case(
        "matmul_batch",
        _op("OnnxMatMul"),
        [np.stack([a, a + 1]), b],
        np.matmul,
        [2, 2, 4],
        rtol=1e-5,
    ),
    Case(
        "reshape_zero",
        _op("OnnxReshape", {"allowzero": 0}),
        [x4, np.array([0, -1], I64)],
        lambda x, s: x.reshape(2, -1),
    ),
    Case(
        "slice_negative_step",
        _op("OnnxSlice"),
        [
            x4,
            np.array([-1, 1], I64),
            np.array([-(10**10), 10**10], I64),
            np.array([1, 2], I64),
            np.array([-2, 1], I64),
        ],
        lambda x, *_: x[:, ::-2, 1:],
    ),
    Case(
        "slice_default_axes",
        _op("OnnxSlice"),
        [a, np.array([1], I64), np.array([2], I64), np.zeros([0], I64), np.zeros([0], I64)],
        lambda x, *_: x[1:2],
    ),
    Case(
        "gather_negative",
        _op("OnnxGather", {"axis": 1}),
        [a, np.array([[-1, 0]], I64)],
        lambda x, i: x[:, [[2, 0]]],
        [2, 1, 2],
    ),
    Case(
        "gather_elements",
        _op("OnnxGatherElements", {"axis": 1}),
        [a, np.array([[2, -3, 0], [1, 1, 1]], I64)],
        lambda x, i: np.take_along_axis(x, np.where(i < 0, i + 3, i), axis=1),
    ),
    Case(
        "expand_both_ways",
        _op("OnnxExpand"),
        [a[:, :1], np.array([3, 1, 4], I64)],
        lambda x, s: np.broadcast_to(x, (3, 2, 4)).copy(),
    ),
    Case(
        "pad_edge_negative",
        _op("OnnxPad", {"mode": "edge"}),
        [a, np.array([1, -1, 0, 2], I64), np.zeros([0], F), np.zeros([0], I64)],
        lambda x, *_: np.pad(x[:, 1:], [(1, 0), (0, 2)], mode="edge"),
    ),
    Case(
        "pad_constant_axes",
        _op("OnnxPad", {"mode": "constant"}),
        [a, np.array([2, 1], I64), np.array([F(9)]), np.array([-1], I64)],
        lambda x, *_: np.pad(x, [(0, 0), (2, 1)], constant_values=9),
    ),
    Case(
        "pad_reflect_wrap",
        _op("OnnxPad", {"mode": "wrap"}),
        [a, np.array([0, 2, 0, 1], I64), np.zeros([0], F), np.zeros([0], I64)],
        lambda x, *_: np.pad(x, [(0, 0), (2, 1)], mode="wrap"),
    ),
    Case(
        "top_k_axis0_smallest",
        _op("OnnxTopK", {"axis": 0, "largest": 0, "sorted": 1}),
        [np.array([[3, 1], [1, 1], [2, 0]], np.int32), np.array([2], I64)],
        lambda x, k: np.array([[1, 0], [2, 1]], np.int32),
    ),
    Case(
        "top_k_indices",
        _op("OnnxTopK", {"axis": -1, "largest": 1, "sorted": 1}, n=1),
        [np.array([[1.0, 3.0, 3.0, 2.0]], F), np.array([3], I64)],
        lambda x, k: np.array([[1, 2, 3]], I64),
    ),
    Case(
        "reduce_runtime_axes",
        _op("OnnxReduce", {"kind": "log_sum_exp", "keepdims": 0, "noop_with_empty_axes": 0}),
        [x4, np.array([-1, 1], I64)],
        lambda x, a: np.log(np.exp(x).sum(axis=(1, 3))),
        rtol=1e-5,
    ),
    Case(
        "reduce_empty_axes_noop",
        _op("OnnxReduce", {"kind": "sum", "keepdims": 1, "noop_with_empty_axes": 1}),
        [a, np.zeros([0], I64)],
        lambda x, _: x,
    ),
    Case(
        "reduce_max_of_empty",
        _op("OnnxReduce", {"kind": "max", "keepdims": 1, "noop_with_empty_axes": 0}),
        [np.zeros((2, 0), F), np.array([1], I64)],
        lambda x, _: np.full((2, 1), -np.inf, F),
    ),
    Case(
        "trilu_lower",
        _op("OnnxTrilu", {"upper": 0}),
        [x4, np.array(-1, I64)],
        lambda x, k: np.tril(x, -1),
    ),
    Case(
        "bit_shift",
        _op("OnnxBitShift", {"direction": "LEFT"}),
        [np.array([1, 2, 255], np.uint8), np.array([1, 3, 1], np.uint8)],
        lambda x, y: np.left_shift(x, y),
    ),
    Case(
        "resize_nearest_asymmetric",
        _op("OnnxResize", dict(_RESIZE, coordinate_transformation_mode="asymmetric")),
        [x4[:1, :1], np.zeros([0], F), np.array([1, 1, 2, 2], F), np.zeros([0], I64)],
        lambda x, *_: x.repeat(2, axis=2).repeat(2, axis=3),
    ),
    Case(
        "resize_linear_align_corners_sizes",
        _op(
            "OnnxResize",
            dict(_RESIZE, mode="linear", coordinate_transformation_mode="align_corners"),
        ),
        [np.array([[0.0, 3.0]], F), np.zeros([0], F), np.zeros([0], F), np.array([1, 4], I64)],
        lambda *_: np.array([[0.0, 1.0, 2.0, 3.0]], F),
    ),
    Case(
        "unary_math_asinh",
        _op("OnnxUnaryMath", {"fn": "arcsinh"}),
        [a],
        np.arcsinh,
        rtol=1e-6,
    ),
    Case(
        # 2x2 windows with dilation 2 over a 1x1x4x4 ramp: taps (i, j), (i, j+2), (i+2, j)...
        "window_pool_dilated_max",
        _op(
            "OnnxWindowPool",
            {"mode": "max", "kernel": [2, 2], "strides": [1, 1], "dilations": [2, 2]},
        ),
        [np.arange(16, dtype=F).reshape(1, 1, 4, 4)],
        lambda x: np.array([[[[10, 11], [14, 15]]]], F),
    ),
    Case(
        "window_pool_dilated_sum",
        _op("OnnxWindowPool", {"mode": "sum", "kernel": [2], "strides": [2], "dilations": [3]}),
        [np.arange(8, dtype=F).reshape(1, 1, 8)],
        lambda x: np.array([[[3, 7, 11]]], F),
    ),
    Case(
        # One head of 2 features, rotated by 90 degrees at position 1, not at position 0.
        "rotary_embedding_positions",
        _op(
            "OnnxRotaryEmbedding",
            {"interleaved": 0, "rotary_embedding_dim": 0, "num_heads": 1, "has_positions": 1},
        ),
        [
            np.array([[[1.0, 2.0], [1.0, 2.0]]], F),
            np.array([[1.0], [0.0]], F),
            np.array([[0.0], [1.0]], F),
            np.array([[0, 1]], I64),
        ],
        lambda *_: np.array([[[1.0, 2.0], [-2.0, 1.0]]], F),
    ),
    Case(
        # Corners of a 2x2 image with align_corners: the corner pixels themselves.
        "grid_sample_corners",
        _op("OnnxGridSample", {"mode": "linear", "padding_mode": "zeros", "align_corners": 1}),
        [
            np.array([[[[1.0, 2.0], [3.0, 4.0]]]], F),
            np.array([[[[-1.0, -1.0], [1.0, 1.0], [1.0, -1.0]]]], F),
        ],
        lambda *_: np.array([[[[1.0, 4.0, 2.0]]]], F),
    ),
    Case(
        # The DFT of [1, 0, 0, 0] is flat; onesided keeps n // 2 + 1 bins.
        "dft_impulse_onesided",
        _op("OnnxDFT", {"inverse": 0, "onesided": 1, "has_length": 0}),
        [np.array([[[1.0], [0.0], [0.0], [0.0]]], F), np.array(0, I64), np.array(1, I64)],
        lambda *_: np.array([[[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]]], F),
    ),
    Case(
        # Frames [1, 1] and [1, 1] (step 2): DC 2, the other bin 0.
        "stft_constant",
        _op("OnnxSTFT", {"onesided": 1, "has_window": 0, "has_length": 1}),
        [np.ones((1, 4, 1), F), np.array(2, I64), np.zeros(0, F), np.array(2, I64)],
        lambda *_: np.array([[[[2.0, 0.0], [0.0, 0.0]], [[2.0, 0.0], [0.0, 0.0]]]], F),
    ),
    Case(
        "mel_weight_matrix_shape",
        lambda *xs: array_ops.shape(
            create("OnnxMelWeightMatrix", list(xs), {"output_type": tf.float32}).outputs[0]
        ),
        [
            np.array(4, I64),
            np.array(16, I64),
            np.array(8000, I64),
            np.array(0.0, F),
            np.array(3000.0, F),
        ],
        lambda *_: np.array([9, 4], np.int32),
    ),
    Case(
        "unsqueeze_computed_axes",
        _op("OnnxUnsqueeze"),
        [a, np.array([-1, 0], I64)],
        lambda x, _: x[None, :, :, None],
    ),
    Case(
        "squeeze_computed_axes",
        _op("OnnxSqueeze"),
        [a[None, :, None, :], np.array([2], I64)],
        lambda x, _: x[:, :, 0, :],
    ),
    Case(
        "unique_first_occurrence",
        _op("OnnxUnique", {"axis": -1, "sorted": 0}, n=2),
        [np.array([[2, 1], [1, 3]], F)],
        lambda x: np.array([0, 1, 1, 2], I64),
    ),
    Case(
        # Box 1 overlaps box 0 (IoU 0.81) and goes; box 2 is apart and stays.
        "non_max_suppression",
        _op("OnnxNonMaxSuppression", {"center_point_box": 0, "has_score_threshold": False}),
        [
            np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1], [0, 5, 1, 6]]], F),
            np.array([[[0.9, 0.8, 0.7]]], F),
            np.array(10, I64),
            np.array(0.5, F),
            np.array(0.0, F),
        ],
        lambda *_: np.array([[0, 0, 0], [0, 0, 2]], I64),
    ),
    Case(
        # One 2x2 bin per pixel of a 4x4 ramp: the pixel values themselves.
        "roi_align_pixels",
        _op(
            "OnnxRoiAlign",
            {
                "mode": "avg",
                "output_height": 2,
                "output_width": 2,
                "sampling_ratio": 1,
                "spatial_scale": 1.0,
                "half_pixel": True,
            },
        ),
        [np.arange(16, dtype=F).reshape(1, 1, 4, 4), np.array([[0, 0, 2, 2]], F), np.zeros(1, I64)],
        lambda *_: np.array([[[[0, 1], [4, 5]]]], F),
    ),
    Case(
        "max_roi_pool",
        _op("OnnxMaxRoiPool", {"pooled_shape": [1, 1], "spatial_scale": 1.0}),
        [np.arange(16, dtype=F).reshape(1, 1, 4, 4), np.array([[0, 0, 0, 2, 2]], F)],
        lambda *_: np.array([[[[10]]]], F),
    ),
    Case(
        "hardmax",
        _op("OnnxHardmax", {"axis": 1}),
        [np.array([[1, 3, 3], [2, 0, 1]], F)],
        lambda x: np.array([[0, 1, 0], [1, 0, 0]], F),
    ),
    Case(
        "one_hot_negative_index",
        _op("OnnxOneHot", {"axis": -1}),
        [np.array([0, -1, 2], I64), np.array(3, I64), np.array([0, 5], np.int32)],
        lambda *_: np.array([[5, 0, 0], [0, 0, 5], [0, 0, 5]], np.int32),
    ),
    Case(
        "scatter_nd_add",
        _op("OnnxScatterND", {"reduction": "add"}),
        [a, np.array([[0, 1], [0, 1], [1, -1]], I64), np.array([1, 2, 3], F)],
        lambda x, *_: x + np.array([[0, 3, 0], [0, 0, 3]], F),
    ),
    Case(
        "scatter_elements",
        _op("OnnxScatterElements", {"axis": 1, "reduction": "none"}),
        [a, np.array([[2], [-3]], I64), np.array([[7], [8]], F)],
        lambda x, *_: np.where([[0, 0, 1], [1, 0, 0]], np.array([[7, 7, 7], [8, 8, 8]], F), x),
    ),
    Case(
        "gather_nd_batch",
        _op("OnnxGatherND", {"batch_dims": 1}),
        [a, np.array([[2], [0]], I64)],
        lambda x, i: np.array([x[0, 2], x[1, 0]], F),
    ),
    Case(
        "depth_to_space_crd",
        _op("OnnxDepthToSpace", {"blocksize": 2, "mode": "CRD", "inverse": 0}),
        [np.arange(16, dtype=F).reshape(1, 4, 2, 2)],
        lambda x: x.reshape(1, 1, 2, 2, 2, 2).transpose(0, 1, 4, 2, 5, 3).reshape(1, 1, 4, 4),
    ),
    Case(
        "eye_like",
        _op("OnnxEyeLike", {"dtype": tf.int32, "k": 1}),
        [a],
        lambda x: np.eye(2, 3, k=1, dtype=np.int32),
    ),
    Case(
        "nonzero",
        _op("OnnxNonZero"),
        [np.array([[1, 0], [0, 3]], np.int32)],
        lambda x: np.array(np.nonzero(x), I64),
    ),
    Case(
        "compress_axis",
        _op("OnnxCompress", {"axis": 1}),
        [a, np.array([True, False, True])],
        lambda x, c: x[:, c],
    ),
    Case(
        "reverse_sequence",
        _op("OnnxReverseSequence", {"batch_axis": 0, "time_axis": 1}),
        [a, np.array([2, 3], I64)],
        lambda x, _: np.array([x[0, [1, 0, 2]], x[1, ::-1]]),
    ),
    Case(
        "det",
        _op("OnnxDet"),
        [np.array([[[2, 1], [1, 3]], [[1, 2], [3, 4]]], F)],
        lambda x: np.array([5, -2], F),
        rtol=1e-5,
    ),
    Case(
        "attention_causal_gqa",
        _op(
            "OnnxAttention",
            {
                "present": [0, 0, 0, 0],
                "scale": None,
                "is_causal": 1,
                "q_num_heads": None,
                "kv_num_heads": None,
                "softcap": None,
                "qk_matmul_output_mode": 0,
                "left_window_size": -1,
                "right_window_size": -1,
                "softmax_dtype": None,
            },
        ),
        [_Q, _KV, _KV * 2, *[np.zeros([0], F)] * 4],
        lambda q, k, v, *_: _attention_ref(q, k, v),
        rtol=1e-5,
    ),
    Case(
        "nll_loss_weighted_ignore",
        _op("OnnxNLLLoss", {"reduction": "mean", "ignore_index": 1, "has_weight": 1}),
        [a, np.array([0, 1], I64), np.array([2, 1, 3], F)],
        lambda x, t, w: np.array(-x[0, 0] * 2 / 2, F),
    ),
    Case(
        "softmax_cross_entropy_log_prob",
        _op(
            "OnnxSoftmaxCrossEntropyLoss",
            {"reduction": "none", "ignore_index": None, "has_weight": 0},
            n=1,
        ),
        [a, np.array([2, 0], I64), np.zeros([0], F)],
        lambda x, *_: (x - np.log(np.exp(x).sum(axis=1, keepdims=True))).astype(F),
        rtol=1e-5,
    ),
    Case(
        "lrn",
        _op("OnnxLRN", {"size": 3, "alpha": 1e-3, "beta": 0.75, "bias": 1.0}),
        [x4],
        lambda x: _lrn_ref(x, 3, 1e-3, 0.75, 1.0),
        rtol=1e-5,
    ),
]

CASES += TEXT_CASES  # the text ops' rows (engine/formats/onnx/ops_text.py)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_onnx_op_table(case):
    check_case(case)


def test_every_onnx_op_has_a_table_row():
    seen = set()
    for case in CASES:
        g = tf.Graph()
        with g.as_default():
            case.build(*[tf.constant(v) for v in case.inputs])
        seen |= {op.type for op in g.get_operations()}
    assert set(ONNX_OP_TYPES) <= seen, sorted(set(ONNX_OP_TYPES) - seen)


@pytest.mark.parametrize(
    "op_type,inputs,attrs,match",
    [
        ("OnnxTruncDiv", [ints, divs * 0], {}, "division by zero"),
        ("OnnxGather", [a, np.array([3], I64)], {"axis": 1}, "out of bounds"),
        ("OnnxReshape", [a, np.array([4, -1], I64)], {"allowzero": 0}, "cannot reshape"),
        (
            "OnnxSlice",
            [a, np.array([0], I64), np.array([1], I64), np.array([0], I64), np.array([0], I64)],
            {},
            "step cannot be 0",
        ),
        ("OnnxExpand", [a, np.array([4, 3], I64)], {}, "does not broadcast"),
        ("OnnxTopK", [a, np.array([5], I64)], {"axis": 1, "largest": 1, "sorted": 1}, "k=5"),
    ],
)
def test_bad_runtime_inputs_raise_invalid_argument(op_type, inputs, attrs, match):
    out = create(op_type, [tf.constant(v) for v in inputs], attrs).outputs[0]
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match=match):
        sess.run(out)
