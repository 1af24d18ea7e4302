"""``tf.keras.preprocessing.image`` (see :mod:`engine.keras.preprocessing_image`)."""

from engine.keras.preprocessing_image import *  # noqa: F403
from engine.keras.preprocessing_image import __all__  # noqa: F401
