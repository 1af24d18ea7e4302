"""``tf.keras.experimental`` (TF 1.14/1.15): ``export_saved_model``."""

from engine.keras.saving import export_saved_model

__all__ = ["export_saved_model"]
