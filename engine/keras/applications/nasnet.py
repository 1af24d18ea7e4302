"""NASNetMobile and NASNetLarge (``tf.keras.applications.nasnet``): NASNet-A normal and
reduction cells found by architecture search, each mixing separable convolutions and pooling
of the current input ``h`` and the previous cell's output ``p`` (adjusted to its size).
Many layers are unnamed, so Keras numbers them in creation order, which this module keeps.
The family works in ``channels_last`` only. Inputs are preprocessed in ``tf`` mode."""

from __future__ import annotations

import warnings

from engine.keras import backend, layers
from engine.keras.applications import imagenet_utils
from engine.keras.applications.imagenet_utils import decode_predictions

__all__ = ["NASNetLarge", "NASNetMobile", "decode_predictions", "preprocess_input"]

_FILES = {
    224: ("nasnet_mobile.h5", "nasnet_mobile_no_top.h5"),
    331: (
        "nasnet_large.h5",
        "nasnet_large_no_top.h5",
    ),
}


def _bn(x, name: str):
    return layers.BatchNormalization(axis=-1, momentum=0.9997, epsilon=1e-3, name=name)(x)


def _conv(x, filters: int, name: str, strides=(1, 1)):
    return layers.Conv2D(
        filters,
        (1, 1),
        strides=strides,
        padding="same",
        use_bias=False,
        name=name,
        kernel_initializer="he_normal",
    )(x)


def _separable_conv_block(ip, filters, kernel_size=(3, 3), strides=(1, 1), block_id=None):
    """ReLU, separable convolution (strided: after correcting padding), BN, twice."""
    x = layers.Activation("relu")(ip)
    conv_pad = "same"
    if strides == (2, 2):
        pad = imagenet_utils.correct_pad(x, kernel_size)
        x = layers.ZeroPadding2D(padding=pad, name=f"separable_conv_1_pad_{block_id}")(x)
        conv_pad = "valid"
    for i, stride in ((1, strides), (2, (1, 1))):
        if i == 2:
            x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(
            filters,
            kernel_size,
            strides=stride,
            name=f"separable_conv_{i}_{block_id}",
            padding=conv_pad if i == 1 else "same",
            use_bias=False,
            kernel_initializer="he_normal",
        )(x)
        x = _bn(x, f"separable_conv_{i}_bn_{block_id}")
    return x


def _adjust_block(p, ip, filters: int, block_id):
    """``p`` brought to ``ip``'s size (two half-width strided paths) or width (a projection)."""
    if p is None:
        return ip
    if backend.int_shape(p)[-2] != backend.int_shape(ip)[-2]:
        p = layers.Activation("relu", name=f"adjust_relu_1_{block_id}")(p)
        p1 = layers.AveragePooling2D(
            (1, 1), strides=(2, 2), padding="valid", name=f"adjust_avg_pool_1_{block_id}"
        )(p)
        p1 = _conv(p1, filters // 2, f"adjust_conv_1_{block_id}")
        p2 = layers.ZeroPadding2D(padding=((0, 1), (0, 1)))(p)
        p2 = layers.Cropping2D(cropping=((1, 0), (1, 0)))(p2)
        p2 = layers.AveragePooling2D(
            (1, 1), strides=(2, 2), padding="valid", name=f"adjust_avg_pool_2_{block_id}"
        )(p2)
        p2 = _conv(p2, filters // 2, f"adjust_conv_2_{block_id}")
        p = layers.concatenate([p1, p2], axis=-1)
        return _bn(p, f"adjust_bn_{block_id}")
    if backend.int_shape(p)[-1] != filters:
        p = layers.Activation("relu")(p)
        p = _conv(p, filters, f"adjust_conv_projection_{block_id}")
        return _bn(p, f"adjust_bn_{block_id}")
    return p


def _avg3(x, name: str, strides=(1, 1), padding="same"):
    return layers.AveragePooling2D((3, 3), strides=strides, padding=padding, name=name)(x)


def _normal_a_cell(ip, p, filters: int, block_id: str):
    p = _adjust_block(p, ip, filters, block_id)
    h = layers.Activation("relu")(ip)
    h = _bn(_conv(h, filters, f"normal_conv_1_{block_id}"), f"normal_bn_1_{block_id}")
    x1 = layers.add(
        [
            _separable_conv_block(h, filters, (5, 5), block_id=f"normal_left1_{block_id}"),
            _separable_conv_block(p, filters, block_id=f"normal_right1_{block_id}"),
        ],
        name=f"normal_add_1_{block_id}",
    )
    x2 = layers.add(
        [
            _separable_conv_block(p, filters, (5, 5), block_id=f"normal_left2_{block_id}"),
            _separable_conv_block(p, filters, (3, 3), block_id=f"normal_right2_{block_id}"),
        ],
        name=f"normal_add_2_{block_id}",
    )
    x3 = layers.add([_avg3(h, f"normal_left3_{block_id}"), p], name=f"normal_add_3_{block_id}")
    x4 = layers.add(
        [_avg3(p, f"normal_left4_{block_id}"), _avg3(p, f"normal_right4_{block_id}")],
        name=f"normal_add_4_{block_id}",
    )
    x5 = _separable_conv_block(h, filters, block_id=f"normal_left5_{block_id}")
    x5 = layers.add([x5, h], name=f"normal_add_5_{block_id}")
    x = layers.concatenate([p, x1, x2, x3, x4, x5], axis=-1, name=f"normal_concat_{block_id}")
    return x, ip


def _reduction_a_cell(ip, p, filters: int, block_id: str):
    p = _adjust_block(p, ip, filters, block_id)
    h = layers.Activation("relu")(ip)
    h = _bn(_conv(h, filters, f"reduction_conv_1_{block_id}"), f"reduction_bn_1_{block_id}")
    h3 = layers.ZeroPadding2D(
        padding=imagenet_utils.correct_pad(h, 3), name=f"reduction_pad_1_{block_id}"
    )(h)
    s2 = (2, 2)
    x1_1 = _separable_conv_block(h, filters, (5, 5), s2, f"reduction_left1_{block_id}")
    x1_2 = _separable_conv_block(p, filters, (7, 7), s2, f"reduction_right1_{block_id}")
    x1 = layers.add([x1_1, x1_2], name=f"reduction_add_1_{block_id}")
    x2_1 = layers.MaxPooling2D(
        (3, 3), strides=s2, padding="valid", name=f"reduction_left2_{block_id}"
    )(h3)
    x2_2 = _separable_conv_block(p, filters, (7, 7), s2, f"reduction_right2_{block_id}")
    x2 = layers.add([x2_1, x2_2], name=f"reduction_add_2_{block_id}")
    x3_1 = _avg3(h3, f"reduction_left3_{block_id}", s2, "valid")
    x3_2 = _separable_conv_block(p, filters, (5, 5), s2, f"reduction_right3_{block_id}")
    x3 = layers.add([x3_1, x3_2], name=f"reduction_add3_{block_id}")
    x4 = layers.add([x2, _avg3(x1, f"reduction_left4_{block_id}")])
    x5_1 = _separable_conv_block(x1, filters, (3, 3), block_id=f"reduction_left4_{block_id}")
    x5_2 = layers.MaxPooling2D(
        (3, 3), strides=s2, padding="valid", name=f"reduction_right5_{block_id}"
    )(h3)
    x5 = layers.add([x5_1, x5_2], name=f"reduction_add4_{block_id}")
    x = layers.concatenate([x2, x3, x4, x5], axis=-1, name=f"reduction_concat_{block_id}")
    return x, ip


def _cells(x, filters: int, num_blocks: int, skip_reduction: bool, multiplier: int):
    p = None
    x, p = _reduction_a_cell(x, p, filters // multiplier**2, "stem_1")
    x, p = _reduction_a_cell(x, p, filters // multiplier, "stem_2")
    for stage in range(3):
        if stage:
            block_id = f"reduce_{stage * num_blocks}"
            x, p0 = _reduction_a_cell(x, p, filters * multiplier**stage, block_id)
            p = p if skip_reduction else p0
        for i in range(num_blocks):
            block_id = str(stage * num_blocks + i + 1 if stage else i)
            x, p = _normal_a_cell(x, p, filters * multiplier**stage, block_id)
    return x


def NASNet(  # noqa: N802 - Keras' name
    input_shape=None,
    penultimate_filters=4032,
    num_blocks=6,
    stem_block_filters=96,
    skip_reduction=True,
    filter_multiplier=2,
    include_top=True,
    weights="imagenet",
    input_tensor=None,
    pooling=None,
    classes=1000,
    default_size=None,
    classifier_activation="softmax",
):
    """A NASNet-A model; imagenet weights exist for the mobile (224) and large (331) ones."""
    imagenet_utils.check_weights(weights, include_top, classes)
    if isinstance(input_shape, tuple) and None in input_shape and weights == "imagenet":
        raise ValueError(
            "When specifying the input shape of a NASNet and loading `ImageNet` weights, the "
            f"input_shape argument must be static (no None entries). Got: {input_shape}"
        )
    default_size = default_size or 331
    old_format = backend.image_data_format()
    if old_format != "channels_last":
        warnings.warn(
            "The NASNet family of models is only available for the input data format "
            '"channels_last"; the model returned expects channels_last inputs.',
            stacklevel=2,
        )
        backend.set_image_data_format("channels_last")
    try:
        return _nasnet(
            input_shape,
            penultimate_filters,
            num_blocks,
            stem_block_filters,
            skip_reduction,
            filter_multiplier,
            include_top,
            weights,
            input_tensor,
            pooling,
            classes,
            default_size,
            classifier_activation,
        )
    finally:
        backend.set_image_data_format(old_format)


def _nasnet(
    input_shape,
    penultimate_filters,
    num_blocks,
    stem_block_filters,
    skip_reduction,
    filter_multiplier,
    include_top,
    weights,
    input_tensor,
    pooling,
    classes,
    default_size,
    classifier_activation,
):
    input_shape = imagenet_utils.obtain_input_shape(
        input_shape, default_size, 32, "channels_last", include_top, weights
    )
    if penultimate_filters % (24 * filter_multiplier**2) != 0:
        raise ValueError(
            "For NASNet-A models, the `penultimate_filters` must be a multiple of 24 * "
            f"(`filter_multiplier` ** 2). Current value: {penultimate_filters}"
        )
    if weights == "imagenet" and default_size not in _FILES:
        raise ValueError("ImageNet weights can only be loaded with NASNetLarge or NASNetMobile")
    img_input = imagenet_utils.image_input(input_tensor, input_shape)
    x = layers.Conv2D(
        stem_block_filters,
        (3, 3),
        strides=(2, 2),
        padding="valid",
        use_bias=False,
        name="stem_conv1",
        kernel_initializer="he_normal",
    )(img_input)
    x = _bn(x, "stem_bn1")
    filters = penultimate_filters // 24
    x = _cells(x, filters, num_blocks, skip_reduction, filter_multiplier)
    x = layers.Activation("relu")(x)
    x = imagenet_utils.classifier_top(
        x, include_top, classes, classifier_activation, weights, pooling
    )
    file = _FILES.get(default_size, (None, None))[0 if include_top else 1]
    return imagenet_utils.finish(img_input, input_tensor, x, "NASNet", weights, file)


def NASNetMobile(  # noqa: N802 - Keras' name
    input_shape=None,
    include_top=True,
    weights="imagenet",
    input_tensor=None,
    pooling=None,
    classes=1000,
    classifier_activation="softmax",
):
    """NASNet-A (4 @ 1056): 224x224 inputs with the classifier, 32x32 at least without."""
    return NASNet(
        input_shape,
        1056,
        4,
        32,
        False,
        2,
        include_top,
        weights,
        input_tensor,
        pooling,
        classes,
        224,
        classifier_activation,
    )


def NASNetLarge(  # noqa: N802 - Keras' name
    input_shape=None,
    include_top=True,
    weights="imagenet",
    input_tensor=None,
    pooling=None,
    classes=1000,
    classifier_activation="softmax",
):
    """NASNet-A (6 @ 4032): 331x331 inputs with the classifier, 32x32 at least without."""
    return NASNet(
        input_shape,
        4032,
        6,
        96,
        True,
        2,
        include_top,
        weights,
        input_tensor,
        pooling,
        classes,
        331,
        classifier_activation,
    )


def preprocess_input(x, data_format=None):
    """``tf`` mode: scaled to [-1, 1]."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")
