"""The ``engine.image`` namespace (TF1's ``tf.image``): the resizes and non-max suppression."""

from engine.ops.image_ops import (  # noqa: F401
    ResizeMethod,
    non_max_suppression,
    non_max_suppression_padded,
    non_max_suppression_with_scores,
    resize_bilinear,
    resize_images,
    resize_nearest_neighbor,
)
