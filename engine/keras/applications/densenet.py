"""DenseNet121, DenseNet169 and DenseNet201 (``tf.keras.applications.densenet``): dense blocks
whose every layer (BatchNormalization, ReLU, 1x1 and 3x3 convolutions) adds 32 channels to
its input, joined by transitions that halve the channels and the size. Inputs are
preprocessed in ``torch`` mode."""

from __future__ import annotations

from engine.keras import backend, layers
from engine.keras.applications import imagenet_utils
from engine.keras.applications.imagenet_utils import decode_predictions

__all__ = ["DenseNet121", "DenseNet169", "DenseNet201", "decode_predictions", "preprocess_input"]

_EPS = 1.001e-5
_NAMES = {
    (6, 12, 24, 16): "densenet121",
    (6, 12, 32, 32): "densenet169",
    (6, 12, 48, 32): "densenet201",
}


def _bn_axis() -> int:
    return 3 if backend.image_data_format() == "channels_last" else 1


def _bn_relu(x, name: str):
    x = layers.BatchNormalization(axis=_bn_axis(), epsilon=_EPS, name=name + "_bn")(x)
    return layers.Activation("relu", name=name + "_relu")(x)


def _conv_block(x, growth_rate: int, name: str):
    x1 = _bn_relu(x, name + "_0")
    x1 = layers.Conv2D(4 * growth_rate, 1, use_bias=False, name=name + "_1_conv")(x1)
    x1 = _bn_relu(x1, name + "_1")
    x1 = layers.Conv2D(growth_rate, 3, padding="same", use_bias=False, name=name + "_2_conv")(x1)
    return layers.Concatenate(axis=_bn_axis(), name=name + "_concat")([x, x1])


def _transition_block(x, reduction: float, name: str):
    x = _bn_relu(x, name)
    filters = int(backend.int_shape(x)[_bn_axis()] * reduction)
    x = layers.Conv2D(filters, 1, use_bias=False, name=name + "_conv")(x)
    return layers.AveragePooling2D(2, strides=2, name=name + "_pool")(x)


def DenseNet(  # noqa: N802 - Keras' name
    blocks,
    include_top=True,
    weights="imagenet",
    input_tensor=None,
    input_shape=None,
    pooling=None,
    classes=1000,
    classifier_activation="softmax",
):
    """A DenseNet with ``blocks`` layers in each of its four dense blocks."""
    imagenet_utils.check_weights(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(
        input_shape, 224, 32, backend.image_data_format(), include_top, weights
    )
    img_input = imagenet_utils.image_input(input_tensor, input_shape)
    x = layers.ZeroPadding2D(padding=((3, 3), (3, 3)))(img_input)
    x = layers.Conv2D(64, 7, strides=2, use_bias=False, name="conv1/conv")(x)
    x = layers.BatchNormalization(axis=_bn_axis(), epsilon=_EPS, name="conv1/bn")(x)
    x = layers.Activation("relu", name="conv1/relu")(x)
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)))(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1")(x)
    for stage, n in enumerate(blocks):
        for i in range(1, n + 1):
            x = _conv_block(x, 32, name=f"conv{stage + 2}_block{i}")
        if stage < 3:
            x = _transition_block(x, 0.5, name=f"pool{stage + 2}")
    x = layers.BatchNormalization(axis=_bn_axis(), epsilon=_EPS, name="bn")(x)
    x = layers.Activation("relu", name="relu")(x)
    x = imagenet_utils.classifier_top(
        x,
        include_top,
        classes,
        classifier_activation,
        weights,
        pooling,
        gap_name="avg_pool",
        pool_names=("avg_pool", "max_pool"),
    )
    name = _NAMES.get(tuple(blocks))
    notop = "" if include_top else "_notop"
    file = f"{name}_weights_tf_dim_ordering_tf_kernels{notop}.h5" if name else None
    return imagenet_utils.finish(img_input, input_tensor, x, name or "densenet", weights, file)


def DenseNet121(  # noqa: N802 - Keras' name
    include_top=True,
    weights="imagenet",
    input_tensor=None,
    input_shape=None,
    pooling=None,
    classes=1000,
    classifier_activation="softmax",
):
    """DenseNet121: dense blocks of 6, 12, 24 and 16 layers."""
    return DenseNet(
        [6, 12, 24, 16],
        include_top,
        weights,
        input_tensor,
        input_shape,
        pooling,
        classes,
        classifier_activation,
    )


def DenseNet169(  # noqa: N802 - Keras' name
    include_top=True,
    weights="imagenet",
    input_tensor=None,
    input_shape=None,
    pooling=None,
    classes=1000,
    classifier_activation="softmax",
):
    """DenseNet169: dense blocks of 6, 12, 32 and 32 layers."""
    return DenseNet(
        [6, 12, 32, 32],
        include_top,
        weights,
        input_tensor,
        input_shape,
        pooling,
        classes,
        classifier_activation,
    )


def DenseNet201(  # noqa: N802 - Keras' name
    include_top=True,
    weights="imagenet",
    input_tensor=None,
    input_shape=None,
    pooling=None,
    classes=1000,
    classifier_activation="softmax",
):
    """DenseNet201: dense blocks of 6, 12, 48 and 32 layers."""
    return DenseNet(
        [6, 12, 48, 32],
        include_top,
        weights,
        input_tensor,
        input_shape,
        pooling,
        classes,
        classifier_activation,
    )


def preprocess_input(x, data_format=None):
    """``torch`` mode: to [0, 1], then normalized by the ImageNet channel means and deviations."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="torch")
