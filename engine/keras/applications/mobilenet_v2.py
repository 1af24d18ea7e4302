"""MobileNetV2 (``tf.keras.applications.mobilenet_v2``): inverted residual blocks (1x1
expansion, 3x3 depthwise, linear 1x1 projection, added to the input where shapes allow),
widths scaled by ``alpha`` and rounded to multiples of 8. Inputs are preprocessed in ``tf``
mode."""

from __future__ import annotations

from engine.keras import backend, layers
from engine.keras.applications import imagenet_utils
from engine.keras.applications.imagenet_utils import decode_predictions

__all__ = ["MobileNetV2", "decode_predictions", "preprocess_input"]

_SIZES = (96, 128, 160, 192, 224)
_ALPHAS = (0.35, 0.5, 0.75, 1.0, 1.3, 1.4)
# (filters, stride, expansion) of blocks 0 to 16
_BLOCKS = (
    (16, 1, 1),
    (24, 2, 6),
    (24, 1, 6),
    (32, 2, 6),
    (32, 1, 6),
    (32, 1, 6),
    (64, 2, 6),
    (64, 1, 6),
    (64, 1, 6),
    (64, 1, 6),
    (96, 1, 6),
    (96, 1, 6),
    (96, 1, 6),
    (160, 2, 6),
    (160, 1, 6),
    (160, 1, 6),
    (320, 1, 6),
)


def _make_divisible(v, divisor: int = 8, min_value=None) -> int:
    min_value = min_value or divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


def _bn(x, name: str):
    axis = 1 if backend.image_data_format() == "channels_first" else -1
    return layers.BatchNormalization(axis=axis, epsilon=1e-3, momentum=0.999, name=name)(x)


def _inverted_res_block(inputs, expansion: int, stride: int, alpha, filters: int, block_id: int):
    axis = 1 if backend.image_data_format() == "channels_first" else -1
    in_channels = backend.int_shape(inputs)[axis]
    pointwise_filters = _make_divisible(int(filters * alpha), 8)
    x = inputs
    prefix = f"block_{block_id}_"
    if block_id:
        x = layers.Conv2D(
            expansion * in_channels, 1, padding="same", use_bias=False, name=prefix + "expand"
        )(x)
        x = layers.ReLU(6.0, name=prefix + "expand_relu")(_bn(x, prefix + "expand_BN"))
    else:
        prefix = "expanded_conv_"
    if stride == 2:
        pad = imagenet_utils.correct_pad(x, 3)
        x = layers.ZeroPadding2D(padding=pad, name=prefix + "pad")(x)
    x = layers.DepthwiseConv2D(
        kernel_size=3,
        strides=stride,
        use_bias=False,
        padding="same" if stride == 1 else "valid",
        name=prefix + "depthwise",
    )(x)
    x = layers.ReLU(6.0, name=prefix + "depthwise_relu")(_bn(x, prefix + "depthwise_BN"))
    x = layers.Conv2D(
        pointwise_filters, 1, padding="same", use_bias=False, name=prefix + "project"
    )(x)
    x = _bn(x, prefix + "project_BN")
    if in_channels == pointwise_filters and stride == 1:
        return layers.Add(name=prefix + "add")([inputs, x])
    return x


def _spatial(shape, batched: bool) -> tuple:
    first = 1 if backend.image_data_format() == "channels_first" else 0
    first += int(batched)
    return shape[first], shape[first + 1]


def _default_size(input_shape, input_tensor) -> int:
    """224, or the input's size when it is square and one Keras has weights for."""
    if input_shape is not None and input_tensor is not None:
        if not backend.is_keras_tensor(input_tensor):
            raise ValueError(
                f"input_tensor is not a Keras tensor; Received `input_tensor={input_tensor}`"
            )
        if _spatial(backend.int_shape(input_tensor), True)[1] != _spatial(input_shape, False)[1]:
            raise ValueError(
                "input_tensor's width must equal input_shape's; Received "
                f"`input_tensor.shape={backend.int_shape(input_tensor)}`, "
                f"`input_shape={input_shape}`"
            )
    if input_shape is not None:
        rows, cols = _spatial(input_shape, False)
    elif input_tensor is not None and backend.is_keras_tensor(input_tensor):
        rows, cols = _spatial(backend.int_shape(input_tensor), True)
    else:
        return 224
    return rows if rows == cols and rows in _SIZES else 224


def MobileNetV2(  # noqa: N802 - Keras' name
    input_shape=None,
    alpha=1.0,
    include_top=True,
    weights="imagenet",
    input_tensor=None,
    pooling=None,
    classes=1000,
    classifier_activation="softmax",
    **kwargs,
):
    """MobileNetV2 of width ``alpha``; imagenet weights exist for alpha 0.35/0.5/0.75/1.0/1.3/
    1.4 at 96/128/160/192/224 pixels."""
    if kwargs:
        raise ValueError(f"Unknown argument(s): {kwargs}")
    imagenet_utils.check_weights(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(
        input_shape,
        _default_size(input_shape, input_tensor),
        32,
        backend.image_data_format(),
        include_top,
        weights,
    )
    rows, cols = _spatial(input_shape, False)
    if weights == "imagenet":
        if alpha not in _ALPHAS:
            raise ValueError(
                "If imagenet weights are being loaded, alpha must be one of `0.35`, `0.50`, "
                f"`0.75`, `1.0`, `1.3` or `1.4` only; Received `alpha={alpha}`"
            )
        rows = rows if rows == cols and rows in _SIZES else 224
    img_input = imagenet_utils.image_input(input_tensor, input_shape)
    x = layers.Conv2D(
        _make_divisible(32 * alpha, 8),
        3,
        strides=(2, 2),
        padding="same",
        use_bias=False,
        name="Conv1",
    )(img_input)
    x = layers.ReLU(6.0, name="Conv1_relu")(_bn(x, "bn_Conv1"))
    for block_id, (filters, stride, expansion) in enumerate(_BLOCKS):
        x = _inverted_res_block(x, expansion, stride, alpha, filters, block_id)
    last_filters = _make_divisible(1280 * alpha, 8) if alpha > 1.0 else 1280
    x = layers.Conv2D(last_filters, kernel_size=1, use_bias=False, name="Conv_1")(x)
    x = layers.ReLU(6.0, name="out_relu")(_bn(x, "Conv_1_bn"))
    x = imagenet_utils.classifier_top(
        x, include_top, classes, classifier_activation, weights, pooling
    )
    notop = "" if include_top else "_no_top"
    file = f"mobilenet_v2_weights_tf_dim_ordering_tf_kernels_{float(alpha)}_{rows}{notop}.h5"
    return imagenet_utils.finish(
        img_input, input_tensor, x, f"mobilenetv2_{alpha:0.2f}_{rows}", weights, file
    )


def preprocess_input(x, data_format=None):
    """``tf`` mode: scaled to [-1, 1]."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")
