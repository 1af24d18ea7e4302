"""RNN cells and drivers against TensorFlow (``fixtures/make_rnn_fixtures.py``): the same
program built with the engine, with the recorded variable values loaded by name, gives TF's
outputs, final states, loss and gradients (inputs and every variable, through the while
loop of ``dynamic_rnn``)."""

import os

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures.make_rnn_fixtures import CASES, build, loss_of

FIXTURES = np.load(
    os.path.join(os.path.dirname(__file__), "fixtures", "rnn_tf.npz"), allow_pickle=False
)


def _fixture(case):
    prefix = f"{case}/"
    return {k[len(prefix) :]: FIXTURES[k] for k in FIXTURES.files if k.startswith(prefix)}


@pytest.mark.parametrize("case", CASES)
def test_matches_tensorflow(case):
    fx = _fixture(case)
    x, outputs = build(tf, case)
    # The loss weights are recorded, not regenerated.
    for i, o in enumerate(outputs):
        assert o.shape.as_list() == list(fx[f"w{i}"].shape), (case, i, o.shape)
    loss = sum(tf.reduce_sum(o * tf.constant(fx[f"w{i}"])) for i, o in enumerate(outputs))
    variables = tf.trainable_variables()
    names = sorted(v.op.name for v in variables)
    assert names == sorted(k[4:] for k in fx if k.startswith("var:")), case
    grads = tf.gradients(loss, [x] + variables)
    with tf.Session() as sess:
        for v in variables:
            v.load(fx[f"var:{v.op.name}"], sess)
        got = sess.run(outputs + [loss] + grads, {x: fx["x"]})
    n = len(outputs)
    for i in range(n):
        np.testing.assert_allclose(got[i], fx[f"out{i}"], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(got[n], fx["loss"], rtol=1e-10)
    np.testing.assert_allclose(got[n + 1], fx["grad:x"], rtol=1e-9, atol=1e-10)
    for v, gv in zip(variables, got[n + 2 :]):
        np.testing.assert_allclose(gv, fx[f"grad:{v.op.name}"], rtol=1e-9, atol=1e-10)


def test_loss_helper_is_shared_with_the_fixture_script():
    assert callable(loss_of) and str(FIXTURES["tf_version"]).startswith("2.")
