"""ONNX-only engine ops for ``mapping_text.py``: StringNormalizer, TfIdfVectorizer,
onnxruntime's Tokenizer, StringConcat, StringSplit and RegexFullMatch.

Semantics follow onnxruntime's CPU kernels (the tests run them side by side). Strings are
object arrays of ``bytes`` on the host, so every op here is CPU-only. Work that depends only
on attributes (the n-gram pool's lookup table, compiled regular expressions, stop-word sets)
is done once per compiled plan by each op's ``bind`` hook, never per run. Declared like the
ops of ``ops.py`` (not differentiable, listed in ``ONNX_OP_TYPES``).

Regular expressions run on Python's ``re`` with ``re.ASCII`` (RE2's ``\\w``, ``\\d``, ``\\s``
and ``\\b`` are ASCII), after ``check_pattern`` has refused what RE2 would not compile
(backreferences, lookaround) and shapes that make a backtracking engine slow (a repetition
or a multi-character alternation inside an unbounded repetition, counts above 1000).
onnxruntime's Tokenizer asks RE2 for the leftmost-longest match; ``re`` gives the
leftmost-first one, which is the same for the patterns that remain unless they contain an
alternation whose earlier branch is a prefix of a later one, or an optional part that a
greedy earlier part can starve (``a*(ab)?``).
"""

from __future__ import annotations

import re
import re._constants as _sre_constants  # the parse tree's opcodes (no public equivalent)
import re._parser as _sre_parser

import numpy as np

from engine import dtypes, errors
from engine.formats.onnx.ops import ONNX_OP_TYPES
from engine.framework.registry import Attr, OpFlags, ShapeError, op
from engine.ops._common import broadcast_shape, check_dtype
from engine.tensor_shape import TensorShape, unknown_shape

__all__ = ["MAX_OUTPUT_ELEMENTS", "MAX_PATTERN_CHARS", "MAX_TEXT_BYTES", "check_pattern"]

# Run-time bounds on request data: one input string, and one op's output.
MAX_TEXT_BYTES = 1 << 22
MAX_OUTPUT_ELEMENTS = 1 << 26
# Import-time bounds on what a model file asks for.
MAX_PATTERN_CHARS = 4096
MAX_REPEAT_COUNT = 1000  # RE2's own limit on {n,m}
_STRINGS = frozenset([dtypes.string])
_CPU = OpFlags(device_types=("CPU",))
START_TEXT, END_TEXT = b"\x02", b"\x03"


def _text_op(op_type: str, *, infer, inputs, attrs, bind=None):
    """Registers a CPU-only, non-differentiable ONNX op with required ``attrs``."""

    def deco(kernel):
        ONNX_OP_TYPES.append(op_type)
        declared = tuple(Attr(name, kind) for name, kind in attrs)
        return op(
            op_type,
            infer=infer,
            inputs=inputs,
            attrs=declared,
            differentiable=False,
            bind=bind,
            flags=_CPU,
        )(kernel)

    return deco


def _bad(msg: str):
    return errors.InvalidArgumentError(None, None, msg)


def _bounded_output(count: int, what: str) -> None:
    if count > MAX_OUTPUT_ELEMENTS:
        raise _bad(f"{what} would hold {count} elements, more than {MAX_OUTPUT_ELEMENTS}")


def _decode(value, what: str) -> str:
    raw = value if isinstance(value, bytes) else str(value).encode("utf-8")
    if len(raw) > MAX_TEXT_BYTES:
        raise _bad(f"{what}: a string of {len(raw)} bytes, more than {MAX_TEXT_BYTES}")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _bad(f"{what}: input contains invalid utf8 chars") from None


def _object_array(items, shape) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out.reshape(shape)


# -----------------------------------------------------------------------------------------
# Regular expressions
# -----------------------------------------------------------------------------------------


def _check_items(items, in_unbounded: bool) -> None:
    for code, av in items:
        name = str(code)
        if name.startswith("GROUPREF"):
            raise ValueError("backreferences are not supported (RE2 has none)")
        if name in ("ASSERT", "ASSERT_NOT"):
            raise ValueError("lookahead/lookbehind is not supported (RE2 has none)")
        if name in ("ATOMIC_GROUP", "POSSESSIVE_REPEAT"):
            raise ValueError("atomic groups and possessive repeats are not supported")
        if name in ("MAX_REPEAT", "MIN_REPEAT"):
            lo, hi, body = av
            unbounded = hi == _sre_constants.MAXREPEAT
            if lo > MAX_REPEAT_COUNT or (not unbounded and hi > MAX_REPEAT_COUNT):
                raise ValueError(f"a repetition count above {MAX_REPEAT_COUNT}")
            if in_unbounded and (unbounded or hi > 1):
                raise ValueError("a repetition inside an unbounded repetition (slow to match)")
            _check_items(body, in_unbounded or unbounded)
        elif name == "SUBPATTERN":
            _check_items(av[-1], in_unbounded)
        elif name == "BRANCH":
            if in_unbounded:
                raise ValueError("an alternation inside an unbounded repetition (slow to match)")
            for branch in av[1]:
                _check_items(branch, in_unbounded)


def check_pattern(pattern: str, *, empty_ok: bool = True) -> re.Pattern:
    """``pattern`` compiled as the text ops run it; ValueError naming what is refused.
    ``empty_ok=False`` also refuses patterns that can match the empty string."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ValueError(f"a pattern of {len(pattern)} characters, more than {MAX_PATTERN_CHARS}")
    try:
        compiled = re.compile(pattern, re.ASCII)
        tree = _sre_parser.parse(pattern, re.ASCII)
    except (re.error, OverflowError, RecursionError) as e:
        raise ValueError(f"cannot compile pattern {pattern!r}: {e}") from None
    _check_items(tree.data, False)
    if not empty_ok and tree.getwidth()[0] == 0:
        raise ValueError(f"pattern {pattern!r} can match the empty string")
    return compiled


# -----------------------------------------------------------------------------------------
# StringNormalizer
# -----------------------------------------------------------------------------------------


def _simple_case(c: str, upper: bool) -> str:
    """One code point's simple case mapping (what glibc's towlower/towupper give): Python's
    full mapping where it is one code point, else the titlecase or the first code point of
    the lowercase where those are the simple mapping, else unchanged."""
    full = c.upper() if upper else c.lower()
    if len(full) == 1:
        return full
    if upper:
        title = c.title()
        return title if len(title) == 1 else c
    return full[0] if c == "\u0130" else c


def change_case(text: str, upper: bool, ascii_only: bool) -> str:
    """Per-code-point case change, as onnxruntime's StringNormalizer does it."""
    if ascii_only:
        table = _ASCII_UPPER if upper else _ASCII_LOWER
        return text.translate(table)
    # Fast path: no code point expanded (lengths agree) and no context rule (final sigma).
    mapped = text.upper() if upper else text.lower()
    if len(mapped) == len(text) and (upper or "\u03a3" not in text):
        return mapped
    return "".join(_simple_case(c, upper) for c in text)


_ASCII_LOWER = {i: i + 32 for i in range(65, 91)}
_ASCII_UPPER = {i + 32: i for i in range(65, 91)}


def _normalizer_infer(o):
    check_dtype(o, 0, _STRINGS)
    shape = o._inputs[0]._shape
    if shape.ndims is not None and shape.ndims not in (1, 2):
        raise ShapeError(f"StringNormalizer takes [C] or [1, C], got rank {shape.ndims}")
    if shape.ndims == 2:
        return [(dtypes.string, TensorShape([1, None]))]
    return [(dtypes.string, TensorShape([None]) if shape.ndims == 1 else unknown_shape())]


def _normalizer_bind(o, ctx):
    sensitive = bool(o.get_attr("is_case_sensitive"))
    words = o.get_attr("stopwords")
    if sensitive:
        return {"stop_set": frozenset(w.encode("utf-8") for w in words)}
    upper = o.get_attr("case_change_action") == "UPPER"
    ascii_only = bool(o.get_attr("ascii_only"))
    return {"stop_set": frozenset(change_case(w, upper, ascii_only) for w in words)}


@_text_op(
    "OnnxStringNormalizer",
    infer=_normalizer_infer,
    inputs=("x",),
    attrs=[
        ("case_change_action", "string"),
        ("is_case_sensitive", "int"),
        ("stopwords", "list(string)"),
        ("ascii_only", "int"),
    ],
    bind=_normalizer_bind,
)
def _string_normalizer(
    xp, x, *, case_change_action, is_case_sensitive, stopwords, ascii_only, stop_set
):
    x = np.asarray(x)
    if x.ndim not in (1, 2) or x.shape[-1] < 1 or (x.ndim == 2 and x.shape[0] != 1):
        raise _bad(
            f"StringNormalizer: input dimensions are either [C > 0] or [1, C > 0], got {x.shape}"
        )
    action = case_change_action
    upper = action == "UPPER"
    values = list(x.reshape(-1))
    if stop_set and is_case_sensitive:
        values = [v for v in values if v not in stop_set]
    elif stop_set:
        # Case-insensitive filtering compares (and, with a case action, outputs) the strings
        # in the case the stop words were converted to.
        cased = [
            (v, change_case(_decode(v, "StringNormalizer"), upper, ascii_only)) for v in values
        ]
        keep = [(v, c) for v, c in cased if c not in stop_set]
        values = [v if action == "NONE" else c.encode("utf-8") for v, c in keep]
        action = "NONE"
    if action != "NONE":
        values = [
            change_case(_decode(v, "StringNormalizer"), upper, ascii_only).encode("utf-8")
            for v in values
        ]
    if not values:  # onnxruntime's empty-output rule: one empty string
        values = [b""]
    return _object_array(values, (1, len(values)) if x.ndim == 2 else (len(values),))


# -----------------------------------------------------------------------------------------
# TfIdfVectorizer
# -----------------------------------------------------------------------------------------


def _tfidf_infer(o):
    d = check_dtype(o, 0, _STRINGS | {dtypes.int32, dtypes.int64})
    if d is dtypes.string and o.get_attr("pool_int64s"):
        raise TypeError("TfIdfVectorizer with pool_int64s takes int32 or int64 input")
    if d is not dtypes.string and o.get_attr("pool_strings"):
        raise TypeError("TfIdfVectorizer with pool_strings takes string input")
    size = max(o.get_attr("ngram_indexes")) + 1
    shape = o._inputs[0]._shape
    if shape.ndims is None:
        return [(dtypes.float32, unknown_shape())]
    if shape.ndims > 2:
        raise ShapeError(f"TfIdfVectorizer takes [C] or [B, C], got rank {shape.ndims}")
    dims = [shape.as_list()[0], size] if shape.ndims == 2 else [size]
    return [(dtypes.float32, TensorShape(dims))]


def ngram_table(pool: list, counts: list[int], indexes: list[int], lo: int, hi: int) -> dict:
    """``{n-gram tuple: (n-gram id, output column)}`` for the n-grams of ``lo..hi`` items in
    ``pool`` (``counts[k]``: where the (k+1)-grams start; ids number every n-gram of the
    pool in order), and ``{prefix: None}`` for their proper prefixes that are not n-grams
    themselves; ValueError on a malformed pool."""
    table: dict[tuple, tuple[int, int] | None] = {}
    ngram_id = 0
    for k, start in enumerate(counts):
        size = k + 1
        end = counts[k + 1] if k + 1 < len(counts) else len(pool)
        if not 0 <= start <= end <= len(pool):
            raise ValueError(f"ngram_counts out of bounds for {size}-grams")
        if (end - start) % size:
            raise ValueError(f"pool items {start}..{end} do not make whole {size}-grams")
        n = (end - start) // size
        if lo <= size <= hi:
            if ngram_id + n > len(indexes):
                raise ValueError(f"ngram_indexes has {len(indexes)} entries, too few")
            for j in range(n):
                gram = tuple(pool[start + j * size : start + (j + 1) * size])
                if table.get(gram) is not None:
                    raise ValueError(f"duplicate {size}-gram {gram!r} in the pool")
                table[gram] = (ngram_id + j, indexes[ngram_id + j])
                for cut in range(1, size):
                    table.setdefault(gram[:cut], None)
        ngram_id += n
    return table


def _tfidf_bind(o, ctx):
    strings = o.get_attr("pool_strings")
    pool = [s.encode("utf-8") for s in strings] if strings else list(o.get_attr("pool_int64s"))
    table = ngram_table(
        pool,
        o.get_attr("ngram_counts"),
        o.get_attr("ngram_indexes"),
        o.get_attr("min_gram_length"),
        o.get_attr("max_gram_length"),
    )
    return {"table": table}


def _row_hits(items: list, table: dict, lo: int, hi: int, skips: int):
    """(n-gram id, output column) of every n-gram found in one row, in onnxruntime's order:
    for each skip distance 1..skips+1 and each start, the grams of ``lo..hi`` items (1-grams
    only at distance 1, since skipping does not change them)."""
    n = len(items)
    start = lo
    for distance in range(1, skips + 2):
        for first in range(n):
            if first + distance * (start - 1) >= n:
                break
            gram: tuple = ()
            for j in range(first, min(n, first + distance * hi), distance):
                gram = (*gram, items[j])
                if gram not in table:
                    break
                hit = table[gram]
                if hit is not None and len(gram) >= start:
                    yield hit
        if start == 1:
            start = 2
            if start > hi:
                return


def _weigh_row(hits, mode: str, weights: list[float], out) -> None:
    """onnxruntime's per-hit update: TF counts; TFIDF adds the n-gram's weight (1 without
    weights); IDF sets it (the last hit of a column wins)."""
    for ngram_id, col in hits:
        w = np.float32(weights[ngram_id]) if weights else np.float32(1)
        if mode == "IDF":
            out[col] = w
        elif mode == "TFIDF":
            out[col] += w
        else:
            out[col] += np.float32(1)


@_text_op(
    "OnnxTfIdfVectorizer",
    infer=_tfidf_infer,
    inputs=("x",),
    attrs=[
        ("mode", "string"),
        ("min_gram_length", "int"),
        ("max_gram_length", "int"),
        ("max_skip_count", "int"),
        ("ngram_counts", "list(int)"),
        ("ngram_indexes", "list(int)"),
        ("pool_strings", "list(string)"),
        ("pool_int64s", "list(int)"),
        ("weights", "list(float)"),
    ],
    bind=_tfidf_bind,
)
def _tfidf_vectorizer(
    xp,
    x,
    *,
    mode,
    min_gram_length,
    max_gram_length,
    max_skip_count,
    ngram_counts,
    ngram_indexes,
    pool_strings,
    pool_int64s,
    weights,
    table,
):
    x = np.asarray(x)
    if x.ndim > 2 or (x.ndim == 2 and x.shape[0] < 1):
        raise _bad(f"TfIdfVectorizer: input shape must be [C] or [B, C] with B > 0, got {x.shape}")
    size = max(ngram_indexes) + 1
    rows = x.reshape(1 if x.ndim < 2 else x.shape[0], -1)
    _bounded_output(rows.shape[0] * size, "TfIdfVectorizer's output")
    out = np.zeros((rows.shape[0], size), dtype=np.float32)
    for r in range(rows.shape[0]):
        items = rows[r].tolist()
        if x.dtype == object:
            items = [v if isinstance(v, bytes) else str(v).encode("utf-8") for v in items]
        hits = _row_hits(items, table, min_gram_length, max_gram_length, max_skip_count)
        _weigh_row(hits, mode, weights, out[r])
    return out.reshape(size) if x.ndim < 2 else out


# -----------------------------------------------------------------------------------------
# Tokenizer (com.microsoft)
# -----------------------------------------------------------------------------------------


def _tokenizer_infer(o):
    check_dtype(o, 0, _STRINGS)
    shape = o._inputs[0]._shape
    if shape.ndims is None:
        return [(dtypes.string, unknown_shape())]
    if shape.ndims not in (1, 2):
        raise ShapeError(f"Tokenizer takes [C] or [N, C], got rank {shape.ndims}")
    return [(dtypes.string, TensorShape([*shape.as_list(), None]))]


def char_tokenization(separators: list[str], tokenexp: str) -> bool:
    """onnxruntime's Tokenizer splits into characters for separators [""] or tokenexp "."."""
    return list(separators) == [""] or (not separators and tokenexp == ".")


def _tokenizer_bind(o, ctx):
    separators, tokenexp = o.get_attr("separators"), o.get_attr("tokenexp")
    if char_tokenization(separators, tokenexp):
        return {"separator_res": [], "token_re": None}
    return {
        "separator_res": [check_pattern(s, empty_ok=False) for s in separators],
        "token_re": None if separators else check_pattern(tokenexp),
    }


def _split_by_separators(text: str, separator_res, mincharnum: int) -> list[str]:
    """Each separator in turn splits every piece; pieces shorter than mincharnum go."""
    row = [text]
    for sep in separator_res:
        pieces = []
        for piece in row:
            start = 0
            for m in sep.finditer(piece):
                if m.start() - start >= mincharnum:
                    pieces.append(piece[start : m.start()])
                start = m.end()
            if len(piece) - start >= mincharnum:
                pieces.append(piece[start:])
        row = pieces
    return row


def _match_tokens(text: str, token_re, mincharnum: int) -> list[str]:
    """The matches of ``token_re`` of at least mincharnum characters; after a shorter match
    the search resumes one character after where that match began."""
    row, pos, end = [], 0, len(text)
    while pos <= end:
        m = token_re.search(text, pos)
        if m is None:
            break
        if m.end() - m.start() >= mincharnum:
            row.append(m.group())
            pos = m.end()
        else:
            pos = m.start() + 1
    return row


@_text_op(
    "OnnxTokenizer",
    infer=_tokenizer_infer,
    inputs=("x",),
    attrs=[
        ("mark", "int"),
        ("mincharnum", "int"),
        ("pad_value", "string"),
        ("separators", "list(string)"),
        ("tokenexp", "string"),
    ],
    bind=_tokenizer_bind,
)
def _tokenizer(
    xp, x, *, mark, mincharnum, pad_value, separators, tokenexp, separator_res, token_re
):
    x = np.asarray(x)
    if x.ndim not in (1, 2):
        raise _bad(f"Tokenizer: input dimensions are either [C] or [N, C], got {x.shape}")
    chars = char_tokenization(separators, tokenexp)
    rows = []
    for v in x.reshape(-1):
        text = _decode(v, "Tokenizer")
        if chars:
            rows.append(list(text))
        elif separator_res:
            rows.append(_split_by_separators(text, separator_res, mincharnum))
        else:
            rows.append(_match_tokens(text, token_re, mincharnum))
    width = max((len(r) for r in rows), default=0)
    if width == 0:
        return _object_array([], (*x.shape, 0))
    width += 2 if mark else 0
    _bounded_output(len(rows) * width, "Tokenizer's output")
    pad = pad_value.encode("utf-8")
    out = []
    for r in rows:
        tokens = [t.encode("utf-8") for t in r]
        if mark:
            tokens = [START_TEXT, *tokens, END_TEXT]
        out.extend(tokens)
        out.extend([pad] * (width - len(tokens)))
    return _object_array(out, (*x.shape, width))


# -----------------------------------------------------------------------------------------
# StringConcat, StringSplit, RegexFullMatch (opset 20)
# -----------------------------------------------------------------------------------------


def _concat_infer(o):
    check_dtype(o, 0, _STRINGS)
    check_dtype(o, 1, _STRINGS)
    return [(dtypes.string, broadcast_shape(o._inputs[0]._shape, o._inputs[1]._shape))]


@_text_op("OnnxStringConcat", infer=_concat_infer, inputs=("x", "y"), attrs=[])
def _string_concat(xp, x, y):
    a, b = np.broadcast_arrays(np.asarray(x, dtype=object), np.asarray(y, dtype=object))
    _bounded_output(a.size, "StringConcat's output")
    out = [p + q for p, q in zip(a.reshape(-1).tolist(), b.reshape(-1).tolist())]
    return _object_array(out, a.shape)


def _split_infer(o):
    check_dtype(o, 0, _STRINGS)
    shape = o._inputs[0]._shape
    y = unknown_shape() if shape.ndims is None else TensorShape([*shape.as_list(), None])
    return [(dtypes.string, y), (dtypes.int64, shape)]


def _split_one(s: bytes, delimiter: bytes, maxsplit: int) -> list[bytes]:
    """onnxruntime's ComputeSubstrings: no pieces for an empty string; without a delimiter,
    runs of spaces (only ' ') separate and leading/trailing ones are dropped."""
    if not s:
        return []
    if delimiter:
        return s.split(delimiter, maxsplit if maxsplit >= 0 else -1)
    out = s.strip(b" ").split(b" ")
    out = [p for p in out if p]
    if 0 <= maxsplit < len(out):
        rest = s.lstrip(b" ")
        for _ in range(maxsplit):
            rest = rest.split(b" ", 1)[1].lstrip(b" ")
        out = [*out[:maxsplit], rest.rstrip(b" ")]
    return out


@_text_op(
    "OnnxStringSplit",
    infer=_split_infer,
    inputs=("x",),
    attrs=[("delimiter", "string"), ("maxsplit", "int")],
)
def _string_split(xp, x, *, delimiter, maxsplit):
    x = np.asarray(x)
    delim = delimiter.encode("utf-8")
    pieces = []
    for v in x.reshape(-1).tolist():
        s = v if isinstance(v, bytes) else str(v).encode("utf-8")
        if len(s) > MAX_TEXT_BYTES:
            raise _bad(f"StringSplit: a string of {len(s)} bytes, more than {MAX_TEXT_BYTES}")
        pieces.append(_split_one(s, delim, maxsplit))
    width = max((len(p) for p in pieces), default=0)
    _bounded_output(len(pieces) * width, "StringSplit's output")
    flat = []
    for p in pieces:
        flat.extend(p)
        flat.extend([b""] * (width - len(p)))
    counts = np.array([len(p) for p in pieces], dtype=np.int64).reshape(x.shape)
    return _object_array(flat, (*x.shape, width)), counts


def _regex_infer(o):
    check_dtype(o, 0, _STRINGS)
    return [(dtypes.bool, o._inputs[0]._shape)]


def _regex_bind(o, ctx):
    return {"compiled": check_pattern(o.get_attr("pattern"))}


@_text_op(
    "OnnxRegexFullMatch",
    infer=_regex_infer,
    inputs=("x",),
    attrs=[("pattern", "string")],
    bind=_regex_bind,
)
def _regex_full_match(xp, x, *, pattern, compiled):
    x = np.asarray(x)
    out = [compiled.fullmatch(_decode(v, "RegexFullMatch")) is not None for v in x.reshape(-1)]
    return np.array(out, dtype=np.bool_).reshape(x.shape)
