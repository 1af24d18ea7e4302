"""The ``engine.io`` namespace (TF's ``tf.io``), for what is implemented: parsing
serialized ``tf.Example``s into dense and sparse tensors."""

from engine.parsing import (
    FixedLenFeature,
    SparseFeature,
    VarLenFeature,
    parse_example,
    parse_single_example,
)

__all__ = [
    "FixedLenFeature",
    "SparseFeature",
    "VarLenFeature",
    "parse_example",
    "parse_single_example",
]
