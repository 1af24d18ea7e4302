"""The example models bundled under ``models/``: their exports load, carry the documented
signatures, compute what they should, and ``models/build.py`` rebuilds equivalent ones."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import engine as tf
from models import digits
from service.repository import scan_repository

ROOT = Path(__file__).resolve().parents[2]
REPOSITORY = ROOT / "models"


def _load(export_dir: Path):
    """(session, signature_def map) of a SavedModel loaded into a fresh graph."""
    sess = tf.Session(graph=tf.Graph())
    meta = tf.saved_model.load(sess, [tf.saved_model.SERVING], str(export_dir))
    return sess, meta.signature_def


def _describe(signatures) -> dict:
    """Signature structure without tensor names: {key: (method, {alias: (dtype, shape)} x2)}."""

    def io(d):
        return {alias: (info.engine_dtype.name, info.shape.as_list()) for alias, info in d.items()}

    return {key: (s.method_name, io(s.inputs), io(s.outputs)) for key, s in signatures.items()}


def _run(sess, signature, **inputs) -> dict:
    outputs = sorted(signature.outputs)
    values = sess.run(
        [signature.outputs[a].name for a in outputs],
        {signature.inputs[a].name: v for a, v in inputs.items()},
    )
    return dict(zip(outputs, values))


def _digits_accuracy(export_dir: Path) -> float:
    _, _, x_test, y_test = digits.split()
    sess, sigs = _load(export_dir)
    with sess:
        out = _run(sess, sigs["serving_default"], images=x_test)
    return float(np.mean(out["classes"] == y_test))


HALF_PLUS_TWO = {
    "serving_default": (
        "tensorflow/serving/predict",
        {"x": ("float32", [None])},
        {"y": ("float32", [None])},
    )
}
DIGITS = {
    "serving_default": (
        "tensorflow/serving/predict",
        {"images": ("float32", [None, 64])},
        {"probabilities": ("float32", [None, 10]), "classes": ("int64", [None])},
    ),
    "logits": (
        "tensorflow/serving/predict",
        {"images": ("float32", [None, 64])},
        {"logits": ("float32", [None, 10])},
    ),
}


def test_repository_scanner_sees_exactly_the_bundled_models():
    found = scan_repository(REPOSITORY)
    assert sorted(found) == ["digits", "digits_cnn", "half_plus_two"]  # not scripts nor data/
    assert sorted(found["half_plus_two"].versions) == [1]
    assert sorted(found["digits"].versions) == [1]
    assert found["digits"].config_error is None
    assert found["digits"].config.version_labels == {"stable": 1}


def test_half_plus_two():
    sess, sigs = _load(REPOSITORY / "half_plus_two" / "1")
    assert _describe(sigs) == HALF_PLUS_TWO
    with sess:
        out = _run(sess, sigs["serving_default"], x=np.array([1.0, 2.0, 5.0], np.float32))
        assert out["y"].dtype == np.float32
        np.testing.assert_allclose(out["y"], [2.5, 3.0, 4.5])
        assert _run(sess, sigs["serving_default"], x=np.zeros(0, np.float32))["y"].shape == (0,)


def test_digits_signatures_and_outputs():
    sess, sigs = _load(REPOSITORY / "digits" / "1")
    x = digits.split()[2][:16]  # raw pixels 0..16, as a client sends them
    assert x.max() > 1
    with sess:
        assert _describe(sigs) == DIGITS
        out = _run(sess, sigs["serving_default"], images=x)
        logits = _run(sess, sigs["logits"], images=x)["logits"]
    assert out["probabilities"].dtype == np.float32 and out["probabilities"].shape == (16, 10)
    assert out["classes"].dtype == np.int64 and out["classes"].shape == (16,)
    np.testing.assert_allclose(out["probabilities"].sum(axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(out["classes"], out["probabilities"].argmax(axis=1))
    np.testing.assert_array_equal(out["classes"], logits.argmax(axis=1))


def test_digits_accuracy_on_held_out_split():
    assert _digits_accuracy(REPOSITORY / "digits" / "1") > 0.95


def test_digits_cnn_is_a_tensorflow_saved_model():
    """The CNN trained with the engine ships in TensorFlow's format (TF 2.21 loads it with
    the same 97.8% accuracy; checked when it was built) and serves from the repository."""
    d = REPOSITORY / "digits_cnn" / "1"
    assert sorted(p.name for p in d.iterdir()) == ["saved_model.pb", "variables"]
    assert _digits_accuracy(d) > 0.95
    sess, sigs = _load(d)
    sess.close()
    assert sorted(sigs["serving_default"].outputs) == ["classes", "probabilities"]


@pytest.mark.parametrize("existing", [False, True], ids=["empty", "replace"])
def test_build_script_rebuilds_equivalent_models(tmp_path, existing):
    repo = tmp_path / "repo"
    if existing:  # rebuilding over present versions replaces them
        shutil.copytree(REPOSITORY / "half_plus_two", repo / "half_plus_two")
        shutil.copytree(REPOSITORY / "digits", repo / "digits")
    env = {k: v for k, v in os.environ.items() if k != "FLOWSERVE_CHECK_KERNELS"}
    done = subprocess.run(
        [sys.executable, str(REPOSITORY / "build.py"), "--repository", str(repo)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "test_accuracy" in done.stdout
    # Only the model directories, versions and config; no staging or old copies left behind.
    left = sorted(str(p.relative_to(repo)) for p in repo.rglob("*") if p.name.startswith("."))
    assert left == []
    assert sorted(p.name for p in repo.iterdir()) == ["digits", "digits_cnn", "half_plus_two"]
    assert (repo / "digits_cnn" / "1" / "saved_model.pb").is_file()
    assert _digits_accuracy(repo / "digits_cnn" / "1") > 0.95
    assert sorted(p.name for p in (repo / "digits").iterdir()) == ["1", "config.json"]

    sess, sigs = _load(repo / "half_plus_two" / "1")
    assert _describe(sigs) == HALF_PLUS_TWO
    with sess:
        np.testing.assert_allclose(
            _run(sess, sigs["serving_default"], x=np.float32([4]))["y"], [4.0]
        )
    sess, sigs = _load(repo / "digits" / "1")
    sess.close()
    assert _describe(sigs) == DIGITS
    rebuilt = _digits_accuracy(repo / "digits" / "1")
    assert rebuilt > 0.95
    assert abs(rebuilt - _digits_accuracy(REPOSITORY / "digits" / "1")) <= 0.02
    assert (repo / "digits" / "config.json").read_text() == (
        REPOSITORY / "digits" / "config.json"
    ).read_text()
