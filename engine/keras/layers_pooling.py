"""Keras' pooling layers in TF1 graph mode: ``MaxPooling1D``/``2D``/``3D``,
``AveragePooling1D``/``2D``/``3D``, and the global poolings (``GlobalAveragePooling1D``
averages only the unmasked steps when the input carries a Keras mask)."""

from __future__ import annotations

from engine.keras.base_layer import InputSpec, Layer
from engine.keras.conv_utils import (
    conv_output_length,
    normalize_data_format,
    normalize_padding,
    normalize_tuple,
    tf_data_format,
)
from engine.ops import array as array_ops
from engine.ops import math as math_ops
from engine.ops import nn_conv, nn_conv3d, reduction
from engine.tensor_shape import TensorShape

__all__ = [
    "AveragePooling1D",
    "AveragePooling2D",
    "AveragePooling3D",
    "AvgPool1D",
    "AvgPool2D",
    "AvgPool3D",
    "GlobalAveragePooling1D",
    "GlobalAveragePooling2D",
    "GlobalAveragePooling3D",
    "GlobalAvgPool1D",
    "GlobalAvgPool2D",
    "GlobalAvgPool3D",
    "GlobalMaxPool1D",
    "GlobalMaxPool2D",
    "GlobalMaxPool3D",
    "GlobalMaxPooling1D",
    "GlobalMaxPooling2D",
    "GlobalMaxPooling3D",
    "MaxPool1D",
    "MaxPool2D",
    "MaxPool3D",
    "MaxPooling1D",
    "MaxPooling2D",
    "MaxPooling3D",
]


class Pooling(Layer):
    """Max or average pooling over ``rank`` spatial axes."""

    def __init__(self, rank, kind, pool_size, strides, padding, data_format, **kwargs):
        super().__init__(**kwargs)
        if strides is None:
            strides = pool_size
        self.rank = rank
        self.kind = kind
        self.pool_size = normalize_tuple(pool_size, rank, "pool_size")
        self.strides = normalize_tuple(strides, rank, "strides")
        self.padding = normalize_padding(padding)
        if self.padding not in ("valid", "same"):
            raise ValueError(
                f'The `padding` argument must be one of "valid", "same". Received: {padding}'
            )
        self.data_format = normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=rank + 2)

    def _check_rank(self, inputs) -> None:
        rank = inputs.shape.rank
        if rank is not None and rank != self.rank + 2:
            raise ValueError(
                f'Input 0 of layer "{self.name}" is incompatible with the layer: expected '
                f"ndim={self.rank + 2}, found ndim={rank}. Full shape received: {inputs.shape}"
            )

    def call(self, inputs):
        self._check_rank(inputs)
        last = self.data_format == "channels_last"
        pool_size, strides = list(self.pool_size), list(self.strides)
        if self.rank == 1:
            # As Keras: a 2-D pooling over (steps, 1).
            pad_axis = 2 if last else 3
            inputs = array_ops.expand_dims(inputs, pad_axis)
            pool_size, strides = [*pool_size, 1], [*strides, 1]
        fmt = tf_data_format(self.data_format, max(self.rank, 2) + 2)
        ksize = [1, *pool_size, 1] if last else [1, 1, *pool_size]
        step = [1, *strides, 1] if last else [1, 1, *strides]
        if self.rank == 3:
            pool = nn_conv3d.max_pool3d if self.kind == "max" else nn_conv3d.avg_pool3d
        else:
            pool = nn_conv.max_pool if self.kind == "max" else nn_conv.avg_pool
        outputs = pool(inputs, ksize, step, self.padding.upper(), data_format=fmt)
        if self.rank == 1:
            outputs = array_ops.squeeze(outputs, [pad_axis])
        return outputs

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        last = self.data_format == "channels_last"
        spatial = dims[1:-1] if last else dims[2:]
        out = [
            conv_output_length(d, p, self.padding, s)
            for d, p, s in zip(spatial, self.pool_size, self.strides)
        ]
        return TensorShape([dims[0], *out, dims[-1]] if last else [dims[0], dims[1], *out])

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "pool_size": self.pool_size,
            "padding": self.padding,
            "strides": self.strides,
            "data_format": self.data_format,
        }


def _pooling_class(name: str, rank: int, kind: str, default_size, doc: str):
    channels_last_default = "channels_last" if rank == 1 else None

    def __init__(  # noqa: N807 - a method made for each class
        self,
        pool_size=default_size,
        strides=None,
        padding="valid",
        data_format=channels_last_default,
        **kwargs,
    ):
        Pooling.__init__(self, rank, kind, pool_size, strides, padding, data_format, **kwargs)

    return type(name, (Pooling,), {"__init__": __init__, "__doc__": doc, "__module__": __name__})


MaxPooling1D = _pooling_class("MaxPooling1D", 1, "max", 2, "Max pooling over steps.")
MaxPooling2D = _pooling_class("MaxPooling2D", 2, "max", (2, 2), "Max pooling over images.")
MaxPooling3D = _pooling_class("MaxPooling3D", 3, "max", (2, 2, 2), "Max pooling over volumes.")
AveragePooling1D = _pooling_class("AveragePooling1D", 1, "avg", 2, "Average pooling over steps.")
AveragePooling2D = _pooling_class(
    "AveragePooling2D", 2, "avg", (2, 2), "Average pooling over images (SAME windows average "
    "only the input positions they cover)."
)  # fmt: skip
AveragePooling3D = _pooling_class(
    "AveragePooling3D", 3, "avg", (2, 2, 2), "Average pooling over volumes."
)


class GlobalPooling(Layer):
    """The max or mean over every spatial axis (``keepdims`` keeps them with size 1)."""

    def __init__(self, rank, kind, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        self.rank = rank
        self.kind = kind
        self.data_format = normalize_data_format(data_format)
        self.keepdims = bool(keepdims)
        self.input_spec = InputSpec(ndim=rank + 2)

    def _axes(self) -> list[int]:
        first = 1 if self.data_format == "channels_last" else 2
        return list(range(first, first + self.rank))

    def call(self, inputs):
        rank = inputs.shape.rank
        if rank is not None and rank != self.rank + 2:
            raise ValueError(
                f'Input 0 of layer "{self.name}" is incompatible with the layer: expected '
                f"ndim={self.rank + 2}, found ndim={rank}. Full shape received: {inputs.shape}"
            )
        reduce = reduction.reduce_max if self.kind == "max" else reduction.reduce_mean
        return reduce(inputs, axis=self._axes(), keepdims=self.keepdims)

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        axes = self._axes()
        if self.keepdims:
            return TensorShape([1 if i in axes else d for i, d in enumerate(dims)])
        return TensorShape([d for i, d in enumerate(dims) if i not in axes])

    def get_config(self) -> dict:
        return {**super().get_config(), "data_format": self.data_format, "keepdims": self.keepdims}


class GlobalAveragePooling1D(GlobalPooling):
    """The mean over steps; with a Keras mask, the mean over the unmasked steps only."""

    def __init__(self, data_format="channels_last", **kwargs):
        super().__init__(1, "avg", data_format=data_format, **kwargs)
        self.supports_masking = True

    def call(self, inputs, mask=None):
        if mask is None:
            return super().call(inputs)
        steps_axis = 1 if self.data_format == "channels_last" else 2
        mask = math_ops.cast(mask, inputs.dtype)
        mask = array_ops.expand_dims(mask, 2 if self.data_format == "channels_last" else 1)
        total = reduction.reduce_sum(inputs * mask, axis=steps_axis, keepdims=self.keepdims)
        return total / reduction.reduce_sum(mask, axis=steps_axis, keepdims=self.keepdims)

    def compute_mask(self, inputs, mask=None):  # noqa: ARG002 - Keras' signature
        return None


def _global_class(name: str, rank: int, kind: str, doc: str):
    default_format = "channels_last" if rank == 1 else None

    def __init__(self, data_format=default_format, **kwargs):  # noqa: N807
        GlobalPooling.__init__(self, rank, kind, data_format=data_format, **kwargs)

    return type(
        name, (GlobalPooling,), {"__init__": __init__, "__doc__": doc, "__module__": __name__}
    )


GlobalMaxPooling1D = _global_class("GlobalMaxPooling1D", 1, "max", "The max over steps.")
GlobalMaxPooling2D = _global_class("GlobalMaxPooling2D", 2, "max", "The max over rows and columns.")
GlobalMaxPooling3D = _global_class(
    "GlobalMaxPooling3D", 3, "max", "The max over the 3 spatial axes."
)
GlobalAveragePooling2D = _global_class(
    "GlobalAveragePooling2D", 2, "avg", "The mean over rows and columns."
)
GlobalAveragePooling3D = _global_class(
    "GlobalAveragePooling3D", 3, "avg", "The mean over the 3 spatial axes."
)

MaxPool1D, MaxPool2D, MaxPool3D = MaxPooling1D, MaxPooling2D, MaxPooling3D
AvgPool1D, AvgPool2D, AvgPool3D = AveragePooling1D, AveragePooling2D, AveragePooling3D
GlobalMaxPool1D, GlobalMaxPool2D, GlobalMaxPool3D = (
    GlobalMaxPooling1D,
    GlobalMaxPooling2D,
    GlobalMaxPooling3D,
)
GlobalAvgPool1D, GlobalAvgPool2D, GlobalAvgPool3D = (
    GlobalAveragePooling1D,
    GlobalAveragePooling2D,
    GlobalAveragePooling3D,
)
