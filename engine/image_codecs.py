"""Image codecs as TensorFlow's image ops compute them: PNG, GIF and BMP decoding, JPEG and
PNG encoding, and the access to Pillow they and ``engine/jpeg_decoder.py`` share.

Pillow (an optional dependency: ``pip install flowserve[image]``) does the entropy coding
(libjpeg-turbo, zlib inflation and PNG unfiltering, GIF's LZW); what TensorFlow does on top
of its libraries is reproduced here with numpy, so that values match TensorFlow's:

- PNG: Pillow hands back the stored samples (16-bit ones through byte-order tricks, as its
  modes are 8-bit), then libpng's transformations as TF's ``png_io.cc`` requests them (palette
  and tRNS expansion, alpha added or stripped, ``rgb_to_gray`` with libpng's integer weights,
  16-to-8 bits by dropping the low byte, 8-to-16 by ``v * 257``).
- GIF: giflib's frames are composited as TF's ``gif_io.cc`` does (each frame drawn over the
  previous one, transparent pixels left, no disposal; the canvas is the largest frame), so
  the container is walked here and each frame's LZW data decoded by Pillow on its own.
- BMP: TF reads uncompressed 8/24/32-bit pixel rows itself (no palette, the fourth byte as
  alpha); so does ``decode_bmp`` here, with numpy.
- JPEG encoding is Pillow's (the same libjpeg-turbo settings TF passes); PNG encoding is zlib
  with libpng's adaptive row filters, and needs no Pillow.

Every function takes and returns numpy arrays or bytes and raises TF's error types with TF's
messages; the op kernels in ``engine/image_codec_ops.py`` call them.
"""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np

from engine import errors

try:
    from PIL import Image
except ImportError:  # optional: pip install flowserve[image]
    Image = None

__all__ = [
    "MAX_DECODED_BYTES",
    "decode_bmp",
    "decode_gif",
    "decode_png",
    "encode_jpeg",
    "encode_png",
    "gif_frame_count",
    "image_format",
    "invalid",
    "pillow",
]

# The largest decoded image accepted, in bytes: TF's own bound for JPEG and PNG (2**29).
# Larger images are refused from their headers, before anything is allocated.
MAX_DECODED_BYTES = 1 << 29

_MAGIC = (
    (b"\xff\xd8\xff", "jpeg"),
    (b"\x89PNG\r\n\x1a\n", "png"),
    (b"GIF8", "gif"),
    (b"BM", "bmp"),
)
# What Pillow raises for data it cannot decode (UnidentifiedImageError is an OSError).
_PILLOW_ERRORS = (OSError, SyntaxError, ValueError, EOFError, struct.error, IndexError)


def invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def image_format(data: bytes) -> str | None:
    """ "jpeg", "png", "gif" or "bmp" by the magic bytes TF checks, else None."""
    for magic, name in _MAGIC:
        if data.startswith(magic):
            return name
    return None


def pillow():
    """Pillow's ``Image`` module; ``UnimplementedError`` saying how to install it when Pillow
    is missing (``Image`` is None)."""
    if Image is None:
        raise errors.UnimplementedError(
            None,
            None,
            "Decoding and encoding JPEG, PNG and GIF images needs Pillow, which is not "
            "installed: pip install flowserve[image]",
        )
    return Image


def open_image(data: bytes, fmt: str, message: str):
    """Pillow's lazily decoded image of ``data`` (headers read, no pixels yet); ``message``
    is the InvalidArgumentError raised when Pillow cannot read it."""
    image = pillow()
    try:
        return image.open(io.BytesIO(data), formats=[fmt])
    except (*_PILLOW_ERRORS, image.DecompressionBombError):
        raise invalid(message) from None


def load_pixels(im, message: str) -> np.ndarray:
    """The pixels of a Pillow image from ``open_image``; ``message`` on undecodable data."""
    try:
        im.load()
        return np.asarray(im)
    except (*_PILLOW_ERRORS, pillow().DecompressionBombError):
        raise invalid(message) from None


def check_size(shape, itemsize: int, message: str) -> None:
    """Refuses a decoded size of ``MAX_DECODED_BYTES`` or more (from the header)."""
    if int(np.prod(shape, dtype=np.int64)) * itemsize >= MAX_DECODED_BYTES:
        raise invalid(message)


def _retile(im, rawmode: str, mode: str, size=None, decoderconfig=None) -> None:
    """Makes Pillow decode ``im`` with another raw mode (and size, decoder settings), as
    Pillow's own ``draft`` does."""
    name, extents, offset, _ = im.tile[0]
    if size is not None:
        extents = (0, 0, *size)
        im._size = size
    im.tile = [(name, extents, offset, rawmode if name == "zip" else (rawmode, ""))]
    im._mode = mode
    if decoderconfig is not None:
        im.decoderconfig = decoderconfig


# -- PNG --------------------------------------------------------------------------------------

_PNG_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}  # libpng's channels by colour type
# libpng's rgb_to_gray weights for TF's (0.299, 0.587): (red, green, 32768 - red - green).
_GRAY_RED, _GRAY_GREEN = 29900 * 32768 // 100000, 58700 * 32768 // 100000
_GRAY_BLUE = 32768 - _GRAY_RED - _GRAY_GREEN


def _png_header(data: bytes) -> tuple[int, int, int, int]:
    """(width, height, bit depth, colour type) from the IHDR chunk."""
    if len(data) < 33 or data[12:16] != b"IHDR":
        raise invalid("Invalid PNG. Failed to initialize decoder.")
    width, height, depth, colour = struct.unpack(">IIBB", data[16:26])
    if (colour, depth) not in {
        (0, 1), (0, 2), (0, 4), (0, 8), (0, 16), (2, 8), (2, 16), (3, 1), (3, 2), (3, 4),
        (3, 8), (4, 8), (4, 16), (6, 8), (6, 16),
    } or not width or not height:  # fmt: skip
        raise invalid("Invalid PNG. Failed to initialize decoder.")
    return width, height, depth, colour


def _png_samples(data: bytes, depth: int, colour: int):
    """The stored samples ([h, w, channels], uint8 or uint16; gray below 8 bits scaled to
    8 as libpng expands it; palette images as indices), and Pillow's image info."""
    bad = f"Invalid PNG data, size {len(data)}"
    init = "Invalid PNG. Failed to initialize decoder."
    im = open_image(data, "PNG", init)
    info = dict(im.info)
    if depth < 16:
        a = load_pixels(im, bad)
        a = a.astype(np.uint8) * 255 if a.dtype == bool else a
        return a.reshape(*a.shape[:2], -1), info, im
    if colour == 0:  # Pillow's I;16 keeps 16 bits
        return load_pixels(im, bad).astype(np.uint16)[:, :, None], info, im
    if colour == 4:  # gray+alpha: 4 bytes a pixel, read as 8-bit RGBA
        _retile(im, "RGBA", "RGBA")
        b = load_pixels(im, bad).astype(np.uint16)
        return np.stack([b[..., 0] << 8 | b[..., 1], b[..., 2] << 8 | b[..., 3]], -1), info, im
    # RGB(A): Pillow keeps the high bytes; reading the same rows as little-endian gives the
    # low ones.
    mode = "RGB" if colour == 2 else "RGBA"
    high = load_pixels(im, bad).astype(np.uint16)
    im = open_image(data, "PNG", init)
    _retile(im, f"{mode};16L", mode)
    low = load_pixels(im, bad).astype(np.uint16)
    return high << 8 | low, info, im


def _png_gamma(info: dict) -> int:
    """The file gamma libpng uses (times 100000): sRGB's, else gAMA's, else 1."""
    if "srgb" in info:
        return 45455
    return round(info["gamma"] * 100000) if "gamma" in info else 100000


def decode_png(data: bytes, channels: int = 0, bits: int = 8) -> np.ndarray:
    """A PNG as TF's DecodePng: ``[h, w, channels]`` (0: the file's, palettes RGB or RGBA),
    uint8 (``bits`` 8) or uint16 (16)."""
    width, height, depth, colour = _png_header(data)
    if width >= 1 << 27 or height >= 1 << 27 or width * height >= 1 << 29:
        raise invalid(f"PNG size too large for int: {width} by {height}")
    samples, info, im = _png_samples(data, depth, colour)
    trns = info.get("transparency")
    if channels:
        out_channels = channels
    elif colour == 3:
        out_channels = 4 if trns is not None else 3
    else:
        out_channels = _PNG_CHANNELS[colour]
    maximum = 65535 if depth == 16 else 255
    alpha = None
    if colour == 3:
        palette = np.zeros((256, 3), np.uint8)
        entries = np.frombuffer(bytes(im.getpalette("RGB") or ()), np.uint8).reshape(-1, 3)
        palette[: len(entries)] = entries[:256]
        table = np.full(256, 255, np.uint8)
        if isinstance(trns, bytes):
            table[: len(trns)] = np.frombuffer(trns[:256], np.uint8)
        elif trns is not None:
            table[int(trns)] = 0
        index = samples[:, :, 0]
        color = palette[index]
        alpha = table[index] if trns is not None else None
    else:
        color = samples[:, :, :1] if colour in (0, 4) else samples[:, :, :3]
        if colour in (4, 6):
            alpha = samples[:, :, -1]
        elif trns is not None:
            key = np.asarray(trns if isinstance(trns, tuple) else (trns,), np.int64)
            if colour == 0 and 1 < depth < 8:  # compared at 8 bits, as expanded
                key = key * (255 // ((1 << depth) - 1))
            alpha = np.where((color == key).all(-1), 0, maximum).astype(color.dtype)
    strip = depth == 16 and bits == 8
    if out_channels < 3 and colour not in (0, 4):
        color = _rgb_to_gray(color, depth, _png_gamma(info), strip)
    if strip:
        color = (color >> 8).astype(np.uint8)
        alpha = None if alpha is None else (alpha >> 8).astype(np.uint8)
    if out_channels >= 3 and color.shape[-1] == 1:
        color = np.repeat(color, 3, axis=-1)
    if out_channels % 2 == 0:
        if alpha is None:  # libpng's filler: the file's bit depth's maximum, at 8 or 16 bits
            filler = (1 << depth) - 1
            alpha = np.full(color.shape[:2], filler & 0xFF if strip else filler, color.dtype)
        color = np.concatenate([color, alpha.astype(color.dtype)[:, :, None]], axis=-1)
    if bits == 16 and color.dtype == np.uint8:
        color = color.astype(np.uint16) * 257
    return np.ascontiguousarray(color, np.uint8 if bits == 8 else np.uint16)


def _significant(gamma: int) -> bool:
    return not 95000 <= gamma <= 105000


def _reciprocal(gamma: int) -> int:
    return int(np.floor(1e10 / gamma + 0.5))


def _gamma8(gamma: int) -> np.ndarray:
    """libpng's 8-bit gamma table (png_build_8bit_table)."""
    v = np.arange(256, dtype=np.float64)
    if not _significant(gamma):
        return v.astype(np.int64)
    out = np.floor(255 * np.power(v / 255, gamma * 1e-5) + 0.5).astype(np.int64)
    out[0], out[255] = 0, 255
    return out


def _gamma16(values: np.ndarray, shift: int, gamma: int) -> np.ndarray:
    """libpng's 16-bit gamma table (png_build_16bit_table) looked up at ``values``."""
    top = (1 << (16 - shift)) - 1
    v = values.astype(np.int64) >> shift
    if _significant(gamma):
        return np.floor(65535.0 * np.power(v / top, gamma * 1e-5) + 0.5).astype(np.int64)
    return (v * 65535 + (1 << (15 - shift))) // top if shift else v


def _gamma16_to_8(values: np.ndarray, shift: int, gamma: int) -> np.ndarray:
    """libpng's png_build_16to8_table looked up at ``values``: 16-bit values i * 257 of the
    nearest 8-bit output i."""
    top = (1 << (16 - shift)) - 1
    out = np.arange(255, dtype=np.int64) * 257
    edge = np.floor(65535 * np.power((out + 128) / 65535.0, gamma * 1e-5) + 0.5).astype(np.int64)
    bound = (edge * top + 32768) // 65535 + 1
    index = np.searchsorted(bound, values.astype(np.int64) >> shift, side="right")
    return np.append(out, 65535)[index]


def _rgb_to_gray(rgb: np.ndarray, depth: int, gamma: int, strip: bool) -> np.ndarray:
    """libpng's rgb_to_gray with TF's weights: in linear light when the file has a gamma
    (gAMA or sRGB), else on the stored values (truncating for 8 bits, rounding for 16);
    gray pixels (r == g == b) keep their value."""
    r, g, b = (rgb[:, :, i].astype(np.int64) for i in range(3))
    is_gray = (r == g) & (g == b)
    if not _significant(gamma):
        total = _GRAY_RED * r + _GRAY_GREEN * g + _GRAY_BLUE * b
        gray = np.where(is_gray, r, (total + (16384 if depth == 16 else 0)) >> 15)
        return gray.astype(rgb.dtype)[:, :, None]
    screen = _reciprocal(gamma)  # libpng assumes a display matching the file
    product = int(np.floor(gamma * 1e-5 * screen + 0.5))
    if depth < 16:
        to_1, from_1 = _gamma8(_reciprocal(gamma)), _gamma8(_reciprocal(screen))
        total = _GRAY_RED * to_1[r] + _GRAY_GREEN * to_1[g] + _GRAY_BLUE * to_1[b] + 16384
        gray = np.where(is_gray, _gamma8(product)[r], from_1[total >> 15])
        return gray.astype(rgb.dtype)[:, :, None]
    shift = 5 if strip else 0  # 16 - PNG_MAX_GAMMA_8 when the output is 8 bits
    lin = [_gamma16(c, shift, _reciprocal(gamma)) for c in (r, g, b)]
    total = (_GRAY_RED * lin[0] + _GRAY_GREEN * lin[1] + _GRAY_BLUE * lin[2] + 16384) >> 15
    coloured = _gamma16(total, shift, _reciprocal(screen))
    same = _gamma16_to_8(r, shift, product) if strip else _gamma16(r, shift, product)
    return np.where(is_gray, same, coloured).astype(rgb.dtype)[:, :, None]


# -- GIF --------------------------------------------------------------------------------------


def _gif_frames(data: bytes):
    """The frames of a GIF as giflib's DGifSlurp reads them: (left, top, width, height,
    colour table or None, transparent index or None, interlaced, LZW bytes)."""

    def fail(reason: str):
        return invalid(f"Invalid GIF data (size {len(data)}), failed to slurp gif file: {reason}")

    read_error = "Failed to read from given file"
    if len(data) < 13:
        raise invalid(f"Invalid GIF data (size {len(data)}), failed to open gif file: {read_error}")
    flags = data[10]
    pos = 13
    global_table = None
    if flags & 0x80:
        size = 3 << ((flags & 7) + 1)
        global_table = data[pos : pos + size]
        pos += size
    frames, transparent = [], None
    while True:
        if pos >= len(data):
            raise fail(read_error)
        kind = data[pos]
        pos += 1
        if kind == 0x3B:
            return frames, global_table
        if kind == 0x21:
            if pos >= len(data):
                raise fail(read_error)
            label = data[pos]
            blocks, pos = _gif_sub_blocks(data, pos + 1, fail, read_error)
            if label == 0xF9 and len(blocks) >= 4 and transparent is None:
                transparent = blocks[3] if blocks[0] & 1 else -1
            continue
        if kind != 0x2C:
            raise fail("Wrong record type detected")
        if pos + 9 > len(data):
            raise fail(read_error)
        left, top, width, height, lflags = struct.unpack("<HHHHB", data[pos : pos + 9])
        pos += 9
        table = global_table
        if lflags & 0x80:
            size = 3 << ((lflags & 7) + 1)
            table = data[pos : pos + size]
            pos += size
        if pos >= len(data):
            raise fail(read_error)
        code_size = data[pos]
        start = pos
        _, pos = _gif_sub_blocks(data, pos + 1, fail, read_error)
        trns = transparent if transparent is not None and transparent >= 0 else None
        frames.append((left, top, width, height, table, trns, bool(lflags & 0x40), data[start:pos]))
        if not 1 <= code_size <= 11:
            raise fail("Image is defective, decoding aborted")
        transparent = None


def _gif_sub_blocks(data: bytes, pos: int, fail, reason: str) -> tuple[bytes, int]:
    out = bytearray()
    while True:
        if pos >= len(data):
            raise fail(reason)
        n = data[pos]
        if n == 0:
            return bytes(out), pos + 1
        if pos + 1 + n > len(data):
            raise fail(reason)
        out += data[pos + 1 : pos + 1 + n]
        pos += 1 + n


def gif_frame_count(data: bytes) -> int:
    """How many frames a GIF has (its container read, nothing decoded)."""
    return len(_gif_frames(data)[0])


def _gif_indices(frame, fail) -> np.ndarray:
    """One frame's colour indices ([h, w]), its LZW data decoded by Pillow as a GIF of its
    own (so Pillow's compositing and disposal never apply)."""
    _, _, width, height, _, _, interlaced, lzw = frame
    if not width or not height:
        return np.zeros((height, width), np.uint8)
    one = (
        b"GIF89a"
        + struct.pack("<HHBBB", width, height, 0x80 | 7, 0, 0)
        + bytes(768)
        + struct.pack("<BHHHHB", 0x2C, 0, 0, width, height, 0x40 if interlaced else 0)
        + lzw
        + b"\x3b"
    )
    im = open_image(one, "GIF", fail)
    return load_pixels(im, fail)


def decode_gif(data: bytes, first_only: bool = False) -> np.ndarray:
    """A GIF as TF's DecodeGif: ``[frames, h, w, 3]`` uint8 over a canvas the size of the
    largest frame; ``first_only`` decodes frame 0 alone."""
    frames, _ = _gif_frames(data)
    prefix = f"Invalid GIF data (size {len(data)}), "
    if not frames:
        raise invalid(prefix + "gif file does not contain any image")
    height = max(f[3] for f in frames)
    width = max(f[2] for f in frames)
    count = 1 if first_only else len(frames)
    check_size((count, height, width, 3), 1, prefix + "image too large")
    out = np.zeros((count, height, width, 3), np.uint8)
    for k, frame in enumerate(frames[:count]):
        left, top, w, h, table, transparent, _, _ = frame
        if k:
            out[k] = out[k - 1]
        if table is None:
            raise invalid(prefix + f"missing color map for frame {k}")
        colours = np.frombuffer(table, np.uint8).reshape(-1, 3)
        index = _gif_indices(frame, prefix + "failed to slurp gif file: Image is defective")
        y0, x0 = min(top, height), min(left, width)
        y1, x1 = min(top + h, height), min(left + w, width)
        index = index[: y1 - y0, : x1 - x0]
        if index.size and int(index.max()) >= len(colours):
            bad = int(index.reshape(-1)[np.argmax(index.reshape(-1) >= len(colours))])
            raise invalid(
                prefix + f"found color index {bad} outside of color map range {len(colours)}"
            )
        region = out[k, y0:y1, x0:x1]
        draw = index != transparent if transparent is not None else np.ones(index.shape, bool)
        region[draw] = colours[index[draw]]
    return out


# -- BMP --------------------------------------------------------------------------------------


def decode_bmp(data: bytes, channels: int = 0) -> np.ndarray:
    """A BMP as TF's DecodeBmp reads it: uncompressed rows of 1 (gray), 3 (BGR) or 4 (BGRA)
    bytes a pixel, bottom-up unless the height is negative; ``channels`` 0 keeps the file's."""
    if channels == 1:
        raise invalid(f"`channels` must be 0, 3 or 4 for BMP, but got {channels}")
    if len(data) < 32:
        raise invalid(
            "Incomplete bmp content, requires at least 32 bytes to find the header size, "
            f"width, height, and bpp, got {len(data)} bytes"
        )
    (header_size,) = struct.unpack_from("<i", data, 10)
    width, height = struct.unpack_from("<ii", data, 18)
    (bpp,) = struct.unpack_from("<h", data, 28)
    img_channels = int(bpp / 8)
    if img_channels not in (1, 3, 4):
        raise invalid(
            f"Number of channels inherent in the image must be 1, 3 or 4, was {img_channels}"
        )
    if width <= 0:
        raise invalid("Width must be positive")
    if height == 0:
        raise invalid("Height must be nonzero")
    if header_size < 0:
        raise invalid("header size must be nonnegative")
    rows = abs(height)
    if width * rows >= (2**31 - 1) // 8:
        raise invalid("Total possible pixel bytes must be less than 2^30")
    row_size = (img_channels * width + 3) // 4 * 4
    size_diff = len(data) - header_size - row_size * rows
    if size_diff:
        raise invalid(
            "Input size should match (header_size + row_size * abs_height) but they differ "
            f"by {size_diff}"
        )
    pixels = np.frombuffer(data, np.uint8, row_size * rows, header_size).reshape(rows, row_size)
    pixels = pixels[:, : width * img_channels].reshape(rows, width, img_channels)
    if height > 0:
        pixels = pixels[::-1]
    out_channels = channels or img_channels
    if img_channels == 1:
        rgb = np.repeat(pixels, 3, axis=-1) if out_channels >= 3 else pixels
    else:
        rgb = pixels[:, :, 2::-1] if out_channels >= 3 else pixels[:, :, :1]
    if out_channels == 4:
        alpha = pixels[:, :, 3:4] if img_channels == 4 else np.full((rows, width, 1), 255, np.uint8)
        rgb = np.concatenate([rgb, alpha], axis=-1)
    return np.ascontiguousarray(rgb)


# -- encoders ---------------------------------------------------------------------------------

_JFIF_UNITS = {"in": 1, "cm": 2}


def encode_jpeg(
    image: np.ndarray,
    *,
    format: str = "",  # noqa: A002 - TF's attr name
    quality: int = 95,
    progressive: bool = False,
    optimize_size: bool = False,
    chroma_downsampling: bool = True,
    density_unit: str = "in",
    x_density: int = 300,
    y_density: int = 300,
    xmp_metadata: str = "",
) -> bytes:
    """``image`` ([h, w, 1 or 3] uint8) as TF's EncodeJpeg writes it, through Pillow's
    libjpeg-turbo with the same settings (JFIF density, 4:2:0 unless not
    ``chroma_downsampling``, XMP in an APP1 segment)."""
    shape = "[" + ",".join(str(d) for d in image.shape) + "]"
    channels = image.shape[-1]
    if not 0 <= quality <= 100:
        raise invalid(f"quality must be in [0,100], got {quality}")
    if format:
        want = 1 if format == "grayscale" else 3
        if channels != want:
            raise invalid(f"format {format} expects {want} channels, got {shape}")
    elif channels not in (1, 3):
        raise invalid(f"image must have 1 or 3 channels, got {shape}")
    if not image.shape[0] or not image.shape[1] or max(image.shape[:2]) > 65500:
        raise errors.InternalError(None, None, "JPEG encoding failed")
    pil = pillow().fromarray(np.ascontiguousarray(image[:, :, 0] if channels == 1 else image))
    options = {
        "quality": int(quality),
        "progressive": bool(progressive),
        "optimize": bool(optimize_size),
        # 4:2:0 unless asked not to; a gray image's one component is never subsampled.
        "subsampling": 2 if chroma_downsampling and channels == 3 else 0,
        "dpi": (int(x_density), int(y_density)),
    }
    if xmp_metadata:
        options["xmp"] = xmp_metadata.encode("utf-8")
    buf = io.BytesIO()
    pil.save(buf, "JPEG", **options)
    out = bytearray(buf.getvalue())
    # Pillow writes densities in dots per inch; TF's unit may be centimetres (JFIF APP0's
    # unit byte follows "JFIF\0" and the version).
    if out[6:11] == b"JFIF\0":
        out[13] = _JFIF_UNITS[density_unit]
    return bytes(out)


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = np.abs(p - a), np.abs(p - b), np.abs(p - c)
    return np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, b, c))


def _filtered_rows(raw: np.ndarray, bpp: int) -> np.ndarray:
    """Each row with the PNG filter libpng's heuristic picks (the smallest sum of the bytes
    read as signed), the filter type byte first."""
    x = raw.astype(np.int16)
    up = np.zeros_like(x)
    up[1:] = x[:-1]
    left = np.zeros_like(x)
    left[:, bpp:] = x[:, :-bpp]
    upleft = np.zeros_like(x)
    upleft[:, bpp:] = up[:, :-bpp]
    candidates = np.stack(
        [x, x - left, x - up, x - ((left + up) >> 1), x - _paeth(left, up, upleft)]
    ).astype(np.uint8)
    signed = candidates.astype(np.int16)
    cost = np.minimum(signed, 256 - signed).sum(axis=2, dtype=np.int64)
    best = np.argmin(cost, axis=0)
    rows = candidates[best, np.arange(raw.shape[0])]
    return np.concatenate([best.astype(np.uint8)[:, None], rows], axis=1)


def _optimize_cmf(stream: bytearray, data_size: int) -> bytearray:
    """libpng's optimize_cmf: for small images the zlib header claims the smallest window
    that covers the data (FCHECK recomputed as libpng does)."""
    cmf = stream[0]
    if data_size <= 16384 and cmf & 0x0F == 8 and cmf & 0xF0 <= 0x70:
        cinfo = cmf >> 4
        half = 1 << (cinfo + 7)
        if data_size <= half:
            while True:
                half >>= 1
                cinfo -= 1
                if not (cinfo > 0 and data_size <= half):
                    break
            cmf = (cmf & 0x0F) | (cinfo << 4)
            flags = stream[1] & 0xE0
            stream[0], stream[1] = cmf, flags + 0x1F - ((cmf << 8) + flags) % 0x1F
    return stream


def _png_chunk(tag: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + tag + body + struct.pack(">I", zlib.crc32(tag + body))


def encode_png(image: np.ndarray, compression: int = -1) -> bytes:
    """``image`` ([h, w, 1..4] uint8 or uint16) as a PNG the way TF's libpng writer makes one
    (adaptive row filters, zlib at ``compression``, -1 zlib's default, memLevel 9, the
    window shrunk for small images, IDAT chunks of 8192 bytes)."""
    if not -1 <= compression <= 9:
        raise invalid(f"compression should be in [-1,9], got {compression}")
    height, width, channels = image.shape
    if channels not in (1, 2, 3, 4):
        raise invalid(f"image must have 1, 2, 3, or 4 channels, got {channels}")
    if not height or not width:
        raise invalid(f"Invalid image dimensions {height} by {width}")
    depth = 16 if image.dtype == np.uint16 else 8
    colour = {1: 0, 2: 4, 3: 2, 4: 6}[channels]
    samples = image.astype(">u2") if depth == 16 else image.astype(np.uint8)
    raw = np.ascontiguousarray(samples).view(np.uint8).reshape(height, -1)
    data = _filtered_rows(raw, channels * depth // 8).tobytes()
    window = 15
    if len(data) <= 16384:
        half = 1 << (window - 1)
        while len(data) + 262 <= half:
            half >>= 1
            window -= 1
    level = 6 if compression < 0 else compression
    deflate = zlib.compressobj(level, zlib.DEFLATED, max(window, 9), 9, zlib.Z_FILTERED)
    stream = _optimize_cmf(bytearray(deflate.compress(data) + deflate.flush()), len(data))
    ihdr = struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, 0)
    idat = b"".join(
        _png_chunk(b"IDAT", bytes(stream[i : i + 8192])) for i in range(0, len(stream), 8192)
    )
    return b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + idat + _png_chunk(b"IEND", b"")
