"""``tf.flags``/``tf.app``: parsing, errors and ``tf.app.run``, compared with TensorFlow's
(absl's) recorded outcomes (``fixtures/make_app_gfile_fixtures.py``)."""

from __future__ import annotations

import sys

import pytest

import engine as tf
from engine import flags as flags_module
from tests.engine.fixtures.app_gfile_cases import flag_outcomes
from tests.engine.fixtures.make_app_gfile_fixtures import PROGRAM_ARGVS, run_program
from tests.engine.fixtures.oracle import load

RECORDING = load("app_gfile_tf.npz")
OUTCOMES = flag_outcomes(tf)
FLAG_KEYS = sorted(k for k in RECORDING.files if k.startswith("flags_"))


@pytest.fixture
def fresh_flags():
    """The global FLAGS emptied before and after the test."""
    yield flags_module._reset_for_tests()
    flags_module._reset_for_tests()


def test_every_flag_scenario_is_recorded():
    assert sorted(OUTCOMES) == FLAG_KEYS


@pytest.mark.parametrize("key", FLAG_KEYS)
def test_flag_outcome_matches_tensorflow(key):
    assert OUTCOMES[key] == str(RECORDING[key])


def test_app_flags_is_tf_flags():
    assert tf.app.flags is tf.flags
    assert tf.flags.FLAGS is tf.app.flags.FLAGS


def test_first_read_parses_sys_argv(fresh_flags, monkeypatch):
    tf.flags.DEFINE_integer("steps", 10, "steps")
    holder = tf.flags.DEFINE_string("tag", "t", "tag")
    monkeypatch.setattr(sys, "argv", ["prog", "--steps=4", "--tag", "run1"])
    assert not fresh_flags.is_parsed()
    assert tf.flags.FLAGS.steps == 4
    assert (holder.value, holder.name, holder.default) == ("run1", "tag", "t")
    assert fresh_flags.flag_values_dict() == {"steps": 4, "tag": "run1"}


@pytest.mark.usefixtures("fresh_flags")
def test_first_read_rejects_unknown_flags(monkeypatch):
    tf.flags.DEFINE_integer("steps", 10, "steps")
    monkeypatch.setattr(sys, "argv", ["prog", "--stpes=4"])
    with pytest.raises(tf.flags.UnrecognizedFlagError, match="'stpes'. Did you mean: steps"):
        _ = tf.flags.FLAGS.steps


@pytest.mark.usefixtures("fresh_flags")
def test_flags_call_returns_remaining_args():
    tf.flags.DEFINE_boolean("fast", False, "fast")
    assert tf.flags.FLAGS(["p", "a", "--fast", "--", "--fast"]) == ["p", "a", "--fast"]
    assert tf.flags.FLAGS.fast is True


@pytest.mark.usefixtures("fresh_flags")
def test_reset_hook_undefines_flags():
    tf.flags.DEFINE_integer("steps", 10, "steps")
    with pytest.raises(tf.flags.DuplicateFlagError, match="'steps' is defined twice"):
        tf.flags.DEFINE_integer("steps", 1, "again")
    flags_module._reset_for_tests()
    tf.flags.DEFINE_integer("steps", 1, "again")
    assert "steps" in tf.flags.FLAGS


@pytest.mark.usefixtures("fresh_flags")
def test_mark_flag_as_required_warns_on_default():
    tf.flags.DEFINE_string("path", "here", "path")
    with pytest.warns(UserWarning, match="non-None default"):
        tf.flags.mark_flag_as_required("path")


@pytest.mark.usefixtures("fresh_flags")
def test_app_run_parses_calls_main_and_exits():
    tf.app.flags.DEFINE_integer("steps", 1, "steps")
    seen = []

    def main(argv):
        seen.append((argv, tf.app.flags.FLAGS.steps))
        return 5

    with pytest.raises(SystemExit) as exit_info:
        tf.app.run(main=main, argv=["prog", "--steps=3", "--other", "pos"])
    assert exit_info.value.code == 5
    assert seen == [(["prog", "--other", "pos"], 3)]


@pytest.mark.usefixtures("fresh_flags")
def test_app_run_bad_value_raises():
    tf.app.flags.DEFINE_integer("steps", 1, "steps")
    with pytest.raises(tf.flags.IllegalFlagValueError, match="flag --steps=x: invalid literal"):
        tf.app.run(main=lambda argv: 0, argv=["prog", "--steps=x"])


def _error_type_and_message(line: str) -> tuple[str, str]:
    kind, _, message = line.partition(": ")
    return kind.rsplit(".", 1)[-1], message


@pytest.mark.parametrize("key", sorted(PROGRAM_ARGVS))
def test_tf1_program_with_flags_matches_tensorflow(key):
    """The TF1 program (tf.app.flags + tf.app.run + tf.gfile + a session) in a subprocess,
    with command-line flags: the exit status and output TensorFlow recorded."""
    rc, out, err = run_program("engine", PROGRAM_ARGVS[key])
    assert rc == int(RECORDING[f"program_{key}_rc"]), err
    assert out == str(RECORDING[f"program_{key}_out"])
    if rc == 1:
        recorded = _error_type_and_message(str(RECORDING[f"program_{key}_err"]))
        assert _error_type_and_message(err) == recorded
