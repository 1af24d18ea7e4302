"""``tf.keras.preprocessing.text`` (see :mod:`engine.keras.preprocessing_text`)."""

from engine.keras.preprocessing_text import *  # noqa: F403
from engine.keras.preprocessing_text import __all__  # noqa: F401
