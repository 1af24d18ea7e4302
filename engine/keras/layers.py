"""``tf.keras.layers``: every Keras layer class the engine has, and the base ``Layer``."""

from engine.keras import (
    core,
    layers_conv,
    layers_conv_rnn,
    layers_cudnn,
    layers_merge,
    layers_misc,
    layers_norm,
    layers_pooling,
    layers_reshaping,
    layers_rnn,
    layers_wrappers,
)
from engine.keras.base_layer import InputSpec, Layer
from engine.keras.core import *  # noqa: F403
from engine.keras.input_layer import Input, InputLayer
from engine.keras.layers_conv import *  # noqa: F403
from engine.keras.layers_conv_rnn import *  # noqa: F403
from engine.keras.layers_cudnn import *  # noqa: F403
from engine.keras.layers_merge import *  # noqa: F403
from engine.keras.layers_misc import *  # noqa: F403
from engine.keras.layers_norm import *  # noqa: F403
from engine.keras.layers_pooling import *  # noqa: F403
from engine.keras.layers_reshaping import *  # noqa: F403
from engine.keras.layers_rnn import *  # noqa: F403
from engine.keras.layers_wrappers import *  # noqa: F403

__all__ = [
    "Input",
    "InputLayer",
    "InputSpec",
    "Layer",
    *(n for n in core.__all__ if n[0].isupper()),
    *layers_conv.__all__,
    *layers_conv_rnn.__all__,
    *layers_cudnn.__all__,
    *layers_merge.__all__,
    *layers_misc.__all__,
    *layers_norm.__all__,
    *layers_pooling.__all__,
    *layers_reshaping.__all__,
    *layers_rnn.__all__,
    *layers_wrappers.__all__,
]
