"""The ``engine.strings`` namespace (TF's ``tf.strings``), for the ops implemented."""

from engine.ops.string_ops import as_string, string_to_number, substr  # noqa: F401

to_number = string_to_number
as_string = as_string
