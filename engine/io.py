"""The ``engine.io`` namespace (TF's ``tf.io``), for what is implemented: parsing
serialized ``tf.Example``s into dense tensors."""

from engine.ops.parsing_ops import FixedLenFeature, VarLenFeature, parse_example

__all__ = ["FixedLenFeature", "VarLenFeature", "parse_example"]
