"""The ``engine.image`` namespace (TF1's ``tf.image``): the resizes, non-max suppression and
``crop_and_resize``."""

from engine.ops.crop_and_resize import crop_and_resize  # noqa: F401
from engine.ops.detection_ops import (  # noqa: F401
    combined_non_max_suppression,
    non_max_suppression,
    non_max_suppression_overlaps,
    non_max_suppression_padded,
    non_max_suppression_with_scores,
)
from engine.ops.image_ops import (  # noqa: F401
    ResizeMethod,
    resize_bilinear,
    resize_images,
    resize_nearest_neighbor,
)
