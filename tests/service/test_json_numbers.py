"""``service.protocols.json_numbers``: JSON request tensors read straight into arrays give what
the orjson path gives -- the same document, the same arrays (dtype, shape, bits) and, for
anything irregular, the same errors -- over generated bodies of both protocols, in process
and over HTTP; and the server answers the same without pysimdjson."""

import json
import random
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine as tf
from engine import dtypes
from engine.tensor_shape import TensorShape
from service.app import create_app
from service.errors import InvalidInput
from service.protocols import json_numbers, kserve_v2, tfserving
from service.protocols.common import parse_json
from service.protocols.json_numbers import JsonNumbers, load_infer, load_predict
from service.tensors import TensorSpec, float_array, from_json_value
from tests.service import json_bodies, models
from tests.service.json_bodies import pad

pytestmark = pytest.mark.skipif(
    not json_numbers.ENABLED, reason="pysimdjson is not installed (the fast/test extras)"
)

DTYPES = {
    "float32": tf.float32,
    "float64": tf.float64,
    "int32": tf.int32,
    "int64": tf.int64,
    "uint8": tf.uint8,
    "float16": tf.float16,
    "bool": tf.bool,
    "string": tf.string,
}


def echo_model(path) -> None:
    """One identity signature per dtype (``serving_default``: float32), x of any shape, and
    ``pair``: two float32 inputs (a row-format body must name them)."""

    def build():
        sigs = {}
        for name, dtype in DTYPES.items():
            x = tf.placeholder(dtype, None, name=f"x_{name}")
            sigs[name] = ({"x": x}, {"y": tf.identity(x, name=f"y_{name}")})
        sigs["serving_default"] = sigs["float32"]
        a = tf.placeholder(tf.float32, None, name="a")
        b = tf.placeholder(tf.float32, None, name="b")
        sigs["pair"] = ({"a": a, "b": b}, {"s": tf.add(a, b, name="s")})
        return sigs

    models.export(path, build, variables_init=False)


@pytest.fixture(scope="module")
def echo_repository(tmp_path_factory):
    root = tmp_path_factory.mktemp("json-numbers")
    echo_model(root / "echo" / "1")
    (root / "echo" / "config.json").write_text('{"warmup": false}')
    return root


# -- the document -------------------------------------------------------------------------
def _plain(value):
    """``value`` with every JsonNumbers as its list."""
    if isinstance(value, JsonNumbers):
        return value.tolist()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _same_value(a, b) -> bool:
    """Equal with the same types all the way down (an int is not a float; -0.0 is not 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same_value(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return repr(a) == repr(b)
    return a == b


def _same_array(a, b) -> bool:
    return (
        isinstance(a, np.ndarray)
        and isinstance(b, np.ndarray)
        and a.dtype == b.dtype
        and a.shape == b.shape
        and (a.tolist() == b.tolist() if a.dtype.kind == "O" else a.tobytes() == b.tobytes())
    )


def _numbers():
    """A walk over (fast, slow) documents, and the list it fills with (JsonNumbers, its list
    in ``parse_json``'s document)."""
    found = []

    def walk(fast, slow):
        if isinstance(fast, JsonNumbers):
            found.append((fast, slow))
        elif isinstance(fast, dict):
            for k, v in fast.items():
                walk(v, slow[k])
        elif isinstance(fast, list):
            for x, y in zip(fast, slow):
                walk(x, y)

    return walk, found


def _check_document(raw: bytes, load) -> bool:
    """The fast document is parse_json's, and each JsonNumbers converts as its list does;
    True if the fast parse took the body."""
    fast = load(raw)
    if fast is None:
        return False
    slow = parse_json(raw)  # the fast parse never takes a body orjson's path refuses
    assert _same_value(_plain(fast), slow), raw
    walk, found = _numbers()
    walk(fast, slow)
    for numbers, values in found:
        assert _same_value(numbers.tolist(), values)
        assert numbers.shape == np.array(values).shape
        for dtype in (dtypes.float32, dtypes.float64):
            got = numbers.floats(dtype.np)
            if got is not None:
                assert _same_array(got, float_array(values, dtype)), (raw, dtype)
        got = numbers.integers()
        if got is not None:
            assert _same_array(got, from_json_value(values, "x")), raw
    return True


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rng=st.randoms(use_true_random=True))
def test_predict_documents_are_parse_jsons(rng):
    _check_document(json_bodies.predict_body(rng), load_predict)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rng=st.randoms(use_true_random=True))
def test_infer_documents_are_parse_jsons(rng):
    _check_document(json_bodies.infer_body(rng), load_infer)


def test_the_generated_bodies_mostly_take_the_fast_parse():
    """The parity tests are not vacuous: most generated bodies are read the fast way."""
    rng = random.Random(7)
    taken = sum(_check_document(json_bodies.predict_body(rng), load_predict) for _ in range(300))
    assert taken > 90
    taken = sum(_check_document(json_bodies.infer_body(rng), load_infer) for _ in range(300))
    assert taken > 90


@pytest.mark.parametrize(
    "raw",
    [
        b'{"instances": [[1.5, 2, 3, 4, 5, 6, 7, 8]]}',
        b'{"instances": [1.5, -0, 3e2], "signature_name": "x"}',
        b'{"inputs": [[1, 2, 3, 4, 5, 6, 7, 8], [9, 10, 11, 12, 13, 14, 15, 16]]}',
        b'{"inputs": {"a": [1.5, 2], "b": [[3, 4, 5, 6, 7, 8, 9, 10]]}}',
        b'{"instances": [[1.5, 2.5], [3.5, 4.5], [5.5, 6.5]]}',
        b'{"instances": [[[1], [2]], [[3], [4]]]}',
    ],
)
def test_hot_bodies_are_read_as_numbers(raw):
    raw = pad(raw)
    doc = load_predict(raw)
    assert doc is not None
    value = doc.get("instances", doc.get("inputs"))
    value = value["a"] if isinstance(value, dict) else value
    assert isinstance(value, JsonNumbers)
    assert _check_document(raw, load_predict)


def test_v2_data_is_read_as_numbers():
    raw = (
        b'{"id": "r1", "inputs": [{"name": "x", "shape": [2, 2], "datatype": "FP32", '
        b'"data": [1.5, 2, -0.0, 4e-3], "parameters": {"k": [1, {"a": null}]}}], '
        b'"parameters": {"signature_name": "float32"}, "outputs": [{"name": "y"}]}'
    )
    raw = pad(raw)
    doc = load_infer(raw)
    assert isinstance(doc["inputs"][0]["data"], JsonNumbers)
    assert doc["inputs"][0]["data"].shape == (4,)
    assert _check_document(raw, load_infer)


@pytest.mark.parametrize(
    "shape",
    [
        "[]",
        "[1, 784]",
        "[0, 3]",
        "[-1, 2]",
        "[2.0, 3]",
        "[true, 2]",
        "[[1], 2]",
        "[null]",
        "[" + ", ".join(["1"] * 32) + "]",
        "[" + ", ".join(["1"] * 33) + "]",
    ],
)
def test_an_inputs_shape_is_read_as_plain_reads_it(shape):
    """``_Tally.dims`` (a short list of integers in one call) gives what ``plain`` gives and
    counts it as ``plain`` counts it; anything else is ``plain``'s."""
    import simdjson

    value = simdjson.Parser().parse(f'{{"shape": {shape}}}'.encode())["shape"]
    by_dims, by_plain = json_numbers._Tally(), json_numbers._Tally()
    got = by_dims.dims(value)
    assert got == by_plain.plain(value) == json.loads(shape)
    assert (by_dims.lists, by_dims.plain_left) == (by_plain.lists, by_plain.plain_left)
    assert all(type(a) is type(b) for a, b in zip(got, json.loads(shape), strict=True))


def test_a_shape_past_the_plain_budget_is_a_doubt():
    tally = json_numbers._Tally()
    tally.plain_left = 1
    value = __import__("simdjson").Parser().parse(b'{"shape": [1, 2]}')["shape"]
    with pytest.raises(json_numbers._DoubtError):
        tally.dims(value)


def test_the_parse_is_let_go_once_the_tensor_is_made():
    """A request keeps its document until it is answered: the simdjson parse behind its
    numbers is released as soon as the protocol has made the tensor (the next body's parse
    reuses that memory), and kept where the list path still needs it."""
    v2 = load_infer(
        pad(b'{"inputs": [{"name": "x", "shape": [2], "datatype": "FP32", "data": [1.5, 2]}]}')
    )
    numbers = v2["inputs"][0]["data"]
    arr = kserve_v2._parse_inputs(v2["inputs"], b"", None, 10_000)["x"]
    assert arr.tolist() == [1.5, 2.0] and numbers._array is None
    v2 = load_infer(
        pad(b'{"inputs": [{"name": "x", "shape": [2], "datatype": "INT32", "data": [3, 4]}]}')
    )
    numbers = v2["inputs"][0]["data"]
    arr = kserve_v2._parse_inputs(v2["inputs"], b"", None, 10_000)["x"]
    assert arr.tolist() == [3, 4] and arr.dtype == np.int32 and numbers._array is None
    signature = _Signature({"x": dtypes.float32})
    rest = load_predict(pad(b'{"instances": [[1.5, 2], [3, 4]]}'))
    numbers = rest["instances"]
    arr = tfserving._row_inputs(numbers, signature, fast=True)["x"]
    assert arr.tolist() == [[1.5, 2.0], [3.0, 4.0]] and numbers._array is None
    # An integer input whose numbers are floats: the list path decides, so the parse stays.
    rest = load_predict(pad(b'{"instances": [[1.5, 2], [3, 4]]}'))
    numbers = rest["instances"]
    tfserving._row_inputs(numbers, _Signature({"x": dtypes.int32}), fast=True)
    assert numbers._array is not None


@pytest.mark.parametrize(
    "raw",
    [
        b'{"instances": [1.5, 2], "instances": [3.5]}',  # duplicate keys: orjson keeps the last
        b'{"inputs": {"x": [1.5], "x": [2.5]}}',
        b'{"instances": [1.5, [2.5], 3.5]}',  # a list hidden among the numbers
        b'{"instances": [[1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, 7, [8]]]}',
        b'{"instances": [1.5], "signature_name": "a[1]"}',  # a "[" the count would miss
        b'{"instances": [1e400]}',  # beyond float64: the standard parser reads inf
        b'{"instances": [18446744073709551616]}',  # beyond 64 bits: orjson reads a float
        b'{"instances": [-9223372036854775809]}',
        b'{"instances": [NaN]}',
        b'\xef\xbb\xbf{"instances": [1.5]}',  # a byte order mark
        b'{"instances": ["\xff"]}',  # not UTF-8
        b'{"instances": [1.5]',  # truncated
        b"[1.5]",  # not an object
        b"",
    ],
)
def test_what_the_fast_parse_cannot_vouch_for_goes_to_parse_json(raw):
    assert load_predict(pad(raw)) is None
    if raw.startswith(b'{"instances"'):  # the same in a V2 input's data
        v2 = b'{"inputs": [' + raw.replace(b'"instances"', b'"data"') + b"]}"
        assert load_infer(pad(v2)) is None, v2
    else:
        assert load_infer(pad(raw)) is None


@pytest.mark.parametrize(
    "raw",
    [
        b'{"instances": [[1, 2], [3]]}',  # ragged
        # ragged rows of the right total
        b'{"instances": [[1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, 7, 8, 9], '
        b"[1, 2, 3, 4, 5, 6, 7]]}",
        b'{"instances": [[1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, [], 8]]}',
        b'{"instances": [1.5, true]}',
        b'{"instances": [1.5, null]}',
        b'{"instances": ["a", "b"]}',
        b'{"instances": [{"b64": "AA=="}]}',
        b'{"instances": [{"x": [1.5, 2.5]}]}',  # named instances
        b'{"instances": []}',
        b'{"instances": [[]]}',
        b'{"inputs": {"a": [1.5, 2], "b": ["s"]}}',
        b'{"instances": [1.5], "x": [' + b"1, " * 64 + b"1]}",  # a large list elsewhere
    ],
)
def test_anything_but_number_tensors_is_orjsons(raw):
    """What is no list of numbers where a tensor goes, or a large value elsewhere, goes to
    parse_json (faster than pysimdjson's Python values)."""
    raw = pad(raw)
    assert load_predict(raw) is None
    assert json_numbers.parse_predict(raw) == parse_json(raw)


def test_small_bodies_are_orjsons():
    raw = b'{"instances": [1.5], "signature_name": "x"}'
    assert load_predict(raw) is None and load_infer(raw) is None  # too few numbers to pay
    assert load_predict(pad(raw)) is not None


def test_conversions_defer_where_the_list_path_decides():
    def load(raw):
        return load_predict(pad(raw))["instances"]

    big = load(b'{"instances": [9007199254740993, 1]}')
    assert big.floats(np.dtype(np.float32)) is None  # 2**53 + 1: float64 rounded it
    assert big.integers().tolist() == [9007199254740993, 1]
    floats = load(b'{"instances": [1.0, 2]}')
    assert floats.integers() is None  # a float token: the list path checks integrality
    assert floats.floats(np.dtype(np.float16)) is None
    assert floats.floats(np.dtype(np.float64)).tolist() == [1.0, 2.0]
    beyond = load(b'{"instances": [9223372036854775808]}')
    assert beyond.integers() is None  # uint64 only: from_json_value's uint64 array


def test_switched_off_it_reads_nothing():
    raw = pad(b'{"instances": [1.5, 2.5]}')
    assert load_predict(raw) is not None
    try:
        json_numbers.ENABLED = False
        assert load_predict(raw) is None and load_infer(raw) is None
        assert json_numbers.parse_predict(raw) == {"instances": [1.5, 2.5]}
    finally:
        json_numbers.ENABLED = True


# -- the protocols' arrays and errors -------------------------------------------------------
class _Signature:
    def __init__(self, inputs: dict):
        self.key = "k"
        self.inputs = {a: TensorSpec(a, a + ":0", d, TensorShape(None)) for a, d in inputs.items()}
        self.input_order = list(inputs)


def _outcome(convert):
    try:
        return convert()
    except InvalidInput as e:
        return e.message


def _same_outcome(a, b) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same_array(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        return _same_array(a, b)
    return a == b


def _predict_inputs(doc, signature, fast):
    if "instances" in doc:
        return tfserving._row_inputs(doc["instances"], signature, fast)
    return tfserving._columnar_inputs(doc["inputs"], signature)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rng=st.randoms(use_true_random=True),
    dtype=st.sampled_from(sorted(DTYPES)),
    fast=st.booleans(),
)
def test_predict_inputs_are_the_orjson_paths(rng, dtype, fast):
    raw = json_bodies.predict_body(rng)
    doc = load_predict(raw)
    if doc is None or not isinstance(doc, dict):
        return
    slow = parse_json(raw)
    if ("instances" in doc) == ("inputs" in doc):
        return
    signature = _Signature({"x": DTYPES[dtype]})
    got = _outcome(lambda: _predict_inputs(doc, signature, fast))
    expected = _outcome(lambda: _predict_inputs(slow, signature, fast))
    assert _same_outcome(got, expected), (raw, dtype, got, expected)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rng=st.randoms(use_true_random=True))
def test_infer_inputs_are_the_orjson_paths(rng):
    raw = json_bodies.infer_body(rng)
    doc = load_infer(raw)
    if doc is None:
        return
    slow = parse_json(raw)
    got = _outcome(lambda: kserve_v2._parse_inputs(doc.get("inputs"), b"", None, 10_000))
    expected = _outcome(lambda: kserve_v2._parse_inputs(slow.get("inputs"), b"", None, 10_000))
    assert _same_outcome(got, expected), (raw, got, expected)


def test_two_inputs_in_row_format_need_names_either_way():
    signature = _Signature({"a": tf.float32, "b": tf.float32})
    doc = load_predict(pad(b'{"instances": [1.5, 2.5]}'))
    with pytest.raises(InvalidInput, match="has 2 inputs"):
        tfserving._row_inputs(doc["instances"], signature, True)


# -- over HTTP ------------------------------------------------------------------------------
async def _post_both(client, path: str, raw: bytes):
    answers = []
    for enabled in (True, False):
        json_numbers.ENABLED = enabled
        try:
            headers = {"Content-Type": "application/json", "X-Request-ID": "same-id"}
            resp = await client.post(path, data=raw, headers=headers)
            answers.append((resp.status, await resp.read()))
        finally:
            json_numbers.ENABLED = True
    return answers


# The list path's own range check of a float16 array warns (as without the fast parse).
@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
async def test_http_answers_are_the_same_with_and_without_the_fast_parse(
    aiohttp_client, make_config, echo_repository
):
    client = await aiohttp_client(create_app(make_config(model_repository=str(echo_repository))))
    rng = random.Random(13)
    statuses = set()
    taken = {False: 0, True: 0}  # bodies the fast parse took, by protocol (V2: True)
    for i in range(240):
        v2 = i % 2 == 1
        raw = json_bodies.infer_body(rng) if v2 else json_bodies.predict_body(rng)
        path = "/v2/models/echo/infer" if v2 else "/v1/models/echo:predict"
        taken[v2] += (load_infer if v2 else load_predict)(raw) is not None
        (status, fast), (slow_status, slow) = await _post_both(client, path, raw)
        assert (status, fast) == (slow_status, slow), raw
        statuses.add(status)
    assert statuses >= {200, 400}
    assert min(taken.values()) >= 30, taken  # not orjson's path compared with itself


async def test_http_hot_bodies(aiohttp_client, make_config, echo_repository):
    """Bodies the fast parse takes (checked: a body under ``_MIN_BODY`` is orjson's on both
    sides, which compared orjson with itself) answer as orjson's path does."""
    client = await aiohttp_client(create_app(make_config(model_repository=str(echo_repository))))

    async def both(path: str, raw: bytes):
        load = load_infer if path.startswith("/v2/") else load_predict
        assert load(raw) is not None, "the fast parse does not take this body"
        (status, fast), (slow_status, slow) = await _post_both(client, path, raw)
        assert (status, fast) == (slow_status, slow)
        return status, fast

    x = np.random.default_rng(0).standard_normal((2, 784)).astype(np.float32)
    rest = json.dumps({"instances": x.tolist()}).encode()
    status, fast = await both("/v1/models/echo:predict", rest)
    assert status == 200
    assert np.float32(json.loads(fast)["predictions"]).tobytes() == x.tobytes()
    # Numbers the fast parse read skip the search for bool tokens: a "true" elsewhere in
    # the body is judged where orjson's path judges it.
    flagged = json.dumps({"instances": x.tolist(), "timeout": True}).encode()
    status, fast = await both("/v1/models/echo:predict", flagged)
    assert status == 400 and b"'timeout' must be a number of seconds, got True" in fast
    doc = {
        "id": "abc",
        "inputs": [
            {"name": "x", "shape": [2, 784], "datatype": "FP32", "data": x.ravel().tolist()}
        ],
        "parameters": {"signature_name": "float32"},
    }
    status, fast = await both("/v2/models/echo/infer", json.dumps(doc).encode())
    assert status == 200
    out = json.loads(fast)["outputs"][0]
    assert out["shape"] == [2, 784] and np.float32(out["data"]).tobytes() == x.tobytes()
    ints = json.dumps({"inputs": [[2**31 - 1, -5] * 8], "signature_name": "int32"}).encode()
    status, fast = await both("/v1/models/echo:predict", pad(ints))
    assert status == 200 and json.loads(fast)["outputs"] == [[2**31 - 1, -5] * 8]
    beyond = json.dumps({"inputs": [[2**31, -5] * 8], "signature_name": "int32"}).encode()
    status, fast = await both("/v1/models/echo:predict", pad(beyond))
    assert status == 400 and b"out of range for int32" in fast


async def test_fast_parsed_instances_skip_the_bool_token_search(
    aiohttp_client, make_config, echo_repository, monkeypatch
):
    """Instances the fast parse read hold no bool (its copy refuses them), so predict does
    not search the body for ``true``/``false``; orjson's instances still are searched."""
    searched = []
    real = tfserving._has_bool_token
    monkeypatch.setattr(tfserving, "_has_bool_token", lambda raw: searched.append(1) or real(raw))
    client = await aiohttp_client(create_app(make_config(model_repository=str(echo_repository))))
    x = np.random.default_rng(1).standard_normal((1, 784)).astype(np.float32)
    raw = json.dumps({"instances": x.tolist()}).encode()
    assert type(load_predict(raw)["instances"]) is JsonNumbers
    for enabled, searches in ((True, 0), (False, 1)):
        json_numbers.ENABLED = enabled
        try:
            resp = await client.post("/v1/models/echo:predict", data=raw)
            assert resp.status == 200, await resp.text()
        finally:
            json_numbers.ENABLED = True
        assert np.float32((await resp.json())["predictions"]).tobytes() == x.tobytes()
        assert len(searched) == searches, (enabled, searched)
        searched.clear()


def test_the_server_answers_without_pysimdjson(echo_repository):
    """With pysimdjson absent the server reads JSON with orjson as before (in a child
    process, where importing it fails)."""
    script = f"""
import sys, asyncio, json
sys.modules["simdjson"] = None  # import simdjson raises ImportError
from aiohttp.test_utils import TestClient, TestServer
from service.app import create_app
from service.config import ServerConfig
from service.protocols import json_numbers
assert not json_numbers.ENABLED and json_numbers.load_predict(b'{{"instances": [1]}}') is None

async def main():
    config = ServerConfig(model_repository={str(echo_repository)!r}, poll_interval=0.0,
                          port=0, grpc_port=0).validate()
    async with TestClient(TestServer(create_app(config))) as client:
        r = await client.post("/v1/models/echo:predict", data=b'{{"instances": [1.5, -2.0]}}')
        assert r.status == 200, await r.text()
        assert (await r.json()) == {{"predictions": [1.5, -2.0]}}
        doc = {{"inputs": [{{"name": "x", "shape": [2], "datatype": "FP64", "data": [0.1, 2]}}],
               "parameters": {{"signature_name": "float64"}}}}
        r = await client.post("/v2/models/echo/infer", data=json.dumps(doc))
        assert r.status == 200, await r.text()
        assert (await r.json())["outputs"][0]["data"] == [0.1, 2.0]
        r = await client.post("/v1/models/echo:predict", data=b'{{"instances": [1.5, "a"]}}')
        assert r.status == 400
        print("ok")

asyncio.run(main())
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]
