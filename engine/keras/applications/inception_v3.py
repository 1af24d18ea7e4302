"""InceptionV3 (``tf.keras.applications.inception_v3``): a stem of convolutions, then eleven
Inception modules (``mixed0`` to ``mixed10``) that concatenate parallel branches. Its
convolutions are unnamed, so Keras numbers them (``conv2d_1``, ``batch_normalization_1``,
...) in the order they are created, which this module keeps. Inputs are preprocessed in
``tf`` mode."""

from __future__ import annotations

from engine.keras import backend, layers
from engine.keras.applications import imagenet_utils
from engine.keras.applications.imagenet_utils import decode_predictions

__all__ = ["InceptionV3", "decode_predictions", "preprocess_input"]


def _axis() -> int:
    return 1 if backend.image_data_format() == "channels_first" else 3


def conv2d_bn(x, filters, num_row, num_col, padding="same", strides=(1, 1), name=None):
    """A convolution without bias, BatchNormalization without scale, then ReLU."""
    x = layers.Conv2D(
        filters,
        (num_row, num_col),
        strides=strides,
        padding=padding,
        use_bias=False,
        name=None if name is None else name + "_conv",
    )(x)
    x = layers.BatchNormalization(
        axis=_axis(), scale=False, name=None if name is None else name + "_bn"
    )(x)
    return layers.Activation("relu", name=name)(x)


def _avg_branch(x, filters: int):
    pool = layers.AveragePooling2D((3, 3), strides=(1, 1), padding="same")(x)
    return conv2d_bn(pool, filters, 1, 1)


def _mixed_35(x, pool_filters: int, name: str):
    """mixed0-2: 1x1, 5x5, double 3x3 and pooled branches."""
    b1 = conv2d_bn(x, 64, 1, 1)
    b5 = conv2d_bn(conv2d_bn(x, 48, 1, 1), 64, 5, 5)
    b3 = conv2d_bn(conv2d_bn(conv2d_bn(x, 64, 1, 1), 96, 3, 3), 96, 3, 3)
    bp = _avg_branch(x, pool_filters)
    return layers.concatenate([b1, b5, b3, bp], axis=_axis(), name=name)


def _reduce_35(x):
    """mixed3: strided 3x3, strided double 3x3 and max-pooled branches."""
    b3 = conv2d_bn(x, 384, 3, 3, strides=(2, 2), padding="valid")
    bd = conv2d_bn(conv2d_bn(x, 64, 1, 1), 96, 3, 3)
    bd = conv2d_bn(bd, 96, 3, 3, strides=(2, 2), padding="valid")
    bp = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)
    return layers.concatenate([b3, bd, bp], axis=_axis(), name="mixed3")


def _mixed_17(x, width: int, name: str):
    """mixed4-7: 1x1, factorized 7x7, double factorized 7x7 and pooled branches."""
    b1 = conv2d_bn(x, 192, 1, 1)
    b7 = conv2d_bn(x, width, 1, 1)
    b7 = conv2d_bn(conv2d_bn(b7, width, 1, 7), 192, 7, 1)
    bd = conv2d_bn(x, width, 1, 1)
    for filters, (r, c) in ((width, (7, 1)), (width, (1, 7)), (width, (7, 1)), (192, (1, 7))):
        bd = conv2d_bn(bd, filters, r, c)
    bp = _avg_branch(x, 192)
    return layers.concatenate([b1, b7, bd, bp], axis=_axis(), name=name)


def _reduce_17(x):
    """mixed8: strided 3x3, strided 7x7-then-3x3 and max-pooled branches."""
    b3 = conv2d_bn(conv2d_bn(x, 192, 1, 1), 320, 3, 3, strides=(2, 2), padding="valid")
    b7 = conv2d_bn(conv2d_bn(conv2d_bn(x, 192, 1, 1), 192, 1, 7), 192, 7, 1)
    b7 = conv2d_bn(b7, 192, 3, 3, strides=(2, 2), padding="valid")
    bp = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)
    return layers.concatenate([b3, b7, bp], axis=_axis(), name="mixed8")


def _mixed_8(x, i: int):
    """mixed9-10: 1x1, split 3x3, split double 3x3 and pooled branches."""
    b1 = conv2d_bn(x, 320, 1, 1)
    b3 = conv2d_bn(x, 384, 1, 1)
    b3 = layers.concatenate(
        [conv2d_bn(b3, 384, 1, 3), conv2d_bn(b3, 384, 3, 1)], axis=_axis(), name=f"mixed9_{i}"
    )
    bd = conv2d_bn(conv2d_bn(x, 448, 1, 1), 384, 3, 3)
    bd = layers.concatenate([conv2d_bn(bd, 384, 1, 3), conv2d_bn(bd, 384, 3, 1)], axis=_axis())
    bp = _avg_branch(x, 192)
    return layers.concatenate([b1, b3, bd, bp], axis=_axis(), name=f"mixed{9 + i}")


def InceptionV3(  # noqa: N802 - Keras' name
    include_top=True,
    weights="imagenet",
    input_tensor=None,
    input_shape=None,
    pooling=None,
    classes=1000,
    classifier_activation="softmax",
):
    """InceptionV3 (299x299 inputs with the classifier; 75x75 at least without it)."""
    imagenet_utils.check_weights(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(
        input_shape, 299, 75, backend.image_data_format(), include_top, weights
    )
    img_input = imagenet_utils.image_input(input_tensor, input_shape)
    x = conv2d_bn(img_input, 32, 3, 3, strides=(2, 2), padding="valid")
    x = conv2d_bn(x, 32, 3, 3, padding="valid")
    x = conv2d_bn(x, 64, 3, 3)
    x = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)
    x = conv2d_bn(x, 80, 1, 1, padding="valid")
    x = conv2d_bn(x, 192, 3, 3, padding="valid")
    x = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)
    for i, pool_filters in enumerate((32, 64, 64)):
        x = _mixed_35(x, pool_filters, f"mixed{i}")
    x = _reduce_35(x)
    for i, width in enumerate((128, 160, 160, 192)):
        x = _mixed_17(x, width, f"mixed{4 + i}")
    x = _reduce_17(x)
    for i in range(2):
        x = _mixed_8(x, i)
    x = imagenet_utils.classifier_top(
        x, include_top, classes, classifier_activation, weights, pooling, gap_name="avg_pool"
    )
    notop = "" if include_top else "_notop"
    file = f"inception_v3_weights_tf_dim_ordering_tf_kernels{notop}.h5"
    return imagenet_utils.finish(img_input, input_tensor, x, "inception_v3", weights, file)


def preprocess_input(x, data_format=None):
    """``tf`` mode: scaled to [-1, 1]."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")
