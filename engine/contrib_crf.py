"""``tf.contrib.crf``: a linear-chain conditional random field, as TF 1.15 builds it (the
BiLSTM-CRF taggers of TF1 NER programs): ``crf_log_likelihood`` (creating ``transitions``
when not given), ``crf_sequence_score``, ``crf_unary_score``, ``crf_binary_score``,
``crf_log_norm`` (the forward algorithm through ``dynamic_rnn``, so lengths are honoured and
it differentiates) and ``viterbi_decode`` (numpy, on fetched scores). ``crf_decode`` is not
provided.
Positions at or past a sequence's length do not count; a length-0 sequence scores 0."""

from __future__ import annotations

import numpy as np

from engine import dtypes
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import name_scope
from engine.ops import array as array_ops
from engine.ops import math as math_ops
from engine.ops import reduction, slicing
from engine.rnn import RNNCell, dynamic_rnn, sequence_mask
from engine.variable_scope import get_variable

__all__ = [
    "crf_sequence_score",
    "crf_unary_score",
    "crf_binary_score",
    "crf_log_norm",
    "crf_log_likelihood",
    "viterbi_decode",
    "CrfForwardRnnCell",
]


def _mask(lengths, steps, dtype):
    return math_ops.cast(sequence_mask(lengths, steps), dtype)


def crf_unary_score(tag_indices, sequence_lengths, inputs):
    """Sum over each sequence of the unary score of its tags."""
    x = convert_to_tensor(inputs, name="inputs")
    tags = math_ops.cast(convert_to_tensor(tag_indices), dtypes.int32)
    picked = slicing.gather(x, tags, axis=2, batch_dims=2)  # [batch, steps]
    return reduction.reduce_sum(picked * _mask(sequence_lengths, array_ops.shape(x)[1], x.dtype), 1)


def crf_binary_score(tag_indices, sequence_lengths, transition_params):
    """Sum over each sequence of the transition scores between consecutive tags."""
    tags = math_ops.cast(convert_to_tensor(tag_indices), dtypes.int32)
    trans = convert_to_tensor(transition_params, name="transition_params")
    n = array_ops.shape(trans)[0]
    flat = array_ops.reshape(trans, [-1])
    pairs = tags[:, :-1] * n + tags[:, 1:]
    scores = slicing.gather(flat, pairs)
    steps = array_ops.shape(tags)[1]
    mask = _mask(sequence_lengths, steps, trans.dtype)[:, 1:]
    return reduction.reduce_sum(scores * mask, 1)


def crf_sequence_score(inputs, tag_indices, sequence_lengths, transition_params):
    """Unary plus binary scores of ``tag_indices`` ([batch, steps]) under the CRF."""
    with name_scope(None, "crf_sequence_score", [inputs, tag_indices]):
        unary = crf_unary_score(tag_indices, sequence_lengths, inputs)
        binary = crf_binary_score(tag_indices, sequence_lengths, transition_params)
        score = unary + binary
        return math_ops.where(
            math_ops.less_equal(sequence_lengths, 0), array_ops.zeros_like(score), score
        )


class CrfForwardRnnCell(RNNCell):
    """The forward algorithm's step: alphas[t] = x[t] + logsumexp(alphas[t-1] + T, axis 0)."""

    def __init__(self, transition_params):
        super().__init__(name="crf_forward")
        self._transition_params = array_ops.expand_dims(transition_params, 0)
        self._num_tags = transition_params.shape.as_list()[0]

    @property
    def state_size(self):
        return self._num_tags

    @property
    def output_size(self):
        return self._num_tags

    def _create_variables(self, input_depth, dtype):
        pass  # the transitions are given

    def call(self, inputs, state):
        scores = array_ops.expand_dims(state, 2) + self._transition_params
        new = inputs + reduction.reduce_logsumexp(scores, [1])
        return new, new


def crf_log_norm(inputs, sequence_lengths, transition_params):
    """log of the partition function of each sequence ([batch])."""
    with name_scope(None, "crf_log_norm", [inputs]):
        x = convert_to_tensor(inputs, name="inputs")
        lengths = convert_to_tensor(sequence_lengths)
        first = x[:, 0, :]
        trans = convert_to_tensor(transition_params)
        rest_len = math_ops.maximum(array_ops.zeros_like(lengths), lengths - 1)

        def multi():
            _, alphas = dynamic_rnn(
                CrfForwardRnnCell(trans),
                x[:, 1:, :],
                sequence_length=rest_len,
                initial_state=first,
                dtype=x.dtype.base_dtype,
            )
            return reduction.reduce_logsumexp(alphas, [1])

        steps = x.shape.as_list()[1]
        log_norm = reduction.reduce_logsumexp(first, [1]) if steps == 1 else multi()
        return math_ops.where(
            math_ops.less_equal(lengths, 0), array_ops.zeros_like(log_norm), log_norm
        )


def crf_log_likelihood(inputs, tag_indices, sequence_lengths, transition_params=None):
    """(log-likelihood of each sequence's tags, the transition matrix): ``transitions``
    ([num_tags, num_tags]) is created in the current variable scope when not given."""
    x = convert_to_tensor(inputs, name="inputs")
    if transition_params is None:
        n = x.shape.as_list()[2]
        transition_params = get_variable("transitions", [n, n], dtype=x.dtype.base_dtype)
    score = crf_sequence_score(x, tag_indices, sequence_lengths, transition_params)
    return score - crf_log_norm(x, sequence_lengths, transition_params), transition_params


def viterbi_decode(score, transition_params):
    """(best tag sequence as a list, its score) of one unbatched ``score`` [steps, tags]."""
    score = np.asarray(score)
    trans = np.asarray(transition_params)
    trellis = np.zeros_like(score)
    backpointers = np.zeros_like(score, dtype=np.int32)
    trellis[0] = score[0]
    for t in range(1, score.shape[0]):
        v = np.expand_dims(trellis[t - 1], 1) + trans
        trellis[t] = score[t] + np.max(v, 0)
        backpointers[t] = np.argmax(v, 0)
    viterbi = [int(np.argmax(trellis[-1]))]
    for bp in reversed(backpointers[1:]):
        viterbi.append(int(bp[viterbi[-1]]))
    viterbi.reverse()
    return viterbi, float(np.max(trellis[-1]))
