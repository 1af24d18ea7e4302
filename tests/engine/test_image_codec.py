"""Image codec and file ops against TensorFlow's recording: JPEG (every ``ratio``,
``dct_method`` and ``fancy_upscaling``, crops, gray, CMYK, 4:2:0/4:2:2/4:4:4, progressive),
PNG (8/16 bits, palettes, tRNS, gray below 8 bits, Adam7, gamma), GIF compositing, BMP,
``DecodeImage``, the encoders' bytes, static shapes and errors; ``decode_image``'s TF 1.15
graph; ``ReadFile``/``WriteFile``; size bounds; a TF Serving style SavedModel."""

from __future__ import annotations

import importlib.util
import struct
import subprocess
import sys
import zlib

import numpy as np
import pytest

import engine as tf
from engine import image_codecs
from tests.engine.fixtures import make_image_codec_fixtures as fx
from tests.engine.fixtures.oracle import FIXTURES, load, recorded_keys, run_graph

REC = load("image_codec_tf.npz")
IMAGES = {k[3:]: REC[k].tobytes() for k in REC.files if k.startswith("in_")}
HAVE_PILLOW = importlib.util.find_spec("PIL") is not None
needs_pillow = pytest.mark.skipif(
    not HAVE_PILLOW, reason="Pillow is not installed (pip install flowserve[image])"
)
SKIP = ("in_", "error_", "static_", "enc_")
VALUE_KEYS = [k for k in recorded_keys(REC) if not k.startswith(SKIP)]
ENCODED_KEYS = [k for k in recorded_keys(REC) if k.startswith("enc_")]
# Decodes Pillow cannot reproduce bit for bit (jpeg_decoder.py's docstring): ISLOW chroma
# planes of 4:2:2 images are out of reach, so INTEGER_ACCURATE with plain upsampling or a
# crop of such an image uses the other IDCT. The largest difference, in levels.
APPROXIMATE = {
    "jpeg_j422_r1_INTEGER_ACCURATE_plain": 3,
    "crop_j422_2_INTEGER_ACCURATE": 5,
    "crop_j422_3_INTEGER_ACCURATE": 4,
    "crop_j422_4_INTEGER_ACCURATE": 9,
}


@pytest.fixture(scope="module")
def got():
    if not HAVE_PILLOW:
        pytest.skip("Pillow is not installed (pip install flowserve[image])")
    return run_graph(tf, lambda tf: fx.build(tf, IMAGES))


def _bytes(v) -> bytes:
    return v if isinstance(v, bytes) else np.asarray(v).item()


@needs_pillow
@pytest.mark.parametrize("key", VALUE_KEYS)
def test_values_match_tensorflow(got, key):
    value, expected = np.asarray(got[key]), REC[key]
    assert value.dtype == expected.dtype and value.shape == expected.shape, key
    if key in APPROXIMATE:
        diff = np.abs(value.astype(np.int64) - expected.astype(np.int64)).max()
        assert diff <= APPROXIMATE[key], (key, diff)
    else:
        np.testing.assert_array_equal(value, expected, err_msg=key)


@needs_pillow
@pytest.mark.parametrize("key", ENCODED_KEYS)
def test_encoded_bytes_are_tensorflows(got, key):
    # libjpeg-turbo with TF's settings and libpng's filters and zlib settings: the same bytes.
    assert _bytes(got[key]) == REC[key].tobytes(), key


def test_static_shapes_match_tensorflow():
    got = {k: str(v) for k, v in fx.static_shapes(tf).items()}
    assert got == {k: str(REC[k]) for k in REC.files if k.startswith("static_")}


def _expected_error(key: str) -> tuple[str, str]:
    where_kind, message = str(REC[f"error_{key}"]).split(": ", 1)
    # TF 2.21 lists formats the engine does not decode (JPEG XL, WebP).
    return where_kind, message.split(" One of ")[0]


@needs_pillow
@pytest.mark.parametrize("key", sorted(fx.ERRORS))
def test_errors_match_tensorflow(key):
    where_kind, message = _expected_error(key)
    got = fx.run_error(tf, fx.ERRORS[key], IMAGES)
    assert got.split(": ", 1)[0] == where_kind, (key, got)
    assert message in got, (key, got)


# -- decode_image: TF 1.15's graph --------------------------------------------------------------


def test_decode_image_builds_tf115_cond_graph():
    s = tf.placeholder(tf.string, [])
    img = tf.image.decode_image(s)
    flat = tf.io.decode_image(s, channels=3, expand_animations=False)
    assert img.shape.ndims is None and flat.shape.as_list() == [None, None, None]
    types = {op.type for op in tf.get_default_graph().get_operations()}
    assert {"If", "Substr", "Equal"} <= types and "DecodeImage" not in types
    with pytest.raises(ValueError, match=r"channels must be in \(None, 0, 1, 3, 4\)"):
        tf.image.decode_image(s, channels=2)


@needs_pillow
def test_decode_image_asserts_as_tf115():
    s = tf.placeholder(tf.string, [])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Unable to decode bytes"):
            sess.run(tf.image.decode_image(s), {s: b"\x00\x01 not an image"})
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"\(None, 0, 1, 3\) when"):
            sess.run(tf.image.decode_image(s, channels=4), {s: IMAGES["j420"]})
        # TF 1.15's GIF and BMP branches ignore channels (TF 2's DecodeImage op does not).
        bmp = sess.run(tf.image.decode_image(s, channels=3), {s: IMAGES["b32"]})
        assert bmp.shape == (4, 5, 4)


# -- round trips, bounds, files -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_png_round_trip(dtype, channels):
    x = np.random.RandomState(channels).randint(0, np.iinfo(dtype).max, (7, 13, channels))
    x = x.astype(dtype)
    s = tf.image.encode_png(x, compression=channels + 3)
    assert s.shape.as_list() == []
    with tf.Session() as sess:
        data = sess.run(s)
        if HAVE_PILLOW:
            back = sess.run(tf.image.decode_png(data, dtype=tf.as_dtype(dtype)))
            np.testing.assert_array_equal(back, x)
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and zlib.decompress(_idat(data))


def _idat(png: bytes) -> bytes:
    out, pos = b"", 8
    while pos < len(png):
        (n,) = struct.unpack(">I", png[pos : pos + 4])
        if png[pos + 4 : pos + 8] == b"IDAT":
            out += png[pos + 8 : pos + 8 + n]
        pos += 12 + n
    return out


@needs_pillow
def test_jpeg_round_trip_is_close():
    yy, xx = np.mgrid[0:40, 0:56]
    x = np.stack([xx * 4, yy * 5, 200 - xx * 2 - yy], -1).astype(np.uint8)
    with tf.Session() as sess:
        back = sess.run(tf.image.decode_jpeg(tf.image.encode_jpeg(x, quality=100)))
        full = tf.image.encode_jpeg(x, quality=100, chroma_downsampling=False)
        back444 = sess.run(tf.image.decode_jpeg(full, dct_method="INTEGER_ACCURATE"))
        gray = sess.run(tf.image.decode_jpeg(tf.image.encode_jpeg(x[:, :, :1], quality=100)))
    assert np.abs(back.astype(int) - x).max() <= 6
    assert np.abs(back444.astype(int) - x).max() <= 3
    assert np.abs(gray.astype(int) - x[:, :, :1]).max() <= 2


def _png_header_only(width: int, height: int) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = struct.pack(">I", 13) + b"IHDR" + ihdr + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    return b"\x89PNG\r\n\x1a\n" + chunk


def _jpeg_header_only(width: int, height: int) -> bytes:
    """SOI, a frame header for a ``width`` x ``height`` 4:2:0 image, a scan header, EOI."""
    components = bytes([1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1])
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 17, 8, height, width, 3) + components
    sos = b"\xff\xda" + struct.pack(">HB", 12, 3) + bytes([1, 0, 2, 0x11, 3, 0x11, 0, 63, 0])
    return b"\xff\xd8" + sof + sos + b"\xff\xd9"


@needs_pillow
@pytest.mark.parametrize(
    "data, message",
    [
        (_png_header_only(60000, 60000), "PNG size too large for int: 60000 by 60000"),
        (_jpeg_header_only(65000, 65000), "Invalid JPEG data or crop window"),
        (fx.gif_bytes((2, 2), None, []).replace(b"\x3b", b""), "Invalid GIF data"),
        (
            b"BM" + bytes(8) + struct.pack("<iiiihhi", 54, 40, 1 << 20, 1 << 20, 1, 24, 0),
            "Total possible pixel bytes must be less than",
        ),
    ],
    ids=["png", "jpeg", "gif", "bmp"],
)
def test_huge_or_broken_headers_are_refused_before_decoding(data, message):
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match=message):
        sess.run(tf.image.decode_image(data) if data[:2] == b"BM" else tf.io.decode_gif(data))


def test_read_and_write_file(tmp_path):
    path = tmp_path / "sub" / "dir" / "out.bin"
    payload = bytes(range(256)) + b"\x00end"
    contents = tf.placeholder(tf.string, [])
    write = tf.io.write_file(str(path), contents)
    read = tf.read_file(str(path))
    assert isinstance(write, tf.Operation) and read.shape.as_list() == []
    with tf.Session() as sess:
        sess.run(write, {contents: payload})  # creates the missing directories
        assert sess.run(read) == payload
        path.write_bytes(b"changed")  # ReadFile is stateful: read again at every run
        assert sess.run(read) == b"changed"
        assert sess.run(tf.io.read_file(tf.constant(str(path).encode()))) == b"changed"


def test_read_file_errors_name_the_file(tmp_path):
    missing = tmp_path / "nope.jpg"
    with tf.Session() as sess:
        with pytest.raises(tf.errors.NotFoundError, match=f"{missing}; No such file"):
            sess.run(tf.read_file(str(missing)))
        with pytest.raises(tf.errors.FailedPreconditionError, match="Is a directory"):
            sess.run(tf.io.read_file(str(tmp_path)))
    with pytest.raises(ValueError, match="rank 0"):
        tf.read_file(["a", "b"])


def test_without_pillow_decoding_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(image_codecs, "Image", None)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.UnimplementedError, match=r"pip install flowserve\[image\]"):
            sess.run(tf.image.decode_jpeg(IMAGES["j420"]))
        with pytest.raises(tf.errors.UnimplementedError, match="Pillow"):
            sess.run(tf.image.encode_jpeg(np.zeros((2, 2, 3), np.uint8)))
        # PNG encoding and BMP decoding are numpy and zlib only.
        png = sess.run(tf.image.encode_png(np.zeros((2, 2, 3), np.uint8)))
        assert png.startswith(b"\x89PNG")
        assert sess.run(tf.image.decode_bmp(IMAGES["b24"])).shape == (4, 5, 3)


def test_importing_the_engine_does_not_need_pillow():
    code = "import sys; sys.modules['PIL'] = None; import engine; print(engine.image.decode_jpeg)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "decode_jpeg" in out.stdout


@needs_pillow
def test_serving_saved_model_decodes_jpeg_bytes_as_tensorflow():
    export = FIXTURES / "image_codec_saved_model"
    io = np.load(export / "io.npz")
    with tf.Graph().as_default() as g, tf.Session() as sess:
        meta = tf.saved_model.load(sess, ["serve"], str(export))
        sig = meta.signature_def["serving_default"]
        feeds = {sig.inputs["image_bytes"].name: io["image_bytes"].tobytes()}
        probs = sess.run(sig.outputs["probs"].name, feeds)
        assert "DecodeJpeg" in {op.type for op in g.get_operations()}
    np.testing.assert_allclose(probs, io["probs"], rtol=1e-5, atol=1e-6)


def round_trip_builder():
    """The image codec and file ops, for test_graph_def's round-trip table."""
    contents = tf.placeholder(tf.string, [], name="image_contents")
    jpeg = tf.image.decode_jpeg(contents, channels=3, ratio=2, dct_method="INTEGER_ACCURATE")
    crop = tf.image.decode_and_crop_jpeg(contents, [1, 2, 5, 6], fancy_upscaling=False)
    png = tf.image.encode_png(tf.cast(jpeg, tf.uint16) * 257, compression=3)
    fetches = [
        jpeg,
        crop,
        tf.image.extract_jpeg_shape(contents, output_type=tf.int64),
        tf.image.encode_jpeg(crop, quality=80, chroma_downsampling=False, density_unit="cm"),
        png,
        tf.image.decode_png(png, channels=4, dtype=tf.uint16),
        tf.image.decode_gif(tf.constant(IMAGES["gif_anim"])),
        tf.image.decode_bmp(tf.constant(IMAGES["b32"]), channels=3),
        fx.raw_decode_image(tf, contents, channels=1, dtype=tf.float32),
        tf.read_file(str(FIXTURES / "image_codec_saved_model" / "io.npz")),
    ]
    tf.write_file(tf.constant("/dev/null"), tf.constant(b""))
    if not HAVE_PILLOW:
        fetches = fetches[9:]
    return fetches, {"image_contents:0": IMAGES["j420"]}, []
