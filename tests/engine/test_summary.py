"""tf.summary and FileWriter: the summaries equal TensorFlow's (parsed with TensorBoard's own
protos), and the event files FileWriter writes load in TensorBoard's EventAccumulator with
scalars, histograms, images, text and the graph."""

import os
import struct
import zlib

import numpy as np
import pytest

import engine as tf
from engine import errors
from tests.engine.fixtures.make_summary_fixtures import IMAGES, VALUES

summary_pb2 = pytest.importorskip("tensorboard.compat.proto.summary_pb2")
event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")

FIXTURES = np.load(
    os.path.join(os.path.dirname(__file__), "fixtures", "summary_tf.npz"), allow_pickle=False
)


def _tf_summary(key):
    return summary_pb2.Summary.FromString(FIXTURES[key].tobytes())


def _run(t):
    with tf.Session() as sess:
        return summary_pb2.Summary.FromString(sess.run(t))


def test_scalar_histogram_text_and_merge_equal_tensorflow():
    with tf.name_scope("train"):
        s = tf.summary.scalar("loss", tf.constant(1.5))
    h = tf.summary.histogram("weights", tf.constant(VALUES))
    e = tf.summary.histogram("empty", tf.zeros([0]))
    t = tf.summary.text("note", tf.constant(["a", "bc"]))
    m = tf.summary.merge([s, h])
    assert tf.get_collection(tf.GraphKeys.SUMMARIES) == [s, h, e, t]
    for key, tensor in (("scalar", s), ("histogram", h), ("empty", e), ("merged", m)):
        assert _run(tensor) == _tf_summary(key), key
    got, want = _run(t), _tf_summary("text")
    assert got.value[0].tag == want.value[0].tag == "note"
    assert got.value[0].metadata.plugin_data.plugin_name == "text"
    assert got.value[0].tensor == want.value[0].tensor


def _decode_png(data: bytes) -> np.ndarray:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        chunks.setdefault(kind, b"")
        chunks[kind] += data[pos + 8 : pos + 8 + n]
        pos += 12 + n
    w, h, depth, color = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    channels = {0: 1, 2: 3, 6: 4}[color]
    raw = zlib.decompress(chunks[b"IDAT"])
    rows = np.frombuffer(raw, np.uint8).reshape(h, 1 + w * channels)
    assert (rows[:, 0] == 0).all()  # filter "none", which the engine writes
    return rows[:, 1:].reshape(h, w, channels)


def test_image_summary_dimensions_match_tensorflow_and_pixels_are_scaled():
    got = _run(tf.summary.image("img", tf.constant(IMAGES), max_outputs=2))
    want = _tf_summary("image")
    assert (
        [v.tag for v in got.value]
        == [v.tag for v in want.value]
        == [
            "img/image/0",
            "img/image/1",
        ]
    )
    for g, w, img in zip(got.value, want.value, IMAGES):
        assert (g.image.height, g.image.width, g.image.colorspace) == (
            w.image.height,
            w.image.width,
            w.image.colorspace,
        )
        pixels = _decode_png(g.image.encoded_image_string)
        # Negative values present: the largest magnitude maps to 127 around 128.
        top = np.abs(img).max()
        want_pixels = np.clip(img * (127.0 / top) + 128.0, 0, 255).astype(np.uint8)
        np.testing.assert_array_equal(pixels, want_pixels)


def test_file_writer_event_file_loads_in_tensorboard(tmp_path):
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    w = tf.Variable(tf.ones([4, 1]), name="w")
    loss = tf.reduce_mean(tf.matmul(x, w), name="loss")
    tf.summary.scalar("loss", loss)
    tf.summary.histogram("w", w)
    tf.summary.image("input", tf.reshape(x, [-1, 2, 2, 1]), max_outputs=1)
    tf.summary.text("comment", tf.constant("run one"))
    merged = tf.summary.merge_all()
    xs = np.arange(12, dtype=np.float32).reshape(3, 4)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        writer = tf.summary.FileWriter(str(tmp_path), sess.graph)
        for step in range(3):
            writer.add_summary(sess.run(merged, {x: xs + step}), global_step=step)
        writer.close()
    files = os.listdir(tmp_path)
    assert len(files) == 1 and files[0].startswith("events.out.tfevents.")
    acc = event_accumulator.EventAccumulator(str(tmp_path), size_guidance={"tensors": 0})
    acc.Reload()
    tags = acc.Tags()
    # The tag is the summary's name scope, uniquified against the op "loss", as in TF1.
    assert tags["scalars"] == ["loss_1"] and tags["histograms"] == ["w_1"]
    assert tags["images"] == ["input/image"] and tags["tensors"] == ["comment"]
    assert tags["graph"] is True
    scalars = acc.Scalars("loss_1")
    assert [e.step for e in scalars] == [0, 1, 2]
    np.testing.assert_allclose(
        [e.value for e in scalars], [(xs + s).sum(1).mean() for s in (0, 1, 2)]
    )
    histo = acc.Histograms("w_1")[0].histogram_value
    assert (histo.num, histo.sum, histo.min, histo.max) == (4, 4.0, 1.0, 1.0)
    assert acc.Images("input/image")[0].width == 2
    nodes = {n.name: n for n in acc.Graph().node}
    assert (
        nodes["loss"].op == "Mean"
        and nodes["MatMul"].input == ["x", "w/read"]
        or nodes["MatMul"].input[0] == "x"
    )
    text = acc.Tensors("comment")[0].tensor_proto.string_val
    assert text == [b"run one"]


def test_file_writer_flushes_on_flush_and_rejects_bad_input(tmp_path):
    writer = tf.summary.FileWriter(str(tmp_path / "new_dir"), max_queue=100)
    s = tf.summary.scalar("a", tf.constant(2.0))
    with tf.Session() as sess:
        writer.add_summary(sess.run(s), 7)
    path = os.path.join(writer.get_logdir(), os.listdir(writer.get_logdir())[0])
    assert os.path.getsize(path) == 0  # queued
    writer.flush()
    assert os.path.getsize(path) > 0
    with pytest.raises(TypeError, match="serialized Summary"):
        writer.add_summary(3.0)
    with pytest.raises(ValueError, match="not a serialized Summary"):
        writer.add_summary(b"\xff\xff")
    writer.close()
    with pytest.raises(RuntimeError, match="closed"):
        writer.add_summary(b"")


def test_run_time_errors():
    h = tf.summary.histogram("h", tf.constant([1.0, np.nan]))
    a = tf.summary.scalar("same", 1.0)
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError, match="Nan in summary histogram for: h"):
            sess.run(h)
        with pytest.raises(errors.InvalidArgumentError, match="Duplicate tag same"):
            sess.run(tf.summary.merge([a, a]))
    with pytest.raises(ValueError, match="rank 0"):
        tf.summary.scalar("v", tf.zeros([2]))
    with pytest.raises(ValueError, match="channels|rank 4"):
        tf.summary.image("i", tf.zeros([1, 2, 2, 2]))
    assert tf.summary.merge_all(key="nothing_here") is None


def test_illegal_summary_names_are_cleaned_as_tensorflow_does():
    # TF1 example programs tag histograms with variable names such as "W1:0".
    w = tf.Variable(tf.ones([3]), name="W1")
    h = tf.summary.histogram(w.name, w)
    s = tf.summary.scalar("/loss value(train)", tf.reduce_sum(w), family="my fam")
    assert h.op.name == "W1_0"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        (hv,) = summary_pb2.Summary.FromString(sess.run(h)).value
        (sv,) = summary_pb2.Summary.FromString(sess.run(s)).value
    assert hv.tag == "W1_0" and hv.histo.num == 3
    # the tags TensorFlow 2.21's tf.compat.v1 gives for the same calls
    assert sv.tag == "my_fam/my_fam/loss_value_train_"
    assert sv.simple_value == 3.0


def round_trip_builder():
    """The summary ops for test_graph_def's round-trip table."""
    x = tf.placeholder(tf.float32, [2, 2, 2, 1], name="img")
    s = tf.summary.scalar("s", tf.reduce_sum(x))
    h = tf.summary.histogram("h", x)
    i = tf.summary.image("i", x)
    t = tf.summary.text("t", tf.constant("x"))
    m = tf.summary.merge([s, h, i, t])
    return [m], {"img:0": np.ones((2, 2, 2, 1), np.float32)}, []


def test_python_built_summary_is_written_and_read_back(tmp_path):
    summary = tf.Summary(value=[tf.Summary.Value(tag="accuracy", simple_value=0.75)])
    with tf.summary.FileWriter(str(tmp_path)) as writer:
        writer.add_summary(summary, 3)
    acc = event_accumulator.EventAccumulator(str(tmp_path))
    acc.Reload()
    events = acc.Scalars("accuracy")
    assert [(e.step, e.value) for e in events] == [(3, 0.75)]
    with pytest.raises(TypeError, match="real number"):
        tf.Summary.Value(tag="a", simple_value="high")


def test_session_log_and_run_metadata_load_in_tensorboard(tmp_path):
    from tensorboard.backend.event_processing import event_file_loader  # noqa: PLC0415

    x = tf.placeholder(tf.float32, [2], name="x")
    y = tf.reduce_sum(tf.square(x), name="y")
    md = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(y, {x: [1.0, 2.0]}, options=tf.RunOptions(trace_level=3), run_metadata=md)
    with tf.summary.FileWriter(str(tmp_path)) as writer:
        writer.add_session_log(tf.SessionLog(status=tf.SessionLog.START), 1)
        writer.add_run_metadata(md, "step_1", global_step=1)
        writer.add_session_log(
            tf.SessionLog(status=tf.SessionLog.CHECKPOINT, checkpoint_path="/ckpt/model-2"), 2
        )
        with pytest.raises(TypeError, match="SessionLog"):
            writer.add_session_log("START")
        with pytest.raises(ValueError, match="tag"):
            writer.add_run_metadata(md, "")
    (path,) = [os.path.join(tmp_path, f) for f in os.listdir(tmp_path)]
    events = list(event_file_loader.EventFileLoader(path).Load())
    logs = [(e.step, e.session_log.status, e.session_log.checkpoint_path)
            for e in events if e.HasField("session_log")]  # fmt: skip
    assert logs == [(1, 1, ""), (2, 3, "/ckpt/model-2")]
    acc = event_accumulator.EventAccumulator(str(tmp_path))
    acc.Reload()
    assert acc.Tags()["run_metadata"] == ["step_1"]
    stats = acc.RunMetadata("step_1").step_stats
    names = {n.node_name for d in stats.dev_stats for n in d.node_stats}
    assert "y" in names
    assert all(d.device for d in stats.dev_stats)
    with pytest.raises(ValueError, match="status"):
        tf.SessionLog(status=7)


def test_add_graph_writes_tensorflows_graph_def(tmp_path):
    # TensorFlow's own GraphDef (attrs, type attrs) with _output_shapes; a graph with a
    # while loop, which that format cannot hold yet, is still drawn from names and shapes.
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    w = tf.Variable(tf.ones([4, 2]), name="w")
    tf.nn.relu(tf.matmul(x, w, transpose_b=False), name="y")
    with tf.summary.FileWriter(str(tmp_path / "plain"), tf.get_default_graph()):
        pass
    acc = event_accumulator.EventAccumulator(str(tmp_path / "plain"))
    acc.Reload()
    nodes = {n.name: n for n in acc.Graph().node}
    assert nodes["MatMul"].attr["T"].type == 1  # DT_FLOAT, TF's type attr
    assert nodes["MatMul"].attr["transpose_b"].b is False
    dims = [d.size for d in nodes["MatMul"].attr["_output_shapes"].list.shape[0].dim]
    assert dims == [-1, 2]
    g = tf.Graph()
    with g.as_default():
        tf.while_loop(lambda i: i < 3, lambda i: i + 1, [tf.constant(0)], name="loop")
    with tf.summary.FileWriter(str(tmp_path / "loop"), g):
        pass
    acc = event_accumulator.EventAccumulator(str(tmp_path / "loop"))
    acc.Reload()
    assert "loop" in {n.name for n in acc.Graph().node}
