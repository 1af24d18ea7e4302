"""File readers (``engine/readers.py``, ``engine/reader_ops.py``): single-thread behaviour
against TensorFlow's recording (``fixtures/make_reader_fixtures.py``), then what only the
engine shows: several threads on one reader, queue runners feeding it, records and lines
longer than a read chunk, the bounds on what is read, blocking, and the GraphDef written."""

from __future__ import annotations

import threading
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

import engine as tf
from engine import reader_streams
from engine.formats.tensorflow import tfrecord
from engine.formats.tensorflow.writer import graph_to_tf
from engine.ops._common import create
from tests.engine.fixtures.make_reader_fixtures import evaluate
from tests.engine.fixtures.oracle import assert_recorded, load, recorded_keys

RECORDING = load("reader_tf.npz")
ENGINE = evaluate(tf)


@pytest.mark.parametrize("key", recorded_keys(RECORDING))
def test_readers_match_tensorflow(key):
    """Keys, values, counts, read_up_to's batches, resets, saved states and messages."""
    assert_recorded(np.asarray(ENGINE[key]), RECORDING[key], key, rtol=0)


def test_op_and_tensor_names_match_tensorflow():
    for key in [k for k in RECORDING.files if k.startswith("name_")]:
        np.testing.assert_array_equal(ENGINE[key], RECORDING[key], err_msg=key)


# -- helpers -----------------------------------------------------------------------------------


def _write_tfrecords(path, records, compression=""):
    tfrecord.write_records(path, records, compression)
    return str(path)


def _queue_of(work):
    q = tf.FIFOQueue(len(work) + 1, tf.string)
    return q, [q.enqueue_many([list(work)]), q.close()]


def _read_all(sess, fetch):
    out = []
    while True:
        try:
            out.append(sess.run(fetch))
        except tf.errors.OutOfRangeError:
            return out


# -- threads -----------------------------------------------------------------------------------


@pytest.mark.parametrize("up_to", [None, 3])
def test_several_threads_share_one_reader_and_each_record_comes_out_once(tmp_path, up_to):
    files = [
        _write_tfrecords(tmp_path / f"part{i}.tfrecord", [b"%d-%d" % (i, j) for j in range(40)])
        for i in range(6)
    ]
    q, fill = _queue_of(files)
    reader = tf.TFRecordReader()
    keys, values = reader.read(q) if up_to is None else reader.read_up_to(q, up_to)
    got, errors = [], []
    with tf.Session() as sess:
        sess.run(fill)

        def worker():
            try:
                for k, v in _read_all(sess, [keys, values]):
                    got.extend(zip(np.atleast_1d(k).tolist(), np.atleast_1d(v).tolist()))
            except Exception as e:  # noqa: BLE001 - handed to the test
                errors.append(e)

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        counts = sess.run([reader.num_records_produced(), reader.num_work_units_completed()])
    assert not errors
    assert len(got) == 240 and len(set(got)) == 240
    assert sorted(v for _, v in got) == sorted(
        b"%d-%d" % (i, j) for i in range(6) for j in range(40)
    )
    assert counts == [240, 6]


def test_queue_runners_feed_file_names_until_the_epochs_run_out(tmp_path):
    paths = []
    for i in range(3):
        paths.append(str(tmp_path / f"{i}.txt"))
        Path(paths[-1]).write_bytes(b"header\n%d-a\n%d-b\n" % (i, i))
    files = tf.train.string_input_producer(paths, num_epochs=2, shuffle=False)
    key, line = tf.TextLineReader(skip_header_lines=1).read(files)
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        lines = [v for _, v in _read_all(sess, [key, line])]
        coord.request_stop()
        coord.join(threads)
    assert lines == [b"%d-%s" % (i, s) for _ in range(2) for i in range(3) for s in (b"a", b"b")]


def test_a_read_waiting_for_work_honours_the_run_timeout_and_the_session_closing():
    q = tf.FIFOQueue(2, tf.string)
    reader = tf.IdentityReader()
    read = reader.read(q)
    sess = tf.Session()
    box = {}

    def blocked():
        try:
            sess.run(read)
        except tf.errors.OpError as e:
            box["error"] = e

    t = threading.Thread(target=blocked, daemon=True)
    t.start()
    time.sleep(0.2)
    assert t.is_alive()  # waits for a work item, holding the reader
    start = time.monotonic()
    with pytest.raises(tf.errors.DeadlineExceededError):  # waits for the reader itself
        sess.run(read, options=tf.RunOptions(timeout_in_ms=100))
    assert time.monotonic() - start < 5
    sess.close()
    t.join(5)
    assert not t.is_alive() and isinstance(box["error"], tf.errors.CancelledError)


# -- streaming ---------------------------------------------------------------------------------


@pytest.mark.parametrize("compression", ["", "GZIP", "ZLIB"])
def test_records_longer_than_a_read_chunk(tmp_path, compression):
    rng = np.random.default_rng(0)
    big = reader_streams.CHUNK + 4321
    records = [rng.bytes(n) for n in (10, big, 3, 2 * big, 0, big)]
    path = _write_tfrecords(tmp_path / "big.tfrecord", records, compression)
    q, fill = _queue_of([path])
    read = tf.TFRecordReader(options=compression or None).read(q)
    with tf.Session() as sess:
        sess.run(fill)
        got = _read_all(sess, read)
    offsets = np.cumsum([0] + [len(r) + 16 for r in records[:-1]])
    assert [k for k, _ in got] == [b"%s:%d" % (path.encode(), o) for o in offsets]
    assert [v for _, v in got] == records


def test_lines_and_fixed_records_longer_than_a_read_chunk(tmp_path):
    long_line = b"x" * (reader_streams.CHUNK * 2 + 7)
    text = tmp_path / "long.txt"
    text.write_bytes(b"a\r\n" + long_line + b"\r\nb\n" + long_line)
    raw = np.random.default_rng(1).bytes(5 * reader_streams.CHUNK + 11)
    fixed = tmp_path / "fixed.gz"
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    fixed.write_bytes(z.compress(raw) + z.flush())
    record, hop, header = reader_streams.CHUNK + 5, reader_streams.CHUNK // 2, 3
    q1, fill1 = _queue_of([str(text)])
    q2, fill2 = _queue_of([str(fixed)])
    lines = tf.TextLineReader().read(q1)
    records = tf.FixedLengthRecordReader(
        record, header_bytes=header, footer_bytes=2, hop_bytes=hop, encoding="GZIP"
    ).read(q2)
    with tf.Session() as sess:
        sess.run([fill1, fill2])
        got_lines = [v for _, v in _read_all(sess, lines)]
        got_records = [v for _, v in _read_all(sess, records)]
    assert got_lines == [b"a", long_line, b"b", long_line]
    starts = range(header, len(raw) - record - 2 + 1, hop)
    assert got_records == [raw[s : s + record] for s in starts]


def test_what_is_read_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(tfrecord.TFRecordLimits, "max_record_bytes", 100)
    monkeypatch.setattr(tfrecord.TFRecordLimits, "max_file_bytes", 150)
    path = _write_tfrecords(tmp_path / "r.tfrecord", [b"ok", b"y" * 101])
    text = tmp_path / "t.txt"
    text.write_bytes(b"ok\n" + b"z" * 300)
    cases = [
        (tf.TFRecordReader(), path, "record at 18: 101 bytes, over the 100-byte limit"),
        (tf.TextLineReader(), str(text), "over the 100-byte limit"),
        (tf.WholeFileReader(), str(text), "t.txt: 303 bytes, over the 150-byte limit"),
    ]
    with tf.Session() as sess:
        for reader, work, message in cases:
            q, fill = _queue_of([work])
            read = reader.read(q)
            sess.run(fill)
            if not isinstance(reader, tf.WholeFileReader):
                assert sess.run(read)[1] == b"ok"
            with pytest.raises(tf.errors.ResourceExhaustedError, match=message):
                sess.run(read)
        q, fill = _queue_of([path])
        sess.run(fill)
        with pytest.raises(tf.errors.ResourceExhaustedError, match="101 bytes, over the 100"):
            sess.run(tf.FixedLengthRecordReader(100, footer_bytes=1).read(q))


# -- arguments TF accepts differently ---------------------------------------------------------


def test_an_unknown_compression_type_reads_plain_files_and_snappy_is_refused(tmp_path):
    path = _write_tfrecords(tmp_path / "r.tfrecord", [b"one"])
    q, fill = _queue_of([path, path])
    plain = create("TFRecordReaderV2", [], {"compression_type": "BAD"}, "plain").outputs[0]
    snappy = create("TFRecordReaderV2", [], {"compression_type": "SNAPPY"}, "snappy").outputs[0]
    with tf.Session() as sess:
        sess.run(fill)
        assert sess.run(tf.ReaderBase(plain).read(q))[1] == b"one"  # as TF, which logs it
        with pytest.raises(tf.errors.UnimplementedError, match=r"'SNAPPY' is not supported"):
            sess.run(tf.ReaderBase(snappy).read(q))


def test_a_negative_num_records_is_an_error():
    """TF's kernel aborts its process here; the engine's raises."""
    q = tf.FIFOQueue(2, tf.string)
    n = tf.placeholder(tf.int64, [])
    keys, _ = tf.IdentityReader().read_up_to(q, n)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="num_records must be >= 0"):
            sess.run(keys, {n: -1})


def test_readers_are_per_session_and_shared_by_shared_name():
    q, fill = _queue_of([b"a", b"b", b"c"])
    mine = tf.IdentityReader()
    shared = [
        create("IdentityReaderV2", [], {"shared_name": "pool"}, f"r{i}").outputs[0]
        for i in range(2)
    ]
    read_first = tf.ReaderBase(shared[0]).read(q)
    count_second = tf.ReaderBase(shared[1]).num_records_produced()
    with tf.Session() as sess:
        sess.run(fill)
        sess.run(read_first)
        assert sess.run(count_second) == 1
        assert sess.run(mine.num_records_produced()) == 0
    with tf.Session() as sess:
        assert sess.run(count_second) == 0


def test_the_graph_def_carries_tf_attrs_and_no_type_attrs():
    q = tf.FIFOQueue(2, tf.string)
    reader = tf.FixedLengthRecordReader(4)
    reader.read(q)
    reader.read_up_to(q, 2)
    tf.TFRecordReader(options="GZIP")
    tf.TextLineReader()
    nodes = {n.name: n for n in graph_to_tf(tf.get_default_graph()).node}
    # As TF's op registry declares them.
    assert sorted(nodes["FixedLengthRecordReaderV2"].attr) == [
        "container",
        "encoding",
        "footer_bytes",
        "header_bytes",
        "hop_bytes",
        "record_bytes",
        "shared_name",
    ]
    assert sorted(nodes["TFRecordReaderV2"].attr) == [
        "compression_type",
        "container",
        "shared_name",
    ]
    assert nodes["TFRecordReaderV2"].attr["compression_type"].s == b"GZIP"
    assert sorted(nodes["TextLineReaderV2"].attr) == [
        "container",
        "shared_name",
        "skip_header_lines",
    ]
    assert not nodes["ReaderReadV2"].attr and not nodes["ReaderReadUpToV2"].attr


# -- the GraphDef round trip (tests/engine/test_graph_def.py) -----------------------------------

_ENGINE_TESTS = Path(__file__).resolve().parent
_VOCAB = str(_ENGINE_TESTS / "lookup_vocab.txt")
_WARMUP = str(
    _ENGINE_TESTS.parent / "fixtures" / "tensorflow" / "warmup" / "tf_serving_warmup_requests"
)


def round_trip_builder():
    """Every reader op over committed files. Each reader reads its own queue, filled and
    closed in the setup ops, and the counted reader reads nothing, so the fetched values do
    not depend on the order the ops run in."""
    work = {
        "tfrecord": (tf.TFRecordReader(name="rt_tfrecord"), [_WARMUP]),
        "text": (tf.TextLineReader(skip_header_lines=1, name="rt_text"), [_VOCAB]),
        "fixed": (
            tf.FixedLengthRecordReader(1, header_bytes=1, footer_bytes=1, name="rt_fixed"),
            [_VOCAB],
        ),
        "whole": (tf.WholeFileReader(name="rt_whole"), [_VOCAB]),
        "identity": (tf.IdentityReader(name="rt_identity"), [b"a", b"b"]),
    }
    fills, closes, fetches = [], [], []
    for key, (reader, items) in work.items():
        q = tf.FIFOQueue(4, tf.string, name=f"rt_{key}_queue")
        fills.append(q.enqueue_many([items]))
        closes.append(q.close())
        read = reader.read_up_to(q, 2) if key in ("text", "identity") else reader.read(q)
        fetches += list(read)
    counted = tf.IdentityReader(name="rt_counted")
    restore = counted.restore_state(b'\x08\x03\x10\x03\x18\x07"\x02cw')
    fetches += [
        counted.num_records_produced(),
        counted.num_work_units_completed(),
        counted.serialize_state(),
    ]
    reset = work["identity"][0].reset()
    setup = [tf.group(*fills), tf.group(*closes), restore, reset]
    return fetches, {}, [op.name for op in setup]
