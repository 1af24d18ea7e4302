"""``tf.keras.constraints``: projections applied to a variable after each optimizer step."""

from engine.keras.regularizers import MaxNorm, MinMaxNorm, NonNeg, UnitNorm
from engine.keras.regularizers import get_constraint as get

max_norm, non_neg, unit_norm, min_max_norm = MaxNorm, NonNeg, UnitNorm, MinMaxNorm

__all__ = [
    "MaxNorm",
    "MinMaxNorm",
    "NonNeg",
    "UnitNorm",
    "get",
    "max_norm",
    "min_max_norm",
    "non_neg",
    "unit_norm",
]
