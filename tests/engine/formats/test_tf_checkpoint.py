"""TensorFlow V2 checkpoints: read what TF wrote (tests/fixtures/tensorflow/checkpoint),
write bundles our reader (and TF, checked when the fixtures were made) reads back, and refuse
damaged files with typed errors."""

from __future__ import annotations

import pathlib
import shutil
import struct

import numpy as np
import pytest

import engine as tf
from engine import errors
from engine.formats.tensorflow import checkpoint as ckpt
from engine.formats.tensorflow.tensors import TFFormatError

FIXTURE = pathlib.Path(__file__).parents[2] / "fixtures" / "tensorflow" / "checkpoint"
PREFIX = str(FIXTURE / "model.ckpt-3")
VALUES = {
    "dense/kernel": "dense__kernel",
    "dense/bias": "dense__bias",
    "counter": "counter",
    "scale": "scale",
    "mask": "mask",
    "small": "small",
    "half": "half",
}


def test_list_variables_and_load_checkpoint_read_tf_values():
    io = np.load(FIXTURE / "io.npz")
    assert tf.train.list_variables(str(FIXTURE)) == sorted(
        (name, list(io[key].shape)) for name, key in VALUES.items()
    )
    reader = tf.train.load_checkpoint(PREFIX)
    for name, key in VALUES.items():
        value = reader.get_tensor(name)
        assert value.dtype == io[key].dtype and np.array_equal(value, io[key]), name
    assert reader.get_variable_to_dtype_map()["half"] is tf.float16
    assert not reader.has_tensor("nope")
    with pytest.raises(errors.NotFoundError):
        reader.get_tensor("nope")
    assert tf.train.load_variable(str(FIXTURE), "counter") == 42
    # TF1's spelling of the same reader, on the prefix TF wrote.
    old_style = tf.train.NewCheckpointReader(PREFIX)
    assert old_style.get_variable_to_shape_map() == reader.get_variable_to_shape_map()
    assert old_style.get_tensor("counter") == 42


def test_import_meta_graph_and_saver_restore():
    io = np.load(FIXTURE / "io.npz")
    with tf.Graph().as_default():
        saver = tf.train.import_meta_graph(PREFIX + ".meta")
        with tf.Session() as sess:
            saver.restore(sess, tf.train.latest_checkpoint(str(FIXTURE)))
            np.testing.assert_allclose(sess.run("y:0", {"x:0": io["x"]}), io["y"], rtol=1e-6)
            assert sess.run("small:0").tolist() == [1, -2, 3]


def test_engine_graph_restores_a_tf_checkpoint():
    io = np.load(FIXTURE / "io.npz")
    with tf.Graph().as_default():
        with tf.variable_scope("dense"):
            k = tf.get_variable("kernel", [3, 2])
            b = tf.get_variable("bias", [2])
        saver = tf.train.Saver([k, b])
        with tf.Session() as sess:
            saver.restore(sess, PREFIX)
            assert np.array_equal(sess.run(k), io["dense__kernel"])
            assert np.array_equal(sess.run(b), io["dense__bias"])


def test_write_bundle_round_trip(tmp_path):
    values = {
        "a/b": np.arange(12, dtype=np.float32).reshape(3, 4),
        "i": np.array([-5, 7], np.int64),
        "s": np.array([[b"x", b""], [b"\xff\x00", b"yz"]], dtype=object),
        "scalar": np.array(2.5),
        "empty": np.zeros((0, 3), np.float32),
    }
    prefix = str(tmp_path / "ck")
    ckpt.write_bundle(prefix, values)
    r = ckpt.BundleReader(prefix)
    assert sorted(r.names()) == sorted(values)
    for name, v in values.items():
        got = r.read(name)
        assert got.shape == v.shape and got.dtype == v.dtype
        assert got.tolist() == v.tolist()
    # many entries span several table blocks
    many = {f"v{i:04d}": np.array([i], np.int32) for i in range(600)}
    ckpt.write_bundle(str(tmp_path / "many"), many)
    r = ckpt.BundleReader(str(tmp_path / "many"))
    assert len(r.names()) == 600 and r.read("v0599").tolist() == [599]


def _copy(tmp_path) -> str:
    for f in FIXTURE.glob("model.ckpt-3.*"):
        shutil.copy(f, tmp_path / f.name)
    return str(tmp_path / "model.ckpt-3")


def _flip(path, pos):
    data = bytearray(pathlib.Path(path).read_bytes())
    data[pos] ^= 0x40
    pathlib.Path(path).write_bytes(bytes(data))


# Each damage names the error it must cause. An index without the table magic number (cut
# short, or its last byte flipped) is not recognised as a TensorFlow bundle, so it is read
# as a flowserve index and refused there.
DAMAGED_CHECKPOINT_ERRORS = {
    "data_bit": "checksum mismatch for tensor 'counter'",
    "index_bit": "block checksum mismatch",
    "truncated_data": "tensor 'scale': bytes .* beyond its data file",
    "truncated_index": "index is neither a TensorFlow checkpoint index .*nor valid flowserve",
    "bad_magic": "index is neither a TensorFlow checkpoint index .*nor valid flowserve",
}


@pytest.mark.parametrize("damage", sorted(DAMAGED_CHECKPOINT_ERRORS))
def test_damaged_checkpoints_raise_typed_errors(tmp_path, damage):
    prefix = _copy(tmp_path)
    data, index = prefix + ".data-00000-of-00001", prefix + ".index"
    if damage == "data_bit":
        _flip(data, 3)
    elif damage == "index_bit":
        _flip(index, 20)
    elif damage == "truncated_data":
        pathlib.Path(data).write_bytes(pathlib.Path(data).read_bytes()[:-9])
    elif damage == "truncated_index":
        raw = pathlib.Path(index).read_bytes()
        pathlib.Path(index).write_bytes(raw[:30] + raw[-8:])
    else:
        _flip(index, len(pathlib.Path(index).read_bytes()) - 1)
    with pytest.raises(errors.DataLossError, match=DAMAGED_CHECKPOINT_ERRORS[damage]):
        values = tf.train.load_checkpoint(prefix)
        for name in values.get_variable_to_shape_map():
            values.get_tensor(name)


def test_huge_declared_sizes_are_refused_before_reading(tmp_path):
    from engine.formats.tensorflow.proto import tensor_bundle_pb2

    prefix = str(tmp_path / "big")
    ckpt.write_bundle(prefix, {"x": np.zeros(4, np.float32)})
    items = ckpt.read_table(prefix + ".index")
    e = tensor_bundle_pb2.BundleEntryProto.FromString(items[1][1])
    e.shape.dim[0].size = 1 << 38
    e.size = (1 << 38) * 4
    ckpt.write_table(prefix + ".index", [items[0], (items[1][0], e.SerializeToString())])
    with pytest.raises(TFFormatError, match="beyond its data file"):
        ckpt.BundleReader(prefix)
    # a block handle pointing past the end of the index
    raw = bytearray(pathlib.Path(prefix + ".index").read_bytes())
    footer = raw[-48:]
    footer[0:40] = b"\x00\x05\xff\xff\xff\x0f\x10" + b"\x00" * 33
    pathlib.Path(prefix + ".index").write_bytes(bytes(raw[:-48] + footer))
    with pytest.raises(TFFormatError):
        ckpt.BundleReader(prefix)


def test_masked_crc32c_matches_leveldb_reference():
    # crc32c("123456789") = 0xE3069283 (RFC 3720); masking as in LevelDB/TF.
    crc = 0xE3069283
    assert ckpt.masked_crc32c(b"123456789") == (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & (
        0xFFFFFFFF
    )
    assert struct.pack("<Q", ckpt.TABLE_MAGIC)[-1] == 0xDB
