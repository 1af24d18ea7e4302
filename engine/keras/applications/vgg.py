"""VGG16 and VGG19 (``tf.keras.applications.vgg16`` / ``vgg19``): blocks of 3x3 ReLU
convolutions, each block ending in 2x2 max pooling, then two 4096-unit layers and the
classifier. Inputs are preprocessed in ``caffe`` mode."""

from __future__ import annotations

from engine.keras import backend, layers
from engine.keras.applications import imagenet_utils
from engine.keras.applications.imagenet_utils import decode_predictions

__all__ = ["VGG16", "VGG19", "decode_predictions", "preprocess_input"]

_FILTERS = (64, 128, 256, 512, 512)


def _vgg(
    convs_per_block,
    name,
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
    x = img_input
    for block, (filters, convs) in enumerate(zip(_FILTERS, convs_per_block, strict=True), 1):
        for i in range(1, convs + 1):
            x = layers.Conv2D(
                filters, (3, 3), activation="relu", padding="same", name=f"block{block}_conv{i}"
            )(x)
        x = layers.MaxPooling2D((2, 2), strides=(2, 2), name=f"block{block}_pool")(x)
    if include_top:
        x = layers.Flatten(name="flatten")(x)
        x = layers.Dense(4096, activation="relu", name="fc1")(x)
        x = layers.Dense(4096, activation="relu", name="fc2")(x)
        imagenet_utils.check_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation, name="predictions")(x)
    else:
        x = imagenet_utils.pool_features(x, pooling)
    notop = "" if include_top else "_notop"
    return imagenet_utils.finish(
        img_input,
        input_tensor,
        x,
        name,
        weights,
        f"{name}_weights_tf_dim_ordering_tf_kernels{notop}.h5",
    )


def VGG16(  # noqa: N802 - Keras' name
    include_top=True,
    weights="imagenet",
    input_tensor=None,
    input_shape=None,
    pooling=None,
    classes=1000,
    classifier_activation="softmax",
):
    """VGG16: 13 convolutions in 5 blocks (2, 2, 3, 3, 3), then the classifier if
    ``include_top`` (224x224 inputs then; 32x32 at least without it)."""
    return _vgg(
        (2, 2, 3, 3, 3),
        "vgg16",
        include_top,
        weights,
        input_tensor,
        input_shape,
        pooling,
        classes,
        classifier_activation,
    )


def VGG19(  # noqa: N802 - Keras' name
    include_top=True,
    weights="imagenet",
    input_tensor=None,
    input_shape=None,
    pooling=None,
    classes=1000,
    classifier_activation="softmax",
):
    """VGG19: 16 convolutions in 5 blocks (2, 2, 4, 4, 4), then the classifier if
    ``include_top``."""
    return _vgg(
        (2, 2, 4, 4, 4),
        "vgg19",
        include_top,
        weights,
        input_tensor,
        input_shape,
        pooling,
        classes,
        classifier_activation,
    )


def preprocess_input(x, data_format=None):
    """``caffe`` mode: BGR, minus the ImageNet channel means."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="caffe")
