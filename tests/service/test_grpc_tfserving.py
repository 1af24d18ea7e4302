"""TF Serving's gRPC services (PredictionService, ModelService), driven through stubs made
from our own compiled copy of TF Serving's API (``service/protocols/proto/tfserving.proto``)."""

import grpc
import numpy as np
import pytest

import engine as tf
from engine.formats.tensorflow.proto import tensor_pb2, types_pb2
from engine.saving import saved_model as sm
from service.config import ServerConfig
from service.protocols.proto import tfserving_pb2 as pb
from tests.service import models
from tests.service.serving import ServerThread

pytest.importorskip("tritonclient.grpc")  # the same process also loads tritonclient's protos


def example(**features) -> pb.Example:
    ex = pb.Example()
    for key, value in features.items():
        feature = ex.features.feature[key]
        if isinstance(value, bytes):
            feature.bytes_list.value.append(value)
        elif isinstance(value, float):
            feature.float_list.value.append(value)
        else:
            feature.int64_list.value.append(value)
    return ex


# The classifier matches this exact serialized example: the graph has no ParseExample, so it
# compares the bytes it is fed, which is enough to check what the server feeds it.
MATCH = example(age=42, name=b"ada").SerializeToString(deterministic=True)


def classifier(path):
    """Classify and regress signatures over serialized tf.Examples."""
    g = tf.Graph()
    with g.as_default():
        s = tf.placeholder(tf.string, [None], name="examples")
        hit = tf.cast(tf.equal(s, tf.constant(MATCH)), tf.float32)
        scores = tf.stack([hit, 1.0 - hit], axis=1, name="scores")
        classes = tf.tile(
            tf.constant([["match", "other"]]), tf.concat([tf.shape(s), [1]], 0), name="classes"
        )
        value = tf.identity(hit * 10.0 + 0.5, name="value")
        info = sm.build_tensor_info
        with tf.Session(graph=g) as sess:
            b = tf.saved_model.Builder(str(path))
            b.add_meta_graph_and_variables(
                sess,
                ["serve"],
                signature_def_map={
                    "serving_default": sm.build_signature_def(
                        {"inputs": info(s)},
                        {"classes": info(classes), "scores": info(scores)},
                        sm.CLASSIFY_METHOD_NAME,
                    ),
                    "regress": sm.build_signature_def(
                        {"inputs": info(s)}, {"outputs": info(value)}, sm.REGRESS_METHOD_NAME
                    ),
                    "predict": sm.predict_signature_def({"examples": s}, {"value": value}),
                },
            )
            b.save()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = models.make_repository(tmp_path_factory.mktemp("tfs-grpc-repo"))
    classifier(root / "classifier" / "1")
    config = ServerConfig(model_repository=str(root), poll_interval=0.0, port=0).validate()
    with ServerThread(config) as s:
        yield s


class Stub:
    """Calls TF Serving's methods by their wire paths with our messages."""

    def __init__(self, channel):
        self.channel = channel

    def __getattr__(self, method):
        service = (
            "ModelService"
            if method in ("GetModelStatus", "HandleReloadConfigRequest")
            else ("PredictionService")
        )
        response = {
            "Predict": pb.PredictResponse,
            "Classify": pb.ClassificationResponse,
            "Regress": pb.RegressionResponse,
            "MultiInference": pb.MultiInferenceResponse,
            "GetModelMetadata": pb.GetModelMetadataResponse,
            "GetModelStatus": pb.GetModelStatusResponse,
            "HandleReloadConfigRequest": pb.ReloadConfigResponse,
        }[method]
        return self.channel.unary_unary(
            f"/tensorflow.serving.{service}/{method}",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=response.FromString,
        )


@pytest.fixture
def stub(server):
    with grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
        yield Stub(channel)


def tensor(values, dtype, shape, content=False) -> tensor_pb2.TensorProto:
    t = tensor_pb2.TensorProto(dtype=dtype)
    for d in shape:
        t.tensor_shape.dim.add(size=d)
    arr = np.asarray(values)
    if content:
        t.tensor_content = arr.astype(arr.dtype.newbyteorder("<")).tobytes()
    elif dtype == types_pb2.DT_FLOAT:
        t.float_val.extend(arr.reshape(-1).tolist())
    elif dtype == types_pb2.DT_INT32:
        t.int_val.extend(arr.reshape(-1).tolist())
    elif dtype == types_pb2.DT_STRING:
        t.string_val.extend(list(arr.reshape(-1)))
    return t


def spec(name, version=None, label=None, signature=""):
    s = pb.ModelSpec(name=name, signature_name=signature)
    if version is not None:
        s.version.value = version
    if label is not None:
        s.version_label = label
    return s


def as_array(t: tensor_pb2.TensorProto) -> np.ndarray:
    from engine.formats.tensorflow.tensors import array_from_proto

    return array_from_proto(t, "output")


# -- Predict ----------------------------------------------------------------------------------


@pytest.mark.parametrize("content", [False, True], ids=["typed", "tensor_content"])
def test_predict_typed_and_tensor_content(stub, content):
    x = np.array([1.0, 2.0, 5.0], dtype=np.float32)
    request = pb.PredictRequest(model_spec=spec("half_plus_two"))
    request.inputs["x"].CopyFrom(tensor(x, types_pb2.DT_FLOAT, [3], content))
    response = stub.Predict(request)
    assert response.model_spec.name == "half_plus_two"
    assert response.model_spec.version.value == 2
    assert response.model_spec.signature_name == "serving_default"
    y = response.outputs["y"]
    assert y.dtype == types_pb2.DT_FLOAT and [d.size for d in y.tensor_shape.dim] == [3]
    np.testing.assert_array_equal(as_array(y), 0.5 * x + 3.0)


def test_predict_version_label_signature_and_filter(stub):
    x = np.array([2.0], dtype=np.float32)
    for kwargs, expected in (({"version": 1}, 3.0), ({"label": "stable"}, 3.0), ({}, 4.0)):
        request = pb.PredictRequest(model_spec=spec("half_plus_two", **kwargs))
        request.inputs["x"].CopyFrom(tensor(x, types_pb2.DT_FLOAT, [1]))
        np.testing.assert_array_equal(as_array(stub.Predict(request).outputs["y"]), [expected])
    request = pb.PredictRequest(model_spec=spec("multi_io"), output_filter=["label"])
    request.inputs["a"].CopyFrom(tensor([[1, 2, 3], [4, 5, 6]], types_pb2.DT_FLOAT, [2, 3]))
    request.inputs["b"].CopyFrom(tensor([1, -100], types_pb2.DT_INT32, [2]))
    response = stub.Predict(request)
    assert list(response.outputs) == ["label"]
    assert list(response.outputs["label"].string_val) == [b"pos", b"neg"]
    request = pb.PredictRequest(model_spec=spec("multi_io", signature="negate"))
    request.inputs["a"].CopyFrom(tensor([[1, -2, 3]], types_pb2.DT_FLOAT, [1, 3]))
    np.testing.assert_array_equal(as_array(stub.Predict(request).outputs["neg"]), [[-1, 2, -3]])


def test_repeated_value_expansion_is_bounded(stub):
    # TF repeats a short value list's last value; a huge shape must not allocate it.
    request = pb.PredictRequest(model_spec=spec("strings"))
    request.inputs["text"].CopyFrom(tensor([b"x"], types_pb2.DT_STRING, [1 << 30]))
    with pytest.raises(grpc.RpcError) as info:
        stub.Predict(request)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "limit" in info.value.details()
    request.inputs["text"].CopyFrom(tensor([b"x"], types_pb2.DT_STRING, [3]))
    assert list(stub.Predict(request).outputs["shouted"].string_val) == [b"x!"] * 3


def test_predict_byte_identical_to_tensor_content_round_trip(stub):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(784).astype(np.float32)
    request = pb.PredictRequest(model_spec=spec("half_plus_two", version=1))
    request.inputs["x"].CopyFrom(tensor(x, types_pb2.DT_FLOAT, [784], content=True))
    y = stub.Predict(request).outputs["y"]
    assert y.tensor_content == (np.float32(0.5) * x + np.float32(2.0)).astype("<f4").tobytes()


@pytest.mark.parametrize(
    "build, code, fragment",
    [
        (lambda r: setattr(r.model_spec, "name", "nope"), "NOT_FOUND", "'nope'"),
        (lambda r: r.model_spec.version.__setattr__("value", 9), "NOT_FOUND", "version 9"),
        (lambda r: setattr(r.model_spec, "version_label", "zzz"), "NOT_FOUND", "'zzz'"),
        (lambda r: setattr(r.model_spec, "signature_name", "zzz"), "NOT_FOUND", "'zzz'"),
        (lambda r: r.output_filter.append("zzz"), "INVALID_ARGUMENT", "unknown output"),
        (lambda r: r.inputs["x"].float_val.extend([1, 2, 3, 4]), "INVALID_ARGUMENT", "values"),
        (lambda r: setattr(r.inputs["x"], "tensor_content", b"\0" * 5), "INVALID_ARGUMENT", "5"),
        (lambda r: setattr(r.inputs["x"], "dtype", types_pb2.DT_STRING), "INVALID_ARGUMENT", "x"),
        (
            lambda r: r.inputs["x"].tensor_shape.dim[0].__setattr__("size", 1 << 40),
            "INVALID_ARGUMENT",
            "limit",
        ),
    ],
)
def test_predict_errors(stub, build, code, fragment):
    request = pb.PredictRequest(model_spec=spec("half_plus_two"))
    request.inputs["x"].CopyFrom(tensor([1.0], types_pb2.DT_FLOAT, [1]))
    stub.Predict(request)  # valid as built
    build(request)
    with pytest.raises(grpc.RpcError) as info:
        stub.Predict(request)
    assert info.value.code() == getattr(grpc.StatusCode, code), info.value.details()
    assert fragment in info.value.details()


# -- Classify, Regress, MultiInference --------------------------------------------------------


def examples_input(*exs, context=None) -> pb.Input:
    if context is None:
        return pb.Input(example_list=pb.ExampleList(examples=list(exs)))
    return pb.Input(
        example_list_with_context=pb.ExampleListWithContext(examples=list(exs), context=context)
    )


def test_classify(stub):
    request = pb.ClassificationRequest(
        model_spec=spec("classifier"),
        input=examples_input(example(age=42, name=b"ada"), example(age=7)),
    )
    response = stub.Classify(request)
    assert response.model_spec.signature_name == "serving_default"
    rows = [[(c.label, c.score) for c in row.classes] for row in response.result.classifications]
    assert rows == [[("match", 1.0), ("other", 0.0)], [("match", 0.0), ("other", 1.0)]]
    # Context features are merged into each example before it is serialized.
    request = pb.ClassificationRequest(
        model_spec=spec("classifier"),
        input=examples_input(example(age=42), context=example(name=b"ada")),
    )
    assert stub.Classify(request).result.classifications[0].classes[0].score == 1.0


def test_regress_and_multi_inference(stub):
    request = pb.RegressionRequest(
        model_spec=spec("classifier", signature="regress"),
        input=examples_input(example(age=42, name=b"ada"), example(age=1)),
    )
    assert [r.value for r in stub.Regress(request).result.regressions] == [10.5, 0.5]
    request = pb.MultiInferenceRequest(
        tasks=[
            pb.InferenceTask(model_spec=spec("classifier"), method_name=sm.CLASSIFY_METHOD_NAME),
            pb.InferenceTask(
                model_spec=spec("classifier", signature="regress"),
                method_name=sm.REGRESS_METHOD_NAME,
            ),
        ],
        input=examples_input(example(age=42, name=b"ada")),
    )
    results = stub.MultiInference(request).results
    assert results[0].classification_result.classifications[0].classes[0].score == 1.0
    assert results[1].regression_result.regressions[0].value == 10.5


def test_classify_errors(stub):
    with pytest.raises(grpc.RpcError) as info:
        stub.Classify(
            pb.ClassificationRequest(
                model_spec=spec("classifier", signature="predict"),
                input=examples_input(example(age=1)),
            )
        )
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "tensorflow/serving/classify" in info.value.details()
    with pytest.raises(grpc.RpcError) as info:
        stub.Regress(pb.RegressionRequest(model_spec=spec("classifier", signature="regress")))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(grpc.RpcError) as info:
        stub.Classify(
            pb.ClassificationRequest(
                model_spec=spec("half_plus_two"), input=examples_input(example(age=1))
            )
        )
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT


# -- metadata and status ----------------------------------------------------------------------


def test_get_model_metadata(stub):
    from engine.formats.tensorflow.proto import meta_graph_pb2  # noqa: F401 - SignatureDef

    request = pb.GetModelMetadataRequest(
        model_spec=spec("multi_io"), metadata_field=["signature_def"]
    )
    response = stub.GetModelMetadata(request)
    assert response.model_spec.version.value == 1
    packed = response.metadata["signature_def"]
    assert packed.type_url == "type.googleapis.com/tensorflow.serving.SignatureDefMap"
    signatures = pb.SignatureDefMap.FromString(packed.value).signature_def
    assert sorted(signatures) == ["negate", "serving_default"]
    a = signatures["serving_default"].inputs["a"]
    assert a.dtype == types_pb2.DT_FLOAT and [d.size for d in a.tensor_shape.dim] == [-1, 3]
    assert signatures["serving_default"].outputs["label"].dtype == types_pb2.DT_STRING
    assert signatures["serving_default"].method_name == "tensorflow/serving/predict"
    for fields, fragment in (([], "at least one"), (["nope"], "nope")):
        with pytest.raises(grpc.RpcError) as info:
            stub.GetModelMetadata(
                pb.GetModelMetadataRequest(model_spec=spec("multi_io"), metadata_field=fields)
            )
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert fragment in info.value.details()


def test_get_model_status_and_reload(stub):
    response = stub.GetModelStatus(pb.GetModelStatusRequest(model_spec=spec("half_plus_two")))
    assert [(s.version, s.state) for s in response.model_version_status] == [
        (2, pb.ModelVersionStatus.AVAILABLE),
        (1, pb.ModelVersionStatus.AVAILABLE),
    ]
    one = stub.GetModelStatus(pb.GetModelStatusRequest(model_spec=spec("half_plus_two", 1)))
    assert [s.version for s in one.model_version_status] == [1]
    with pytest.raises(grpc.RpcError) as info:
        stub.GetModelStatus(pb.GetModelStatusRequest(model_spec=spec("nope")))
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.RpcError) as info:
        stub.HandleReloadConfigRequest(pb.ReloadConfigRequest())
    assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED


# -- the same signatures over TF Serving's REST API --------------------------------------------


def test_rest_classify_and_regress(server):
    import json
    import urllib.error
    import urllib.request

    def post(path, doc):
        req = urllib.request.Request(
            f"http://127.0.0.1:{server.port}{path}", data=json.dumps(doc).encode()
        )
        try:
            with urllib.request.urlopen(req) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    status, doc = post(
        "/v1/models/classifier:classify",
        {"examples": [{"age": 42, "name": "ada"}, {"age": 7}]},
    )
    assert status == 200
    assert doc == {"result": [[["match", 1.0], ["other", 0.0]], [["match", 0.0], ["other", 1.0]]]}
    # Context merged into each example; b64 strings are bytes features.
    status, doc = post(
        "/v1/models/classifier:regress",
        {
            "signature_name": "regress",
            "context": {"name": {"b64": "YWRh"}},
            "examples": [{"age": 42}, {"age": 42, "name": "bob"}],
        },
    )
    assert status == 200 and doc == {"result": [10.5, 0.5]}
    for body, fragment in (
        ({"examples": [{"age": True}]}, "booleans"),
        ({"examples": [{"age": [1, "a"]}]}, "must all be integers"),
        ({"examples": [{"name": {"b64": "***"}}]}, "base64"),
        ({"examples": {}}, "non-empty list"),
        ({"examples": [{}], "instances": []}, "Unknown field"),
    ):
        status, doc = post("/v1/models/classifier:classify", body)
        assert status == 400 and fragment in doc["error"], doc
