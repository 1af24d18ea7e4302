"""TFRecord files and file datasets against TensorFlow's recording: ``tf.python_io``
(``tf.io``'s writer and iterator), GZIP/ZLIB compression, and ``tf.data``'s
``TFRecordDataset``, ``TextLineDataset`` and ``FixedLengthRecordDataset``."""

from pathlib import Path

import pytest

import engine as tf
from tests.engine.fixtures import make_tfrecord_fixtures as fx
from tests.engine.fixtures.oracle import load

REC = load("tfrecord_tf.npz")
TF_FILES = {c: REC[f"file_{c}"].tobytes() for c in fx.COMPRESSIONS}


@pytest.mark.parametrize("compression", fx.COMPRESSIONS)
def test_written_files_are_tensorflows_bytes(tmp_path, compression):
    path = tmp_path / "w.tfrecord"
    options = tf.python_io.TFRecordOptions(compression)
    with tf.python_io.TFRecordWriter(str(path), options) as w:
        for r in fx.RECORDS:
            w.write(r)
    assert path.read_bytes() == TF_FILES[compression]
    # The compression may also be given by name or by TFRecordCompressionType.
    kind = getattr(tf.python_io.TFRecordCompressionType, compression or "NONE")
    with tf.io.TFRecordWriter(str(tmp_path / "k.tfrecord"), kind) as w:
        for r in fx.RECORDS:
            w.write(r)
    assert (tmp_path / "k.tfrecord").read_bytes() == TF_FILES[compression]


@pytest.mark.parametrize("compression", fx.COMPRESSIONS)
def test_tensorflow_written_files_are_read(tmp_path, compression):
    path = tmp_path / "tf.tfrecord"
    path.write_bytes(TF_FILES[compression])
    got = list(tf.python_io.tf_record_iterator(str(path), compression or None))
    assert got == fx.RECORDS
    options = tf.python_io.TFRecordOptions(compression)
    assert list(tf.io.tf_record_iterator(path, options)) == fx.RECORDS


def test_writer_details(tmp_path):
    path = tmp_path / "s.tfrecord"
    w = tf.python_io.TFRecordWriter(str(path), "GZIP")
    w.write("h\u00e9llo")  # str is written as UTF-8, as TensorFlow's writer does
    w.flush()
    w.write(b"abc")
    w.close()
    w.close()
    assert list(tf.python_io.tf_record_iterator(str(path), "GZIP")) == [
        "h\u00e9llo".encode(),
        b"abc",
    ]
    with pytest.raises(tf.errors.FailedPreconditionError, match="Writer is closed"):
        w.write(b"x")
    with pytest.raises(ValueError, match="Not a valid compression_type"):
        tf.python_io.TFRecordWriter(str(path), "BZ2")
    with pytest.raises(TypeError, match="bytes"):
        tf.python_io.TFRecordWriter(str(tmp_path / "t.tfrecord")).write(3)
    get = tf.python_io.TFRecordOptions.get_compression_type_string
    assert get(None) == "" and get("ZLIB") == "ZLIB"
    assert get(tf.python_io.TFRecordOptions(tf.python_io.TFRecordCompressionType.GZIP)) == "GZIP"
    level9 = tf.python_io.TFRecordOptions("ZLIB", compression_level=9)
    with tf.python_io.TFRecordWriter(str(tmp_path / "z.tfrecord"), level9) as w2:
        w2.write(b"z" * 500)
    assert list(tf.python_io.tf_record_iterator(str(tmp_path / "z.tfrecord"), "ZLIB")) == [
        b"z" * 500
    ]


def test_iterator_errors(tmp_path):
    with pytest.raises(tf.errors.NotFoundError):
        tf.python_io.tf_record_iterator(str(tmp_path / "missing"))
    damaged = bytearray(TF_FILES[""])
    damaged[14] ^= 1  # in the checksum of the first record's (empty) data
    (tmp_path / "d.tfrecord").write_bytes(bytes(damaged))
    with pytest.raises(tf.errors.DataLossError, match="corrupted"):
        list(tf.python_io.tf_record_iterator(str(tmp_path / "d.tfrecord")))
    (tmp_path / "t.tfrecord").write_bytes(TF_FILES[""][:-3])
    with pytest.raises(tf.errors.DataLossError, match="truncated"):
        list(tf.python_io.tf_record_iterator(str(tmp_path / "t.tfrecord")))
    (tmp_path / "g.tfrecord").write_bytes(TF_FILES["GZIP"][:-20])
    with pytest.raises(tf.errors.DataLossError, match="GZIP"):
        list(tf.python_io.tf_record_iterator(str(tmp_path / "g.tfrecord"), "GZIP"))
    (tmp_path / "u.tfrecord").write_bytes(TF_FILES[""])
    with pytest.raises(tf.errors.DataLossError, match="not a valid ZLIB stream"):
        list(tf.python_io.tf_record_iterator(str(tmp_path / "u.tfrecord"), "ZLIB"))


def test_iterator_yields_the_records_before_a_damaged_one_like_tensorflow(tmp_path):
    paths = fx.write_inputs(tmp_path, TF_FILES)
    got, end = fx.iterate(tf, paths["tfrecord_truncated"][0])
    assert got == fx.unpack(REC, "iter_truncated") == fx.RECORDS[:-1]
    assert end == str(REC["iter_truncated_end"]) == "DataLossError"


def _engine_datasets(tmp_path: Path):
    paths = fx.write_inputs(tmp_path, TF_FILES)
    with tf.Graph().as_default(), tf.Session() as sess:
        return {label: fx.drain(tf, sess, ds) for label, ds in fx.datasets(tf, paths).items()}


def test_file_datasets_match_tensorflow(tmp_path):
    got = _engine_datasets(tmp_path)
    labels = sorted(k[len("end_") :] for k in REC.files if k.startswith("end_"))
    assert sorted(got) == labels
    for label in labels:
        elements, end = got[label]
        assert elements == fx.unpack(REC, f"ds_{label}"), label
        assert end == str(REC[f"end_{label}"]), label
    assert got["tfrecord_GZIP"][0] == fx.RECORDS * 2


def test_file_dataset_specs_errors_and_pipelines(tmp_path):
    paths = fx.write_inputs(tmp_path, TF_FILES)
    ds = tf.data.TextLineDataset(paths["text_"])
    assert ds.output_types == tf.string and ds.output_shapes.as_list() == []
    assert isinstance(ds, tf.data.Dataset)
    with pytest.raises(ValueError, match="scalar or a vector"):
        tf.data.TFRecordDataset([paths["text_"]])
    with tf.Graph().as_default(), tf.Session() as sess:
        lines = tf.data.TextLineDataset(paths["text_"][:1]).map(
            lambda s: tf.string_to_number(tf.substr(s, 2, 1))
        )
        assert fx.drain(tf, sess, lines.batch(2)) == (
            [pytest.approx([1.0, 2.0]), pytest.approx([3.0])],
            "OutOfRangeError",
        )
        missing = tf.data.TFRecordDataset([paths["tfrecord_"][0], str(tmp_path / "nope")])
        assert fx.drain(tf, sess, missing) == (fx.RECORDS, "NotFoundError")
        wrong = tf.data.TFRecordDataset(paths["text_"][:1])
        assert fx.drain(tf, sess, wrong)[1] == "DataLossError"
        names = tf.placeholder(tf.string, [None])
        it = tf.data.TFRecordDataset(names, "ZLIB").make_initializable_iterator()
        sess.run(it.initializer, {names: paths["tfrecord_ZLIB"][:1]})
        assert [sess.run(it.get_next()) for _ in fx.RECORDS] == fx.RECORDS


_ENGINE_TESTS = Path(__file__).resolve().parent
_VOCAB = str(_ENGINE_TESTS / "lookup_vocab.txt")
_WARMUP = str(
    _ENGINE_TESTS.parent / "fixtures" / "tensorflow" / "warmup" / "tf_serving_warmup_requests"
)


def round_trip_builder():
    """The file dataset ops (over committed files), for test_graph_def's round-trip table."""
    records = tf.data.TFRecordDataset([_WARMUP], compression_type="")
    lines = tf.data.TextLineDataset(_VOCAB)
    chars = tf.data.FixedLengthRecordDataset([_VOCAB, _VOCAB], 1, header_bytes=1, footer_bytes=1)
    ds = tf.data.Dataset.zip((records, lines, chars)).batch(10)
    return list(ds.make_one_shot_iterator().get_next()), {}, []
