"""``tf.keras.preprocessing``: ``sequence``, ``text`` and ``image``."""

from engine.keras.preprocessing import image, sequence, text

__all__ = ["image", "sequence", "text"]
