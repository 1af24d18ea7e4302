"""Op-table rows for text preprocessing: what skl2onnx writes for scikit-learn's
``CountVectorizer`` / ``TfidfVectorizer`` (``StringNormalizer`` -> onnxruntime's
``com.microsoft`` ``Tokenizer`` -> ``TfIdfVectorizer``), and the opset 20 string operators
``StringConcat``, ``StringSplit`` and ``RegexFullMatch``.

Semantics follow onnxruntime's CPU kernels (see ``ops_text.py``). Everything a node's
attributes say is checked here, once, when the model is imported: modes and lengths,
the n-gram pool (bounded, whole n-grams, no duplicates, indexes in range), and every regular
expression, compiled and checked by ``ops_text.check_pattern``.

Deviations, all refused by name rather than approximated: StringNormalizer ``locale`` other
than "", "C", "POSIX", "C.UTF-8" and the en_US forms (a Turkish locale's dotted i differs;
"C"/"POSIX" change ASCII letters only, as glibc does); attribute strings that are not UTF-8;
the Tokenizer attributes ``tokenexpsplit`` and ``stopwords`` (extensions of other runtimes
that onnxruntime rejects); separators that can match the empty string; a TfIdfVectorizer
pool whose type differs from its input's (onnxruntime answers zeros), or with fewer
``ngram_indexes`` than n-grams (onnxruntime reads past them). A Tokenizer given an empty
input (a zero dimension) answers shape ``input + [0]`` where onnxruntime drops the last
input dimension; both hold no strings.
"""

from __future__ import annotations

from engine import dtypes
from engine.formats.onnx.mapping import UnsupportedModelError, register
from engine.formats.onnx.mapping_ml import bounded, where
from engine.formats.onnx.mapping_ms import MS_DOMAIN
from engine.formats.onnx.ops_text import (
    change_case,
    char_tokenization,
    check_pattern,
    ngram_table,
)
from engine.formats.onnx.tensors import OnnxFormatError
from engine.framework.graph import Tensor
from engine.ops._common import create

__all__ = ["MAX_SEPARATORS", "MAX_SKIP_COUNT", "UNICODE_LOCALES"]

MAX_SEPARATORS = 1024
# Each row is walked (max_skip_count + 1) * max_gram_length times per position.
MAX_SKIP_COUNT = 1024
UNICODE_LOCALES = frozenset(
    {"", "C.UTF-8", "C.utf8", "en_US", "en-US", "en_US.UTF-8", "en_US.utf8", "en_US.utf-8"}
)
ASCII_LOCALES = frozenset({"C", "POSIX"})
MODES = ("TF", "IDF", "TFIDF")


def _attribute(node: dict, name: str) -> dict | None:
    for a in node.get("attribute", []):
        if a.get("name") == name:
            return a
    return None


def _text(ctx, node: dict, name: str, default=...) -> str:
    """A string attribute, which must be UTF-8."""
    value = ctx.attr(node, name, default)
    if isinstance(value, bytes):
        raise UnsupportedModelError(f"{where(node)}: attribute {name} is not UTF-8")
    return value


def _texts(node: dict, name: str) -> list[str] | None:
    """A strings attribute (None when absent), each UTF-8, their count bounded."""
    a = _attribute(node, name)
    if a is None:
        return None
    raw = a.get("strings", [])
    bounded(len(raw), node, f"the length of {name}")
    try:
        return [bytes(s).decode("utf-8") for s in raw]
    except UnicodeDecodeError:
        raise UnsupportedModelError(
            f"{where(node)}: {name} holds a string that is not UTF-8"
        ) from None


def _string_input(ctx, node: dict, i: int = 0) -> Tensor:
    x = ctx.input(node, i)
    if x.dtype.base_dtype != dtypes.string:
        raise OnnxFormatError(f"{where(node)} takes strings, got {x.dtype.base_dtype.name}")
    return x


def _pattern(node: dict, pattern: str, what: str, empty_ok: bool = True) -> None:
    try:
        check_pattern(pattern, empty_ok=empty_ok)
    except ValueError as e:
        raise UnsupportedModelError(f"{where(node)}: {what}: {e}") from None


# -----------------------------------------------------------------------------------------
# StringNormalizer
# -----------------------------------------------------------------------------------------


def _string_normalizer(ctx, node):
    x = _string_input(ctx, node)
    action = _text(ctx, node, "case_change_action", "NONE")
    if action not in ("LOWER", "UPPER", "NONE"):
        raise OnnxFormatError(f"{where(node)}: case_change_action {action!r}")
    locale = _text(ctx, node, "locale", "")
    if locale not in UNICODE_LOCALES | ASCII_LOCALES:
        raise UnsupportedModelError(
            f"{where(node)}: locale {locale!r}; supported: "
            f"{sorted(UNICODE_LOCALES | ASCII_LOCALES)} (case changes differ by locale)"
        )
    ascii_only = int(locale in ASCII_LOCALES)
    sensitive = int(bool(ctx.attr(node, "is_case_sensitive", 0)))
    stopwords = _texts(node, "stopwords") or []
    if any(not w for w in stopwords):
        raise OnnxFormatError(f"{where(node)}: empty stopwords are not allowed")
    upper = action == "UPPER"
    keys = stopwords if sensitive else [change_case(w, upper, bool(ascii_only)) for w in stopwords]
    if len(set(keys)) != len(keys):
        raise OnnxFormatError(f"{where(node)}: duplicate stopwords are not allowed")
    attrs = {
        "case_change_action": action,
        "is_case_sensitive": sensitive,
        "stopwords": stopwords,
        "ascii_only": ascii_only,
    }
    return [create("OnnxStringNormalizer", [x], attrs).outputs[0]]


# -----------------------------------------------------------------------------------------
# TfIdfVectorizer
# -----------------------------------------------------------------------------------------


def _int_list(ctx, node: dict, name: str) -> list[int]:
    values = [int(v) for v in ctx.attr(node, name, [])]
    bounded(len(values), node, f"the length of {name}")
    return values


def _gram_lengths(ctx, node: dict, counts: list[int]) -> tuple[int, int, int]:
    lo = int(ctx.attr(node, "min_gram_length"))
    hi = int(ctx.attr(node, "max_gram_length"))
    skips = int(ctx.attr(node, "max_skip_count"))
    if not 1 <= lo <= hi <= len(counts):
        raise OnnxFormatError(
            f"{where(node)}: needs 1 <= min_gram_length ({lo}) <= max_gram_length ({hi}) "
            f"<= len(ngram_counts) ({len(counts)})"
        )
    if not 0 <= skips <= MAX_SKIP_COUNT:
        raise UnsupportedModelError(
            f"{where(node)}: max_skip_count {skips}, expected 0..{MAX_SKIP_COUNT}"
        )
    return lo, hi, skips


def _pool(node: dict, x: Tensor) -> tuple[list[str], list[int]]:
    strings = _texts(node, "pool_strings")
    a = _attribute(node, "pool_int64s")
    ints = [int(v) for v in a.get("ints", [])] if a is not None and strings is None else []
    bounded(len(ints), node, "the length of pool_int64s")
    if not strings and not ints:
        raise OnnxFormatError(f"{where(node)}: needs a non-empty pool_strings or pool_int64s")
    is_string = x.dtype.base_dtype == dtypes.string
    if is_string != bool(strings) or x.dtype.base_dtype not in (
        dtypes.string,
        dtypes.int32,
        dtypes.int64,
    ):
        raise UnsupportedModelError(
            f"{where(node)}: a {'string' if strings else 'int64'} pool for "
            f"{x.dtype.base_dtype.name} input"
        )
    return strings or [], ints


def _tfidf_vectorizer(ctx, node):
    x = ctx.input(node, 0)
    mode = _text(ctx, node, "mode")
    if mode not in MODES:
        raise OnnxFormatError(f"{where(node)}: mode {mode!r}, expected one of {MODES}")
    counts = _int_list(ctx, node, "ngram_counts")
    indexes = _int_list(ctx, node, "ngram_indexes")
    if not counts or not indexes:
        raise OnnxFormatError(f"{where(node)}: needs non-empty ngram_counts and ngram_indexes")
    lo, hi, skips = _gram_lengths(ctx, node, counts)
    if min(indexes) < 0:
        raise OnnxFormatError(f"{where(node)}: negative ngram_indexes")
    bounded(max(indexes) + 1, node, "the output size (max of ngram_indexes + 1)")
    weights = [float(w) for w in ctx.attr(node, "weights", [])]
    if weights and len(weights) != len(indexes):
        raise OnnxFormatError(
            f"{where(node)}: {len(weights)} weights for {len(indexes)} ngram_indexes"
        )
    strings, ints = _pool(node, x)
    pool = [s.encode("utf-8") for s in strings] if strings else ints
    try:
        ngram_table(pool, counts, indexes, lo, hi)
    except ValueError as e:
        raise OnnxFormatError(f"{where(node)}: {e}") from None
    attrs = {
        "mode": mode,
        "min_gram_length": lo,
        "max_gram_length": hi,
        "max_skip_count": skips,
        "ngram_counts": counts,
        "ngram_indexes": indexes,
        "pool_strings": strings,
        "pool_int64s": ints,
        "weights": weights,
    }
    return [create("OnnxTfIdfVectorizer", [x], attrs).outputs[0]]


# -----------------------------------------------------------------------------------------
# Tokenizer (com.microsoft)
# -----------------------------------------------------------------------------------------


def _tokenizer_patterns(ctx, node) -> tuple[list[str], str]:
    separators = _texts(node, "separators")
    if separators is not None:
        if not separators:
            raise OnnxFormatError(f"{where(node)}: separators must not be empty")
        if len(separators) > MAX_SEPARATORS:
            raise UnsupportedModelError(
                f"{where(node)}: {len(separators)} separators, more than {MAX_SEPARATORS}"
            )
        if separators != [""]:
            for s in separators:
                _pattern(node, s, f"separator {s!r}", empty_ok=False)
        return separators, ""
    tokenexp = _text(ctx, node, "tokenexp", "")
    if not tokenexp:
        raise OnnxFormatError(f"{where(node)}: needs separators or a non-empty tokenexp")
    _pattern(node, tokenexp, "tokenexp")
    return [], tokenexp


def _tokenizer(ctx, node):
    x = _string_input(ctx, node)
    if int(ctx.attr(node, "tokenexpsplit", 0)) or _texts(node, "stopwords"):
        raise UnsupportedModelError(
            f"{where(node)}: tokenexpsplit and stopwords are not attributes of onnxruntime's "
            "Tokenizer"
        )
    mincharnum = int(ctx.attr(node, "mincharnum"))
    separators, tokenexp = _tokenizer_patterns(ctx, node)
    if mincharnum < 1 or (char_tokenization(separators, tokenexp) and mincharnum > 1):
        raise OnnxFormatError(
            f"{where(node)}: mincharnum {mincharnum}, expected >= 1 (1 for characters)"
        )
    attrs = {
        "mark": int(bool(ctx.attr(node, "mark"))),
        "mincharnum": mincharnum,
        "pad_value": _text(ctx, node, "pad_value"),
        "separators": separators,
        "tokenexp": tokenexp,
    }
    return [create("OnnxTokenizer", [x], attrs).outputs[0]]


# -----------------------------------------------------------------------------------------
# StringConcat, StringSplit, RegexFullMatch
# -----------------------------------------------------------------------------------------


def _string_concat(ctx, node):
    a, b = _string_input(ctx, node, 0), _string_input(ctx, node, 1)
    return [create("OnnxStringConcat", [a, b]).outputs[0]]


def _string_split(ctx, node):
    x = _string_input(ctx, node)
    attrs = {
        "delimiter": _text(ctx, node, "delimiter", ""),
        "maxsplit": int(ctx.attr(node, "maxsplit", -1)),
    }
    return list(create("OnnxStringSplit", [x], attrs).outputs)


def _regex_full_match(ctx, node):
    x = _string_input(ctx, node)
    pattern = _text(ctx, node, "pattern")
    _pattern(node, pattern, "pattern")
    return [create("OnnxRegexFullMatch", [x], {"pattern": pattern}).outputs[0]]


register("StringNormalizer", (10,), _string_normalizer)
register("TfIdfVectorizer", (9,), _tfidf_vectorizer)
register("StringConcat", (20,), _string_concat)
register("StringSplit", (20,), _string_split)
register("RegexFullMatch", (20,), _regex_full_match)
register("Tokenizer", (1,), _tokenizer, domain=MS_DOMAIN)
