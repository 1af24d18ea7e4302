"""The ``engine.image`` namespace (TF1's ``tf.image``), for the resizes implemented."""

from engine.ops.image_ops import (  # noqa: F401
    ResizeMethod,
    resize_bilinear,
    resize_images,
    resize_nearest_neighbor,
)
