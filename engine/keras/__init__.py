"""``tf.keras`` as TF1's Keras runs it in graph mode (``tf.compat.v1.keras``): layers that
create their variables on first call, ``Sequential`` and functional models that train with
``compile``/``fit`` in Keras' own session, and the backend, losses, metrics, optimizers and
callbacks around them.
"""

from engine.keras import activations, backend, initializers, layers, regularizers
from engine.keras.input_layer import Input

__all__ = ["Input", "activations", "backend", "initializers", "layers", "regularizers"]
