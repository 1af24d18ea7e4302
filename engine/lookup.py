"""The ``engine.lookup`` namespace (TF's ``tf.lookup``): static hash tables."""

from engine.ops.lookup import (  # noqa: F401
    KeyValueTensorInitializer,
    StaticHashTable,
    TextFileIndex,
    TextFileInitializer,
)
