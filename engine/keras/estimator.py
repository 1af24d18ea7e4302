"""``tf.keras.estimator``: ``model_to_estimator``."""

from engine.keras.keras_estimator import model_to_estimator

__all__ = ["model_to_estimator"]
