"""Keras preprocessing (text and sequence utilities, and the deterministic parts of image
preprocessing) run with TF's ``compat.v1`` or the engine; each case returns ``{key:
array}`` with ragged lists flattened next to their lengths."""

from __future__ import annotations

import io
import os
import random
import tempfile

import numpy as np

TEXTS = [
    "The cat sat on the mat.",
    "The dog ate my homework!",
    "Cats and dogs: the best of friends?",
    "the THE tHe -- dog, dog; DOG",
    "",
]


def _ragged(prefix: str, lists) -> dict:
    lists = list(lists)
    return {
        f"{prefix}_flat": np.asarray([v for row in lists for v in row]),
        f"{prefix}_lengths": np.asarray([len(row) for row in lists], np.int64),
    }


def _vocab(prefix: str, tok) -> dict:
    words = sorted(tok.word_index, key=tok.word_index.get)
    return {
        f"{prefix}_words": np.asarray(words),
        f"{prefix}_index": np.asarray([tok.word_index[w] for w in words], np.int64),
        f"{prefix}_counts": np.asarray([tok.word_counts.get(w, 0) for w in words], np.int64),
        f"{prefix}_docs": np.asarray([tok.word_docs.get(w, 0) for w in words], np.int64),
    }


def tokenizers(tf) -> dict:
    text = tf.keras.preprocessing.text
    out = {}
    tok = text.Tokenizer()
    tok.fit_on_texts(TEXTS)
    out.update(_vocab("tok", tok))
    out.update(_ragged("tok_seq", tok.texts_to_sequences(TEXTS + ["unknown words the cat"])))
    for mode in ("binary", "count", "freq", "tfidf"):
        out[f"tok_{mode}"] = tok.texts_to_matrix(TEXTS, mode=mode)
    out["tok_texts"] = np.asarray(tok.sequences_to_texts([[1, 2, 3], [4, 99, 1]]))
    tok = text.Tokenizer(num_words=6, oov_token="<OOV>", filters="!", lower=False, split=",")
    tok.fit_on_texts(["a,b,B,c!", "a,a,d,e,f", "g,a,b", ["b", "c", "Z"]])
    out.update(_vocab("tokoov", tok))
    out.update(_ragged("tokoov_seq", tok.texts_to_sequences(["a,b,c,d,e,f,g,h", ["Z", "a"]])))
    out["tokoov_texts"] = np.asarray(tok.sequences_to_texts([[1, 2, 3, 5, 6, 7, 50]]))
    out["tokoov_tfidf"] = tok.texts_to_matrix(["a,b,c,d,e,f,g"], mode="tfidf")
    tok.fit_on_sequences([[1, 2], [2, 3, 3]])
    out["tokoov_tfidf_seq"] = tok.sequences_to_matrix([[2, 3, 3, 9]], mode="tfidf")
    tok = text.Tokenizer(char_level=True, num_words=8)
    tok.fit_on_texts(["hello world", "Hold"])
    out.update(_vocab("tokchar", tok))
    out.update(_ragged("tokchar_seq", tok.texts_to_sequences(["low hed"])))
    out["tokchar_count"] = tok.texts_to_matrix(["low hed"], mode="count")
    back = text.tokenizer_from_json(tok.to_json())
    out["tokchar_json_count"] = back.texts_to_matrix(["low held"], mode="count")
    out["tokchar_json_words"] = np.asarray(back.sequences_to_texts([[1, 2, 3, 4, 5, 6, 7]]))
    return out


def text_functions(tf) -> dict:
    text = tf.keras.preprocessing.text
    out = {}
    out["txt_words"] = np.asarray(text.text_to_word_sequence("Hello, World! It's a-test\tok"))
    out["txt_words_custom"] = np.asarray(
        text.text_to_word_sequence("A|b||C d", filters="d", lower=False, split="|")
    )
    out["txt_md5"] = np.asarray(text.hashing_trick("the quick brown fox the", 20, "md5"))
    md5 = text.hashing_trick("One two, THREE", 7, hash_function="md5", lower=False)
    out["txt_md5_upper"] = np.asarray(md5)
    return out


def sequence_functions(tf) -> dict:
    seq = tf.keras.preprocessing.sequence
    out = {"sq_table": seq.make_sampling_table(20), "sq_table_f": seq.make_sampling_table(7, 0.1)}
    words = [1, 2, 0, 3, 4, 5, 2, 6]
    couples, labels = seq.skipgrams(words, 8, window_size=2, shuffle=False, negative_samples=0)
    out.update(_ragged("sq_pairs", couples))
    out["sq_labels"] = np.asarray(labels)
    random.seed(11)
    couples, labels = seq.skipgrams(words, 8, window_size=1, seed=3)
    out.update(_ragged("sq_neg_pairs", couples))
    out["sq_neg_labels"] = np.asarray(labels)
    random.seed(12)
    table = seq.make_sampling_table(8, sampling_factor=0.05)
    couples, labels = seq.skipgrams(
        words, 8, window_size=3, negative_samples=0.5, categorical=True, sampling_table=table,
        seed=4,
    )  # fmt: skip
    out.update(_ragged("sq_cat_pairs", couples))
    out["sq_cat_labels"] = np.asarray(labels)
    data = np.arange(50, dtype=np.float32).reshape(25, 2)
    gen = seq.TimeseriesGenerator(
        data, np.arange(25), length=5, sampling_rate=2, stride=3, start_index=2, end_index=20,
        batch_size=4, reverse=True,
    )  # fmt: skip
    out["sq_ts_len"] = np.asarray(len(gen))
    for i in range(len(gen)):
        out[f"sq_ts_x{i}"], out[f"sq_ts_y{i}"] = gen[i]
    np.random.seed(0)
    shuffled = seq.TimeseriesGenerator(data, np.arange(25), length=3, batch_size=6, shuffle=True)
    out["sq_tsshuf_x"], out["sq_tsshuf_y"] = shuffled[0]
    out["sq_pad"] = seq.pad_sequences([[1, 2, 3], [4], []], maxlen=2, padding="post")
    return out


CASES = [tokenizers, text_functions, sequence_functions]


def tokenizer_json(tf) -> str:
    """A fitted tokenizer's JSON (recorded from TF, read back by the engine's test)."""
    tok = tf.keras.preprocessing.text.Tokenizer(char_level=True, num_words=8)
    tok.fit_on_texts(["hello world", "Hold"])
    return tok.to_json()


IMAGES = (np.random.RandomState(5).rand(7, 6, 5, 3) * 255).astype(np.float32)


def image_utilities(tf) -> dict:
    image = tf.keras.preprocessing.image
    out = {}
    img = image.array_to_img(IMAGES[0])
    out["imu_scaled"] = image.img_to_array(img)
    out["imu_raw_cf"] = image.img_to_array(image.array_to_img(IMAGES[1], scale=False),
                                           data_format="channels_first")  # fmt: skip
    out["imu_gray"] = image.img_to_array(image.array_to_img(IMAGES[2][:, :, :1], scale=False))
    buf = io.BytesIO()
    image.save_img(buf, IMAGES[3], file_format="png", scale=False)
    for mode in ("rgb", "grayscale", "rgba"):
        buf.seek(0)
        loaded = image.load_img(buf, color_mode=mode, target_size=(4, 3), interpolation="bilinear")
        out[f"imu_load_{mode}"] = image.img_to_array(loaded)
    return out


def image_standardize(tf) -> dict:
    image = tf.keras.preprocessing.image
    out = {}
    gen = image.ImageDataGenerator(
        rescale=1 / 255.0, featurewise_center=True, featurewise_std_normalization=True
    )
    gen.fit(IMAGES)
    out["ims_mean"], out["ims_std"] = gen.mean, gen.std
    out["ims_feature"] = gen.standardize(IMAGES.copy())
    gen = image.ImageDataGenerator(samplewise_center=True, samplewise_std_normalization=True)
    out["ims_sample"] = gen.standardize(IMAGES[0].copy())
    gen = image.ImageDataGenerator(zca_whitening=True)
    gen.fit(IMAGES[:, :3, :3, :1] / 255.0)
    out["ims_zca"] = gen.zca_whitening_matrix
    out["ims_zca_x"] = gen.standardize(IMAGES[:2, :3, :3, :1] / 255.0)
    return out


def image_random_parameters(tf) -> dict:
    image = tf.keras.preprocessing.image
    gen = image.ImageDataGenerator(
        rotation_range=30, width_shift_range=0.2, height_shift_range=[1, 2, 3],
        shear_range=10, zoom_range=0.2, channel_shift_range=5.0, brightness_range=(0.5, 1.5),
        horizontal_flip=True, vertical_flip=True,
    )  # fmt: skip
    keys = ["theta", "tx", "ty", "shear", "zx", "zy", "flip_horizontal", "flip_vertical",
            "channel_shift_intensity", "brightness"]  # fmt: skip

    def value(v):
        return np.nan if v is None else float(v)

    rows = [[value(gen.get_random_transform((6, 5, 3), seed=s)[k]) for k in keys]
            for s in range(4)]  # fmt: skip
    ints = image.ImageDataGenerator(
        width_shift_range=3, height_shift_range=4.0, zoom_range=(0.5, 0.9)
    )
    rows += [[value(ints.get_random_transform((6, 5, 3), seed=s)[k]) for k in keys]
             for s in range(3)]  # fmt: skip
    return {"imp_params": np.asarray(rows)}


def image_flow(tf) -> dict:
    image = tf.keras.preprocessing.image
    out = {}
    labels = np.arange(7)
    weights = np.linspace(0.5, 1.5, 7)
    gen = image.ImageDataGenerator(rescale=0.5, horizontal_flip=True, vertical_flip=True)
    it = gen.flow(IMAGES, labels, batch_size=3, seed=7, sample_weight=weights)
    out["imf_len"] = np.asarray(len(it))
    for i in range(len(it)):
        x, y, w = it[i]
        out[f"imf_x{i}"], out[f"imf_y{i}"], out[f"imf_w{i}"] = x, y, w
    it = gen.flow(IMAGES, labels, batch_size=4, seed=3)
    for i in range(4):  # next(): the index stream, epochs reshuffled
        out[f"imf_next_x{i}"], out[f"imf_next_y{i}"] = next(it)
    plain = image.ImageDataGenerator(rescale=2.0).flow(
        [IMAGES, labels * 10], batch_size=5, shuffle=False
    )
    out["imf_plain_x"], out["imf_plain_misc"] = plain[1][0], plain[1][1]
    shifted = image.ImageDataGenerator(channel_shift_range=40.0, brightness_range=(0.6, 1.4))
    out["imf_shift"] = shifted.flow(IMAGES, batch_size=7, seed=1)[0]
    sub = image.ImageDataGenerator(validation_split=0.3).flow(
        IMAGES, labels % 2, batch_size=8, shuffle=False, subset="validation"
    )
    out["imf_subset_y"] = sub[0][1]
    return out


def image_directory(tf) -> dict:
    image = tf.keras.preprocessing.image
    out = {}
    with tempfile.TemporaryDirectory() as root:
        for c, name in enumerate(["dog", "cat", "bird"]):
            os.makedirs(os.path.join(root, name, "sub"))
            for k in range(c + 2):
                where = os.path.join(root, name, "sub" if k == 2 else "", f"im{k}.png")
                x = IMAGES[(c + k) % 7][: 4 + k, : 6 - c]
                image.save_img(where, x, scale=False)
        with open(os.path.join(root, "cat", "notes.txt"), "w") as f:
            f.write("not an image")
        gen = image.ImageDataGenerator(rescale=1 / 255.0, validation_split=0.5)
        it = gen.flow_from_directory(
            root, target_size=(4, 5), batch_size=4, shuffle=False, interpolation="bilinear"
        )
        out["imd_filenames"] = np.asarray([f.replace(os.sep, "/") for f in it.filenames])
        out["imd_classes"] = np.asarray(it.classes, np.int64)
        out["imd_class_names"] = np.asarray(sorted(it.class_indices, key=it.class_indices.get))
        for i in range(len(it)):
            out[f"imd_x{i}"], out[f"imd_y{i}"] = it[i]
        it = gen.flow_from_directory(
            root, target_size=(3, 3), color_mode="grayscale", class_mode="sparse",
            classes=["cat", "dog"], batch_size=10, shuffle=True, seed=2, subset="training",
        )  # fmt: skip
        out["imd_gray_x"], out["imd_gray_y"] = it[0]
        out["imd_none_x"] = gen.flow_from_directory(root, (2, 2), class_mode=None, shuffle=False)[0]
    return out


CASES += [image_utilities, image_standardize, image_random_parameters, image_flow, image_directory]
