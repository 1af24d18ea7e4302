"""Keras 2.x example scripts' models (``tests/engine/keras/example_programs_1.py``) run by
the engine against TensorFlow's legacy Keras' recording of the same programs
(``tests/engine/fixtures/make_keras_examples_1_fixtures.py``), and ``Sequential``'s
``predict_classes``/``predict_proba`` that the addition example calls (TF 1.x's; TF's
recorded Keras no longer has them, so they are checked against ``predict``)."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures.oracle import assert_recorded, load
from tests.engine.keras import example_programs_1 as programs

RECORDED = load("keras_examples_1_tf.npz")


@pytest.mark.parametrize("program", programs.PROGRAMS, ids=lambda p: p.__name__)
def test_example_program_matches_tensorflow(program):
    got = program(tf)
    assert got
    for key, value in got.items():
        assert key in RECORDED.files, f"{key} was not recorded"
        expected = RECORDED[key]
        if expected.dtype.kind == "f":
            assert_recorded(np.asarray(value, expected.dtype), expected, key, rtol=2e-4, atol=2e-5)
        else:
            assert_recorded(np.asarray(value).astype(expected.dtype), expected, key, rtol=0)
    prefix = next(iter(got)).split("_")[0]
    program_keys = {k for k in RECORDED.files if k.split("_")[0] == prefix}
    assert program_keys <= set(got), sorted(program_keys - set(got))


def _model(units, activation):
    tf.keras.backend.clear_session()
    model = tf.keras.models.Sequential(
        [tf.keras.layers.Dense(units, activation=activation, input_shape=(3,))]
    )
    model.set_weights(
        [np.array([[1.0, -2.0], [0.5, 1.0], [-1.0, 0.25]])[:, :units], np.zeros(units)]
    )
    return model


X = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 1.0, 1.0]], "float32")


def test_predict_classes_is_the_argmax_of_predict():
    model = _model(2, "softmax")
    classes = model.predict_classes(X, batch_size=3, verbose=0)
    np.testing.assert_array_equal(classes, model.predict(X).argmax(axis=-1))
    np.testing.assert_array_equal(classes, [0, 1, 1, 0])


def test_predict_classes_thresholds_one_unit_at_a_half():
    model = _model(1, "sigmoid")
    classes = model.predict_classes(X)
    assert classes.dtype == np.int32 and classes.shape == (4, 1)
    np.testing.assert_array_equal(classes[:, 0], [1, 1, 0, 1])


def test_predict_proba_returns_predict_and_warns_outside_zero_one():
    model = _model(2, "softmax")
    np.testing.assert_allclose(model.predict_proba(X), model.predict(X))
    linear = _model(2, None)
    with pytest.warns(UserWarning, match="invalid probability values"):
        np.testing.assert_allclose(linear.predict_proba(X), linear.predict(X))


def _cache(tmp_path, name, data=b"text of nietzsche\n", subdir="datasets"):
    (tmp_path / subdir).mkdir(exist_ok=True)
    (tmp_path / subdir / name).write_bytes(data)
    return str(tmp_path / subdir / name)


def test_get_file_returns_the_cached_path_and_never_downloads(tmp_path, monkeypatch):
    path = _cache(tmp_path, "nietzsche.txt")
    get_file = tf.keras.utils.get_file
    assert get_file("nietzsche.txt", origin="https://x/nietzsche.txt", cache_dir=tmp_path) == path
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    assert get_file(origin="https://host/a/nietzsche.txt") == path
    with pytest.raises(FileNotFoundError, match="does not download"):
        get_file("babi.tar.gz", origin="https://x/babi.tar.gz")
    assert get_file("nietzsche.txt", cache_subdir=str(tmp_path / "datasets")) == path


def test_get_file_checks_md5_and_sha256_hashes(tmp_path):
    import hashlib  # noqa: PLC0415

    data = b"some file"
    _cache(tmp_path, "f.bin", data)
    md5, sha = hashlib.md5(data).hexdigest(), hashlib.sha256(data).hexdigest()
    get_file = tf.keras.utils.get_file
    assert get_file("f.bin", md5_hash=md5, cache_dir=tmp_path).endswith("f.bin")
    assert get_file("f.bin", file_hash=sha, cache_dir=tmp_path).endswith("f.bin")
    with pytest.raises(ValueError, match="does not match the sha256 hash"):
        get_file("f.bin", file_hash="0" * 64, cache_dir=tmp_path)
    with pytest.raises(ValueError, match="hash_algorithm"):
        get_file("f.bin", file_hash=md5, hash_algorithm="sha1", cache_dir=tmp_path)


def _tar(path, members):
    import io  # noqa: PLC0415
    import tarfile  # noqa: PLC0415

    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def test_get_file_untars_and_extracts_as_keras_does(tmp_path):
    import zipfile  # noqa: PLC0415

    (tmp_path / "datasets").mkdir()
    _tar(tmp_path / "datasets" / "babi.tar.gz", {"babi/qa1.txt": b"1 Mary went home.\n"})
    got = tf.keras.utils.get_file("babi.tar.gz", untar=True, cache_dir=tmp_path)
    assert got == str(tmp_path / "datasets" / "babi")
    assert (tmp_path / "datasets" / "babi" / "qa1.txt").read_bytes() == b"1 Mary went home.\n"
    with zipfile.ZipFile(tmp_path / "datasets" / "z.zip", "w") as z:
        z.writestr("inside/a.txt", "zipped")
    got = tf.keras.utils.get_file("z.zip", extract=True, cache_dir=tmp_path)
    assert got == str(tmp_path / "datasets" / "z.zip")
    assert (tmp_path / "datasets" / "inside" / "a.txt").read_text() == "zipped"


def test_get_file_refuses_archive_members_outside_the_cache(tmp_path):
    import tarfile  # noqa: PLC0415

    (tmp_path / "datasets").mkdir()
    _tar(tmp_path / "datasets" / "evil.tar.gz", {"../escaped.txt": b"x"})
    with pytest.raises(tarfile.OutsideDestinationError):
        tf.keras.utils.get_file("evil.tar.gz", extract=True, cache_dir=tmp_path)
    assert not (tmp_path / "escaped.txt").exists()
