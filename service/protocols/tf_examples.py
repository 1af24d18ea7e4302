"""TF Serving's Classify and Regress conventions, shared by its REST and gRPC adapters.

A classify or regress signature takes one string input: the request's ``tf.Example``s,
serialized (with the request's ``context`` features merged into each example, the example's
own features winning). A classify signature answers ``classes`` (strings) and/or ``scores``
(floats), ``[batch, k]`` or ``[batch]``; a regress signature answers ``outputs``, floats of
shape ``[batch]`` or ``[batch, 1]``. ``examples_from_json`` reads the REST form of examples:
``{"feature": value | [values]}`` with ints, floats, strings or ``{"b64": ...}``.
"""

from __future__ import annotations

import base64
import binascii
import numbers
from typing import TYPE_CHECKING

import numpy as np

from engine import dtypes
from service.errors import InvalidInput
from service.protocols.proto import tfserving_pb2 as pb

if TYPE_CHECKING:  # annotations only: the servable's warmup (service/tf_warmup.py) uses this
    from service.manager import InferResult
    from service.servable import Signature

__all__ = [
    "CLASSIFY",
    "REGRESS",
    "single_string_input",
    "serialized_examples",
    "classification_result",
    "regression_result",
    "examples_from_json",
]

CLASSIFY = "tensorflow/serving/classify"
REGRESS = "tensorflow/serving/regress"
MAX_EXAMPLES = 1 << 16


def single_string_input(sig: Signature) -> str:
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


def serialized_examples(request_input: pb.Input) -> np.ndarray:
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


def classification_result(result: InferResult) -> pb.ClassificationResult:
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


def regression_result(result: InferResult) -> pb.RegressionResult:
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


def _feature(value, what: str) -> pb.Feature:
    values = value if isinstance(value, list) else [value]
    feature = pb.Feature()
    if not values:
        return feature
    if all(isinstance(v, bool) for v in values):
        raise InvalidInput(f"{what}: booleans are not a tf.Example feature type")
    if all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in values):
        feature.int64_list.value.extend(int(v) for v in values)
    elif all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values):
        feature.float_list.value.extend(float(v) for v in values)
    elif all(isinstance(v, (str, dict)) for v in values):
        for v in values:
            if isinstance(v, dict):
                if set(v) != {"b64"} or not isinstance(v["b64"], str):
                    raise InvalidInput(f'{what}: an object value must be {{"b64": "..."}}')
                try:
                    feature.bytes_list.value.append(base64.b64decode(v["b64"], validate=True))
                except (binascii.Error, ValueError):
                    raise InvalidInput(f"{what}: invalid base64") from None
            else:
                feature.bytes_list.value.append(v.encode("utf-8"))
    else:
        raise InvalidInput(f"{what}: values must all be integers, all numbers or all strings")
    return feature


def _example(doc, what: str) -> pb.Example:
    if not isinstance(doc, dict):
        raise InvalidInput(f"{what} must be an object of features")
    example = pb.Example()
    for key, value in doc.items():
        example.features.feature[key].CopyFrom(_feature(value, f"{what} feature '{key}'"))
    return example


def examples_from_json(examples: object, context: object = None) -> pb.Input:
    """TF Serving REST's ``examples`` (and optional ``context``) as an ``Input``."""
    if not isinstance(examples, list) or not examples:
        raise InvalidInput("'examples' must be a non-empty list of objects")
    if len(examples) > MAX_EXAMPLES:
        raise InvalidInput(f"at most {MAX_EXAMPLES} examples per request")
    parsed = [_example(e, f"examples[{i}]") for i, e in enumerate(examples)]
    if context is None:
        return pb.Input(example_list=pb.ExampleList(examples=parsed))
    return pb.Input(
        example_list_with_context=pb.ExampleListWithContext(
            examples=parsed, context=_example(context, "context")
        )
    )
