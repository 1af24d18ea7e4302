"""Keras fed from ``tf.data`` and generators, and Keras preprocessing, against what TF's
legacy Keras recorded for the same programs (``data_programs.py`` and
``preprocessing_cases.py``, recorded by ``make_keras_data_fixtures.py``)."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tf
from engine.keras import dataset_loops
from tests.engine.fixtures.oracle import assert_recorded, load
from tests.engine.keras import data_programs, preprocessing_cases
from tests.engine.keras.programs import Y_REG, X

RECORDED = load("keras_data_tf.npz")


def _compare(got: dict) -> None:
    assert got
    for key, value in got.items():
        assert key in RECORDED.files, f"{key} was not recorded"
        expected = RECORDED[key]
        if expected.dtype.kind in "US":
            assert np.asarray(value).astype(str).tolist() == expected.tolist(), key
        elif expected.dtype.kind == "f":
            assert_recorded(np.asarray(value, expected.dtype), expected, key, rtol=2e-4, atol=2e-5)
        else:
            assert_recorded(np.asarray(value).astype(expected.dtype), expected, key, rtol=0)


@pytest.mark.parametrize(
    "program", data_programs.PROGRAMS + preprocessing_cases.CASES, ids=lambda p: p.__name__
)
def test_program_matches_tensorflow(program):
    _compare(program(tf))


def _model():
    tf.keras.backend.clear_session()
    model = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(5,))])
    model.compile("sgd", "mse")
    return model


def _ds(batch=10):
    return tf.data.Dataset.from_tensor_slices((X, Y_REG)).batch(batch)


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda: _ds(10), 5),
        (lambda: _ds(10).repeat(2), 10),
        (lambda: _ds(10).repeat(), dataset_loops.INFINITE),
        (lambda: _ds(10).repeat().take(7), 7),
        (lambda: _ds(10).skip(2), 3),
        (lambda: tf.data.Dataset.from_tensor_slices(X).batch(7, drop_remainder=True), 6),
        (lambda: tf.data.Dataset.range(3, 20, 4).map(lambda v: v * 2), 5),
        (lambda: tf.data.Dataset.zip((_ds(10), _ds(10).repeat())), 5),
        (lambda: _ds(10).filter(lambda x, y: x[0, 0] > 0), dataset_loops.UNKNOWN),
        (lambda: tf.data.Dataset.from_tensors(X).repeat(0), 0),
    ],
)
def test_cardinality_read_from_the_pipeline(make, expected):
    assert dataset_loops.cardinality(make()) == expected


def test_dataset_arguments_tf_refuses():
    model = _model()
    with pytest.raises(ValueError, match="should not specify a target"):
        model.fit(_ds(), Y_REG)
    with pytest.raises(ValueError, match="`batch_size` argument must not be specified"):
        model.fit(_ds(), batch_size=4)
    with pytest.raises(ValueError, match="`sample_weight` argument is not supported"):
        model.evaluate(_ds(), sample_weight=np.ones(48))
    with pytest.raises(ValueError, match="`validation_split` argument is not supported"):
        model.fit(_ds(), validation_split=0.2)
    with pytest.raises(TypeError, match="Unrecognized keyword"):
        model.fit(_ds(), epochz=2)
    it = _ds().repeat().make_one_shot_iterator()
    with pytest.raises(
        ValueError, match="Dataset iterator as input to a model, you should specify"
    ):
        model.fit(it)
    bad = tf.data.Dataset.from_tensor_slices((X, Y_REG, Y_REG, Y_REG)).batch(4)
    with pytest.raises(ValueError, match="list or tuple of 2 or 3 elements"):
        model.fit(bad, verbose=0)


def test_generator_arguments_tf_refuses():
    model = _model()
    gen = ((X[:4], Y_REG[:4]) for _ in range(3))
    with pytest.raises(ValueError, match="`steps_per_epoch` argument"):
        model.fit_generator(gen)
    with pytest.raises(ValueError, match="`validation_steps` argument"):
        model.fit_generator(gen, steps_per_epoch=1, validation_data=gen)
    with pytest.raises(ValueError, match="`y` and `sample_weight` arguments are not supported"):
        model.fit(gen, Y_REG, steps_per_epoch=1)
    with pytest.raises(ValueError, match="tuple of 1 or 2 or 3 elements"):
        model.fit_generator(iter([(X, Y_REG, None, None)]), steps_per_epoch=1, verbose=0)
    with pytest.raises(ValueError, match="Empty training data"):
        model.fit_generator(iter([]), steps_per_epoch=2, verbose=0)


def test_generator_running_out_stops_training():
    model = _model()
    gen = iter([(X[:8], Y_REG[:8])] * 3)
    h = model.fit_generator(gen, steps_per_epoch=2, epochs=5, verbose=0)
    assert len(h.history["loss"]) == 2  # the third batch is the last one there is


def test_sequence_shuffle_uses_pythons_random():
    class Rows(tf.keras.utils.Sequence):
        def __init__(self):
            self.seen = []
            self.epochs_ended = 0

        def __len__(self):
            return 6

        def __getitem__(self, i):
            self.seen.append(i)
            return X[i * 8 : i * 8 + 8], Y_REG[i * 8 : i * 8 + 8]

        def on_epoch_end(self):
            self.epochs_ended += 1

    rows = Rows()
    dataset_loops.random.seed(3)
    _model().fit_generator(rows, epochs=2, verbose=0)
    dataset_loops.random.seed(3)
    first, second = list(range(6)), list(range(6))
    dataset_loops.random.shuffle(first)
    dataset_loops.random.shuffle(second)
    assert rows.seen == first + second
    assert rows.epochs_ended == 1


def test_verbose_fit_on_dataset_prints_steps(capsys):
    _model().fit(_ds(), epochs=1, verbose=2, validation_data=_ds(16))
    out = capsys.readouterr().out
    assert out.startswith("Train on 5 steps, validate on 3 steps\nEpoch 1/1\n")


# -- preprocessing ---------------------------------------------------------------------------

text = tf.keras.preprocessing.text


def test_tokenizer_reads_tensorflows_json():
    tok = text.tokenizer_from_json(str(RECORDED["tokenizer_json_tf"]))
    np.testing.assert_array_equal(
        tok.texts_to_matrix(["low held"], mode="count"), RECORDED["tokchar_json_count"]
    )
    assert tok.index_word[1] == "l" and tok.num_words == 8


@pytest.mark.parametrize(
    ("doc", "match"),
    [
        ("not json", "not valid JSON"),
        ("[1, 2]", '"config" object'),
        ('{"config": {"word_counts": "{}"}}', "missing"),
        (
            '{"config": {"word_counts": "{}", "word_docs": "{}", "index_docs": "{}", '
            '"index_word": "{\\"x\\": \\"a\\"}", "word_index": "{}"}}',
            "non-integer key",
        ),
        (
            '{"config": {"num_words": "7", "word_counts": "{}", "word_docs": "{}", '
            '"index_docs": "{}", "index_word": "{}", "word_index": "{}"}}',
            "num_words has the wrong type",
        ),
        (
            '{"config": {"evil": 1, "word_counts": "{}", "word_docs": "{}", '
            '"index_docs": "{}", "index_word": "{}", "word_index": "{}"}}',
            "unknown keys",
        ),
    ],
)
def test_tokenizer_from_json_rejects_bad_documents(doc, match):
    with pytest.raises(ValueError, match=match):
        text.tokenizer_from_json(doc)


def test_tokenizer_errors():
    with pytest.raises(ValueError, match="Specify a dimension"):
        text.Tokenizer().texts_to_matrix(["a"])
    tok = text.Tokenizer(num_words=5)
    with pytest.raises(ValueError, match="Fit the Tokenizer"):
        tok.texts_to_matrix(["a"], mode="tfidf")
    with pytest.raises(ValueError, match="Unknown vectorization mode"):
        tok.texts_to_matrix(["a"], mode="bm25")
    with pytest.raises(TypeError, match="Unrecognized keyword"):
        text.Tokenizer(vocabulary=3)
    with pytest.raises(TypeError, match="list of texts"):
        tok.fit_on_texts("one text")


def test_one_hot_uses_pythons_hash_in_range():
    got = text.one_hot("a b c a", 5)
    assert len(got) == 4 and got[0] == got[3] and all(1 <= v <= 4 for v in got)
    assert got == [hash(w) % 4 + 1 for w in "a b c a".split()]
    with pytest.raises(ValueError, match="n >= 2"):
        text.hashing_trick("a", 1)


def test_timeseries_generator_errors():
    seq = tf.keras.preprocessing.sequence
    with pytest.raises(ValueError, match="same length"):
        seq.TimeseriesGenerator(np.zeros(5), np.zeros(4), length=2)
    with pytest.raises(ValueError, match="disallowed"):
        seq.TimeseriesGenerator(np.zeros(5), np.zeros(5), length=6)
    gen = seq.TimeseriesGenerator(np.zeros(5), np.zeros(5), length=2, batch_size=2)
    with pytest.raises(IndexError, match="out of range"):
        gen[len(gen)]
