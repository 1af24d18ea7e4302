"""The official Triton HTTP client (``tritonclient[http]``) against a real flowserve server."""

import asyncio
import threading

import numpy as np
import pytest
from aiohttp import web

from service.app import create_app
from service.config import ServerConfig
from tests.service import models

httpclient = pytest.importorskip("tritonclient.http")
InferenceServerException = pytest.importorskip("tritonclient.utils").InferenceServerException


class ServerThread:
    """A flowserve app on a free local port, run by its own event loop in a thread."""

    def __init__(self, config: ServerConfig):
        self.config = config
        self.port: int | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="flowserve-test", daemon=True)

    def __enter__(self) -> "ServerThread":
        self._thread.start()
        if not self._started.wait(60):
            raise RuntimeError("the server did not start within 60s")
        if self._error is not None:
            raise self._error
        return self

    def __exit__(self, *exc) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(60)

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as e:  # reported to the starting thread
            self._error = e
            self._started.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        runner = web.AppRunner(create_app(self.config))
        await runner.setup()
        try:
            await web.TCPSite(runner, "127.0.0.1", 0).start()
            self.port = runner.addresses[0][1]
            self._started.set()
            await self._stop.wait()
        finally:
            await runner.cleanup()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = models.make_repository(tmp_path_factory.mktemp("triton-repo"))
    config = ServerConfig(model_repository=str(root), poll_interval=0.0, port=0).validate()
    with ServerThread(config) as s:
        yield s


@pytest.fixture
def triton(server):
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")
    yield client
    client.close()


def make_input(name, array, datatype, binary):
    inp = httpclient.InferInput(name, list(array.shape), datatype)
    inp.set_data_from_numpy(array, binary_data=binary)
    return inp


def multi_io_inputs(binary):
    a = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32)
    b = np.array([1, -100], dtype=np.int32)
    return [make_input("a", a, "FP32", binary), make_input("b", b, "INT32", binary)]


# -----------------------------------------------------------------------------------------


def test_server_health_and_metadata(triton):
    assert triton.is_server_live()
    assert triton.is_server_ready()
    meta = triton.get_server_metadata()
    assert meta["name"] == "flowserve"
    assert "binary_tensor_data" in meta["extensions"]
    assert "model_repository" in meta["extensions"]


def test_model_ready_and_metadata(triton):
    assert triton.is_model_ready("multi_io")
    assert triton.is_model_ready("half_plus_two", "1")
    assert not triton.is_model_ready("nope")
    assert not triton.is_model_ready("half_plus_two", "9")
    meta = triton.get_model_metadata("multi_io")
    assert meta["name"] == "multi_io" and meta["versions"] == ["1"]
    assert meta["inputs"] == [
        {"name": "a", "datatype": "FP32", "shape": [-1, 3]},
        {"name": "b", "datatype": "INT32", "shape": [-1]},
    ]
    assert [o["name"] for o in meta["outputs"]] == ["doubled", "label", "total"]
    assert triton.get_model_metadata("half_plus_two", "2")["versions"] == ["1", "2"]


def test_model_config(triton):
    config = triton.get_model_config("multi_io")
    assert config["name"] == "multi_io" and config["max_batch_size"] == 0
    assert config["input"] == [
        {"name": "a", "data_type": "TYPE_FP32", "format": "FORMAT_NONE", "dims": [-1, 3]},
        {"name": "b", "data_type": "TYPE_INT32", "format": "FORMAT_NONE", "dims": [-1]},
    ]
    assert {o["name"]: o["data_type"] for o in config["output"]}["label"] == "TYPE_STRING"
    assert config["instance_group"] == [{"name": "multi_io_0", "count": 1, "kind": "KIND_CPU"}]
    with pytest.raises(InferenceServerException, match="nope"):
        triton.get_model_config("nope")


@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
def test_infer_all_outputs(triton, binary):
    # With no outputs named, tritonclient asks for every output in binary form.
    result = triton.infer("multi_io", multi_io_inputs(binary), request_id="r-7")
    response = result.get_response()
    assert response["model_name"] == "multi_io" and response["model_version"] == "1"
    assert response["id"] == "r-7"
    np.testing.assert_array_equal(result.as_numpy("total"), [7.0, -85.0])
    np.testing.assert_array_equal(result.as_numpy("doubled"), [2, -200])
    assert result.as_numpy("doubled").dtype == np.int32
    assert result.as_numpy("label").tolist() == [b"pos", b"neg"]


@pytest.mark.parametrize("binary_in", [False, True], ids=["json-in", "binary-in"])
@pytest.mark.parametrize("binary_out", [False, True], ids=["json-out", "binary-out"])
def test_infer_requested_outputs(triton, binary_in, binary_out):
    outputs = [
        httpclient.InferRequestedOutput("total", binary_data=binary_out),
        httpclient.InferRequestedOutput("label", binary_data=binary_out),
    ]
    result = triton.infer("multi_io", multi_io_inputs(binary_in), outputs=outputs)
    assert [o["name"] for o in result.get_response()["outputs"]] == ["total", "label"]
    np.testing.assert_array_equal(result.as_numpy("total"), [7.0, -85.0])
    labels = result.as_numpy("label").tolist()
    assert labels == ([b"pos", b"neg"] if binary_out else ["pos", "neg"])
    assert result.as_numpy("doubled") is None


@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
def test_infer_versions(triton, binary):
    x = np.array([1.0, 2.0, 5.0], dtype=np.float32)
    latest = triton.infer("half_plus_two", [make_input("x", x, "FP32", binary)])
    np.testing.assert_allclose(latest.as_numpy("y"), [3.5, 4.0, 5.5])
    pinned = triton.infer("half_plus_two", [make_input("x", x, "FP32", binary)], model_version="1")
    assert pinned.get_response()["model_version"] == "1"
    np.testing.assert_allclose(pinned.as_numpy("y"), [2.5, 3.0, 4.5])


def test_infer_fp16_and_uint8_binary(triton):
    a = np.array([[0.5, 1.5, 2.0]], dtype=np.float16)
    b = np.array([7], dtype=np.uint8)
    result = triton.infer(
        "multi_io", [make_input("a", a, "FP16", True), make_input("b", b, "UINT8", True)]
    )
    np.testing.assert_array_equal(result.as_numpy("total"), [11.0])


@pytest.mark.parametrize("binary_in", [False, True], ids=["json-in", "binary-in"])
@pytest.mark.parametrize("binary_out", [False, True], ids=["json-out", "binary-out"])
def test_bytes_tensors(triton, binary_in, binary_out):
    text = np.array([b"hi", "héllo".encode(), b""], dtype=np.object_)
    outputs = [httpclient.InferRequestedOutput("shouted", binary_data=binary_out)]
    result = triton.infer(
        "strings", [make_input("text", text, "BYTES", binary_in)], outputs=outputs
    )
    got = [v.encode() if isinstance(v, str) else v for v in result.as_numpy("shouted")]
    assert got == [b"hi!", "héllo!".encode(), b"!"]


def test_non_utf8_bytes_come_back_binary(triton):
    text = np.array([b"\xff\xfe"], dtype=np.object_)
    outputs = [httpclient.InferRequestedOutput("shouted", binary_data=False)]
    result = triton.infer("strings", [make_input("text", text, "BYTES", True)], outputs=outputs)
    assert result.as_numpy("shouted").tolist() == [b"\xff\xfe!"]


@pytest.mark.parametrize("algorithm", ["gzip", "deflate"])
def test_compressed_requests_and_responses(triton, algorithm):
    x = np.linspace(0, 1, 4096, dtype=np.float32)
    for binary in (False, True):
        result = triton.infer(
            "half_plus_two",
            [make_input("x", x, "FP32", binary)],
            model_version="1",
            request_compression_algorithm=algorithm,
            response_compression_algorithm=algorithm,
        )
        np.testing.assert_allclose(result.as_numpy("y"), 0.5 * x + 2.0)


def test_signature_name_parameter(triton):
    a = np.array([[1, -2, 3]], dtype=np.float32)
    result = triton.infer(
        "multi_io", [make_input("a", a, "FP32", True)], parameters={"signature_name": "negate"}
    )
    np.testing.assert_array_equal(result.as_numpy("neg"), -a)


def test_unknown_model_error(triton):
    x = np.ones(2, dtype=np.float32)
    with pytest.raises(InferenceServerException) as info:
        triton.infer("nope", [make_input("x", x, "FP32", True)])
    assert info.value.status() == "404"
    assert "'nope'" in info.value.message()
    with pytest.raises(InferenceServerException) as info:
        triton.get_model_metadata("nope")
    assert info.value.status() == "404" and "'nope'" in info.value.message()


@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
def test_wrong_shape_error(triton, binary):
    a = np.ones((2, 2), dtype=np.float32)
    b = np.ones(2, dtype=np.int32)
    with pytest.raises(InferenceServerException) as info:
        triton.infer(
            "multi_io", [make_input("a", a, "FP32", binary), make_input("b", b, "INT32", binary)]
        )
    assert info.value.status() == "400"
    assert "input 'a'" in info.value.message() and "[?, 3]" in info.value.message()


def test_wrong_datatype_and_unknown_output_errors(triton):
    x = np.array(["a"], dtype=np.object_)
    with pytest.raises(InferenceServerException) as info:
        triton.infer("half_plus_two", [make_input("x", x, "BYTES", True)])
    assert info.value.status() == "400" and "input 'x'" in info.value.message()
    x = np.ones(1, dtype=np.float32)
    with pytest.raises(InferenceServerException) as info:
        triton.infer(
            "half_plus_two",
            [make_input("x", x, "FP32", True)],
            outputs=[httpclient.InferRequestedOutput("z")],
        )
    assert info.value.status() == "400" and "unknown output(s) ['z']" in info.value.message()


def test_model_repository(triton):
    index = triton.get_model_repository_index()
    assert {"name": "strings", "version": "1", "state": "READY", "reason": ""} in index

    triton.unload_model("strings")
    assert not triton.is_model_ready("strings")
    index = {row["name"]: row for row in triton.get_model_repository_index()}
    assert index["strings"]["state"] == "UNAVAILABLE"
    text = np.array([b"a"], dtype=np.object_)
    with pytest.raises(InferenceServerException) as info:
        triton.infer("strings", [make_input("text", text, "BYTES", True)])
    assert info.value.status() == "503" and "was unloaded" in str(info.value)

    triton.load_model("strings")
    assert triton.is_model_ready("strings")
    result = triton.infer("strings", [make_input("text", text, "BYTES", True)])
    assert result.as_numpy("shouted").tolist() == [b"a!"]


def test_model_repository_errors(triton):
    with pytest.raises(InferenceServerException) as info:
        triton.load_model("nope")
    assert info.value.status() == "404" and "'nope'" in info.value.message()
    with pytest.raises(InferenceServerException) as info:
        triton.unload_model("nope")
    assert info.value.status() == "404"
    with pytest.raises(InferenceServerException) as info:
        triton.load_model("strings", config='{"name": "other"}')
    assert info.value.status() == "400" and "does not match" in info.value.message()
