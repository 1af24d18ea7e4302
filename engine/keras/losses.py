"""``tf.keras.losses``: per-sample loss functions (the mean over the last axis), the loss
classes that reduce them, and Keras' cross-entropies, which, as TF's Keras does, read the
logits behind a ``Softmax``/``Sigmoid`` output for numerical stability."""

from __future__ import annotations

from engine.framework.constant_op import convert_to_tensor
from engine.keras import backend
from engine.ops import array as array_ops
from engine.ops import clip_ops, math_more, nn, nn_impl, nn_losses, reduction
from engine.ops import math as math_ops

__all__ = [
    "BinaryCrossentropy",
    "CategoricalCrossentropy",
    "CategoricalHinge",
    "CosineSimilarity",
    "Hinge",
    "Huber",
    "KLDivergence",
    "LogCosh",
    "Loss",
    "MeanAbsoluteError",
    "MeanAbsolutePercentageError",
    "MeanSquaredError",
    "MeanSquaredLogarithmicError",
    "Poisson",
    "SparseCategoricalCrossentropy",
    "SquaredHinge",
    "binary_crossentropy",
    "categorical_crossentropy",
    "categorical_hinge",
    "cosine_proximity",
    "cosine_similarity",
    "get",
    "hinge",
    "huber_loss",
    "kullback_leibler_divergence",
    "logcosh",
    "mean_absolute_error",
    "mean_absolute_percentage_error",
    "mean_squared_error",
    "mean_squared_logarithmic_error",
    "poisson",
    "sparse_categorical_crossentropy",
    "squared_hinge",
]


def _pair(y_true, y_pred):
    y_pred = convert_to_tensor(y_pred)
    y_true = math_ops.cast(convert_to_tensor(y_true), y_pred.dtype)
    return y_true, y_pred


def _logits_of(output, op_type: str):
    """The input of ``output``'s op when that op is ``op_type`` (the logits of a softmax or
    sigmoid output layer), else None."""
    op = getattr(output, "op", None)
    if op is not None and op.type == op_type and len(op.inputs) == 1:
        return op.inputs[0]
    return None


def _eps(dtype):
    return convert_to_tensor(backend.epsilon(), dtype=dtype)


# -- backend cross-entropies (per element / per sample, no reduction) ----------------------


def backend_categorical_crossentropy(target, output, from_logits=False, axis=-1):
    target, output = _pair(target, output)
    logits = output if from_logits else _logits_of(output, "Softmax")
    if logits is not None:
        return nn_losses.softmax_cross_entropy_with_logits_v2(
            labels=target, logits=logits, axis=axis
        )
    output = output / reduction.reduce_sum(output, axis, keepdims=True)
    eps = _eps(output.dtype)
    output = clip_ops.clip_by_value(output, eps, 1.0 - eps)
    return -reduction.reduce_sum(target * math_ops.log(output), axis)


def backend_sparse_categorical_crossentropy(target, output, from_logits=False, axis=-1):
    output = convert_to_tensor(output)
    target = math_ops.cast(convert_to_tensor(target), "int64")
    logits = output if from_logits else _logits_of(output, "Softmax")
    if logits is None:
        eps = _eps(output.dtype)
        logits = math_ops.log(clip_ops.clip_by_value(output, eps, 1.0 - eps))
    rank = logits.shape.rank
    if rank is not None and axis % rank != rank - 1:
        perm = [i for i in range(rank) if i != axis % rank] + [axis % rank]
        logits = array_ops.transpose(logits, perm=perm)
    out_shape = array_ops.shape(logits)
    reshape = target.shape.rank is not None and rank is not None and target.shape.rank != rank - 1
    if reshape:
        target = array_ops.reshape(target, [-1])
        logits = array_ops.reshape(logits, [-1, out_shape[-1]])
    res = nn_losses.sparse_softmax_cross_entropy_with_logits(labels=target, logits=logits)
    if reshape and rank >= 3:
        res = array_ops.reshape(res, out_shape[:-1])
    return res


def backend_binary_crossentropy(target, output, from_logits=False):
    target, output = _pair(target, output)
    logits = output if from_logits else _logits_of(output, "Sigmoid")
    if logits is not None:
        return nn_losses.sigmoid_cross_entropy_with_logits(labels=target, logits=logits)
    eps = _eps(output.dtype)
    output = clip_ops.clip_by_value(output, eps, 1.0 - eps)
    bce = target * math_ops.log(output + backend.epsilon())
    bce = bce + (1 - target) * math_ops.log(1 - output + backend.epsilon())
    return -bce


# -- per-sample losses ---------------------------------------------------------------------


def mean_squared_error(y_true, y_pred):
    y_true, y_pred = _pair(y_true, y_pred)
    return reduction.reduce_mean(math_ops.squared_difference(y_pred, y_true), axis=-1)


def mean_absolute_error(y_true, y_pred):
    y_true, y_pred = _pair(y_true, y_pred)
    return reduction.reduce_mean(math_ops.abs(y_pred - y_true), axis=-1)


def mean_absolute_percentage_error(y_true, y_pred):
    y_true, y_pred = _pair(y_true, y_pred)
    diff = math_ops.abs(
        (y_true - y_pred) / math_ops.maximum(math_ops.abs(y_true), backend.epsilon())
    )
    return 100.0 * reduction.reduce_mean(diff, axis=-1)


def mean_squared_logarithmic_error(y_true, y_pred):
    y_true, y_pred = _pair(y_true, y_pred)
    first = math_ops.log(math_ops.maximum(y_pred, backend.epsilon()) + 1.0)
    second = math_ops.log(math_ops.maximum(y_true, backend.epsilon()) + 1.0)
    return reduction.reduce_mean(math_ops.squared_difference(first, second), axis=-1)


def _signed_labels(y_true):
    """0/1 labels become -1/1, as Keras' hinge losses take them."""
    is_binary = reduction.reduce_all(
        math_ops.logical_or(math_ops.equal(y_true, 0.0), math_ops.equal(y_true, 1.0))
    )
    return math_ops.where_v2(is_binary, 2.0 * y_true - 1.0, y_true)


def hinge(y_true, y_pred):
    y_true, y_pred = _pair(y_true, y_pred)
    y_true = _signed_labels(y_true)
    return reduction.reduce_mean(math_ops.maximum(1.0 - y_true * y_pred, 0.0), axis=-1)


def squared_hinge(y_true, y_pred):
    y_true, y_pred = _pair(y_true, y_pred)
    y_true = _signed_labels(y_true)
    return reduction.reduce_mean(
        math_ops.square(math_ops.maximum(1.0 - y_true * y_pred, 0.0)), axis=-1
    )


def categorical_hinge(y_true, y_pred):
    y_true, y_pred = _pair(y_true, y_pred)
    pos = reduction.reduce_sum(y_true * y_pred, axis=-1)
    neg = reduction.reduce_max((1.0 - y_true) * y_pred, axis=-1)
    return math_ops.maximum(neg - pos + 1.0, 0.0)


def logcosh(y_true, y_pred):
    y_true, y_pred = _pair(y_true, y_pred)
    x = y_pred - y_true
    value = x + nn.softplus(-2.0 * x) - math_ops.log(2.0)
    return reduction.reduce_mean(value, axis=-1)


def huber_loss(y_true, y_pred, delta=1.0):
    y_true, y_pred = _pair(y_true, y_pred)
    err = math_ops.abs(y_pred - y_true)
    quad = math_ops.minimum(err, delta)
    return reduction.reduce_mean(0.5 * quad * quad + delta * (err - quad), axis=-1)


def kullback_leibler_divergence(y_true, y_pred):
    y_true, y_pred = _pair(y_true, y_pred)
    y_true = clip_ops.clip_by_value(y_true, backend.epsilon(), 1.0)
    y_pred = clip_ops.clip_by_value(y_pred, backend.epsilon(), 1.0)
    return reduction.reduce_sum(y_true * math_ops.log(y_true / y_pred), axis=-1)


def poisson(y_true, y_pred):
    y_true, y_pred = _pair(y_true, y_pred)
    return reduction.reduce_mean(
        y_pred - y_true * math_ops.log(y_pred + backend.epsilon()), axis=-1
    )


def cosine_similarity(y_true, y_pred, axis=-1):
    y_true, y_pred = _pair(y_true, y_pred)
    t = nn_impl.l2_normalize(y_true, axis=axis)
    p = nn_impl.l2_normalize(y_pred, axis=axis)
    return -reduction.reduce_sum(t * p, axis=axis)


cosine_proximity = cosine_similarity


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0):
    y_true, y_pred = _pair(y_true, y_pred)
    if label_smoothing:
        classes = math_ops.cast(array_ops.shape(y_true)[-1], y_pred.dtype)
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / classes
    return backend_categorical_crossentropy(y_true, y_pred, from_logits=from_logits)


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, axis=-1):
    return backend_sparse_categorical_crossentropy(y_true, y_pred, from_logits, axis)


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0):
    y_true, y_pred = _pair(y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    return reduction.reduce_mean(
        backend_binary_crossentropy(y_true, y_pred, from_logits=from_logits), axis=-1
    )


# -- classes -------------------------------------------------------------------------------

_REDUCTIONS = ("auto", "sum_over_batch_size", "sum", "none")


class Loss:
    """A loss object: ``loss(y_true, y_pred, sample_weight=None)`` reduces the per-sample
    values (mean over the batch by default)."""

    fn = None

    def __init__(self, reduction="auto", name=None, **kwargs):
        if reduction not in _REDUCTIONS:
            raise ValueError(
                f"Invalid Reduction Key: {reduction}. Expected keys are {list(_REDUCTIONS)}"
            )
        self.reduction = reduction
        self.name = name or _snake_loss_name(type(self).__name__)
        self._fn_kwargs = kwargs

    def call(self, y_true, y_pred):
        return type(self).fn(y_true, y_pred, **self._fn_kwargs)

    def __call__(self, y_true, y_pred, sample_weight=None):
        values = self.call(y_true, y_pred)
        return reduce_weighted(values, sample_weight, self.reduction)

    def get_config(self) -> dict:
        return {"reduction": self.reduction, "name": self.name, **self._fn_kwargs}


def reduce_weighted(values, sample_weight, reduction_key="auto"):
    """Weights ``values`` by ``sample_weight`` and reduces them: their sum divided by their
    count (Keras' SUM_OVER_BATCH_SIZE), their sum, or not at all."""
    values = convert_to_tensor(values)
    if sample_weight is not None:
        w = math_ops.cast(convert_to_tensor(sample_weight), values.dtype)
        if w.shape.rank is not None and values.shape.rank is not None:
            while w.shape.rank > values.shape.rank and w.shape.as_tuple()[-1] == 1:
                w = array_ops.squeeze(w, [-1])
            # Per-sample weights of per-timestep losses weight every timestep (TF's
            # squeeze_or_expand_dimensions + broadcast_weights).
            while w.shape.rank < values.shape.rank:
                w = array_ops.expand_dims(w, -1)
        values = values * w
    if reduction_key == "none":
        return values
    total = reduction.reduce_sum(values)
    if reduction_key == "sum":
        return total
    count = math_ops.cast(array_ops.size(values), values.dtype)
    return math_more.div_no_nan(total, count)


def _snake_loss_name(cls: str) -> str:
    out = []
    for i, ch in enumerate(cls):
        if ch.isupper() and i and not cls[i - 1].isupper():
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


def _loss_class(name: str, fn, **defaults):
    def __init__(self, reduction="auto", name=None, **kwargs):  # noqa: N807
        Loss.__init__(
            self,
            reduction=reduction,
            name=name or _snake_loss_name(cls_name),
            **{**defaults, **kwargs},
        )

    cls_name = name
    return type(
        name,
        (Loss,),
        {
            "fn": staticmethod(fn),
            "__init__": __init__,
            "__doc__": f"The loss class of ``{fn.__name__}``.",
        },
    )


MeanSquaredError = _loss_class("MeanSquaredError", mean_squared_error)
MeanAbsoluteError = _loss_class("MeanAbsoluteError", mean_absolute_error)
MeanAbsolutePercentageError = _loss_class(
    "MeanAbsolutePercentageError", mean_absolute_percentage_error
)
MeanSquaredLogarithmicError = _loss_class(
    "MeanSquaredLogarithmicError", mean_squared_logarithmic_error
)
Hinge = _loss_class("Hinge", hinge)
SquaredHinge = _loss_class("SquaredHinge", squared_hinge)
CategoricalHinge = _loss_class("CategoricalHinge", categorical_hinge)
LogCosh = _loss_class("LogCosh", logcosh)
Huber = _loss_class("Huber", huber_loss, delta=1.0)
KLDivergence = _loss_class("KLDivergence", kullback_leibler_divergence)
Poisson = _loss_class("Poisson", poisson)
CosineSimilarity = _loss_class("CosineSimilarity", cosine_similarity, axis=-1)
BinaryCrossentropy = _loss_class(
    "BinaryCrossentropy", binary_crossentropy, from_logits=False, label_smoothing=0.0
)
CategoricalCrossentropy = _loss_class(
    "CategoricalCrossentropy", categorical_crossentropy, from_logits=False, label_smoothing=0.0
)
SparseCategoricalCrossentropy = _loss_class(
    "SparseCategoricalCrossentropy", sparse_categorical_crossentropy, from_logits=False
)

mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
kld = KLD = kullback_leibler_divergence
cosine = cosine_similarity

_BY_NAME = {
    f.__name__: f
    for f in (
        mean_squared_error,
        mean_absolute_error,
        mean_absolute_percentage_error,
        mean_squared_logarithmic_error,
        hinge,
        squared_hinge,
        categorical_hinge,
        logcosh,
        huber_loss,
        kullback_leibler_divergence,
        poisson,
        cosine_similarity,
        categorical_crossentropy,
        sparse_categorical_crossentropy,
        binary_crossentropy,
    )
}
_BY_NAME.update(
    mse=mse,
    mae=mae,
    mape=mape,
    msle=msle,
    kld=kld,
    cosine=cosine,
    cosine_proximity=cosine_similarity,
    log_cosh=logcosh,
    huber=huber_loss,
    kl_divergence=kullback_leibler_divergence,
)


def get(identifier):
    """The loss ``identifier`` names, or the callable itself."""
    if isinstance(identifier, str):
        fn = _BY_NAME.get(identifier)
        if fn is None:
            raise ValueError(
                f"Unknown loss function: {identifier!r}; expected one of "
                f"{', '.join(sorted(_BY_NAME))}, a Loss or a callable"
            )
        return fn
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret loss function identifier: {identifier!r}")
