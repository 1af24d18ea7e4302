"""TF 1.15's ``tf.estimator.export``: serving input receivers and export outputs.

A ``serving_input_receiver_fn`` builds the serving graph's inputs and returns a
``ServingInputReceiver(features, receiver_tensors)``; ``Estimator.export_saved_model`` calls
``model_fn`` on its features in PREDICT mode and turns each of the spec's export outputs
(``PredictOutput``, ``ClassificationOutput``, ``RegressionOutput``) into a signature over the
receiver tensors, as ``build_all_signature_defs`` does in TF.

    >>> fn = tf.estimator.export.build_raw_serving_input_receiver_fn(
    ...     {"x": tf.placeholder(tf.float32, [None, 3])})
    >>> path = estimator.export_saved_model("/tmp/export", fn)
"""

from __future__ import annotations

import collections
import os
import time

from engine import dtypes
from engine import tf_logging as logging
from engine.framework.graph import Tensor
from engine.framework.sparse_tensor import SparseTensor
from engine.ops.array import placeholder
from engine.parsing import parse_example
from engine.saving.meta_graph import (
    CLASSIFY_METHOD_NAME,
    PREDICT_METHOD_NAME,
    REGRESS_METHOD_NAME,
    build_tensor_info,
)
from engine.saving.saved_model import DEFAULT_SERVING_SIGNATURE_DEF_KEY, build_signature_def
from engine.tensor_shape import TensorShape

__all__ = [
    "ExportOutput",
    "PredictOutput",
    "ClassificationOutput",
    "RegressionOutput",
    "ServingInputReceiver",
    "TensorServingInputReceiver",
    "build_raw_serving_input_receiver_fn",
    "build_parsing_serving_input_receiver_fn",
]

_SINGLE_FEATURE_DEFAULT_NAME = "feature"
_SINGLE_RECEIVER_DEFAULT_NAME = "input"
_MAX_DIRECTORY_CREATION_ATTEMPTS = 10


class ExportOutput:
    """One output signature of an exported model (subclasses say which kind)."""

    _SEPARATOR_CHAR = "/"

    def as_signature_def(self, receiver_tensors):
        raise NotImplementedError

    def _check_output_key(self, key, error_label):
        if isinstance(key, tuple):  # multi-head models key outputs by (head, name)
            key = self._SEPARATOR_CHAR.join(key)
        if not isinstance(key, str):
            raise ValueError(f"{error_label} output key must be a string; got {key}.")
        return key

    def _wrap_and_check_outputs(self, outputs, single_output_default_name, error_label=None):
        if not isinstance(outputs, dict):
            outputs = {single_output_default_name: outputs}
        error_name = error_label or single_output_default_name
        checked = {}
        for key, value in outputs.items():
            key = self._check_output_key(key, error_name)
            if not isinstance(value, Tensor):
                raise ValueError(f"{error_name} output value must be a Tensor; got {value}.")
            checked[key] = value
        return checked


class PredictOutput(ExportOutput):
    """A Predict signature over ``outputs`` (a tensor, named ``output``, or a dict)."""

    _SINGLE_OUTPUT_DEFAULT_NAME = "output"

    def __init__(self, outputs):
        self._outputs = self._wrap_and_check_outputs(
            outputs, self._SINGLE_OUTPUT_DEFAULT_NAME, error_label="Prediction"
        )

    @property
    def outputs(self) -> dict:
        return self._outputs

    def as_signature_def(self, receiver_tensors):
        return build_signature_def(
            {k: build_tensor_info(v) for k, v in receiver_tensors.items()},
            {k: build_tensor_info(v) for k, v in self._outputs.items()},
            PREDICT_METHOD_NAME,
        )


def _single_string_input(receiver_tensors, what: str) -> Tensor:
    if len(receiver_tensors) != 1:
        raise ValueError(f"{what} input must be a single string Tensor; got {receiver_tensors}")
    (examples,) = receiver_tensors.values()
    if examples.dtype != dtypes.string:
        raise ValueError(f"{what} input must be a single string Tensor; got {receiver_tensors}")
    return examples


class ClassificationOutput(ExportOutput):
    """A Classify signature: ``scores`` (float) and/or ``classes`` (string) over one string
    input of serialized examples."""

    def __init__(self, scores=None, classes=None):
        if scores is not None and not (isinstance(scores, Tensor) and scores.dtype.is_floating):
            raise ValueError(f"Classification scores must be a float32 Tensor; got {scores}")
        if classes is not None and not (
            isinstance(classes, Tensor) and classes.dtype == dtypes.string
        ):
            raise ValueError(f"Classification classes must be a string Tensor; got {classes}")
        if scores is None and classes is None:
            raise ValueError("At least one of scores and classes must be set.")
        self.scores, self.classes = scores, classes

    def as_signature_def(self, receiver_tensors):
        examples = _single_string_input(receiver_tensors, "Classification")
        outputs = {}
        if self.classes is not None:
            outputs["classes"] = build_tensor_info(self.classes)
        if self.scores is not None:
            outputs["scores"] = build_tensor_info(self.scores)
        return build_signature_def(
            {"inputs": build_tensor_info(examples)}, outputs, CLASSIFY_METHOD_NAME
        )


class RegressionOutput(ExportOutput):
    """A Regress signature: float ``value`` over one string input of serialized examples."""

    def __init__(self, value):
        if not (isinstance(value, Tensor) and value.dtype.is_floating):
            raise ValueError(f"Regression output value must be a float32 Tensor; got {value}")
        self.value = value

    def as_signature_def(self, receiver_tensors):
        examples = _single_string_input(receiver_tensors, "Regression")
        return build_signature_def(
            {"inputs": build_tensor_info(examples)},
            {"outputs": build_tensor_info(self.value)},
            REGRESS_METHOD_NAME,
        )


def get_export_outputs(export_outputs, predictions) -> dict:
    """TF's export outputs of a PREDICT spec: a ``PredictOutput`` of the predictions unless
    given, with one of them keyed ``serving_default``."""
    if export_outputs is None:
        export_outputs = {DEFAULT_SERVING_SIGNATURE_DEF_KEY: PredictOutput(predictions)}
    if not isinstance(export_outputs, dict):
        raise TypeError(f"export_outputs must be dict, given: {export_outputs}")
    for v in export_outputs.values():
        if not isinstance(v, ExportOutput):
            raise TypeError(
                f"Values in export_outputs must be ExportOutput objects. Given: {export_outputs}"
            )
    export_outputs = dict(export_outputs)
    if len(export_outputs) == 1:
        ((_, value),) = export_outputs.items()
        export_outputs.setdefault(DEFAULT_SERVING_SIGNATURE_DEF_KEY, value)
    elif DEFAULT_SERVING_SIGNATURE_DEF_KEY not in export_outputs:
        raise ValueError(
            "Multiple export_outputs were provided, but none of them is specified as the "
            "default.  Do this by naming one of them with "
            "signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY."
        )
    return export_outputs


def _wrap_and_check_input_tensors(tensors, field_name: str, default_name: str) -> dict:
    if tensors is None:
        raise ValueError(f"{field_name} must be defined.")
    if not isinstance(tensors, dict):
        tensors = {default_name: tensors}
    for name, tensor in tensors.items():
        if not isinstance(name, str):
            raise ValueError(f"{field_name} keys must be strings: {name}.")
        if not isinstance(tensor, (Tensor, SparseTensor)):
            raise ValueError(f"{field_name} must be a Tensor or SparseTensor: {tensor}.")
    return dict(tensors)


class ServingInputReceiver(
    collections.namedtuple(
        "ServingInputReceiver", ["features", "receiver_tensors", "receiver_tensors_alternatives"]
    )
):
    """The serving graph's inputs: ``receiver_tensors`` (what requests feed) and the
    ``features`` the model_fn gets (a single tensor becomes ``{"feature": t}``)."""

    def __new__(cls, features, receiver_tensors, receiver_tensors_alternatives=None):
        features = _wrap_and_check_input_tensors(features, "features", _SINGLE_FEATURE_DEFAULT_NAME)
        receiver_tensors = _wrap_and_check_input_tensors(
            receiver_tensors, "receiver_tensors", _SINGLE_RECEIVER_DEFAULT_NAME
        )
        alternatives = {}
        for key, tensors in (receiver_tensors_alternatives or {}).items():
            alternatives[key] = _wrap_and_check_input_tensors(
                tensors, "receiver_tensors_alternative", _SINGLE_RECEIVER_DEFAULT_NAME
            )
        return super().__new__(cls, features, receiver_tensors, alternatives or None)


class TensorServingInputReceiver(
    collections.namedtuple(
        "TensorServingInputReceiver",
        ["features", "receiver_tensors", "receiver_tensors_alternatives"],
    )
):
    """As ``ServingInputReceiver``, but the model_fn gets ``features``, one tensor, as is."""

    def __new__(cls, features, receiver_tensors, receiver_tensors_alternatives=None):
        if features is None:
            raise ValueError("features must be defined.")
        if not isinstance(features, (Tensor, SparseTensor)):
            raise ValueError(f"feature must be a Tensor or SparseTensor: {features}.")
        wrapped = ServingInputReceiver(features, receiver_tensors, receiver_tensors_alternatives)
        return super().__new__(
            cls, features, wrapped.receiver_tensors, wrapped.receiver_tensors_alternatives
        )


def _placeholder_from_tensor(t, default_batch_size=None):
    shape = TensorShape([default_batch_size]).concatenate(t.shape[1:])
    return placeholder(t.dtype, shape=shape, name=t.op.name)


def build_raw_serving_input_receiver_fn(features, default_batch_size=None):
    """A receiver fn whose requests feed ``features`` directly: one placeholder per feature
    (its dtype, its shape past the batch dimension, its op name), batch ``default_batch_size``.
    """

    def serving_input_receiver_fn():
        if isinstance(features, dict):
            tensors = {
                k: _placeholder_from_tensor(t, default_batch_size) for k, t in features.items()
            }
        else:
            tensors = _placeholder_from_tensor(features, default_batch_size)
        return ServingInputReceiver(tensors, tensors)

    return serving_input_receiver_fn


def build_parsing_serving_input_receiver_fn(feature_spec, default_batch_size=None):
    """A receiver fn whose requests feed serialized ``tf.Example``s (``examples``), parsed
    with ``feature_spec``."""

    def serving_input_receiver_fn():
        serialized = placeholder(
            dtypes.string, shape=[default_batch_size], name="input_example_tensor"
        )
        features = parse_example(serialized, feature_spec)
        return ServingInputReceiver(features, {"examples": serialized})

    return serving_input_receiver_fn


def build_all_signature_defs(receiver_tensors, export_outputs, alternatives=None) -> dict:
    """One signature per export output over the receiver tensors (and per alternative
    receiver); outputs that cannot form a signature with them are left out, as TF does."""
    signatures, excluded = {}, {}
    receivers = {None: receiver_tensors, **(alternatives or {})}
    for receiver_name, tensors in receivers.items():
        for output_key, export_output in export_outputs.items():
            name = str(output_key) if receiver_name is None else f"{receiver_name}:{output_key}"
            try:
                signatures[name] = export_output.as_signature_def(tensors)
            except ValueError as e:
                excluded[name] = str(e)
    for name, why in excluded.items():
        logging.warning("Signature %s is not exported: %s", name, why)
    if not signatures:
        raise ValueError("Export failed: no signature could be built from the export outputs.")
    return signatures


def timestamped_export_dir(export_dir_base) -> str:
    """``export_dir_base/<seconds since the epoch>``, a name not yet taken."""
    export_dir_base = os.fsdecode(export_dir_base)
    for _ in range(_MAX_DIRECTORY_CREATION_ATTEMPTS):
        export_dir = os.path.join(export_dir_base, str(int(time.time())))
        if not os.path.exists(export_dir):
            return export_dir
        time.sleep(1)
    raise RuntimeError(
        f"Failed to obtain a unique export directory name after "
        f"{_MAX_DIRECTORY_CREATION_ATTEMPTS} attempts."
    )
