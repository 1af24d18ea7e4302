"""ResNet50V2, ResNet101V2 and ResNet152V2 (``tf.keras.applications.resnet_v2``): ResNet with
pre-activation bottleneck blocks (BatchNormalization and ReLU before each block's
convolutions, ``post_bn``/``post_relu`` after the last), named as Keras names them
(``conv2_block1_preact_bn``, ..., ``conv5_block3_out``). A stack's last block strides, and
its identity shortcut is then an unnamed 1x1 ``MaxPooling2D`` (``max_pooling2d``,
``max_pooling2d_1``, ...). Inputs are preprocessed in ``tf`` mode."""

from __future__ import annotations

from engine.keras import backend, layers
from engine.keras.applications import imagenet_utils
from engine.keras.applications.imagenet_utils import decode_predictions

__all__ = ["ResNet50V2", "ResNet101V2", "ResNet152V2", "decode_predictions", "preprocess_input"]

_EPS = 1.001e-5


def _bn(x, name: str):
    axis = 3 if backend.image_data_format() == "channels_last" else 1
    return layers.BatchNormalization(axis=axis, epsilon=_EPS, name=name)(x)


def _block(x, filters: int, stride: int = 1, conv_shortcut: bool = False, name: str = ""):
    """A pre-activation bottleneck block: BN-ReLU, then 1x1, 3x3 (strided), 1x1 (4x wider)
    convolutions added to the shortcut."""
    preact = layers.Activation("relu", name=name + "_preact_relu")(_bn(x, name + "_preact_bn"))
    if conv_shortcut:
        shortcut = layers.Conv2D(4 * filters, 1, strides=stride, name=name + "_0_conv")(preact)
    else:
        shortcut = layers.MaxPooling2D(1, strides=stride)(x) if stride > 1 else x
    x = layers.Conv2D(filters, 1, strides=1, use_bias=False, name=name + "_1_conv")(preact)
    x = layers.Activation("relu", name=name + "_1_relu")(_bn(x, name + "_1_bn"))
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)), name=name + "_2_pad")(x)
    x = layers.Conv2D(filters, 3, strides=stride, use_bias=False, name=name + "_2_conv")(x)
    x = layers.Activation("relu", name=name + "_2_relu")(_bn(x, name + "_2_bn"))
    x = layers.Conv2D(4 * filters, 1, name=name + "_3_conv")(x)
    return layers.Add(name=name + "_out")([shortcut, x])


def _stack(x, filters: int, blocks: int, stride1: int = 2, name: str = ""):
    x = _block(x, filters, conv_shortcut=True, name=name + "_block1")
    for i in range(2, blocks):
        x = _block(x, filters, name=f"{name}_block{i}")
    return _block(x, filters, stride=stride1, name=f"{name}_block{blocks}")


def _resnet_v2(
    blocks,
    model_name,
    include_top,
    weights,
    input_tensor,
    input_shape,
    pooling,
    classes,
    classifier_activation,
):
    imagenet_utils.check_weights(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(
        input_shape, 224, 32, backend.image_data_format(), include_top, weights
    )
    img_input = imagenet_utils.image_input(input_tensor, input_shape)
    x = layers.ZeroPadding2D(padding=((3, 3), (3, 3)), name="conv1_pad")(img_input)
    x = layers.Conv2D(64, 7, strides=2, use_bias=True, name="conv1_conv")(x)
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)), name="pool1_pad")(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1_pool")(x)
    for stage, (filters, n) in enumerate(zip((64, 128, 256, 512), blocks, strict=True)):
        x = _stack(x, filters, n, stride1=1 if stage == 3 else 2, name=f"conv{stage + 2}")
    x = layers.Activation("relu", name="post_relu")(_bn(x, "post_bn"))
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
    notop = "" if include_top else "_notop"
    return imagenet_utils.finish(
        img_input,
        input_tensor,
        x,
        model_name,
        weights,
        f"{model_name}_weights_tf_dim_ordering_tf_kernels{notop}.h5",
    )


def ResNet50V2(  # noqa: N802 - Keras' name
    include_top=True,
    weights="imagenet",
    input_tensor=None,
    input_shape=None,
    pooling=None,
    classes=1000,
    classifier_activation="softmax",
):
    """ResNet50V2: stages of 3, 4, 6 and 3 pre-activation blocks (224x224 inputs with the
    classifier; 32x32 at least without it)."""
    return _resnet_v2(
        (3, 4, 6, 3),
        "resnet50v2",
        include_top,
        weights,
        input_tensor,
        input_shape,
        pooling,
        classes,
        classifier_activation,
    )


def ResNet101V2(  # noqa: N802 - Keras' name
    include_top=True,
    weights="imagenet",
    input_tensor=None,
    input_shape=None,
    pooling=None,
    classes=1000,
    classifier_activation="softmax",
):
    """ResNet101V2: stages of 3, 4, 23 and 3 pre-activation blocks."""
    return _resnet_v2(
        (3, 4, 23, 3),
        "resnet101v2",
        include_top,
        weights,
        input_tensor,
        input_shape,
        pooling,
        classes,
        classifier_activation,
    )


def ResNet152V2(  # noqa: N802 - Keras' name
    include_top=True,
    weights="imagenet",
    input_tensor=None,
    input_shape=None,
    pooling=None,
    classes=1000,
    classifier_activation="softmax",
):
    """ResNet152V2: stages of 3, 8, 36 and 3 pre-activation blocks."""
    return _resnet_v2(
        (3, 8, 36, 3),
        "resnet152v2",
        include_top,
        weights,
        input_tensor,
        input_shape,
        pooling,
        classes,
        classifier_activation,
    )


def preprocess_input(x, data_format=None):
    """``tf`` mode: scaled to [-1, 1]."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")
