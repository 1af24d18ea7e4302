"""ReverseSequence (``engine/ops/sequences.py``; ``tf.reverse_sequence``) against numpy, as
the op table runs it, and its errors. RaggedTensorToTensor: test_ragged_text.py."""

import numpy as np
import pytest

import engine as tf
from tests.engine.optable import Case, check_case

I32, I64 = np.int32, np.int64
a234 = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def _np_reverse_sequence(x, lengths, seq, batch):
    out = x.copy()
    for b, n in enumerate(lengths):
        src = [slice(None)] * x.ndim
        src[batch] = b
        src[seq] = slice(0, int(n))
        dst = list(src)
        out[tuple(dst)] = np.flip(x[tuple(src)], axis=seq - (batch < seq))
    return out


CASES = [
    Case(
        "reverse_sequence_batch0",
        lambda x, n: tf.reverse_sequence(x, n, seq_axis=1),
        [a234, np.array([2, 3], I64)],
        lambda x, n: _np_reverse_sequence(x, n, 1, 0),
        [2, 3, 4],
    ),
    Case(
        "reverse_sequence_batch_last",
        lambda x, n: tf.reverse_sequence(x, n, seq_axis=1, batch_axis=2),
        [a234, np.array([0, 1, 3, 2], I32)],
        lambda x, n: _np_reverse_sequence(x, n, 1, 2),
        [2, 3, 4],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_reverse_sequence(case):
    check_case(case)


def test_reverse_sequence_errors_name_the_bad_length_and_dims():
    x = tf.constant(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="seq_dim == batch_dim == 0"):
        tf.reverse_sequence(x, [1, 1], seq_axis=0, batch_axis=0)
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 3 and 2"):
        tf.reverse_sequence(x, [1, 1, 1], seq_axis=1)
    fed = tf.placeholder(tf.int32, [None])
    y = tf.reverse_sequence(x, fed, seq_axis=1)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"seq_lens\(1\) must be in"):
            sess.run(y, {fed: [1, 4]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="Length of seq_lengths"):
            sess.run(y, {fed: [1]})
