"""The ``engine.strings`` namespace (TF's ``tf.strings``), for the ops implemented."""

from engine.ops.string_hash import string_to_hash_bucket_fast, string_to_hash_bucket_strong
from engine.ops.string_ops import as_string, string_to_number, substr  # noqa: F401
from engine.strings_more import (  # noqa: F401
    join,
    length,
    lower,
    reduce_join,
    regex_full_match,
    regex_replace,
    strip,
    to_hash_bucket,
    upper,
)

to_number = string_to_number
as_string = as_string
to_hash_bucket_fast = string_to_hash_bucket_fast
to_hash_bucket_strong = string_to_hash_bucket_strong
