"""Keras' spatial reshaping layers in TF1 graph mode: ``ZeroPadding1D``/``2D``/``3D``,
``UpSampling1D``/``2D`` (nearest or bilinear, as ``tf.image.resize`` with half-pixel centres)
and ``Cropping1D``/``2D``."""

from __future__ import annotations

import math

import numpy as np

from engine.framework.constant_op import constant
from engine.keras import backend
from engine.keras.base_layer import InputSpec, Layer
from engine.keras.conv_utils import normalize_data_format, normalize_tuple
from engine.ops import array as array_ops
from engine.ops import array_transform, image_ops, slicing
from engine.tensor_shape import TensorShape

__all__ = [
    "Cropping1D",
    "Cropping2D",
    "UpSampling1D",
    "UpSampling2D",
    "ZeroPadding1D",
    "ZeroPadding2D",
    "ZeroPadding3D",
]


_WORDS = {1: "one", 2: "two", 3: "three"}


def _pairs(value, rank: int, what: str) -> tuple:
    """An int, ``rank`` ints (symmetric) or ``rank`` pairs, as ``rank`` (before, after)
    pairs: Keras' ``padding``/``cropping`` arguments."""
    if isinstance(value, int):
        return ((value, value),) * rank
    if not hasattr(value, "__len__"):
        raise ValueError(
            f"`{what}` should be either an int, a tuple of {rank} ints, or a tuple of {rank} "
            f"tuples of 2 ints. Received: {what}={value}."
        )
    if len(value) != rank:
        raise ValueError(f"`{what}` should have {_WORDS[rank]} elements. Received: {value}.")
    ordinal = ("1st", "2nd", "3rd")
    return tuple(
        normalize_tuple(v, 2, f"{ordinal[i]} entry of {what}", allow_zero=True)
        for i, v in enumerate(value)
    )


def _spatial_axes(data_format: str, rank: int) -> list[int]:
    first = 1 if data_format == "channels_last" else 2
    return list(range(first, first + rank))


def _check_ndim(layer, inputs, ndim: int) -> None:
    rank = inputs.shape.rank
    if rank is not None and rank != ndim:
        raise ValueError(
            f'Input 0 of layer "{layer.name}" is incompatible with the layer: expected '
            f"ndim={ndim}, found ndim={rank}. Full shape received: {inputs.shape}"
        )


class _ZeroPadding(Layer):
    def __init__(self, rank, padding, data_format, **kwargs):
        super().__init__(**kwargs)
        self.rank = rank
        self.padding = _pairs(padding, rank, "padding")
        self.data_format = normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=rank + 2)

    def call(self, inputs):
        _check_ndim(self, inputs, self.rank + 2)
        paddings = [[0, 0]] * (self.rank + 2)
        for axis, pair in zip(_spatial_axes(self.data_format, self.rank), self.padding):
            paddings[axis] = list(pair)
        return array_transform.pad(inputs, paddings)

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        for axis, (a, b) in zip(_spatial_axes(self.data_format, self.rank), self.padding):
            dims[axis] = None if dims[axis] is None else dims[axis] + a + b
        return TensorShape(dims)

    def get_config(self) -> dict:
        return {**super().get_config(), "padding": self.padding, "data_format": self.data_format}


class ZeroPadding1D(_ZeroPadding):
    """Zeros before and after the steps: ``padding`` is an int or ``(before, after)``."""

    def __init__(self, padding=1, **kwargs):
        padding = normalize_tuple(padding, 2, "padding", allow_zero=True)
        super().__init__(1, (padding,), "channels_last", **kwargs)
        self.padding = padding

    def call(self, inputs):
        _check_ndim(self, inputs, 3)
        return array_transform.pad(inputs, [[0, 0], list(self.padding), [0, 0]])

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        if dims[1] is not None:
            dims[1] += sum(self.padding)
        return TensorShape(dims)

    def get_config(self) -> dict:
        config = super().get_config()
        config.pop("data_format")
        return config


class ZeroPadding2D(_ZeroPadding):
    """Zero rows and columns around images: an int, ``(rows, cols)`` or
    ``((top, bottom), (left, right))``."""

    def __init__(self, padding=(1, 1), data_format=None, **kwargs):
        super().__init__(2, padding, data_format, **kwargs)


class ZeroPadding3D(_ZeroPadding):
    """Zeros around volumes: an int, 3 ints or 3 ``(before, after)`` pairs."""

    def __init__(self, padding=(1, 1, 1), data_format=None, **kwargs):
        super().__init__(3, padding, data_format, **kwargs)


def _repeat(x, repeats: int, axis: int):
    """Each slice of ``x`` along ``axis`` repeated ``repeats`` times (Keras'
    ``repeat_elements``), with the static shape kept."""
    static = backend.int_shape(x)
    tiled = array_transform.tile(
        array_ops.expand_dims(x, axis + 1),
        [repeats if i == axis + 1 else 1 for i in range(len(static) + 1)],
    )
    dynamic = array_ops.shape(x)
    dims = [static[i] if static[i] is not None else dynamic[i] for i in range(len(static))]
    dims[axis] = dims[axis] * repeats
    out = array_ops.reshape(tiled, array_transform.stack(dims))
    out.set_shape([d if isinstance(d, int) else None for d in dims])
    return out


def _bilinear_axis(x, factor: int, axis: int, size: int):
    """Bilinear upsampling by ``factor`` along one axis of static ``size``, with half-pixel
    centres (``tf.image.resize``): two gathers and a lerp, so it has a gradient."""
    lower, upper, lerp = [], [], []
    for i in range(size * factor):
        src = (i + 0.5) / factor - 0.5
        floor = math.floor(src)
        lower.append(max(floor, 0))
        upper.append(min(math.ceil(src), size - 1))
        lerp.append(src - floor)
    shape = [1] * len(backend.int_shape(x))
    shape[axis] = size * factor
    weight = constant(np.asarray(lerp, np.float32).reshape(shape), dtype=x.dtype)
    low = slicing.gather(x, lower, axis=axis)
    high = slicing.gather(x, upper, axis=axis)
    return low + (high - low) * weight


class UpSampling1D(Layer):
    """Each step repeated ``size`` times."""

    def __init__(self, size=2, **kwargs):
        super().__init__(**kwargs)
        self.size = int(size)
        self.input_spec = InputSpec(ndim=3)

    def call(self, inputs):
        _check_ndim(self, inputs, 3)
        return _repeat(inputs, self.size, axis=1)

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        return TensorShape([dims[0], None if dims[1] is None else dims[1] * self.size, dims[2]])

    def get_config(self) -> dict:
        return {**super().get_config(), "size": self.size}


class UpSampling2D(Layer):
    """Images enlarged ``size`` times by ``interpolation`` ``'nearest'`` (rows and columns
    repeated) or ``'bilinear'``."""

    def __init__(self, size=(2, 2), data_format=None, interpolation="nearest", **kwargs):
        super().__init__(**kwargs)
        self.data_format = normalize_data_format(data_format)
        self.size = normalize_tuple(size, 2, "size")
        if interpolation not in ("nearest", "bilinear"):
            # TF raises NotImplementedError for unknown names; the engine has only these two.
            raise NotImplementedError(
                f"Value not recognized for `interpolation`: {interpolation}. Supported values "
                "are: nearest, bilinear"
            )
        self.interpolation = interpolation
        self.input_spec = InputSpec(ndim=4)

    def call(self, inputs):
        _check_ndim(self, inputs, 4)
        axes = _spatial_axes(self.data_format, 2)
        static = backend.int_shape(inputs)
        if self.interpolation == "nearest":
            for axis, factor in zip(axes, self.size):
                inputs = _repeat(inputs, factor, axis)
            return inputs
        if all(static[a] is not None for a in axes):
            for axis, factor in zip(axes, self.size):
                inputs = _bilinear_axis(inputs, factor, axis, static[axis])
            return inputs
        return self._resize_bilinear(inputs)

    def _resize_bilinear(self, inputs):
        # Unknown sizes: the ResizeBilinear op (no gradient, as the engine has none for it).
        if self.data_format == "channels_first":
            inputs = array_ops.transpose(inputs, [0, 2, 3, 1])
        size = array_ops.shape(inputs)[1:3] * constant(np.asarray(self.size, np.int32))
        out = image_ops.resize_bilinear(inputs, size, half_pixel_centers=True)
        if self.data_format == "channels_first":
            out = array_ops.transpose(out, [0, 3, 1, 2])
        return out

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        for axis, factor in zip(_spatial_axes(self.data_format, 2), self.size):
            dims[axis] = None if dims[axis] is None else dims[axis] * factor
        return TensorShape(dims)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "size": self.size,
            "data_format": self.data_format,
            "interpolation": self.interpolation,
        }


def _crop(inputs, axes, cropping):
    index = [slice(None)] * inputs.shape.rank
    for axis, (a, b) in zip(axes, cropping):
        index[axis] = slice(a, -b if b else None)
    return inputs[tuple(index)]


class Cropping1D(Layer):
    """Drops ``cropping = (start, end)`` steps from each end."""

    def __init__(self, cropping=(1, 1), **kwargs):
        super().__init__(**kwargs)
        self.cropping = normalize_tuple(cropping, 2, "cropping", allow_zero=True)
        self.input_spec = InputSpec(ndim=3)

    def call(self, inputs):
        _check_ndim(self, inputs, 3)
        steps = backend.int_shape(inputs)[1]
        if steps is not None and sum(self.cropping) >= steps:
            raise ValueError(
                "cropping parameter of Cropping layer must be greater than the input shape. "
                f"Received: inputs.shape={inputs.shape}, and cropping={self.cropping}"
            )
        return _crop(inputs, [1], [self.cropping])

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        length = None if dims[1] is None else dims[1] - sum(self.cropping)
        return TensorShape([dims[0], length, dims[2]])

    def get_config(self) -> dict:
        return {**super().get_config(), "cropping": self.cropping}


class Cropping2D(Layer):
    """Drops rows and columns at the edges: an int, ``(rows, cols)`` or
    ``((top, bottom), (left, right))``."""

    def __init__(self, cropping=((0, 0), (0, 0)), data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = normalize_data_format(data_format)
        self.cropping = _pairs(cropping, 2, "cropping")
        self.input_spec = InputSpec(ndim=4)

    def call(self, inputs):
        _check_ndim(self, inputs, 4)
        axes = _spatial_axes(self.data_format, 2)
        static = backend.int_shape(inputs)
        for axis, pair in zip(axes, self.cropping):
            if static[axis] is not None and sum(pair) >= static[axis]:
                raise ValueError(
                    "Argument `cropping` must be greater than the input shape. Received: "
                    f"inputs.shape={inputs.shape}, and cropping={self.cropping}"
                )
        return _crop(inputs, axes, self.cropping)

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        for axis, pair in zip(_spatial_axes(self.data_format, 2), self.cropping):
            dims[axis] = None if dims[axis] is None else dims[axis] - sum(pair)
        return TensorShape(dims)

    def get_config(self) -> dict:
        return {**super().get_config(), "cropping": self.cropping, "data_format": self.data_format}
