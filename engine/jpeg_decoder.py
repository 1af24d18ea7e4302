"""JPEG decoding as TensorFlow's DecodeJpeg and DecodeAndCropJpeg compute it, on the
libjpeg-turbo that Pillow wraps.

TF sets libjpeg's IDCT (``dct_method``: IFAST by default, ISLOW for "INTEGER_ACCURATE") and
its chroma upsampling (``fancy_upscaling``) independently. Pillow ties them: it decodes with
ISLOW and fancy upsampling, or in "draft" mode with IFAST and plain (replicating)
upsampling. Which of the two an image needs is worked out from its sampling factors at the
requested scale, the way libjpeg-turbo plans the decode:

- if the pair TF asks for is one of Pillow's, or the image makes one of the two settings moot
  (no 8x8 IDCT at this scale, or no chroma plane upsampled by a fancy-capable method), Pillow
  decodes directly;
- otherwise, for 4:2:0 and 4:2:2 images at full scale (TF's default decode of most photos
  is one), the luma and the downsampled chroma planes are decoded with the IDCT TF asks for
  and libjpeg-turbo's upsampling (jdsample.c) and YCbCr-to-RGB conversion (jdcolor.c) are
  done here in integer numpy, bit for bit. IFAST chroma planes come from a plain-upsampled
  decode (every other pixel), ISLOW ones (4:2:0 only) from a half-scale decode, where the
  chroma IDCT is full size and nothing is upsampled.

DecodeAndCropJpeg decodes the MCU-aligned window (libjpeg-turbo's ``jpeg_crop_scanline``),
whose fancy upsampling sees the window's edges, so it is not a crop of the full decode; the
plane path reproduces that. The remaining combinations (ISLOW on 4:2:2 images with plain
upsampling or cropped, odd sampling layouts, CMYK with subsampling, crops of 4:2:2 images
scaled down) use Pillow's decode with the right upsampling and the other IDCT: a few levels
off (9 at most in the tests).

The default path costs two numpy passes over the image on top of Pillow's decode (about 5x
Pillow's time). Truncated or corrupt data raises TF's "Invalid JPEG data" error; TF's
recovery of truncated files (``try_recover_truncated``, ``acceptable_fraction`` < 1) is not
reproduced.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.image_codecs import check_size, invalid, load_pixels, open_image

__all__ = ["decode_jpeg", "jpeg_shape"]

_FAILED = "jpeg::Uncompress failed. Invalid JPEG data or crop window."


def _fix(x: float) -> int:
    return int(x * 65536 + 0.5)


# jdcolor.c's build_ycc_rgb_table (SCALEBITS 16): R = Y + (FIX(1.402) * Cr + 1/2) >> 16, ...
_FIX_CR_R, _FIX_CB_B = _fix(1.40200), _fix(1.77200)
_FIX_CR_G, _FIX_CB_G = -_fix(0.71414), -_fix(0.34414)


@dataclass(frozen=True)
class _Header:
    width: int
    height: int
    mode: str  # Pillow's: "L", "RGB" or "CMYK"
    sampling: tuple  # (h, v) per component
    ycc: bool  # three components in YCbCr (not Adobe RGB)
    adobe: bool


def _header(data: bytes, message: str = _FAILED) -> _Header:
    """The frame header (and the markers before it); ``message`` when it cannot be read."""
    im = open_image(data, "JPEG", message)
    ids = tuple(layer[0] for layer in im.layer)
    adobe = "adobe" in im.info
    if "jfif" in im.info:
        ycc = True
    elif adobe:
        ycc = im.info.get("adobe_transform", 1) != 0
    else:
        ycc = ids != (82, 71, 66)
    sampling = tuple((layer[1], layer[2]) for layer in im.layer)
    return _Header(im.size[0], im.size[1], im.mode, sampling, ycc and im.mode == "RGB", adobe)


def jpeg_shape(data: bytes) -> tuple[int, int, int]:
    """(height, width, components) from a JPEG's header, as TF's ExtractJpegShape."""
    h = _header(data, f"Invalid JPEG data, size {len(data)}")
    return h.height, h.width, len(h.sampling)


def _pillow_decode(data: bytes, rawmode: str, ratio: int, draft: bool) -> np.ndarray:
    """Pillow's decode at 1/``ratio`` scale (libjpeg's scale_denom) into ``rawmode`` ("L",
    "RGB", "YCbCr" or "CMYK", no inversion); ``draft``: IFAST and plain upsampling."""
    im = open_image(data, "JPEG", _FAILED)
    name, _, offset, _ = im.tile[0]
    size = (-(-im.size[0] // ratio), -(-im.size[1] // ratio))
    im.tile = [(name, (0, 0, *size), offset, (rawmode, ""))]
    im._size = size
    im._mode = rawmode
    im.decoderconfig = (ratio, int(draft))
    a = load_pixels(im, _FAILED)
    return a[:, :, None] if a.ndim == 2 else a


@dataclass(frozen=True)
class _Plan:
    dct_matters: bool  # some component goes through an 8x8 IDCT
    fancy_matters: bool  # some chroma plane is upsampled by a fancy-capable method


def _plan(h: _Header, ratio: int, gray_out: bool) -> _Plan:
    """What libjpeg-turbo's decode at this scale depends on (jdmaster.c's per-component
    IDCT sizes, jdsample.c's choice of upsampler)."""
    comps = h.sampling[:1] if gray_out and h.ycc else h.sampling
    max_h = max(s[0] for s in h.sampling)
    max_v = max(s[1] for s in h.sampling)
    smallest = 8 // ratio
    dct = fancy = False
    for ch, cv in comps:
        size = smallest
        while (
            size < 8
            and (max_h * smallest) % (ch * size * 2) == 0
            and (max_v * smallest) % (cv * size * 2) == 0
        ):
            size *= 2
        dct |= size == 8
        up_h, up_v = max_h * smallest // (ch * size), max_v * smallest // (cv * size)
        width = -(-h.width * ch * size // (max_h * 8))
        if smallest > 1 and (
            (up_h, up_v) in ((2, 1), (2, 2)) and width > 2 or (up_h, up_v) == (1, 2)
        ):
            fancy = True
    return _Plan(dct, fancy)


def _planes_supported(h: _Header, ratio: int, ifast: bool) -> bool:
    """Whether the plane path can rebuild this decode: YCbCr 4:2:0 or 4:2:2 at full scale
    (ISLOW chroma planes only for 4:2:0)."""
    if ratio != 1 or not h.ycc or len(h.sampling) != 3:
        return False
    luma, cb, cr = h.sampling
    if cb != (1, 1) or cr != (1, 1) or luma not in ((2, 2), (2, 1)):
        return False
    return ifast or luma == (2, 2)


def _upsample(plane: np.ndarray, factors: tuple, fancy: bool) -> np.ndarray:
    """jdsample.c's h2v1/h2v2 upsampling of a chroma plane (int16): replication, or the
    triangle filter with libjpeg-turbo's rounding (edge samples repeated)."""
    hf, vf = factors
    if not fancy:
        return np.repeat(np.repeat(plane, vf, axis=0), hf, axis=1)
    if vf == 2:  # vertical pass first: 3 * nearer row + further row, kept at 4x scale
        rows = np.empty((2 * plane.shape[0], plane.shape[1]), np.int16)
        triple = 3 * plane
        rows[0::2] = triple
        rows[0::2][1:] += plane[:-1]
        rows[0] += plane[0]
        rows[1::2] = triple
        rows[1::2][:-1] += plane[1:]
        rows[-1] += plane[-1]
        bias, shift = (8, 7), 4
    else:
        rows, bias, shift = plane, (1, 2), 2
    triple = 3 * rows
    out = np.empty((rows.shape[0], 2 * rows.shape[1]), np.int16)
    even, odd = out[:, 0::2], out[:, 1::2]
    even[:] = triple + bias[0]
    even[:, 1:] += rows[:, :-1]
    even[:, 0] += rows[:, 0]
    odd[:] = triple + bias[1]
    odd[:, :-1] += rows[:, 1:]
    odd[:, -1] += rows[:, -1]
    out >>= shift
    return out


def _ycc_to_rgb(y: np.ndarray, cb: np.ndarray, cr: np.ndarray) -> np.ndarray:
    """jdcolor.c's ycc_rgb_convert (its table entries, computed) to uint8 RGB."""
    cb = cb.astype(np.int32) - 128
    cr = cr.astype(np.int32) - 128
    offsets = (
        (_FIX_CR_R * cr + 32768) >> 16,
        (_FIX_CB_G * cb + _FIX_CR_G * cr + 32768) >> 16,
        (_FIX_CB_B * cb + 32768) >> 16,
    )
    out = np.empty((*y.shape, 3), np.uint8)
    for i, offset in enumerate(offsets):
        offset += y
        np.clip(offset, 0, 255, out=offset)
        out[:, :, i] = offset
    return out


def _decode_planes(data: bytes, h: _Header, ifast: bool, fancy: bool, crop) -> np.ndarray:
    """RGB from the luma and chroma planes decoded with the requested IDCT, upsampled and
    converted here (see the module docstring)."""
    factors = h.sampling[0]
    hf, vf = factors
    ycc = _pillow_decode(data, "YCbCr", 1, ifast)
    if ifast:
        planes = [ycc[::vf, ::hf, c].astype(np.int16) for c in (1, 2)]
    else:
        half = _pillow_decode(data, "YCbCr", 2, False)
        planes = [half[:, :, c].astype(np.int16) for c in (1, 2)]
    full_width = planes[0].shape[1]
    y0, x0, height, width = crop or (0, 0, h.height, h.width)
    align = 8 * hf  # the iMCU width jpeg_crop_scanline aligns the window to
    start = x0 // align * align
    window = x0 + width - start
    columns = -(-window // hf)
    # The upsampler is chosen for the whole image (fancy needs more than two chroma
    # columns) and chosen again, plain, when a crop leaves a single column.
    fancy = fancy and full_width > 2 and columns >= 2
    chroma = []
    for p in planes:
        part = p[:, start // hf : start // hf + columns]
        up = _upsample(part, factors, fancy)[: h.height, :window]
        chroma.append(up[y0 : y0 + height, x0 - start :])
    return _ycc_to_rgb(ycc[y0 : y0 + height, x0 : x0 + width, 0], *chroma)


def _cmyk_to_rgb(cmyk: np.ndarray, adobe: bool) -> np.ndarray:
    """TF's conversion of libjpeg's CMYK output (Adobe files store it inverted)."""
    c, m, y, k = (cmyk[:, :, i].astype(np.int32) for i in range(4))
    if adobe:
        rgb = [k * c // 255, k * m // 255, k * y // 255]
    else:
        rgb = [(255 - k) * (255 - v) // 255 for v in (c, m, y)]
    return np.stack(rgb, axis=-1).astype(np.uint8)


def decode_jpeg(
    data: bytes,
    *,
    channels: int = 0,
    ratio: int = 1,
    fancy_upscaling: bool = True,
    dct_method: str = "",
    crop: tuple | None = None,
) -> np.ndarray:
    """A JPEG as TF's DecodeJpeg: ``[h, w, channels]`` uint8 (``channels`` 0: 1 for gray
    files, else 3), scaled by 1/``ratio``; ``crop`` (y, x, height, width) in scaled pixels
    as DecodeAndCropJpeg's window."""
    h = _header(data)
    out_channels = channels or min(len(h.sampling), 3)
    if h.mode == "CMYK" and out_channels == 1:
        raise invalid(_FAILED)  # libjpeg has no CMYK-to-gray conversion
    out_h, out_w = -(-h.height // ratio), -(-h.width // ratio)
    check_size((out_h, out_w, len(h.sampling)), 1, _FAILED)
    if crop is not None:
        cy, cx, ch, cw = crop
        if not (
            ch > 0 and cw > 0 and cx >= 0 and cy >= 0 and cy + ch <= out_h and cx + cw <= out_w
        ):
            raise invalid(_FAILED)
    ifast = dct_method != "INTEGER_ACCURATE"
    gray_out = out_channels == 1
    plan = _plan(h, ratio, gray_out)
    if plan.fancy_matters and plan.dct_matters and not gray_out and h.mode == "RGB":
        exact_direct = ifast != fancy_upscaling and (crop is None or not fancy_upscaling)
        if not exact_direct and _planes_supported(h, ratio, ifast):
            return _expand(_decode_planes(data, h, ifast, fancy_upscaling, crop), out_channels)
    if plan.fancy_matters and not gray_out:
        draft = not fancy_upscaling
    else:
        draft = ifast and plan.dct_matters
    if h.mode == "CMYK":
        pixels = _cmyk_to_rgb(_pillow_decode(data, "CMYK", ratio, draft), h.adobe)
    elif gray_out or h.mode == "L":
        pixels = _pillow_decode(data, "L", ratio, draft)
    else:
        pixels = _pillow_decode(data, "RGB", ratio, draft)
    if crop is not None:
        cy, cx, ch, cw = crop
        pixels = pixels[cy : cy + ch, cx : cx + cw]
    return _expand(pixels, out_channels)


def _expand(pixels: np.ndarray, channels: int) -> np.ndarray:
    if channels == 3 and pixels.shape[-1] == 1:
        pixels = np.repeat(pixels, 3, axis=-1)
    return np.ascontiguousarray(pixels)
