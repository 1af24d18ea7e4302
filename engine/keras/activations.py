"""``tf.keras.activations``: the activation functions layers take by name or as callables."""

from __future__ import annotations

from engine.framework.constant_op import convert_to_tensor
from engine.ops import activations as _act
from engine.ops import clip_ops, nn, nn_impl, reduction
from engine.ops import math as math_ops

__all__ = [
    "deserialize",
    "elu",
    "exponential",
    "gelu",
    "get",
    "hard_sigmoid",
    "linear",
    "relu",
    "selu",
    "serialize",
    "sigmoid",
    "softmax",
    "softplus",
    "softsign",
    "swish",
    "tanh",
]


def linear(x):
    return x


def relu(x, alpha=0.0, max_value=None, threshold=0):
    """max(x, 0), with Keras' ``alpha`` (slope below the threshold), ``max_value`` and
    ``threshold``."""
    x = convert_to_tensor(x)
    if alpha == 0 and threshold == 0:
        y = nn.relu6(x) if max_value == 6 else nn.relu(x)
        if max_value is not None and max_value != 6:
            y = math_ops.minimum(y, max_value)
        return y
    neg = nn.relu(-x + threshold) if threshold != 0 else nn.relu(-x)
    if threshold != 0:
        y = x * math_ops.cast(math_ops.greater(x, threshold), x.dtype)
    else:
        y = nn.relu(x)
    if max_value is not None:
        y = math_ops.minimum(y, max_value)
    return y - alpha * neg if alpha != 0 else y


def softmax(x, axis=-1):
    x = convert_to_tensor(x)
    if x.shape.rank is not None and x.shape.rank < 2:
        raise ValueError(f"Cannot apply softmax to a tensor that is 1D. Received input: {x}")
    if axis == -1 or (x.shape.rank is not None and axis == x.shape.rank - 1):
        return nn.softmax(x)
    e = math_ops.exp(x - reduction.reduce_max(x, axis=axis, keepdims=True))
    return e / reduction.reduce_sum(e, axis=axis, keepdims=True)


def elu(x, alpha=1.0):
    y = nn.elu(x)
    return y if alpha == 1 else math_ops.where(math_ops.greater(x, 0.0), y, alpha * y)


def selu(x):
    return _act.selu(x)


def softplus(x):
    return nn.softplus(x)


def softsign(x):
    return nn_impl.softsign(x)


def swish(x):
    return nn_impl.swish(x)


def gelu(x, approximate=False):
    return _act.gelu(x, approximate=approximate)


def sigmoid(x):
    return math_ops.sigmoid(x)


def tanh(x):
    return math_ops.tanh(x)


def exponential(x):
    return math_ops.exp(x)


def hard_sigmoid(x):
    """Keras' piecewise-linear sigmoid: clip(0.2 x + 0.5, 0, 1)."""
    x = convert_to_tensor(x)
    return clip_ops.clip_by_value(0.2 * x + 0.5, 0.0, 1.0)


_BY_NAME = {
    f.__name__: f
    for f in (
        linear,
        relu,
        softmax,
        elu,
        selu,
        softplus,
        softsign,
        swish,
        gelu,
        sigmoid,
        tanh,
        exponential,
        hard_sigmoid,
    )
}
_BY_NAME["relu6"] = nn.relu6


def get(identifier):
    """The activation named ``identifier`` (None is linear), or the callable itself."""
    if identifier is None:
        return linear
    if isinstance(identifier, str):
        fn = _BY_NAME.get(identifier)
        if fn is None:
            raise ValueError(
                f"Unknown activation function: {identifier!r}; expected one of "
                f"{', '.join(sorted(_BY_NAME))} or a callable"
            )
        return fn
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret activation function identifier: {identifier!r}")


def serialize(activation) -> str:
    name = getattr(activation, "__name__", None)
    if name in _BY_NAME:
        return name
    raise ValueError(f"Cannot serialize the activation {activation!r}: it is not a Keras one")


def deserialize(config):
    name = config.get("class_name", config) if isinstance(config, dict) else config
    return get(name)
