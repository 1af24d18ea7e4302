"""``tf.keras.applications``: the ImageNet architectures of TF1's Keras, built layer for layer
with Keras' names (so Keras' weight files load by order or by name), their
``preprocess_input`` and ``decode_predictions``. ``weights='imagenet'`` reads the file Keras
would have downloaded from Keras' cache (``~/.keras/models``, or ``$KERAS_HOME/models``); the
engine never downloads.

    model = tf.keras.applications.MobileNetV2(weights=None, input_shape=(96, 96, 3))
"""

from engine.keras.applications import (
    densenet,
    imagenet_utils,
    inception_resnet_v2,
    inception_v3,
    mobilenet,
    mobilenet_v2,
    nasnet,
    resnet,
    resnet_v2,
    vgg,
    xception,
)
from engine.keras.applications.densenet import DenseNet121, DenseNet169, DenseNet201
from engine.keras.applications.inception_resnet_v2 import InceptionResNetV2
from engine.keras.applications.inception_v3 import InceptionV3
from engine.keras.applications.mobilenet import MobileNet
from engine.keras.applications.mobilenet_v2 import MobileNetV2
from engine.keras.applications.nasnet import NASNetLarge, NASNetMobile
from engine.keras.applications.resnet import ResNet50, ResNet101, ResNet152
from engine.keras.applications.resnet_v2 import ResNet50V2, ResNet101V2, ResNet152V2
from engine.keras.applications.vgg import VGG16, VGG19
from engine.keras.applications.xception import Xception

resnet50 = resnet
vgg16 = vgg
vgg19 = vgg

__all__ = [
    "VGG16",
    "VGG19",
    "DenseNet121",
    "DenseNet169",
    "DenseNet201",
    "InceptionResNetV2",
    "InceptionV3",
    "MobileNet",
    "MobileNetV2",
    "NASNetLarge",
    "NASNetMobile",
    "ResNet50",
    "ResNet101",
    "ResNet152",
    "ResNet50V2",
    "ResNet101V2",
    "ResNet152V2",
    "Xception",
    "densenet",
    "imagenet_utils",
    "inception_resnet_v2",
    "inception_v3",
    "mobilenet",
    "mobilenet_v2",
    "nasnet",
    "resnet",
    "resnet50",
    "resnet_v2",
    "vgg16",
    "vgg19",
    "xception",
]
