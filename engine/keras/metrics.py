"""``tf.keras.metrics`` for ``compile(metrics=...)``: the metric functions, and metric
objects whose per-batch sums (``batch_stats``) ``fit``/``evaluate`` accumulate over an epoch
and turn into a value (``result_of``), as Keras' stateful metrics do. Mean metrics are
``total / count``; ``Precision``, ``Recall`` and ``AUC`` keep confusion counts."""

from __future__ import annotations

import numpy as np

from engine.framework.constant_op import constant, convert_to_tensor
from engine.keras import backend, losses
from engine.ops import array as array_ops
from engine.ops import math as math_ops
from engine.ops import nn_impl, reduction

__all__ = [
    "AUC",
    "Accuracy",
    "BinaryAccuracy",
    "BinaryCrossentropy",
    "CategoricalAccuracy",
    "CategoricalCrossentropy",
    "FalseNegatives",
    "FalsePositives",
    "MeanAbsoluteError",
    "MeanAbsolutePercentageError",
    "MeanMetricWrapper",
    "MeanSquaredError",
    "MeanSquaredLogarithmicError",
    "Metric",
    "Precision",
    "Recall",
    "RootMeanSquaredError",
    "SparseCategoricalAccuracy",
    "SparseCategoricalCrossentropy",
    "SparseTopKCategoricalAccuracy",
    "TopKCategoricalAccuracy",
    "TrueNegatives",
    "TruePositives",
    "binary_accuracy",
    "categorical_accuracy",
    "get",
    "sparse_categorical_accuracy",
    "sparse_top_k_categorical_accuracy",
    "top_k_categorical_accuracy",
]


# -- metric functions (per sample) ---------------------------------------------------------


def _squeeze_like(y_true, y_pred):
    """``y_true`` without its last axis when it has ``y_pred``'s rank (sparse labels fed as
    (batch, 1)), as Keras squeezes them."""
    rt, rp = y_true.shape.rank, y_pred.shape.rank
    if rt is not None and rp is not None and rt == rp:
        return array_ops.squeeze(y_true, [-1])
    return y_true


def binary_accuracy(y_true, y_pred, threshold=0.5):
    y_pred = convert_to_tensor(y_pred)
    y_true = math_ops.cast(convert_to_tensor(y_true), y_pred.dtype)
    hit = math_ops.equal(y_true, math_ops.cast(math_ops.greater(y_pred, threshold), y_pred.dtype))
    return reduction.reduce_mean(math_ops.cast(hit, backend.floatx()), axis=-1)


def categorical_accuracy(y_true, y_pred):
    hit = math_ops.equal(reduction.argmax(y_true, -1), reduction.argmax(y_pred, -1))
    return math_ops.cast(hit, backend.floatx())


def sparse_categorical_accuracy(y_true, y_pred):
    y_pred = convert_to_tensor(y_pred)
    y_true = _squeeze_like(convert_to_tensor(y_true), y_pred)
    guess = math_ops.cast(reduction.argmax(y_pred, -1), y_true.dtype)
    return math_ops.cast(math_ops.equal(y_true, guess), backend.floatx())


def top_k_categorical_accuracy(y_true, y_pred, k=5):
    target = math_ops.cast(reduction.argmax(y_true, -1), "int32")
    return math_ops.cast(nn_impl.in_top_k(y_pred, target, k), backend.floatx())


def sparse_top_k_categorical_accuracy(y_true, y_pred, k=5):
    y_pred = convert_to_tensor(y_pred)
    y_true = _squeeze_like(convert_to_tensor(y_true), y_pred)
    target = math_ops.cast(y_true, "int32")
    return math_ops.cast(nn_impl.in_top_k(y_pred, target, k), backend.floatx())


def accuracy(y_true, y_pred):
    y_pred = convert_to_tensor(y_pred)
    y_true = math_ops.cast(convert_to_tensor(y_true), y_pred.dtype)
    return math_ops.cast(math_ops.equal(y_true, y_pred), backend.floatx())


# -- metric objects ------------------------------------------------------------------------


def _weights_like(values, sample_weight):
    ones = array_ops.ones_like(values)
    if sample_weight is None:
        return ones
    w = math_ops.cast(convert_to_tensor(sample_weight), values.dtype)
    while (w.shape.rank or 0) > (values.shape.rank or 0) and w.shape.as_tuple()[-1] == 1:
        w = array_ops.squeeze(w, [-1])
    while (w.shape.rank or 0) < (values.shape.rank or 0):
        w = array_ops.expand_dims(w, -1)
    return ones * w


class Metric:
    """A metric ``compile`` can take: ``batch_stats`` builds the per-batch sums the loops
    accumulate; ``result_of`` turns the accumulated sums into the metric's value."""

    def __init__(self, name=None, dtype=None):
        self.name = name or losses._snake_loss_name(type(self).__name__)
        self.dtype = dtype or backend.floatx()

    def batch_stats(self, y_true, y_pred, sample_weight=None) -> list:
        raise NotImplementedError

    def result_of(self, totals: list) -> float:
        raise NotImplementedError


class MeanMetricWrapper(Metric):
    """The weighted mean over all samples of ``fn(y_true, y_pred)``."""

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        super().__init__(name=name or fn.__name__, dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def batch_stats(self, y_true, y_pred, sample_weight=None) -> list:
        values = math_ops.cast(self._fn(y_true, y_pred, **self._fn_kwargs), self.dtype)
        w = _weights_like(values, sample_weight)
        return [reduction.reduce_sum(values * w), reduction.reduce_sum(w)]

    def result_of(self, totals: list) -> float:
        total, count = totals
        return float(total / count) if count else 0.0


def _wrapper(cls_name: str, fn, default_name: str, **defaults):
    def __init__(self, name=default_name, dtype=None, **kwargs):  # noqa: N807
        MeanMetricWrapper.__init__(self, fn, name=name, dtype=dtype, **{**defaults, **kwargs})

    return type(
        cls_name,
        (MeanMetricWrapper,),
        {"__init__": __init__, "__doc__": f"Mean of ``{fn.__name__}``."},
    )


Accuracy = _wrapper("Accuracy", accuracy, "accuracy")
BinaryAccuracy = _wrapper("BinaryAccuracy", binary_accuracy, "binary_accuracy", threshold=0.5)
CategoricalAccuracy = _wrapper("CategoricalAccuracy", categorical_accuracy, "categorical_accuracy")
SparseCategoricalAccuracy = _wrapper(
    "SparseCategoricalAccuracy", sparse_categorical_accuracy, "sparse_categorical_accuracy"
)
TopKCategoricalAccuracy = _wrapper(
    "TopKCategoricalAccuracy", top_k_categorical_accuracy, "top_k_categorical_accuracy", k=5
)
SparseTopKCategoricalAccuracy = _wrapper(
    "SparseTopKCategoricalAccuracy",
    sparse_top_k_categorical_accuracy,
    "sparse_top_k_categorical_accuracy",
    k=5,
)
MeanSquaredError = _wrapper("MeanSquaredError", losses.mean_squared_error, "mean_squared_error")
MeanAbsoluteError = _wrapper("MeanAbsoluteError", losses.mean_absolute_error, "mean_absolute_error")
MeanAbsolutePercentageError = _wrapper(
    "MeanAbsolutePercentageError",
    losses.mean_absolute_percentage_error,
    "mean_absolute_percentage_error",
)
MeanSquaredLogarithmicError = _wrapper(
    "MeanSquaredLogarithmicError",
    losses.mean_squared_logarithmic_error,
    "mean_squared_logarithmic_error",
)
BinaryCrossentropy = _wrapper(
    "BinaryCrossentropy",
    losses.binary_crossentropy,
    "binary_crossentropy",
    from_logits=False,
    label_smoothing=0.0,
)
CategoricalCrossentropy = _wrapper(
    "CategoricalCrossentropy",
    losses.categorical_crossentropy,
    "categorical_crossentropy",
    from_logits=False,
    label_smoothing=0.0,
)
SparseCategoricalCrossentropy = _wrapper(
    "SparseCategoricalCrossentropy",
    losses.sparse_categorical_crossentropy,
    "sparse_categorical_crossentropy",
    from_logits=False,
)


class RootMeanSquaredError(MeanMetricWrapper):
    def __init__(self, name="root_mean_squared_error", dtype=None):
        super().__init__(
            lambda t, p: math_ops.squared_difference(*losses._pair(t, p)[::-1]),
            name=name,
            dtype=dtype,
        )

    def result_of(self, totals: list) -> float:
        return float(np.sqrt(super().result_of(totals)))


# -- confusion-count metrics ---------------------------------------------------------------


def _confusion(y_true, y_pred, thresholds, sample_weight, dtype):
    """Per-threshold [tp, fp, tn, fn] sums (a prediction is positive above a threshold)."""
    y_pred = math_ops.cast(convert_to_tensor(y_pred), dtype)
    y_true = math_ops.cast(convert_to_tensor(y_true), "bool")
    pred = array_ops.reshape(y_pred, [-1, 1])
    truth = array_ops.reshape(y_true, [-1, 1])
    w = array_ops.reshape(_weights_like(y_pred, sample_weight), [-1, 1])
    above = math_ops.greater(pred, constant(np.asarray(thresholds, dtype), dtype=dtype))
    pos = math_ops.cast(truth, dtype)
    neg = 1.0 - pos
    up = math_ops.cast(above, dtype)
    down = 1.0 - up
    return [
        reduction.reduce_sum(a * b * w, axis=0)
        for a, b in ((up, pos), (up, neg), (down, neg), (down, pos))
    ]


class _Confusion(Metric):
    _which = None  # the counts result_of reads

    def __init__(self, thresholds=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.thresholds = (
            [0.5]
            if thresholds is None
            else (
                [float(thresholds)] if np.isscalar(thresholds) else [float(t) for t in thresholds]
            )
        )
        for t in self.thresholds:
            if not 0 <= t <= 1:
                raise ValueError(f"Threshold values must be in [0, 1]. Received: {t}")

    def batch_stats(self, y_true, y_pred, sample_weight=None) -> list:
        return _confusion(y_true, y_pred, self.thresholds, sample_weight, self.dtype)

    def _value(self, tp, fp, tn, fn):
        return {"tp": tp, "fp": fp, "tn": tn, "fn": fn}[self._which]

    def result_of(self, totals: list):
        out = np.asarray(self._value(*[np.asarray(t, np.float64) for t in totals]))
        return float(out.reshape(-1)[0]) if out.size == 1 else out


def _div(a, b):
    return np.divide(a, b, out=np.zeros_like(a), where=b != 0)


class TruePositives(_Confusion):
    _which = "tp"


class FalsePositives(_Confusion):
    _which = "fp"


class TrueNegatives(_Confusion):
    _which = "tn"


class FalseNegatives(_Confusion):
    _which = "fn"


class Precision(_Confusion):
    def _value(self, tp, fp, tn, fn):  # noqa: ARG002 - the shared signature
        return _div(tp, tp + fp)


class Recall(_Confusion):
    def _value(self, tp, fp, tn, fn):  # noqa: ARG002 - the shared signature
        return _div(tp, tp + fn)


class AUC(_Confusion):
    """Area under the ROC or PR curve, from confusion counts at ``num_thresholds``
    thresholds summed by interpolation, as Keras' ``AUC``."""

    def __init__(
        self,
        num_thresholds=200,
        curve="ROC",
        summation_method="interpolation",
        name=None,
        dtype=None,
        thresholds=None,
    ):
        if num_thresholds <= 1 and thresholds is None:
            raise ValueError(
                f"Argument `num_thresholds` must be an integer > 1. Received: "
                f"num_thresholds={num_thresholds}"
            )
        if curve not in ("ROC", "PR"):
            raise ValueError(
                f'Invalid AUC curve value: "{curve}". Expected values are ["ROC", "PR"]'
            )
        if summation_method not in ("interpolation", "minoring", "majoring"):
            raise ValueError(f"Invalid AUC summation method value: {summation_method!r}")
        if thresholds is None:
            inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        else:
            inner = sorted(float(t) for t in thresholds)
        super().__init__(thresholds=[], name=name or "auc", dtype=dtype)
        self.thresholds = [0.0 - backend.epsilon(), *inner, 1.0 + backend.epsilon()]
        self.curve, self.summation_method = curve, summation_method

    def _value(self, tp, fp, tn, fn):
        if self.curve == "PR" and self.summation_method == "interpolation":
            return _pr_auc(tp, fp, fn)
        recall = _div(tp, tp + fn)
        if self.curve == "ROC":
            x, y = _div(fp, fp + tn), recall
        else:
            x, y = recall, _div(tp, tp + fp)
        if self.summation_method == "interpolation":
            heights = (y[:-1] + y[1:]) / 2.0
        elif self.summation_method == "minoring":
            heights = np.minimum(y[:-1], y[1:])
        else:
            heights = np.maximum(y[:-1], y[1:])
        return np.sum((x[:-1] - x[1:]) * heights)


def _pr_auc(tp, fp, fn):
    """Keras' interpolated PR AUC (Davis & Goadrich)."""
    dtp = tp[:-1] - tp[1:]
    p = tp + fp
    dp = p[:-1] - p[1:]
    slope = _div(dtp, np.maximum(dp, 0))
    intercept = tp[1:] - slope * p[1:]
    both = (p[:-1] > 0) & (p[1:] > 0)
    ratio = np.where(both, _div(p[:-1], np.maximum(p[1:], 0)), 1.0)
    inc = _div(slope * (dtp + intercept * np.log(ratio)), np.maximum(tp[1:] + fn[1:], 0))
    return np.sum(inc)


# -- compile(metrics=...) resolution -------------------------------------------------------

_BY_NAME = {
    "binary_accuracy": binary_accuracy,
    "categorical_accuracy": categorical_accuracy,
    "sparse_categorical_accuracy": sparse_categorical_accuracy,
    "top_k_categorical_accuracy": top_k_categorical_accuracy,
    "sparse_top_k_categorical_accuracy": sparse_top_k_categorical_accuracy,
}


def get(identifier):
    """The metric function ``identifier`` names (the loss names work too), or the metric."""
    if isinstance(identifier, str):
        fn = _BY_NAME.get(identifier)
        if fn is not None:
            return fn
        try:
            return losses.get(identifier)
        except ValueError:
            raise ValueError(
                f"Unknown metric function: {identifier!r}; expected 'accuracy', one of "
                f"{', '.join(sorted(_BY_NAME))}, a loss name, a Metric or a callable"
            ) from None
    if isinstance(identifier, Metric) or callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret metric identifier: {identifier!r}")


def resolve(identifier, loss_fn, output) -> Metric:
    """The Metric ``compile`` uses for ``identifier`` on an output trained with ``loss_fn``:
    'accuracy' becomes binary, sparse or categorical accuracy as Keras chooses (named
    'acc', as TF1's Keras names it)."""
    if isinstance(identifier, Metric):
        return identifier
    if identifier in ("accuracy", "acc", "crossentropy", "ce"):
        short = "acc" if identifier in ("accuracy", "acc") else "ce"
        shape = output.shape.as_tuple() if output.shape.rank is not None else (None,)
        kind = _loss_kind(loss_fn)
        if shape[-1] == 1 or kind == "binary":
            fn = binary_accuracy if short == "acc" else losses.binary_crossentropy
        elif kind == "sparse":
            fn = (
                sparse_categorical_accuracy
                if short == "acc"
                else losses.sparse_categorical_crossentropy
            )
        else:
            fn = categorical_accuracy if short == "acc" else losses.categorical_crossentropy
        return MeanMetricWrapper(fn, name=short)
    fn = get(identifier)
    return MeanMetricWrapper(fn, name=getattr(fn, "__name__", str(identifier)))


def _loss_kind(loss_fn):
    fn = getattr(loss_fn, "fn", loss_fn)
    if fn is losses.binary_crossentropy:
        return "binary"
    if fn is losses.sparse_categorical_crossentropy:
        return "sparse"
    return "categorical"
