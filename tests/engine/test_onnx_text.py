"""Text preprocessing in ONNX models: scikit-learn text pipelines exported by skl2onnx
(recorded with onnxruntime's outputs by
``tests/engine/fixtures/make_sklearn_text_fixtures.py``), checked against the recording and
against onnxruntime on fresh sentences; and single-operator models built with onnx.helper for
StringNormalizer, TfIdfVectorizer, com.microsoft Tokenizer, StringConcat, StringSplit and
RegexFullMatch, each against onnxruntime, plus the import-time and run-time refusals.

StringNormalizer models name ``locale="C.UTF-8"``: onnxruntime's default (en_US.UTF-8) is
missing from many machines, and glibc changes case with the same tables in both."""

from pathlib import Path

import numpy as np
import pytest

import engine as tf
from engine import errors
from engine.formats.onnx.mapping import UnsupportedModelError
from engine.formats.onnx.tensors import OnnxFormatError

onnx = pytest.importorskip("onnx", reason="test models are built with onnx.helper")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the oracle")
from onnx import TensorProto, helper  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sklearn_text_onnx"
NAMES = sorted(p.stem for p in FIXTURES.glob("*.onnx"))
S, F, I32, I64, B = (
    TensorProto.STRING,
    TensorProto.FLOAT,
    TensorProto.INT32,
    TensorProto.INT64,
    TensorProto.BOOL,
)
MS = "com.microsoft"
rng = np.random.default_rng(11)

FRESH = [
    "The CAT sat on the MAT",
    "",
    "   ",
    "zebra xylophone quokka",
    "Ünïcödé dogs — naïve café, ΣΑΣ, İstanbul",
    "cats, dogs; homework? great!",
    "dogs dogs dogs dogs",
    "a",
]


# -----------------------------------------------------------------------------------------
# Helpers
# -----------------------------------------------------------------------------------------


def strings(values, shape=None) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out.reshape(shape if shape is not None else (len(values),))


def make_model(nodes, inputs, outputs, opset=17, ms=False) -> bytes:
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    imports = [helper.make_opsetid("", opset)]
    if ms:
        imports.append(helper.make_opsetid(MS, 1))
    m = helper.make_model(graph, opset_imports=imports)
    m.ir_version = 9
    return m.SerializeToString()


def single(op_type, elem_in, elem_out, n_out=1, opset=17, ms=False, n_in=1, **attrs) -> bytes:
    ins = [f"x{i}" for i in range(n_in)]
    outs = [f"y{i}" for i in range(n_out)]
    domain = MS if ms else ""
    node = helper.make_node(op_type, ins, outs, domain=domain, **attrs)
    elem_out = elem_out if isinstance(elem_out, list) else [elem_out] * n_out
    return make_model(
        [node],
        [helper.make_tensor_value_info(n, elem_in, None) for n in ins],
        [helper.make_tensor_value_info(n, e, None) for n, e in zip(outs, elem_out)],
        opset=opset,
        ms=ms,
    )


def _engine_feed(v: np.ndarray) -> np.ndarray:
    if v.dtype == object:
        return strings([s.encode("utf-8") for s in v.ravel()], v.shape)
    return v


def _plain(a) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype == object:
        flat = [v.decode("utf-8") if isinstance(v, bytes) else v for v in a.ravel()]
        return strings(flat, a.shape)
    return a


def run_engine(data: bytes, feeds: dict) -> dict:
    m = tf.onnx.import_model(data)
    sig = m.signature
    with tf.Session(graph=m.graph) as sess:
        out = sess.run(
            {k: sig.outputs[k].name for k in sig.outputs},
            {sig.inputs[k].name: _engine_feed(v) for k, v in feeds.items()},
        )
    return {k: _plain(v) for k, v in out.items()}


def run_ort(data: bytes, feeds: dict) -> dict:
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return {m.name: _plain(v) for m, v in zip(sess.get_outputs(), sess.run(None, feeds))}


def assert_same(got: dict, want: dict, atol=1e-5, empty_shape_ok=False) -> None:
    assert got.keys() == want.keys()
    for k, w in want.items():
        g = got[k]
        if empty_shape_ok and w.size == 0:
            assert g.size == 0, f"{k}: {g.shape}, expected no elements like {w.shape}"
            continue
        assert g.shape == w.shape, f"{k}: shape {g.shape}, expected {w.shape}"
        assert g.dtype.kind == w.dtype.kind, f"{k}: {g.dtype} vs {w.dtype}"
        if w.dtype.kind == "f":
            assert g.dtype == w.dtype, k
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=atol, err_msg=k)
        else:
            np.testing.assert_array_equal(g, w, err_msg=k)


def against_ort(data: bytes, feeds: dict, **kw) -> dict:
    want = run_ort(data, feeds)
    got = run_engine(data, feeds)
    assert_same(got, want, **kw)
    return got


# -----------------------------------------------------------------------------------------
# skl2onnx pipelines
# -----------------------------------------------------------------------------------------


def test_fixtures_are_there():
    assert NAMES == ["count_logreg", "tfidf_bigrams_svc", "tfidf_chars_logreg"]


@pytest.mark.parametrize("name", NAMES)
def test_pipeline_matches_recording(name):
    data = (FIXTURES / f"{name}.onnx").read_bytes()
    rec = np.load(FIXTURES / f"{name}.npz")
    got = run_engine(data, {"text": rec["in_text"].astype(object)})
    want = {k[4:]: rec[k] for k in rec.files if k.startswith("out_")}
    assert_same(got, want)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "batch", [FRESH, FRESH[:1], ["", "   "], ["ZEBRA"]], ids=["fresh", "one", "empty", "unknown"]
)
def test_pipeline_matches_onnxruntime_on_fresh_text(name, batch):
    data = (FIXTURES / f"{name}.onnx").read_bytes()
    got = against_ort(data, {"text": strings(batch, (-1, 1))})
    assert got["probabilities"].shape == (len(batch), 3)


def test_pipeline_without_locale_imports_as_the_default_one():
    # What skl2onnx writes without its locale option: onnxruntime's default en_US.UTF-8,
    # which changes case as C.UTF-8 does (the recording's locale).
    model = onnx.load_from_string((FIXTURES / "count_logreg.onnx").read_bytes())
    node = next(n for n in model.graph.node if n.op_type == "StringNormalizer")
    kept = [a for a in node.attribute if a.name != "locale"]
    del node.attribute[:]
    node.attribute.extend(kept)
    feeds = {"text": strings(FRESH, (-1, 1))}
    want = run_ort((FIXTURES / "count_logreg.onnx").read_bytes(), feeds)
    assert_same(run_engine(model.SerializeToString(), feeds), want)


# -----------------------------------------------------------------------------------------
# StringNormalizer
# -----------------------------------------------------------------------------------------

WORDS = ["The", "ÉTÉ", "straße", "İstanbul", "ΣΑΣ", "a", "été", "Ǆemal", "x", "THE"]


@pytest.mark.parametrize(
    "action,sensitive,stopwords,locale",
    [
        ("LOWER", 0, [], "C.UTF-8"),
        ("UPPER", 0, [], "C.UTF-8"),
        ("NONE", 0, [], "C.UTF-8"),
        ("LOWER", 0, ["the", "été"], "C.UTF-8"),
        ("UPPER", 0, ["the", "ÉTÉ"], "C.UTF-8"),
        ("NONE", 0, ["tHe", "Été"], "C.UTF-8"),
        ("LOWER", 1, ["The", "été"], "C.UTF-8"),
        ("NONE", 1, ["THE", "a"], "C.UTF-8"),
        ("UPPER", 0, ["the"], "C"),
        ("LOWER", 1, [], "POSIX"),
    ],
)
@pytest.mark.parametrize("shape", [(-1,), (1, -1)], ids=["1d", "1xC"])
def test_string_normalizer(action, sensitive, stopwords, locale, shape):
    attrs = {"case_change_action": action, "is_case_sensitive": sensitive, "locale": locale}
    if stopwords:
        attrs["stopwords"] = stopwords
    data = single("StringNormalizer", S, S, **attrs)
    against_ort(data, {"x0": strings(WORDS, shape)})


@pytest.mark.parametrize("shape", [(-1,), (1, -1)], ids=["1d", "1xC"])
def test_string_normalizer_all_stopwords_gives_one_empty_string(shape):
    data = single(
        "StringNormalizer", S, S, case_change_action="LOWER", stopwords=["a", "b"], locale="C"
    )
    got = against_ort(data, {"x0": strings(["A", "b", "B"], shape)})
    assert got["y0"].ravel().tolist() == [""]


# -----------------------------------------------------------------------------------------
# TfIdfVectorizer
# -----------------------------------------------------------------------------------------

# ONNX's own example: 2-grams over int64s.
POOL = [2, 3, 5, 4, 5, 6, 7, 8, 6, 7]
ROWS = np.array([[1, 1, 3, 3, 3, 7], [8, 6, 7, 5, 6, 8]], np.int64)


def tfidf(**attrs) -> dict:
    base = {
        "mode": "TF",
        "min_gram_length": 2,
        "max_gram_length": 2,
        "max_skip_count": 0,
        "ngram_counts": [0, 4],
        "ngram_indexes": [0, 1, 2, 3, 4, 5, 6],
        "pool_int64s": POOL,
    }
    base.update(attrs)
    return {k: v for k, v in base.items() if v is not None}


@pytest.mark.parametrize(
    "attrs",
    [
        tfidf(),
        tfidf(min_gram_length=1),
        tfidf(min_gram_length=1, max_skip_count=5),
        tfidf(max_skip_count=3),
        tfidf(mode="IDF", min_gram_length=1, max_skip_count=2),
        tfidf(mode="IDF", min_gram_length=1, weights=[0.5, 1, 2, 3, 4, 5, 6]),
        tfidf(mode="TFIDF", min_gram_length=1, weights=[0.5, 1, 2, 3, 4, 5, 6]),
        tfidf(mode="TFIDF", min_gram_length=1, max_gram_length=1),
        # Weights follow the pool's n-gram order, several n-grams share output columns: per
        # hit, TFIDF adds the n-gram's weight and IDF sets it (onnxruntime 1.32).
        tfidf(
            mode="TFIDF",
            min_gram_length=1,
            weights=[0.5, 1, 2, 3, 4, 5, 6],
            ngram_indexes=[6, 5, 4, 3, 2, 1, 0],
        ),
        tfidf(mode="IDF", weights=[0.5, 1, 2, 3, 4, 5, 6], ngram_indexes=[3, 4, 5, 6, 0, 1, 2]),
        tfidf(
            mode="IDF",
            min_gram_length=1,
            max_skip_count=1,
            weights=[0.5, 1, 2, 3, 4, 5, 6],
            ngram_indexes=[0, 0, 1, 0, 1, 2, 1],
        ),
        tfidf(
            mode="TFIDF",
            min_gram_length=1,
            max_skip_count=2,
            weights=[0.5, 1, 2, 3, 4, 5, 6],
            ngram_indexes=[0, 0, 1, 0, 1, 2, 1],
        ),
        tfidf(min_gram_length=1, ngram_indexes=[6, 0, 0, 2, 1, 3, 4]),
    ],
    ids=str,
)
@pytest.mark.parametrize("dtype", [np.int64, np.int32])
@pytest.mark.parametrize("rows", [ROWS, ROWS[1], ROWS[:, :0]], ids=["2d", "1d", "empty"])
def test_tfidf_vectorizer_ints(attrs, dtype, rows):
    elem = I64 if dtype is np.int64 else I32
    data = single("TfIdfVectorizer", elem, F, **attrs)
    against_ort(data, {"x0": rows.astype(dtype)})


def test_tfidf_vectorizer_random_grams():
    # Random rows over a small alphabet hit many 1/2/3-grams at every skip distance.
    grams = [(a,) for a in range(4)] + [(a, b) for a in range(4) for b in range(3)]
    grams += [tuple(rng.integers(0, 4, 3)) for _ in range(12)]
    grams = list(dict.fromkeys(grams))
    by_size = [[g for g in grams if len(g) == n] for n in (1, 2, 3)]
    pool = [v for group in by_size for g in group for v in g]
    counts = [0, len(by_size[0]), len(by_size[0]) + 2 * len(by_size[1])]
    indexes = list(rng.permutation(len(grams)))
    x = rng.integers(0, 5, (4, 17)).astype(np.int64)
    for lo, hi, skip in [(1, 3, 0), (1, 3, 3), (2, 3, 1), (3, 3, 2), (1, 2, 4)]:
        attrs = tfidf(
            min_gram_length=lo,
            max_gram_length=hi,
            max_skip_count=skip,
            ngram_counts=counts,
            ngram_indexes=[int(i) for i in indexes],
            pool_int64s=pool,
        )
        against_ort(single("TfIdfVectorizer", I64, F, **attrs), {"x0": x})


@pytest.mark.parametrize("skip", [0, 2])
def test_tfidf_vectorizer_strings(skip):
    attrs = tfidf(
        min_gram_length=1,
        max_gram_length=3,
        max_skip_count=skip,
        ngram_counts=[0, 4, 8],
        ngram_indexes=[6, 5, 4, 3, 2, 1, 0],
        pool_int64s=None,
        pool_strings=["the", "cat", "café", "ΣΑΣ", "the", "cat", "cat", "sat", "the", "cat", "sat"],
    )
    x = strings(["the", "cat", "sat", "the", "café", "cat", "ΣΑΣ", "", "sat", "the"], (2, 5))
    against_ort(single("TfIdfVectorizer", S, F, **attrs), {"x0": x})
    against_ort(single("TfIdfVectorizer", S, F, **attrs), {"x0": x[0]})


# -----------------------------------------------------------------------------------------
# Tokenizer (com.microsoft)
# -----------------------------------------------------------------------------------------

TEXTS = [
    "Hello, world. How are you?",
    "",
    "a b  c",
    "naïve café -- ΣΑΣ;done",
    "one_two abbc abbbc",
    "   ",
]


@pytest.mark.parametrize(
    "attrs",
    [
        {"tokenexp": "[a-zA-Z0-9_]+"},
        {"tokenexp": r"\w+", "mark": 1},
        {"tokenexp": "[^ ]+", "mincharnum": 3},
        {"tokenexp": "[a-z]*", "mincharnum": 2},
        # A match shorter than mincharnum: the search resumes one character into it.
        {"tokenexp": "ab|b+c", "mincharnum": 3},
        {"tokenexp": "."},
        {"tokenexp": ".", "mark": 1, "pad_value": "<pad>"},
        {"separators": [""], "mark": 1},
        {"separators": [" ", ",", "[.]", r"\?"]},
        {"separators": [" ", ",", "[.]", r"\?"], "mincharnum": 2, "mark": 1},
        {"separators": [" +", "--", ";"], "pad_value": ""},
        {"separators": ["o"], "mark": 1},
    ],
    ids=str,
)
@pytest.mark.parametrize("shape", [(-1,), (2, 3)], ids=["1d", "2d"])
def test_tokenizer(attrs, shape):
    full = {"mark": 0, "mincharnum": 1, "pad_value": "#", **attrs}
    data = single("Tokenizer", S, S, ms=True, **full)
    against_ort(data, {"x0": strings(TEXTS, shape)})


@pytest.mark.parametrize("texts", [["", "  "], ["...", " . "]], ids=["empty", "separators"])
def test_tokenizer_without_tokens_gives_an_empty_last_dimension(texts):
    data = single(
        "Tokenizer", S, S, ms=True, mark=1, mincharnum=1, pad_value="#", separators=[" ", r"\."]
    )
    got = against_ort(data, {"x0": strings(texts)})
    assert got["y0"].shape == (2, 0)


@pytest.mark.parametrize("shape", [(0,), (2, 0)])
def test_tokenizer_of_an_empty_input_is_empty(shape):
    # onnxruntime answers [0] / [2, 0]; the engine keeps the output's rank: [0, 0] / [2, 0, 0].
    data = single("Tokenizer", S, S, ms=True, mark=0, mincharnum=1, pad_value="#", tokenexp="a")
    got = against_ort(data, {"x0": strings([], shape)}, empty_shape_ok=True)
    assert got["y0"].shape == (*shape, 0)


# -----------------------------------------------------------------------------------------
# StringConcat, StringSplit, RegexFullMatch (opset 20)
# -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "a,b",
    [
        (strings(["a", "bc", ""]), strings(["-", "+", "é"])),
        (strings(["a", "bc"], (2, 1)), strings(["x", "y", "z"])),
        (strings(["α"], ()), strings(["1", "2"])),
    ],
    ids=["same", "broadcast", "scalar"],
)
def test_string_concat(a, b):
    data = single("StringConcat", S, S, opset=20, n_in=2)
    against_ort(data, {"x0": a, "x1": b})


@pytest.mark.parametrize(
    "attrs",
    [{}, {"maxsplit": 1}, {"maxsplit": 0}, {"delimiter": ","}, {"delimiter": "--", "maxsplit": 2}],
    ids=str,
)
def test_string_split(attrs):
    x = strings(["  a  b c  ", "", "a,b,,c", "x--y----z", " ", "tab\tsep é"], (2, 3))
    data = single("StringSplit", S, [S, I64], n_out=2, opset=20, **attrs)
    against_ort(data, {"x0": x})


@pytest.mark.parametrize(
    "pattern", [r"[a-z]+\d?", r"(ab|cd)e*", r".*@.*\.com", r"\w+", "", r"(?i)HELLO"]
)
def test_regex_full_match(pattern):
    x = strings(["abc1", "abe", "cdeee", "me@x.com", "émile", "", "hello", "ab\n"], (2, 4))
    data = single("RegexFullMatch", S, B, opset=20, pattern=pattern)
    against_ort(data, {"x0": x})


# -----------------------------------------------------------------------------------------
# Refusals
# -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "op_type,attrs,error,match",
    [
        ("StringNormalizer", {"locale": "tr_TR.UTF-8"}, UnsupportedModelError, "locale"),
        ("StringNormalizer", {"case_change_action": "TITLE"}, OnnxFormatError, "TITLE"),
        ("StringNormalizer", {"stopwords": ["a", "A"]}, OnnxFormatError, "duplicate"),
        ("StringNormalizer", {"stopwords": [""]}, OnnxFormatError, "empty stopwords"),
        ("RegexFullMatch", {"pattern": r"(a+)+b"}, UnsupportedModelError, "inside an unbounded"),
        ("RegexFullMatch", {"pattern": r"(a|aa)*"}, UnsupportedModelError, "alternation"),
        ("RegexFullMatch", {"pattern": r"(a)\1"}, UnsupportedModelError, "backreference"),
        ("RegexFullMatch", {"pattern": r"a(?=b)"}, UnsupportedModelError, "lookahead"),
        ("RegexFullMatch", {"pattern": r"a{2000}"}, UnsupportedModelError, "above 1000"),
        ("RegexFullMatch", {"pattern": "[a-"}, UnsupportedModelError, "cannot compile"),
        ("RegexFullMatch", {"pattern": "a" * 5000}, UnsupportedModelError, "characters"),
    ],
)
def test_import_refuses(op_type, attrs, error, match):
    data = single(op_type, S, B if op_type == "RegexFullMatch" else S, opset=20, **attrs)
    with pytest.raises(error, match=match):
        tf.onnx.import_model(data)


TOKENIZE = {"mark": 0, "mincharnum": 1, "pad_value": "#"}


@pytest.mark.parametrize(
    "attrs,error,match",
    [
        ({**TOKENIZE, "separators": [" ", "x*"]}, UnsupportedModelError, "empty string"),
        ({**TOKENIZE, "separators": [" "], "tokenexpsplit": 1}, UnsupportedModelError, "split"),
        ({**TOKENIZE, "tokenexp": r"(\w+\s?)+"}, UnsupportedModelError, "unbounded"),
        ({**TOKENIZE, "tokenexp": ""}, OnnxFormatError, "tokenexp"),
        ({**TOKENIZE, "tokenexp": ".", "mincharnum": 2}, OnnxFormatError, "mincharnum"),
        ({**TOKENIZE, "tokenexp": "a", "mincharnum": 0}, OnnxFormatError, "mincharnum"),
        ({"mark": 0, "mincharnum": 1, "tokenexp": "a"}, UnsupportedModelError, "pad_value"),
    ],
)
def test_tokenizer_import_refuses(attrs, error, match):
    with pytest.raises(error, match=match):
        tf.onnx.import_model(single("Tokenizer", S, S, ms=True, **attrs))


@pytest.mark.parametrize(
    "attrs,elem,error,match",
    [
        (tfidf(mode="BM25"), I64, OnnxFormatError, "mode"),
        (tfidf(min_gram_length=3, max_gram_length=3), I64, OnnxFormatError, "ngram_counts"),
        (tfidf(max_gram_length=1), I64, OnnxFormatError, "min_gram_length"),
        (tfidf(ngram_counts=[0, 3]), I64, OnnxFormatError, "whole 2-grams"),
        (tfidf(ngram_counts=[0, 12]), I64, OnnxFormatError, "out of bounds"),
        (tfidf(pool_int64s=[2, 3, 5, 4, 5, 6, 5, 6, 6, 7]), I64, OnnxFormatError, "duplicate"),
        (tfidf(ngram_indexes=[0, 1, 2, 3, 4]), I64, OnnxFormatError, "too few"),
        (tfidf(ngram_indexes=[0, -1, 2, 3, 4, 5, 6]), I64, OnnxFormatError, "negative"),
        (tfidf(mode="IDF", weights=[1.0] * 3), I64, OnnxFormatError, "weights"),
        (tfidf(max_skip_count=5000), I64, UnsupportedModelError, "max_skip_count"),
        (tfidf(), S, UnsupportedModelError, "int64 pool for string"),
        (tfidf(pool_int64s=None), I64, OnnxFormatError, "non-empty pool"),
    ],
)
def test_tfidf_import_refuses(attrs, elem, error, match):
    with pytest.raises(error, match=match):
        tf.onnx.import_model(single("TfIdfVectorizer", elem, F, **attrs))


def test_run_time_refusals():
    normalize = tf.onnx.import_model(single("StringNormalizer", S, S, case_change_action="LOWER"))
    sig = normalize.signature
    with tf.Session(graph=normalize.graph) as sess:
        with pytest.raises(errors.InvalidArgumentError, match=r"\[1, C > 0\]"):
            sess.run(sig.outputs["y0"].name, {sig.inputs["x0"].name: strings([b"a"] * 4, (2, 2))})
        with pytest.raises(errors.InvalidArgumentError, match="invalid utf8"):
            sess.run(sig.outputs["y0"].name, {sig.inputs["x0"].name: strings([b"\xff"])})
    vectorize = tf.onnx.import_model(single("TfIdfVectorizer", I64, F, **tfidf()))
    sig = vectorize.signature
    with tf.Session(graph=vectorize.graph) as sess:
        with pytest.raises(errors.InvalidArgumentError, match="B > 0"):
            sess.run(sig.outputs["y0"].name, {sig.inputs["x0"].name: np.zeros((0, 3), np.int64)})
