"""Triton's example models as its example clients expect them (``simple``: INT32 add/sub of two
[batch, 16] inputs; ``simple_string``: the same on decimal strings, BYTES in and out;
``simple_identity``: BYTES identity), and the flows of Triton's
``simple_{http,grpc}_*_client.py`` examples run against them with tritonclient."""

import queue
import uuid

import numpy as np
import pytest

import engine as tf
from service.config import ServerConfig
from tests.service import models
from tests.service.serving import ServerThread

httpclient = pytest.importorskip("tritonclient.http")
grpcclient = pytest.importorskip("tritonclient.grpc")
shm = pytest.importorskip("tritonclient.utils.shared_memory")


def build_simple(path):
    def build():
        a = tf.placeholder(tf.int32, [None, 16], name="INPUT0")
        b = tf.placeholder(tf.int32, [None, 16], name="INPUT1")
        return {
            "serving_default": (
                {"INPUT0": a, "INPUT1": b},
                {"OUTPUT0": tf.add(a, b, name="OUTPUT0"), "OUTPUT1": tf.subtract(a, b)},
            )
        }

    models.export(path, build)


def build_simple_string(path):
    """Triton's ``simple_string``: INPUT0/INPUT1 are [batch, 16] decimal integers as strings;
    OUTPUT0 is their sum and OUTPUT1 their difference, as strings."""

    def build():
        a = tf.placeholder(tf.string, [None, 16], name="INPUT0")
        b = tf.placeholder(tf.string, [None, 16], name="INPUT1")
        x = tf.strings.to_number(a, out_type=tf.int32)
        y = tf.strings.to_number(b, out_type=tf.int32)
        return {
            "serving_default": (
                {"INPUT0": a, "INPUT1": b},
                {"OUTPUT0": tf.as_string(x + y), "OUTPUT1": tf.as_string(x - y)},
            )
        }

    models.export(path, build)


def build_simple_identity(path):
    def build():
        s = tf.placeholder(tf.string, [None, None], name="INPUT0")
        return {"serving_default": ({"INPUT0": s}, {"OUTPUT0": tf.identity(s)})}

    models.export(path, build)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("triton-examples")
    build_simple(root / "simple" / "1")
    build_simple_string(root / "simple_string" / "1")
    build_simple_identity(root / "simple_identity" / "1")
    config = ServerConfig(
        model_repository=str(root), poll_interval=0.0, port=0, enable_batching=True
    ).validate()
    with ServerThread(config) as s:
        yield s


def data():
    input0 = np.arange(16, dtype=np.int32).reshape(1, 16)
    input1 = np.ones((1, 16), dtype=np.int32)
    return input0, input1


@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_simple_infer_client(server, transport):
    module = httpclient if transport == "http" else grpcclient
    port = server.port if transport == "http" else server.grpc_port
    client = module.InferenceServerClient(f"127.0.0.1:{port}")
    try:
        config = client.get_model_config("simple")
        if transport == "grpc":
            config = {"max_batch_size": config.config.max_batch_size}
        assert config["max_batch_size"] > 0  # batching on: [batch, 16] with the batch left out
        input0, input1 = data()
        inputs = [module.InferInput("INPUT0", [1, 16], "INT32")]
        inputs.append(module.InferInput("INPUT1", [1, 16], "INT32"))
        inputs[0].set_data_from_numpy(input0)
        inputs[1].set_data_from_numpy(input1)
        outputs = [module.InferRequestedOutput("OUTPUT0"), module.InferRequestedOutput("OUTPUT1")]
        results = client.infer("simple", inputs, outputs=outputs, request_id="1")
        np.testing.assert_array_equal(results.as_numpy("OUTPUT0"), input0 + input1)
        np.testing.assert_array_equal(results.as_numpy("OUTPUT1"), input0 - input1)
        # simple_*_async_infer_client: several requests in flight, results in any order.
        done: queue.Queue = queue.Queue()
        for _ in range(4):
            if transport == "http":
                done.put(client.async_infer("simple", inputs).get_result())
            else:
                client.async_infer(
                    "simple",
                    inputs,
                    lambda result, error: done.put(result if error is None else error),
                )
        for _ in range(4):
            r = done.get(timeout=30)
            np.testing.assert_array_equal(r.as_numpy("OUTPUT0"), input0 + input1)
        stats = client.get_inference_statistics("simple")
        assert stats is not None
    finally:
        client.close()


@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_simple_shm_client(server, transport):
    module = httpclient if transport == "http" else grpcclient
    port = server.port if transport == "http" else server.grpc_port
    client = module.InferenceServerClient(f"127.0.0.1:{port}")
    key = f"/fs-{uuid.uuid4().hex[:8]}"
    ins = shm.create_shared_memory_region("input_data", key + "-in", 128)
    outs = shm.create_shared_memory_region("output_data", key + "-out", 128)
    try:
        client.unregister_system_shared_memory()
        input0, input1 = data()
        shm.set_shared_memory_region(ins, [input0])
        shm.set_shared_memory_region(ins, [input1], offset=64)
        client.register_system_shared_memory("input_data", key + "-in", 128)
        client.register_system_shared_memory("output_data", key + "-out", 128)
        inputs = [module.InferInput("INPUT0", [1, 16], "INT32")]
        inputs.append(module.InferInput("INPUT1", [1, 16], "INT32"))
        inputs[0].set_shared_memory("input_data", 64)
        inputs[1].set_shared_memory("input_data", 64, offset=64)
        outputs = [module.InferRequestedOutput("OUTPUT0"), module.InferRequestedOutput("OUTPUT1")]
        outputs[0].set_shared_memory("output_data", 64)
        outputs[1].set_shared_memory("output_data", 64, offset=64)
        client.infer("simple", inputs, outputs=outputs)
        out0 = shm.get_contents_as_numpy(outs, np.int32, [1, 16])
        out1 = shm.get_contents_as_numpy(outs, np.int32, [1, 16], offset=64)
        np.testing.assert_array_equal(out0, input0 + input1)
        np.testing.assert_array_equal(out1, input0 - input1)
    finally:
        client.unregister_system_shared_memory()
        shm.destroy_shared_memory_region(ins)
        shm.destroy_shared_memory_region(outs)
        client.close()


@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_simple_identity_bytes(server, transport):
    module = httpclient if transport == "http" else grpcclient
    port = server.port if transport == "http" else server.grpc_port
    client = module.InferenceServerClient(f"127.0.0.1:{port}")
    try:
        values = np.array([[b"hello", b"\x00\xff", "wörld".encode()]], dtype=np.object_)
        inp = module.InferInput("INPUT0", list(values.shape), "BYTES")
        inp.set_data_from_numpy(values)
        result = client.infer("simple_identity", [inp])
        assert result.as_numpy("OUTPUT0").tolist() == values.tolist()
    finally:
        client.close()


@pytest.mark.parametrize("transport,binary", [("http", True), ("http", False), ("grpc", True)])
def test_simple_string_client(server, transport, binary):
    """simple_{http,grpc}_string_infer_client.py: integers sent as their decimal strings, the
    sum and difference read back as strings."""
    module = httpclient if transport == "http" else grpcclient
    port = server.port if transport == "http" else server.grpc_port
    client = module.InferenceServerClient(f"127.0.0.1:{port}")
    try:
        metadata = client.get_model_metadata("simple_string")
        if transport == "grpc":
            datatypes = [t.datatype for t in metadata.inputs] + [
                t.datatype for t in metadata.outputs
            ]
        else:
            datatypes = [t["datatype"] for t in metadata["inputs"] + metadata["outputs"]]
        assert datatypes == ["BYTES"] * 4
        in0, in1 = data()
        in1 = in1 * np.int32(-7)  # negative numbers too
        strings = [
            np.array([str(v).encode("utf-8") for v in x.reshape(-1)], dtype=np.object_).reshape(
                x.shape
            )
            for x in (in0, in1)
        ]
        inputs = [module.InferInput(n, [1, 16], "BYTES") for n in ("INPUT0", "INPUT1")]
        for inp, values in zip(inputs, strings):
            if transport == "http":
                inp.set_data_from_numpy(values, binary_data=binary)
            else:
                inp.set_data_from_numpy(values)
        if transport == "http":
            outputs = [
                module.InferRequestedOutput(n, binary_data=binary) for n in ("OUTPUT0", "OUTPUT1")
            ]
        else:
            outputs = [module.InferRequestedOutput(n) for n in ("OUTPUT0", "OUTPUT1")]
        results = client.infer("simple_string", inputs, outputs=outputs)
        out0, out1 = results.as_numpy("OUTPUT0"), results.as_numpy("OUTPUT1")
        assert out0.shape == out1.shape == (1, 16)
        as_ints = np.vectorize(lambda v: int(v.decode() if isinstance(v, bytes) else v))
        np.testing.assert_array_equal(as_ints(out0), in0 + in1)
        np.testing.assert_array_equal(as_ints(out1), in0 - in1)
        # A string that is not a number is the client's error, not the server's.
        bad = np.array([[b"x"] * 16], dtype=np.object_)
        inputs[0].set_data_from_numpy(bad)
        with pytest.raises(Exception, match="could not correctly convert string") as info:
            client.infer("simple_string", inputs, outputs=outputs)
        if transport == "http":
            assert info.value.status() == "400"
        else:
            assert info.value.status() == "StatusCode.INVALID_ARGUMENT"
    finally:
        client.close()
