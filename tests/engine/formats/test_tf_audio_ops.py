"""Audio ops against TensorFlow 2.21: a speech-commands-style frozen graph (WAV bytes ->
DecodeWav -> AudioSpectrogram -> Mfcc) TF ran on a WAV written by the fixture script (with
JUNK and LIST chunks), plus EncodeWav and DecodeWav's channel and sample adjustments
(tests/fixtures/tensorflow/audio_ops, make_flow_fixtures.py part audio_ops)."""

from __future__ import annotations

import pathlib
import struct

import numpy as np
import pytest

import engine as tf

FIXTURE = pathlib.Path(__file__).parents[2] / "fixtures" / "tensorflow" / "audio_ops"
IO = np.load(FIXTURE / "io.npz")
WAV = IO["wav"].tobytes()
OUTPUTS = ["audio", "rate", "spectrogram", "mfcc", "mfcc_narrow", "stereo", "three", "magnitude"]


@pytest.fixture(scope="module")
def results():
    g = tf.Graph()
    with g.as_default():
        tf.import_graph_def(tf.GraphDef.FromString((FIXTURE / "model.pb").read_bytes()), name="")
    fetches = {k: f"out/{k}:0" for k in OUTPUTS + ["encoded"]}
    with tf.Session(graph=g) as sess:
        return sess.run(fetches, {"wav_data:0": WAV})


@pytest.mark.parametrize("key", OUTPUTS)
def test_audio_ops_match_tensorflow(results, key):
    got, want = results[key], IO[key]
    assert got.dtype == want.dtype and got.shape == want.shape, key
    tol = {"mfcc": 2e-4, "mfcc_narrow": 2e-4}.get(key, 1e-5)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_encode_wav_writes_tensorflows_bytes(results):
    assert results["encoded"] == IO["encoded"].tobytes()


def test_python_api_round_trips_a_wav():
    with tf.Graph().as_default(), tf.Session() as sess:
        decoded = tf.audio.decode_wav(WAV)
        again = tf.audio.decode_wav(tf.audio.encode_wav(decoded.audio, decoded.sample_rate))
        a, b, rate = sess.run([decoded.audio, again.audio, again.sample_rate])
    assert rate == 16000 and a.shape == (4000, 2)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "data, message",
    [
        (b"RIFX" + WAV[4:], "Header mismatch: Expected RIFF"),
        (WAV[:30], "Data too short"),
        (WAV[:12] + b"ABCD" + WAV[16:], "Unexpected field"),
        (WAV.replace(b"data", b"datx", 1), "No data chunk found in WAV"),
        (WAV[:48] + struct.pack("<H", 8) + WAV[50:], "Can only read 16-bit WAV files"),
        (WAV[:34] + struct.pack("<H", 3) + WAV[36:], r"Expected 1 \(PCM\), but got 3"),
    ],
)
def test_malformed_wavs_raise_invalid_argument(data, message):
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            sess.run(tf.audio.decode_wav(data).audio)


def round_trip_builder():
    """(fetches, feed, setup) for tests/engine/test_graph_def.py's round trip."""
    decoded = tf.audio.decode_wav(WAV, desired_channels=1)
    spec = tf.audio.audio_spectrogram(decoded.audio, 480, 160, magnitude_squared=True)
    return (
        [
            decoded.audio,
            tf.audio.mfcc(spec, decoded.sample_rate),
            tf.audio.encode_wav(decoded.audio[:10], decoded.sample_rate),
        ],
        {},
        [],
    )
