"""Variable initializers: callables ``init(shape, dtype=None, partition_info=None)`` that
build the ops producing a variable's initial value, as TF1's ``tf.*_initializer``.
"""

from __future__ import annotations

import math

import numpy as np

from engine import dtypes
from engine.framework.constant_op import constant
from engine.ops import array as array_ops
from engine.ops import random as random_ops

__all__ = [
    "Initializer",
    "Zeros",
    "Ones",
    "Constant",
    "RandomNormal",
    "RandomUniform",
    "TruncatedNormal",
    "VarianceScaling",
    "GlorotUniform",
    "GlorotNormal",
    "zeros_initializer",
    "ones_initializer",
    "constant_initializer",
    "random_normal_initializer",
    "random_uniform_initializer",
    "truncated_normal_initializer",
    "variance_scaling_initializer",
    "glorot_uniform_initializer",
    "glorot_normal_initializer",
    "he_normal",
    "he_uniform",
    "lecun_normal",
    "lecun_uniform",
]


def _shape_list(shape):
    if hasattr(shape, "as_list"):
        shape = shape.as_list()
    return [int(d) for d in shape]


class Initializer:
    """Base class: ``__call__(shape, dtype=None, partition_info=None)`` returns a Tensor."""

    def __init__(self, dtype=dtypes.float32):
        self.dtype = dtypes.as_dtype(dtype).base_dtype

    def _dtype(self, dtype):
        return self.dtype if dtype is None else dtypes.as_dtype(dtype).base_dtype

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class Zeros(Initializer):
    def __call__(self, shape, dtype=None, partition_info=None):  # noqa: ARG002 - TF API compatibility
        return array_ops.zeros(shape, self._dtype(dtype))

    def get_config(self):
        return {"dtype": self.dtype.name}


class Ones(Initializer):
    def __call__(self, shape, dtype=None, partition_info=None):  # noqa: ARG002 - TF API compatibility
        return array_ops.ones(shape, self._dtype(dtype))

    def get_config(self):
        return {"dtype": self.dtype.name}


class Constant(Initializer):
    """Initializes to ``value`` (a scalar broadcast to the shape, or a matching array)."""

    def __init__(self, value=0, dtype=dtypes.float32, verify_shape=False):
        super().__init__(dtype)
        self.value = value
        self.verify_shape = verify_shape

    def __call__(self, shape, dtype=None, partition_info=None, verify_shape=None):  # noqa: ARG002 - TF API compatibility
        verify = self.verify_shape if verify_shape is None else verify_shape
        return constant(self.value, dtype=self._dtype(dtype), shape=shape, verify_shape=verify)

    def get_config(self):
        return {"value": self.value, "dtype": self.dtype.name, "verify_shape": self.verify_shape}


class RandomNormal(Initializer):
    def __init__(self, mean=0.0, stddev=1.0, seed=None, dtype=dtypes.float32):
        super().__init__(dtype)
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape, dtype=None, partition_info=None):  # noqa: ARG002 - TF API compatibility
        return random_ops.random_normal(
            shape, self.mean, self.stddev, self._dtype(dtype), seed=self.seed
        )

    def get_config(self):
        return {
            "mean": self.mean,
            "stddev": self.stddev,
            "seed": self.seed,
            "dtype": self.dtype.name,
        }


class RandomUniform(Initializer):
    def __init__(self, minval=0.0, maxval=None, seed=None, dtype=dtypes.float32):
        super().__init__(dtype)
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def __call__(self, shape, dtype=None, partition_info=None):  # noqa: ARG002 - TF API compatibility
        return random_ops.random_uniform(
            shape, self.minval, self.maxval, self._dtype(dtype), seed=self.seed
        )

    def get_config(self):
        return {
            "minval": self.minval,
            "maxval": self.maxval,
            "seed": self.seed,
            "dtype": self.dtype.name,
        }


class TruncatedNormal(Initializer):
    def __init__(self, mean=0.0, stddev=1.0, seed=None, dtype=dtypes.float32):
        super().__init__(dtype)
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape, dtype=None, partition_info=None):  # noqa: ARG002 - TF API compatibility
        return random_ops.truncated_normal(
            shape, self.mean, self.stddev, self._dtype(dtype), seed=self.seed
        )

    def get_config(self):
        return {
            "mean": self.mean,
            "stddev": self.stddev,
            "seed": self.seed,
            "dtype": self.dtype.name,
        }


def _fans(shape):
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = int(np.prod(shape[:-2]))
    return shape[-2] * receptive, shape[-1] * receptive


class VarianceScaling(Initializer):
    """Scales the spread to ``scale / n`` where n is fan_in, fan_out or their average."""

    def __init__(
        self,
        scale=1.0,
        mode="fan_in",
        distribution="truncated_normal",
        seed=None,
        dtype=dtypes.float32,
    ):
        if scale <= 0.0:
            raise ValueError("`scale` must be positive float.")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(
                f"Invalid `mode` argument: {mode!r} (expected fan_in, fan_out or fan_avg)"
            )
        distribution = distribution.lower()
        if distribution == "normal":
            distribution = "truncated_normal"
        if distribution not in ("uniform", "truncated_normal", "untruncated_normal"):
            raise ValueError(f"Invalid `distribution` argument: {distribution!r}")
        super().__init__(dtype)
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed

    def __call__(self, shape, dtype=None, partition_info=None):  # noqa: ARG002 - TF API compatibility
        dims = _shape_list(shape)
        fan_in, fan_out = _fans(dims)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, n)
        dtype = self._dtype(dtype)
        if self.distribution == "uniform":
            limit = math.sqrt(3.0 * scale)
            return random_ops.random_uniform(dims, -limit, limit, dtype, seed=self.seed)
        if self.distribution == "truncated_normal":
            # 0.8796... is the stddev of a unit normal truncated to [-2, 2].
            stddev = math.sqrt(scale) / 0.87962566103423978
            return random_ops.truncated_normal(dims, 0.0, stddev, dtype, seed=self.seed)
        return random_ops.random_normal(dims, 0.0, math.sqrt(scale), dtype, seed=self.seed)

    def get_config(self):
        return {
            "scale": self.scale,
            "mode": self.mode,
            "distribution": self.distribution,
            "seed": self.seed,
            "dtype": self.dtype.name,
        }


class GlorotUniform(VarianceScaling):
    """Uniform in ``[-l, l]`` with ``l = sqrt(6 / (fan_in + fan_out))`` (TF1's default)."""

    def __init__(self, seed=None, dtype=dtypes.float32):
        super().__init__(1.0, "fan_avg", "uniform", seed, dtype)

    def get_config(self):
        return {"seed": self.seed, "dtype": self.dtype.name}


class GlorotNormal(VarianceScaling):
    def __init__(self, seed=None, dtype=dtypes.float32):
        super().__init__(1.0, "fan_avg", "truncated_normal", seed, dtype)

    def get_config(self):
        return {"seed": self.seed, "dtype": self.dtype.name}


zeros_initializer = Zeros
ones_initializer = Ones
constant_initializer = Constant
random_normal_initializer = RandomNormal
random_uniform_initializer = RandomUniform
truncated_normal_initializer = TruncatedNormal
variance_scaling_initializer = VarianceScaling
glorot_uniform_initializer = GlorotUniform
glorot_normal_initializer = GlorotNormal


def he_normal(seed=None):
    return VarianceScaling(2.0, "fan_in", "truncated_normal", seed)


def he_uniform(seed=None):
    return VarianceScaling(2.0, "fan_in", "uniform", seed)


def lecun_normal(seed=None):
    return VarianceScaling(1.0, "fan_in", "truncated_normal", seed)


def lecun_uniform(seed=None):
    return VarianceScaling(1.0, "fan_in", "uniform", seed)
