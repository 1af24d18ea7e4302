"""ResNet50, ResNet101 and ResNet152 (``tf.keras.applications.resnet`` / ``resnet50``), v1
with bottleneck blocks, named as Keras names them (``conv1_pad``, ``conv1_conv``,
``conv1_bn``, ``conv2_block1_1_conv``, ..., ``conv5_block3_out``). Inputs are preprocessed in
``caffe`` mode."""

from __future__ import annotations

from engine.keras import backend, layers
from engine.keras.applications import imagenet_utils
from engine.keras.applications.imagenet_utils import decode_predictions

__all__ = ["ResNet50", "ResNet101", "ResNet152", "decode_predictions", "preprocess_input"]

_EPS = 1.001e-5


def _bn(x, name: str):
    axis = 3 if backend.image_data_format() == "channels_last" else 1
    return layers.BatchNormalization(axis=axis, epsilon=_EPS, name=name)(x)


def _block(x, filters: int, stride: int = 1, conv_shortcut: bool = True, name: str = ""):
    """A bottleneck block: 1x1, 3x3, 1x1 (4x wider) convolutions added to the shortcut."""
    if conv_shortcut:
        shortcut = layers.Conv2D(4 * filters, 1, strides=stride, name=name + "_0_conv")(x)
        shortcut = _bn(shortcut, name + "_0_bn")
    else:
        shortcut = x
    x = layers.Conv2D(filters, 1, strides=stride, name=name + "_1_conv")(x)
    x = layers.Activation("relu", name=name + "_1_relu")(_bn(x, name + "_1_bn"))
    x = layers.Conv2D(filters, 3, padding="SAME", name=name + "_2_conv")(x)
    x = layers.Activation("relu", name=name + "_2_relu")(_bn(x, name + "_2_bn"))
    x = layers.Conv2D(4 * filters, 1, name=name + "_3_conv")(x)
    x = _bn(x, name + "_3_bn")
    x = layers.Add(name=name + "_add")([shortcut, x])
    return layers.Activation("relu", name=name + "_out")(x)


def _stack(x, filters: int, blocks: int, stride1: int = 2, name: str = ""):
    x = _block(x, filters, stride=stride1, name=name + "_block1")
    for i in range(2, blocks + 1):
        x = _block(x, filters, conv_shortcut=False, name=f"{name}_block{i}")
    return x


def _resnet(
    blocks,
    model_name,
    include_top,
    weights,
    input_tensor,
    input_shape,
    pooling,
    classes,
    classifier_activation="softmax",
    **kwargs,
):
    if kwargs:
        raise ValueError(f"Unknown argument(s): {kwargs}")
    imagenet_utils.check_weights(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(
        input_shape, 224, 32, backend.image_data_format(), include_top, weights
    )
    img_input = imagenet_utils.image_input(input_tensor, input_shape)
    x = layers.ZeroPadding2D(padding=((3, 3), (3, 3)), name="conv1_pad")(img_input)
    x = layers.Conv2D(64, 7, strides=2, use_bias=True, name="conv1_conv")(x)
    x = layers.Activation("relu", name="conv1_relu")(_bn(x, "conv1_bn"))
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)), name="pool1_pad")(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1_pool")(x)
    for stage, (filters, n) in enumerate(zip((64, 128, 256, 512), blocks, strict=True)):
        x = _stack(x, filters, n, stride1=1 if stage == 0 else 2, name=f"conv{stage + 2}")
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


def ResNet50(  # noqa: N802 - Keras' name
    include_top=True,
    weights="imagenet",
    input_tensor=None,
    input_shape=None,
    pooling=None,
    classes=1000,
    **kwargs,
):
    """ResNet50: stages of 3, 4, 6 and 3 bottleneck blocks (224x224 inputs with the
    classifier; 32x32 at least without it)."""
    return _resnet(
        (3, 4, 6, 3),
        "resnet50",
        include_top,
        weights,
        input_tensor,
        input_shape,
        pooling,
        classes,
        **kwargs,
    )


def ResNet101(  # noqa: N802 - Keras' name
    include_top=True,
    weights="imagenet",
    input_tensor=None,
    input_shape=None,
    pooling=None,
    classes=1000,
    **kwargs,
):
    """ResNet101: stages of 3, 4, 23 and 3 bottleneck blocks."""
    return _resnet(
        (3, 4, 23, 3),
        "resnet101",
        include_top,
        weights,
        input_tensor,
        input_shape,
        pooling,
        classes,
        **kwargs,
    )


def ResNet152(  # noqa: N802 - Keras' name
    include_top=True,
    weights="imagenet",
    input_tensor=None,
    input_shape=None,
    pooling=None,
    classes=1000,
    **kwargs,
):
    """ResNet152: stages of 3, 8, 36 and 3 bottleneck blocks."""
    return _resnet(
        (3, 8, 36, 3),
        "resnet152",
        include_top,
        weights,
        input_tensor,
        input_shape,
        pooling,
        classes,
        **kwargs,
    )


def preprocess_input(x, data_format=None):
    """``caffe`` mode: BGR, minus the ImageNet channel means."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="caffe")
