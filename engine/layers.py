"""The ``engine.layers`` namespace (TF1's ``tf.layers``): the core layers (``dense``,
``flatten``, ``dropout``), the convolution, pooling and batch-normalization layers, and the
layer classes."""

from engine import conv3d_layers, conv_layers, core_layers, layer_classes
from engine.conv3d_layers import *  # noqa: F403
from engine.conv_layers import *  # noqa: F403
from engine.core_layers import *  # noqa: F403
from engine.layer_classes import *  # noqa: F403

__all__ = [
    *core_layers.__all__,
    *conv_layers.__all__,
    *conv3d_layers.__all__,
    *layer_classes.__all__,
]
