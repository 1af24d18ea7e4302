"""``tf.gfile`` and ``tf.io.gfile`` over the local filesystem: results and error types
compared with TensorFlow's recorded outcomes (``fixtures/make_app_gfile_fixtures.py``)."""

from __future__ import annotations

import os

import pytest

import engine as tf
from tests.engine.fixtures.app_gfile_cases import gfile_outcomes
from tests.engine.fixtures.oracle import load

RECORDING = load("app_gfile_tf.npz")
OUTCOMES = gfile_outcomes(tf)
GFILE_KEYS = sorted(k for k in RECORDING.files if k.startswith("gfile_"))


def test_every_gfile_step_is_recorded():
    assert sorted(OUTCOMES) == GFILE_KEYS


@pytest.mark.parametrize("key", GFILE_KEYS)
def test_gfile_outcome_matches_tensorflow(key):
    assert OUTCOMES[key] == str(RECORDING[key])


def test_namespaces_hold_tf_names():
    camel = (
        "Copy DeleteRecursively Exists FastGFile GFile Glob IsDirectory ListDirectory MakeDirs "
        "MkDir Open Remove Rename Stat Walk"
    ).split()
    snake = "GFile copy exists glob isdir join listdir makedirs mkdir remove rename rmtree stat"
    for name in camel:
        assert callable(getattr(tf.gfile, name)), name
    for name in [*snake.split(), "walk"]:
        assert callable(getattr(tf.io.gfile, name)), name
    with pytest.raises(AttributeError, match=r"tf.gfile.Nope is not available"):
        _ = tf.gfile.Nope


def test_errors_are_op_errors_with_codes(tmp_path):
    missing = str(tmp_path / "missing.txt")
    with pytest.raises(tf.errors.NotFoundError) as info:
        tf.io.gfile.GFile(missing).read()
    assert info.value.error_code == tf.errors.NOT_FOUND
    assert str(info.value) == f"{missing}; No such file or directory"
    (tmp_path / "a").write_text("a")
    (tmp_path / "b").write_text("b")
    with pytest.raises(tf.errors.AlreadyExistsError):
        tf.gfile.Rename(str(tmp_path / "a"), str(tmp_path / "b"))
    assert (tmp_path / "b").read_text() == "b"


def test_write_flush_size_and_tell(tmp_path):
    path = str(tmp_path / "data.bin")
    with tf.io.gfile.GFile(path, "wb") as f:
        f.write(b"\x00\x01\x02")
        f.write("é")  # str is written as UTF-8
        f.flush()
        assert f.size() == 5
        assert f.tell() == 5
    assert tf.io.gfile.GFile(path, "rb").read() == b"\x00\x01\x02\xc3\xa9"
    assert tf.io.gfile.stat(path).length == 5
    assert os.path.getsize(path) == 5
