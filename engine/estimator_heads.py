"""TF 1.15's canned-estimator heads (``tensorflow_estimator/.../canned/head.py``, v1): what
turns a model's logits into predictions, a loss, eval metrics, a train op and the export
signatures of an ``EstimatorSpec``.

* binary classification: sigmoid cross-entropy; predictions ``logits``, ``logistic``,
  ``probabilities``, ``class_ids``, ``classes``, ``all_class_ids``, ``all_classes``; metrics
  ``accuracy``, ``accuracy_baseline``, ``auc``, ``auc_precision_recall``, ``average_loss``,
  ``label/mean``, ``prediction/mean``, ``precision``, ``recall``; signatures
  ``serving_default`` and ``classification`` (scores, classes), ``regression`` (logistic),
  ``predict``.
* multi-class: sparse softmax cross-entropy; the same predictions without ``logistic``;
  metrics ``accuracy``, ``average_loss``; no ``regression`` signature.
* regression: squared error; prediction ``predictions``; metrics ``average_loss``,
  ``label/mean``, ``prediction/mean``; ``serving_default`` and ``regression`` (value),
  ``predict``.

The training loss is the per-example loss weighted by ``weight_column`` and reduced by
``loss_reduction`` (``SUM`` for the v1 canned estimators). Labels may be strings of
``label_vocabulary`` (looked up in a hash table as TF does), else integer class ids.
"""

from __future__ import annotations

from engine import dtypes, metrics, summary
from engine.estimator_export import ClassificationOutput, PredictOutput, RegressionOutput
from engine.estimator_spec import EstimatorSpec, ModeKeys
from engine.feature_column_core import _LazyBuilder, _NumericColumn, numeric_column
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import GraphKeys, control_dependencies, get_collection, name_scope
from engine.framework.sparse_tensor import SparseTensor, SparseTensorValue
from engine.losses import Reduction, compute_weighted_loss, sparse_softmax_cross_entropy
from engine.ops import array as array_ops
from engine.ops import array_transform, reduction
from engine.ops import math as math_ops
from engine.ops.control_flow import group
from engine.ops.logging_ops import assert_less_equal, assert_non_negative
from engine.ops.lookup import KeyValueTensorInitializer, StaticHashTable
from engine.ops.nn import softmax
from engine.ops.nn_losses import sigmoid_cross_entropy_with_logits
from engine.ops.string_ops import as_string
from engine.training import training_util

__all__ = ["binary_or_multi_class_head", "regression_head"]

_DEFAULT_SERVING_KEY = "serving_default"
_CLASSIFY_SERVING_KEY = "classification"
_REGRESS_SERVING_KEY = "regression"
_PREDICT_SERVING_KEY = "predict"


def _labels_as_tensor(labels, logits, expected_dimension: int):
    """TF's ``_check_dense_labels_match_logits_and_reshape``: dense labels of shape
    ``[batch, expected_dimension]`` (a trailing 1 added to ``[batch]`` labels)."""
    if labels is None:
        raise ValueError(
            "You must provide a labels Tensor. Given: None. Suggested troubleshooting steps: "
            "Check that your data contain your label feature. Check that your input_fn "
            "properly parses and returns labels."
        )
    if isinstance(labels, (SparseTensor, SparseTensorValue)):
        raise ValueError(
            "SparseTensor labels are not supported. labels must be a Tensor of shape "
            f"[D0, D1, ..., DN, {expected_dimension}], e.g. [batch_size, {expected_dimension}]."
        )
    with name_scope(None, "labels", [labels, logits]):
        labels = convert_to_tensor(labels)
        rank, logits_rank = labels.shape.rank, logits.shape.rank
        if rank is not None and logits_rank is not None and rank == logits_rank - 1:
            labels = array_ops.expand_dims(labels, -1)
        if labels.shape.rank is not None:
            dim = labels.shape.as_list()[-1] if labels.shape.rank else None
            if dim is not None and dim != expected_dimension:
                raise ValueError(
                    "Mismatched label shape. Expected labels dimension="
                    f"{expected_dimension}.  Received {dim}. Suggested Fix:If your classifier "
                    "expects one-hot encoding label,check your n_classes argument to the "
                    "estimator and/or the shape of your label. Otherwise, check the shape of "
                    "your label."
                )
        return labels


def _weights(features, weight_column, logits):
    """TF's ``_get_weights_and_check_match_logits``: 1.0 without ``weight_column``, else
    the column's values as float ``[batch, 1]``."""
    if weight_column is None:
        return 1.0
    with name_scope(None, "weights", [logits]):
        if isinstance(weight_column, str):
            weight_column = numeric_column(key=weight_column, shape=(1,))
        if not isinstance(weight_column, _NumericColumn):
            raise TypeError(
                "Weight column must be either a string or _NumericColumn. "
                f"Given type: {type(weight_column)}."
            )
        weights = weight_column._get_dense_tensor(_LazyBuilder(features))
        if not (weights.dtype.is_floating or weights.dtype.is_integer):
            raise ValueError(
                f"Weight column should be castable to float. Given dtype: {weights.dtype}"
            )
        weights = math_ops.cast(weights, dtypes.float32, name="weights")
        if weights.shape.rank is not None and weights.shape.rank == logits.shape.rank - 1:
            weights = array_ops.expand_dims(weights, -1)
        return weights


def _assert_range(labels, n_classes: int):
    with name_scope(None, "assert_range", [labels]):
        top = convert_to_tensor(n_classes - 1, dtype=labels.dtype)
        checks = (
            assert_less_equal(labels, top, message="Labels must <= n_classes - 1"),
            assert_non_negative(labels, message="Labels must >= 0"),
        )
        with control_dependencies(checks):
            return array_ops.identity(labels)


def _id_table(label_vocabulary, name: str):
    keys = convert_to_tensor(list(label_vocabulary), dtype=dtypes.string)
    ids = math_ops.cast(array_ops.range(len(label_vocabulary)), dtypes.int64)
    with name_scope(None, name):
        return StaticHashTable(KeyValueTensorInitializer(keys, ids), -1)


def _string_table(label_vocabulary, name: str):
    ids = math_ops.cast(array_ops.range(len(label_vocabulary)), dtypes.int64)
    values = convert_to_tensor(list(label_vocabulary), dtype=dtypes.string)
    with name_scope(None, name):
        return StaticHashTable(KeyValueTensorInitializer(ids, values), "UNK")


def _tiled(row, logits):
    batch_size = array_ops.shape(logits)[0]
    return array_transform.tile(
        array_ops.expand_dims(row, 0), array_transform.stack([batch_size, 1])
    )


def _class_names(n_classes: int, label_vocabulary):
    if label_vocabulary:
        return convert_to_tensor(list(label_vocabulary), dtype=dtypes.string)
    return as_string(array_ops.range(n_classes))


def _mean_of(values, weights, name):
    with name_scope(name, "mean", [values]) as scope:
        values = math_ops.cast(values, dtypes.float32)
        if weights is not None and not isinstance(weights, float):
            weights = weights * array_ops.ones_like(values)
        return metrics.mean(values, weights=weights, name=scope)


def _auc(labels, predictions, weights, curve, name):
    with name_scope(name, "auc", [predictions, labels]) as scope:
        if not isinstance(weights, float):
            weights = weights * array_ops.ones_like(predictions)
        else:
            weights = None
        return metrics.auc(labels, predictions, weights=weights, curve=curve, name=scope)


def _accuracy_baseline(labels_mean):
    with name_scope(None, "accuracy_baseline"):
        value, update_op = labels_mean
        return (
            math_ops.maximum(value, 1.0 - value, name="value"),
            math_ops.maximum(update_op, 1 - update_op, name="update_op"),
        )


def _metric_weights(weights):
    return None if isinstance(weights, float) else weights


class _Head:
    """The shared ``create_estimator_spec`` of TF 1.15's v1 heads; subclasses give
    ``logits_dimension``, ``_predictions``, ``_export_outputs``, ``create_loss`` and
    ``_eval_metric_ops``."""

    def __init__(self, weight_column=None, loss_reduction=Reduction.SUM, name=None):
        if loss_reduction not in _REDUCTIONS:
            raise ValueError(f"Invalid loss_reduction: {loss_reduction}")
        self._weight_column = weight_column
        self._loss_reduction = loss_reduction
        self._name = name

    @property
    def name(self):
        return self._name

    def _check_logits(self, logits):
        with name_scope(None, "logits", [logits]):
            logits = math_ops.cast(convert_to_tensor(logits), dtypes.float32)
            static = logits.shape
            if static.rank is not None and static.rank >= 1:
                last = static.as_list()[-1]
                if last is not None and last != self.logits_dimension:
                    raise ValueError(
                        f"logits shape must be [D0, D1, ... DN, logits_dimension], got {static}."
                    )
            return logits

    def create_estimator_spec(
        self,
        features,
        mode,
        logits,
        labels=None,
        optimizer=None,
        train_op_fn=None,
        regularization_losses=None,
    ):
        """The ``EstimatorSpec`` of ``mode`` over ``logits``: predictions and export
        signatures; with labels the loss and metrics; in TRAIN, ``optimizer.minimize`` of
        the loss (or ``train_op_fn(loss)``)."""
        with name_scope(self._name, "head"):
            logits = self._check_logits(logits)
            with name_scope(None, "predictions", [logits]):
                predictions = self._predictions(logits)
            if mode == ModeKeys.PREDICT:
                return EstimatorSpec(
                    mode=ModeKeys.PREDICT,
                    predictions=predictions,
                    export_outputs=self._export_outputs(predictions, logits),
                )
            loss_spec = self.create_loss(features, mode, logits, labels)
            training_loss, unreduced_loss, weights, processed_labels = loss_spec
            regularization_loss = None
            loss = training_loss
            if regularization_losses:
                regularization_loss = math_ops.add_n(regularization_losses)
                loss = math_ops.add_n([training_loss, regularization_loss])
            if mode == ModeKeys.EVAL:
                with name_scope(None, "metrics"):
                    metric_ops = self._eval_metric_ops(
                        predictions, processed_labels, weights, unreduced_loss
                    )
                    if regularization_loss is not None:
                        metric_ops["regularization_loss"] = metrics.mean(
                            regularization_loss, name="regularization_loss"
                        )
                return EstimatorSpec(
                    mode=ModeKeys.EVAL,
                    predictions=predictions,
                    loss=loss,
                    eval_metric_ops=metric_ops,
                )
            train_op = self._train_op(loss, optimizer, train_op_fn)
            mean_loss = None
            if self._loss_reduction == Reduction.SUM:
                weight_sum = reduction.reduce_sum(weights * array_ops.ones_like(unreduced_loss))
                mean_loss = training_loss / weight_sum
        with name_scope(""):
            summary.scalar(_key(self._name, "loss"), loss)
            if mean_loss is not None:
                summary.scalar(_key(self._name, "average_loss"), mean_loss)
            if regularization_loss is not None:
                summary.scalar(_key(self._name, "regularization_loss"), regularization_loss)
        return EstimatorSpec(
            mode=ModeKeys.TRAIN, predictions=predictions, loss=loss, train_op=train_op
        )

    @staticmethod
    def _train_op(loss, optimizer, train_op_fn):
        if optimizer is not None:
            if train_op_fn is not None:
                raise ValueError("train_op_fn and optimizer cannot both be set.")
            train_op = optimizer.minimize(loss, global_step=training_util.get_global_step())
        elif train_op_fn is not None:
            train_op = train_op_fn(loss)
        else:
            raise ValueError("train_op_fn and optimizer cannot both be None.")
        update_ops = get_collection(GraphKeys.UPDATE_OPS)
        return group(train_op, *update_ops) if update_ops else train_op

    def _weighted_loss(self, unweighted_loss, features, logits):
        weights = _weights(features, self._weight_column, logits)
        training_loss = compute_weighted_loss(
            unweighted_loss, weights=weights, reduction=self._loss_reduction
        )
        return training_loss, weights


def _key(head_name, value: str) -> str:
    return f"{value}/{head_name}" if head_name else value


_REDUCTIONS = (
    Reduction.SUM,
    Reduction.MEAN,
    Reduction.SUM_OVER_BATCH_SIZE,
    Reduction.SUM_OVER_NONZERO_WEIGHTS,
    Reduction.SUM_BY_NONZERO_WEIGHTS,
)


class _ClassHead(_Head):
    """What the binary and multi-class heads share: class ids and names."""

    def __init__(self, n_classes, weight_column, label_vocabulary, loss_reduction, name):
        super().__init__(weight_column, loss_reduction, name)
        if label_vocabulary is not None and not isinstance(label_vocabulary, (list, tuple)):
            raise ValueError(
                "label_vocabulary should be a list or a tuple. "
                f"Given type: {type(label_vocabulary)}"
            )
        self._n_classes = n_classes
        self._label_vocabulary = label_vocabulary

    def _class_predictions(self, logits, class_logits) -> dict:
        class_ids = reduction.argmax(class_logits, axis=-1, name="class_ids")
        class_ids = array_ops.expand_dims(class_ids, -1)
        if self._label_vocabulary:
            classes = _string_table(self._label_vocabulary, "class_string_lookup").lookup(class_ids)
        else:
            classes = as_string(class_ids, name="str_classes")
        names = _class_names(self._n_classes, self._label_vocabulary)
        return {
            "logits": logits,
            "probabilities": softmax(class_logits, name="probabilities"),
            "class_ids": class_ids,
            "classes": classes,
            "all_class_ids": _tiled(array_ops.range(self._n_classes), logits),
            "all_classes": _tiled(names, logits),
        }

    def _classification_output(self, predictions, logits):
        names = _class_names(self._n_classes, self._label_vocabulary)
        return ClassificationOutput(
            scores=predictions["probabilities"], classes=_tiled(names, logits)
        )

    def _label_ids(self, labels):
        if self._label_vocabulary is None:
            if not labels.dtype.is_integer:
                raise ValueError(f"Labels dtype should be integer. Instead got {labels.dtype}.")
            return labels
        if labels.dtype.base_dtype is not dtypes.string:
            raise ValueError(
                "Labels dtype should be string if there is a vocabulary. "
                f"Instead got {labels.dtype}"
            )
        return _id_table(self._label_vocabulary, "class_id_lookup").lookup(labels)


class _BinaryLogisticHead(_ClassHead):
    """See the module docstring (TF's ``_BinaryLogisticHeadWithSigmoidCrossEntropyLoss``)."""

    logits_dimension = 1

    def __init__(self, weight_column=None, label_vocabulary=None, loss_reduction=Reduction.SUM):
        super().__init__(2, weight_column, label_vocabulary, loss_reduction, None)

    def _predictions(self, logits) -> dict:
        logistic = math_ops.sigmoid(logits, name="logistic")
        two_class_logits = array_transform.concat(
            (array_ops.zeros_like(logits), logits), axis=-1, name="two_class_logits"
        )
        predictions = self._class_predictions(logits, two_class_logits)
        predictions["logistic"] = logistic
        return predictions

    def _export_outputs(self, predictions, logits) -> dict:
        classifier = self._classification_output(predictions, logits)
        return {
            _DEFAULT_SERVING_KEY: classifier,
            _CLASSIFY_SERVING_KEY: classifier,
            _REGRESS_SERVING_KEY: RegressionOutput(value=predictions["logistic"]),
            _PREDICT_SERVING_KEY: PredictOutput(predictions),
        }

    def create_loss(self, features, mode, logits, labels):
        """(training loss, per-example loss, weights, float labels)."""
        del mode
        labels = _labels_as_tensor(labels, logits, 1)
        if self._label_vocabulary is not None:
            labels = _id_table(self._label_vocabulary, "class_id_lookup").lookup(labels)
        labels = _assert_range(math_ops.cast(labels, dtypes.float32), 2)
        unweighted = sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
        training_loss, weights = self._weighted_loss(unweighted, features, logits)
        return training_loss, unweighted, weights, labels

    def _eval_metric_ops(self, predictions, labels, weights, unreduced_loss) -> dict:
        w = _metric_weights(weights)
        class_ids, logistic = predictions["class_ids"], predictions["logistic"]
        labels_mean = _mean_of(labels, w, "label/mean")
        return {
            "average_loss": metrics.mean(unreduced_loss, weights=w, name="average_loss"),
            "accuracy": metrics.accuracy(labels, class_ids, weights=w, name="accuracy"),
            "precision": metrics.precision(labels, class_ids, weights=w, name="precision"),
            "recall": metrics.recall(labels, class_ids, weights=w, name="recall"),
            "prediction/mean": _mean_of(logistic, w, "prediction/mean"),
            "label/mean": labels_mean,
            "accuracy_baseline": _accuracy_baseline(labels_mean),
            "auc": _auc(labels, logistic, weights, "ROC", "auc"),
            "auc_precision_recall": _auc(labels, logistic, weights, "PR", "auc_precision_recall"),
        }


class _MultiClassHead(_ClassHead):
    """See the module docstring (TF's ``_MultiClassHeadWithSoftmaxCrossEntropyLoss``)."""

    def __init__(
        self, n_classes, weight_column=None, label_vocabulary=None, loss_reduction=Reduction.SUM
    ):
        if n_classes is None:
            raise ValueError("n_classes cannot be None")
        if n_classes <= 2:
            raise ValueError(f"n_classes must be > 2: {n_classes}.")
        super().__init__(n_classes, weight_column, label_vocabulary, loss_reduction, None)

    @property
    def logits_dimension(self) -> int:
        return self._n_classes

    def _predictions(self, logits) -> dict:
        return self._class_predictions(logits, logits)

    def _export_outputs(self, predictions, logits) -> dict:
        classifier = self._classification_output(predictions, logits)
        return {
            _DEFAULT_SERVING_KEY: classifier,
            _CLASSIFY_SERVING_KEY: classifier,
            _PREDICT_SERVING_KEY: PredictOutput(predictions),
        }

    def create_loss(self, features, mode, logits, labels):
        """(training loss, per-example loss ``[batch, 1]``, weights, label ids)."""
        del mode
        labels = _labels_as_tensor(labels, logits, 1)
        label_ids = _assert_range(self._label_ids(labels), self._n_classes)
        unweighted = sparse_softmax_cross_entropy(
            labels=label_ids, logits=logits, reduction=Reduction.NONE
        )
        unweighted = array_ops.expand_dims(unweighted, -1)
        training_loss, weights = self._weighted_loss(unweighted, features, logits)
        return training_loss, unweighted, weights, label_ids

    def _eval_metric_ops(self, predictions, labels, weights, unreduced_loss) -> dict:
        w = _metric_weights(weights)
        class_ids = predictions["class_ids"]
        return {
            "average_loss": metrics.mean(unreduced_loss, weights=w, name="average_loss"),
            "accuracy": metrics.accuracy(labels, class_ids, weights=w, name="accuracy"),
        }


class _RegressionHead(_Head):
    """See the module docstring (TF's ``_RegressionHeadWithMeanSquaredErrorLoss``)."""

    def __init__(self, label_dimension=1, weight_column=None, loss_reduction=Reduction.SUM):
        if label_dimension < 1:
            raise ValueError(f"Invalid label_dimension {label_dimension}.")
        super().__init__(weight_column, loss_reduction, None)
        self._label_dimension = label_dimension

    @property
    def logits_dimension(self) -> int:
        return self._label_dimension

    def _predictions(self, logits) -> dict:
        return {"predictions": logits}

    def _export_outputs(self, predictions, logits) -> dict:
        del logits
        regression = RegressionOutput(value=predictions["predictions"])
        return {
            _DEFAULT_SERVING_KEY: regression,
            _REGRESS_SERVING_KEY: regression,
            _PREDICT_SERVING_KEY: PredictOutput(predictions),
        }

    def create_loss(self, features, mode, logits, labels):
        """(training loss, per-example squared errors, weights, float labels)."""
        del mode
        labels = _labels_as_tensor(labels, logits, self._label_dimension)
        labels = math_ops.cast(labels, dtypes.float32)
        unweighted = math_ops.squared_difference(logits, labels)
        training_loss, weights = self._weighted_loss(unweighted, features, logits)
        return training_loss, unweighted, weights, labels

    def _eval_metric_ops(self, predictions, labels, weights, unreduced_loss) -> dict:
        w = _metric_weights(weights)
        return {
            "average_loss": _mean_of(unreduced_loss, w, "average_loss"),
            "prediction/mean": _mean_of(predictions["predictions"], w, "prediction/mean"),
            "label/mean": _mean_of(labels, w, "label/mean"),
        }


def binary_or_multi_class_head(n_classes, weight_column, label_vocabulary, loss_reduction):
    """TF's ``_binary_logistic_or_multi_class_head``: the binary head for 2 classes."""
    if n_classes == 2:
        return _BinaryLogisticHead(weight_column, label_vocabulary, loss_reduction)
    return _MultiClassHead(n_classes, weight_column, label_vocabulary, loss_reduction)


def regression_head(weight_column=None, label_dimension=1, loss_reduction=Reduction.SUM):
    """TF's ``_regression_head`` (squared error)."""
    return _RegressionHead(label_dimension, weight_column, loss_reduction)
