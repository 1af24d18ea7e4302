"""TF Serving's warmup file: ``assets.extra/tf_serving_warmup_requests`` in a version directory.

The file is a TFRecord of ``PredictionLog`` protos (``tensorflow_serving/apis/
prediction_log.proto``), as TF Serving reads it at load: each record's request runs once
against the freshly loaded version before it serves. Predict, Classify, Regress and
MultiInference logs are run (a ``predict_streamed_log`` runs each of its requests); a
SessionRun log, a record that does not parse, a bad checksum, too many records or an
oversized file fail the load with the reason, as TF Serving's load fails. The records are
bounded like TF Serving's (at most 1000) and every tensor's size is checked before it is
materialised.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from google.protobuf.message import DecodeError

from engine import dtypes
from engine.formats.tensorflow import tensors as tf_tensors
from engine.formats.tensorflow.tfrecord import read_records
from service.errors import InvalidInput
from service.protocols.proto import tfserving_pb2 as pb
from service.protocols.tf_examples import CLASSIFY, REGRESS, serialized_examples

__all__ = ["WARMUP_FILE", "MAX_WARMUP_RECORDS", "WarmupRequest", "WarmupError", "read_warmup"]

WARMUP_FILE = "assets.extra/tf_serving_warmup_requests"
MAX_WARMUP_RECORDS = 1000  # TF Serving's kMaxNumRecords
MAX_WARMUP_FILE_BYTES = 256 << 20
MAX_WARMUP_TENSOR_BYTES = 64 << 20


class WarmupError(ValueError):
    """The warmup file cannot be used; the message names the record and the reason."""


@dataclass
class WarmupRequest:
    """One request to run: ``inputs`` by alias (Predict) or the serialized examples for the
    signature's single string input (``method`` CLASSIFY or REGRESS)."""

    record: int
    signature_name: str  # "" for the default signature
    method: str | None
    inputs: dict[str, np.ndarray] | None = None
    examples: np.ndarray | None = None


def warmup_path(version_dir: str | Path) -> Path | None:
    path = Path(version_dir) / WARMUP_FILE
    return path if path.is_file() else None


def read_warmup(path: str | Path) -> list[WarmupRequest]:
    """The requests of the warmup file at ``path``; WarmupError naming what is wrong."""
    try:
        records = read_records(
            path, max_records=MAX_WARMUP_RECORDS, max_file_bytes=MAX_WARMUP_FILE_BYTES
        )
    except tf_tensors.TFFormatError as e:
        raise WarmupError(f"{WARMUP_FILE}: {_tail(str(e), path)}") from None
    requests: list[WarmupRequest] = []
    for i, data in enumerate(records):
        try:
            log = pb.PredictionLog.FromString(data)
        except DecodeError:
            raise WarmupError(f"{WARMUP_FILE}: record {i} is not a PredictionLog") from None
        try:
            requests.extend(_requests(i, log))
        except (InvalidInput, tf_tensors.TFFormatError) as e:
            raise WarmupError(f"{WARMUP_FILE}: record {i}: {e}") from None
    return requests


def _tail(message: str, path) -> str:
    prefix = f"{path}: "
    return message[len(prefix) :] if message.startswith(prefix) else message


def _requests(i: int, log) -> list[WarmupRequest]:
    kind = log.WhichOneof("log_type")
    if kind == "predict_log":
        return [_predict(i, log.predict_log.request)]
    if kind == "predict_streamed_log":
        return [_predict(i, r) for r in log.predict_streamed_log.request]
    if kind in ("classify_log", "regress_log"):
        request = getattr(log, kind).request
        method = CLASSIFY if kind == "classify_log" else REGRESS
        return [
            WarmupRequest(
                i,
                request.model_spec.signature_name,
                method,
                examples=serialized_examples(request.input),
            )
        ]
    if kind == "multi_inference_log":
        request = log.multi_inference_log.request
        if not request.tasks:
            raise InvalidInput("MultiInferenceRequest has no tasks")
        examples = serialized_examples(request.input)
        out = []
        for task in request.tasks:
            if task.method_name not in (CLASSIFY, REGRESS):
                raise InvalidInput(f"unsupported task method_name {task.method_name!r}")
            out.append(
                WarmupRequest(
                    i, task.model_spec.signature_name, task.method_name, examples=examples
                )
            )
        return out
    if kind == "session_run_log":
        raise InvalidInput("Unsupported log_type for warmup: session_run_log")
    raise InvalidInput("the PredictionLog holds no request (log_type unset)")


def _predict(i: int, request) -> WarmupRequest:
    inputs = {}
    for alias, tensor in request.inputs.items():
        what = f"input '{alias}'"
        dtype = tf_tensors.dtype_from_enum(tensor.dtype, what)
        dims = tf_tensors.shape_from_proto(tensor.tensor_shape, what)
        if dims is not None and all(d >= 0 for d in dims):
            itemsize = 8 if dtype is dtypes.string else dtype.size
            size = math.prod(dims) * itemsize
            if size > MAX_WARMUP_TENSOR_BYTES:
                raise InvalidInput(
                    f"{what}: shape {dims} of {dtype.name} takes {size} bytes, over the "
                    f"{MAX_WARMUP_TENSOR_BYTES}-byte limit"
                )
        inputs[alias] = tf_tensors.array_from_proto(tensor, what)
    if not inputs:
        raise InvalidInput("PredictRequest has no inputs")
    return WarmupRequest(i, request.model_spec.signature_name, None, inputs=inputs)
