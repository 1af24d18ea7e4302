"""Argument checks and shape arithmetic the Keras convolution, pooling and padding layers
share (Keras' ``conv_utils``): tuples of ints, padding and data-format names, output
lengths of convolutions and their transposes."""

from __future__ import annotations

import numbers

from engine.keras import activations, backend

__all__ = [
    "activation_config",
    "conv_output_length",
    "deconv_output_length",
    "normalize_data_format",
    "normalize_padding",
    "normalize_tuple",
    "tf_data_format",
]


def normalize_tuple(value, n: int, name: str, allow_zero: bool = False) -> tuple[int, ...]:
    """``value`` (an int or ``n`` ints) as a tuple of ``n`` ints, each > 0 (>= 0 with
    ``allow_zero``)."""
    error_msg = f"The `{name}` argument must be a tuple of {n} integers. Received: {value}"
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value_tuple = (int(value),) * n
    else:
        try:
            value_tuple = tuple(value)
        except TypeError:
            raise ValueError(error_msg) from None
        if len(value_tuple) != n:
            raise ValueError(error_msg)
        for single in value_tuple:
            if isinstance(single, bool) or not isinstance(single, numbers.Integral):
                raise ValueError(f"{error_msg}including element {single} of type {type(single)}")
        value_tuple = tuple(int(v) for v in value_tuple)
    bad = {v for v in value_tuple if (v < 0 if allow_zero else v <= 0)}
    if bad:
        req = ">= 0" if allow_zero else "> 0"
        raise ValueError(
            f"{error_msg} including {bad} that does not satisfy the requirement `{req}`."
        )
    return value_tuple


def normalize_padding(value) -> str:
    if isinstance(value, (list, tuple)):
        return value
    padding = str(value).lower()
    if padding not in ("valid", "same", "causal"):
        raise ValueError(
            'The `padding` argument must be a list/tuple or one of "valid", "same" '
            f'(or "causal", only for `Conv1D). Received: {value}'
        )
    return padding


def normalize_data_format(value) -> str:
    if value is None:
        value = backend.image_data_format()
    data_format = str(value).lower()
    if data_format not in ("channels_first", "channels_last"):
        raise ValueError(
            'The `data_format` argument must be one of "channels_first", "channels_last". '
            f"Received: {value}"
        )
    return data_format


def tf_data_format(data_format: str, ndim: int) -> str:
    """``channels_last`` with 4 dims -> ``NHWC``; ``channels_first`` with 3 -> ``NCW``."""
    spatial = {3: "W", 4: "HW", 5: "DHW"}[ndim]
    return f"N{spatial}C" if data_format == "channels_last" else f"NC{spatial}"


def conv_output_length(input_length, filter_size, padding, stride, dilation=1):
    """The length a convolution (or pooling) window sweep leaves along one axis."""
    if input_length is None:
        return None
    dilated = filter_size + (filter_size - 1) * (dilation - 1)
    if padding in ("same", "causal"):
        length = input_length
    elif padding == "valid":
        length = input_length - dilated + 1
    else:  # full
        length = input_length + dilated - 1
    return (length + stride - 1) // stride


def deconv_output_length(
    input_length, filter_size, padding, output_padding=None, stride=0, dilation=1
):
    """The length a transposed convolution produces along one axis (ints or tensors)."""
    if input_length is None:
        return None
    filter_size = filter_size + (filter_size - 1) * (dilation - 1)
    if output_padding is None:
        if padding == "valid":
            return input_length * stride + max(filter_size - stride, 0)
        if padding == "full":
            return input_length * stride - (stride + filter_size - 2)
        return input_length * stride
    pad = {"same": filter_size // 2, "valid": 0, "full": filter_size - 1}[padding]
    return (input_length - 1) * stride + filter_size - 2 * pad + output_padding


def activation_config(activation):
    """An activation as ``get_config`` lists it: Keras' name, or the callable itself."""
    try:
        return activations.serialize(activation)
    except ValueError:
        return activation
