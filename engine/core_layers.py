"""TF1's core ``tf.layers``: functional ``dense``, ``flatten`` and ``dropout``, and the
scope helpers the other layers share.

Each call opens a variable scope named as TF1 names it (``dense``, ``dense_1``, ... or the
given ``name``), so variables are ``<scope>/kernel`` and ``<scope>/bias`` and can be shared
with ``name=..., reuse=True``. Ops are created in the scope's name scope.
"""

from __future__ import annotations

import functools
import numbers
import operator
from collections.abc import Sequence

from engine import dtypes
from engine.framework.constant_op import constant, convert_to_tensor
from engine.framework.graph import GraphKeys, Tensor, add_to_collection, name_scope
from engine.framework.tensor_like import Initializer, TensorFn, TensorLike
from engine.framework.tensor_util import constant_value
from engine.init_ops import zeros_initializer
from engine.ops import array as array_ops
from engine.ops import array_transform, control_flow, linalg, nn
from engine.ops import math as math_ops
from engine.variable_scope import get_variable, variable_scope

__all__ = ["dense", "flatten", "dropout"]


def _layer_scope(name, default_name: str, reuse=None):
    """The variable scope of one layer call, as TF1's legacy layers choose it."""
    if name is not None:
        return variable_scope(name, reuse=reuse)
    if reuse:
        return variable_scope(default_name, reuse=reuse)
    return variable_scope(None, default_name=default_name)


def _check_min_ndim(x: Tensor, layer: str, min_ndim: int) -> None:
    rank = x.shape.rank
    if rank is not None and rank < min_ndim:
        raise ValueError(
            f"Input 0 of layer {layer} is incompatible with the layer: : expected "
            f"min_ndim={min_ndim}, found ndim={rank}. Full shape received: "
            f"{x.shape}"
        )


def _short_name(scope) -> str:
    return scope.name.rsplit("/", 1)[-1]


def _dim(x: Tensor, i: int):
    """Dimension ``i`` of ``x``: a Python int when static, else a scalar int32 tensor."""
    dims = x.shape.as_tuple()
    if dims is not None and dims[i] is not None:
        return dims[i]
    return array_ops.shape(x)[i]


# -----------------------------------------------------------------------------------------
# dense
# -----------------------------------------------------------------------------------------


def dense(
    inputs: TensorLike,
    units: int,
    activation: TensorFn | None = None,
    use_bias: bool = True,
    kernel_initializer: Initializer | None = None,
    bias_initializer: Initializer | None = zeros_initializer(),
    kernel_regularizer: TensorFn | None = None,
    bias_regularizer: TensorFn | None = None,
    activity_regularizer: TensorFn | None = None,
    kernel_constraint: TensorFn | None = None,
    bias_constraint: TensorFn | None = None,
    trainable: bool = True,
    name: str | None = None,
    reuse: bool | None = None,
) -> Tensor:
    """A fully connected layer: ``activation(inputs @ kernel + bias)``.

    Creates ``<scope>/kernel`` (``[inputs.shape[-1], units]``, glorot-uniform by default)
    and ``<scope>/bias`` (``[units]``, zeros). Inputs of rank > 2 are multiplied along their
    last axis; leading dimensions may be unknown.

    >>> h = dense(x, 64, activation=nn.relu)          # dense/kernel, dense/bias
    >>> h2 = dense(x, 64, name="dense", reuse=True)   # shares dense/kernel
    """
    units = int(units)
    if units < 0:
        raise ValueError(
            f"Received an invalid value for `units`, expected a positive integer, got {units}."
        )
    with _layer_scope(name, "dense", reuse) as scope:
        x = convert_to_tensor(inputs)
        _check_min_ndim(x, name or _short_name(scope), 2)
        dtype = x.dtype.base_dtype
        if not dtype.is_floating:
            raise TypeError(f"Unable to build `Dense` layer with non-floating point dtype {dtype}")
        last = x.shape.as_tuple()[-1] if x.shape.rank is not None else None
        if last is None:
            raise ValueError(
                "The last dimension of the inputs to `Dense` should be defined. Found `None`."
            )
        kernel = get_variable(
            "kernel",
            shape=[last, units],
            dtype=dtype,
            initializer=kernel_initializer,
            regularizer=kernel_regularizer,
            trainable=trainable,
            constraint=kernel_constraint,
        )
        bias = None
        if use_bias:
            bias = get_variable(
                "bias",
                shape=[units],
                dtype=dtype,
                initializer=bias_initializer,
                regularizer=bias_regularizer,
                trainable=trainable,
                constraint=bias_constraint,
            )
        rank = x.shape.rank
        if rank == 2:
            outputs = math_ops.matmul(x, kernel)
        else:
            # Over the last axis, keeping the leading ones (which may be unknown).
            outputs = linalg.tensordot(x, kernel, [[rank - 1], [0]])
            outputs.set_shape(x.shape.as_list()[:-1] + [units])
        if bias is not None:
            outputs = nn.bias_add(outputs, bias)
        if activation is not None:
            outputs = activation(outputs)
        if activity_regularizer is not None:
            with name_scope("ActivityRegularizer"):
                loss = activity_regularizer(outputs)
                # Per example, so the strength does not depend on the batch size.
                batch = math_ops.cast(_dim(outputs, 0), loss.dtype.base_dtype)
                add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss / batch)
        return outputs


# -----------------------------------------------------------------------------------------
# flatten, dropout
# -----------------------------------------------------------------------------------------


def flatten(
    inputs: TensorLike, name: str | None = None, data_format: str = "channels_last"
) -> Tensor:
    """Flattens all but the first (batch) dimension: ``[N, d1, ..., dk] -> [N, d1*...*dk]``.

    >>> flatten(placeholder(float32, [None, 4, 3])).shape  # (?, 12)
    """
    if data_format != "channels_last":
        raise NotImplementedError(
            f"flatten(data_format={data_format!r}) is not supported; only 'channels_last'"
        )
    with _layer_scope(name, "flatten") as scope:
        x = convert_to_tensor(inputs)
        _check_min_ndim(x, name or _short_name(scope), 1)
        dims = x.shape.as_tuple()
        if dims is not None and len(dims) == 1:
            return array_ops.expand_dims(x, 1)
        rest = dims[1:] if dims is not None else None
        if rest is not None and None not in rest:
            target = constant([-1, functools.reduce(operator.mul, rest, 1)], dtype=dtypes.int32)
        elif dims is not None and dims[0] is not None:
            target = constant([dims[0], -1], dtype=dtypes.int32)
        else:
            target = array_transform.stack([_dim(x, 0), -1])
        return array_ops.reshape(x, target)


def _static_training(training):
    """``training`` as a Python bool when known while building, else None."""
    if isinstance(training, Tensor):
        value = constant_value(training)
        return None if value is None else bool(value)
    return bool(training)


def dropout(
    inputs: TensorLike,
    rate: float | Tensor = 0.5,
    noise_shape: Sequence[int | None] | TensorLike | None = None,
    seed: int | None = None,
    training: bool | TensorLike = False,
    name: str | None = None,
) -> Tensor:
    """Dropout when ``training``: zeroes each element with probability ``rate`` and scales the
    rest by ``1 / (1 - rate)``; the identity otherwise.

    ``training`` may be a bool tensor (e.g. a placeholder), chosen at run time with ``cond``.
    ``noise_shape`` entries of None take the input's dimension.

    >>> y = dropout(x, 0.3, training=is_training)  # is_training: a bool placeholder
    """
    if isinstance(rate, numbers.Real) and not 0 <= rate <= 1:
        raise ValueError(
            f"Invalid value {rate} received for `rate`, expected a value between 0 and 1."
        )
    static = _static_training(training)
    with _layer_scope(name, "dropout"):
        x = convert_to_tensor(inputs)

        def dropped():
            shape = noise_shape
            if shape is not None:
                shape = [_dim(x, i) if d is None else d for i, d in enumerate(shape)]
            return nn.dropout(x, noise_shape=shape, seed=seed, rate=rate)

        def identity():
            return array_ops.identity(x)

        if static is None:
            return control_flow.cond(training, dropped, identity)
        return dropped() if static else identity()
