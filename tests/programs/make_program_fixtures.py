"""Records what the tutorial programs print under TensorFlow's TF1 API
(``tests/programs/test_tutorials.py`` compares the engine's output line by line).

    /tmp/tfvenv/bin/pip install tensorflow-cpu tf_keras
    TF_USE_LEGACY_KERAS=1 /tmp/tfvenv/bin/python -m tests.programs.make_program_fixtures
"""

from __future__ import annotations

import json
import os
import types

from tests.programs import harness


def main() -> None:
    import tensorflow  # noqa: PLC0415 - the oracle, only here

    tf = tensorflow.compat.v1
    tf.disable_eager_execution()
    # TF 2 has no tf.contrib; the programs' `from tensorflow.contrib import rnn` gets TF's
    # own TF1 cells.
    contrib = types.ModuleType("tensorflow.contrib")
    contrib.rnn = types.SimpleNamespace(
        BasicLSTMCell=tf.nn.rnn_cell.BasicLSTMCell, static_rnn=tf.nn.static_rnn
    )
    contrib.layers = types.SimpleNamespace(flatten=tf.layers.flatten)
    tf.contrib = contrib
    out = {"tf_version": tensorflow.__version__, "programs": {}}
    for name in harness.PROGRAMS:
        out["programs"][name] = harness.run(name, tf, contrib)
        print(name, len(out["programs"][name]), "lines")
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs_tf.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print(f"wrote {path} with TensorFlow {tensorflow.__version__}")


if __name__ == "__main__":
    main()
