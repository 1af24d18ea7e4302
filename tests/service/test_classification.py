"""Triton's classification extension (``class_count``) over REST and gRPC, with labels from
the version directory."""

import numpy as np
import pytest

import engine as tf
from service.config import ServerConfig
from service.errors import InvalidInput
from service.protocols.classification import top_classes
from tests.service import models
from tests.service.serving import ServerThread

httpclient = pytest.importorskip("tritonclient.http")
grpcclient = pytest.importorskip("tritonclient.grpc")
InferenceServerException = pytest.importorskip("tritonclient.utils").InferenceServerException


def scorer(path):
    def build():
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        return {
            "serving_default": (
                {"x": x},
                {"probs": tf.identity(x * 2.0), "counts": tf.cast(x, tf.int32)},
            )
        }

    models.export(path, build)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("classes")
    scorer(root / "scorer" / "1")
    (root / "scorer" / "1" / "probs_labels.txt").write_text("cat\ndog\nbird\nfish\n")
    config = ServerConfig(model_repository=str(root), poll_interval=0, port=0).validate()
    with ServerThread(config) as s:
        yield s


X = np.array([[0.1, 0.7, 0.05, 0.15], [3, 1, 2, 0]], dtype=np.float32)


@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_class_count(server, transport):
    module = httpclient if transport == "http" else grpcclient
    port = server.port if transport == "http" else server.grpc_port
    client = module.InferenceServerClient(f"127.0.0.1:{port}")
    try:
        inp = module.InferInput("x", [2, 4], "FP32")
        inp.set_data_from_numpy(X)
        outputs = [
            module.InferRequestedOutput("probs", class_count=2),
            module.InferRequestedOutput("counts", class_count=3),
        ]
        result = client.infer("scorer", [inp], outputs=outputs)
        assert result.as_numpy("probs").tolist() == [
            [b"1.400000:1:dog", b"0.300000:3:fish"],
            [b"6.000000:0:cat", b"4.000000:2:bird"],
        ]
        # No label file for 'counts' (and no labels.txt): score:index; ties keep index order.
        assert result.as_numpy("counts").tolist() == [
            [b"0:0", b"0:1", b"0:2"],
            [b"3:0", b"2:2", b"1:1"],
        ]
        with pytest.raises(InferenceServerException, match="positive integer"):
            bad = module.InferRequestedOutput("probs", class_count=0)
            bad_params = getattr(bad, "_parameters", None)
            if bad_params is not None:
                bad_params["classification"] = -1
            else:
                bad._output.parameters["classification"].int64_param = -1
            client.infer("scorer", [inp], outputs=[bad])
    finally:
        client.close()


def test_top_classes_rules():
    assert top_classes(np.array([1, 3, 2]), 5, None, "o").tolist() == [b"3:1", b"2:2", b"1:0"]
    assert top_classes(np.array([0.5, 0.25]), 1, ("a", "b"), "o").tolist() == [b"0.500000:0:a"]
    with pytest.raises(InvalidInput, match="numeric"):
        top_classes(np.array([b"x"], dtype=object), 1, None, "o")
    with pytest.raises(InvalidInput, match="numeric"):
        top_classes(np.zeros((1, 2, 3)), 1, None, "o")
