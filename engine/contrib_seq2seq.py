"""``tf.contrib.legacy_seq2seq`` and ``tf.contrib.seq2seq``'s losses: what the PTB language
model tutorial and char-rnn programs build their loss (and decoder) with, as TF 1.15 writes
them (the same formulas, name scopes and errors).

- ``legacy_seq2seq.sequence_loss_by_example(logits, targets, weights)``: lists of per-step
  tensors; the weighted cross entropy summed over steps, per example (divided by the summed
  weights with ``average_across_timesteps``).
- ``legacy_seq2seq.sequence_loss``: that summed over the batch (divided by the batch size with
  ``average_across_batch``).
- ``legacy_seq2seq.rnn_decoder``: a cell run over a list of inputs, optionally feeding back
  ``loop_function(prev_output, i)``.
- ``seq2seq.sequence_loss(logits [batch, time, classes], targets, weights [batch, time])``
  with its averaging and summing options.
"""

from __future__ import annotations

from engine.framework.graph import name_scope
from engine.ops import array as array_ops
from engine.ops import math as math_ops
from engine.ops import math_more, nn_losses, reduction
from engine.ops.array import reshape
from engine.util.namespaces import namespace
from engine.variable_scope import get_variable_scope, variable_scope

__all__ = ["legacy_seq2seq", "seq2seq"]


def _crossent(logit, target, softmax_loss_function):
    if softmax_loss_function is None:
        return nn_losses.sparse_softmax_cross_entropy_with_logits(
            labels=reshape(target, [-1]), logits=logit
        )
    return softmax_loss_function(labels=target, logits=logit)


def sequence_loss_by_example(
    logits,
    targets,
    weights,
    average_across_timesteps=True,
    softmax_loss_function=None,
    name=None,
):
    """Per example: the sum over steps of ``weight * crossentropy``, over the summed weights
    with ``average_across_timesteps``."""
    if len(targets) != len(logits) or len(weights) != len(logits):
        raise ValueError(
            "Lengths of logits, weights, and targets must be the same "
            f"{len(logits)}, {len(weights)}, {len(targets)}."
        )
    with name_scope(name, "sequence_loss_by_example", list(logits) + list(targets) + list(weights)):
        log_perp_list = [
            _crossent(logit, target, softmax_loss_function) * weight
            for logit, target, weight in zip(logits, targets, weights)
        ]
        log_perps = math_ops.add_n(log_perp_list)
        if average_across_timesteps:
            total_size = math_ops.add_n(list(weights))
            total_size += 1e-12  # all-zero weights divide by almost nothing, as TF's
            log_perps /= total_size
    return log_perps


def legacy_sequence_loss(
    logits,
    targets,
    weights,
    average_across_timesteps=True,
    average_across_batch=True,
    softmax_loss_function=None,
    name=None,
):
    """``sequence_loss_by_example`` summed over the batch (a mean with
    ``average_across_batch``)."""
    with name_scope(name, "sequence_loss", list(logits) + list(targets) + list(weights)):
        cost = reduction.reduce_sum(
            sequence_loss_by_example(
                logits,
                targets,
                weights,
                average_across_timesteps=average_across_timesteps,
                softmax_loss_function=softmax_loss_function,
            )
        )
        if average_across_batch:
            batch_size = array_ops.shape(targets[0])[0]
            return cost / math_ops.cast(batch_size, cost.dtype)
        return cost


def rnn_decoder(decoder_inputs, initial_state, cell, loop_function=None, scope=None):
    """Runs ``cell`` over ``decoder_inputs`` from ``initial_state``: (outputs, last state);
    with ``loop_function``, step i > 0 takes ``loop_function(previous output, i)``."""
    with variable_scope(scope or "rnn_decoder"):
        state, outputs, prev = initial_state, [], None
        for i, inp in enumerate(decoder_inputs):
            if loop_function is not None and prev is not None:
                with variable_scope("loop_function", reuse=True):
                    inp = loop_function(prev, i)
            if i > 0:
                get_variable_scope().reuse_variables()
            output, state = cell(inp, state)
            outputs.append(output)
            if loop_function is not None:
                prev = output
    return outputs, state


def sequence_loss(
    logits,
    targets,
    weights,
    average_across_timesteps=True,
    average_across_batch=True,
    sum_over_timesteps=False,
    sum_over_batch=False,
    softmax_loss_function=None,
    name=None,
):
    """``tf.contrib.seq2seq.sequence_loss``: the weighted cross entropy of
    ``logits`` [batch, time, classes] against ``targets`` [batch, time], averaged (over the
    weights) or summed (over the nonzero weights) across time and/or batch."""
    if logits.shape.rank != 3:
        raise ValueError("Logits must be a [batch_size x sequence_length x logits] tensor")
    if targets.shape.rank != 2:
        raise ValueError("Targets must be a [batch_size x sequence_length] tensor")
    if weights.shape.rank != 2:
        raise ValueError("Weights must be a [batch_size x sequence_length] tensor")
    if average_across_timesteps and sum_over_timesteps:
        raise ValueError(
            "average_across_timesteps and sum_over_timesteps cannot be set to True at same time."
        )
    if average_across_batch and sum_over_batch:
        raise ValueError(
            "average_across_batch and sum_over_batch cannot be set to True at same time."
        )
    with name_scope(name, "sequence_loss", [logits, targets, weights]):
        num_classes = array_ops.shape(logits)[2]
        logits_flat = reshape(logits, [-1, num_classes])
        targets = reshape(targets, [-1])
        if softmax_loss_function is None:
            crossent = nn_losses.sparse_softmax_cross_entropy_with_logits(
                labels=targets, logits=logits_flat
            )
        else:
            crossent = softmax_loss_function(labels=targets, logits=logits_flat)
        crossent *= reshape(weights, [-1])
        if average_across_timesteps and average_across_batch:
            crossent = reduction.reduce_sum(crossent)
            total_size = reduction.reduce_sum(weights)
            return math_more.div_no_nan(crossent, total_size)
        if sum_over_timesteps and sum_over_batch:
            crossent = reduction.reduce_sum(crossent)
            total_count = math_ops.cast(reduction.count_nonzero(weights), crossent.dtype)
            return math_more.div_no_nan(crossent, total_count)
        crossent = reshape(crossent, array_ops.shape(logits)[0:2])
        if average_across_timesteps or average_across_batch:
            axis = [0] if average_across_batch else [1]
            crossent = reduction.reduce_sum(crossent, axis=axis)
            total_size = reduction.reduce_sum(weights, axis=axis)
            return math_more.div_no_nan(crossent, total_size)
        if sum_over_timesteps or sum_over_batch:
            axis = [0] if sum_over_batch else [1]
            crossent = reduction.reduce_sum(crossent, axis=axis)
            total_count = math_ops.cast(
                reduction.count_nonzero(weights, axis=axis), dtype=crossent.dtype
            )
            return math_more.div_no_nan(crossent, total_count)
        return crossent


legacy_seq2seq = namespace(
    "tf.contrib.legacy_seq2seq",
    sequence_loss_by_example=sequence_loss_by_example,
    sequence_loss=legacy_sequence_loss,
    rnn_decoder=rnn_decoder,
)
seq2seq = namespace("tf.contrib.seq2seq", sequence_loss=sequence_loss)
