"""Keras' core layers: ``Dense``, ``Activation``, ``Dropout``, ``Flatten``, ``Reshape``,
``Permute``, ``RepeatVector``, ``Lambda``, ``ActivityRegularization`` and ``Masking``."""

from __future__ import annotations

import numpy as np

from engine.framework.constant_op import constant
from engine.keras import activations, backend, regularizers
from engine.keras.base_layer import InputSpec, Layer
from engine.ops import array as array_ops
from engine.ops import array_transform, control_flow, linalg, nn, reduction
from engine.ops import math as math_ops
from engine.ops.matmul import matmul

__all__ = [
    "Activation",
    "ActivityRegularization",
    "Dense",
    "Dropout",
    "Flatten",
    "Lambda",
    "Masking",
    "Permute",
    "RepeatVector",
    "Reshape",
    "smart_cond",
]


def smart_cond(pred, true_fn, false_fn):
    """``true_fn()`` or ``false_fn()``: chosen now when ``pred`` is a Python value, else a
    ``cond`` on the tensor (Keras' learning phase)."""
    if isinstance(pred, (bool, int, np.bool_, np.integer)):
        return true_fn() if pred else false_fn()
    return control_flow.cond(pred, true_fn, false_fn)


def training_flag(training):
    """The ``training`` a layer was called with, or else Keras' learning phase."""
    return backend.learning_phase() if training is None else training


class Dense(Layer):
    """``activation(inputs @ kernel + bias)``; on inputs of rank > 2 over the last axis."""

    def __init__(
        self,
        units,
        activation=None,
        use_bias=True,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        bias_regularizer=None,
        activity_regularizer=None,
        kernel_constraint=None,
        bias_constraint=None,
        **kwargs,
    ):
        if "input_shape" not in kwargs and "input_dim" in kwargs:
            kwargs["input_shape"] = (kwargs.pop("input_dim"),)
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.units = int(units)
        if self.units <= 0:
            raise ValueError(
                f"Received an invalid value for `units`, expected a positive integer, got {units}."
            )
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer
        self.kernel_regularizer = kernel_regularizer
        self.bias_regularizer = bias_regularizer
        self.kernel_constraint = kernel_constraint
        self.bias_constraint = bias_constraint
        self.input_spec = InputSpec(min_ndim=2)
        self.supports_masking = True

    def build(self, input_shape):
        last = input_shape[-1].value if input_shape.rank else None
        if last is None:
            raise ValueError(
                "The last dimension of the inputs to `Dense` should be defined. Found `None`."
            )
        self.kernel = self.add_weight(
            "kernel",
            (last, self.units),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
        )
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(
                "bias",
                (self.units,),
                initializer=self.bias_initializer,
                regularizer=self.bias_regularizer,
                constraint=self.bias_constraint,
            )
        self.built = True

    def call(self, inputs):
        rank = inputs.shape.rank
        if rank is not None and rank > 2:
            outputs = linalg.tensordot(inputs, self.kernel, [[rank - 1], [0]])
        else:
            outputs = matmul(inputs, self.kernel)
        if self.use_bias:
            outputs = nn.bias_add(outputs, self.bias)
        return self.activation(outputs) if self.activation is not activations.linear else outputs

    def get_config(self) -> dict:
        return {**super().get_config(), "units": self.units, "use_bias": self.use_bias}


class Activation(Layer):
    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.activation = activations.get(activation)

    def call(self, inputs):
        return self.activation(inputs)


class Dropout(Layer):
    """Zeroes a fraction ``rate`` of the inputs while training (scaling the rest by
    ``1 / (1 - rate)``); the identity otherwise."""

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not 0 <= rate < 1:
            raise ValueError(
                f"Invalid value {rate} received for `rate`, expected a value between 0 and 1."
            )
        self.rate = float(rate)
        self.noise_shape = noise_shape
        self.seed = seed
        self.supports_masking = True

    def _noise_shape(self, inputs):
        if self.noise_shape is None:
            return None
        dynamic = array_ops.shape(inputs)
        return array_transform.stack(
            [dynamic[i] if d is None else d for i, d in enumerate(self.noise_shape)]
        )

    def call(self, inputs, training=None):
        if self.rate == 0:
            return inputs

        def dropped():
            return nn.dropout(
                inputs, noise_shape=self._noise_shape(inputs), seed=self.seed, rate=self.rate
            )

        return smart_cond(training_flag(training), dropped, lambda: array_ops.identity(inputs))


class Flatten(Layer):
    """Flattens every axis but the batch axis."""

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = data_format or backend.image_data_format()

    def call(self, inputs):
        if self.data_format == "channels_first" and inputs.shape.rank and inputs.shape.rank > 2:
            perm = [0, *range(2, inputs.shape.rank), 1]
            inputs = array_ops.transpose(inputs, perm=perm)
        dims = backend.int_shape(inputs)
        if dims is not None and len(dims) == 1:
            return array_ops.expand_dims(inputs, 1)
        if dims is not None and all(d is not None for d in dims[1:]):
            return array_ops.reshape(inputs, (-1, int(np.prod(dims[1:], dtype=np.int64))))
        batch = array_ops.shape(inputs)[:1]
        return array_ops.reshape(inputs, array_transform.concat([batch, constant([-1])], 0))


class Reshape(Layer):
    """Reshapes each sample to ``target_shape`` (one entry may be -1)."""

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)
        if sum(d == -1 for d in self.target_shape) > 1:
            raise ValueError("There must be at most one unknown dimension in output_shape.")

    def call(self, inputs):
        target = list(self.target_shape)
        dims = backend.int_shape(inputs)
        if -1 in target and dims is not None and all(d is not None for d in dims[1:]):
            known = int(np.prod([d for d in target if d != -1], dtype=np.int64))
            total = int(np.prod(dims[1:], dtype=np.int64))
            if known == 0 or total % known:
                raise ValueError(
                    f"total size of new array must be unchanged, input_shape = {dims[1:]}, "
                    f"output_shape = {self.target_shape}"
                )
            target[target.index(-1)] = total // known
        elif dims is not None and all(d is not None for d in dims[1:]):
            # A fully given shape must hold as many elements as each sample (TF1 raises).
            if int(np.prod(dims[1:], dtype=np.int64)) != int(np.prod(target, dtype=np.int64)):
                raise ValueError(
                    f"total size of new array must be unchanged, input_shape = "
                    f"{list(dims[1:])}, output_shape = {list(self.target_shape)}"
                )
        if -1 not in target:
            return array_ops.reshape(inputs, [-1, *target])
        batch = array_ops.shape(inputs)[:1]
        return array_ops.reshape(inputs, array_transform.concat([batch, constant(target)], 0))


class Permute(Layer):
    """Permutes the non-batch axes: ``dims`` are 1-based, as in Keras."""

    def __init__(self, dims, **kwargs):
        super().__init__(**kwargs)
        self.dims = tuple(dims)
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise ValueError(
                f"Invalid permutation `dims` for Permute Layer: {dims}. The set "
                "of indices in `dims` must be consecutive and start from 1."
            )

    def call(self, inputs):
        return array_ops.transpose(inputs, perm=(0, *self.dims))


class RepeatVector(Layer):
    """(batch, features) -> (batch, n, features)."""

    def __init__(self, n, **kwargs):
        super().__init__(**kwargs)
        self.n = int(n)

    def call(self, inputs):
        if inputs.shape.rank is not None and inputs.shape.rank != 2:
            raise ValueError(
                f"Input 0 of layer {self.name} is incompatible with the layer: "
                f"expected ndim=2, found ndim={inputs.shape.rank}."
            )
        return array_transform.tile(array_ops.expand_dims(inputs, 1), [1, self.n, 1])


class Lambda(Layer):
    """Wraps ``function(inputs, **arguments)`` as a layer."""

    def __init__(self, function, output_shape=None, mask=None, arguments=None, **kwargs):
        super().__init__(**kwargs)
        if not callable(function):
            raise TypeError(f"Lambda's function must be callable, got {function!r}")
        self.function = function
        self.arguments = arguments or {}
        self._output_shape = output_shape
        self._mask = mask
        self.supports_masking = mask is not None

    def call(self, inputs, mask=None, training=None):  # noqa: ARG002 - Keras' signature
        return self.function(inputs, **self.arguments)

    def compute_mask(self, inputs, mask=None):
        if callable(self._mask):
            return self._mask(inputs, mask)
        return self._mask


class ActivityRegularization(Layer):
    def __init__(self, l1=0.0, l2=0.0, **kwargs):  # noqa: E741 - Keras' names
        super().__init__(activity_regularizer=regularizers.L1L2(l1=l1, l2=l2), **kwargs)
        self.supports_masking = True
        self.l1, self.l2 = l1, l2  # its config


class Masking(Layer):
    """Masks the timesteps whose features all equal ``mask_value`` (for the RNN layers after
    it) and zeroes them."""

    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.mask_value = mask_value

    def compute_mask(self, inputs, mask=None):  # noqa: ARG002 - Keras' signature
        return reduction.reduce_any(math_ops.not_equal(inputs, self.mask_value), axis=-1)

    def call(self, inputs):
        keep = reduction.reduce_any(
            math_ops.not_equal(inputs, self.mask_value), axis=-1, keepdims=True
        )
        return inputs * math_ops.cast(keep, inputs.dtype)
