"""``tf.distributions`` (TF 1.x): ``Normal``, ``Bernoulli``, ``Categorical``, ``Uniform`` and
``kl_divergence`` between two of a kind, built from graph ops, so log-probabilities,
entropies and reparameterized samples are differentiable, as VAE and policy-gradient TF1
programs use them. Formulas follow TF 1.15's ``tf.distributions`` (checked against TF 2.21's
``tf.compat.v1.distributions``)."""

from __future__ import annotations

import math

from engine import dtypes
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.ops import array as array_ops
from engine.ops import array_transform, nn, random, random_more, reduction
from engine.ops import math as math_ops
from engine.ops.activations import erf
from engine.ops.math_impl import log_sigmoid
from engine.tensor_shape import TensorShape

__all__ = [
    "Distribution",
    "Normal",
    "Bernoulli",
    "Categorical",
    "Uniform",
    "kl_divergence",
    "FULLY_REPARAMETERIZED",
    "NOT_REPARAMETERIZED",
]


class ReparameterizationType:
    def __init__(self, rep_type: str):
        self._rep_type = rep_type

    def __repr__(self) -> str:
        return f"<Reparameterization Type: {self._rep_type}>"


FULLY_REPARAMETERIZED = ReparameterizationType("FULLY_REPARAMETERIZED")
NOT_REPARAMETERIZED = ReparameterizationType("NOT_REPARAMETERIZED")


def _sample_shape(sample_shape) -> Tensor:
    """``sample_shape`` as a 1-D int32 tensor."""
    s = convert_to_tensor(sample_shape, dtype=dtypes.int32, name="sample_shape")
    return array_ops.reshape(s, [-1])


class Distribution:
    """What the distributions share: names, parameters, shapes and the method scopes."""

    reparameterization_type = NOT_REPARAMETERIZED

    def __init__(self, parameters: dict, name: str, validate_args=False, allow_nan_stats=True):
        self._parameters = dict(parameters)
        self._name = name
        self.validate_args = validate_args
        self.allow_nan_stats = allow_nan_stats

    @property
    def name(self) -> str:
        return self._name

    @property
    def parameters(self) -> dict:
        return dict(self._parameters)

    @property
    def dtype(self):
        return self._dtype

    def batch_shape_tensor(self) -> Tensor:
        return array_ops.shape(self._batch_like())

    @property
    def batch_shape(self) -> TensorShape:
        return self._batch_like().shape

    @property
    def event_shape(self) -> TensorShape:
        return TensorShape([])

    def prob(self, value, name="prob") -> Tensor:
        with name_scope(self._name + "/" + name):
            return math_ops.exp(self.log_prob(value))

    def stddev(self, name="stddev") -> Tensor:
        with name_scope(self._name + "/" + name):
            return math_ops.sqrt(self.variance())

    def sample(self, sample_shape=(), seed=None, name="sample") -> Tensor:
        with name_scope(self._name + "/" + name):
            sample = _sample_shape(sample_shape)
            batch = self.batch_shape_tensor()
            return self._sample(sample, array_transform.concat([sample, batch], 0), seed)


class Normal(Distribution):
    """N(loc, scale**2); reparameterized samples ``loc + scale * eps``."""

    reparameterization_type = FULLY_REPARAMETERIZED

    def __init__(self, loc, scale, validate_args=False, allow_nan_stats=True, name="Normal"):
        with name_scope(name, values=[loc, scale]) as scope:
            self.loc = convert_to_tensor(loc, name="loc")
            self.scale = convert_to_tensor(scale, name="scale", dtype=self.loc.dtype)
        self._dtype = self.loc.dtype.base_dtype
        super().__init__({"loc": loc, "scale": scale}, scope.rstrip("/"), validate_args,
                         allow_nan_stats)  # fmt: skip

    def _batch_like(self):
        return self.loc + self.scale

    def log_prob(self, value, name="log_prob") -> Tensor:
        with name_scope(self._name + "/" + name):
            z = (convert_to_tensor(value, dtype=self._dtype) - self.loc) / self.scale
            log_norm = 0.5 * math.log(2.0 * math.pi) + math_ops.log(self.scale)
            return -0.5 * math_ops.square(z) - log_norm

    def cdf(self, value, name="cdf") -> Tensor:
        with name_scope(self._name + "/" + name):
            z = (convert_to_tensor(value, dtype=self._dtype) - self.loc) / self.scale
            return 0.5 * (1.0 + erf(z * (1.0 / math.sqrt(2.0))))

    def mean(self, name="mean") -> Tensor:
        with name_scope(self._name + "/" + name):
            return self.loc * array_ops.ones_like(self.scale)

    def mode(self, name="mode") -> Tensor:
        return self.mean(name)

    def variance(self, name="variance") -> Tensor:
        with name_scope(self._name + "/" + name):
            return math_ops.square(self.scale) * array_ops.ones_like(self.loc)

    def entropy(self, name="entropy") -> Tensor:
        with name_scope(self._name + "/" + name):
            scale = self.scale * array_ops.ones_like(self.loc)
            return 0.5 * math.log(2.0 * math.pi * math.e) + math_ops.log(scale)

    def _sample(self, _sample, shape, seed):
        eps = random.random_normal(shape, dtype=self._dtype, seed=seed)
        return eps * self.scale + self.loc


class Bernoulli(Distribution):
    """Bernoulli(probs = sigmoid(logits)); integer samples (``dtype``, int32 by default)."""

    def __init__(self, logits=None, probs=None, dtype=dtypes.int32, validate_args=False,
                 allow_nan_stats=True, name="Bernoulli"):  # fmt: skip
        if (logits is None) == (probs is None):
            raise ValueError("Must pass probs or logits, but not both.")
        with name_scope(name, values=[logits, probs]) as scope:
            if logits is not None:
                self.logits = convert_to_tensor(logits, name="logits")
                self.probs = math_ops.sigmoid(self.logits)
            else:
                self.probs = convert_to_tensor(probs, name="probs")
                self.logits = math_ops.log(self.probs) - math_ops.log1p(-self.probs)
        self._dtype = dtypes.as_dtype(dtype)
        super().__init__({"logits": logits, "probs": probs}, scope.rstrip("/"), validate_args,
                         allow_nan_stats)  # fmt: skip

    def _batch_like(self):
        return self.logits

    def log_prob(self, value, name="log_prob") -> Tensor:
        with name_scope(self._name + "/" + name):
            x = math_ops.cast(convert_to_tensor(value), self.logits.dtype.base_dtype)
            return -nn.softplus(-self.logits) * x - nn.softplus(self.logits) * (1.0 - x)

    def mean(self, name="mean") -> Tensor:
        with name_scope(self._name + "/" + name):
            return array_ops.identity(self.probs)

    def mode(self, name="mode") -> Tensor:
        with name_scope(self._name + "/" + name):
            return math_ops.cast(math_ops.greater(self.probs, 0.5), self._dtype)

    def variance(self, name="variance") -> Tensor:
        with name_scope(self._name + "/" + name):
            return self.probs * (1.0 - self.probs)

    def entropy(self, name="entropy") -> Tensor:
        with name_scope(self._name + "/" + name):
            return -self.probs * log_sigmoid(self.logits) - (1.0 - self.probs) * log_sigmoid(
                -self.logits
            )

    def _sample(self, _sample, shape, seed):
        u = random.random_uniform(shape, dtype=self.probs.dtype.base_dtype, seed=seed)
        return math_ops.cast(math_ops.less(u, self.probs), self._dtype)


class Categorical(Distribution):
    """Categorical over the last axis of ``logits`` (or ``probs``); int32 samples."""

    def __init__(self, logits=None, probs=None, dtype=dtypes.int32, validate_args=False,
                 allow_nan_stats=True, name="Categorical"):  # fmt: skip
        if (logits is None) == (probs is None):
            raise ValueError("Must pass probs or logits, but not both.")
        with name_scope(name, values=[logits, probs]) as scope:
            if logits is not None:
                self.logits = convert_to_tensor(logits, name="logits")
                self.probs = nn.softmax(self.logits)
            else:
                self.probs = convert_to_tensor(probs, name="probs")
                self.logits = math_ops.log(self.probs)
        self._dtype = dtypes.as_dtype(dtype)
        super().__init__({"logits": logits, "probs": probs}, scope.rstrip("/"), validate_args,
                         allow_nan_stats)  # fmt: skip

    def _batch_like(self):
        return self.logits[..., 0]

    @property
    def event_size(self) -> Tensor:
        return array_ops.shape(self.logits)[-1]

    def log_prob(self, value, name="log_prob") -> Tensor:
        with name_scope(self._name + "/" + name):
            k = math_ops.cast(convert_to_tensor(value), dtypes.int32)
            log_p = nn.log_softmax(self.logits)
            onehot = array_ops.one_hot(k, array_ops.shape(self.logits)[-1], dtype=log_p.dtype)
            return reduction.reduce_sum(onehot * log_p, axis=-1)

    def mode(self, name="mode") -> Tensor:
        with name_scope(self._name + "/" + name):
            return math_ops.cast(reduction.argmax(self.logits, axis=-1), self._dtype)

    def entropy(self, name="entropy") -> Tensor:
        with name_scope(self._name + "/" + name):
            log_p = nn.log_softmax(self.logits)
            return -reduction.reduce_sum(math_ops.exp(log_p) * log_p, axis=-1)

    def _sample(self, sample, shape, seed):
        flat = array_ops.reshape(self.logits, [-1, array_ops.shape(self.logits)[-1]])
        n = reduction.reduce_prod(sample)
        draws = random_more.multinomial(flat, n, seed=seed, output_dtype=self._dtype)  # [b, n]
        return array_ops.reshape(array_ops.transpose(draws), shape)


class Uniform(Distribution):
    """Uniform on ``[low, high)``; reparameterized samples."""

    reparameterization_type = FULLY_REPARAMETERIZED

    def __init__(self, low=0.0, high=1.0, validate_args=False, allow_nan_stats=True,
                 name="Uniform"):  # fmt: skip
        with name_scope(name, values=[low, high]) as scope:
            self.low = convert_to_tensor(low, name="low")
            self.high = convert_to_tensor(high, name="high", dtype=self.low.dtype)
        self._dtype = self.low.dtype.base_dtype
        super().__init__({"low": low, "high": high}, scope.rstrip("/"), validate_args,
                         allow_nan_stats)  # fmt: skip

    def _batch_like(self):
        return self.low + self.high

    def range(self, name="range") -> Tensor:
        with name_scope(self._name + "/" + name):
            return self.high - self.low

    def log_prob(self, value, name="log_prob") -> Tensor:
        with name_scope(self._name + "/" + name):
            return math_ops.log(self.prob(value))

    def prob(self, value, name="prob") -> Tensor:
        with name_scope(self._name + "/" + name):
            x = convert_to_tensor(value, dtype=self._dtype)
            inside = math_ops.logical_and(
                math_ops.greater_equal(x, self.low), math_ops.less(x, self.high)
            )
            density = 1.0 / (self.high - self.low) * array_ops.ones_like(x)
            return math_ops.where(inside, density, array_ops.zeros_like(density))

    def mean(self, name="mean") -> Tensor:
        with name_scope(self._name + "/" + name):
            return (self.low + self.high) / 2.0

    def variance(self, name="variance") -> Tensor:
        with name_scope(self._name + "/" + name):
            return math_ops.square(self.high - self.low) / 12.0

    def entropy(self, name="entropy") -> Tensor:
        with name_scope(self._name + "/" + name):
            return math_ops.log(self.high - self.low)

    def _sample(self, _sample, shape, seed):
        u = random.random_uniform(shape, dtype=self._dtype, seed=seed)
        return self.low + self.range() * u


def _kl_normal(a: Normal, b: Normal):
    ratio = math_ops.square(a.scale / b.scale)
    diff = math_ops.square((a.loc - b.loc) / b.scale)
    return 0.5 * diff + 0.5 * (ratio - 1.0 - math_ops.log(ratio))


def _kl_bernoulli(a: Bernoulli, b: Bernoulli):
    # p_a log(p_a / p_b) + (1 - p_a) log((1 - p_a) / (1 - p_b)), with log p = -softplus(-l)
    ones = nn.softplus(-b.logits) - nn.softplus(-a.logits)
    zeros = nn.softplus(b.logits) - nn.softplus(a.logits)
    return math_ops.sigmoid(a.logits) * ones + math_ops.sigmoid(-a.logits) * zeros


def _kl_categorical(a: Categorical, b: Categorical):
    log_a, log_b = nn.log_softmax(a.logits), nn.log_softmax(b.logits)
    return reduction.reduce_sum(math_ops.exp(log_a) * (log_a - log_b), axis=-1)


_KL = {Normal: _kl_normal, Bernoulli: _kl_bernoulli, Categorical: _kl_categorical}


def kl_divergence(distribution_a, distribution_b, allow_nan_stats=True, name=None) -> Tensor:
    """KL(a || b) for two distributions of one kind (Normal, Bernoulli, Categorical).
    ``allow_nan_stats`` is accepted for TF's signature: these KLs have no undefined case."""
    del allow_nan_stats
    kind = type(distribution_a)
    if kind is not type(distribution_b) or kind not in _KL:
        raise NotImplementedError(
            f"No KL(distribution_a || distribution_b) registered for distribution_a type "
            f"{kind.__name__} and distribution_b type {type(distribution_b).__name__}"
        )
    with name_scope(name, "KullbackLeibler"):
        return _KL[kind](distribution_a, distribution_b)
