"""KServe V2 / Open Inference Protocol adapter, end to end over HTTP (aiohttp test client)."""

import gzip
import json
import shutil
import struct
import zlib

import msgpack
import numpy as np
import pytest

from service.app import create_app
from service.manager import ModelManager
from tests.service import models

# -----------------------------------------------------------------------------------------
# helpers
# -----------------------------------------------------------------------------------------


def tensor(name, datatype, shape, data):
    return {"name": name, "datatype": datatype, "shape": shape, "data": data}


def multi_io_inputs(a=(1, 2, 3, 4, 5, 6), b=(1, -100)):
    return [tensor("a", "FP32", [2, 3], list(a)), tensor("b", "INT32", [2], list(b))]


def pack_bytes(values):
    return b"".join(struct.pack("<I", len(v)) + v for v in values)


def unpack_bytes(raw):
    out, offset = [], 0
    while offset < len(raw):
        (n,) = struct.unpack_from("<I", raw, offset)
        out.append(raw[offset + 4 : offset + 4 + n])
        offset += 4 + n
    return out


def binary_request(doc, buffers):
    """A binary-extension body: the JSON header, then the raw buffers."""
    header = json.dumps(doc).encode()
    return header + b"".join(buffers), {"Inference-Header-Content-Length": str(len(header))}


def split_binary_response(body, header_length):
    """The response's JSON header and {output name: raw bytes}."""
    doc = json.loads(body[:header_length])
    raw, offset = {}, header_length
    for out in doc["outputs"]:
        size = out.get("parameters", {}).get("binary_data_size")
        if size is not None:
            raw[out["name"]] = body[offset : offset + size]
            offset += size
    assert offset == len(body)
    return doc, raw


def outputs_by_name(doc):
    return {o["name"]: o for o in doc["outputs"]}


async def post_infer(client, model, doc, status=200, version=None, **kwargs):
    path = f"/v2/models/{model}" + (f"/versions/{version}" if version else "") + "/infer"
    resp = await client.post(path, json=doc, **kwargs)
    body = await resp.json()
    assert resp.status == status, body
    return body


async def expect_error(resp, status, *fragments):
    body = await resp.json()
    assert resp.status == status, body
    assert set(body) == {"error"}, body
    for fragment in fragments:
        assert fragment in body["error"], body["error"]
    return body["error"]


@pytest.fixture
def repo_copy(repository, tmp_path):
    """A private copy of the shared repository, for tests that change what is loaded."""
    root = tmp_path / "repo"
    shutil.copytree(repository, root)
    return root


@pytest.fixture
async def private_client(aiohttp_client, make_config, repo_copy):
    return await aiohttp_client(create_app(make_config(model_repository=str(repo_copy))))


# -----------------------------------------------------------------------------------------
# health and metadata
# -----------------------------------------------------------------------------------------


async def test_health_live_and_ready(client):
    resp = await client.get("/v2/health/live")
    assert resp.status == 200 and await resp.json() == {"live": True}
    resp = await client.get("/v2/health/ready")
    assert resp.status == 200 and await resp.json() == {"ready": True}


async def test_health_ready_is_503_until_the_manager_is_ready(aiohttp_client, make_config):
    class NeverReady(ModelManager):
        @property
        def ready(self):
            return False

    config = make_config()
    client = await aiohttp_client(create_app(config, NeverReady(config)))
    resp = await client.get("/v2/health/ready")
    doc = await resp.json()
    assert resp.status == 503 and doc["ready"] is False and "waiting_for" in doc
    assert (await client.get("/v2/health/live")).status == 200


async def test_health_is_open_but_the_rest_needs_the_token(aiohttp_client, make_config):
    client = await aiohttp_client(create_app(make_config(auth_token="s3cret")))
    assert (await client.get("/v2/health/live")).status == 200
    assert (await client.get("/v2/health/ready")).status == 200
    await expect_error(await client.get("/v2"), 401, "bearer token")
    resp = await client.get("/v2", headers={"Authorization": "Bearer s3cret"})
    assert resp.status == 200


async def test_server_metadata(client):
    resp = await client.get("/v2")
    assert resp.status == 200
    doc = await resp.json()
    assert doc["name"] == "flowserve"
    assert isinstance(doc["version"], str) and doc["version"]
    assert {"binary_tensor_data", "model_repository"} <= set(doc["extensions"])


async def test_model_metadata(client):
    resp = await client.get("/v2/models/multi_io")
    assert resp.status == 200
    assert await resp.json() == {
        "name": "multi_io",
        "versions": ["1"],
        "platform": "flowserve",
        "inputs": [
            {"name": "a", "datatype": "FP32", "shape": [-1, 3]},
            {"name": "b", "datatype": "INT32", "shape": [-1]},
        ],
        "outputs": [
            {"name": "doubled", "datatype": "INT32", "shape": [-1]},
            {"name": "label", "datatype": "BYTES", "shape": [-1]},
            {"name": "total", "datatype": "FP32", "shape": [-1]},
        ],
    }


async def test_model_metadata_versions_and_strings(client):
    for path in ("/v2/models/half_plus_two", "/v2/models/half_plus_two/versions/1"):
        doc = await (await client.get(path)).json()
        assert doc["versions"] == ["1", "2"]
        assert doc["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1]}]
    doc = await (await client.get("/v2/models/strings")).json()
    assert doc["inputs"] == [{"name": "text", "datatype": "BYTES", "shape": [-1]}]
    assert doc["outputs"] == [{"name": "shouted", "datatype": "BYTES", "shape": [-1]}]


@pytest.mark.parametrize(
    "path,fragment",
    [
        ("/v2/models/nope", "'nope'"),
        ("/v2/models/half_plus_two/versions/7", "version 7"),
        ("/v2/models/half_plus_two/versions/abc", "'abc'"),
        ("/v2/models/half_plus_two/versions/0", "'0'"),
    ],
)
async def test_model_metadata_not_found(client, path, fragment):
    await expect_error(await client.get(path), 404, fragment)


async def test_model_ready(client):
    for path in ("/v2/models/multi_io/ready", "/v2/models/half_plus_two/versions/1/ready"):
        resp = await client.get(path)
        assert resp.status == 200
        assert (await resp.json())["ready"] is True
    assert (await (await client.get("/v2/models/strings/ready")).json()) == {
        "name": "strings",
        "ready": True,
    }
    await expect_error(await client.get("/v2/models/nope/ready"), 404, "nope")
    await expect_error(
        await client.get("/v2/models/half_plus_two/versions/9/ready"), 404, "version 9"
    )


async def test_model_ready_503_for_a_model_that_failed_to_load(
    aiohttp_client, make_config, tmp_path
):
    models.broken(tmp_path / "bad" / "1")
    client = await aiohttp_client(create_app(make_config(model_repository=str(tmp_path))))
    resp = await client.get("/v2/models/bad/ready")
    assert resp.status == 503
    doc = await resp.json()
    assert doc["name"] == "bad" and doc["ready"] is False and "no available" in doc["error"]
    resp = await client.get("/v2/models/bad/versions/1/ready")
    assert resp.status == 503 and "saved_model.msgpack" in (await resp.json())["error"]
    await expect_error(await client.get("/v2/models/bad"), 503, "no available version")


# -----------------------------------------------------------------------------------------
# inference: JSON
# -----------------------------------------------------------------------------------------


async def test_infer_half_plus_two_latest_and_pinned(client):
    doc = {"id": "req-1", "inputs": [tensor("x", "FP32", [3], [1.0, 2.0, 5.0])]}
    body = await post_infer(client, "half_plus_two", doc)
    assert body == {
        "model_name": "half_plus_two",
        "model_version": "2",
        "id": "req-1",
        "outputs": [{"name": "y", "datatype": "FP32", "shape": [3], "data": [3.5, 4.0, 5.5]}],
    }
    body = await post_infer(client, "half_plus_two", doc, version="1")
    assert body["model_version"] == "1"
    assert body["outputs"][0]["data"] == [2.5, 3.0, 4.5]


async def test_infer_multi_io_every_output(client):
    body = await post_infer(client, "multi_io", {"inputs": multi_io_inputs()})
    assert len(body["id"]) == 32  # no id sent: the generated request ID (X-Request-ID)
    assert body["model_version"] == "1"
    assert body["outputs"] == [
        {"name": "doubled", "datatype": "INT32", "shape": [2], "data": [2, -200]},
        {"name": "label", "datatype": "BYTES", "shape": [2], "data": ["pos", "neg"]},
        {"name": "total", "datatype": "FP32", "shape": [2], "data": [7.0, -85.0]},
    ]


async def test_infer_nested_data_and_wider_datatypes(client):
    inputs = [
        tensor("a", "FP64", [2, 3], [[1, 2, 3], [4, 5, 6]]),
        tensor("b", "INT64", [2], [1, 2]),
    ]
    body = await post_infer(client, "multi_io", {"inputs": inputs})
    assert outputs_by_name(body)["total"]["data"] == [7.0, 17.0]
    assert outputs_by_name(body)["doubled"]["data"] == [2, 4]


async def test_infer_strings_model(client):
    doc = {"inputs": [tensor("text", "BYTES", [2], ["hi", "héllo"])]}
    body = await post_infer(client, "strings", doc)
    assert body["outputs"] == [
        {"name": "shouted", "datatype": "BYTES", "shape": [2], "data": ["hi!", "héllo!"]}
    ]


async def test_infer_empty_batch(client):
    doc = {"inputs": [tensor("x", "FP32", [0], [])]}
    body = await post_infer(client, "half_plus_two", doc)
    assert body["outputs"][0]["shape"] == [0] and body["outputs"][0]["data"] == []


async def test_requested_outputs(client):
    doc = {"inputs": multi_io_inputs(), "outputs": [{"name": "doubled"}, {"name": "total"}]}
    body = await post_infer(client, "multi_io", doc)
    assert [o["name"] for o in body["outputs"]] == ["doubled", "total"]
    assert body["outputs"][0]["data"] == [2, -200]


async def test_signature_name_parameter(client):
    doc = {
        "inputs": [tensor("a", "FP32", [1, 3], [1, -2, 3])],
        "parameters": {"signature_name": "negate"},
    }
    body = await post_infer(client, "multi_io", doc)
    assert body["outputs"] == [
        {"name": "neg", "datatype": "FP32", "shape": [1, 3], "data": [-1.0, 2.0, -3.0]}
    ]


async def test_infer_records_v2_metrics(client):
    await post_infer(
        client, "half_plus_two", {"inputs": [tensor("x", "FP32", [1], [1])]}, version="1"
    )
    text = await (await client.get("/metrics")).text()
    assert (
        'flowserve_requests_total{code="200",endpoint="infer",model="half_plus_two",'
        'protocol="v2",version="1"}'
    ) in text


# -----------------------------------------------------------------------------------------
# inference: binary tensor data extension
# -----------------------------------------------------------------------------------------


async def test_binary_inputs_and_outputs(client):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([10, -20], dtype=np.int32)
    doc = {
        "inputs": [
            {
                "name": "a",
                "datatype": "FP32",
                "shape": [2, 3],
                "parameters": {"binary_data_size": a.nbytes},
            },
            {
                "name": "b",
                "datatype": "INT32",
                "shape": [2],
                "parameters": {"binary_data_size": b.nbytes},
            },
        ],
        "outputs": [
            {"name": "total", "parameters": {"binary_data": True}},
            {"name": "doubled", "parameters": {"binary_data": False}},
            {"name": "label", "parameters": {"binary_data": True}},
        ],
    }
    body, headers = binary_request(doc, [a.tobytes(), b.tobytes()])
    resp = await client.post("/v2/models/multi_io/infer", data=body, headers=headers)
    assert resp.status == 200
    assert resp.content_type == "application/octet-stream"
    raw_body = await resp.read()
    header, raw = split_binary_response(
        raw_body, int(resp.headers["Inference-Header-Content-Length"])
    )
    outs = outputs_by_name(header)
    assert outs["total"]["parameters"] == {"binary_data_size": 8}
    assert "data" not in outs["total"]
    np.testing.assert_array_equal(np.frombuffer(raw["total"], "<f4"), [13.0, -8.0])
    assert outs["doubled"]["data"] == [20, -40] and "parameters" not in outs["doubled"]
    assert unpack_bytes(raw["label"]) == [b"pos", b"neg"]
    assert outs["label"]["parameters"]["binary_data_size"] == len(pack_bytes([b"pos", b"neg"]))


async def test_binary_data_output_parameter_and_mixed_inputs(client):
    a = np.ones((1, 3), dtype=np.float32)
    doc = {
        "inputs": [
            {
                "name": "a",
                "datatype": "FP32",
                "shape": [1, 3],
                "parameters": {"binary_data_size": 12},
            },
            tensor("b", "INT32", [1], [4]),
        ],
        "parameters": {"binary_data_output": True},
    }
    body, headers = binary_request(doc, [a.tobytes()])
    resp = await client.post("/v2/models/multi_io/infer", data=body, headers=headers)
    assert resp.status == 200
    header, raw = split_binary_response(
        await resp.read(), int(resp.headers["Inference-Header-Content-Length"])
    )
    assert set(raw) == {"doubled", "label", "total"}
    np.testing.assert_array_equal(np.frombuffer(raw["doubled"], "<i4"), [8])
    np.testing.assert_array_equal(np.frombuffer(raw["total"], "<f4"), [7.0])


async def test_binary_other_datatypes(client):
    # FP16 and UINT8 only arrive in binary form here; both cast safely to the model's dtypes.
    a = np.array([[0.5, 1.5, 2.0]], dtype="<f2")
    b = np.array([7], dtype=np.uint8)
    doc = {
        "inputs": [
            {
                "name": "a",
                "datatype": "FP16",
                "shape": [1, 3],
                "parameters": {"binary_data_size": a.nbytes},
            },
            {"name": "b", "datatype": "UINT8", "shape": [1], "parameters": {"binary_data_size": 1}},
        ],
        "outputs": [{"name": "total"}],
    }
    body, headers = binary_request(doc, [a.tobytes(), b.tobytes()])
    resp = await client.post("/v2/models/multi_io/infer", data=body, headers=headers)
    assert resp.status == 200
    assert (await resp.json())["outputs"][0]["data"] == [11.0]


async def test_binary_bytes_input_and_output(client):
    values = [b"abc", b"", "é".encode()]
    raw_in = pack_bytes(values)
    doc = {
        "inputs": [
            {
                "name": "text",
                "datatype": "BYTES",
                "shape": [3],
                "parameters": {"binary_data_size": len(raw_in)},
            }
        ],
        "outputs": [{"name": "shouted", "parameters": {"binary_data": True}}],
    }
    body, headers = binary_request(doc, [raw_in])
    resp = await client.post("/v2/models/strings/infer", data=body, headers=headers)
    assert resp.status == 200
    header, raw = split_binary_response(
        await resp.read(), int(resp.headers["Inference-Header-Content-Length"])
    )
    assert header["outputs"][0]["shape"] == [3]
    assert unpack_bytes(raw["shouted"]) == [b"abc!", b"!", "é!".encode()]


async def test_non_utf8_bytes_output_falls_back_to_binary(client):
    raw_in = pack_bytes([b"\xff\xfe", b"ok"])
    doc = {
        "inputs": [
            {
                "name": "text",
                "datatype": "BYTES",
                "shape": [2],
                "parameters": {"binary_data_size": len(raw_in)},
            }
        ]
    }
    body, headers = binary_request(doc, [raw_in])
    resp = await client.post("/v2/models/strings/infer", data=body, headers=headers)
    assert resp.status == 200
    header, raw = split_binary_response(
        await resp.read(), int(resp.headers["Inference-Header-Content-Length"])
    )
    assert unpack_bytes(raw["shouted"]) == [b"\xff\xfe!", b"ok!"]


async def test_binary_bool_input_is_checked_against_the_model(client):
    doc = {
        "inputs": [
            {"name": "x", "datatype": "BOOL", "shape": [2], "parameters": {"binary_data_size": 2}}
        ]
    }
    body, headers = binary_request(doc, [b"\x01\x00"])
    resp = await client.post("/v2/models/half_plus_two/infer", data=body, headers=headers)
    await expect_error(resp, 400, "input 'x'", "float32", "bools")


# -----------------------------------------------------------------------------------------
# compression and msgpack
# -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("encoding,compress", [("gzip", gzip.compress), ("deflate", zlib.compress)])
async def test_compressed_requests(client, encoding, compress):
    doc = {"inputs": [tensor("x", "FP32", [4], [0, 2, 4, 6])]}
    resp = await client.post(
        "/v2/models/half_plus_two/versions/1/infer",
        data=compress(json.dumps(doc).encode()),
        headers={"Content-Encoding": encoding, "Content-Type": "application/json"},
    )
    assert resp.status == 200
    assert (await resp.json())["outputs"][0]["data"] == [2.0, 3.0, 4.0, 5.0]


async def test_compressed_binary_request(client):
    x = np.array([2, 4], dtype=np.float32)
    doc = {
        "inputs": [
            {"name": "x", "datatype": "FP32", "shape": [2], "parameters": {"binary_data_size": 8}}
        ]
    }
    body, headers = binary_request(doc, [x.tobytes()])
    resp = await client.post(
        "/v2/models/half_plus_two/versions/1/infer",
        data=gzip.compress(body),
        headers={**headers, "Content-Encoding": "gzip"},
    )
    assert resp.status == 200
    assert (await resp.json())["outputs"][0]["data"] == [3.0, 4.0]


async def test_gzip_bomb_is_413(aiohttp_client, make_config):
    client = await aiohttp_client(create_app(make_config(max_request_bytes=4096)))
    doc = {"inputs": [tensor("x", "FP32", [20000], [0.0] * 20000)]}
    packed = gzip.compress(json.dumps(doc).encode())
    assert len(packed) < 4096
    resp = await client.post(
        "/v2/models/half_plus_two/infer",
        data=packed,
        headers={"Content-Encoding": "gzip", "Content-Type": "application/json"},
    )
    await expect_error(resp, 413, "4096")


async def test_large_responses_are_compressed_when_accepted(client):
    doc = {"inputs": [tensor("x", "FP32", [2000], [1.0] * 2000)]}
    resp = await client.post(
        "/v2/models/half_plus_two/infer", json=doc, headers={"Accept-Encoding": "gzip"}
    )
    assert resp.status == 200
    assert resp.headers["Content-Encoding"] == "gzip"
    assert (await resp.json())["outputs"][0]["data"] == [3.5] * 2000
    resp = await client.post(
        "/v2/models/half_plus_two/infer", json=doc, headers={"Accept-Encoding": "identity"}
    )
    assert "Content-Encoding" not in resp.headers


async def test_msgpack_round_trip(client):
    a = np.array([[1, 2, 3], [0, 0, -1]], dtype="<f4")
    doc = {
        "id": "m1",
        "inputs": [
            {"name": "a", "datatype": "FP32", "shape": [2, 3], "data": a.tobytes()},
            {"name": "b", "datatype": "INT32", "shape": [2], "data": [5, 0]},
        ],
    }
    resp = await client.post(
        "/v2/models/multi_io/infer",
        data=msgpack.packb(doc),
        headers={"Content-Type": "application/msgpack"},
    )
    assert resp.status == 200
    assert resp.content_type == "application/msgpack"
    body = msgpack.unpackb(await resp.read())
    assert body["id"] == "m1" and body["model_version"] == "1"
    outs = outputs_by_name(body)
    np.testing.assert_array_equal(np.frombuffer(outs["total"]["data"], "<f4"), [11.0, -1.0])
    np.testing.assert_array_equal(np.frombuffer(outs["doubled"]["data"], "<i4"), [10, 0])
    assert outs["label"]["data"] == [b"pos", b"neg"]
    assert outs["label"]["shape"] == [2]


async def test_msgpack_bytes_inputs(client):
    for data in ([b"x", "y"], pack_bytes([b"x", b"y"])):
        doc = {"inputs": [{"name": "text", "datatype": "BYTES", "shape": [2], "data": data}]}
        resp = await client.post(
            "/v2/models/strings/infer",
            data=msgpack.packb(doc),
            headers={"Content-Type": "application/msgpack"},
        )
        assert resp.status == 200
        assert msgpack.unpackb(await resp.read())["outputs"][0]["data"] == [b"x!", b"y!"]


async def test_msgpack_response_to_a_json_request_when_accepted(client):
    doc = {"inputs": [tensor("x", "FP32", [2], [0, 2])]}
    resp = await client.post(
        "/v2/models/half_plus_two/versions/1/infer",
        json=doc,
        headers={"Accept": "application/msgpack"},
    )
    assert resp.content_type == "application/msgpack"
    out = msgpack.unpackb(await resp.read())["outputs"][0]
    np.testing.assert_array_equal(np.frombuffer(out["data"], "<f4"), [2.0, 3.0])


async def test_msgpack_request_with_json_accept_gets_json(client):
    doc = {"inputs": [tensor("x", "FP32", [1], [0])]}
    resp = await client.post(
        "/v2/models/half_plus_two/versions/1/infer",
        data=msgpack.packb(doc),
        headers={"Content-Type": "application/msgpack", "Accept": "application/json"},
    )
    assert resp.content_type == "application/json"
    assert (await resp.json())["outputs"][0]["data"] == [2.0]


async def test_msgpack_errors(client):
    headers = {"Content-Type": "application/msgpack"}
    resp = await client.post("/v2/models/multi_io/infer", data=b"\xc1", headers=headers)
    await expect_error(resp, 400, "msgpack")
    doc = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [2], "data": b"\x00" * 7}]}
    resp = await client.post(
        "/v2/models/half_plus_two/infer", data=msgpack.packb(doc), headers=headers
    )
    await expect_error(resp, 400, "input 'x'", "7 bytes", "takes 8")


# -----------------------------------------------------------------------------------------
# deadlines
# -----------------------------------------------------------------------------------------


@pytest.fixture
async def slow_client(aiohttp_client, make_config, tmp_path):
    models.slow(tmp_path / "slow" / "1", iterations=30_000)
    models.write_config(tmp_path / "slow", {"warmup": False})
    return await aiohttp_client(create_app(make_config(model_repository=str(tmp_path))))


async def test_timeout_parameter_504(slow_client):
    # Microseconds, as Triton's clients send it: 10 ms.
    doc = {"inputs": [tensor("x", "FP32", [1], [1])], "parameters": {"timeout": 10_000}}
    resp = await slow_client.post("/v2/models/slow/infer", json=doc)
    await expect_error(resp, 504, "deadline")


async def test_request_timeout_header_504(slow_client):
    doc = {"inputs": [tensor("x", "FP32", [1], [1])]}
    resp = await slow_client.post(
        "/v2/models/slow/infer", json=doc, headers={"Request-Timeout": "0.01"}
    )
    await expect_error(resp, 504, "deadline")
    resp = await slow_client.post(
        "/v2/models/slow/infer", json=doc, headers={"Request-Timeout": "30"}
    )
    assert resp.status == 200


@pytest.mark.parametrize(
    "parameters,headers,fragment",
    [
        ({"timeout": -1}, {}, "parameters.timeout"),
        ({"timeout": "soon"}, {}, "parameters.timeout"),
        ({"timeout": 0.5}, {}, "microseconds"),
        ({}, {"Request-Timeout": "0"}, "Request-Timeout"),
    ],
)
async def test_bad_timeouts(client, parameters, headers, fragment):
    doc = {"inputs": [tensor("x", "FP32", [1], [1])], "parameters": parameters}
    resp = await client.post("/v2/models/half_plus_two/infer", json=doc, headers=headers)
    await expect_error(resp, 400, fragment)


# -----------------------------------------------------------------------------------------
# repository extension
# -----------------------------------------------------------------------------------------


async def test_repository_index(client):
    resp = await client.post("/v2/repository/index")
    assert resp.status == 200
    assert await resp.json() == [
        {"name": "half_plus_two", "version": "1", "state": "READY", "reason": ""},
        {"name": "half_plus_two", "version": "2", "state": "READY", "reason": ""},
        {"name": "multi_io", "version": "1", "state": "READY", "reason": ""},
        {"name": "strings", "version": "1", "state": "READY", "reason": ""},
    ]
    resp = await client.post("/v2/repository/index", json={"ready": True})
    assert len(await resp.json()) == 4
    await expect_error(
        await client.post("/v2/repository/index", json={"ready": "yes"}), 400, "'ready'"
    )


async def test_repository_unload_and_load(private_client):
    client = private_client
    doc = {"inputs": [tensor("text", "BYTES", [1], ["a"])]}
    resp = await client.post(
        "/v2/repository/models/strings/unload", json={"parameters": {"unload_dependents": False}}
    )
    assert resp.status == 200
    await expect_error(
        await client.post("/v2/models/strings/infer", json=doc), 503, "'strings' was unloaded"
    )
    assert (await client.get("/v2/models/strings/ready")).status == 503
    index = await (await client.post("/v2/repository/index")).json()
    assert {"name": "strings", "version": "", "state": "UNAVAILABLE", "reason": "unloaded"} in index
    ready = await (await client.post("/v2/repository/index", json={"ready": True})).json()
    assert "strings" not in {row["name"] for row in ready}
    # Other models keep serving.
    await post_infer(client, "half_plus_two", {"inputs": [tensor("x", "FP32", [1], [0])]})

    resp = await client.post("/v2/repository/models/strings/load")
    assert resp.status == 200
    body = await post_infer(client, "strings", doc)
    assert body["outputs"][0]["data"] == ["a!"]


async def test_repository_load_picks_up_a_new_model(private_client, repo_copy):
    client = private_client
    await expect_error(await client.get("/v2/models/extra"), 404, "extra")
    models.half_plus_two(repo_copy / "extra" / "3", a=2.0, b=0.0)
    assert (await client.post("/v2/repository/models/extra/load", json={})).status == 200
    body = await post_infer(client, "extra", {"inputs": [tensor("x", "FP32", [1], [4])]})
    assert body["model_version"] == "3" and body["outputs"][0]["data"] == [8.0]


async def test_repository_load_failure_is_400_with_the_reason(private_client, repo_copy):
    models.broken(repo_copy / "bad" / "1")
    resp = await private_client.post("/v2/repository/models/bad/load")
    await expect_error(resp, 400, "failed to load 'bad'", "saved_model.msgpack")
    index = await (await private_client.post("/v2/repository/index")).json()
    row = next(r for r in index if r["name"] == "bad")
    assert row["state"] == "UNAVAILABLE" and "saved_model.msgpack" in row["reason"]


async def test_repository_errors(client):
    await expect_error(await client.post("/v2/repository/models/nope/load"), 404, "nope")
    await expect_error(await client.post("/v2/repository/models/nope/unload"), 404, "nope")
    resp = await client.post(
        "/v2/repository/models/strings/load", json={"parameters": {"file:1/model": "x"}}
    )
    await expect_error(resp, 400, "'file:1/model'", "not supported")
    resp = await client.post(
        "/v2/repository/models/strings/load",
        json={"parameters": {"config": '{"optimization": {}}'}},
    )
    await expect_error(resp, 400, "parameters.config", "optimization")
    resp = await client.post("/v2/repository/models/strings/load", data=b"[1]")
    await expect_error(resp, 400, "JSON object")
    resp = await client.post("/v2/repository/models/strings/load", data=b"{nope")
    await expect_error(resp, 400, "not valid JSON")


# -----------------------------------------------------------------------------------------
# error paths
# -----------------------------------------------------------------------------------------

_X = tensor("x", "FP32", [2], [1, 2])


@pytest.mark.parametrize(
    "doc,fragments",
    [
        ([1], ["'inputs'"]),
        ({}, ["'inputs'"]),
        ({"inputs": {"x": [1]}}, ["'inputs'"]),
        ({"inputs": [5]}, ["inputs[0]", "'name'"]),
        ({"inputs": [{"shape": [1], "datatype": "FP32", "data": [1]}]}, ["inputs[0]"]),
        ({"inputs": [_X, _X]}, ["input 'x'", "more than once"]),
        ({"inputs": [tensor("x", "FLOAT", [1], [1])]}, ["input 'x'", "'FLOAT'", "FP32"]),
        ({"inputs": [tensor("x", "BF16", [1], [1])]}, ["input 'x'", "BF16 is not supported"]),
        ({"inputs": [tensor("x", "FP32", [-1], [1])]}, ["input 'x'", "non-negative"]),
        ({"inputs": [tensor("x", "FP32", "2", [1])]}, ["input 'x'", "'shape'"]),
        ({"inputs": [tensor("x", "FP32", [3], [1, 2])]}, ["input 'x'", "3 element(s)", "has 2"]),
        ({"inputs": [tensor("x", "FP32", [2], [[1], [2, 3]])]}, ["input 'x'", "ragged"]),
        (
            {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1]}]},
            ["input 'x'", "neither 'data'"],
        ),
        ({"inputs": [tensor("x", "FP32", [1], ["a"])]}, ["input 'x'", "FP32", "strings"]),
        ({"inputs": [tensor("x", "FP32", [1], [None])]}, ["input 'x'"]),
        ({"inputs": [tensor("x", "INT32", [1], [1.5])]}, ["input 'x'", "non-integral"]),
        ({"inputs": [tensor("x", "UINT8", [1], [300])]}, ["input 'x'", "out of range"]),
        ({"inputs": [tensor("x", "BOOL", [1], [1])]}, ["input 'x'", "bools"]),
        ({"inputs": [tensor("x", "BOOL", [1], [True])]}, ["input 'x'", "float32", "bools"]),
        ({"inputs": [tensor("x", "BYTES", [1], ["1"])]}, ["input 'x'", "strings"]),
        ({"inputs": [tensor("x", "FP32", [1, 2], [1, 2])]}, ["input 'x'", "rank"]),
        ({"inputs": [tensor("y", "FP32", [1], [1])]}, ["missing input(s) ['x']", "['y']"]),
        ({"inputs": [_X, tensor("z", "FP32", [1], [1])]}, ["unknown input(s) ['z']"]),
        ({"inputs": [{**_X, "parameters": [1]}]}, ["'parameters' of input 'x'"]),
        ({"inputs": [{**_X, "parameters": {"shared_memory_region": "r"}}]}, ["shared memory"]),
        ({"inputs": [_X], "parameters": 3}, ["'parameters' of request"]),
        ({"inputs": [_X], "id": 7}, ["'id'"]),
        ({"inputs": [_X], "parameters": {"binary_data_output": 1}}, ["binary_data_output"]),
        ({"inputs": [_X], "parameters": {"signature_name": 1}}, ["signature_name"]),
        ({"inputs": [_X], "outputs": "y"}, ["'outputs'"]),
        ({"inputs": [_X], "outputs": [{"nom": "y"}]}, ["outputs[0]"]),
        ({"inputs": [_X], "outputs": [{"name": "z"}]}, ["unknown output(s) ['z']", "['y']"]),
        (
            {"inputs": [_X], "outputs": [{"name": "y", "parameters": {"binary_data": "yes"}}]},
            ["output 'y'", "binary_data"],
        ),
        (
            {"inputs": [_X], "outputs": [{"name": "y", "parameters": {"classification": 0}}]},
            ["output 'y'", "classification must be a positive integer"],
        ),
    ],
)
async def test_invalid_requests_are_400(client, doc, fragments):
    resp = await client.post("/v2/models/half_plus_two/infer", json=doc)
    await expect_error(resp, 400, *fragments)


async def test_multi_io_shape_error_names_the_input(client):
    doc = {"inputs": [tensor("a", "FP32", [2, 2], [1, 2, 3, 4]), tensor("b", "INT32", [2], [1, 2])]}
    resp = await client.post("/v2/models/multi_io/infer", json=doc)
    await expect_error(resp, 400, "input 'a'", "[?, 3]")


@pytest.mark.parametrize(
    "body,fragment",
    [
        (b"", "empty"),
        (b"{not json", "not valid JSON"),
        (b'{"inputs": "\xff"}', "UTF-8"),
        (b"[" * 100000 + b"]" * 100000, "nested too deeply"),
    ],
)
async def test_malformed_bodies_are_400(client, body, fragment):
    resp = await client.post(
        "/v2/models/half_plus_two/infer", data=body, headers={"Content-Type": "application/json"}
    )
    await expect_error(resp, 400, fragment)


def _binary_x(size, payload, datatype="FP32", shape=(2,), **extra):
    doc = {
        "inputs": [
            {
                "name": "x",
                "datatype": datatype,
                "shape": list(shape),
                "parameters": {"binary_data_size": size},
                **extra,
            }
        ]
    }
    return binary_request(doc, [payload])


@pytest.mark.parametrize(
    "body_headers,fragments",
    [
        (_binary_x(8, b"\x00" * 7), ["binary_data_size 8", "past the end"]),
        (_binary_x(4, b"\x00" * 4), ["input 'x'", "4 bytes", "takes 8"]),
        (_binary_x(8, b"\x00" * 9), ["9 bytes of binary data", "add up to 8"]),
        (_binary_x(-1, b""), ["input 'x'", "binary_data_size"]),
        (_binary_x(True, b"\x00"), ["input 'x'", "binary_data_size"]),
        (_binary_x(8, b"\x00" * 8, data=[1, 2]), ["input 'x'", "both 'data'"]),
        (_binary_x(2, b"\x02\x00", datatype="BOOL"), ["input 'x'", "0 or 1"]),
        (_binary_x(6, pack_bytes([b"ab"]), datatype="BYTES"), ["input 'x'", "2 length-prefixed"]),
        (
            _binary_x(9, pack_bytes([b"ab"]) + b"\x00" * 3, datatype="BYTES"),
            ["input 'x'", "4-byte length"],
        ),
        (
            _binary_x(6, struct.pack("<I", 9) + b"ab", datatype="BYTES", shape=(1,)),
            ["input 'x'", "declares 9 bytes"],
        ),
    ],
)
async def test_invalid_binary_requests_are_400(client, body_headers, fragments):
    body, headers = body_headers
    resp = await client.post("/v2/models/half_plus_two/infer", data=body, headers=headers)
    await expect_error(resp, 400, *fragments)


@pytest.mark.parametrize("value", ["abc", "-3", "100000", "\u00b2", ""])
async def test_bad_inference_header_length_is_400(client, value):
    resp = await client.post(
        "/v2/models/half_plus_two/infer",
        data=b'{"inputs": []}',
        headers={"Inference-Header-Content-Length": value},
    )
    await expect_error(resp, 400, "Inference-Header-Content-Length")


async def test_binary_header_must_be_json(client):
    resp = await client.post(
        "/v2/models/half_plus_two/infer",
        data=b"{bad}\x00\x00",
        headers={"Inference-Header-Content-Length": "5"},
    )
    await expect_error(resp, 400, "inference header", "not valid JSON")


async def test_not_found_and_unavailable(client):
    doc = {"inputs": [_X]}
    await expect_error(await client.post("/v2/models/nope/infer", json=doc), 404, "'nope'")
    await expect_error(
        await client.post("/v2/models/half_plus_two/versions/5/infer", json=doc), 404, "version 5"
    )
    resp = await client.post(
        "/v2/models/multi_io/infer",
        json={"inputs": multi_io_inputs(), "parameters": {"signature_name": "nope"}},
    )
    await expect_error(resp, 404, "signature 'nope'", "negate")
    await expect_error(await client.post("/v2/models/bad%2Fname/infer", json=doc), 404)


async def test_infer_on_a_model_that_failed_to_load_is_503(aiohttp_client, make_config, tmp_path):
    models.broken(tmp_path / "bad" / "1")
    client = await aiohttp_client(create_app(make_config(model_repository=str(tmp_path))))
    resp = await client.post("/v2/models/bad/infer", json={"inputs": [_X]})
    await expect_error(resp, 503, "'bad'", "no available version")
    resp = await client.post("/v2/models/bad/versions/1/infer", json={"inputs": [_X]})
    await expect_error(resp, 503, "version 1 is not available")


async def test_wrong_methods_are_405(client):
    await expect_error(await client.get("/v2/models/half_plus_two/infer"), 405)
    await expect_error(await client.get("/v2/repository/index"), 405)
    await expect_error(await client.post("/v2/models/half_plus_two"), 405)
