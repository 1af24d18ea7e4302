"""Classic TF1 tutorial programs (``tutorials/``), written in the style of the well-known
example collections and run unchanged apart from the data stand-in and step counts, print
the same losses under the engine as under TensorFlow's TF1 API
(``make_program_fixtures.py``): every number of every line, to float32 accuracy."""

import json
import os

import numpy as np
import pytest

import engine
from tests.programs import harness

with open(os.path.join(os.path.dirname(__file__), "programs_tf.json")) as f:
    RECORDED = json.load(f)


def test_every_program_has_a_recording():
    assert sorted(RECORDED["programs"]) == harness.PROGRAMS
    assert len(harness.PROGRAMS) >= 33


@pytest.mark.parametrize("program", harness.PROGRAMS)
def test_program_matches_tensorflow(program):
    got = harness.run(program, engine, engine.contrib)
    want = RECORDED["programs"][program]
    assert len(got) == len(want), (program, got, want)
    for g, w in zip(got, want):
        gn, wn = harness.numbers(g), harness.numbers(w)
        assert harness.text(g) == harness.text(w), (g, w)
        assert len(gn) == len(wn), (g, w)
        np.testing.assert_allclose(gn, wn, rtol=2e-4, atol=2e-5, err_msg=f"{program}: {g} vs {w}")
