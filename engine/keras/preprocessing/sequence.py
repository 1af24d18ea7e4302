"""``tf.keras.preprocessing.sequence`` (see :mod:`engine.keras.preprocessing_sequence`)."""

from engine.keras.preprocessing_sequence import *  # noqa: F403
from engine.keras.preprocessing_sequence import __all__  # noqa: F401
