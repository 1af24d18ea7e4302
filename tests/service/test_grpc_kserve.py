"""KServe V2 over gRPC, driven by Triton's own client (``tritonclient.grpc``: sync, aio and
streaming) and by raw calls built from our messages (typed contents, malformed requests)."""

import asyncio
import base64
import contextlib
import queue

import grpc
import numpy as np
import pytest

from service.config import ServerConfig
from service.protocols.proto import kserve_pb2 as pb
from tests.service import models
from tests.service.serving import ServerThread

grpcclient = pytest.importorskip("tritonclient.grpc")
grpcaio = pytest.importorskip("tritonclient.grpc.aio")
httpclient = pytest.importorskip("tritonclient.http")
InferenceServerException = pytest.importorskip("tritonclient.utils").InferenceServerException


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = models.make_repository(tmp_path_factory.mktemp("grpc-repo"))
    models.slow(root / "slow" / "1", iterations=150_000)  # ~1 s a run
    config = ServerConfig(model_repository=str(root), poll_interval=0.0, port=0).validate()
    with ServerThread(config) as s:
        yield s


@pytest.fixture
def triton(server):
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    yield client
    client.close()


@pytest.fixture
def channel(server):
    with grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as ch:
        yield ch


def rpc(channel, method, request, response_type, **kw):
    call = channel.unary_unary(
        f"/inference.GRPCInferenceService/{method}",
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=response_type.FromString,
    )
    return call(request, **kw)


def make_input(name, array, datatype):
    inp = grpcclient.InferInput(name, list(array.shape), datatype)
    inp.set_data_from_numpy(array)
    return inp


def multi_io_inputs():
    a = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32)
    b = np.array([1, -100], dtype=np.int32)
    return [make_input("a", a, "FP32"), make_input("b", b, "INT32")]


# -- health, metadata, configuration ----------------------------------------------------------


def test_health_and_server_metadata(triton):
    assert triton.is_server_live()
    assert triton.is_server_ready()
    meta = triton.get_server_metadata(as_json=True)
    assert meta["name"] == "flowserve"
    assert {"binary_tensor_data", "model_repository", "system_shared_memory"} <= set(
        meta["extensions"]
    )


def test_model_ready_and_metadata(triton):
    assert triton.is_model_ready("multi_io")
    assert triton.is_model_ready("half_plus_two", "1")
    assert not triton.is_model_ready("nope")
    assert not triton.is_model_ready("half_plus_two", "9")
    meta = triton.get_model_metadata("multi_io", as_json=True)
    assert meta["name"] == "multi_io" and meta["versions"] == ["1"]
    assert meta["platform"] == "flowserve"
    assert meta["inputs"] == [
        {"name": "a", "datatype": "FP32", "shape": ["-1", "3"]},
        {"name": "b", "datatype": "INT32", "shape": ["-1"]},
    ]
    assert [o["name"] for o in meta["outputs"]] == ["doubled", "label", "total"]


def test_model_config_matches_rest(triton, server):
    config = triton.get_model_config("multi_io").config
    assert config.name == "multi_io" and config.max_batch_size == 0
    assert [(i.name, i.data_type, list(i.dims)) for i in config.input] == [
        ("a", 11, [-1, 3]),  # TYPE_FP32
        ("b", 8, [-1]),  # TYPE_INT32
    ]
    assert {o.name: o.data_type for o in config.output}["label"] == 13  # TYPE_STRING
    assert [(g.name, g.count, g.kind) for g in config.instance_group] == [("multi_io_0", 1, 2)]
    rest = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    try:
        rest_config = rest.get_model_config("multi_io")
    finally:
        rest.close()
    grpc_config = triton.get_model_config("multi_io", as_json=True)["config"]
    for key in ("name", "platform", "input", "output"):
        got = grpc_config[key]
        if key in ("input", "output"):  # protobuf JSON writes int64 dims as strings
            got = [{**t, "dims": [int(d) for d in t["dims"]]} for t in got]
            if key == "input":  # and leaves out enum defaults (FORMAT_NONE)
                got = [{**t, "format": t.get("format", "FORMAT_NONE")} for t in got]
        assert got == rest_config[key]


# -- inference --------------------------------------------------------------------------------


def test_infer_raw_all_outputs(triton):
    result = triton.infer("multi_io", multi_io_inputs(), request_id="r-7")
    response = result.get_response()
    assert response.model_name == "multi_io" and response.model_version == "1"
    assert response.id == "r-7"
    np.testing.assert_array_equal(result.as_numpy("total"), [7.0, -85.0])
    assert result.as_numpy("doubled").dtype == np.int32
    np.testing.assert_array_equal(result.as_numpy("doubled"), [2, -200])
    assert result.as_numpy("label").tolist() == [b"pos", b"neg"]


def test_infer_requested_outputs_version_and_signature(triton):
    outputs = [grpcclient.InferRequestedOutput("label"), grpcclient.InferRequestedOutput("total")]
    result = triton.infer("multi_io", multi_io_inputs(), outputs=outputs)
    assert [o.name for o in result.get_response().outputs] == ["label", "total"]
    assert result.as_numpy("doubled") is None
    x = np.array([1.0, 2.0, 5.0], dtype=np.float32)
    pinned = triton.infer("half_plus_two", [make_input("x", x, "FP32")], model_version="1")
    np.testing.assert_allclose(pinned.as_numpy("y"), [2.5, 3.0, 4.5])
    latest = triton.infer("half_plus_two", [make_input("x", x, "FP32")])
    assert latest.get_response().model_version == "2"
    a = np.array([[1, -2, 3]], dtype=np.float32)
    negated = triton.infer(
        "multi_io", [make_input("a", a, "FP32")], parameters={"signature_name": "negate"}
    )
    np.testing.assert_array_equal(negated.as_numpy("neg"), -a)


def test_infer_fp16_uint8_and_bytes(triton):
    a = np.array([[0.5, 1.5, 2.0]], dtype=np.float16)
    b = np.array([7], dtype=np.uint8)
    result = triton.infer("multi_io", [make_input("a", a, "FP16"), make_input("b", b, "UINT8")])
    np.testing.assert_array_equal(result.as_numpy("total"), [11.0])
    text = np.array([b"hi", "héllo".encode(), b"\xff"], dtype=np.object_)
    result = triton.infer("strings", [make_input("text", text, "BYTES")])
    assert result.as_numpy("shouted").tolist() == [b"hi!", "héllo!".encode(), b"\xff!"]


def test_grpc_and_rest_give_byte_identical_tensors(triton, server):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 3)).astype(np.float32)
    b = rng.integers(-1000, 1000, 5).astype(np.int32)
    over_grpc = triton.infer("multi_io", [make_input("a", a, "FP32"), make_input("b", b, "INT32")])
    rest = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    try:
        inputs = []
        for name, arr, dt in (("a", a, "FP32"), ("b", b, "INT32")):
            inp = httpclient.InferInput(name, list(arr.shape), dt)
            inp.set_data_from_numpy(arr, binary_data=True)
            inputs.append(inp)
        over_rest = rest.infer("multi_io", inputs)
    finally:
        rest.close()
    for name in ("total", "doubled", "label"):
        g, r = over_grpc.as_numpy(name), over_rest.as_numpy(name)
        assert g.dtype == r.dtype and g.shape == r.shape
        assert g.tobytes() == r.tobytes() if g.dtype != object else g.tolist() == r.tolist()


def test_typed_contents(channel):
    request = pb.ModelInferRequest(model_name="multi_io", id="typed")
    a = request.inputs.add(name="a", datatype="FP32", shape=[2, 3])
    a.contents.fp32_contents.extend([1, 2, 3, 4, 5, 6])
    b = request.inputs.add(name="b", datatype="INT32", shape=[2])
    b.contents.int_contents.extend([1, -100])
    response = rpc(channel, "ModelInfer", request, pb.ModelInferResponse)
    assert response.id == "typed"
    outputs = {o.name: (o, raw) for o, raw in zip(response.outputs, response.raw_output_contents)}
    total, raw = outputs["total"]
    assert total.datatype == "FP32" and list(total.shape) == [2]
    np.testing.assert_array_equal(np.frombuffer(raw, "<f4"), [7.0, -85.0])

    strings = pb.ModelInferRequest(model_name="strings")
    t = strings.inputs.add(name="text", datatype="BYTES", shape=[2])
    t.contents.bytes_contents.extend([b"x", b"yz"])
    response = rpc(channel, "ModelInfer", strings, pb.ModelInferResponse)
    assert response.raw_output_contents[0] == b"\x02\x00\x00\x00x!\x03\x00\x00\x00yz!"


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda r: r.inputs[0].contents.fp32_contents.pop(), "holds 6 element(s)"),
        (lambda r: setattr(r.inputs[1], "datatype", "BF16"), "BF16 is not supported"),
        (lambda r: r.inputs[1].contents.int64_contents.append(1), "not int64_contents"),
        (lambda r: r.raw_input_contents.append(b"\0" * 24), "typed contents"),
        (
            lambda r: r.inputs[1].contents.int_contents.__setitem__(0, 1 << 30),
            "out of range for INT8",
        ),
        (
            lambda r: r.parameters["sequence_id"].MergeFrom(pb.InferParameter(int64_param=5)),
            "sequence batching is not supported",
        ),
        (lambda r: r.parameters["timeout"].MergeFrom(pb.InferParameter(int64_param=-1)), "micro"),
    ],
)
def test_typed_contents_errors(channel, mutate, expected):
    request = pb.ModelInferRequest(model_name="multi_io")
    a = request.inputs.add(name="a", datatype="FP32", shape=[2, 3])
    a.contents.fp32_contents.extend([1, 2, 3, 4, 5, 6])
    b = request.inputs.add(name="b", datatype="INT8", shape=[2])
    b.contents.int_contents.extend([1, -100])
    response = rpc(channel, "ModelInfer", request, pb.ModelInferResponse)  # valid as built
    assert response.outputs[0].name == "doubled"
    assert response.raw_output_contents[0] == np.array([2, -200], "<i4").tobytes()
    mutate(request)
    with pytest.raises(grpc.RpcError) as info:
        rpc(channel, "ModelInfer", request, pb.ModelInferResponse)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert expected in info.value.details()


def test_raw_contents_count_and_size_are_checked(channel):
    request = pb.ModelInferRequest(model_name="half_plus_two")
    request.inputs.add(name="x", datatype="FP32", shape=[3])
    request.raw_input_contents.append(b"\0" * 8)
    with pytest.raises(grpc.RpcError) as info:
        rpc(channel, "ModelInfer", request, pb.ModelInferResponse)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "8 bytes of binary data" in info.value.details()
    request.raw_input_contents[0] = b"\0" * 12
    request.raw_input_contents.append(b"")
    with pytest.raises(grpc.RpcError) as info:
        rpc(channel, "ModelInfer", request, pb.ModelInferResponse)
    assert "2 raw_input_contents entries" in info.value.details()


# -- errors -----------------------------------------------------------------------------------


def test_unknown_model_errors_read_as_triton(triton):
    x = np.ones(2, dtype=np.float32)
    for call in (
        lambda: triton.infer("nope", [make_input("x", x, "FP32")]),
        lambda: triton.get_model_metadata("nope"),
        lambda: triton.get_model_config("nope"),
    ):
        with pytest.raises(InferenceServerException) as info:
            call()
        assert info.value.status() == "StatusCode.NOT_FOUND"
        assert info.value.message() == "Request for unknown model: 'nope' is not found"
    with pytest.raises(InferenceServerException) as info:
        triton.infer("half_plus_two", [make_input("x", x, "FP32")], model_version="9")
    assert (
        info.value.message() == "Request for unknown model: 'half_plus_two' version 9 is not found"
    )


def test_invalid_input_is_invalid_argument(triton):
    a = np.ones((2, 2), dtype=np.float32)
    b = np.ones(2, dtype=np.int32)
    with pytest.raises(InferenceServerException) as info:
        triton.infer("multi_io", [make_input("a", a, "FP32"), make_input("b", b, "INT32")])
    assert info.value.status() == "StatusCode.INVALID_ARGUMENT"
    assert "input 'a'" in info.value.message() and "[?, 3]" in info.value.message()
    with pytest.raises(InferenceServerException) as info:
        triton.infer(
            "half_plus_two",
            [make_input("x", np.ones(1, np.float32), "FP32")],
            outputs=[grpcclient.InferRequestedOutput("z")],
        )
    assert info.value.status() == "StatusCode.INVALID_ARGUMENT"
    assert "unknown output(s) ['z']" in info.value.message()


def test_deadlines(triton):
    x = np.ones(2, dtype=np.float32)
    # Triton's timeout parameter is in microseconds: 50 ms here, on a model that runs seconds.
    with pytest.raises(InferenceServerException) as info:
        triton.infer("slow", [make_input("x", x, "FP32")], timeout=50_000)
    assert info.value.status() == "StatusCode.DEADLINE_EXCEEDED"
    with pytest.raises(InferenceServerException) as info:
        triton.infer("slow", [make_input("x", x, "FP32")], client_timeout=0.05)
    assert info.value.status() == "StatusCode.DEADLINE_EXCEEDED"


def test_message_size_limit(server):
    config = server.config
    big = np.zeros(config.grpc_max_message_bytes // 4 + 16, dtype=np.float32)
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    try:
        with pytest.raises(InferenceServerException) as info:
            client.infer("half_plus_two", [make_input("x", big, "FP32")])
    finally:
        client.close()
    assert info.value.status() == "StatusCode.RESOURCE_EXHAUSTED"


# -- streaming and asyncio clients ------------------------------------------------------------


def test_stream_infer_in_order_with_errors(triton):
    results: queue.Queue = queue.Queue()
    triton.start_stream(callback=lambda result, error: results.put((result, error)))
    try:
        for i in range(6):
            x = np.full(3, i, dtype=np.float32)
            name = "nope" if i == 3 else "half_plus_two"
            triton.async_stream_infer(
                name, [make_input("x", x, "FP32")], request_id=str(i), model_version="1"
            )
        got = [results.get(timeout=30) for _ in range(6)]
    finally:
        triton.stop_stream()
    for i, (result, error) in enumerate(got):
        if i == 3:
            assert result is None and "unknown model: 'nope'" in str(error)
            continue
        assert error is None
        assert result.get_response().id == str(i)
        np.testing.assert_allclose(result.as_numpy("y"), np.full(3, 0.5 * i + 2.0))


def test_aio_client(server):
    async def main():
        client = grpcaio.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
        try:
            assert await client.is_server_ready()
            x = np.array([2.0, 4.0], dtype=np.float32)
            results = await asyncio.gather(
                *(client.infer("half_plus_two", [make_input("x", x * k, "FP32")]) for k in range(8))
            )
            for k, result in enumerate(results):
                np.testing.assert_allclose(result.as_numpy("y"), 0.5 * x * k + 3.0)

            async def requests():
                for k in range(3):
                    yield {
                        "model_name": "half_plus_two",
                        "inputs": [make_input("x", x + k, "FP32")],
                        "request_id": f"s{k}",
                    }

            ids = []
            async for result, error in client.stream_infer(requests()):
                assert error is None
                ids.append(result.get_response().id)
                if len(ids) == 3:
                    break
            assert ids == ["s0", "s1", "s2"]
        finally:
            await client.close()

    asyncio.run(main())


# -- repository -------------------------------------------------------------------------------


def test_repository_index_load_unload(triton):
    index = triton.get_model_repository_index(as_json=True)["models"]
    assert {"name": "strings", "version": "1", "state": "READY"} in index
    triton.unload_model("strings")
    try:
        assert not triton.is_model_ready("strings")
        states = {
            m["name"]: m["state"] for m in triton.get_model_repository_index(as_json=True)["models"]
        }
        assert states["strings"] == "UNAVAILABLE"
        with pytest.raises(InferenceServerException) as info:
            triton.infer("strings", [make_input("text", np.array([b"a"], object), "BYTES")])
        assert info.value.status() == "StatusCode.UNAVAILABLE"
    finally:
        triton.load_model("strings")
    assert triton.is_model_ready("strings")
    with pytest.raises(InferenceServerException) as info:
        triton.load_model("nope")
    assert info.value.status() == "StatusCode.NOT_FOUND"


def test_cuda_shared_memory_is_refused(triton):
    with pytest.raises(InferenceServerException) as info:
        triton.register_cuda_shared_memory("r", base64.b64encode(b"handle"), 0, 64)
    assert info.value.status() == "StatusCode.INVALID_ARGUMENT"
    assert "CUDA shared memory is not supported" in info.value.message()


# -- auth -------------------------------------------------------------------------------------


def test_bearer_token_from_metadata(tmp_path):
    models.half_plus_two(tmp_path / "m" / "1")
    config = ServerConfig(
        model_repository=str(tmp_path), poll_interval=0.0, port=0, auth_token="s3cret"
    ).validate()
    with ServerThread(config) as s:
        client = grpcclient.InferenceServerClient(f"127.0.0.1:{s.grpc_port}")
        try:
            with pytest.raises(InferenceServerException) as info:
                client.get_server_metadata()
            assert info.value.status() == "StatusCode.UNAUTHENTICATED"
            with pytest.raises(InferenceServerException) as info:
                client.is_model_ready("m", headers={"authorization": "Bearer wrong"})
            assert info.value.status() == "StatusCode.UNAUTHENTICATED"
            good = {"authorization": "Bearer s3cret"}
            x = np.ones(2, np.float32)
            result = client.infer("m", [make_input("x", x, "FP32")], headers=good)
            np.testing.assert_allclose(result.as_numpy("y"), [2.5, 2.5])
            results: queue.Queue = queue.Queue()
            client.start_stream(
                callback=lambda result, error: results.put((result, error)), headers={}
            )
            # The server refuses the stream at once, so sending may already see it closed.
            with contextlib.suppress(InferenceServerException):
                client.async_stream_infer("m", [make_input("x", x, "FP32")])
            _, error = results.get(timeout=30)
            assert "bearer token" in str(error)
            with contextlib.suppress(InferenceServerException):  # the stream is closed
                client.stop_stream()
        finally:
            client.close()


def test_grpc_requests_are_in_the_shared_metrics(triton, server):
    import urllib.request

    x = np.ones(2, dtype=np.float32)
    triton.infer("half_plus_two", [make_input("x", x, "FP32")], model_version="1")
    with pytest.raises(InferenceServerException):
        triton.infer("nope", [make_input("x", x, "FP32")])
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics") as r:
        text = r.read().decode()
    assert (
        'flowserve_requests_total{code="200",endpoint="infer",model="half_plus_two",'
        'protocol="grpc",version="1"}' in text
    )
    # A name the repository does not know is not a label (it would grow without bound).
    assert 'code="404",endpoint="infer",model="",protocol="grpc"' in text
    assert 'model="nope"' not in text


def test_server_options():
    from service.protocols.grpc_server import server_options

    config = ServerConfig(grpc_max_message_bytes=1 << 20, grpc_keepalive_seconds=30)
    options = dict(server_options(config))
    assert options["grpc.max_receive_message_length"] == 1 << 20
    assert options["grpc.max_send_message_length"] == 1 << 20
    assert options["grpc.keepalive_time_ms"] == 30_000
    assert options["grpc.keepalive_timeout_ms"] == 20_000
    assert "grpc.keepalive_time_ms" not in dict(server_options(ServerConfig()))
