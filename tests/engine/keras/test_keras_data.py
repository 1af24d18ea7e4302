"""Keras fed from ``tf.data`` and generators, and Keras preprocessing, against what TF's
legacy Keras recorded for the same programs (``data_programs.py`` and
``preprocessing_cases.py``, recorded by ``make_keras_data_fixtures.py``)."""

from __future__ import annotations

import io

import numpy as np
import pytest

import engine as tf
from engine.keras import dataset_loops, preprocessing_affine, preprocessing_image
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


# -- image preprocessing: what TF's recording cannot cover (it has no SciPy) -------------------

image = tf.keras.preprocessing.image
SQUARE = np.arange(25, dtype=np.float32).reshape(5, 5, 1)


def test_quarter_turn_is_a_rotation_of_the_pixels():
    got = image.apply_affine_transform(SQUARE, theta=90, row_axis=0, col_axis=1, channel_axis=2)
    np.testing.assert_allclose(got[:, :, 0], np.rot90(SQUARE[:, :, 0]), atol=1e-4)
    back = image.apply_affine_transform(got, theta=-90, row_axis=0, col_axis=1, channel_axis=2)
    np.testing.assert_allclose(back, SQUARE, atol=1e-4)


def test_whole_pixel_shift_moves_pixels_and_fills():
    got = image.apply_affine_transform(
        SQUARE, tx=2, row_axis=0, col_axis=1, channel_axis=2, fill_mode="constant", cval=-1
    )[:, :, 0]
    moved = [np.full((5, 5), -1.0, np.float32) for _ in range(4)]
    moved[0][:, :3], moved[1][:, 2:] = SQUARE[:, 2:, 0], SQUARE[:, :3, 0]
    moved[2][:3], moved[3][2:] = SQUARE[2:, :, 0], SQUARE[:3, :, 0]
    assert any(np.allclose(got, m, atol=1e-4) for m in moved)
    nearest = image.apply_affine_transform(SQUARE, tx=2, row_axis=0, col_axis=1, channel_axis=2)
    assert set(np.unique(nearest)) <= set(np.unique(SQUARE))


def test_bilinear_sampling_is_exact_on_a_linear_ramp():
    rows, cols = np.indices((8, 9), dtype=np.float64)
    ramp = 2 * rows + 3 * cols
    m, off = np.array([[0.8, 0.3], [-0.2, 0.9]]), np.array([0.7, 0.4])
    got = preprocessing_affine.affine_sample(ramp, m, off, order=1, fill_mode="constant", cval=-9)
    r, c = np.einsum("ij,jkl->ikl", m, np.indices((8, 9))) + off[:, None, None]
    eps = 1e-9
    inside = (r >= -eps) & (r <= 7 + eps) & (c >= -eps) & (c <= 8 + eps)
    np.testing.assert_allclose(got[inside], (2 * r + 3 * c)[inside], atol=1e-9)
    assert (got[~inside] == -9).all() and inside.sum() > 30


def test_random_transforms_keep_invariants():
    gen = image.ImageDataGenerator(
        rotation_range=40, width_shift_range=0.2, shear_range=15, zoom_range=0.3,
        horizontal_flip=True,
    )  # fmt: skip
    flat = np.full((6, 5, 3), 7.0, np.float32)
    np.testing.assert_allclose(gen.random_transform(flat, seed=1), flat, atol=1e-4)
    np.random.seed(0)
    flips = [gen.get_random_transform((6, 5, 3))["flip_horizontal"] for _ in range(400)]
    assert 160 < sum(flips) < 240  # a fair coin
    x = (np.random.RandomState(2).rand(6, 5, 3) * 10).astype(np.float32)
    moved = gen.random_transform(x, seed=3)
    assert (
        moved.shape == x.shape and moved.min() >= x.min() - 1e-4 and moved.max() <= x.max() + 1e-4
    )
    assert not np.allclose(moved, x)


def test_flow_feeds_fit_generator_like_arrays():
    x = np.random.RandomState(3).rand(9, 4, 4, 1).astype(np.float32)
    y = np.random.RandomState(4).rand(9, 1).astype(np.float32)

    def train(fit):
        tf.keras.backend.clear_session()
        model = tf.keras.Sequential([tf.keras.layers.Flatten(input_shape=(4, 4, 1)),
                                     tf.keras.layers.Dense(1)])  # fmt: skip
        model.set_weights([np.full((16, 1), 0.1, np.float32), np.zeros(1, np.float32)])
        model.compile("sgd", "mse")
        return fit(model).history["loss"]

    flowed = train(lambda m: m.fit_generator(
        image.ImageDataGenerator().flow(x, y, batch_size=4, shuffle=False), epochs=2, verbose=0,
        shuffle=False,
    ))  # fmt: skip
    arrays = train(lambda m: m.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0))
    np.testing.assert_allclose(flowed, arrays, rtol=1e-6)


def test_image_errors(monkeypatch):
    with pytest.raises(ValueError, match="rank 3"):
        image.array_to_img(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="hasn't been fit"):
        image.ImageDataGenerator(featurewise_center=True).standardize(np.zeros((2, 2, 1)))
    with pytest.raises(ValueError, match="rank 4"):
        image.ImageDataGenerator().flow(np.zeros((3, 2, 2)))
    with pytest.raises(ValueError, match="fill_mode"):
        image.apply_affine_transform(SQUARE, theta=5, channel_axis=2, row_axis=0,
                                     col_axis=1, fill_mode="mirror")  # fmt: skip
    buf = io.BytesIO()
    image.save_img(buf, np.zeros((8, 8, 3)), file_format="png")
    buf.seek(0)
    with pytest.raises(ValueError, match="color_mode"):
        image.load_img(buf, color_mode="cmyk")
    buf.seek(0)
    with pytest.raises(ValueError, match="Invalid interpolation"):
        image.load_img(buf, target_size=(2, 2), interpolation="cubic-ish")
    monkeypatch.setattr(preprocessing_image, "MAX_IMAGE_PIXELS", 63)
    buf.seek(0)
    with pytest.raises(ValueError, match="more than MAX_IMAGE_PIXELS"):
        image.load_img(buf)
