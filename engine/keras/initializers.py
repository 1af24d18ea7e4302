"""``tf.keras.initializers`` as TF1's Keras has them: TF1's initializer classes, with Keras'
defaults (random normal and uniform within 0.05) and Keras' string names."""

from __future__ import annotations

from engine import init_ops
from engine.init_ops import (
    Constant,
    GlorotNormal,
    GlorotUniform,
    Initializer,
    Ones,
    VarianceScaling,
    Zeros,
    he_normal,
    he_uniform,
    lecun_normal,
    lecun_uniform,
)
from engine.init_ops_more import Identity, Orthogonal

__all__ = [
    "Constant",
    "GlorotNormal",
    "GlorotUniform",
    "Identity",
    "Initializer",
    "Ones",
    "Orthogonal",
    "RandomNormal",
    "RandomUniform",
    "TruncatedNormal",
    "VarianceScaling",
    "Zeros",
    "get",
    "glorot_normal",
    "glorot_uniform",
    "he_normal",
    "he_uniform",
    "lecun_normal",
    "lecun_uniform",
]


class RandomNormal(init_ops.RandomNormal):
    def __init__(self, mean=0.0, stddev=0.05, seed=None, dtype="float32"):
        super().__init__(mean=mean, stddev=stddev, seed=seed, dtype=dtype)


class RandomUniform(init_ops.RandomUniform):
    def __init__(self, minval=-0.05, maxval=0.05, seed=None, dtype="float32"):
        super().__init__(minval=minval, maxval=maxval, seed=seed, dtype=dtype)


class TruncatedNormal(init_ops.TruncatedNormal):
    def __init__(self, mean=0.0, stddev=0.05, seed=None, dtype="float32"):
        super().__init__(mean=mean, stddev=stddev, seed=seed, dtype=dtype)


glorot_uniform = GlorotUniform
glorot_normal = GlorotNormal

_BY_NAME = {
    "zeros": Zeros,
    "zero": Zeros,
    "ones": Ones,
    "one": Ones,
    "constant": Constant,
    "random_normal": RandomNormal,
    "normal": RandomNormal,
    "random_uniform": RandomUniform,
    "uniform": RandomUniform,
    "truncated_normal": TruncatedNormal,
    "glorot_uniform": GlorotUniform,
    "glorot_normal": GlorotNormal,
    "he_normal": he_normal,
    "he_uniform": he_uniform,
    "lecun_normal": lecun_normal,
    "lecun_uniform": lecun_uniform,
    "orthogonal": Orthogonal,
    "identity": Identity,
    "variance_scaling": VarianceScaling,
}
for _cls in (
    Zeros,
    Ones,
    Constant,
    RandomNormal,
    RandomUniform,
    TruncatedNormal,
    GlorotUniform,
    GlorotNormal,
    Orthogonal,
    Identity,
    VarianceScaling,
):
    _BY_NAME[_cls.__name__] = _cls


def get(identifier):
    """The initializer ``identifier`` names (``'glorot_uniform'``, ``{'class_name': ...,
    'config': ...}``), or the initializer itself."""
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        cls = _BY_NAME.get(identifier.get("class_name"))
        if cls is None:
            raise ValueError(f"Unknown initializer: {identifier.get('class_name')!r}")
        return cls(**identifier.get("config", {}))
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier)
        if cls is None:
            raise ValueError(
                f"Unknown initializer: {identifier!r}; expected one of "
                f"{', '.join(sorted(k for k in _BY_NAME if k.islower()))} or a callable"
            )
        return cls()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret initializer identifier: {identifier!r}")
