"""``tf.keras.preprocessing.text``: ``Tokenizer`` (a vocabulary ranked by frequency, texts
to index sequences or to binary/count/freq/tfidf matrices, JSON round trip),
``text_to_word_sequence``, ``one_hot`` and ``hashing_trick``, as TF1's Keras computes them.

``one_hot`` (and ``hashing_trick`` without a ``hash_function``) hash words with Python's
``hash``, which is salted per process unless ``PYTHONHASHSEED`` is set — as in TF, so its
indices differ between runs; ``hash_function="md5"`` is the deterministic choice.

>>> tok = Tokenizer(num_words=100, oov_token="<unk>")
>>> tok.fit_on_texts(["the cat sat", "the dog"])
>>> tok.texts_to_sequences(["the cat ran"])
[[2, 3, 1]]
"""

from __future__ import annotations

import collections
import hashlib
import json

import numpy as np

__all__ = [
    "Tokenizer",
    "hashing_trick",
    "one_hot",
    "text_to_word_sequence",
    "tokenizer_from_json",
]

DEFAULT_FILTERS = '!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n'
_MODES = ("binary", "count", "tfidf", "freq")


def text_to_word_sequence(input_text, filters=DEFAULT_FILTERS, lower=True, split=" ") -> list:
    """``input_text`` split into words at ``split``, after lowercasing (when ``lower``) and
    turning each character of ``filters`` into a split; empty words are dropped."""
    if not isinstance(input_text, str):
        raise TypeError(f"text_to_word_sequence expects a str, got {type(input_text).__name__}")
    if lower:
        input_text = input_text.lower()
    input_text = input_text.translate(str.maketrans({c: split for c in filters}))
    return [w for w in input_text.split(split) if w]


def _md5(word: str) -> int:
    return int(hashlib.md5(word.encode()).hexdigest(), 16)


def hashing_trick(
    text, n, hash_function=None, filters=DEFAULT_FILTERS, lower=True, split=" ", analyzer=None
) -> list:
    """Each word of ``text`` as ``hash_function(word) % (n - 1) + 1`` (indices 1..n-1;
    ``hash_function`` is Python's ``hash`` by default, or ``"md5"``, or a callable)."""
    if int(n) < 2:
        raise ValueError(f"hashing_trick needs n >= 2 (indices run from 1 to n - 1), got {n}")
    if hash_function is None:
        hash_function = hash
    elif hash_function == "md5":
        hash_function = _md5
    elif not callable(hash_function):
        raise ValueError(f"hash_function must be None, 'md5' or a callable, got {hash_function!r}")
    if analyzer is None:
        seq = text_to_word_sequence(text, filters=filters, lower=lower, split=split)
    else:
        seq = analyzer(text)
    return [hash_function(w) % (int(n) - 1) + 1 for w in seq]


def one_hot(input_text, n, filters=DEFAULT_FILTERS, lower=True, split=" ", analyzer=None):
    """``hashing_trick`` with Python's (per-process salted) ``hash``: word indices in 1..n-1."""
    return hashing_trick(
        input_text, n, hash_function=hash, filters=filters, lower=lower, split=split,
        analyzer=analyzer,
    )  # fmt: skip


class Tokenizer:
    """A vocabulary fit on texts: ``word_index`` ranks words by count (ties in first-seen
    order) from 1, after ``oov_token`` (index 1) when given; ``num_words`` keeps only indices
    below it when converting."""

    def __init__(
        self,
        num_words=None,
        filters=DEFAULT_FILTERS,
        lower=True,
        split=" ",
        char_level=False,
        oov_token=None,
        analyzer=None,
        **kwargs,
    ):
        if "nb_words" in kwargs:
            num_words = kwargs.pop("nb_words")
        document_count = kwargs.pop("document_count", 0)
        if kwargs:
            raise TypeError(f"Unrecognized keyword arguments: {kwargs}")
        if num_words is not None and (not isinstance(num_words, int) or num_words < 0):
            raise ValueError(f"num_words must be a non-negative int or None, got {num_words!r}")
        self.word_counts = collections.OrderedDict()
        self.word_docs = collections.defaultdict(int)
        self.filters = filters
        self.split = split
        self.lower = lower
        self.num_words = num_words
        self.document_count = int(document_count)
        self.char_level = char_level
        self.oov_token = oov_token
        self.index_docs = collections.defaultdict(int)
        self.word_index: dict = {}
        self.index_word: dict = {}
        self.analyzer = analyzer

    def _words(self, text) -> list:
        if self.char_level or isinstance(text, list):
            if self.lower:
                text = [t.lower() for t in text] if isinstance(text, list) else text.lower()
            return list(text)
        if self.analyzer is not None:
            return self.analyzer(text)
        return text_to_word_sequence(text, self.filters, self.lower, self.split)

    def fit_on_texts(self, texts) -> None:
        """Counts the words of ``texts`` (strings, or lists of words) and re-ranks them."""
        if isinstance(texts, str):
            raise TypeError("fit_on_texts expects a list of texts, not one str")
        for text in texts:
            self.document_count += 1
            seq = self._words(text)
            for w in seq:
                self.word_counts[w] = self.word_counts.get(w, 0) + 1
            for w in set(seq):
                self.word_docs[w] += 1
        ranked = sorted(self.word_counts.items(), key=lambda wc: wc[1], reverse=True)
        vocab = ([] if self.oov_token is None else [self.oov_token]) + [w for w, _ in ranked]
        self.word_index = dict(zip(vocab, range(1, len(vocab) + 1)))
        self.index_word = {i: w for w, i in self.word_index.items()}
        for w, c in list(self.word_docs.items()):
            self.index_docs[self.word_index[w]] = c

    def fit_on_sequences(self, sequences) -> None:
        """Counts documents per index (for ``tfidf``) from index sequences."""
        self.document_count += len(sequences)
        for seq in sequences:
            for i in set(seq):
                self.index_docs[i] += 1

    def texts_to_sequences(self, texts) -> list:
        return list(self.texts_to_sequences_generator(texts))

    def texts_to_sequences_generator(self, texts):
        """Each text as its words' indices; words out of the vocabulary (or at/above
        ``num_words``) become the ``oov_token``'s index, or are dropped without one."""
        oov = self.word_index.get(self.oov_token)
        for text in texts:
            vect = []
            for w in self._words(text):
                i = self.word_index.get(w)
                if i is not None and not (self.num_words and i >= self.num_words):
                    vect.append(i)
                elif oov is not None:
                    vect.append(oov)
            yield vect

    def sequences_to_texts(self, sequences) -> list:
        return list(self.sequences_to_texts_generator(sequences))

    def sequences_to_texts_generator(self, sequences):
        """Each index sequence as its words joined by spaces (unknown indices: the
        ``oov_token``, or dropped without one)."""
        oov = self.word_index.get(self.oov_token)
        for seq in sequences:
            words = []
            for num in seq:
                word = self.index_word.get(num)
                if word is not None and not (self.num_words and num >= self.num_words):
                    words.append(word)
                elif oov is not None:
                    words.append(self.index_word[oov])
            yield " ".join(words)

    def texts_to_matrix(self, texts, mode="binary") -> np.ndarray:
        return self.sequences_to_matrix(self.texts_to_sequences(texts), mode=mode)

    def sequences_to_matrix(self, sequences, mode="binary") -> np.ndarray:
        """(len(sequences), num_words) float64: per index, 1 (``binary``), its count
        (``count``), count / length (``freq``) or (1 + log count) * log(1 + docs / (1 +
        docs with it)) (``tfidf``)."""
        if mode not in _MODES:
            raise ValueError(f"Unknown vectorization mode: {mode!r} (expected one of {_MODES})")
        num_words = self.num_words or (len(self.word_index) + 1 if self.word_index else 0)
        if not num_words:
            raise ValueError(
                "Specify a dimension (`num_words` argument), or fit on some text data first."
            )
        if mode == "tfidf" and not self.document_count:
            raise ValueError("Fit the Tokenizer on some data before using tfidf mode.")
        x = np.zeros((len(sequences), num_words))
        for i, seq in enumerate(sequences):
            counts = collections.Counter(j for j in seq if j < num_words)
            for j, c in counts.items():
                if mode == "count":
                    x[i, j] = c
                elif mode == "freq":
                    x[i, j] = c / len(seq)
                elif mode == "binary":
                    x[i, j] = 1
                else:
                    idf = np.log(1 + self.document_count / (1 + self.index_docs.get(j, 0)))
                    x[i, j] = (1 + np.log(c)) * idf
        return x

    def get_config(self) -> dict:
        return {
            "num_words": self.num_words,
            "filters": self.filters,
            "lower": self.lower,
            "split": self.split,
            "char_level": self.char_level,
            "oov_token": self.oov_token,
            "document_count": self.document_count,
            "word_counts": json.dumps(self.word_counts),
            "word_docs": json.dumps(self.word_docs),
            "index_docs": json.dumps(self.index_docs),
            "index_word": json.dumps(self.index_word),
            "word_index": json.dumps(self.word_index),
        }

    def to_json(self, **kwargs) -> str:
        """The tokenizer as JSON, for :func:`tokenizer_from_json`."""
        return json.dumps(
            {"class_name": type(self).__name__, "config": self.get_config()}, **kwargs
        )


_JSON_OPTIONS = {
    "num_words": (int, type(None)),
    "filters": (str,),
    "lower": (bool,),
    "split": (str,),
    "char_level": (bool,),
    "oov_token": (str, type(None)),
    "document_count": (int,),
}
_JSON_TABLES = ("word_counts", "word_docs", "index_docs", "index_word", "word_index")


def _table(config: dict, name: str, int_keys: bool, int_values: bool) -> dict:
    value = json.loads(config[name])
    if not isinstance(value, dict):
        raise ValueError(
            f"tokenizer JSON: {name} must be a JSON object, got {type(value).__name__}"
        )
    out = {}
    for k, v in value.items():
        try:
            key = int(k) if int_keys else k
        except ValueError:
            raise ValueError(f"tokenizer JSON: {name} has a non-integer key {k!r}") from None
        if (int_values and not isinstance(v, int)) or (not int_values and not isinstance(v, str)):
            raise ValueError(f"tokenizer JSON: {name}[{k!r}] has the wrong type: {v!r}")
        out[key] = v
    return out


def tokenizer_from_json(json_string: str) -> Tokenizer:
    """The Tokenizer that :meth:`Tokenizer.to_json` wrote (plain JSON data, checked)."""
    try:
        doc = json.loads(json_string)
    except json.JSONDecodeError as e:
        raise ValueError(f"tokenizer JSON is not valid JSON: {e}") from None
    config = doc.get("config") if isinstance(doc, dict) else None
    if not isinstance(config, dict):
        raise ValueError('tokenizer JSON must be an object with a "config" object')
    unknown = set(config) - set(_JSON_OPTIONS) - set(_JSON_TABLES)
    missing = set(_JSON_TABLES) - set(config)
    if unknown or missing:
        raise ValueError(
            f"tokenizer JSON config: unknown keys {sorted(unknown)}, missing {sorted(missing)}"
        )
    options = {}
    for name, types in _JSON_OPTIONS.items():
        if name in config:
            if not isinstance(config[name], types):
                raise ValueError(f"tokenizer JSON: {name} has the wrong type: {config[name]!r}")
            options[name] = config[name]
    tokenizer = Tokenizer(**options)
    tokenizer.word_counts = collections.OrderedDict(_table(config, "word_counts", False, True))
    tokenizer.word_docs = _table(config, "word_docs", False, True)
    tokenizer.index_docs = _table(config, "index_docs", True, True)
    tokenizer.index_word = _table(config, "index_word", True, False)
    tokenizer.word_index = _table(config, "word_index", False, True)
    return tokenizer
