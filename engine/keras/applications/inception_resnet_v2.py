"""InceptionResNetV2 (``tf.keras.applications.inception_resnet_v2``): InceptionV3's stem, then
Inception-ResNet blocks (``block35_1``..10, ``block17_1``..20, ``block8_1``..10) whose
concatenated branches, projected by a 1x1 convolution with bias, are added to the block's
input scaled (``x + scale * residual``) by a ``CustomScaleLayer``, as TF's Keras builds it;
reductions ``mixed_6a``/``mixed_7a``; ``conv_7b``. Unnamed layers get Keras' numbered names
in creation order, which this module keeps. Inputs are preprocessed in ``tf`` mode."""

from __future__ import annotations

from engine.keras import backend, layers, model_config
from engine.keras.applications import imagenet_utils
from engine.keras.applications.imagenet_utils import decode_predictions
from engine.keras.base_layer import Layer

__all__ = ["CustomScaleLayer", "InceptionResNetV2", "decode_predictions", "preprocess_input"]


def _axis() -> int:
    return 1 if backend.image_data_format() == "channels_first" else 3


class CustomScaleLayer(Layer):
    """``inputs[0] + inputs[1] * scale``: the scaled residual sum of an Inception-ResNet block."""

    def __init__(self, scale, **kwargs):
        super().__init__(**kwargs)
        self.scale = scale

    def get_config(self) -> dict:
        return {**super().get_config(), "scale": self.scale}

    def call(self, inputs):
        return inputs[0] + inputs[1] * self.scale

    def compute_output_shape(self, input_shape):
        return input_shape[0]


# Models rebuilt from their config (model_from_json, load_model) find it by name, as in TF.
model_config.LAYER_CLASSES.setdefault("CustomScaleLayer", CustomScaleLayer)


def conv2d_bn(
    x, filters, kernel_size, strides=1, padding="same", activation="relu", use_bias=False, name=None
):
    """A convolution; without bias it is followed by BatchNormalization without scale; then
    the activation (none when ``activation`` is None)."""
    x = layers.Conv2D(
        filters, kernel_size, strides=strides, padding=padding, use_bias=use_bias, name=name
    )(x)
    if not use_bias:
        bn_name = None if name is None else name + "_bn"
        x = layers.BatchNormalization(axis=_axis(), scale=False, name=bn_name)(x)
    if activation is not None:
        x = layers.Activation(activation, name=None if name is None else name + "_ac")(x)
    return x


def _branches(x, block_type: str) -> list:
    if block_type == "block35":
        return [
            conv2d_bn(x, 32, 1),
            conv2d_bn(conv2d_bn(x, 32, 1), 32, 3),
            conv2d_bn(conv2d_bn(conv2d_bn(x, 32, 1), 48, 3), 64, 3),
        ]
    # branch 0 first: Keras numbers the unnamed layers in creation order
    if block_type == "block17":
        b0 = conv2d_bn(x, 192, 1)
        return [b0, conv2d_bn(conv2d_bn(conv2d_bn(x, 128, 1), 160, [1, 7]), 192, [7, 1])]
    if block_type == "block8":
        b0 = conv2d_bn(x, 192, 1)
        return [b0, conv2d_bn(conv2d_bn(conv2d_bn(x, 192, 1), 224, [1, 3]), 256, [3, 1])]
    raise ValueError(
        'Unknown Inception-ResNet block type. Expects "block35", "block17" or "block8", '
        f"but got: {block_type}"
    )


def inception_resnet_block(x, scale, block_type, block_idx, activation="relu"):
    """One Inception-ResNet block (``block35``, ``block17`` or ``block8``): ``x`` plus
    ``scale`` times the 1x1 projection of its concatenated branches, then ``activation``."""
    block_name = f"{block_type}_{block_idx}"
    mixed = layers.Concatenate(axis=_axis(), name=block_name + "_mixed")(_branches(x, block_type))
    up = conv2d_bn(
        mixed,
        backend.int_shape(x)[_axis()],
        1,
        activation=None,
        use_bias=True,
        name=block_name + "_conv",
    )
    x = CustomScaleLayer(scale)([x, up])
    if activation is not None:
        x = layers.Activation(activation, name=block_name + "_ac")(x)
    return x


def _stem(img_input):
    """The convolutions and poolings before the blocks, and ``mixed_5b``."""
    x = conv2d_bn(img_input, 32, 3, strides=2, padding="valid")
    x = conv2d_bn(x, 32, 3, padding="valid")
    x = conv2d_bn(x, 64, 3)
    x = layers.MaxPooling2D(3, strides=2)(x)
    x = conv2d_bn(x, 80, 1, padding="valid")
    x = conv2d_bn(x, 192, 3, padding="valid")
    x = layers.MaxPooling2D(3, strides=2)(x)
    branches = [
        conv2d_bn(x, 96, 1),
        conv2d_bn(conv2d_bn(x, 48, 1), 64, 5),
        conv2d_bn(conv2d_bn(conv2d_bn(x, 64, 1), 96, 3), 96, 3),
    ]
    pool = layers.AveragePooling2D(3, strides=1, padding="same")(x)
    branches.append(conv2d_bn(pool, 64, 1))
    return layers.Concatenate(axis=_axis(), name="mixed_5b")(branches)


def _reduce_6a(x):
    b0 = conv2d_bn(x, 384, 3, strides=2, padding="valid")
    b1 = conv2d_bn(conv2d_bn(conv2d_bn(x, 256, 1), 256, 3), 384, 3, strides=2, padding="valid")
    bp = layers.MaxPooling2D(3, strides=2, padding="valid")(x)
    return layers.Concatenate(axis=_axis(), name="mixed_6a")([b0, b1, bp])


def _reduce_7a(x):
    b0 = conv2d_bn(conv2d_bn(x, 256, 1), 384, 3, strides=2, padding="valid")
    b1 = conv2d_bn(conv2d_bn(x, 256, 1), 288, 3, strides=2, padding="valid")
    b2 = conv2d_bn(conv2d_bn(conv2d_bn(x, 256, 1), 288, 3), 320, 3, strides=2, padding="valid")
    bp = layers.MaxPooling2D(3, strides=2, padding="valid")(x)
    return layers.Concatenate(axis=_axis(), name="mixed_7a")([b0, b1, b2, bp])


def InceptionResNetV2(  # noqa: N802 - Keras' name
    include_top=True,
    weights="imagenet",
    input_tensor=None,
    input_shape=None,
    pooling=None,
    classes=1000,
    classifier_activation="softmax",
    **kwargs,
):
    """InceptionResNetV2 (299x299 inputs with the classifier; 75x75 at least without it)."""
    if kwargs:
        raise ValueError(f"Unknown argument(s): {kwargs}")
    imagenet_utils.check_weights(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(
        input_shape, 299, 75, backend.image_data_format(), include_top, weights
    )
    img_input = imagenet_utils.image_input(input_tensor, input_shape)
    x = _stem(img_input)
    for i in range(1, 11):
        x = inception_resnet_block(x, scale=0.17, block_type="block35", block_idx=i)
    x = _reduce_6a(x)
    for i in range(1, 21):
        x = inception_resnet_block(x, scale=0.1, block_type="block17", block_idx=i)
    x = _reduce_7a(x)
    for i in range(1, 10):
        x = inception_resnet_block(x, scale=0.2, block_type="block8", block_idx=i)
    x = inception_resnet_block(x, scale=1.0, activation=None, block_type="block8", block_idx=10)
    x = conv2d_bn(x, 1536, 1, name="conv_7b")
    x = imagenet_utils.classifier_top(
        x, include_top, classes, classifier_activation, weights, pooling, gap_name="avg_pool"
    )
    notop = "" if include_top else "_notop"
    file = f"inception_resnet_v2_weights_tf_dim_ordering_tf_kernels{notop}.h5"
    return imagenet_utils.finish(img_input, input_tensor, x, "inception_resnet_v2", weights, file)


def preprocess_input(x, data_format=None):
    """``tf`` mode: scaled to [-1, 1]."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")
