"""Triton's system shared memory extension, driven by tritonclient's own shared memory
utilities over HTTP and gRPC, and the region registry's bounds and confinement checks."""

import os
import uuid

import numpy as np
import pytest

from service.config import ServerConfig
from service.errors import InvalidInput, NotFound
from service.protocols.shared_memory import SharedMemoryRegistry
from tests.service import models
from tests.service.serving import ServerThread

shm = pytest.importorskip("tritonclient.utils.shared_memory")
httpclient = pytest.importorskip("tritonclient.http")
grpcclient = pytest.importorskip("tritonclient.grpc")
InferenceServerException = pytest.importorskip("tritonclient.utils").InferenceServerException

pytestmark = pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no /dev/shm")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = models.make_repository(tmp_path_factory.mktemp("shm-repo"))
    config = ServerConfig(model_repository=str(root), poll_interval=0.0, port=0).validate()
    with ServerThread(config) as s:
        yield s


@pytest.fixture
def region():
    """A 64-byte POSIX shared memory object, created as a client would."""
    key = f"/fs-test-{uuid.uuid4().hex[:12]}"
    handle = shm.create_shared_memory_region("client-side", key, 64)
    yield key, handle
    shm.destroy_shared_memory_region(handle)


def clients(server):
    return [
        ("http", httpclient, httpclient.InferenceServerClient(f"127.0.0.1:{server.port}")),
        ("grpc", grpcclient, grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")),
    ]


@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_inputs_and_outputs_through_shared_memory(server, region, transport):
    key, handle = region
    _, module, client = next(c for c in clients(server) if c[0] == transport)
    x = np.array([1.0, 2.0, 5.0, 7.0], dtype=np.float32)
    shm.set_shared_memory_region(handle, [x])  # bytes 0..16: the input
    try:
        client.register_system_shared_memory("io", key, 64)
        status = client.get_system_shared_memory_status()
        if transport == "http":
            assert status == [{"name": "io", "key": key, "offset": 0, "byte_size": 64}]
        else:
            assert status.regions["io"].key == key and status.regions["io"].byte_size == 64
        inp = module.InferInput("x", [4], "FP32")
        inp.set_shared_memory("io", 16)
        out = module.InferRequestedOutput("y")
        out.set_shared_memory("io", 16, offset=32)  # bytes 32..48: the output
        result = client.infer("half_plus_two", [inp], outputs=[out], model_version="1")
        response = result.get_output("y")  # the data is in the region, not the response
        if transport == "http":
            assert "data" not in response and "binary_data_size" not in response["parameters"]
        else:
            assert result.get_response().raw_output_contents[0] == b""
        params = response["parameters"] if transport == "http" else response.parameters
        region_name = (
            params["shared_memory_region"]
            if transport == "http"
            else params["shared_memory_region"].string_param
        )
        assert region_name == "io"
        y = shm.get_contents_as_numpy(handle, np.float32, [4], offset=32)
        np.testing.assert_allclose(y, 0.5 * x + 2.0)

        # Windows are bounds-checked against the region.
        bad = module.InferInput("x", [4], "FP32")
        bad.set_shared_memory("io", 16, offset=56)
        with pytest.raises(InferenceServerException, match="out of bounds"):
            client.infer("half_plus_two", [bad])
        small = module.InferRequestedOutput("y")
        small.set_shared_memory("io", 8)
        with pytest.raises(InferenceServerException, match="has 8"):
            client.infer("half_plus_two", [inp], outputs=[small])
    finally:
        client.unregister_system_shared_memory()
        client.close()
    # Unregistered: the region is gone from the status and from requests.
    _, module, client = next(c for c in clients(server) if c[0] == transport)
    try:
        status = client.get_system_shared_memory_status()
        assert (status == []) if transport == "http" else (len(status.regions) == 0)
        inp = module.InferInput("x", [4], "FP32")
        inp.set_shared_memory("io", 16)
        with pytest.raises(InferenceServerException, match="Unable to find shared memory"):
            client.infer("half_plus_two", [inp])
    finally:
        client.close()


@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_register_errors(server, region, transport):
    key, _ = region
    _, _, client = next(c for c in clients(server) if c[0] == transport)
    try:
        with pytest.raises(InferenceServerException, match="runs past the end"):
            client.register_system_shared_memory("big", key, 65)
        with pytest.raises(InferenceServerException, match="no shared memory object"):
            client.register_system_shared_memory("r", "/fs-no-such-object", 8)
        with pytest.raises(InferenceServerException, match="not valid"):
            client.register_system_shared_memory("r", "../etc/passwd", 8)
        client.register_system_shared_memory("dup", key, 8)
        with pytest.raises(InferenceServerException, match="already registered"):
            client.register_system_shared_memory("dup", key, 8)
        client.unregister_system_shared_memory("dup")
        with pytest.raises(InferenceServerException, match="Unable to find"):
            client.unregister_system_shared_memory("dup")
        with pytest.raises(InferenceServerException, match="CUDA shared memory is not supported"):
            client.register_cuda_shared_memory("c", b"aGFuZGxl", 0, 8)
    finally:
        client.close()


def test_registry_confinement_and_unmap(tmp_path):
    (tmp_path / "obj").write_bytes(bytes(range(32)))
    registry = SharedMemoryRegistry(root=str(tmp_path))
    registry.register("r", "/obj", 4, 16)
    assert registry.read("r", 2, 4, "input 'x'") == bytes([6, 7, 8, 9])
    registry.write("r", 0, 4, b"\xff\xfe", "output 'y'")
    assert (tmp_path / "obj").read_bytes()[4:6] == b"\xff\xfe"
    with pytest.raises(InvalidInput, match="out of bounds"):
        registry.read("r", 10, 7, "input 'x'")
    with pytest.raises(InvalidInput, match="has 2"):
        registry.write("r", 0, 2, b"abc", "output 'y'")
    os.symlink(tmp_path / "obj", tmp_path / "link")
    with pytest.raises(InvalidInput, match="Unable to open"):
        registry.register("l", "link", 0, 4)  # symlinks are not followed
    for key in ("a/b", "..", "/", ""):
        with pytest.raises(InvalidInput, match="not valid"):
            registry.register("k", key, 0, 4)
    mapping = registry._regions["r"].mapping
    registry.close()
    assert mapping.closed and registry.status() == []
    with pytest.raises(NotFound):
        registry.unregister("r")
