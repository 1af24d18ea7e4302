"""The ``engine.io`` namespace (TF's ``tf.io``), for what is implemented: parsing
serialized ``tf.Example``s into dense and sparse tensors, decoding, image codecs and files."""

from engine.decode_ops import (
    decode_csv,
    decode_raw,
    encode_base64,
    parse_tensor,
    serialize_tensor,
)
from engine.file_io import snake_case_namespace as _gfile_namespace
from engine.image_codec_ops import (
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
    read_file,
    write_file,
)
from engine.ops.string_ops import decode_base64
from engine.parsing import (
    FixedLenFeature,
    SparseFeature,
    VarLenFeature,
    parse_example,
    parse_single_example,
)
from engine.python_io import (
    TFRecordCompressionType,
    TFRecordOptions,
    TFRecordWriter,
    tf_record_iterator,
)

__all__ = [
    "FixedLenFeature",
    "SparseFeature",
    "VarLenFeature",
    "parse_example",
    "parse_single_example",
    "gfile",
    "TFRecordCompressionType",
    "TFRecordOptions",
    "TFRecordWriter",
    "tf_record_iterator",
    "decode_base64",
    "decode_csv",
    "decode_raw",
    "encode_base64",
    "parse_tensor",
    "serialize_tensor",
    "decode_and_crop_jpeg",
    "decode_bmp",
    "decode_gif",
    "decode_image",
    "decode_jpeg",
    "decode_png",
    "encode_jpeg",
    "encode_png",
    "extract_jpeg_shape",
    "is_jpeg",
    "read_file",
    "write_file",
]

gfile = _gfile_namespace()  # tf.io.gfile: TF 1.14+'s snake_case file API
