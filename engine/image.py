"""The ``engine.image`` namespace (TF1's ``tf.image``): the resizes, non-max suppression and
``crop_and_resize``, flips, crops and pads, dtype conversion, colour adjustments and the
JPEG/PNG/GIF/BMP codecs."""

from engine.image_adjust import (  # noqa: F401
    adjust_brightness,
    adjust_contrast,
    adjust_gamma,
    adjust_hue,
    adjust_saturation,
    convert_image_dtype,
    grayscale_to_rgb,
    image_gradients,
    per_image_standardization,
    psnr,
    random_brightness,
    random_contrast,
    random_hue,
    random_saturation,
    rgb_to_grayscale,
    total_variation,
)
from engine.image_codec_ops import (  # noqa: F401
    decode_and_crop_jpeg,
    decode_bmp,
    decode_gif,
    decode_image,
    decode_jpeg,
    decode_png,
    encode_jpeg,
    encode_png,
    extract_jpeg_shape,
    is_jpeg,
)
from engine.image_extra import (  # noqa: F401
    resize_image_with_pad,
    rgb_to_yiq,
    rgb_to_yuv,
    sobel_edges,
    yiq_to_rgb,
    yuv_to_rgb,
)
from engine.image_geometry import (  # noqa: F401
    central_crop,
    crop_to_bounding_box,
    flip_left_right,
    flip_up_down,
    pad_to_bounding_box,
    random_crop,
    random_flip_left_right,
    random_flip_up_down,
    resize_image_with_crop_or_pad,
    rot90,
    transpose,
)
from engine.image_quality import ssim  # noqa: F401
from engine.ops.crop_and_resize import crop_and_resize  # noqa: F401
from engine.ops.detection_ops import (  # noqa: F401
    combined_non_max_suppression,
    non_max_suppression,
    non_max_suppression_overlaps,
    non_max_suppression_padded,
    non_max_suppression_with_scores,
)
from engine.ops.image_boxes import draw_bounding_boxes, sample_distorted_bounding_box  # noqa: F401
from engine.ops.image_color import hsv_to_rgb, rgb_to_hsv  # noqa: F401
from engine.ops.image_ops import (  # noqa: F401
    ResizeMethod,
    resize_area,
    resize_bicubic,
    resize_bilinear,
    resize_images,
    resize_nearest_neighbor,
)
from engine.ops.image_patches import extract_image_patches, extract_patches  # noqa: F401

transpose_image = transpose
resize_with_crop_or_pad = resize_image_with_crop_or_pad
resize_with_pad = resize_image_with_pad
