"""TF1's ``tf.layers`` classes (``Dense``, ``Conv2D``, ``MaxPooling2D``, ...): objects that
hold a layer's configuration, create its variables on the first call and share them on every
later call. Each call runs the matching functional layer.

>>> layer = Dense(10, activation=nn.relu)
>>> a, b = layer(x1), layer(x2)      # one dense/kernel, one dense/bias
>>> layer.kernel.name                # 'dense/kernel:0'
"""

from __future__ import annotations

import re

from engine import conv3d_layers, conv_layers, core_layers
from engine.framework.graph import GraphKeys, get_collection, get_default_graph
from engine.variable_scope import _unique_scope_name, get_variable_scope

__all__ = [
    "Layer",
    "Dense",
    "Conv1D",
    "Conv2D",
    "Conv2DTranspose",
    "SeparableConv2D",
    "Conv3D",
    "Conv3DTranspose",
    "MaxPooling1D",
    "MaxPooling2D",
    "AveragePooling1D",
    "AveragePooling2D",
    "MaxPooling3D",
    "AveragePooling3D",
    "Flatten",
    "Dropout",
    "BatchNormalization",
]


def _snake(name: str) -> str:
    s = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return (
        re.sub(r"([a-z])([A-Z])", r"\1_\2", s)
        .lower()
        .replace("2_d", "2d")
        .replace("1_d", "1d")
        .replace("3_d", "3d")
    )


class Layer:
    """The shared behaviour: a scope chosen on the first call, reused afterwards."""

    _fn = None  # the functional layer
    _has_variables = True

    def __init__(self, *args, name=None, trainable=True, **kwargs):
        self._args = args
        self._kwargs = kwargs
        self._requested_name = name
        self.trainable = trainable
        self._scope_name = None
        self._graph = None
        self.built = False

    @property
    def name(self) -> str:
        return self._scope_name.rsplit("/", 1)[-1] if self._scope_name else self._default_name()

    def _default_name(self) -> str:
        return self._requested_name or _snake(type(self).__name__)

    def _call_kwargs(self) -> dict:
        kw = dict(self._kwargs)
        if self._has_variables:
            kw["trainable"] = self.trainable
        return kw

    def __call__(self, inputs, *args, **kwargs):
        fn = type(self)._fn
        kw = {**self._call_kwargs(), **kwargs}
        if not self.built:
            if self._requested_name is None:
                self._requested_name = _unique_scope_name(self._default_name())
            out = fn(inputs, *self._args, *args, name=self._requested_name, **kw)
            current = get_variable_scope().name
            self._scope_name = (
                f"{current}/{self._requested_name}" if current else self._requested_name
            )
            self._graph = get_default_graph()
            self.built = True
            return out
        if self._has_variables:
            kw["reuse"] = True
        return fn(inputs, *self._args, *args, name=self._requested_name, **kw)

    apply = __call__

    def _collection(self, key):
        if not self.built:
            return []
        prefix = self._scope_name + "/"
        with self._graph.as_default():
            return [v for v in get_collection(key) if v.op.name.startswith(prefix)]

    @property
    def variables(self) -> list:
        return self._collection(GraphKeys.GLOBAL_VARIABLES)

    weights = variables

    @property
    def trainable_variables(self) -> list:
        return self._collection(GraphKeys.TRAINABLE_VARIABLES)

    trainable_weights = trainable_variables

    @property
    def non_trainable_variables(self) -> list:
        trainable = {id(v) for v in self.trainable_variables}
        return [v for v in self.variables if id(v) not in trainable]

    non_trainable_weights = non_trainable_variables

    @property
    def updates(self) -> list:
        if not self.built:
            return []
        with self._graph.as_default():
            return [
                u
                for u in get_collection(GraphKeys.UPDATE_OPS)
                if u.op.name.startswith(self._scope_name + "/")
                or u.op.name.startswith(self._scope_name + "_")
            ]

    def _variable(self, short: str):
        for v in self.variables:
            if v.op.name == f"{self._scope_name}/{short}":
                return v
        return None

    def __getattr__(self, attr):
        # kernel, bias, gamma, beta, moving_mean, ...: the variables, once built.
        if attr.startswith("_"):
            raise AttributeError(attr)
        if attr in (
            "kernel",
            "bias",
            "gamma",
            "beta",
            "moving_mean",
            "moving_variance",
            "depthwise_kernel",
            "pointwise_kernel",
        ):
            return self._variable(attr)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{attr}'")


class Dense(Layer):
    _fn = staticmethod(core_layers.dense)


class Conv1D(Layer):
    _fn = staticmethod(conv_layers.conv1d)


class Conv2D(Layer):
    _fn = staticmethod(conv_layers.conv2d)


class Conv2DTranspose(Layer):
    _fn = staticmethod(conv_layers.conv2d_transpose)


class SeparableConv2D(Layer):
    _fn = staticmethod(conv_layers.separable_conv2d)


class Conv3D(Layer):
    _fn = staticmethod(conv3d_layers.conv3d)


class Conv3DTranspose(Layer):
    _fn = staticmethod(conv3d_layers.conv3d_transpose)


class _NoVariables(Layer):
    _has_variables = False

    def __init__(self, *args, name=None, **kwargs):
        kwargs.pop("trainable", None)
        super().__init__(*args, name=name, **kwargs)

    def __call__(self, inputs, *args, **kwargs):
        # Stateless: every call is a fresh scope, as TF1 names them.
        fn = type(self)._fn
        return fn(inputs, *self._args, *args, name=self._requested_name, **self._kwargs, **kwargs)


class MaxPooling1D(_NoVariables):
    _fn = staticmethod(conv_layers.max_pooling1d)


class MaxPooling2D(_NoVariables):
    _fn = staticmethod(conv_layers.max_pooling2d)


class AveragePooling1D(_NoVariables):
    _fn = staticmethod(conv_layers.average_pooling1d)


class AveragePooling2D(_NoVariables):
    _fn = staticmethod(conv_layers.average_pooling2d)


class MaxPooling3D(_NoVariables):
    _fn = staticmethod(conv3d_layers.max_pooling3d)


class AveragePooling3D(_NoVariables):
    _fn = staticmethod(conv3d_layers.average_pooling3d)


class Flatten(_NoVariables):
    _fn = staticmethod(core_layers.flatten)


class Dropout(_NoVariables):
    _fn = staticmethod(core_layers.dropout)


class BatchNormalization(Layer):
    _fn = staticmethod(conv_layers.batch_normalization)
