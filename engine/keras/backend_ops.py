"""The tensor functions of ``tf.keras.backend`` (``K.mean``, ``K.square``, ``K.function``,
...) that custom losses, metrics and ``Lambda`` layers are written with."""

from __future__ import annotations

from engine import dtypes
from engine.framework import graph as ops
from engine.framework.constant_op import convert_to_tensor
from engine.gradients import gradients as _gradients
from engine.keras import activations, backend, losses
from engine.keras.base_layer import keras_history
from engine.keras.core import smart_cond
from engine.ops import array as array_ops
from engine.ops import array_transform, clip_ops, linalg, nn, nn_impl, reduction, state
from engine.ops import math as math_ops
from engine.ops import random as random_ops
from engine.ops.matmul import matmul
from engine.ops.slicing import gather as _gather
from engine.variables import Variable

__all__ = [
    "abs",
    "all",
    "any",
    "argmax",
    "argmin",
    "batch_flatten",
    "binary_crossentropy",
    "cast",
    "categorical_crossentropy",
    "clip",
    "concatenate",
    "cumprod",
    "cumsum",
    "dot",
    "dropout",
    "equal",
    "exp",
    "expand_dims",
    "flatten",
    "function",
    "gather",
    "gradients",
    "is_keras_tensor",
    "greater",
    "greater_equal",
    "in_test_phase",
    "in_train_phase",
    "l2_normalize",
    "less",
    "less_equal",
    "log",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "not_equal",
    "one_hot",
    "ones",
    "ones_like",
    "permute_dimensions",
    "pow",
    "prod",
    "random_normal",
    "random_uniform",
    "relu",
    "repeat_elements",
    "reshape",
    "round",
    "shape",
    "sigmoid",
    "sign",
    "softmax",
    "softplus",
    "sparse_categorical_crossentropy",
    "sqrt",
    "square",
    "squeeze",
    "stack",
    "std",
    "stop_gradient",
    "sum",
    "switch",
    "tanh",
    "tile",
    "transpose",
    "update",
    "update_add",
    "update_sub",
    "var",
    "zeros",
    "zeros_like",
]

# Keras' own names shadow Python builtins in this namespace (noqa: A001 below).


def _r(fn, cast=None):
    """A Keras reduction; ``cast`` converts its input first (Keras': booleans to floatx for
    mean/var/std, anything to bool for any/all)."""

    def reduce(x, axis=None, keepdims=False):
        x = convert_to_tensor(x)
        return fn(cast(x) if cast else x, axis=axis, keepdims=keepdims)

    reduce.__name__ = fn.__name__.replace("reduce_", "")
    return reduce


def _bool_to_float(x):
    return math_ops.cast(x, backend.floatx()) if x.dtype.base_dtype == dtypes.bool else x


def _to_bool(x):
    return math_ops.cast(x, dtypes.bool)


sum = _r(reduction.reduce_sum)  # noqa: A001
mean = _r(reduction.reduce_mean, _bool_to_float)
max = _r(reduction.reduce_max)  # noqa: A001
min = _r(reduction.reduce_min)  # noqa: A001
prod = _r(reduction.reduce_prod)
any = _r(reduction.reduce_any, _to_bool)  # noqa: A001
all = _r(reduction.reduce_all, _to_bool)  # noqa: A001


def is_keras_tensor(x) -> bool:
    """Whether ``x`` is a Keras tensor: an ``Input`` or a tensor a Keras layer produced."""
    if not isinstance(x, (ops.Tensor, Variable)):
        raise ValueError(
            f"Unexpectedly found an instance of type `{type(x)}`. Expected a symbolic tensor "
            "instance."
        )
    return keras_history(x) is not None


def var(x, axis=None, keepdims=False):
    x = _bool_to_float(convert_to_tensor(x))
    m = reduction.reduce_mean(x, axis=axis, keepdims=True)
    return reduction.reduce_mean(math_ops.square(x - m), axis=axis, keepdims=keepdims)


def std(x, axis=None, keepdims=False):
    return math_ops.sqrt(var(x, axis=axis, keepdims=keepdims))


def argmax(x, axis=-1):
    return reduction.argmax(x, axis)


def argmin(x, axis=-1):
    return reduction.argmin(x, axis)


def cumsum(x, axis=0):
    return reduction.cumsum(x, axis=axis)


def cumprod(x, axis=0):
    return reduction.cumprod(x, axis=axis)


abs = math_ops.abs  # noqa: A001
exp, log, sqrt, square = math_ops.exp, math_ops.log, math_ops.sqrt, math_ops.square
sign, round, tanh, sigmoid = math_ops.sign, math_ops.round, math_ops.tanh, math_ops.sigmoid  # noqa: A001
maximum, minimum = math_ops.maximum, math_ops.minimum
equal, not_equal, greater = math_ops.equal, math_ops.not_equal, math_ops.greater
greater_equal, less, less_equal = math_ops.greater_equal, math_ops.less, math_ops.less_equal
softplus = nn.softplus
stop_gradient, zeros_like, ones_like = (
    array_ops.stop_gradient,
    array_ops.zeros_like,
    array_ops.ones_like,
)
reshape, expand_dims, squeeze = array_ops.reshape, array_ops.expand_dims, array_ops.squeeze
tile, stack = array_transform.tile, array_transform.stack
categorical_crossentropy = losses.backend_categorical_crossentropy
sparse_categorical_crossentropy = losses.backend_sparse_categorical_crossentropy
binary_crossentropy = losses.backend_binary_crossentropy


def pow(x, a):  # noqa: A001
    return math_ops.pow(x, a)


def cast(x, dtype):
    return math_ops.cast(x, dtype)


def clip(x, min_value, max_value):
    if max_value is not None and min_value is not None and max_value < min_value:
        max_value = min_value
    return clip_ops.clip_by_value(x, min_value, max_value)


def shape(x):
    return array_ops.shape(x)


def zeros(shape, dtype=None, name=None):
    return array_ops.zeros(shape, dtype=dtype or backend.floatx(), name=name)


def ones(shape, dtype=None, name=None):
    return array_ops.ones(shape, dtype=dtype or backend.floatx(), name=name)


def transpose(x):
    return array_ops.transpose(x)


def permute_dimensions(x, pattern):
    return array_ops.transpose(x, perm=list(pattern))


def concatenate(tensors, axis=-1):
    rank = tensors[0].shape.rank if hasattr(tensors[0], "shape") else None
    if axis < 0 and rank is not None:
        axis %= rank
    return array_transform.concat(list(tensors), axis)


def flatten(x):
    return array_ops.reshape(x, [-1])


def batch_flatten(x):
    return array_ops.reshape(x, [-1, reduction.reduce_prod(array_ops.shape(x)[1:])])


def gather(reference, indices):
    return _gather(reference, indices)


def one_hot(indices, num_classes):
    return array_ops.one_hot(indices, depth=num_classes, axis=-1)


def repeat_elements(x, rep, axis):
    x = convert_to_tensor(x)
    dims = backend.int_shape(x)
    mult = [1] * (len(dims) + 1)
    mult[axis % len(dims) + 1] = rep
    tiled = array_transform.tile(array_ops.expand_dims(x, axis % len(dims) + 1), mult)
    out_shape = array_ops.shape(x) * array_ops.one_hot(
        axis % len(dims), len(dims), on_value=rep, off_value=1, dtype="int32"
    )
    return array_ops.reshape(tiled, out_shape)


def dot(x, y):
    rx = x.shape.rank
    if rx is not None and rx > 2 or (y.shape.rank or 2) > 2:
        from_axes = [[rx - 1], [(y.shape.rank or 2) - 2]]
        return linalg.tensordot(x, y, from_axes)
    return matmul(x, y)


def l2_normalize(x, axis=None):
    return nn_impl.l2_normalize(x, axis=axis)


def relu(x, alpha=0.0, max_value=None, threshold=0):
    return activations.relu(x, alpha=alpha, max_value=max_value, threshold=threshold)


def softmax(x, axis=-1):
    return nn.softmax(x, axis=axis)


def dropout(x, level, noise_shape=None, seed=None):
    return nn.dropout(x, rate=level, noise_shape=noise_shape, seed=seed)


def random_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    return random_ops.random_normal(
        shape, mean=mean, stddev=stddev, dtype=dtype or backend.floatx(), seed=seed
    )


def random_uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    return random_ops.random_uniform(
        shape, minval=minval, maxval=maxval, dtype=dtype or backend.floatx(), seed=seed
    )


def switch(condition, then_expression, else_expression):
    """``then`` where/when ``condition`` holds, else ``else`` (callables or tensors)."""
    if isinstance(condition, (bool, int)) or (
        hasattr(condition, "shape") and condition.shape.rank == 0
    ):
        then_fn = then_expression if callable(then_expression) else (lambda: then_expression)
        else_fn = else_expression if callable(else_expression) else (lambda: else_expression)
        return smart_cond(condition, then_fn, else_fn)
    return math_ops.where(condition, then_expression, else_expression)


def in_train_phase(x, alt, training=None):
    training = backend.learning_phase() if training is None else training
    return switch(training, x, alt)


def in_test_phase(x, alt, training=None):
    return in_train_phase(alt, x, training=training)


def update(x, new_x):
    return state.assign(x, new_x)


def update_add(x, increment):
    return state.assign_add(x, increment)


def update_sub(x, decrement):
    return state.assign_sub(x, decrement)


def gradients(loss, variables):
    return _gradients(loss, variables)


class Function:
    """``K.function(inputs, outputs, updates)``: a callable taking a list of values for
    ``inputs`` (the learning phase may be one of them) and returning ``outputs``' values."""

    def __init__(self, inputs, outputs, updates=None, name=None):  # noqa: ARG002
        self.inputs = list(inputs)
        self.outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        self._single = not isinstance(outputs, (list, tuple))
        ups = [
            getattr(u, "op", u) if not isinstance(u, tuple) else state.assign(*u).op
            for u in updates or []
        ]
        with ops.control_dependencies(ups or None):
            self._fetch = self.outputs
        self._updates = ups

    def __call__(self, inputs):
        values = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if len(values) != len(self.inputs):
            raise ValueError(
                f"K.function expects {len(self.inputs)} input values, got {len(values)}"
            )
        feed = {t: v for t, v in zip(self.inputs, values) if not isinstance(t, int)}
        out = backend.get_session().run([self._fetch, self._updates], feed_dict=feed)[0]
        return out[0] if self._single else out


def function(inputs, outputs, updates=None, name=None, **kwargs):
    if kwargs:
        raise ValueError(f"Invalid argument(s) to K.function: {sorted(kwargs)}")
    return Function(inputs, outputs, updates=updates, name=name)
