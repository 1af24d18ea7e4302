"""Image codec and file ops with TensorFlow's op types and attrs: ``DecodeJpeg``,
``DecodeAndCropJpeg``, ``DecodePng``, ``DecodeGif``, ``DecodeBmp``, ``DecodeImage``,
``EncodeJpeg``, ``EncodePng``, ``ExtractJpegShape``, ``ReadFile`` and ``WriteFile``, and
their Python functions (``tf.image.decode_jpeg``, ``tf.io.read_file``, ...).

The kernels run on the host (strings are object arrays of bytes) and are not differentiable.
As in TF, one kernel serves the decoders: ``DecodeJpeg``, ``DecodePng`` and ``DecodeGif``
decode any of JPEG, PNG and GIF (by the magic bytes), ``DecodeBmp`` BMP only, ``DecodeImage``
(TF 2's ``decode_image`` op, found in newer graphs) all four. ``tf.image.decode_image`` builds
TF 1.15's graph: ``tf.cond``s on the magic bytes around the format's own op. The codecs
(``engine/image_codecs.py``, ``engine/jpeg_decoder.py``) need Pillow; without it these ops
raise ``UnimplementedError`` when run (``EncodePng``, BMP decoding, ``ReadFile`` and
``WriteFile`` work without). ``ReadFile`` and ``WriteFile`` are stateful, so a file is read
again at every run.
"""

from __future__ import annotations

import os

import numpy as np

from engine import dtypes, file_io, image_codecs, jpeg_decoder
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Operation, Tensor, control_dependencies, name_scope
from engine.framework.registry import Attr, OpFlags, ShapeError, op
from engine.framework.tensor_util import constant_value
from engine.image_adjust import convert_image_dtype
from engine.image_codecs import invalid
from engine.ops import control_flow, logging_ops, slicing, string_ops
from engine.ops import math as math_ops
from engine.ops._common import create
from engine.tensor_shape import TensorShape, unknown_shape

__all__ = [
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

_CPU = OpFlags(device_types=("CPU",))
_FILES = OpFlags(stateful=True, device_types=("CPU",))
_JPEG_ATTRS = (
    Attr("channels", "int", default=0),
    Attr("ratio", "int", default=1),
    Attr("fancy_upscaling", "bool", default=True),
    Attr("try_recover_truncated", "bool", default=False),
    Attr("acceptable_fraction", "float", default=1.0),
    Attr("dct_method", "string", default=""),
)


def _scalar_bytes(a, what: str = "contents") -> bytes:
    a = np.asarray(a)
    if a.ndim:
        raise invalid(f"`{what}` must be scalar but got shape{list(a.shape)}")
    v = a.item()
    return v if isinstance(v, bytes) else str(v).encode("utf-8")


def _string_scalar(v: bytes) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = v
    return out


# -- static shapes ----------------------------------------------------------------------------


def _check_scalar_string(o, i: int = 0) -> None:
    t = o._inputs[i]
    if t._dtype.base_dtype is not dtypes.string:
        raise TypeError(f"{o.type} takes a string tensor, got {t._dtype.name}")
    if t._shape.rank not in (None, 0):
        raise ShapeError(f"Shape must be rank 0 but is rank {t._shape.rank}")


def _channels_dim(o):
    channels = o._attrs["channels"]
    if channels < 0:
        raise ShapeError(f"channels must be non-negative, got {channels}")
    return channels or None


def _decode_infer(o):
    """DecodeJpeg, DecodePng, DecodeBmp: [height, width, channels or unknown]."""
    _check_scalar_string(o)
    dtype = o._attrs.get("dtype", dtypes.uint8)
    return [(dtype, TensorShape([None, None, _channels_dim(o)]))]


def _crop_infer(o):
    _check_scalar_string(o)
    window = o._inputs[1]
    if window._dtype.base_dtype is not dtypes.int32:
        raise TypeError(f"DecodeAndCropJpeg's crop_window must be int32, got {window._dtype.name}")
    if window._shape.rank not in (None, 1):
        raise ShapeError(f"Shape must be rank 1 but is rank {window._shape.rank}")
    if window._shape.rank == 1 and window._shape[0].value not in (None, 4):
        raise ShapeError(f"Dimension must be 4 but is {window._shape[0].value}")
    height = width = None
    value = constant_value(window)
    if value is not None and np.size(value) == 4:  # a constant window fixes the size
        height, width = (int(v) if v >= 0 else None for v in np.asarray(value).reshape(4)[2:])
    return [(dtypes.uint8, TensorShape([height, width, _channels_dim(o)]))]


def _decode_image_infer(o):
    _check_scalar_string(o)
    dtype = o._attrs["dtype"]
    if dtype not in (dtypes.uint8, dtypes.uint16, dtypes.float32):
        raise TypeError(f"DecodeImage's dtype must be uint8, uint16 or float32, got {dtype.name}")
    if o._attrs["expand_animations"]:
        _channels_dim(o)
        return [(dtype, unknown_shape())]
    return [(dtype, TensorShape([None, None, _channels_dim(o)]))]


def _png_dtype_infer(o):
    if o._attrs["dtype"] not in (dtypes.uint8, dtypes.uint16):
        raise TypeError(f"DecodePng's dtype must be uint8 or uint16, got {o._attrs['dtype'].name}")
    return _decode_infer(o)


def _encode_jpeg_infer(o):
    image = o._inputs[0]
    if image._dtype.base_dtype is not dtypes.uint8:
        raise TypeError(
            f"Value passed to parameter 'image' has DataType {image._dtype.name} not in list of "
            "allowed values: uint8"
        )
    if image._shape.rank not in (None, 3):
        raise ShapeError(f"Shape must be rank 3 but is rank {image._shape.rank}")
    for attr, allowed in (("format", ("", "grayscale", "rgb")), ("density_unit", ("in", "cm"))):
        if o._attrs[attr] not in allowed:
            raise ValueError(
                f"Value for attr '{attr}' of {o._attrs[attr]!r} is not in the list of allowed "
                f"values: {', '.join(repr(a) for a in allowed)}"
            )
    return [(dtypes.string, TensorShape([]))]


def _encode_png_infer(o):
    image = o._inputs[0]
    if image._dtype.base_dtype not in (dtypes.uint8, dtypes.uint16):
        raise TypeError(
            f"Value passed to parameter 'image' has DataType {image._dtype.name} not in list of "
            "allowed values: uint8, uint16"
        )
    rank = image._shape.rank
    if rank is None:
        return [(dtypes.string, unknown_shape())]
    if rank < 3:
        raise ShapeError(f"Shape must be at least rank 3 but is rank {rank}")
    return [(dtypes.string, TensorShape(image._shape.dims[:-3]))]


def _extract_infer(o):
    _check_scalar_string(o)
    if o._attrs["output_type"] not in (dtypes.int32, dtypes.int64):
        raise TypeError("ExtractJpegShape's output_type must be int32 or int64")
    return [(o._attrs["output_type"], TensorShape([3]))]


# -- the decoding kernel (TF's DecodeImageV2Op) ------------------------------------------------


def _convert(pixels: np.ndarray, dtype) -> np.ndarray:
    """uint8 or uint16 pixels as ``dtype``, scaled as TF's decoders scale them."""
    if dtype is dtypes.uint8 or pixels.dtype == dtype.np:
        return pixels
    if dtype is dtypes.uint16:
        return pixels.astype(np.uint16) * np.uint16(256)
    top = 255 if pixels.dtype == np.uint8 else 65535
    return pixels.astype(np.float32) * np.float32(1.0 / top)


def _check_attrs(op_type: str, channels: int, ratio: int, dct_method: str) -> None:
    """What TF's kernel checks when it is constructed."""
    if op_type in ("DecodeJpeg", "DecodeAndCropJpeg"):
        if ratio not in (1, 2, 4, 8):
            raise invalid(f"ratio must be 1, 2, 4, or 8, got {ratio}")
        if dct_method not in ("", "INTEGER_FAST", "INTEGER_ACCURATE"):
            raise invalid("dct_method must be one of {'', 'INTEGER_FAST', 'INTEGER_ACCURATE'}")
    if channels not in (0, 1, 3, 4):
        raise invalid(f"`channels` must be 0, 1, 3 or 4 but got {channels}")


def _decode(
    op_type: str,
    contents,
    *,
    channels: int = 0,
    dtype=dtypes.uint8,
    crop=None,
    expand_animations: bool = True,
    ratio: int = 1,
    fancy_upscaling: bool = True,
    dct_method: str = "",
) -> np.ndarray:
    """One image decoded as TF's DecodeImageV2Op decodes it for ``op_type``."""
    _check_attrs(op_type, channels, ratio, dct_method)
    if op_type == "DecodeGif":  # no channels attr: its kernel decodes everything as RGB
        channels = 3
    data = _scalar_bytes(contents)
    if not data:
        raise invalid("Input is empty.")
    fmt = image_codecs.image_format(data)
    if fmt is None:
        raise invalid("Unknown image file format. One of JPEG, PNG, GIF, BMP required.")
    _check_op_decodes(op_type, fmt, channels)
    if fmt == "jpeg":
        pixels = jpeg_decoder.decode_jpeg(
            data,
            channels=channels,
            ratio=ratio,
            fancy_upscaling=fancy_upscaling,
            dct_method=dct_method,
            crop=crop,
        )
    elif fmt == "png":
        pixels = image_codecs.decode_png(data, channels, 8 if dtype is dtypes.uint8 else 16)
    elif fmt == "bmp":
        pixels = image_codecs.decode_bmp(data, channels)
    else:
        animated = op_type == "DecodeGif" or op_type == "DecodeImage" and expand_animations
        if op_type in ("DecodePng", "DecodeJpeg"):
            frames = image_codecs.gif_frame_count(data)
            if frames != 1:
                raise invalid(
                    f"Got {frames} frames, but animated gifs can only be decoded by "
                    "tf.io.decode_gif or tf.io.decode_image"
                )
        pixels = image_codecs.decode_gif(data, first_only=not animated)
        return _convert(pixels if animated else pixels[0], dtype)
    return _convert(pixels[None] if op_type == "DecodeGif" else pixels, dtype)


def _check_op_decodes(op_type: str, fmt: str, channels: int) -> None:
    """TF's checks, in its order, of what each decoding op accepts for each format."""
    name = fmt.upper()
    if fmt == "jpeg" and channels == 4:
        raise invalid("JPEG does not support 4 channels")
    if fmt == "gif" and channels not in (0, 3):
        raise invalid(f"channels must be 0 or 3 for GIF, got {channels}")
    if fmt == "bmp":
        if channels == 1:
            raise invalid(f"`channels` must be 0, 3 or 4 for BMP, but got {channels}")
    elif op_type == "DecodeBmp":
        raise invalid(
            f"Trying to decode {name} format using DecodeBmp op. Use `decode_{fmt}` or "
            "`decode_image` instead."
        )
    if op_type == "DecodeAndCropJpeg" and fmt != "jpeg":
        raise invalid(f"DecodeAndCropJpeg operation can run on JPEG only, but detected {name}.")
    if fmt == "bmp" and op_type not in ("DecodeBmp", "DecodeImage"):
        raise invalid(
            "Trying to decode BMP format using a wrong op. Use `decode_bmp` or "
            f"`decode_image` instead. Op used: {op_type}"
        )


@op(
    "DecodeJpeg",
    infer=_decode_infer,
    differentiable=False,
    inputs=("contents",),
    attrs=_JPEG_ATTRS,
    flags=_CPU,
)
def _decode_jpeg_kernel(
    xp,
    contents,
    *,
    channels=0,
    ratio=1,
    fancy_upscaling=True,
    try_recover_truncated=False,
    acceptable_fraction=1.0,
    dct_method="",
):
    return _decode(
        "DecodeJpeg",
        contents,
        channels=channels,
        ratio=ratio,
        fancy_upscaling=fancy_upscaling,
        dct_method=dct_method,
    )


@op(
    "DecodeAndCropJpeg",
    infer=_crop_infer,
    differentiable=False,
    inputs=("contents", "crop_window"),
    attrs=_JPEG_ATTRS,
    flags=OpFlags(device_types=("CPU",), host_inputs=(1,)),
)
def _decode_and_crop_jpeg_kernel(
    xp,
    contents,
    crop_window,
    *,
    channels=0,
    ratio=1,
    fancy_upscaling=True,
    try_recover_truncated=False,
    acceptable_fraction=1.0,
    dct_method="",
):
    window = np.asarray(crop_window)
    if window.ndim != 1:
        raise invalid(f"crop_window must be 1-D, got shape {list(window.shape)}")
    if window.size != 4:
        raise invalid(f"crop_size must have four elements {list(window.shape)}")
    return _decode(
        "DecodeAndCropJpeg",
        contents,
        channels=channels,
        ratio=ratio,
        fancy_upscaling=fancy_upscaling,
        dct_method=dct_method,
        crop=tuple(int(v) for v in window),
    )


@op(
    "DecodePng",
    infer=_png_dtype_infer,
    differentiable=False,
    inputs=("contents",),
    attrs=(Attr("channels", "int", default=0), Attr("dtype", "type", default=dtypes.uint8)),
    flags=_CPU,
)
def _decode_png_kernel(xp, contents, *, channels=0, dtype=dtypes.uint8):
    return _decode("DecodePng", contents, channels=channels, dtype=dtype)


@op(
    "DecodeGif",
    infer=lambda o: (
        _check_scalar_string(o),
        [(dtypes.uint8, TensorShape([None, None, None, 3]))],
    )[1],
    differentiable=False,
    inputs=("contents",),
    flags=_CPU,
)
def _decode_gif_kernel(xp, contents):
    return _decode("DecodeGif", contents)


@op(
    "DecodeBmp",
    infer=_decode_infer,
    differentiable=False,
    inputs=("contents",),
    attrs=(Attr("channels", "int", default=0),),
    flags=_CPU,
)
def _decode_bmp_kernel(xp, contents, *, channels=0):
    return _decode("DecodeBmp", contents, channels=channels)


@op(
    "DecodeImage",
    infer=_decode_image_infer,
    differentiable=False,
    inputs=("contents",),
    attrs=(
        Attr("channels", "int", default=0),
        Attr("dtype", "type", default=dtypes.uint8),
        Attr("expand_animations", "bool", default=True),
    ),
    flags=_CPU,
)
def _decode_image_kernel(xp, contents, *, channels=0, dtype=dtypes.uint8, expand_animations=True):
    return _decode(
        "DecodeImage", contents, channels=channels, dtype=dtype, expand_animations=expand_animations
    )


@op(
    "ExtractJpegShape",
    infer=_extract_infer,
    differentiable=False,
    inputs=("contents",),
    attrs=(Attr("output_type", "type", default=dtypes.int32),),
    flags=_CPU,
)
def _extract_jpeg_shape_kernel(xp, contents, *, output_type=dtypes.int32):
    data = _scalar_bytes(contents)
    if image_codecs.image_format(data) != "jpeg":
        raise invalid(f"Invalid JPEG data, size {len(data)}")
    return np.array(jpeg_decoder.jpeg_shape(data), output_type.np)


# -- encoding ---------------------------------------------------------------------------------


@op(
    "EncodeJpeg",
    infer=_encode_jpeg_infer,
    differentiable=False,
    inputs=("image",),
    attrs=(
        Attr("format", "string", default=""),
        Attr("quality", "int", default=95),
        Attr("progressive", "bool", default=False),
        Attr("optimize_size", "bool", default=False),
        Attr("chroma_downsampling", "bool", default=True),
        Attr("density_unit", "string", default="in"),
        Attr("x_density", "int", default=300),
        Attr("y_density", "int", default=300),
        Attr("xmp_metadata", "string", default=""),
    ),
    flags=_CPU,
)
def _encode_jpeg_kernel(
    xp,
    image,
    *,
    format="",  # noqa: A002 - TF's attr name
    quality=95,
    progressive=False,
    optimize_size=False,
    chroma_downsampling=True,
    density_unit="in",
    x_density=300,
    y_density=300,
    xmp_metadata="",
):
    image = np.asarray(image)
    if image.ndim != 3:
        raise invalid(f"image must be 3-dimensional{list(image.shape)}")
    data = image_codecs.encode_jpeg(
        image,
        format=format,
        quality=quality,
        progressive=progressive,
        optimize_size=optimize_size,
        chroma_downsampling=chroma_downsampling,
        density_unit=density_unit,
        x_density=x_density,
        y_density=y_density,
        xmp_metadata=xmp_metadata,
    )
    return _string_scalar(data)


@op(
    "EncodePng",
    infer=_encode_png_infer,
    differentiable=False,
    inputs=("image",),
    attrs=(Attr("compression", "int", default=-1),),
    flags=_CPU,
)
def _encode_png_kernel(xp, image, *, compression=-1):
    image = np.asarray(image)
    if image.ndim < 3:
        raise invalid(f"image must be at least 3-dimensional{list(image.shape)}")
    batch = image.shape[:-3]
    flat = image.reshape(-1, *image.shape[-3:])
    out = np.empty(len(flat), dtype=object)
    for i, one in enumerate(flat):
        out[i] = image_codecs.encode_png(one, compression)
    return out.reshape(batch)


# -- files ------------------------------------------------------------------------------------


def _path(filename) -> str:
    return os.fsdecode(_scalar_bytes(filename, "filename"))


@op(
    "ReadFile",
    infer=lambda o: (_check_scalar_string(o), [(dtypes.string, TensorShape([]))])[1],
    differentiable=False,
    inputs=("filename",),
    flags=_FILES,
)
def _read_file_kernel(xp, filename):
    with file_io.GFile(_path(filename), "rb") as f:
        return _string_scalar(f.read())


@op(
    "WriteFile",
    infer=lambda o: (_check_scalar_string(o, 0), _check_scalar_string(o, 1), [])[2],
    differentiable=False,
    inputs=("filename", "contents"),
    flags=_FILES,
)
def _write_file_kernel(xp, filename, contents):
    path = _path(filename)
    if os.path.dirname(path):
        file_io.makedirs(os.path.dirname(path))
    with file_io.GFile(path, "wb") as f:
        f.write(_scalar_bytes(contents))


# -- Python API -------------------------------------------------------------------------------


def _contents(contents) -> Tensor:
    return convert_to_tensor(contents, dtype=dtypes.string, name="contents")


def _jpeg_attrs(
    channels, ratio, fancy_upscaling, try_recover_truncated, acceptable_fraction, dct_method
):
    return {
        "channels": int(channels),
        "ratio": int(ratio),
        "fancy_upscaling": bool(fancy_upscaling),
        "try_recover_truncated": bool(try_recover_truncated),
        "acceptable_fraction": float(acceptable_fraction),
        "dct_method": dct_method or "",
    }


def decode_jpeg(
    contents,
    channels=0,
    ratio=1,
    fancy_upscaling=True,
    try_recover_truncated=False,
    acceptable_fraction=1,
    dct_method="",
    name=None,
) -> Tensor:
    """Decodes a JPEG (or PNG, or single-frame GIF) to a ``[height, width, channels]`` uint8
    tensor: ``channels`` 0 as stored, 1 gray, 3 RGB; ``ratio`` 1, 2, 4 or 8 downscales while
    decoding; ``dct_method`` "" or "INTEGER_FAST" (TF's fast default) or "INTEGER_ACCURATE".

    The engine refuses truncated JPEGs: ``try_recover_truncated`` and ``acceptable_fraction``
    are accepted and recorded, but a partial image is never returned."""
    with name_scope(name, "DecodeJpeg", [contents]) as scope:
        attrs = _jpeg_attrs(
            channels, ratio, fancy_upscaling, try_recover_truncated, acceptable_fraction, dct_method
        )
        return create("DecodeJpeg", [_contents(contents)], attrs, scope).outputs[0]


def decode_and_crop_jpeg(
    contents,
    crop_window,
    channels=0,
    ratio=1,
    fancy_upscaling=True,
    try_recover_truncated=False,
    acceptable_fraction=1,
    dct_method="",
    name=None,
) -> Tensor:
    """``decode_jpeg`` of the window ``crop_window`` = [y, x, height, width] (int32, in the
    scaled image's pixels), decoding only the MCUs it covers, as TF does."""
    with name_scope(name, "DecodeAndCropJpeg", [contents, crop_window]) as scope:
        window = convert_to_tensor(crop_window, dtype=dtypes.int32, name="crop_window")
        attrs = _jpeg_attrs(
            channels, ratio, fancy_upscaling, try_recover_truncated, acceptable_fraction, dct_method
        )
        return create("DecodeAndCropJpeg", [_contents(contents), window], attrs, scope).outputs[0]


def decode_png(contents, channels=0, dtype=dtypes.uint8, name=None) -> Tensor:
    """Decodes a PNG (or JPEG, or single-frame GIF) to ``[height, width, channels]`` uint8 or
    uint16: ``channels`` 0 as stored, 1 gray, 3 RGB, 4 RGBA (alpha added or dropped)."""
    dtype = dtypes.as_dtype(dtype).base_dtype
    if dtype not in (dtypes.uint8, dtypes.uint16):
        raise TypeError(
            f"Value for attr 'dtype' of {dtype.name} is not in the list of allowed values: "
            "uint8, uint16"
        )
    with name_scope(name, "DecodePng", [contents]) as scope:
        attrs = {"channels": int(channels), "dtype": dtype}
        return create("DecodePng", [_contents(contents)], attrs, scope).outputs[0]


def decode_gif(contents, name=None) -> Tensor:
    """Decodes a GIF's frames to ``[frames, height, width, 3]`` uint8, each frame drawn over
    the previous one (TF's compositing: transparent pixels keep the previous frame)."""
    with name_scope(name, "DecodeGif", [contents]) as scope:
        return create("DecodeGif", [_contents(contents)], {}, scope).outputs[0]


def decode_bmp(contents, channels=0, name=None) -> Tensor:
    """Decodes an uncompressed 8, 24 or 32-bit BMP to ``[height, width, channels]`` uint8
    (``channels`` 0 as stored, 3 RGB, 4 RGBA)."""
    with name_scope(name, "DecodeBmp", [contents]) as scope:
        attrs = {"channels": int(channels)}
        return create("DecodeBmp", [_contents(contents)], attrs, scope).outputs[0]


def extract_jpeg_shape(contents, output_type=dtypes.int32, name=None) -> Tensor:
    """A JPEG's ``[height, width, components]`` from its header, nothing decoded."""
    with name_scope(name, "ExtractJpegShape", [contents]) as scope:
        attrs = {"output_type": dtypes.as_dtype(output_type).base_dtype}
        return create("ExtractJpegShape", [_contents(contents)], attrs, scope).outputs[0]


def encode_jpeg(
    image,
    format="",  # noqa: A002 - TF's argument name
    quality=95,
    progressive=False,
    optimize_size=False,
    chroma_downsampling=True,
    density_unit="in",
    x_density=300,
    y_density=300,
    xmp_metadata="",
    name=None,
) -> Tensor:
    """JPEG-encodes a ``[height, width, 1 or 3]`` uint8 image to a scalar string."""
    with name_scope(name, "EncodeJpeg", [image]) as scope:
        attrs = {
            "format": format,
            "quality": int(quality),
            "progressive": bool(progressive),
            "optimize_size": bool(optimize_size),
            "chroma_downsampling": bool(chroma_downsampling),
            "density_unit": density_unit,
            "x_density": int(x_density),
            "y_density": int(y_density),
            "xmp_metadata": xmp_metadata,
        }
        image = convert_to_tensor(image, name="image")
        return create("EncodeJpeg", [image], attrs, scope).outputs[0]


def encode_png(image, compression=-1, name=None) -> Tensor:
    """PNG-encodes ``[..., height, width, 1..4]`` uint8 or uint16 images (one string per
    image); ``compression`` is zlib's level, -1 its default."""
    with name_scope(name, "EncodePng", [image]) as scope:
        image = convert_to_tensor(image, name="image")
        attrs = {"compression": int(compression)}
        return create("EncodePng", [image], attrs, scope).outputs[0]


def is_jpeg(contents, name=None) -> Tensor:
    """Whether ``contents`` starts as a JPEG does (``\\xff\\xd8\\xff``); a scalar bool."""
    with name_scope(name, "is_jpeg"):
        substr = string_ops.substr(contents, 0, 3)
        return math_ops.equal(substr, b"\xff\xd8\xff", name=name)


def _is_png(contents, name=None) -> Tensor:
    with name_scope(name, "is_png"):
        substr = string_ops.substr(contents, 0, 3)
        return math_ops.equal(substr, b"\211PN", name=name)


def decode_image(contents, channels=None, dtype=dtypes.uint8, name=None, expand_animations=True):
    """Decodes a BMP, GIF, JPEG or PNG by its magic bytes, converted to ``dtype`` as
    ``convert_image_dtype`` does; GIFs are ``[frames, h, w, 3]`` unless not
    ``expand_animations`` (then their first frame).

    The graph is TF 1.15's: nested ``tf.cond``s on the first bytes choosing ``DecodeJpeg``,
    ``DecodePng``, ``DecodeGif`` or ``DecodeBmp``, with ``Assert``s for channels a format
    cannot give (so the BMP and GIF branches ignore ``channels``, as TF 1.15's did)."""
    dtype = dtypes.as_dtype(dtype).base_dtype
    with name_scope(name, "decode_image"):
        if channels not in (None, 0, 1, 3, 4):
            raise ValueError("channels must be in (None, 0, 1, 3, 4)")
        contents = convert_to_tensor(contents, dtype=dtypes.string, name="contents")
        substr = string_ops.substr(contents, 0, 3)

        def _bmp():
            signature = string_ops.substr(contents, 0, 2)
            is_bmp = math_ops.equal(signature, "BM", name="is_bmp")
            decode_msg = "Unable to decode bytes as JPEG, PNG, GIF, or BMP"
            assert_decode = logging_ops.Assert(is_bmp, [decode_msg])
            bmp_channels = 0 if channels is None else channels
            good_channels = math_ops.not_equal(bmp_channels, 1, name="check_channels")
            channels_msg = "Channels must be in (None, 0, 3) when decoding BMP images"
            assert_channels = logging_ops.Assert(good_channels, [channels_msg])
            with control_dependencies([assert_decode, assert_channels]):
                return convert_image_dtype(decode_bmp(contents), dtype)

        def _gif():
            gif_channels = 0 if channels is None else channels
            good_channels = math_ops.logical_and(
                math_ops.not_equal(gif_channels, 1, name="check_gif_channels"),
                math_ops.not_equal(gif_channels, 4, name="check_gif_channels"),
            )
            channels_msg = "Channels must be in (None, 0, 3) when decoding GIF images"
            assert_channels = logging_ops.Assert(good_channels, [channels_msg])
            with control_dependencies([assert_channels]):
                result = convert_image_dtype(decode_gif(contents), dtype)
                if not expand_animations:
                    result = slicing.gather(result, 0)
                return result

        def check_gif():
            is_gif = math_ops.equal(substr, b"\x47\x49\x46", name="is_gif")
            return control_flow.cond(is_gif, _gif, _bmp, name="cond_gif")

        def _png():
            png_dtype = dtypes.uint8 if dtype is dtypes.uint8 else dtypes.uint16
            return convert_image_dtype(decode_png(contents, channels or 0, dtype=png_dtype), dtype)

        def check_png():
            return control_flow.cond(_is_png(contents), _png, check_gif, name="cond_png")

        def _jpeg():
            jpeg_channels = 0 if channels is None else channels
            good_channels = math_ops.not_equal(jpeg_channels, 4, name="check_jpeg_channels")
            channels_msg = "Channels must be in (None, 0, 1, 3) when decoding JPEG images"
            assert_channels = logging_ops.Assert(good_channels, [channels_msg])
            with control_dependencies([assert_channels]):
                return convert_image_dtype(decode_jpeg(contents, channels or 0), dtype)

        return control_flow.cond(is_jpeg(contents), _jpeg, check_png, name="cond_jpeg")


def read_file(filename, name=None) -> Tensor:
    """The bytes of file ``filename`` (a scalar string), read each time the op runs;
    ``NotFoundError`` naming the file when it does not exist."""
    with name_scope(name, "ReadFile", [filename]) as scope:
        f = convert_to_tensor(filename, dtype=dtypes.string, name="filename")
        return create("ReadFile", [f], {}, scope).outputs[0]


def write_file(filename, contents, name=None) -> Operation:
    """An op writing ``contents`` to file ``filename`` (creating its directory), replacing it."""
    with name_scope(name, "WriteFile", [filename, contents]) as scope:
        f = convert_to_tensor(filename, dtype=dtypes.string, name="filename")
        c = convert_to_tensor(contents, dtype=dtypes.string, name="contents")
        return create("WriteFile", [f, c], {}, scope)
