"""The TensorFlow Serving REST adapter (``/v1/models/...``), end to end over HTTP."""

import asyncio
import base64
import json
import math

import msgpack
import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families

import engine as tf
from service.app import create_app
from service.keys import MANAGER
from service.protocols.msgpack_codec import decode_tensor, encode_tensor
from tests.service import models

MSGPACK = "application/msgpack"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


async def predict(client, path, body, status=200, **kw):
    r = await client.post(path, data=json.dumps(body), **kw)
    doc = await r.json()
    assert r.status == status, doc
    assert r.content_type == "application/json"
    return doc


async def error(client, method, path, status, body=None, **kw):
    data = body if isinstance(body, (str, bytes)) or body is None else json.dumps(body)
    r = await client.request(method, path, data=data, **kw)
    doc = await r.json()
    assert r.status == status, doc
    assert set(doc) == {"error"}
    return doc["error"]


# -- extra models built for these tests ------------------------------------------------------
def _shapes(path):
    """Outputs with no batch dimension and outputs with different batch sizes."""

    def build():
        x = tf.placeholder(tf.float32, [None], name="x")
        same = tf.identity(x, name="same")
        return {
            "scalar": ({"x": x}, {"same": same, "total": tf.reduce_sum(x, name="total")}),
            "mismatch": ({"x": x}, {"same": same, "twice": tf.concat([x, x], 0)}),
        }

    models.export(path, build)


def _bytes_out(path):
    def build():
        s = tf.placeholder(tf.string, [None], name="s")
        return {
            "serving_default": (
                {"s": s},
                {"raw_bytes": tf.identity(s, name="raw"), "text": tf.identity(s, name="text")},
            )
        }

    models.export(path, build)


@pytest.fixture(scope="module")
def extra_repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("tfs_extra")
    models.half_plus_two(root / "broken" / "1")
    broken = root / "broken" / "2"
    broken.mkdir(parents=True)
    (broken / "saved_model.msgpack").write_bytes(b"\x00 not a saved model")
    models.write_config(root / "broken", {"version_policy": {"all": {}}})
    _shapes(root / "shapes" / "1")
    _bytes_out(root / "bytes_out" / "1")
    return root


@pytest.fixture
async def extra_client(aiohttp_client, make_config, extra_repo):
    return await aiohttp_client(create_app(make_config(model_repository=str(extra_repo))))


@pytest.fixture
async def slow_client(aiohttp_client, make_config, tmp_path):
    models.slow(tmp_path / "slow" / "1", iterations=40_000)  # ~0.3 s per run
    models.write_config(tmp_path / "slow", {"warmup": False})
    return await aiohttp_client(create_app(make_config(model_repository=str(tmp_path))))


# -- status --------------------------------------------------------------------------------
def _ok(version):
    return {
        "version": str(version),
        "state": "AVAILABLE",
        "status": {"error_code": "OK", "error_message": ""},
        "devices": [{"device": "cpu", "instances": 1}],
    }


async def test_status_lists_every_version_newest_first(client):
    r = await client.get("/v1/models/half_plus_two")
    assert r.status == 200
    assert await r.json() == {"model_version_status": [_ok(2), _ok(1)]}


@pytest.mark.parametrize(
    "path, version",
    [
        ("/v1/models/half_plus_two/versions/1", 1),
        ("/v1/models/half_plus_two/versions/2", 2),
        ("/v1/models/half_plus_two/labels/stable", 1),
        ("/v1/models/half_plus_two/labels/canary", 2),
        ("/v1/models/multi_io", 1),
    ],
)
async def test_status_of_one_version(client, path, version):
    r = await client.get(path)
    assert r.status == 200
    assert await r.json() == {"model_version_status": [_ok(version)]}


@pytest.mark.parametrize(
    "path, status, message",
    [
        ("/v1/models/nosuch", 404, "model 'nosuch' is not in the model repository"),
        (
            "/v1/models/half_plus_two/versions/7",
            404,
            "Could not find version 7 of model 'half_plus_two'",
        ),
        ("/v1/models/half_plus_two/labels/beta", 404, "Unrecognized servable version label 'beta'"),
        (
            "/v1/models/half_plus_two/versions/abc",
            400,
            "version 'abc' of model 'half_plus_two' is not a number",
        ),
        ("/v1/models/nosuch/metadata", 404, "model 'nosuch' is not in the model repository"),
        ("/v1/models/half_plus_two/versions/7/metadata", 404, "model 'half_plus_two' version 7"),
        ("/v1/models/half_plus_two/labels/beta/metadata", 404, "version label 'beta'"),
        ("/v1/models/half_plus_two/versions/x1/metadata", 400, "version 'x1'"),
    ],
)
async def test_status_and_metadata_errors(client, path, status, message):
    assert message in await error(client, "GET", path, status)


async def test_failed_version_shows_its_error_and_others_keep_serving(extra_client):
    r = await extra_client.get("/v1/models/broken")
    assert r.status == 200
    doc = await r.json()
    assert doc["model_version_status"][1] == _ok(1)
    failed = doc["model_version_status"][0]
    assert failed["version"] == "2" and failed["state"] == "END"
    assert failed["status"]["error_code"] == "UNKNOWN"
    assert failed["status"]["error_message"]
    r = await extra_client.get("/v1/models/broken/versions/2")
    assert (await r.json())["model_version_status"] == [failed]
    message = await error(
        extra_client, "POST", "/v1/models/broken/versions/2:predict", 503, {"instances": [1.0]}
    )
    assert "Model 'broken' version 2 is not available (state END: " in message
    assert failed["status"]["error_message"] in message
    assert "version 2 is not available" in await error(
        extra_client, "GET", "/v1/models/broken/versions/2/metadata", 503
    )
    assert await predict(extra_client, "/v1/models/broken:predict", {"instances": [2.0]}) == {
        "predictions": [3.0]
    }


# -- metadata ------------------------------------------------------------------------------
def _info(dtype, dims, name):
    return {
        "dtype": dtype,
        "name": name,
        "tensor_shape": {
            "dim": [{"size": str(d), "name": ""} for d in dims],
            "unknown_rank": False,
        },
    }


async def test_metadata_of_half_plus_two(client):
    r = await client.get("/v1/models/half_plus_two/metadata")
    assert r.status == 200
    assert await r.json() == {
        "model_spec": {"name": "half_plus_two", "signature_name": "", "version": "2"},
        "metadata": {
            "signature_def": {
                "signature_def": {
                    "serving_default": {
                        "inputs": {"x": _info("DT_FLOAT", [-1], "x:0")},
                        "outputs": {"y": _info("DT_FLOAT", [-1], "y:0")},
                        "method_name": "tensorflow/serving/predict",
                    }
                }
            }
        },
    }


@pytest.mark.parametrize(
    "path, version",
    [
        ("/v1/models/half_plus_two/versions/1/metadata", "1"),
        ("/v1/models/half_plus_two/labels/stable/metadata", "1"),
        ("/v1/models/half_plus_two/labels/canary/metadata", "2"),
    ],
)
async def test_metadata_by_version_and_label(client, path, version):
    r = await client.get(path)
    assert r.status == 200
    assert (await r.json())["model_spec"] == {
        "name": "half_plus_two",
        "signature_name": "",
        "version": version,
    }


async def test_metadata_lists_every_signature_with_tf_dtype_names(client):
    r = await client.get("/v1/models/multi_io/metadata")
    sigs = (await r.json())["metadata"]["signature_def"]["signature_def"]
    assert sigs == {
        "serving_default": {
            "inputs": {"a": _info("DT_FLOAT", [-1, 3], "a:0"), "b": _info("DT_INT32", [-1], "b:0")},
            "outputs": {
                "total": _info("DT_FLOAT", [-1], "total:0"),
                "doubled": _info("DT_INT32", [-1], "doubled:0"),
                "label": _info("DT_STRING", [-1], "label:0"),
            },
            "method_name": "tensorflow/serving/predict",
        },
        "negate": {
            "inputs": {"a": _info("DT_FLOAT", [-1, 3], "a:0")},
            "outputs": {"neg": _info("DT_FLOAT", [-1, 3], "neg_1:0")},
            "method_name": "tensorflow/serving/predict",
        },
    }
    r = await client.get("/v1/models/strings/metadata")
    sig = (await r.json())["metadata"]["signature_def"]["signature_def"]["serving_default"]
    assert sig["inputs"]["text"]["dtype"] == sig["outputs"]["shouted"]["dtype"] == "DT_STRING"


# -- predict -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "path, a, b",
    [
        ("/v1/models/half_plus_two:predict", 0.5, 3.0),
        ("/v1/models/half_plus_two/versions/1:predict", 0.5, 2.0),
        ("/v1/models/half_plus_two/versions/2:predict", 0.5, 3.0),
        ("/v1/models/half_plus_two/labels/stable:predict", 0.5, 2.0),
        ("/v1/models/half_plus_two/labels/canary:predict", 0.5, 3.0),
    ],
)
async def test_predict_half_plus_two_by_version_and_label(client, path, a, b):
    xs = [1.0, 2.0, 5.0]
    expected = [a * x + b for x in xs]
    assert await predict(client, path, {"instances": xs}) == {"predictions": expected}
    assert await predict(client, path, {"instances": [{"x": x} for x in xs]}) == {
        "predictions": expected
    }
    assert await predict(client, path, {"inputs": xs}) == {"outputs": expected}
    assert await predict(client, path, {"inputs": {"x": xs}}) == {"outputs": expected}
    assert await predict(
        client, path, {"signature_name": "serving_default", "inputs": {"x": xs}}
    ) == {"outputs": expected}


async def test_predict_multi_io_row_format(client):
    body = {"instances": [{"a": [1.0, 2.0, 3.0], "b": 1}, {"a": [-9.0, 2.0, 3.0], "b": 2}]}
    assert await predict(client, "/v1/models/multi_io:predict", body) == {
        "predictions": [
            {"doubled": 2, "label": "pos", "total": 7.0},
            {"doubled": 4, "label": "neg", "total": -2.0},
        ]
    }


async def test_predict_multi_io_columnar_format(client):
    body = {
        "signature_name": "",
        "inputs": {"a": [[1, 2, 3], [-9, 2, 3], [0, 0, 0]], "b": [1, 2, 0]},
    }
    assert await predict(client, "/v1/models/multi_io:predict", body) == {
        "outputs": {"doubled": [2, 4, 0], "label": ["pos", "neg", "neg"], "total": [7.0, -2.0, 0.0]}
    }


async def test_predict_with_a_named_signature(client):
    path = "/v1/models/multi_io:predict"
    assert await predict(
        client, path, {"signature_name": "negate", "instances": [[1, 2, 3], [4, 5, 6]]}
    ) == {"predictions": [[-1.0, -2.0, -3.0], [-4.0, -5.0, -6.0]]}
    assert await predict(
        client, path, {"signature_name": "negate", "instances": [{"a": [1, 2, 3]}]}
    ) == {"predictions": [[-1.0, -2.0, -3.0]]}
    assert await predict(
        client, path, {"signature_name": "negate", "inputs": {"a": [[0.5, 0, -1]]}}
    ) == {"outputs": [[-0.5, -0.0, 1.0]]}


async def test_predict_strings_with_b64_in_and_out(client):
    path = "/v1/models/strings:predict"
    assert await predict(client, path, {"instances": ["hi", "héllo"]}) == {
        "predictions": ["hi!", "héllo!"]
    }
    assert await predict(client, path, {"instances": [{"text": "a"}, {"text": "b"}]}) == {
        "predictions": ["a!", "b!"]
    }
    assert await predict(client, path, {"inputs": {"text": [{"b64": b64("é".encode())}]}}) == {
        "outputs": ["é!"]
    }
    # Bytes that are not UTF-8 come back base64-encoded; text stays text in the same tensor.
    assert await predict(client, path, {"instances": [{"b64": b64(b"\xff\xfe")}, "ok"]}) == {
        "predictions": [{"b64": b64(b"\xff\xfe!")}, "ok!"]
    }
    assert await predict(client, path, {"inputs": [[{"b64": b64(b"\x80")}], ["x"]]}, 400)


async def test_outputs_named_bytes_are_always_base64(extra_client):
    doc = await predict(
        extra_client,
        "/v1/models/bytes_out:predict",
        {"instances": ["abc", {"b64": b64(b"\x00\xff")}]},
    )
    assert doc == {
        "predictions": [
            {"raw_bytes": {"b64": b64(b"abc")}, "text": "abc"},
            {"raw_bytes": {"b64": b64(b"\x00\xff")}, "text": {"b64": b64(b"\x00\xff")}},
        ]
    }
    doc = await predict(extra_client, "/v1/models/bytes_out:predict", {"inputs": ["abc"]})
    assert doc == {"outputs": {"raw_bytes": [{"b64": b64(b"abc")}], "text": ["abc"]}}


async def test_nan_and_infinity_are_json_tokens(client):
    r = await client.post(
        "/v1/models/half_plus_two:predict", data='{"instances": [NaN, Infinity, -Infinity, 1]}'
    )
    assert r.status == 200
    assert await r.text() == '{"predictions":[NaN,Infinity,-Infinity,3.5]}'
    values = json.loads(await r.text())["predictions"]
    assert math.isnan(values[0]) and values[1:] == [math.inf, -math.inf, 3.5]


async def test_row_format_needs_a_batch_dimension_on_every_output(extra_client):
    path = "/v1/models/shapes:predict"
    message = await error(
        extra_client, "POST", path, 400, {"signature_name": "scalar", "instances": [1.0, 2.0]}
    )
    assert "output 'total' has no batch dimension" in message
    assert "columnar format ('inputs')" in message
    assert await predict(
        extra_client, path, {"signature_name": "scalar", "inputs": [1.0, 2.0]}
    ) == {"outputs": {"same": [1.0, 2.0], "total": 3.0}}
    message = await error(
        extra_client, "POST", path, 400, {"signature_name": "mismatch", "instances": [1.0, 2.0]}
    )
    assert "outputs 'same' and 'twice' have different batch sizes (2 and 4)" in message
    assert await predict(
        extra_client, path, {"signature_name": "mismatch", "inputs": {"x": [1.0]}}
    ) == {"outputs": {"same": [1.0], "twice": [1.0, 1.0]}}


# -- msgpack -------------------------------------------------------------------------------
async def post_msgpack(client, path, body, status=200, **headers):
    r = await client.post(
        path,
        data=msgpack.packb(body, use_bin_type=True),
        headers={"Content-Type": MSGPACK, **headers},
    )
    if status != 200:
        doc = await r.json()
        assert r.status == status, doc
        return doc["error"]
    assert r.status == 200, await r.text()
    assert r.content_type == MSGPACK
    return msgpack.unpackb(await r.read(), raw=False)


async def test_msgpack_round_trip(client):
    x = np.array([1.0, 2.0, -4.0], np.float32)
    doc = await post_msgpack(
        client, "/v1/models/half_plus_two:predict", {"inputs": {"x": encode_tensor(x)}}
    )
    assert set(doc) == {"outputs", "model_version"} and doc["model_version"] == "2"
    y = decode_tensor(doc["outputs"]["y"], "y")
    assert y.dtype == np.float32 and y.tolist() == [3.5, 4.0, 1.0]
    # A bare tensor map for a one-input signature, a pinned version, a deadline.
    doc = await post_msgpack(
        client,
        "/v1/models/half_plus_two/labels/stable:predict",
        {"inputs": encode_tensor(x), "timeout": 10},
    )
    assert doc["model_version"] == "1"
    assert decode_tensor(doc["outputs"]["y"], "y").tolist() == [2.5, 3.0, 0.0]


async def test_msgpack_multi_io_and_strings(client):
    a = np.array([[1, 2, 3], [-9, 2, 3]], np.float32)
    doc = await post_msgpack(
        client,
        "/v1/models/multi_io:predict",
        {"inputs": {"a": encode_tensor(a), "b": encode_tensor(np.array([1, 2], np.int32))}},
    )
    out = {k: decode_tensor(v, k) for k, v in doc["outputs"].items()}
    assert out["total"].tolist() == [7.0, -2.0]
    assert out["doubled"].dtype == np.int32 and out["doubled"].tolist() == [2, 4]
    assert out["label"].tolist() == [b"pos", b"neg"]
    doc = await post_msgpack(
        client,
        "/v1/models/multi_io:predict",
        {"signature_name": "negate", "inputs": encode_tensor(a)},
    )
    assert decode_tensor(doc["outputs"]["neg"], "neg").tolist() == (-a).tolist()
    s = np.array([b"\xff", b"ok"], dtype=object)
    doc = await post_msgpack(client, "/v1/models/strings:predict", {"inputs": encode_tensor(s)})
    assert decode_tensor(doc["outputs"]["shouted"], "s").tolist() == [b"\xff!", b"ok!"]


async def test_json_request_can_ask_for_a_msgpack_answer(client):
    r = await client.post(
        "/v1/models/half_plus_two:predict", json={"instances": [2.0]}, headers={"Accept": MSGPACK}
    )
    assert r.status == 200 and r.content_type == MSGPACK
    doc = msgpack.unpackb(await r.read(), raw=False)
    assert doc["model_version"] == "2"
    assert decode_tensor(doc["outputs"]["y"], "y").tolist() == [4.0]


@pytest.mark.parametrize(
    "body, status, message",
    [
        ({"instances": [1.0]}, 400, "'instances' (row format) is only accepted in JSON"),
        (
            {"inputs": {"x": {"dtype": "float32", "shape": [2], "data": b"\x00" * 4}}},
            400,
            "input 'x': 4 data bytes for shape [2] of float32 (expected 8)",
        ),
        (
            {"inputs": {"x": {"dtype": "complex", "shape": [1], "data": b""}}},
            400,
            "unsupported dtype 'complex'",
        ),
        ({"inputs": {"x": [1.0]}}, 400, "input 'x': expected a tensor map"),
        ({"inputs": [1.0]}, 400, "'inputs' must be a tensor map"),
        (
            {"inputs": {"x": encode_tensor(np.array(["a"], dtype=object))}},
            400,
            "input 'x' expects float32 numbers, got strings",
        ),
        ([1, 2], 400, "must be a msgpack object"),
    ],
)
async def test_msgpack_errors(client, body, status, message):
    assert message in await post_msgpack(client, "/v1/models/half_plus_two:predict", body, status)


async def test_msgpack_body_that_is_not_msgpack(client):
    message = await error(
        client,
        "POST",
        "/v1/models/half_plus_two:predict",
        400,
        b"\xc1 garbage",
        headers={"Content-Type": MSGPACK},
    )
    assert "not valid msgpack" in message


# -- errors --------------------------------------------------------------------------------
HPT = "/v1/models/half_plus_two:predict"
MULTI = "/v1/models/multi_io:predict"


@pytest.mark.parametrize(
    "path, body, status, message",
    [
        (HPT, "{not json", 400, "The request body is not valid JSON"),
        (HPT, "", 400, "The request body is empty"),
        (HPT, [1, 2], 400, "must be a JSON object with 'instances' or 'inputs', got list"),
        (
            HPT,
            {"signature_name": "serving_default"},
            400,
            "missing 'instances' (row format) or 'inputs' (columnar format)",
        ),
        (HPT, {"instances": [1.0], "inputs": [1.0]}, 400, "both 'instances' and 'inputs'"),
        (HPT, {"instance": [1.0]}, 400, "Unknown request field(s) ['instance']"),
        (HPT, {"signature_name": 3, "inputs": [1.0]}, 400, "'signature_name' must be a string"),
        (
            HPT,
            {"signature_name": "nope", "inputs": [1.0]},
            404,
            "signature 'nope' not found in model half_plus_two version 2 (available: "
            "['serving_default'])",
        ),
        (HPT, {"instances": {"x": [1.0]}}, 400, "'instances' must be a list"),
        (HPT, {"instances": []}, 400, "'instances' is empty"),
        (HPT, {"instances": ["a", "b"]}, 400, "input 'x' expects float32 numbers, got strings"),
        (
            HPT,
            {"instances": [1.0, "b"]},
            400,
            "input 'x': instance 1 holds strings but instance 0 holds numbers",
        ),
        (
            HPT,
            {"instances": [1.0, True]},
            400,
            "instance 1 holds bools but instance 0 holds numbers",
        ),
        (
            HPT,
            {"inputs": [[1.0]]},
            400,
            "input 'x' has shape [1, 1] (rank 2); the model expects shape [?] (rank 1)",
        ),
        (HPT, {"inputs": {"x": None}}, 400, "input 'x': null is not a valid tensor value"),
        (HPT, {"inputs": {"y": [1.0]}}, 400, "missing input(s) ['x'] and unknown input(s) ['y']"),
        (HPT, {"inputs": [1e39]}, 400, "input 'x': values out of range for float32"),
        (HPT, {"inputs": {"x": [{"b64": "!!!"}]}}, 400, "input 'x': '!!!' is not valid base64"),
        (
            HPT,
            {"inputs": {"x": {"b64": 5}}},
            400,
            "input 'x': a {\"b64\": ...} value must be a base64 string",
        ),
        (HPT, {"inputs": [1.0], "timeout": "soon"}, 400, "'timeout' must be a number of seconds"),
        (HPT, {"inputs": [1.0], "timeout": -1}, 400, "'timeout' must be a positive number"),
        (
            MULTI,
            {"instances": [[1, 2, 3]]},
            400,
            "signature 'serving_default' has 2 inputs "
            "['a', 'b'], so each instance must be an object",
        ),
        (MULTI, {"inputs": [[1, 2, 3]]}, 400, "so 'inputs' must be an object naming them"),
        (
            MULTI,
            {"instances": [{"a": [1, 2, 3], "b": 1}, {"a": [1, 2, 3]}]},
            400,
            "instance 1 has inputs ['a'] but instance 0 has ['a', 'b']",
        ),
        (
            MULTI,
            {"instances": [{"a": [1, 2, 3], "b": 1}, 5]},
            400,
            "instance 1 has inputs a bare value but instance 0 has ['a', 'b']",
        ),
        (
            MULTI,
            {"instances": [{"a": [1, 2, 3], "b": 1}, {"a": [1, 2], "b": 1}]},
            400,
            "input 'a': instance 1 has shape [2] but instance 0 has shape [3]",
        ),
        (MULTI, {"instances": [{"a": [1, 2, 3]}]}, 400, "missing input(s) ['b']"),
        (MULTI, {"instances": [{"a": [1, 2, 3], "b": 1, "c": 2}]}, 400, "unknown input(s) ['c']"),
        (
            MULTI,
            {"inputs": {"a": [[1, 2]], "b": [1]}},
            400,
            "input 'a' has shape [1, 2]; the model expects [?, 3] (dimension 1 must be 3)",
        ),
        (MULTI, {"inputs": {"a": [[1, 2, 3], [1, 2]], "b": [1, 1]}}, 400, "input 'a': ragged"),
        (
            MULTI,
            {"inputs": {"a": [[1, 2, 3]], "b": [1.5]}},
            400,
            "input 'b' expects integers (int32), got non-integral numbers",
        ),
        (
            MULTI,
            {"signature_name": "negate", "instances": [{"b": [1]}]},
            400,
            "signature 'negate' takes inputs ['a']; missing input(s) ['a'] and unknown input(s) "
            "['b']",
        ),
        (
            "/v1/models/nosuch:predict",
            {"instances": [1.0]},
            404,
            "model 'nosuch' is not in the model repository",
        ),
        (
            "/v1/models/half_plus_two/versions/9:predict",
            {"instances": [1.0]},
            404,
            "Servable not found for request: model 'half_plus_two' version 9",
        ),
        (
            "/v1/models/half_plus_two/versions/0x2:predict",
            {"instances": [1.0]},
            400,
            "version '0x2' of model 'half_plus_two' is not a number",
        ),
        (
            "/v1/models/half_plus_two/labels/beta:predict",
            {"instances": [1.0]},
            404,
            "Unrecognized servable version label 'beta' for model 'half_plus_two'",
        ),
        (
            "/v1/models/half_plus_two:classify",
            {"examples": [{"x": 1}]},
            400,
            "Expected classify signature method_name to be tensorflow/serving/classify",
        ),
        (
            "/v1/models/half_plus_two/versions/1:regress",
            {"examples": []},
            400,
            "Expected regress signature method_name",
        ),
        ("/v1/models/half_plus_two:explain", {"instances": [1.0]}, 404, "Unknown API ':explain'"),
    ],
)
async def test_predict_errors(client, path, body, status, message):
    assert message in await error(client, "POST", path, status, body)


async def test_invalid_request_timeout_header(client):
    message = await error(
        client, "POST", HPT, 400, {"instances": [1.0]}, headers={"Request-Timeout": "abc"}
    )
    assert message == "The Request-Timeout header must be a number of seconds, got 'abc'"


@pytest.mark.parametrize(
    "method, path, allow",
    [
        ("GET", "/v1/models/half_plus_two:predict", "POST"),
        ("GET", "/v1/models/half_plus_two/versions/1:predict", "POST"),
        ("PUT", "/v1/models/half_plus_two/labels/stable:predict", "POST"),
        ("POST", "/v1/models/half_plus_two", "GET"),
        ("POST", "/v1/models/half_plus_two/versions/1", "GET"),
        ("POST", "/v1/models/half_plus_two/metadata", "GET"),
        ("DELETE", "/v1/models/half_plus_two/labels/stable/metadata", "GET"),
    ],
)
async def test_wrong_method_is_405(client, method, path, allow):
    r = await client.request(method, path)
    assert r.status == 405
    assert await r.json() == {"error": f"Method {method} is not allowed for {path}"}
    assert allow in r.headers["Allow"]


async def test_body_over_the_limit_is_413(aiohttp_client, make_config):
    client = await aiohttp_client(create_app(make_config(max_request_bytes=2048)))
    assert await predict(client, HPT, {"instances": [1.0] * 100}) == {"predictions": [3.5] * 100}
    message = await error(client, "POST", HPT, 413, {"instances": [1.0] * 1000})
    # Refused from its Content-Length, before the body is read.
    assert message.startswith("Request body too large: Content-Length 5015 ")
    assert message.endswith("is over the limit of 2048 bytes (max_request_bytes)")


async def overdue_finished(client):
    """Waits until no computation that missed its deadline still holds a compute thread."""
    manager = client.app[MANAGER]
    for _ in range(500):
        if not len(manager.overdue):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("an overdue computation did not finish in 5 s")


async def test_deadline_from_header_or_body(slow_client):
    path = "/v1/models/slow:predict"
    assert await predict(slow_client, path, {"instances": [1.0, 2.0], "timeout": 30}) == {
        "predictions": [1.0, 2.0]
    }
    message = await error(
        slow_client, "POST", path, 504, {"instances": [1.0]}, headers={"Request-Timeout": "0.02"}
    )
    assert "deadline exceeded" in message
    await overdue_finished(slow_client)
    message = await error(slow_client, "POST", path, 504, {"inputs": [1.0], "timeout": 0.02})
    assert "deadline exceeded" in message
    await overdue_finished(slow_client)
    # Both given: the stricter deadline wins.
    await error(
        slow_client,
        "POST",
        path,
        504,
        {"inputs": [1.0], "timeout": 30},
        headers={"Request-Timeout": "0.02"},
    )


# -- metrics -------------------------------------------------------------------------------
async def tfserving_request_counts(client) -> dict:
    r = await client.get("/metrics")
    counts = {}
    for family in text_string_to_metric_families(await r.text()):
        for s in family.samples:
            if s.name == "flowserve_requests_total" and s.labels["protocol"] == "tfserving":
                key = (s.labels["endpoint"], s.labels["model"], s.labels["version"])
                counts[key + (s.labels["code"],)] = s.value
    return counts


async def test_metrics_count_requests_by_protocol_model_and_version(client):
    await predict(client, HPT, {"instances": [1.0]})
    await predict(client, HPT, {"inputs": [2.0]})
    await predict(client, "/v1/models/half_plus_two/labels/stable:predict", {"inputs": [1.0]})
    assert (await client.get("/v1/models/multi_io/metadata")).status == 200
    assert (await client.get("/v1/models/half_plus_two")).status == 200
    assert (await client.get("/v1/models/half_plus_two/versions/1")).status == 200
    assert await tfserving_request_counts(client) == {
        ("predict", "half_plus_two", "2", "200"): 2.0,
        ("predict", "half_plus_two", "1", "200"): 1.0,
        ("metadata", "multi_io", "1", "200"): 1.0,
        ("status", "half_plus_two", "", "200"): 1.0,
        ("status", "half_plus_two", "1", "200"): 1.0,
    }


async def test_metrics_count_errors_under_their_status_code(client):
    await predict(client, HPT, {"instances": ["x"]}, 400)
    await error(client, "POST", "/v1/models/nosuch:predict", 404, {"instances": [1.0]})
    await error(client, "GET", "/v1/models/half_plus_two:predict", 405)
    assert await tfserving_request_counts(client) == {
        ("predict", "half_plus_two", "2", "400"): 1.0,
        ("predict", "", "", "404"): 1.0,
        ("status", "", "", "405"): 1.0,  # the GET route there does not exist
    }


@pytest.mark.parametrize(
    "path", ["/v1/models/half_plus_two:predict", "/v1/models/half_plus_two/labels/stable:predict"]
)
async def test_predict_resolves_the_version_once(aiohttp_client, make_config, path):
    app = create_app(make_config())
    client = await aiohttp_client(app)
    manager = app[MANAGER]
    calls = []
    resolve = manager.resolve
    manager.resolve = lambda *args: calls.append(args) or resolve(*args)
    doc = await predict(client, path, {"instances": [1.0]})
    assert doc == {"predictions": [2.5 if "stable" in path else 3.5]}
    assert len(calls) == 1  # the version parsed against is the version run
