"""Op-table rows for ai.onnx.ml ``SVMRegressor`` and ``SVMClassifier`` (libsvm models as
skl2onnx writes them: kernels LINEAR, POLY, RBF and SIGMOID, one-vs-one voting, and Platt's
pairwise probabilities coupled by the iterative method of Wu, Lin and Weng, as in
onnxruntime's ``svmclassifier.cc``).

All rows are computed at once: the kernel matrix [rows, support vectors] is one matmul (RBF
from squared distances in float64, which keeps float32 accuracy), the pairwise decision values
are one more matmul with a [support vectors, pairs] coefficient matrix built at import, and
the votes are two matmuls with pair-to-class indicator matrices. The probability coupling
runs up to onnxruntime's 100 iterations in a ``while_loop``, each row stopping when it
converges.
"""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.formats.onnx import _tf as tf
from engine.formats.onnx.mapping import ML_DOMAIN, UnsupportedModelError, register
from engine.formats.onnx.mapping_ml import (
    MAX_ML_ENTRIES,
    bounded,
    class_labels,
    first_argmax,
    floats,
    ints,
    label_of,
    logistic,
    post_transform,
    probit,
    rows,
    second_column,
    transform_name,
    where,
)
from engine.formats.onnx.tensors import OnnxFormatError
from engine.framework.graph import Tensor
from engine.ops.reduction import reduce_any

__all__: list[str] = []

KERNELS = ("LINEAR", "POLY", "RBF", "SIGMOID")
MAX_CLASSES = 1 << 10  # pairs grow with the square of the classes
# The [vectors, pairs] and [pairs, classes] tables built at import are bounded too.
MAX_PAIR_ENTRIES = MAX_ML_ENTRIES


def _f32(value) -> Tensor:
    return tf.constant(np.asarray(value, dtype=np.float32))


def _kernel_params(ctx, node):
    kernel = ctx.attr(node, "kernel_type", "LINEAR")
    if kernel not in KERNELS:
        raise UnsupportedModelError(f"{where(node)}: kernel_type {kernel!r}, expected {KERNELS}")
    params = floats(ctx, node, "kernel_params", [])
    gamma, coef0, degree = (list(params[:3]) + [0.0, 0.0, 0.0])[:3] if len(params) else (0, 0, 0)
    return kernel, np.float32(gamma), np.float32(coef0), np.float32(degree)


def kernel_matrix(x: Tensor, vectors: np.ndarray, kernel, gamma, coef0, degree) -> Tensor:
    """k(x_n, v_m) for every row and support vector: [rows, vectors]."""
    if kernel == "RBF":
        wide = tf.cast(x, dtypes.float64)
        v = vectors.astype(np.float64)
        dot = tf.matmul(wide, tf.constant(np.ascontiguousarray(v.T)))
        norms = tf.reduce_sum(tf.multiply(wide, wide), axis=1, keepdims=True)
        twice = tf.multiply(tf.constant(np.float64(2.0)), dot)
        squared = tf.add(tf.subtract(norms, twice), tf.constant((v * v).sum(1)))
        squared = tf.cast(tf.maximum(squared, tf.constant(np.float64(0.0))), tf.float32)
        return tf.exp(tf.multiply(_f32(-gamma), squared))
    dot = tf.matmul(x, tf.constant(np.ascontiguousarray(vectors.T)))
    if kernel == "LINEAR":
        return dot
    inner = tf.add(tf.multiply(_f32(gamma), dot), _f32(coef0))
    if kernel == "SIGMOID":
        return tf.tanh(inner)
    if degree == 2:
        return tf.multiply(inner, inner)
    if degree == 3:
        return tf.multiply(tf.multiply(inner, inner), inner)
    return tf.pow(inner, _f32(degree))


def _support_vectors(ctx, node, count: int) -> np.ndarray:
    vectors = floats(ctx, node, "support_vectors", [])
    if not count or len(vectors) % count:
        raise OnnxFormatError(f"{where(node)}: {len(vectors)} support vector values for {count}")
    return vectors.reshape(count, -1)


def _regressor(ctx, node):
    kernel, gamma, coef0, degree = _kernel_params(ctx, node)
    count = int(ctx.attr(node, "n_supports", 0))
    coefficients = floats(ctx, node, "coefficients", [])
    rho = floats(ctx, node, "rho", [])
    if not len(rho) or not len(coefficients):
        raise OnnxFormatError(f"{where(node)} needs coefficients and rho")
    if count > 0:
        if len(coefficients) < count:
            raise OnnxFormatError(
                f"{where(node)}: {len(coefficients)} coefficients, {count} vectors"
            )
        vectors = _support_vectors(ctx, node, count)
        x = rows(ctx, node, ctx.input(node, 0), vectors.shape[1])
        k = kernel_matrix(x, vectors, kernel, gamma, coef0, degree)
        out = tf.matmul(k, _f32(coefficients[:count].reshape(-1, 1)))
    else:
        x = rows(ctx, node, ctx.input(node, 0), len(coefficients))
        out = tf.matmul(x, _f32(coefficients.reshape(-1, 1)))
    out = tf.add(out, _f32(rho[0]))
    if ctx.attr(node, "one_class", 0):
        out = tf.where_v2(tf.greater(out, _f32(0.0)), _f32(1.0), _f32(-1.0))
    return [out]


def _pairs(classes: int) -> list[tuple[int, int]]:
    return [(i, j) for i in range(classes - 1) for j in range(i + 1, classes)]


def _pair_coefficients(coefficients, per_class, pairs, node) -> np.ndarray:
    """[vectors, pairs]: the coefficients combining the kernel values into each pair's
    decision value (class i's vectors with row j-1, class j's with row i)."""
    count = int(per_class.sum())
    classes = len(per_class)
    if len(coefficients) < (classes - 1) * count:
        raise OnnxFormatError(
            f"{where(node)}: {len(coefficients)} coefficients, expected {(classes - 1) * count}"
        )
    rows_ = coefficients[: (classes - 1) * count].reshape(classes - 1, count)
    start = np.concatenate([[0], np.cumsum(per_class)]).astype(np.int64)
    out = np.zeros((count, len(pairs)), np.float64)
    for p, (i, j) in enumerate(pairs):
        out[start[i] : start[i + 1], p] = rows_[j - 1, start[i] : start[i + 1]]
        out[start[j] : start[j + 1], p] = rows_[i, start[j] : start[j + 1]]
    return out


def _indicator(pairs, classes: int, side: int) -> np.ndarray:
    out = np.zeros((len(pairs), classes), np.float32)
    for p, pair in enumerate(pairs):
        out[p, pair[side]] = 1.0
    return out


def couple(r: Tensor, classes: int) -> Tensor:
    """Class probabilities [rows, classes] from pairwise ones r [rows, classes, classes] by
    onnxruntime's ``multiclass_probability`` (at most 100 sweeps; a row stops once every
    |Qp_i - pQp| < 0.005 / classes)."""
    rt = tf.transpose(r, [0, 2, 1])
    eye = np.eye(classes, dtype=np.float32)
    diagonal = tf.expand_dims(tf.reduce_sum(tf.multiply(rt, rt), axis=2), 2)
    q = tf.add(
        tf.multiply(tf.negative(tf.multiply(rt, r)), _f32(1.0 - eye)),
        tf.multiply(diagonal, _f32(eye)),
    )
    p0 = tf.multiply(tf.ones_like(r[:, 0, :]), _f32(1.0 / classes))
    eps = _f32(0.005 / classes)

    def sweep(p, qp, pqp):
        for i in range(classes):
            qii = q[:, i, i : i + 1]
            diff = tf.realdiv(tf.add(tf.negative(qp[:, i : i + 1]), pqp), qii)
            p = tf.add(p, tf.multiply(diff, _f32(eye[i])))
            grow = tf.add(_f32(1.0), diff)
            pqp = tf.realdiv(
                tf.realdiv(
                    tf.add(
                        pqp,
                        tf.multiply(
                            diff,
                            tf.add(
                                tf.multiply(diff, qii), tf.multiply(_f32(2.0), qp[:, i : i + 1])
                            ),
                        ),
                    ),
                    grow,
                ),
                grow,
            )
            qp = tf.realdiv(tf.add(qp, tf.multiply(diff, q[:, i, :])), grow)
            p = tf.realdiv(p, grow)
        return p

    def body(step, p, active):
        qp = tf.reduce_sum(tf.multiply(q, tf.expand_dims(p, 1)), axis=2)
        pqp = tf.reduce_sum(tf.multiply(p, qp), axis=1, keepdims=True)
        error = tf.reduce_max(tf.abs(tf.subtract(qp, pqp)), axis=1)
        active = tf.logical_and(active, tf.greater_equal(error, eps))
        p = tf.where_v2(tf.expand_dims(active, 1), sweep(p, qp, pqp), p)
        return tf.add(step, tf.constant(1)), p, active

    def more(step, p, active):
        return tf.logical_and(tf.less(step, tf.constant(100)), reduce_any(active))

    active0 = tf.greater(p0[:, 0], _f32(-1.0))
    _, p, _ = tf.while_loop(more, body, [tf.constant(0), p0, active0])
    return p


def _probabilities(scores, pairs, classes, prob_a, prob_b) -> Tensor:
    n = len(pairs)
    a, b = _f32(prob_a[:n]), _f32(prob_b[:n])
    val = tf.subtract(_f32(1.0), logistic(tf.add(tf.multiply(scores, a), b)))
    val = tf.minimum(tf.maximum(val, _f32(1e-7)), _f32(1 - 1e-7))
    # r[i, j] = val of pair (i, j), r[j, i] = 1 - val, the diagonal 0: placed by index.
    columns = np.full(classes * classes, 2 * n, np.int64)
    for p, (i, j) in enumerate(pairs):
        columns[i * classes + j] = p
        columns[j * classes + i] = n + p
    zero = tf.multiply(tf.ones_like(val[:, :1]), _f32(0.0))
    table = tf.concat([val, tf.subtract(_f32(1.0), val), zero], 1)
    flat = tf.gather(table, tf.constant(columns), axis=1)
    shape = tf.constant(np.array([-1, classes, classes], np.int64))
    return couple(tf.reshape(flat, shape), classes)


def _svc(ctx, node, x, labels, per_class, kernel_args, transform):
    classes = len(labels)
    pairs = _pairs(classes)
    for size, what in ((int(per_class.sum()), "support vectors"), (classes, "classes")):
        bounded(size * len(pairs), node, f"{what} x class pairs", MAX_PAIR_ENTRIES)
    vectors = _support_vectors(ctx, node, int(per_class.sum()))
    x = rows(ctx, node, x, vectors.shape[1])
    rho = floats(ctx, node, "rho", [])
    if len(rho) < len(pairs):
        raise OnnxFormatError(f"{where(node)}: {len(rho)} rho values for {len(pairs)} class pairs")
    k = tf.cast(kernel_matrix(x, vectors, *kernel_args), dtypes.float64)
    weights = _pair_coefficients(floats(ctx, node, "coefficients", []), per_class, pairs, node)
    scores = tf.cast(
        tf.add(
            tf.matmul(k, tf.constant(weights)), tf.constant(rho[: len(pairs)].astype(np.float64))
        ),
        tf.float32,
    )
    won = tf.cast(tf.greater(scores, _f32(0.0)), tf.float32)
    votes = tf.add(
        tf.matmul(won, _f32(_indicator(pairs, classes, 0))),
        tf.matmul(tf.subtract(_f32(1.0), won), _f32(_indicator(pairs, classes, 1))),
    )
    label = label_of(first_argmax(votes), labels)
    prob_a, prob_b = floats(ctx, node, "prob_a", []), floats(ctx, node, "prob_b", [])
    if len(prob_a):
        if len(prob_a) < len(pairs) or len(prob_b) < len(pairs):
            raise OnnxFormatError(f"{where(node)}: prob_a/prob_b need {len(pairs)} values")
        return [
            label,
            post_transform(_probabilities(scores, pairs, classes, prob_a, prob_b), transform),
        ]
    if classes > 2:
        return [label, post_transform(scores, transform)]
    if transform == "PROBIT":
        raise UnsupportedModelError(f"{where(node)}: binary PROBIT scores are not defined")
    return [label, second_column(scores, "mirror" if transform == "NONE" else "complement", "NONE")]


def _linear_svm(ctx, node, x, labels, transform):
    classes = len(labels)
    coefficients = floats(ctx, node, "coefficients", [])
    rho = floats(ctx, node, "rho", [])
    if len(ctx.attr(node, "prob_a", []) or []):
        raise UnsupportedModelError(f"{where(node)}: probabilities without support vectors")
    if not len(rho) or not len(coefficients) or len(coefficients) % classes:
        raise OnnxFormatError(
            f"{where(node)}: {len(coefficients)} coefficients for {classes} classes"
        )
    weights = coefficients.reshape(classes, -1)
    x = rows(ctx, node, x, weights.shape[1])
    scores = tf.add(tf.matmul(x, _f32(np.ascontiguousarray(weights.T))), _f32(rho[0]))
    best = first_argmax(scores)
    if classes == 2:
        top = tf.reduce_max(scores, axis=1)
        cut = 0.5 if bool((coefficients >= 0).all()) else 0.0
        above = tf.greater_equal(top, _f32(cut)) if cut else tf.greater(top, _f32(0.0))
        best = tf.where_v2(above, tf.constant(np.int64(1)), best)
    if classes == 1:
        return [label_of(best, labels), probit(scores) if transform == "PROBIT" else scores]
    return [label_of(best, labels), post_transform(scores, transform)]


def _classifier(ctx, node):
    labels = class_labels(ctx, node, "classlabels_ints", "classlabels_strings")
    if labels is None:
        raise OnnxFormatError(f"{where(node)} has no class labels")
    bounded(len(labels), node, "the number of classes", MAX_CLASSES)
    transform = transform_name(ctx, node)
    per_class = ints(ctx, node, "vectors_per_class", [])
    x = ctx.input(node, 0)
    if len(per_class) and per_class.sum() > 0:
        if len(per_class) != len(labels) or per_class.min() < 0:
            raise OnnxFormatError(f"{where(node)}: vectors_per_class does not match the labels")
        bounded(int(per_class.sum()), node, "the number of support vectors")
        return _svc(ctx, node, x, labels, per_class, _kernel_params(ctx, node), transform)
    return _linear_svm(ctx, node, x, labels, transform)


register("SVMRegressor", (1,), _regressor, domain=ML_DOMAIN)
register("SVMClassifier", (1,), _classifier, domain=ML_DOMAIN)
