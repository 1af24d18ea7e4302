"""Records what the tutorial programs print under TensorFlow's TF1 API
(``tests/programs/test_tutorials.py`` compares the engine's output line by line).

    /tmp/tfvenv/bin/pip install tensorflow-cpu tf_keras
    TF_USE_LEGACY_KERAS=1 /tmp/tfvenv/bin/python -m tests.programs.make_program_fixtures [name ...]
"""

from __future__ import annotations

import json
import os
import sys
import types

from tests.programs import harness


def _sequence_loss_by_example(tf):
    """TF 1.15's ``contrib.legacy_seq2seq.sequence_loss_by_example``, line for line in TF's
    own ops (TF 2 dropped contrib; the engine's is tested against numpy on its own)."""

    def sequence_loss_by_example(logits, targets, weights, average_across_timesteps=True):
        with tf.name_scope(None, "sequence_loss_by_example", logits + targets + weights):
            log_perp_list = []
            for logit, target, weight in zip(logits, targets, weights):
                target = tf.reshape(target, [-1])
                crossent = tf.nn.sparse_softmax_cross_entropy_with_logits(
                    labels=target, logits=logit
                )
                log_perp_list.append(crossent * weight)
            log_perps = tf.add_n(log_perp_list)
            if average_across_timesteps:
                total_size = tf.add_n(weights)
                total_size += 1e-12
                log_perps /= total_size
        return log_perps

    return sequence_loss_by_example


def main() -> None:
    import tensorflow  # noqa: PLC0415 - the oracle, only here

    tf = tensorflow.compat.v1
    tf.disable_eager_execution()
    # TF 2 has no tf.contrib; the programs' `from tensorflow.contrib import rnn` gets TF's
    # own TF1 cells.
    contrib = types.ModuleType("tensorflow.contrib")
    contrib.rnn = types.SimpleNamespace(
        BasicLSTMCell=tf.nn.rnn_cell.BasicLSTMCell,
        MultiRNNCell=tf.nn.rnn_cell.MultiRNNCell,
        static_rnn=tf.nn.static_rnn,
    )
    contrib.layers = types.SimpleNamespace(flatten=tf.layers.flatten)
    contrib.legacy_seq2seq = types.SimpleNamespace(
        sequence_loss_by_example=_sequence_loss_by_example(tf)
    )
    tf.contrib = contrib
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs_tf.json")
    # With program names as arguments, only those are recorded (the others keep theirs).
    names = sys.argv[1:] or harness.PROGRAMS
    out = {"tf_version": tensorflow.__version__, "programs": {}}
    if sys.argv[1:]:
        with open(path) as f:
            out["programs"] = json.load(f)["programs"]
    for name in names:
        # Keras' LSTM trained in graph mode under control flow v2 needs every loop
        # intermediate (TF's own advice in its error); only the Keras programs get it.
        tf.experimental.output_all_intermediates(name.startswith("keras_"))
        out["programs"][name] = harness.run(name, tf, contrib)
        print(name, len(out["programs"][name]), "lines")
    out["programs"] = dict(sorted(out["programs"].items()))
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print(f"wrote {path} with TensorFlow {tensorflow.__version__}")


if __name__ == "__main__":
    main()
