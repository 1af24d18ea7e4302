"""CTC decoding as TF's CPU kernel does it: ``CTCGreedyDecoder`` (``tf.nn.ctc_greedy_decoder``,
what Keras' ``ctc_decode(greedy=True)`` builds in OCR and speech models). Each batch entry's
best class per time step (the first of equal maxima), repeats merged if asked, blanks
dropped; the log probability is minus the sum of the chosen logits."""

from __future__ import annotations

import numpy as np

from engine import dtypes, errors
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import name_scope
from engine.framework.registry import Attr, OpFlags, ShapeError, op
from engine.framework.sparse_tensor import SparseTensor
from engine.ops._common import base, check_dtype, create
from engine.tensor_shape import TensorShape

__all__ = ["ctc_greedy_decoder"]

_FLOATS = frozenset([dtypes.float32, dtypes.float64])


def _invalid(msg: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, msg)


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
