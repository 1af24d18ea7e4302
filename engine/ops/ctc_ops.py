"""CTC as TF's CPU kernels compute it: ``CTCLoss`` (``tf.nn.ctc_loss``, with its gradient:
the softmax minus the alignment posteriors) and ``CTCGreedyDecoder`` (``tf.nn.ctc_greedy_decoder``,
what Keras' ``ctc_decode(greedy=True)`` builds in OCR and speech models). Each batch entry's
best class per time step (the first of equal maxima), repeats merged if asked, blanks
dropped; the log probability is minus the sum of the chosen logits."""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import name_scope
from engine.framework.registry import Attr, OpFlags, ShapeError, op
from engine.framework.sparse_tensor import SparseTensor
from engine.ops import array as array_ops
from engine.ops import math as math_ops
from engine.ops._common import base, check_dtype, create
from engine.ops.array import _invalid
from engine.tensor_shape import TensorShape

__all__ = ["ctc_greedy_decoder", "ctc_loss"]

_FLOATS = frozenset([dtypes.float32, dtypes.float64])


def _greedy_infer(o):
    check_dtype(o, 0, _FLOATS)
    check_dtype(o, 1, frozenset([dtypes.int32]), "sequence_length")
    x = o._inputs[0]._shape
    if x.rank not in (None, 3):
        raise ShapeError(f"inputs must be 3-D [max_time, batch, classes], got rank {x.rank}")
    batch = x.as_tuple()[1] if x.rank == 3 else None
    return [
        (dtypes.int64, TensorShape([None, 2])),
        (dtypes.int64, TensorShape([None])),
        (dtypes.int64, TensorShape([2])),
        (base(o._inputs[0]), TensorShape([batch, 1])),
    ]


@op(
    "CTCGreedyDecoder",
    infer=_greedy_infer,
    differentiable=False,
    inputs=("inputs", "sequence_length"),
    attrs=(Attr("merge_repeated", "bool", default=False), Attr("blank_index", "int", default=-1)),
    flags=OpFlags(device_types=("CPU",)),
)
def _ctc_greedy(xp, inputs, sequence_length, *, merge_repeated=False, blank_index=-1):
    x = np.asarray(inputs)
    lengths = np.asarray(sequence_length).reshape(-1)
    if x.ndim != 3:
        raise _invalid(f"inputs must be 3-D, got shape {list(x.shape)}")
    steps, batch, classes = x.shape
    if lengths.shape[0] != batch:
        raise _invalid(f"len(sequence_length) != batch_size: {lengths.shape[0]} vs. {batch}")
    if lengths.size and (lengths.min() < 0 or lengths.max() > steps):
        raise _invalid(f"sequence_length must be in [0, max_time={steps}], got {lengths.tolist()}")
    blank = classes - 1 if blank_index < 0 else blank_index
    if not 0 <= blank < classes:
        raise _invalid(f"blank_index {blank_index} is outside [0, {classes})")
    best = x.argmax(axis=2)  # [time, batch]: the first of equal maxima, as TF's RowMax
    chosen = np.take_along_axis(x, best[:, :, None], axis=2)[:, :, 0]
    log_prob = np.zeros((batch, 1), x.dtype)
    indices, values = [], []
    width = 0
    for b in range(batch):
        n = int(lengths[b])
        log_prob[b, 0] = -chosen[:n, b].sum(dtype=x.dtype)
        seq, prev = [], -1
        for t in range(n):
            c = int(best[t, b])
            if c != blank and not (merge_repeated and c == prev):
                seq.append(c)
            prev = c
        indices += [(b, j) for j in range(len(seq))]
        values += seq
        width = max(width, len(seq))
    return (
        np.array(indices, np.int64).reshape(-1, 2),
        np.array(values, np.int64),
        np.array([batch, width], np.int64),
        log_prob,
    )


def ctc_greedy_decoder(inputs, sequence_length, merge_repeated=True, blank_index=None, name=None):
    """``([SparseTensor of the decoded classes], log_probabilities [batch, 1])``, as TF's."""
    with name_scope(name, "CTCGreedyDecoder", [inputs, sequence_length]) as scope:
        x = convert_to_tensor(inputs, name="inputs")
        lengths = convert_to_tensor(sequence_length, dtype=dtypes.int32, name="sequence_length")
        attrs = {"merge_repeated": bool(merge_repeated)}
        if blank_index is not None:
            attrs["blank_index"] = int(blank_index)
        ind, val, shape, log_prob = create("CTCGreedyDecoder", [x, lengths], attrs, scope).outputs
        return [SparseTensor(ind, val, shape)], log_prob


# -- CTC loss ------------------------------------------------------------------------------


def _ctc_loss_infer(o):
    check_dtype(o, 0, _FLOATS)
    x = o._inputs[0]._shape
    if x.rank not in (None, 3):
        raise ShapeError(f"inputs must be 3-D [max_time, batch, classes], got rank {x.rank}")
    batch = x.as_tuple()[1] if x.rank == 3 else None
    return [(base(o._inputs[0]), TensorShape([batch])), (base(o._inputs[0]), x)]


def _logsumexp(a, b):
    m = np.maximum(a, b)
    with np.errstate(invalid="ignore"):
        out = m + np.log(np.exp(a - m) + np.exp(b - m))
    return np.where(np.isneginf(m), -np.inf, out)


def _one_ctc(log_y, labels, blank, merge_repeated, collapse, ignore_longer, b):
    """(loss, gradient [T, classes]) of one sequence, in log space, as TF's calculator."""
    if collapse:
        labels = [c for i, c in enumerate(labels) if i == 0 or c != labels[i - 1]]
    steps, classes = log_y.shape
    ext = [blank]
    for c in labels:
        ext += [c, blank]
    needed = len(labels) + sum(
        1 for i in range(1, len(labels)) if merge_repeated and labels[i] == labels[i - 1]
    )
    if needed > steps:
        if ignore_longer:
            return 0.0, np.zeros_like(log_y)
        raise _invalid(
            f"Not enough time for target transition sequence (required: {needed}, "
            f"available: {steps}), batch entry {b}"
        )
    n = len(ext)
    alpha = np.full((steps, n), -np.inf)
    alpha[0, 0] = log_y[0, blank]
    if n > 1:
        alpha[0, 1] = log_y[0, ext[1]]
    # without merging, a label lasts one frame (no self-transition) and repeats need no blank
    stay = [merge_repeated or c == blank for c in ext]
    for t in range(1, steps):
        for s in range(n):
            v = alpha[t - 1, s] if stay[s] else -np.inf
            if s >= 1:
                v = _logsumexp(v, alpha[t - 1, s - 1])
            if s >= 2 and ext[s] != blank and not (merge_repeated and ext[s] == ext[s - 2]):
                v = _logsumexp(v, alpha[t - 1, s - 2])
            alpha[t, s] = v + log_y[t, ext[s]]
    beta = np.full((steps, n), -np.inf)  # without the emission at t
    beta[steps - 1, n - 1] = 0.0
    if n > 1:
        beta[steps - 1, n - 2] = 0.0
    for t in range(steps - 2, -1, -1):
        for s in range(n):
            v = beta[t + 1, s] + log_y[t + 1, ext[s]] if stay[s] else -np.inf
            if s + 1 < n:
                v = _logsumexp(v, beta[t + 1, s + 1] + log_y[t + 1, ext[s + 1]])
            if s + 2 < n and ext[s] != blank and not (merge_repeated and ext[s] == ext[s + 2]):
                v = _logsumexp(v, beta[t + 1, s + 2] + log_y[t + 1, ext[s + 2]])
            beta[t, s] = v
    log_p = alpha[steps - 1, n - 1]
    if n > 1:
        log_p = _logsumexp(log_p, alpha[steps - 1, n - 2])
    grad = np.exp(log_y)
    occupancy = np.full((steps, classes), -np.inf)
    for s in range(n):
        occupancy[:, ext[s]] = _logsumexp(occupancy[:, ext[s]], alpha[:, s] + beta[:, s])
    grad -= np.exp(occupancy - log_p)
    return -log_p, grad


@op(
    "CTCLoss",
    infer=_ctc_loss_infer,
    grad=lambda o, grad_loss, _grad_gradient: [
        o.outputs[1] * array_ops.expand_dims(array_ops.expand_dims(grad_loss, 0), -1),
        None,
        None,
        None,
    ],
    inputs=("inputs", "labels_indices", "labels_values", "sequence_length"),
    attrs=(
        Attr("preprocess_collapse_repeated", "bool", default=False),
        Attr("ctc_merge_repeated", "bool", default=True),
        Attr("ignore_longer_outputs_than_inputs", "bool", default=False),
    ),
    flags=OpFlags(device_types=("CPU",)),
)
def _ctc_loss(
    xp,
    inputs,
    labels_indices,
    labels_values,
    sequence_length,
    *,
    preprocess_collapse_repeated=False,
    ctc_merge_repeated=True,
    ignore_longer_outputs_than_inputs=False,
):
    x = np.asarray(inputs, np.float64)
    if x.ndim != 3:
        raise _invalid(f"inputs must be 3-D, got shape {list(x.shape)}")
    steps, batch, classes = x.shape
    lengths = np.asarray(sequence_length).reshape(-1)
    if lengths.shape[0] != batch or (lengths.size and (lengths.min() < 0 or lengths.max() > steps)):
        raise _invalid(f"sequence_length must hold {batch} lengths in [0, {steps}]")
    idx, vals = np.asarray(labels_indices).reshape(-1, 2), np.asarray(labels_values).reshape(-1)
    if idx.shape[0] != vals.shape[0] or (
        idx.size and (idx[:, 0].min() < 0 or idx[:, 0].max() >= batch)
    ):
        raise _invalid("labels_indices must name batch entries, one per label value")
    if vals.size and (vals.min() < 0 or vals.max() >= classes - 1):
        raise _invalid(f"labels must be in [0, {classes - 1}) (the last class is the blank)")
    log_y = x - x.max(axis=2, keepdims=True)
    log_y = log_y - np.log(np.exp(log_y).sum(axis=2, keepdims=True))
    loss = np.zeros(batch)
    grad = np.zeros_like(x)
    for b in range(batch):
        order = np.argsort(idx[:, 1][idx[:, 0] == b], kind="stable")
        labels = [int(v) for v in vals[idx[:, 0] == b][order]]
        t = int(lengths[b])
        if t == 0:
            continue
        loss[b], grad[:t, b] = _one_ctc(
            log_y[:t, b], labels, classes - 1, ctc_merge_repeated,
            preprocess_collapse_repeated, ignore_longer_outputs_than_inputs, b,
        )  # fmt: skip
    dtype = np.asarray(inputs).dtype
    return loss.astype(dtype), grad.astype(dtype)


def ctc_loss(labels, inputs=None, sequence_length=None, preprocess_collapse_repeated=False,
             ctc_merge_repeated=True, ignore_longer_outputs_than_inputs=False, time_major=True,
             logits=None):  # fmt: skip
    """TF1's ``tf.nn.ctc_loss``: the negative log-likelihood of each batch entry's labels
    (a ``SparseTensor``) under the CTC alignment of ``inputs`` (logits, time-major unless
    ``time_major=False``); the last class is the blank."""
    if not isinstance(labels, SparseTensor):
        raise TypeError("Expected labels (first argument) to be a SparseTensor")
    inputs = logits if inputs is None else inputs
    with name_scope(None, "CTCLoss", [inputs, sequence_length]):
        x = convert_to_tensor(inputs, name="inputs")
        if not time_major:
            x = array_ops.transpose(x, [1, 0, 2])
        lengths = convert_to_tensor(sequence_length, dtype=dtypes.int32, name="sequence_length")
        values = math_ops.cast(labels.values, dtypes.int32)
        attrs = {
            "preprocess_collapse_repeated": bool(preprocess_collapse_repeated),
            "ctc_merge_repeated": bool(ctc_merge_repeated),
            "ignore_longer_outputs_than_inputs": bool(ignore_longer_outputs_than_inputs),
        }
        ins = [x, math_ops.cast(labels.indices, dtypes.int64), values, lengths]
        return create("CTCLoss", ins, attrs, None).outputs[0]
