"""Xception (``tf.keras.applications.xception``): depthwise separable convolutions in an entry
flow of strided residual blocks, eight middle-flow blocks and an exit flow. Its shortcut
convolutions are unnamed, so Keras numbers them in creation order, which this module keeps.
Inputs are preprocessed in ``tf`` mode."""

from __future__ import annotations

from engine.keras import backend, layers
from engine.keras.applications import imagenet_utils
from engine.keras.applications.imagenet_utils import decode_predictions

__all__ = ["Xception", "decode_predictions", "preprocess_input"]


def _axis() -> int:
    return 1 if backend.image_data_format() == "channels_first" else -1


def _sep_bn(x, filters: int, name: str):
    x = layers.SeparableConv2D(filters, (3, 3), padding="same", use_bias=False, name=name)(x)
    return layers.BatchNormalization(axis=_axis(), name=name + "_bn")(x)


def _shortcut(x, filters: int):
    residual = layers.Conv2D(filters, (1, 1), strides=(2, 2), padding="same", use_bias=False)(x)
    return layers.BatchNormalization(axis=_axis())(residual)


def _entry_block(x, filters, block: int, relu_first: bool = True, out_filters=None):
    """Two separable convolutions and strided max pooling, added to a strided 1x1 shortcut."""
    residual = _shortcut(x, out_filters or filters)
    prefix = f"block{block}"
    if relu_first:
        x = layers.Activation("relu", name=prefix + "_sepconv1_act")(x)
    x = _sep_bn(x, filters, prefix + "_sepconv1")
    x = layers.Activation("relu", name=prefix + "_sepconv2_act")(x)
    x = _sep_bn(x, out_filters or filters, prefix + "_sepconv2")
    x = layers.MaxPooling2D((3, 3), strides=(2, 2), padding="same", name=prefix + "_pool")(x)
    return layers.add([x, residual])


def _middle_block(x, block: int):
    residual = x
    for i in (1, 2, 3):
        x = layers.Activation("relu", name=f"block{block}_sepconv{i}_act")(x)
        x = _sep_bn(x, 728, f"block{block}_sepconv{i}")
    return layers.add([x, residual])


def Xception(  # noqa: N802 - Keras' name
    include_top=True,
    weights="imagenet",
    input_tensor=None,
    input_shape=None,
    pooling=None,
    classes=1000,
    classifier_activation="softmax",
):
    """Xception (299x299 inputs with the classifier; 71x71 at least without it)."""
    imagenet_utils.check_weights(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(
        input_shape, 299, 71, backend.image_data_format(), include_top, weights
    )
    img_input = imagenet_utils.image_input(input_tensor, input_shape)
    x = layers.Conv2D(32, (3, 3), strides=(2, 2), use_bias=False, name="block1_conv1")(img_input)
    x = layers.BatchNormalization(axis=_axis(), name="block1_conv1_bn")(x)
    x = layers.Activation("relu", name="block1_conv1_act")(x)
    x = layers.Conv2D(64, (3, 3), use_bias=False, name="block1_conv2")(x)
    x = layers.BatchNormalization(axis=_axis(), name="block1_conv2_bn")(x)
    x = layers.Activation("relu", name="block1_conv2_act")(x)
    x = _entry_block(x, 128, 2, relu_first=False)
    x = _entry_block(x, 256, 3)
    x = _entry_block(x, 728, 4)
    for block in range(5, 13):
        x = _middle_block(x, block)
    x = _entry_block(x, 728, 13, out_filters=1024)
    for i, filters in ((1, 1536), (2, 2048)):
        x = _sep_bn(x, filters, f"block14_sepconv{i}")
        x = layers.Activation("relu", name=f"block14_sepconv{i}_act")(x)
    x = imagenet_utils.classifier_top(
        x, include_top, classes, classifier_activation, weights, pooling, gap_name="avg_pool"
    )
    notop = "" if include_top else "_notop"
    file = f"xception_weights_tf_dim_ordering_tf_kernels{notop}.h5"
    return imagenet_utils.finish(img_input, input_tensor, x, "xception", weights, file)


def preprocess_input(x, data_format=None):
    """``tf`` mode: scaled to [-1, 1]."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")
