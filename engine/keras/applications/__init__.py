"""``tf.keras.applications``: the ImageNet architectures of TF1's Keras, built layer for layer
with Keras' names (so Keras' weight files load by order or by name), their
``preprocess_input`` and ``decode_predictions``. ``weights='imagenet'`` reads the file Keras
would have downloaded from Keras' cache (``~/.keras/models``, or ``$KERAS_HOME/models``); the
engine never downloads.

    model = tf.keras.applications.MobileNetV2(weights=None, input_shape=(96, 96, 3))
"""

from engine.keras.applications import (
    imagenet_utils,
    mobilenet,
    mobilenet_v2,
    resnet,
    vgg,
)
from engine.keras.applications.mobilenet import MobileNet
from engine.keras.applications.mobilenet_v2 import MobileNetV2
from engine.keras.applications.resnet import ResNet50, ResNet101, ResNet152
from engine.keras.applications.vgg import VGG16, VGG19

resnet50 = resnet
vgg16 = vgg
vgg19 = vgg

__all__ = [
    "VGG16",
    "VGG19",
    "MobileNet",
    "MobileNetV2",
    "ResNet50",
    "ResNet101",
    "ResNet152",
    "imagenet_utils",
    "mobilenet",
    "mobilenet_v2",
    "resnet",
    "resnet50",
    "vgg16",
    "vgg19",
]
