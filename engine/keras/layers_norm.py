"""Keras' normalization layers in TF1 graph mode: ``BatchNormalization`` and
``LayerNormalization``.

``BatchNormalization`` normalizes with the batch's statistics while training (the learning
phase, or ``training=True``) and with its moving statistics otherwise. Its two moving-average
updates are added with ``add_update``; as TF1's Keras, their momentum is 1 (no change) unless
training, so running them at inference leaves the moving statistics as they are. Where TF's
Keras would use the fused kernel (4-D inputs normalized over axis 1 or 3), the moving variance
is updated with the unbiased (Bessel-corrected) batch variance, as that kernel reports it.
"""

from __future__ import annotations

import numbers

from engine import dtypes
from engine.framework import graph as ops
from engine.framework.constant_op import constant
from engine.keras.base_layer import InputSpec, Layer
from engine.keras.core import smart_cond, training_flag
from engine.ops import array as array_ops
from engine.ops import math as math_ops
from engine.ops import nn, state
from engine.tensor_shape import TensorShape

__all__ = ["BatchNormalization", "LayerNormalization"]

_FUSED_MIN_EPSILON = 1.001e-5  # what tf.nn.fused_batch_norm raises a smaller epsilon to


def _axes(axis, what: str) -> list:
    if isinstance(axis, (list, tuple)):
        axes = list(axis)
    elif isinstance(axis, numbers.Integral) and not isinstance(axis, bool):
        axes = [axis]
    else:
        raise TypeError(
            f"Expected an int or a list/tuple of ints for the argument 'axis', but received: {axis}"
        )
    if not axes or not all(isinstance(a, numbers.Integral) for a in axes):
        raise TypeError(f"Invalid axis for {what}: {axis}")
    return axes


def _resolve_axes(axes: list, input_shape, layer) -> list[int]:
    """``axes`` as sorted non-negative ints, each a defined axis of ``input_shape``."""
    shape = TensorShape(input_shape)
    if shape.rank is None:
        raise ValueError(f"Input has undefined rank. Received: input_shape={shape}.")
    rank = shape.rank
    resolved = []
    for a in axes:
        b = a + rank if a < 0 else a
        if not 0 <= b < rank:
            raise ValueError(
                "Invalid value for `axis` argument. Expected 0 <= axis < inputs.rank (with "
                f"inputs.rank={rank}). Received: axis={tuple(layer.axis)}"
            )
        resolved.append(b)
    if len(set(resolved)) != len(resolved):
        raise ValueError(f"Duplicate axis: {tuple(layer.axis)}")
    for b in resolved:
        if shape[b].value is None:
            raise ValueError(
                f"Input has undefined `axis` dimension. Received input with shape {shape} and "
                f"axis={tuple(layer.axis)}"
            )
    return sorted(resolved)


def _add_gamma_beta(layer, param_shape) -> None:
    """The scale (``gamma``) and offset (``beta``) weights a normalization layer asks for."""
    layer.gamma = layer.beta = None
    if layer.scale:
        layer.gamma = layer.add_weight(
            "gamma",
            param_shape,
            initializer=layer.gamma_initializer,
            regularizer=layer.gamma_regularizer,
            constraint=layer.gamma_constraint,
        )
    if layer.center:
        layer.beta = layer.add_weight(
            "beta",
            param_shape,
            initializer=layer.beta_initializer,
            regularizer=layer.beta_regularizer,
            constraint=layer.beta_constraint,
        )


class BatchNormalization(Layer):
    """Normalizes each feature (``axis``) over the batch; scales by ``gamma`` and shifts by
    ``beta``; keeps ``moving_mean`` and ``moving_variance`` for inference.

    >>> bn = BatchNormalization()
    >>> y = bn(x)                  # training follows the learning phase
    >>> train_op = tf.group(optimizer.minimize(loss), *bn.updates)
    """

    def __init__(
        self,
        axis=-1,
        momentum=0.99,
        epsilon=1e-3,
        center=True,
        scale=True,
        beta_initializer="zeros",
        gamma_initializer="ones",
        moving_mean_initializer="zeros",
        moving_variance_initializer="ones",
        beta_regularizer=None,
        gamma_regularizer=None,
        beta_constraint=None,
        gamma_constraint=None,
        renorm=False,
        virtual_batch_size=None,
        adjustment=None,
        fused=None,
        **kwargs,
    ):
        for arg, value in (
            ("renorm", renorm),
            ("virtual_batch_size", virtual_batch_size),
            ("adjustment", adjustment),
        ):
            if value:
                raise ValueError(f"BatchNormalization: `{arg}` is not supported by the engine")
        super().__init__(**kwargs)
        self.axis = _axes(axis, "BatchNormalization")
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        if self.epsilon <= 0:
            raise ValueError(f"`epsilon` must be positive. Received: epsilon={epsilon}")
        self.center = center
        self.scale = scale
        self.beta_initializer = beta_initializer
        self.gamma_initializer = gamma_initializer
        self.moving_mean_initializer = moving_mean_initializer
        self.moving_variance_initializer = moving_variance_initializer
        self.beta_regularizer = beta_regularizer
        self.gamma_regularizer = gamma_regularizer
        self.beta_constraint = beta_constraint
        self.gamma_constraint = gamma_constraint
        self.fused = fused
        self.supports_masking = True

    def _decide_fused(self, rank: int) -> None:
        can = rank == 4 and self.axis in ([1], [3])
        if self.fused and not can:
            raise ValueError(
                "Passing `fused=True` is only supported when axis is 1 or 3 of a 4-D input. "
                f"Received: axis={self.axis}, input rank {rank}"
            )
        self.fused = can if self.fused is None else bool(self.fused)

    def build(self, input_shape):
        self.axis = _resolve_axes(self.axis, input_shape, self)
        dims = TensorShape(input_shape).as_list()
        self._decide_fused(len(dims))
        self.input_spec = InputSpec(ndim=len(dims), axes={a: dims[a] for a in self.axis})
        if len(self.axis) == 1:
            param_shape = (dims[self.axis[0]],)
        else:
            param_shape = tuple(dims[i] if i in self.axis else 1 for i in range(len(dims)))
        _add_gamma_beta(self, param_shape)
        self.moving_mean = self.add_weight(
            "moving_mean", param_shape, initializer=self.moving_mean_initializer, trainable=False
        )
        self.moving_variance = self.add_weight(
            "moving_variance",
            param_shape,
            initializer=self.moving_variance_initializer,
            trainable=False,
        )
        self.built = True

    def _broadcast(self, v, rank: int):
        """A per-feature vector reshaped to broadcast against the input."""
        if v is None or len(self.axis) > 1 or self.axis == [rank - 1]:
            return v
        shape = [1] * rank
        shape[self.axis[0]] = -1
        return array_ops.reshape(v, shape)

    def _assign_moving_average(self, variable, value, momentum):
        with ops.name_scope("AssignMovingAvg"):
            decay = math_ops.cast(1.0 - momentum, variable.dtype.base_dtype)
            return state.assign_sub(variable, (variable - value) * decay).op

    def _batch_moments(self, inputs, rank: int):
        reduce_axes = [i for i in range(rank) if i not in self.axis]
        mean, variance = nn.moments(inputs, reduce_axes, keepdims=len(self.axis) > 1)
        update_variance = variance
        if self.fused:
            # The fused kernel reports the unbiased variance, which the update then uses.
            size = math_ops.cast(array_ops.size(inputs), variance.dtype)
            n = size / math_ops.cast(array_ops.size(variance), variance.dtype)
            update_variance = variance * (n / (n - 1.0))
        return mean, variance, update_variance

    def call(self, inputs, training=None):
        rank = inputs.shape.rank
        training = training_flag(training)
        epsilon = max(self.epsilon, _FUSED_MIN_EPSILON) if self.fused else self.epsilon
        if isinstance(training, (bool, int)) and not training:
            mean, variance = self.moving_mean, self.moving_variance
        else:
            batch_mean, batch_var, update_var = self._batch_moments(inputs, rank)
            mean = smart_cond(
                training, lambda: batch_mean, lambda: array_ops.identity(self.moving_mean)
            )
            variance = smart_cond(
                training, lambda: batch_var, lambda: array_ops.identity(self.moving_variance)
            )
            momentum = smart_cond(
                training,
                lambda: constant(self.momentum, dtype=dtypes.float32),
                lambda: constant(1.0, dtype=dtypes.float32),
            )
            self.add_update(self._assign_moving_average(self.moving_mean, batch_mean, momentum))
            self.add_update(self._assign_moving_average(self.moving_variance, update_var, momentum))
        return nn.batch_normalization(
            inputs,
            self._broadcast(mean, rank),
            self._broadcast(variance, rank),
            self._broadcast(self.beta, rank),
            self._broadcast(self.gamma, rank),
            epsilon,
        )

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "axis": self.axis if len(self.axis) > 1 else self.axis[0],
            "momentum": self.momentum,
            "epsilon": self.epsilon,
            "center": self.center,
            "scale": self.scale,
        }


class LayerNormalization(Layer):
    """Normalizes each sample over ``axis`` (mean 0, variance 1), then ``gamma * x + beta``
    with one ``gamma``/``beta`` entry per element of those axes."""

    def __init__(
        self,
        axis=-1,
        epsilon=1e-3,
        center=True,
        scale=True,
        beta_initializer="zeros",
        gamma_initializer="ones",
        beta_regularizer=None,
        gamma_regularizer=None,
        beta_constraint=None,
        gamma_constraint=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.axis = _axes(axis, "LayerNormalization")
        self.epsilon = float(epsilon)
        self.center = center
        self.scale = scale
        self.beta_initializer = beta_initializer
        self.gamma_initializer = gamma_initializer
        self.beta_regularizer = beta_regularizer
        self.gamma_regularizer = gamma_regularizer
        self.beta_constraint = beta_constraint
        self.gamma_constraint = gamma_constraint
        self.supports_masking = True

    def build(self, input_shape):
        self.axis = _resolve_axes(self.axis, input_shape, self)
        dims = TensorShape(input_shape).as_list()
        param_shape = tuple(dims[a] for a in self.axis)
        _add_gamma_beta(self, param_shape)
        self.built = True

    def call(self, inputs):
        rank = inputs.shape.rank
        mean, variance = nn.moments(inputs, self.axis, keepdims=True)
        shape = [inputs.shape[i].value if i in self.axis else 1 for i in range(rank)]

        def broadcast(v):
            return None if v is None else array_ops.reshape(v, shape)

        return nn.batch_normalization(
            inputs, mean, variance, broadcast(self.beta), broadcast(self.gamma), self.epsilon
        )

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "axis": self.axis if len(self.axis) > 1 else self.axis[0],
            "epsilon": self.epsilon,
            "center": self.center,
            "scale": self.scale,
        }
