"""TF Serving classify/regress signatures that parse serialized tf.Examples in the graph
(ParseExampleV2, as TF's parsing serving input receivers build them), served through gRPC
Classify/Regress/MultiInference and REST :classify/:regress."""

import json
import urllib.error
import urllib.request

import grpc
import numpy as np
import pytest

import engine as tf
from engine.saving import saved_model as sm
from service.config import ServerConfig
from service.protocols.proto import tfserving_pb2 as pb
from tests.service.serving import ServerThread

pytest.importorskip("tritonclient.grpc")

W = np.array([[1.0, -1.0], [2.0, 0.5]], np.float32)


def export(path):
    g = tf.Graph()
    with g.as_default():
        s = tf.placeholder(tf.string, [None], name="input_example_tensor")
        f = tf.parse_example(
            s,
            {
                "x": tf.FixedLenFeature([2], tf.float32),
                "bias": tf.FixedLenFeature([], tf.float32, default_value=0.0),
                "unit": tf.FixedLenFeature([], tf.int64, default_value=1),
            },
        )
        logits = tf.matmul(f["x"], tf.constant(W)) + tf.expand_dims(f["bias"], 1)
        scores = tf.nn.softmax(logits)
        classes = tf.tile(tf.constant([["neg", "pos"]]), tf.stack([tf.shape(s)[0], 1]))
        value = tf.reduce_sum(f["x"], 1) * tf.cast(f["unit"], tf.float32) + f["bias"]
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
                    "regression": sm.build_signature_def(
                        {"inputs": info(s)}, {"outputs": info(value)}, sm.REGRESS_METHOD_NAME
                    ),
                },
            )
            b.save()


def expected_scores(x, bias=0.0):
    logits = np.asarray(x, np.float32) @ W + np.float32(bias)
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def example(**features) -> pb.Example:
    ex = pb.Example()
    for key, value in features.items():
        values = value if isinstance(value, list) else [value]
        feature = ex.features.feature[key]
        if isinstance(values[0], float):
            feature.float_list.value.extend(values)
        elif isinstance(values[0], bytes):
            feature.bytes_list.value.extend(values)
        else:
            feature.int64_list.value.extend(values)
    return ex


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("tf-example-repo")
    export(root / "census" / "1")
    config = ServerConfig(model_repository=str(root), poll_interval=0.0, port=0).validate()
    with ServerThread(config) as s:
        yield s


@pytest.fixture
def channel(server):
    with grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as ch:
        yield ch


def call(channel, method, request, response):
    fn = channel.unary_unary(
        f"/tensorflow.serving.PredictionService/{method}",
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=response.FromString,
    )
    return fn(request)


def examples_input(*exs, context=None) -> pb.Input:
    if context is None:
        return pb.Input(example_list=pb.ExampleList(examples=list(exs)))
    return pb.Input(
        example_list_with_context=pb.ExampleListWithContext(examples=list(exs), context=context)
    )


def test_grpc_classify_parses_examples(channel):
    xs = [[1.0, 2.0], [-0.5, 0.25]]
    request = pb.ClassificationRequest(
        model_spec=pb.ModelSpec(name="census"),
        input=examples_input(example(x=xs[0]), example(x=xs[1], bias=0.5)),
    )
    result = call(channel, "Classify", request, pb.ClassificationResponse).result
    want = [expected_scores(xs[0]), expected_scores(xs[1], 0.5)]
    for row, scores in zip(result.classifications, want):
        assert [c.label for c in row.classes] == ["neg", "pos"]
        np.testing.assert_allclose([c.score for c in row.classes], scores, rtol=1e-6)
    # Context features fill in what each example lacks (bias); the example's own win.
    request = pb.ClassificationRequest(
        model_spec=pb.ModelSpec(name="census"),
        input=examples_input(
            example(x=xs[0]), example(x=xs[0], bias=-1.0), context=example(bias=2.0)
        ),
    )
    rows = call(channel, "Classify", request, pb.ClassificationResponse).result.classifications
    np.testing.assert_allclose(
        [c.score for c in rows[0].classes], expected_scores(xs[0], 2.0), rtol=1e-6
    )
    np.testing.assert_allclose(
        [c.score for c in rows[1].classes], expected_scores(xs[0], -1.0), rtol=1e-6
    )


def test_grpc_regress_and_multi_inference(channel):
    request = pb.RegressionRequest(
        model_spec=pb.ModelSpec(name="census", signature_name="regression"),
        input=examples_input(example(x=[1.0, 2.0], unit=3), example(x=[0.5, 0.5], bias=0.25)),
    )
    values = [
        r.value for r in call(channel, "Regress", request, pb.RegressionResponse).result.regressions
    ]
    assert values == pytest.approx([9.0, 1.25])
    request = pb.MultiInferenceRequest(
        tasks=[
            pb.InferenceTask(
                model_spec=pb.ModelSpec(name="census"), method_name=sm.CLASSIFY_METHOD_NAME
            ),
            pb.InferenceTask(
                model_spec=pb.ModelSpec(name="census", signature_name="regression"),
                method_name=sm.REGRESS_METHOD_NAME,
            ),
        ],
        input=examples_input(example(x=[1.0, 1.0])),
    )
    results = call(channel, "MultiInference", request, pb.MultiInferenceResponse).results
    np.testing.assert_allclose(
        [c.score for c in results[0].classification_result.classifications[0].classes],
        expected_scores([1.0, 1.0]),
        rtol=1e-6,
    )
    assert results[1].regression_result.regressions[0].value == pytest.approx(2.0)


@pytest.mark.parametrize(
    "ex,message",
    [
        (example(bias=1.0), "Feature: x (data type: float) is required but could not be found"),
        (example(x=[1, 2]), "Data types don't match"),
        (example(x=[1.0, 2.0, 3.0]), "Values size: 3 but output shape: [2]"),
    ],
)
def test_grpc_bad_examples_are_invalid_argument(channel, ex, message):
    request = pb.ClassificationRequest(
        model_spec=pb.ModelSpec(name="census"), input=examples_input(ex)
    )
    with pytest.raises(grpc.RpcError) as info:
        call(channel, "Classify", request, pb.ClassificationResponse)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert message in info.value.details()


def post(server, path, doc):
    req = urllib.request.Request(
        f"http://127.0.0.1:{server.port}{path}", data=json.dumps(doc).encode()
    )
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_rest_classify_and_regress_parse_examples(server):
    status, doc = post(
        server,
        "/v1/models/census:classify",
        {"examples": [{"x": [1.0, 2.0]}, {"x": [0.0, 1.0], "bias": 1.5}]},
    )
    assert status == 200, doc
    for row, scores in zip(
        doc["result"], [expected_scores([1.0, 2.0]), expected_scores([0.0, 1.0], 1.5)]
    ):
        assert [label for label, _ in row] == ["neg", "pos"]
        np.testing.assert_allclose([s for _, s in row], scores, rtol=1e-6)
    status, doc = post(
        server,
        "/v1/models/census:regress",
        {
            "signature_name": "regression",
            "context": {"unit": 2},
            "examples": [{"x": [1.0, 2.0]}, {"x": [1.0, 1.0], "unit": 1}],
        },
    )
    assert status == 200 and doc["result"] == pytest.approx([6.0, 2.0])
    status, doc = post(server, "/v1/models/census:classify", {"examples": [{"bias": 1.0}]})
    assert status == 400 and "is required but could not be found" in doc["error"], doc
