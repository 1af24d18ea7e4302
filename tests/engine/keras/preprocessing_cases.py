"""Keras preprocessing (text and sequence utilities, and the deterministic parts of image
preprocessing) run with TF's ``compat.v1`` or the engine; each case returns ``{key:
array}`` with ragged lists flattened next to their lengths."""

from __future__ import annotations

import random

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
