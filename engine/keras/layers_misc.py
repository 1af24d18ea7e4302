"""Keras' ``Embedding``, advanced activation layers (``LeakyReLU``, ``PReLU``, ``ELU``,
``ReLU``, ``Softmax``, ``ThresholdedReLU``) and noise layers (``GaussianNoise``,
``GaussianDropout``, ``AlphaDropout``, ``SpatialDropout1D``/``2D``/``3D``) in TF1 graph mode.

The noise layers are the identity unless training (the learning phase, or ``training=True``).
"""

from __future__ import annotations

import math

from engine import dtypes
from engine.keras import activations
from engine.keras.base_layer import InputSpec, Layer
from engine.keras.conv_utils import normalize_data_format
from engine.keras.core import Dropout, smart_cond, training_flag
from engine.ops import array as array_ops
from engine.ops import array_transform, embedding, nn, reduction
from engine.ops import math as math_ops
from engine.ops import random as random_ops
from engine.tensor_shape import TensorShape

__all__ = [
    "ELU",
    "AlphaDropout",
    "Embedding",
    "GaussianDropout",
    "GaussianNoise",
    "LeakyReLU",
    "PReLU",
    "ReLU",
    "Softmax",
    "SpatialDropout1D",
    "SpatialDropout2D",
    "SpatialDropout3D",
    "ThresholdedReLU",
]


class Embedding(Layer):
    """Looks up rows of ``embeddings`` (``[input_dim, output_dim]``) by integer ids; with
    ``mask_zero``, id 0 is padding and the output carries the mask ``ids != 0``.

    >>> vectors = Embedding(1000, 64, mask_zero=True)(ids)   # ids: [batch, steps]
    """

    def __init__(
        self,
        input_dim,
        output_dim,
        embeddings_initializer="uniform",
        embeddings_regularizer=None,
        activity_regularizer=None,
        embeddings_constraint=None,
        mask_zero=False,
        input_length=None,
        **kwargs,
    ):
        if "input_shape" not in kwargs:
            kwargs["input_shape"] = (input_length,) if input_length else (None,)
        if input_dim <= 0 or output_dim <= 0:
            raise ValueError(
                "Both `input_dim` and `output_dim` should be positive, "
                f"Received input_dim = {input_dim} and output_dim = {output_dim}"
            )
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.input_dim = int(input_dim)
        self.output_dim = int(output_dim)
        self.embeddings_initializer = embeddings_initializer
        self.embeddings_regularizer = embeddings_regularizer
        self.embeddings_constraint = embeddings_constraint
        self.mask_zero = bool(mask_zero)
        self.supports_masking = self.mask_zero
        self.input_length = input_length

    def build(self, input_shape):  # noqa: ARG002 - the table does not depend on it
        self.embeddings = self.add_weight(
            "embeddings",
            (self.input_dim, self.output_dim),
            initializer=self.embeddings_initializer,
            regularizer=self.embeddings_regularizer,
            constraint=self.embeddings_constraint,
        )
        self.built = True

    def call(self, inputs):
        if inputs.dtype.base_dtype not in (dtypes.int32, dtypes.int64):
            inputs = math_ops.cast(inputs, dtypes.int32)
        return embedding.embedding_lookup(self.embeddings, inputs)

    def compute_mask(self, inputs, mask=None):  # noqa: ARG002 - Keras' signature
        if not self.mask_zero:
            return None
        return math_ops.not_equal(inputs, 0)

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        if self.input_length is not None:
            lengths = (
                list(self.input_length)
                if isinstance(self.input_length, (list, tuple))
                else [self.input_length]
            )
            if len(lengths) != len(dims) - 1:
                raise ValueError(
                    f'"input_length" is {self.input_length}, but received input has shape '
                    f"{TensorShape(input_shape)}"
                )
            dims = [dims[0], *(d if d is not None else s for s, d in zip(lengths, dims[1:]))]
        return TensorShape([*dims, self.output_dim])

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "input_dim": self.input_dim,
            "output_dim": self.output_dim,
            "mask_zero": self.mask_zero,
            "input_length": self.input_length,
        }


class _Elementwise(Layer):
    """A layer whose output has its input's shape and mask."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)


class LeakyReLU(_Elementwise):
    """``x`` where positive, ``alpha * x`` elsewhere (``alpha=0.3``)."""

    def __init__(self, alpha=0.3, **kwargs):
        super().__init__(**kwargs)
        if alpha is None:
            raise ValueError(
                "The alpha value of a Leaky ReLU layer cannot be None, Expecting a float. "
                "Received: None"
            )
        self.alpha = float(alpha)

    def call(self, inputs):
        return nn.leaky_relu(inputs, alpha=self.alpha)

    def get_config(self) -> dict:
        return {**super().get_config(), "alpha": self.alpha}


class PReLU(_Elementwise):
    """A leaky ReLU with a learned slope ``alpha`` per element (shared along
    ``shared_axes``, 1-based as in Keras)."""

    def __init__(
        self,
        alpha_initializer="zeros",
        alpha_regularizer=None,
        alpha_constraint=None,
        shared_axes=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.alpha_initializer = alpha_initializer
        self.alpha_regularizer = alpha_regularizer
        self.alpha_constraint = alpha_constraint
        if shared_axes is None:
            self.shared_axes = None
        elif isinstance(shared_axes, (list, tuple)):
            self.shared_axes = list(shared_axes)
        else:
            self.shared_axes = [shared_axes]

    def build(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        param_shape = list(dims[1:])
        for axis in self.shared_axes or []:
            if not 1 <= axis < len(dims):
                raise ValueError(
                    f"PReLU: shared axis {axis} is not a non-batch axis of inputs of shape "
                    f"{TensorShape(input_shape)}"
                )
            param_shape[axis - 1] = 1
        if None in param_shape:
            raise ValueError(
                f"PReLU needs defined non-shared dimensions; got input shape "
                f"{TensorShape(input_shape)} and shared_axes={self.shared_axes}"
            )
        self.alpha = self.add_weight(
            "alpha",
            param_shape,
            initializer=self.alpha_initializer,
            regularizer=self.alpha_regularizer,
            constraint=self.alpha_constraint,
        )
        axes = {i: dims[i] for i in range(1, len(dims)) if i not in (self.shared_axes or [])}
        self.input_spec = InputSpec(ndim=len(dims), axes=axes)
        self.built = True

    def call(self, inputs):
        return nn.relu(inputs) - self.alpha * nn.relu(-inputs)

    def get_config(self) -> dict:
        return {**super().get_config(), "shared_axes": self.shared_axes}


class ELU(_Elementwise):
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere."""

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        if alpha is None:
            raise ValueError(
                f"Alpha of an ELU layer cannot be None, expecting a float. Received: {alpha}"
            )
        self.alpha = float(alpha)

    def call(self, inputs):
        res = nn.elu(inputs)
        if self.alpha == 1:
            return res
        return math_ops.where(math_ops.greater(inputs, 0), res, self.alpha * res)

    def get_config(self) -> dict:
        return {**super().get_config(), "alpha": self.alpha}


class ReLU(_Elementwise):
    """``min(max(x, 0), max_value)``, with slope ``negative_slope`` below ``threshold``
    (and 0 between ``0`` and ``threshold``)."""

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, **kwargs):
        super().__init__(**kwargs)
        if max_value is not None and max_value < 0.0:
            raise ValueError(
                f"max_value of a ReLU layer cannot be a negative value. Received: {max_value}"
            )
        if negative_slope is None or negative_slope < 0.0:
            raise ValueError(
                "negative_slope of a ReLU layer cannot be a negative value. "
                f"Received: {negative_slope}"
            )
        if threshold is None or threshold < 0.0:
            raise ValueError(
                f"threshold of a ReLU layer cannot be a negative value. Received: {threshold}"
            )
        self.max_value = None if max_value is None else float(max_value)
        self.negative_slope = float(negative_slope)
        self.threshold = float(threshold)

    def call(self, inputs):
        return activations.relu(
            inputs, alpha=self.negative_slope, max_value=self.max_value, threshold=self.threshold
        )

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "max_value": self.max_value,
            "negative_slope": self.negative_slope,
            "threshold": self.threshold,
        }


class Softmax(_Elementwise):
    """Softmax over ``axis`` (an int or a tuple); masked positions (mask False) get ~0."""

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def call(self, inputs, mask=None):
        if mask is not None:
            # Masked positions get a large negative logit (-1e9, as Keras).
            adder = (1.0 - math_ops.cast(mask, inputs.dtype)) * -1e9
            inputs = inputs + adder
        if isinstance(self.axis, (tuple, list)):
            if len(self.axis) > 1:
                lse = reduction.reduce_logsumexp(inputs, axis=list(self.axis), keepdims=True)
                return math_ops.exp(inputs - lse)
            return activations.softmax(inputs, axis=self.axis[0])
        return activations.softmax(inputs, axis=self.axis)

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis}


class ThresholdedReLU(_Elementwise):
    """``x`` where ``x > theta``, else 0."""

    def __init__(self, theta=1.0, **kwargs):
        super().__init__(**kwargs)
        if theta is None:
            raise ValueError(
                "Theta of a Thresholded ReLU layer cannot be None, expecting a float. "
                f"Received: {theta}"
            )
        if theta < 0:
            raise ValueError(
                f"The theta value of a Thresholded ReLU layer should be >=0. Received: {theta}"
            )
        self.theta = float(theta)

    def call(self, inputs):
        keep = math_ops.cast(math_ops.greater(inputs, self.theta), inputs.dtype)
        return inputs * keep

    def get_config(self) -> dict:
        return {**super().get_config(), "theta": self.theta}


def _check_rate(rate) -> float:
    if not 0 <= rate <= 1:
        raise ValueError(
            f"Invalid value {rate} received for `rate`, expected a value between 0 and 1."
        )
    return float(rate)


class GaussianNoise(_Elementwise):
    """Adds zero-mean Gaussian noise of ``stddev`` while training."""

    def __init__(self, stddev, seed=None, **kwargs):
        super().__init__(**kwargs)
        if stddev < 0:
            raise ValueError(f"`stddev` must be non-negative. Received: stddev={stddev}")
        self.stddev = float(stddev)
        self.seed = seed

    def call(self, inputs, training=None):
        def noised():
            noise = random_ops.random_normal(
                array_ops.shape(inputs),
                mean=0.0,
                stddev=self.stddev,
                dtype=inputs.dtype,
                seed=self.seed,
            )
            return inputs + noise

        return smart_cond(training_flag(training), noised, lambda: array_ops.identity(inputs))

    def get_config(self) -> dict:
        return {**super().get_config(), "stddev": self.stddev, "seed": self.seed}


class GaussianDropout(_Elementwise):
    """Multiplies by Gaussian noise of mean 1 and stddev ``sqrt(rate / (1 - rate))`` while
    training."""

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate = _check_rate(rate)
        self.seed = seed

    def call(self, inputs, training=None):
        if not 0 < self.rate < 1:
            return inputs
        stddev = math.sqrt(self.rate / (1.0 - self.rate))

        def noised():
            noise = random_ops.random_normal(
                array_ops.shape(inputs),
                mean=1.0,
                stddev=stddev,
                dtype=inputs.dtype,
                seed=self.seed,
            )
            return inputs * noise

        return smart_cond(training_flag(training), noised, lambda: array_ops.identity(inputs))

    def get_config(self) -> dict:
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


class AlphaDropout(_Elementwise):
    """Dropout that keeps SELU's self-normalizing mean and variance: dropped units are set
    to SELU's negative saturation value, then an affine map restores the statistics."""

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate = _check_rate(rate)
        self.noise_shape = noise_shape
        self.seed = seed

    def call(self, inputs, training=None):
        if not 0 < self.rate < 1:
            return inputs
        rate = self.rate
        alpha_p = -_SELU_ALPHA * _SELU_SCALE
        a = ((1 - rate) * (1 + rate * alpha_p**2)) ** -0.5
        b = -a * alpha_p * rate

        def dropped():
            shape = self.noise_shape if self.noise_shape is not None else array_ops.shape(inputs)
            draw = random_ops.random_uniform(shape, dtype=inputs.dtype, seed=self.seed)
            kept = math_ops.cast(math_ops.greater_equal(draw, rate), inputs.dtype)
            x = inputs * kept + alpha_p * (1.0 - kept)
            return a * x + b

        return smart_cond(training_flag(training), dropped, lambda: array_ops.identity(inputs))

    def get_config(self) -> dict:
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}


class _SpatialDropout(Dropout):
    """Dropout of whole feature maps: one draw per sample and channel."""

    _rank = 1

    def __init__(self, rate, data_format=None, **kwargs):
        super().__init__(rate, **kwargs)
        self.data_format = normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=self._rank + 2)

    def _noise_shape(self, inputs):
        rank = inputs.shape.rank
        if rank is not None and rank != self._rank + 2:
            raise ValueError(
                f'Input 0 of layer "{self.name}" is incompatible with the layer: expected '
                f"ndim={self._rank + 2}, found ndim={rank}. Full shape received: {inputs.shape}"
            )
        shape = array_ops.shape(inputs)
        ones = [1] * self._rank
        if self.data_format == "channels_last":
            dims = [shape[0], *ones, shape[self._rank + 1]]
        else:
            dims = [shape[0], shape[1], *ones]
        return array_transform.stack(dims)


class SpatialDropout1D(_SpatialDropout):
    """Drops whole channels of ``(batch, steps, channels)`` inputs while training."""

    def __init__(self, rate, **kwargs):
        super().__init__(rate, data_format="channels_last", **kwargs)

    def get_config(self) -> dict:
        return {k: v for k, v in super().get_config().items() if k != "data_format"}


class SpatialDropout2D(_SpatialDropout):
    """Drops whole feature maps of images while training."""

    _rank = 2


class SpatialDropout3D(_SpatialDropout):
    """Drops whole feature maps of volumes while training."""

    _rank = 3
