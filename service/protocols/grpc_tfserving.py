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
- **HandleReloadConfigRequest**: with ``flowserve-tfserving``, serves exactly the request's
  ``model_config_list`` from then on (models not listed are unloaded); the ``flowserve``
  server answers UNIMPLEMENTED (its models come from the model repository).

Errors carry TF Serving's codes (NOT_FOUND, INVALID_ARGUMENT, UNAVAILABLE, DEADLINE_EXCEEDED).
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable

import grpc
import numpy as np
from google.protobuf import any_pb2
from google.protobuf.message import Message

from engine import dtypes
from engine.formats.tensorflow import tensors as tf_tensors
from engine.formats.tensorflow.proto import meta_graph_pb2
from service.config import ConfigError
from service.errors import InvalidInput, ServingError
from service.manager import InferResult, ModelManager
from service.metrics import ServingMetrics
from service.protocols.grpc_common import GrpcService
from service.protocols.proto import tfserving_pb2 as pb
from service.protocols.tf_examples import (
    CLASSIFY,
    REGRESS,
    classification_result,
    regression_result,
    serialized_examples,
    single_string_input,
)
from service.tfserving_config import served_models_of

__all__ = ["PREDICTION_SERVICE", "MODEL_SERVICE", "TFServingGrpc"]

PREDICTION_SERVICE = "tensorflow.serving.PredictionService"
MODEL_SERVICE = "tensorflow.serving.ModelService"
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
        reload_models: Callable[[list], Awaitable[None]] | None = None,
    ):
        super().__init__(manager, metrics, auth_token)
        self.max_tensor_bytes = max_tensor_bytes
        self.reload_models = reload_models

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
                inputs = {single_string_input(sig): inputs}
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
            self.observe(name, served, status, start, endpoint="predict")

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
        if dims is not None and all(d >= 0 for d in dims):
            # A string element costs at least a pointer, even when it repeats the last value.
            itemsize = 8 if dtype is dtypes.string else dtype.size
            size = math.prod(dims) * itemsize
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
            request.model_spec, serialized_examples(request.input), None, context, CLASSIFY
        )
        return pb.ClassificationResponse(
            model_spec=self._model_spec(result), result=classification_result(result)
        )

    async def regress(self, request: Message, context: grpc.aio.ServicerContext) -> Message:
        result = await self._infer(
            request.model_spec, serialized_examples(request.input), None, context, REGRESS
        )
        return pb.RegressionResponse(
            model_spec=self._model_spec(result), result=regression_result(result)
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
        examples = serialized_examples(request.input)
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
                entry.classification_result.CopyFrom(classification_result(result))
            else:
                entry.regression_result.CopyFrom(regression_result(result))
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

    async def reload_config(self, request: Message, context: grpc.aio.ServicerContext) -> Message:
        """Serves exactly the request's ``model_config_list`` (flowserve-tfserving only)."""
        if self.reload_models is None:
            await context.abort(
                grpc.StatusCode.UNIMPLEMENTED,
                "HandleReloadConfigRequest is not supported: flowserve serves the models of "
                "its model repository (add, remove or change them there; it is polled). "
                "flowserve-tfserving supports it.",
            )
        try:
            models = served_models_of(request.config, "ReloadConfigRequest.config")
        except ConfigError as e:
            raise InvalidInput(str(e)) from None
        await self.reload_models(models)
        return pb.ReloadConfigResponse(status=pb.StatusProto(error_code=pb.OK))


def _signature_def(sig) -> meta_graph_pb2.SignatureDef:
    out = meta_graph_pb2.SignatureDef(method_name=sig.method_name)
    for side, specs in (("inputs", sig.inputs), ("outputs", sig.outputs)):
        for alias, spec in specs.items():
            info = getattr(out, side)[alias]
            info.name = spec.tensor_name
            info.dtype = spec.dtype.base_dtype.as_datatype_enum
            info.tensor_shape.CopyFrom(tf_tensors.shape_to_proto(spec.dims))
    return out
