"""Snappy-compressed checkpoint index blocks, as older TF versions wrote them (TF Serving's
own saved_model_half_plus_two_cpu test model has them): decoded against vectors the
``cramjam`` Snappy compressor made, and a checkpoint whose index TF 2.21 read back
(tests/fixtures/tensorflow/snappy_checkpoint, snappy_vectors.json; make_flow_fixtures.py)."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

from engine.formats.tensorflow.checkpoint import BundleReader, snappy_decompress
from engine.formats.tensorflow.tensors import TFFormatError

FIXTURES = pathlib.Path(__file__).parents[2] / "fixtures" / "tensorflow"
VECTORS = json.loads((FIXTURES / "snappy_vectors.json").read_text())


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: f"{len(v['raw']) // 2}B")
def test_snappy_blocks_decode_to_what_was_compressed(vector):
    raw = bytes.fromhex(vector["raw"])
    assert snappy_decompress(bytes.fromhex(vector["snappy"]), "t", 1 << 20) == raw


def test_a_four_byte_offset_copy_decodes():
    # 5 literal bytes, then a copy of 10 bytes at offset 5 (tag kind 3, 4-byte offset)
    data = (
        bytes([15]) + bytes([4 << 2]) + b"hello" + bytes([(9 << 2) | 3]) + (5).to_bytes(4, "little")
    )
    assert snappy_decompress(data, "t", 100) == b"hello" * 3


@pytest.mark.parametrize(
    "data, message",
    [
        (bytes([10, 4 << 2]) + b"ab", "literal runs past the block"),
        (bytes([8, 0]) + b"a" + bytes([1 | (4 << 2), 9]), "copy outside the output"),
        (bytes([3, 0]) + b"a", "holds 1 bytes, declares 3"),
        (bytes([0xFF, 0xFF, 0xFF, 0x7F]), "expands to .* over the limit"),
        (bytes([4, 61 << 2]), "truncated Snappy literal"),
        (bytes([4, 0]) + b"a" + bytes([2]), "truncated Snappy copy"),
    ],
)
def test_damaged_snappy_blocks_raise_typed_errors(data, message):
    with pytest.raises(TFFormatError, match=message):
        snappy_decompress(data, "t", 1 << 20)


def test_checkpoint_with_a_snappy_index_reads_like_the_plain_one():
    plain = BundleReader(str(FIXTURES / "checkpoint" / "model.ckpt-3"))
    packed = BundleReader(str(FIXTURES / "snappy_checkpoint" / "model.ckpt"))
    assert packed.names() == plain.names()
    for name in plain.names():
        np.testing.assert_array_equal(packed.read(name), plain.read(name))
