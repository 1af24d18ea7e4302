"""TensorFlow Serving's gRPC API: ``tensorflow.serving.PredictionService`` and
``tensorflow.serving.ModelService``, over the same core as every other protocol.

- **Predict**: ``model_spec`` (name; ``version`` or ``version_label``; ``signature_name``, the
  default signature when empty), ``inputs`` as ``TensorProto`` (typed value lists, where a
  shorter list repeats its last value as TF does, or ``tensor_content``), ``output_filter``.
  Outputs come back as TF Serving writes them: ``tensor_content`` (``string_val`` for strings),
  with the resolved ``model_spec``.
- **Classify/Regress/MultiInference**: for signatures whose ``method_name`` is
  ``tensorflow/serving/classify`` / ``regress``, TF's convention: the signature's one string
  input receives the request's ``tf.Example``s serialized (with ``context`` features merged
  into each example), ``classes``/``scores`` (classify) or ``outputs`` (regress) are read back
  into ``ClassificationResult``/``RegressionResult``.
- **GetModelMetadata**: ``metadata_field`` ``signature_def``; the ``SignatureDefMap`` packed in
  an ``Any`` under TF Serving's type URL.
- **GetModelStatus**: every version (or the one asked for) with TF Serving's states.
- **HandleReloadConfigRequest** answers UNIMPLEMENTED: models come from the model repository.

Errors carry TF Serving's codes (NOT_FOUND, INVALID_ARGUMENT, UNAVAILABLE, DEADLINE_EXCEEDED).
"""

from __future__ import annotations

import math
import time

import grpc
import numpy as np
from google.protobuf import any_pb2
from google.protobuf.message import Message

from engine import dtypes
from engine.formats.tensorflow import tensors as tf_tensors
from engine.formats.tensorflow.proto import meta_graph_pb2
from service.errors import InvalidInput, ServingError
from service.manager import InferResult, ModelManager
from service.metrics import ServingMetrics
from service.protocols.grpc_common import GrpcService
from service.protocols.proto import tfserving_pb2 as pb

__all__ = ["PREDICTION_SERVICE", "MODEL_SERVICE", "TFServingGrpc"]

PREDICTION_SERVICE = "tensorflow.serving.PredictionService"
MODEL_SERVICE = "tensorflow.serving.ModelService"
CLASSIFY = "tensorflow/serving/classify"
REGRESS = "tensorflow/serving/regress"
_SIGNATURE_DEF_MAP_URL = "type.googleapis.com/tensorflow.serving.SignatureDefMap"
_STATES = {
    "START": pb.ModelVersionStatus.START,
    "LOADING": pb.ModelVersionStatus.LOADING,
    "AVAILABLE": pb.ModelVersionStatus.AVAILABLE,
    "UNLOADING": pb.ModelVersionStatus.UNLOADING,
    "END": pb.ModelVersionStatus.END,
}


def _spec(model_spec) -> tuple[str, int | None, str | None, str | None]:
    """(name, version, label, signature) of a ``ModelSpec``."""
    if not model_spec.name:
        raise InvalidInput("model_spec.name is required")
    choice = model_spec.WhichOneof("version_choice")
    version = model_spec.version.value if choice == "version" else None
    label = model_spec.version_label if choice == "version_label" else None
    return model_spec.name, version, label, model_spec.signature_name or None


class TFServingGrpc(GrpcService):
    """TF Serving's two gRPC services over one manager."""

    def __init__(
        self,
        manager: ModelManager,
        metrics: ServingMetrics | None = None,
        auth_token: str | None = None,
        max_tensor_bytes: int = 64 << 20,
    ):
        super().__init__(manager, metrics, auth_token)
        self.max_tensor_bytes = max_tensor_bytes

    def handlers(self) -> list[grpc.GenericRpcHandler]:
        prediction = {
            "Predict": self.method(self.predict, pb.PredictRequest),
            "Classify": self.method(self.classify, pb.ClassificationRequest),
            "Regress": self.method(self.regress, pb.RegressionRequest),
            "MultiInference": self.method(self.multi_inference, pb.MultiInferenceRequest),
            "GetModelMetadata": self.method(self.get_model_metadata, pb.GetModelMetadataRequest),
        }
        model = {
            "GetModelStatus": self.method(self.get_model_status, pb.GetModelStatusRequest),
            "HandleReloadConfigRequest": self.method(self.reload_config, pb.ReloadConfigRequest),
        }
        return [
            grpc.method_handlers_generic_handler(PREDICTION_SERVICE, prediction),
            grpc.method_handlers_generic_handler(MODEL_SERVICE, model),
        ]

    async def _infer(self, model_spec, inputs, outputs, context, method=None) -> InferResult:
        name, version, label, signature = _spec(model_spec)
        start = time.perf_counter()
        status, served = 500, version
        try:
            if method is not None:
                _, sig = self.manager.signature_info(name, version, label, signature)
                if sig.method_name != method:
                    raise InvalidInput(
                        f"Expected {method.rsplit('/', 1)[-1]} signature method_name to be "
                        f"{method}. Was: {sig.method_name}"
                    )
                inputs = {_single_string_input(sig): inputs}
            result = await self.manager.infer(
                name,
                inputs,
                version=version,
                label=label,
                signature=signature,
                outputs=outputs,
                timeout=context.time_remaining(),
            )
            status, served = 200, result.version
            return result
        except ServingError as e:
            status = e.http_status
            raise
        finally:
            self.observe(name, served, status, start)

    def _model_spec(self, result: InferResult) -> pb.ModelSpec:
        spec = pb.ModelSpec(name=result.model, signature_name=result.signature)
        spec.version.value = result.version
        return spec

    # -- PredictionService -------------------------------------------------------------------
    async def predict(self, request: Message, context: grpc.aio.ServicerContext) -> Message:
        inputs = {
            alias: self._array(tensor, f"input '{alias}'")
            for alias, tensor in request.inputs.items()
        }
        result = await self._infer(
            request.model_spec, inputs, list(request.output_filter) or None, context
        )
        response = pb.PredictResponse(model_spec=self._model_spec(result))
        for alias, arr in result.outputs.items():
            response.outputs[alias].CopyFrom(tf_tensors.array_to_proto(arr))
        return response

    def _array(self, tensor, what: str) -> np.ndarray:
        """A request TensorProto as an array, its expanded size bounded before allocation."""
        try:
            dtype = tf_tensors.dtype_from_enum(tensor.dtype, what)
            dims = tf_tensors.shape_from_proto(tensor.tensor_shape, what)
        except tf_tensors.TFFormatError as e:
            raise InvalidInput(str(e)) from None
        if dims is not None and all(d >= 0 for d in dims) and dtype is not dtypes.string:
            size = math.prod(dims) * dtype.size
            if size > self.max_tensor_bytes:
                raise InvalidInput(
                    f"{what}: shape {dims} of {dtype.name} takes {size} bytes, over the "
                    f"{self.max_tensor_bytes}-byte limit"
                )
        try:
            return tf_tensors.array_from_proto(tensor, what)
        except tf_tensors.TFFormatError as e:
            raise InvalidInput(str(e)) from None

    async def classify(self, request: Message, context: grpc.aio.ServicerContext) -> Message:
        result = await self._infer(
            request.model_spec, _serialized_examples(request.input), None, context, CLASSIFY
        )
        return pb.ClassificationResponse(
            model_spec=self._model_spec(result), result=_classification(result)
        )

    async def regress(self, request: Message, context: grpc.aio.ServicerContext) -> Message:
        result = await self._infer(
            request.model_spec, _serialized_examples(request.input), None, context, REGRESS
        )
        return pb.RegressionResponse(
            model_spec=self._model_spec(result), result=_regression(result)
        )

    async def multi_inference(self, request: Message, context: grpc.aio.ServicerContext) -> Message:
        if not request.tasks:
            raise InvalidInput("MultiInferenceRequest has no tasks")
        names = {t.model_spec.name for t in request.tasks}
        if len(names) != 1:
            raise InvalidInput(
                f"All tasks of a MultiInferenceRequest must name the same model; got "
                f"{sorted(names)}"
            )
        signatures = [t.model_spec.signature_name for t in request.tasks]
        if len(set(signatures)) != len(signatures):
            raise InvalidInput("Duplicate evaluation of signature in MultiInferenceRequest")
        examples = _serialized_examples(request.input)
        response = pb.MultiInferenceResponse()
        for task in request.tasks:
            if task.method_name not in (CLASSIFY, REGRESS):
                raise InvalidInput(
                    f"Unsupported signature method_name {task.method_name!r}: MultiInference "
                    f"runs {CLASSIFY} and {REGRESS} signatures"
                )
            result = await self._infer(task.model_spec, examples, None, context, task.method_name)
            entry = response.results.add(model_spec=self._model_spec(result))
            if task.method_name == CLASSIFY:
                entry.classification_result.CopyFrom(_classification(result))
            else:
                entry.regression_result.CopyFrom(_regression(result))
        return response

    async def get_model_metadata(
        self, request: Message, _context: grpc.aio.ServicerContext
    ) -> Message:
        name, version, label, _ = _spec(request.model_spec)
        fields = list(request.metadata_field)
        if not fields:
            raise InvalidInput("GetModelMetadataRequest must specify at least one metadata_field")
        unknown = [f for f in fields if f != "signature_def"]
        if unknown:
            raise InvalidInput(f"Metadata field {unknown[0]} is not supported")
        servable = self.manager.resolve(name, version, label)
        signatures = pb.SignatureDefMap()
        for key, sig in servable.signatures.items():
            signatures.signature_def[key].CopyFrom(_signature_def(sig))
        response = pb.GetModelMetadataResponse()
        response.model_spec.name = name
        response.model_spec.version.value = servable.version
        response.metadata["signature_def"].CopyFrom(
            any_pb2.Any(type_url=_SIGNATURE_DEF_MAP_URL, value=signatures.SerializeToString())
        )
        return response

    # -- ModelService --------------------------------------------------------------------------
    async def get_model_status(
        self, request: Message, _context: grpc.aio.ServicerContext
    ) -> Message:
        name, version, label, _ = _spec(request.model_spec)
        response = pb.GetModelStatusResponse()
        for status in self.manager.status(name, version, label):
            entry = response.model_version_status.add(
                version=status.version, state=_STATES.get(status.state, 0)
            )
            if status.error:
                entry.status.error_code = pb.UNKNOWN
                entry.status.error_message = status.error
        return response

    async def reload_config(self, _request: Message, context: grpc.aio.ServicerContext) -> Message:
        await context.abort(
            grpc.StatusCode.UNIMPLEMENTED,
            "HandleReloadConfigRequest is not supported: flowserve serves the models of its "
            "model repository (add, remove or change them there; the repository is polled)",
        )


def _single_string_input(sig) -> str:
    if len(sig.inputs) != 1:
        raise InvalidInput(
            f"signature '{sig.key}' must take exactly one input (the serialized tf.Examples), "
            f"it takes {sig.input_order}"
        )
    alias = sig.input_order[0]
    if sig.inputs[alias].dtype.base_dtype is not dtypes.string:
        raise InvalidInput(
            f"signature '{sig.key}' input '{alias}' must be a string tensor of serialized "
            "tf.Examples"
        )
    return alias


def _serialized_examples(request_input) -> np.ndarray:
    """The request's examples serialized, context features merged into each (TF Serving)."""
    kind = request_input.WhichOneof("kind")
    if kind == "example_list":
        examples = list(request_input.example_list.examples)
        context = None
    elif kind == "example_list_with_context":
        examples = list(request_input.example_list_with_context.examples)
        context = request_input.example_list_with_context.context
    else:
        raise InvalidInput("Input is empty: send example_list or example_list_with_context")
    if not examples:
        raise InvalidInput("Input has no examples")
    out = np.empty(len(examples), dtype=object)
    for i, example in enumerate(examples):
        if context is not None:
            merged = pb.Example()
            merged.CopyFrom(context)
            merged.MergeFrom(example)
            example = merged
        out[i] = example.SerializeToString(deterministic=True)
    return out


def _rows(arr: np.ndarray, n: int, what: str) -> np.ndarray:
    if arr.ndim == 1:
        arr = arr.reshape(-1, 1)
    if arr.ndim != 2 or arr.shape[0] != n:
        raise InvalidInput(f"{what} must have shape [{n}, classes], got {list(arr.shape)}")
    return arr


def _classification(result: InferResult) -> pb.ClassificationResult:
    classes = result.outputs.get("classes")
    scores = result.outputs.get("scores")
    if classes is None and scores is None:
        raise InvalidInput(
            f"classification signature '{result.signature}' has neither 'classes' nor "
            "'scores' outputs"
        )
    n = (classes if classes is not None else scores).shape[0]
    classes = _rows(classes, n, "output 'classes'") if classes is not None else None
    scores = _rows(scores, n, "output 'scores'") if scores is not None else None
    if classes is not None and scores is not None and classes.shape != scores.shape:
        raise InvalidInput(
            f"outputs 'classes' {list(classes.shape)} and 'scores' {list(scores.shape)} differ "
            "in shape"
        )
    out = pb.ClassificationResult()
    k = (classes if classes is not None else scores).shape[1]
    for i in range(n):
        row = out.classifications.add()
        for j in range(k):
            label = classes[i, j] if classes is not None else b""
            row.classes.add(
                label=label.decode("utf-8", "replace") if isinstance(label, bytes) else str(label),
                score=float(scores[i, j]) if scores is not None else 0.0,
            )
    return out


def _regression(result: InferResult) -> pb.RegressionResult:
    values = result.outputs.get("outputs")
    if values is None:
        raise InvalidInput(f"regression signature '{result.signature}' has no 'outputs' output")
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    if values.ndim != 1 or values.dtype.kind != "f":
        raise InvalidInput(
            f"regression output 'outputs' must be floats of shape [batch] or [batch, 1], got "
            f"{values.dtype} {list(values.shape)}"
        )
    out = pb.RegressionResult()
    for v in values:
        out.regressions.add(value=float(v))
    return out


def _signature_def(sig) -> meta_graph_pb2.SignatureDef:
    out = meta_graph_pb2.SignatureDef(method_name=sig.method_name)
    for side, specs in (("inputs", sig.inputs), ("outputs", sig.outputs)):
        for alias, spec in specs.items():
            info = getattr(out, side)[alias]
            info.name = spec.tensor_name
            info.dtype = spec.dtype.base_dtype.as_datatype_enum
            info.tensor_shape.CopyFrom(tf_tensors.shape_to_proto(spec.dims))
    return out
