"""MobileNet v1 (``tf.keras.applications.mobilenet``): a 3x3 convolution, then 13 depthwise
separable blocks (depthwise 3x3 + pointwise 1x1, each with BatchNormalization and ReLU6),
widths scaled by ``alpha``. Inputs are preprocessed in ``tf`` mode."""

from __future__ import annotations

from engine.keras import backend, layers
from engine.keras.applications import imagenet_utils
from engine.keras.applications.imagenet_utils import decode_predictions

__all__ = ["MobileNet", "decode_predictions", "preprocess_input"]

_SIZES = (128, 160, 192, 224)
_ALPHA_TEXT = {1.0: "1_0", 0.75: "7_5", 0.5: "5_0", 0.25: "2_5"}
# (pointwise filters, strides) of blocks 1 to 13
_BLOCKS = (
    (64, 1),
    (128, 2),
    (128, 1),
    (256, 2),
    (256, 1),
    (512, 2),
    *((512, 1),) * 5,
    (1024, 2),
    (1024, 1),
)


def _channel_axis() -> int:
    return 1 if backend.image_data_format() == "channels_first" else -1


def _depthwise_block(x, filters: int, alpha, depth_multiplier, stride: int, block_id: int):
    axis = _channel_axis()
    if stride != 1:
        x = layers.ZeroPadding2D(((0, 1), (0, 1)), name=f"conv_pad_{block_id}")(x)
    x = layers.DepthwiseConv2D(
        (3, 3),
        padding="same" if stride == 1 else "valid",
        depth_multiplier=depth_multiplier,
        strides=(stride, stride),
        use_bias=False,
        name=f"conv_dw_{block_id}",
    )(x)
    x = layers.BatchNormalization(axis=axis, name=f"conv_dw_{block_id}_bn")(x)
    x = layers.ReLU(6.0, name=f"conv_dw_{block_id}_relu")(x)
    x = layers.Conv2D(
        int(filters * alpha), (1, 1), padding="same", use_bias=False, name=f"conv_pw_{block_id}"
    )(x)
    x = layers.BatchNormalization(axis=axis, name=f"conv_pw_{block_id}_bn")(x)
    return layers.ReLU(6.0, name=f"conv_pw_{block_id}_relu")(x)


def _rows_cols(input_shape) -> tuple:
    if backend.image_data_format() == "channels_first":
        return input_shape[1], input_shape[2]
    return input_shape[0], input_shape[1]


def _check_imagenet(alpha, depth_multiplier, rows, cols) -> int:
    """The input size whose imagenet weights are loaded (224 unless a square size Keras has)."""
    if depth_multiplier != 1:
        raise ValueError(
            "If imagenet weights are being loaded, depth multiplier must be 1. "
            f"Received depth_multiplier={depth_multiplier}"
        )
    if alpha not in _ALPHA_TEXT:
        raise ValueError(
            "If imagenet weights are being loaded, alpha can be one of `0.25`, `0.50`, `0.75` "
            f"or `1.0` only. Received alpha={alpha}"
        )
    return rows if rows == cols and rows in _SIZES else 224


def MobileNet(  # noqa: N802 - Keras' name
    input_shape=None,
    alpha=1.0,
    depth_multiplier=1,
    dropout=1e-3,
    include_top=True,
    weights="imagenet",
    input_tensor=None,
    pooling=None,
    classes=1000,
    classifier_activation="softmax",
    **kwargs,
):
    """MobileNet v1 of width ``alpha`` and depth multiplier ``depth_multiplier``; imagenet
    weights exist for alpha 0.25/0.5/0.75/1.0 at 128/160/192/224 pixels."""
    if kwargs:
        raise ValueError(f"Unknown argument(s): {kwargs}")
    imagenet_utils.check_weights(weights, include_top, classes)
    default_size = 224
    if input_shape is not None:
        rows, cols = _rows_cols(input_shape)
        default_size = rows if rows == cols and rows in _SIZES else 224
    input_shape = imagenet_utils.obtain_input_shape(
        input_shape, default_size, 32, backend.image_data_format(), include_top, weights
    )
    rows, cols = _rows_cols(input_shape)
    if weights == "imagenet":
        rows = _check_imagenet(alpha, depth_multiplier, rows, cols)
    img_input = imagenet_utils.image_input(input_tensor, input_shape)
    x = layers.Conv2D(
        int(32 * alpha), (3, 3), padding="same", use_bias=False, strides=(2, 2), name="conv1"
    )(img_input)
    x = layers.BatchNormalization(axis=_channel_axis(), name="conv1_bn")(x)
    x = layers.ReLU(6.0, name="conv1_relu")(x)
    for block_id, (filters, stride) in enumerate(_BLOCKS, 1):
        x = _depthwise_block(x, filters, alpha, depth_multiplier, stride, block_id)
    if include_top:
        x = layers.GlobalAveragePooling2D(keepdims=True)(x)
        x = layers.Dropout(dropout, name="dropout")(x)
        x = layers.Conv2D(classes, (1, 1), padding="same", name="conv_preds")(x)
        x = layers.Reshape((classes,), name="reshape_2")(x)
        imagenet_utils.check_activation(classifier_activation, weights)
        x = layers.Activation(activation=classifier_activation, name="predictions")(x)
    else:
        x = imagenet_utils.pool_features(x, pooling)
    notop = "" if include_top else "_no_top"
    file = f"mobilenet_{_ALPHA_TEXT.get(alpha)}_{rows}_tf{notop}.h5"
    return imagenet_utils.finish(
        img_input, input_tensor, x, f"mobilenet_{alpha:0.2f}_{rows}", weights, file
    )


def preprocess_input(x, data_format=None):
    """``tf`` mode: scaled to [-1, 1]."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")
