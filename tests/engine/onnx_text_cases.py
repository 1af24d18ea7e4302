"""Op-table rows for the ONNX text ops (engine/formats/onnx/ops_text.py), joined to
``test_onnx_ops.CASES`` so that the op-table, round-trip and coverage meta-tests see them.
The references are small worked examples of onnxruntime's semantics; ``test_onnx_text.py``
checks the same ops against onnxruntime itself."""

import numpy as np

from engine.formats.onnx import ops_text  # noqa: F401 - registers the ops
from engine.ops._common import create
from tests.engine.optable import Case

I64 = np.int64


def _s(*values) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = [v.encode("utf-8") for v in values]
    return out


def _op(op_type, attrs, n=0):
    return lambda *xs: create(op_type, list(xs), attrs).outputs[n]


_NORMALIZE = {
    "case_change_action": "UPPER",
    "is_case_sensitive": 0,
    "stopwords": ["the"],
    "ascii_only": 0,
}
_TFIDF = {
    "mode": "TF",
    "min_gram_length": 1,
    "max_gram_length": 2,
    "max_skip_count": 1,
    "ngram_counts": [0, 2],
    "ngram_indexes": [0, 1, 2],
    "pool_strings": [],
    "pool_int64s": [5, 7, 5, 7],
    "weights": [],
}
_TOKENIZE = {
    "mark": 1,
    "mincharnum": 2,
    "pad_value": "#",
    "separators": [],
    "tokenexp": "[a-z]+",
}

TEXT_CASES = [
    Case(
        "string_normalizer_upper_stopwords",
        _op("OnnxStringNormalizer", _NORMALIZE),
        [_s("The", "café", "x")],
        lambda x: _s("CAFÉ", "X"),
    ),
    Case(
        # Row [5, 7, 9, 5, 7]: 5 and 7 twice each, (5, 7) adjacent twice, never 2 apart.
        # Row [7, 5, 0, 7, 1]: 5 once, 7 twice, (5, 7) only 2 apart (skip count 1).
        "tfidf_vectorizer_skip_grams",
        _op("OnnxTfIdfVectorizer", _TFIDF),
        [np.array([[5, 7, 9, 5, 7], [7, 5, 0, 7, 1]], I64)],
        lambda x: np.array([[2, 2, 2], [1, 2, 1]], np.float32),
    ),
    Case(
        "tokenizer_tokenexp_mark",
        _op("OnnxTokenizer", _TOKENIZE),
        [_s("ab c de", "xyz")],
        lambda x: np.array(
            [[b"\x02", b"ab", b"de", b"\x03"], [b"\x02", b"xyz", b"\x03", b"#"]], dtype=object
        ),
    ),
    Case(
        "string_concat_broadcast",
        _op("OnnxStringConcat", {}),
        [_s("a", "bc").reshape(2, 1), _s("-", "+")],
        lambda x, y: np.array([[b"a-", b"a+"], [b"bc-", b"bc+"]], dtype=object),
    ),
    Case(
        "string_split_maxsplit",
        _op("OnnxStringSplit", {"delimiter": ",", "maxsplit": 1}, n=0),
        [_s("a,b,c", "", "d")],
        lambda x: np.array([[b"a", b"b,c"], [b"", b""], [b"d", b""]], dtype=object),
    ),
    Case(
        "string_split_counts",
        _op("OnnxStringSplit", {"delimiter": "", "maxsplit": -1}, n=1),
        [_s("  a  b ", "", "c")],
        lambda x: np.array([2, 0, 1], I64),
    ),
    Case(
        "regex_full_match",
        _op("OnnxRegexFullMatch", {"pattern": r"[a-z]+\d?"}),
        [_s("abc1", "abc12", "", "Ab")],
        lambda x: np.array([True, False, False, False]),
    ),
]
