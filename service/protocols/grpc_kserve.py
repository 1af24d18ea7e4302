"""KServe V2 over gRPC: ``inference.GRPCInferenceService``, as Triton serves it.

The messages are our own compiled copy of the protocol (``proto/kserve.proto``, package
``flowserve.kserve``) registered under the canonical service name, so ``tritonclient.grpc``
and any other V2 gRPC client talk to it unchanged. Every RPC parses, calls the same core as
the REST adapter (``ModelManager``; batching, deadlines and metrics included) and serializes.

Tensors: an input's data is either typed ``contents`` (the field for its datatype; FP16 has
none and must be raw) or one entry of ``raw_input_contents`` per input without shared memory,
in input order (little-endian, row-major; BYTES elements 4-byte length + bytes), or a system
shared memory window (``shared_memory_region``/``_byte_size``/``_offset`` parameters). Outputs
always come back in ``raw_output_contents`` (as Triton does), or are written to the output's
shared memory window, whose entry then carries the region parameters and an empty buffer.

Request parameters: ``timeout`` in microseconds (Triton's), ``signature_name`` (which
signature to run). The gRPC deadline applies too; the earlier wins. ``sequence_id`` is refused
(no sequence batching). Errors carry gRPC codes: NOT_FOUND (unknown model, with Triton's
"Request for unknown model" text), INVALID_ARGUMENT, UNAVAILABLE, DEADLINE_EXCEEDED,
UNAUTHENTICATED, RESOURCE_EXHAUSTED (messages over the size limit, from gRPC itself).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator

import grpc
import numpy as np
from google.protobuf import json_format
from google.protobuf.message import Message

import service
from engine import dtypes
from service.errors import InvalidInput, ModelNotFound, ServingError
from service.log_settings import LogSettings
from service.manager import InferResult, ModelManager
from service.metrics import ServingMetrics
from service.protocols import kserve_v2 as v2
from service.protocols import v2_tensors as v2t
from service.protocols.classification import apply_classification, class_count
from service.protocols.grpc_common import GrpcService, serialize
from service.protocols.proto import kserve_pb2 as pb
from service.protocols.shared_memory import SharedMemoryRegistry
from service.tensors import check_shape
from service.trace_settings import TraceSettings

__all__ = ["SERVICE_NAME", "KServeGrpc"]

SERVICE_NAME = "inference.GRPCInferenceService"
STREAM_WINDOW = 64  # requests of one stream in flight at once

# The typed contents field of each datatype (FP16 has none: raw only).
_CONTENTS_FIELD = {
    "BOOL": "bool_contents",
    "INT8": "int_contents",
    "INT16": "int_contents",
    "INT32": "int_contents",
    "INT64": "int64_contents",
    "UINT8": "uint_contents",
    "UINT16": "uint_contents",
    "UINT32": "uint_contents",
    "UINT64": "uint64_contents",
    "FP32": "fp32_contents",
    "FP64": "fp64_contents",
    "BYTES": "bytes_contents",
}


def _param(p) -> object:
    which = p.WhichOneof("parameter_choice")
    return None if which is None else getattr(p, which)


def _params(mapping) -> dict:
    return {k: _param(v) for k, v in mapping.items()}


class KServeGrpc(GrpcService):
    """The V2 gRPC service over one manager (and the server's shared memory regions)."""

    def __init__(
        self,
        manager: ModelManager,
        metrics: ServingMetrics | None = None,
        shared_memory: SharedMemoryRegistry | None = None,
        auth_token: str | None = None,
        log_settings: LogSettings | None = None,
        trace_settings: TraceSettings | None = None,
    ):
        super().__init__(manager, metrics, auth_token)
        self.shared_memory = shared_memory or SharedMemoryRegistry()
        self.log = log_settings or LogSettings()
        self.trace = trace_settings or TraceSettings()

    # -- plumbing ----------------------------------------------------------------------------
    def handler(self) -> grpc.GenericRpcHandler:
        unary = {
            "ServerLive": (self.server_live, pb.ServerLiveRequest),
            "ServerReady": (self.server_ready, pb.ServerReadyRequest),
            "ModelReady": (self.model_ready, pb.ModelReadyRequest),
            "ServerMetadata": (self.server_metadata, pb.ServerMetadataRequest),
            "ModelMetadata": (self.model_metadata, pb.ModelMetadataRequest),
            "ModelInfer": (self.model_infer, pb.ModelInferRequest),
            "ModelConfig": (self.model_config, pb.ModelConfigRequest),
            "ModelStatistics": (self.model_statistics, pb.ModelStatisticsRequest),
            "RepositoryIndex": (self.repository_index, pb.RepositoryIndexRequest),
            "RepositoryModelLoad": (self.repository_load, pb.RepositoryModelLoadRequest),
            "RepositoryModelUnload": (self.repository_unload, pb.RepositoryModelUnloadRequest),
            "SystemSharedMemoryStatus": (self.shm_status, pb.SystemSharedMemoryStatusRequest),
            "SystemSharedMemoryRegister": (
                self.shm_register,
                pb.SystemSharedMemoryRegisterRequest,
            ),
            "SystemSharedMemoryUnregister": (
                self.shm_unregister,
                pb.SystemSharedMemoryUnregisterRequest,
            ),
            "LogSettings": (self.log_settings, pb.LogSettingsRequest),
            "TraceSetting": (self.trace_setting, pb.TraceSettingRequest),
            "CudaSharedMemoryStatus": (self.cuda_shm, pb.CudaSharedMemoryStatusRequest),
            "CudaSharedMemoryRegister": (self.cuda_shm, pb.CudaSharedMemoryRegisterRequest),
            "CudaSharedMemoryUnregister": (self.cuda_shm, pb.CudaSharedMemoryUnregisterRequest),
        }
        methods = {
            name: self.method(fn, request_type) for name, (fn, request_type) in unary.items()
        }
        methods["ModelStreamInfer"] = grpc.stream_stream_rpc_method_handler(
            self.model_stream_infer,
            request_deserializer=pb.ModelInferRequest.FromString,
            response_serializer=serialize,
        )
        return grpc.method_handlers_generic_handler(SERVICE_NAME, methods)

    # -- health and metadata -----------------------------------------------------------------
    async def server_live(self, _request: Message, _context: grpc.aio.ServicerContext) -> Message:
        return pb.ServerLiveResponse(live=True)

    async def server_ready(self, _request: Message, _context: grpc.aio.ServicerContext) -> Message:
        return pb.ServerReadyResponse(ready=self.manager.ready)

    async def model_ready(self, request: Message, _context: grpc.aio.ServicerContext) -> Message:
        try:
            self.manager.resolve(request.name, request.version or None)
        except ServingError:
            return pb.ModelReadyResponse(ready=False)
        return pb.ModelReadyResponse(ready=True)

    async def server_metadata(
        self, _request: Message, _context: grpc.aio.ServicerContext
    ) -> Message:
        return pb.ServerMetadataResponse(
            name="flowserve", version=service.__version__, extensions=v2.EXTENSIONS
        )

    async def model_metadata(self, request: Message, _context: grpc.aio.ServicerContext) -> Message:
        with v2.triton_errors(request.name):
            doc = v2.model_metadata_doc(self.manager, request.name, request.version or None)
        return json_format.ParseDict(doc, pb.ModelMetadataResponse(), ignore_unknown_fields=True)

    async def model_config(self, request: Message, _context: grpc.aio.ServicerContext) -> Message:
        with v2.triton_errors(request.name):
            doc = v2.model_config_doc(self.manager, request.name, request.version or None)
        return pb.ModelConfigResponse(config=json_format.ParseDict(doc, pb.ModelConfig()))

    async def model_statistics(
        self, request: Message, _context: grpc.aio.ServicerContext
    ) -> Message:
        with v2.triton_errors(request.name):
            stats = self.manager.model_statistics(request.name, request.version or None)
        return json_format.ParseDict({"model_stats": stats}, pb.ModelStatisticsResponse())

    # -- repository ----------------------------------------------------------------------------
    async def repository_index(
        self, request: Message, _context: grpc.aio.ServicerContext
    ) -> Message:
        rows = v2.repository_index_rows(self.manager, request.ready)
        return pb.RepositoryIndexResponse(
            models=[pb.RepositoryIndexResponse.ModelIndex(**row) for row in rows]
        )

    async def repository_load(
        self, request: Message, _context: grpc.aio.ServicerContext
    ) -> Message:
        params = {k: _repository_param(v) for k, v in request.parameters.items()}
        await v2.load_model(self.manager, request.model_name, params)
        return pb.RepositoryModelLoadResponse()

    async def repository_unload(
        self, request: Message, _context: grpc.aio.ServicerContext
    ) -> Message:
        await self.manager.unload_model(request.model_name)
        return pb.RepositoryModelUnloadResponse()

    # -- shared memory -------------------------------------------------------------------------
    async def shm_status(self, request: Message, _context: grpc.aio.ServicerContext) -> Message:
        response = pb.SystemSharedMemoryStatusResponse()
        for row in self.shared_memory.status(request.name or None):
            response.regions[row["name"]].CopyFrom(
                pb.SystemSharedMemoryStatusResponse.RegionStatus(**row)
            )
        return response

    async def shm_register(self, request: Message, _context: grpc.aio.ServicerContext) -> Message:
        self.shared_memory.register(request.name, request.key, request.offset, request.byte_size)
        return pb.SystemSharedMemoryRegisterResponse()

    async def shm_unregister(self, request: Message, _context: grpc.aio.ServicerContext) -> Message:
        self.shared_memory.unregister(request.name or None)
        return pb.SystemSharedMemoryUnregisterResponse()

    async def trace_setting(self, request: Message, _context: grpc.aio.ServicerContext) -> Message:
        """Triton's TraceSetting: an empty value list clears a setting (HTTP's null)."""
        model = request.model_name or None
        with v2.triton_errors(request.model_name):
            if model and model not in self.manager.model_names():
                raise ModelNotFound(f"unknown model {model!r}", model)
        changes = {}
        for key, entry in request.settings.items():
            values = list(entry.value)
            changes[key] = (values if key == "trace_level" else values[0]) if values else None
            if key != "trace_level" and len(values) > 1:
                raise InvalidInput(f"{key} takes one value, got {values}")
        current = self.trace.update(changes, model) if changes else self.trace.current(model)
        response = pb.TraceSettingResponse()
        for key, value in current.items():
            response.settings[key].value.extend(value if isinstance(value, list) else [value])
        return response

    async def log_settings(self, request: Message, _context: grpc.aio.ServicerContext) -> Message:
        changes = {}
        for key, value in request.settings.items():
            which = value.WhichOneof("parameter_choice")
            changes[key] = None if which is None else getattr(value, which)
        current = self.log.update(changes) if changes else self.log.current()
        response = pb.LogSettingsResponse()
        for key, value in current.items():
            entry = response.settings[key]
            if isinstance(value, bool):
                entry.bool_param = value
            elif isinstance(value, int):
                entry.uint32_param = value
            else:
                entry.string_param = value
        return response

    async def cuda_shm(self, _request: Message, _context: grpc.aio.ServicerContext) -> Message:
        raise InvalidInput(v2.CUDA_SHM_REFUSED)

    # -- inference -----------------------------------------------------------------------------
    async def model_infer(self, request: Message, context: grpc.aio.ServicerContext) -> Message:
        start = time.perf_counter()
        status = 500
        version = request.model_version
        try:
            result = await self._infer(request, context.time_remaining())
            version, status = result.version, 200
            return self._response(request, result)
        except ServingError as e:
            status = e.http_status
            raise
        finally:
            self.observe(request.model_name, version, status, start)

    async def model_stream_infer(
        self, request_iterator: AsyncIterator[Message], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[Message]:
        """Each request's response (or its error, in ``error_message``) in request order.
        Requests run concurrently (so a stream can fill a batch), at most
        ``STREAM_WINDOW`` at a time; responses still leave in the order requests came."""
        await self.check_auth(context)
        pending: asyncio.Queue = asyncio.Queue(maxsize=STREAM_WINDOW)

        async def read() -> None:
            try:
                async for request in request_iterator:
                    await pending.put(asyncio.ensure_future(self._stream_one(request, context)))
            finally:
                await pending.put(None)

        reader = asyncio.ensure_future(read())
        try:
            while (task := await pending.get()) is not None:
                yield await task
            await reader  # re-raises a failure to read the stream
        finally:
            reader.cancel()
            while not pending.empty():
                task = pending.get_nowait()
                if task is not None:
                    task.cancel()

    async def _stream_one(self, request: Message, context: grpc.aio.ServicerContext) -> Message:
        start = time.perf_counter()
        try:
            result = await self._infer(request, context.time_remaining())
            response = self._response(request, result)
            self.observe(request.model_name, result.version, 200, start)
            return pb.ModelStreamInferResponse(infer_response=response)
        except ServingError as e:
            self.observe(request.model_name, request.model_version, e.http_status, start)
            return pb.ModelStreamInferResponse(
                error_message=e.message,
                infer_response=pb.ModelInferResponse(
                    id=request.id,
                    model_name=request.model_name,
                    model_version=request.model_version,
                ),
            )

    async def _infer(self, request, remaining: float | None) -> InferResult:
        params = _params(request.parameters)
        sequence = params.get("sequence_id")
        if sequence not in (None, 0, ""):
            raise InvalidInput(
                "sequence_id: sequence batching is not supported (flowserve models are stateless)"
            )
        signature = params.get("signature_name")
        if signature is not None and not isinstance(signature, str):
            raise InvalidInput("parameters.signature_name must be a string")
        timeouts = [t for t in (remaining, v2.timeout_micros(params.get("timeout"))) if t]
        inputs = self._inputs(request)
        wanted = [o.name for o in request.outputs] or None
        for o in request.outputs:
            self._check_output_params(o)
        with v2.triton_errors(request.model_name):
            return await self.manager.infer(
                request.model_name,
                inputs,
                version=request.model_version or None,
                signature=signature,
                outputs=wanted,
                timeout=min(timeouts) if timeouts else None,
            )

    def _inputs(self, request) -> dict[str, np.ndarray]:
        raw = request.raw_input_contents
        inputs: dict[str, np.ndarray] = {}
        next_raw = 0
        for i, tensor in enumerate(request.inputs):
            name = tensor.name
            if not name:
                raise InvalidInput(f"inputs[{i}] has no name")
            what = f"input '{name}'"
            if name in inputs:
                raise InvalidInput(f"{what} is given more than once")
            dtype = v2t.parse_datatype(tensor.datatype, what)
            shape = v2t.parse_shape(list(tensor.shape), what)
            check_shape(shape, what, self.manager.config.max_tensor_elements)
            params = _params(tensor.parameters)
            has_contents = tensor.HasField("contents") and tensor.contents.ByteSize() > 0
            if "shared_memory_region" in params:
                data = self.shared_memory.read(
                    params["shared_memory_region"],
                    params.get("shared_memory_offset", 0) or 0,
                    params.get("shared_memory_byte_size", 0) or 0,
                    what,
                )
                inputs[name] = v2t.tensor_from_raw(data, dtype, shape, tensor.datatype, what)
            elif raw:
                if has_contents:
                    raise InvalidInput(
                        f"{what} has typed contents, but the request sends raw_input_contents; "
                        "send every input one way"
                    )
                if next_raw >= len(raw):
                    raise InvalidInput(
                        f"{what}: the request has {len(raw)} raw_input_contents entries, "
                        f"fewer than its inputs without shared memory"
                    )
                inputs[name] = v2t.tensor_from_raw(
                    raw[next_raw], dtype, shape, tensor.datatype, what
                )
                next_raw += 1
            else:
                inputs[name] = _from_contents(tensor, dtype, shape, what)
        if next_raw != len(raw):
            raise InvalidInput(
                f"the request has {len(raw)} raw_input_contents entries but {next_raw} "
                "input(s) read raw data"
            )
        return inputs

    def _check_output_params(self, output) -> None:
        params = _params(output.parameters)
        if "classification" in params:
            class_count(params["classification"], f"output '{output.name}'")
        if "shared_memory_region" in params:
            self.shared_memory.check_write(
                params["shared_memory_region"],
                params.get("shared_memory_offset", 0) or 0,
                params.get("shared_memory_byte_size", 0) or 0,
                f"output '{output.name}'",
            )

    def _response(self, request: Message, result: InferResult) -> Message:
        shm = {o.name: _params(o.parameters) for o in request.outputs}
        classes = {
            name: params["classification"]
            for name, params in shm.items()
            if "classification" in params
        }
        apply_classification(self.manager, result, classes)
        response = pb.ModelInferResponse(
            model_name=result.model, model_version=str(result.version), id=request.id
        )
        for name, arr in result.outputs.items():
            out = response.outputs.add(
                name=name, datatype=v2t.output_datatype(name, arr), shape=list(arr.shape)
            )
            raw = v2t.tensor_to_raw(arr)
            params = shm.get(name, {})
            region = params.get("shared_memory_region")
            if region is not None:
                size = params.get("shared_memory_byte_size", 0) or 0
                offset = params.get("shared_memory_offset", 0) or 0
                self.shared_memory.write(region, offset, size, raw, f"output '{name}'")
                out.parameters["shared_memory_region"].string_param = region
                out.parameters["shared_memory_byte_size"].int64_param = len(raw)
                if offset:
                    out.parameters["shared_memory_offset"].int64_param = offset
                raw = b""
            response.raw_output_contents.append(raw)
        return response


def _repository_param(p):
    which = p.WhichOneof("parameter_choice")
    value = None if which is None else getattr(p, which)
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInput("repository parameters must be UTF-8 text") from None
    return value


def _from_contents(tensor, dtype: dtypes.DType, shape: list[int], what: str) -> np.ndarray:
    """A tensor from typed ``contents``: the field for its datatype, exactly as many values as
    the shape holds, each in the datatype's range."""
    field = _CONTENTS_FIELD.get(tensor.datatype)
    if field is None:
        raise InvalidInput(
            f"{what}: datatype {tensor.datatype} has no typed contents field; send it in "
            "raw_input_contents"
        )
    contents = tensor.contents
    others = [f.name for f, _ in contents.ListFields() if f.name != field]
    if others:
        raise InvalidInput(
            f"{what}: datatype {tensor.datatype} takes its data in contents.{field}, "
            f"not {', '.join(others)}"
        )
    values = getattr(contents, field)
    count = math.prod(shape)
    if len(values) != count:
        raise InvalidInput(
            f"{what}: shape {shape} holds {count} element(s) but contents.{field} has {len(values)}"
        )
    if dtype is dtypes.string:
        arr = np.empty(count, dtype=object)
        arr[:] = list(values)
        return arr.reshape(shape)
    wide = np.asarray(values, dtype=np.float64 if dtype.is_floating else None)
    if count and dtype.is_integer:
        info = np.iinfo(dtype.np)
        if wide.min() < info.min or wide.max() > info.max:
            raise InvalidInput(
                f"{what}: values out of range for {tensor.datatype} [{info.min}, {info.max}]"
            )
    return wide.astype(dtype.np).reshape(shape)
