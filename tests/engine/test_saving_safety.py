"""Loading models and checkpoints from files we did not write.

The model server loads SavedModel directories from outside. Whatever the bytes are, loading
gives a clean load or a typed ``errors.OpError`` (DataLoss/InvalidArgument/NotFound) whose
message names the file or its directory -- never another exception type, a crash, unbounded
memory, or code from the file running (no pickle, no eval anywhere in the engine).

Three kinds of tests: a hypothesis fuzzer over damaged copies of a small but representative
model (truncation, byte flips, insertions, deletions, random bytes, random msgpack documents)
and of a ``Saver`` checkpoint; hand-built hostile documents re-encoded with ``msgpack.packb``,
each checked for its error type, message, time and peak memory; and a scan of the sources for
pickle/eval/exec. ``FLOWSERVE_FUZZ_EXAMPLES=2000 FLOWSERVE_FUZZ_RANDOM=1`` runs a longer,
randomized fuzzing campaign (by default examples are derandomized so CI is reproducible).
"""

import ast
import contextlib
import copy
import io
import os
import re
import shutil
import tokenize
import tracemalloc
import zlib
from pathlib import Path

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import engine as tf
from engine import errors
from engine.saving import bundle
from engine.saving.graph_def import GraphDefLimits
from engine.saving.saved_model import LoadOptions

ROOT = Path(__file__).resolve().parents[2]
META = "saved_model.msgpack"
INDEX = "variables/variables.index"
DATA = "variables/variables.data-00000-of-00001"
TYPED = (errors.DataLossError, errors.InvalidArgumentError, errors.NotFoundError)

_EXAMPLES = int(os.environ.get("FLOWSERVE_FUZZ_EXAMPLES", "0")) or None
_FUZZ = dict(
    deadline=None,
    database=None,
    derandomize=not os.environ.get("FLOWSERVE_FUZZ_RANDOM"),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


# -----------------------------------------------------------------------------------------
# The model and checkpoint under attack
# -----------------------------------------------------------------------------------------


def _build_model_graph():
    """An MLP with cond and while_loop (so function bodies are serialized), float, int and
    string variables. The loop runs once per batch row: a damaged constant cannot make the
    serving run loop for hours, and no op allocates from a shape stored in the file."""
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    w1 = tf.Variable(np.arange(12, dtype=np.float32).reshape(4, 3) / 10, name="w1")
    b1 = tf.Variable(np.zeros(3, np.float32), name="b1")
    w2 = tf.Variable(np.ones((3, 2), np.float32), name="w2")
    labels = tf.Variable(np.array([b"cat", b"dog"], dtype=object), name="labels")
    scale = tf.Variable(3, name="scale")
    h = tf.nn.relu(tf.matmul(x, w1) + b1)
    h = tf.cond(tf.reduce_sum(h) > 0, lambda: h * 2.0, lambda: h - 1.0)
    _, h = tf.while_loop(
        lambda i, a: i < tf.shape(x)[0], lambda i, a: (i + 1, a * 0.5), [tf.constant(0), h]
    )
    y = tf.identity(tf.matmul(h, w2) * tf.cast(scale, tf.float32), name="y")
    names = tf.identity(labels, name="names")
    return x, y, names


class _Fixture(tuple):
    """A tuple that keeps hypothesis failure reports short (no file bytes)."""

    def __repr__(self) -> str:
        return f"<{self[0]!s}>"


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """(export_dir, {file: original bytes}, expected y for ones((2, 4)))."""
    d = str(tmp_path_factory.mktemp("safety") / "model")
    with tf.Graph().as_default():
        x, y, names = _build_model_graph()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            expected = sess.run(y, {x: np.ones((2, 4), np.float32)})
            tf.saved_model.simple_save(sess, d, {"x": x}, {"y": y, "names": names})
    originals = {f: Path(d, f).read_bytes() for f in (META, INDEX, DATA)}
    return _Fixture((d, originals, expected))


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """(prefix, graph, saver, {file suffix: original bytes}) of a saved checkpoint."""
    d = tmp_path_factory.mktemp("ckpt")
    g = tf.Graph()
    with g.as_default():
        _build_model_graph()
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            prefix = saver.save(sess, str(d / "model.ckpt"), global_step=1)
    originals = {
        s: Path(prefix + s).read_bytes() for s in (".index", ".data-00000-of-00001", ".meta")
    }
    return _Fixture((prefix, g, saver, originals))


def _copy_model(model, dest) -> str:
    d = str(dest)
    shutil.copytree(model[0], d)
    return d


def _serve(sess, meta) -> None:
    """Runs every signature once with ones of the declared dtype and shape (batch 2)."""
    g = sess.graph
    for sig in meta.signature_def.values():
        feeds = {}
        for info in sig.inputs.values():
            t = g.get_tensor_by_name(info.name)
            shape = t.shape.merge_with(info.shape)
            dims = (
                [2, 4] if shape.rank is None else [2 if d is None else d for d in shape.as_list()]
            )
            if int(np.prod(dims, dtype=np.float64)) > 1 << 20:
                return  # a damaged but consistent input shape: not worth gigabytes of ones
            if info.engine_dtype is tf.string:
                feeds[t] = np.full(dims, b"a", dtype=object)
            else:
                feeds[t] = np.ones(dims, info.engine_dtype.np)
        sess.run({a: g.get_tensor_by_name(i.name) for a, i in sig.outputs.items()}, feeds)


def _load_and_serve(export_dir, options=None):
    """None on a clean load and run, else the typed error (anything else propagates)."""
    with tf.Graph().as_default() as g, tf.Session(graph=g) as sess:
        try:
            meta = tf.saved_model.load(sess, ["serve"], export_dir, options=options)
        except errors.OpError as e:
            assert isinstance(e, TYPED), f"loading raised {type(e).__name__}: {e}"
            assert export_dir in str(e), f"the error does not name the model's files: {e}"
            return e
        try:
            _serve(sess, meta)
        except errors.OpError as e:
            # The file loaded as a valid graph whose computation fails (a damaged weight or
            # constant): a run-time error of the graph, which cannot name the file.
            assert isinstance(e, TYPED), f"serving raised {type(e).__name__}: {e}"
            return e
    return None


# -----------------------------------------------------------------------------------------
# Fuzzing
# -----------------------------------------------------------------------------------------

_MSGPACK_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats()
    | st.text(max_size=8)
    | st.binary(max_size=8)
    | st.sampled_from(
        [
            "format",
            "version",
            "nodes",
            "tensors",
            "flowserve.bundle",
            "flowserve.meta_graph",
            "flowserve.graph",
            "name",
            "shape",
            "dtype",
        ]
    ),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def _slots(obj, out):
    """Every (container, key) of a decoded msgpack document, depth first."""
    items = (
        obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    )
    for k, v in list(items):
        out.append((obj, k))
        _slots(v, out)
    return out


_TWEAKS = [-1, 1, 2, -(2**31), 2**31, 2**40, 2**63, -(2**63)]


@st.composite
def _restructured(draw, data: bytes) -> bytes:
    """A well-formed msgpack document with a few values replaced, deleted or swapped for
    another value of the document: reaches the schema checks that byte flips rarely pass."""
    doc = msgpack.unpackb(data, raw=False)
    for _ in range(draw(st.integers(1, 3))):
        slots = _slots(doc, [])
        if not slots:
            break
        container, key = draw(st.sampled_from(slots))
        value = container[key]
        action = draw(st.sampled_from(["replace", "delete", "swap", "tweak"]))
        if action == "delete":
            del container[key]
        elif action == "swap":
            other, okey = draw(st.sampled_from(slots))
            container[key] = copy.deepcopy(other[okey])  # a copy: never a cycle
        elif action == "tweak" and isinstance(value, int) and not isinstance(value, bool):
            container[key] = max(-(2**63), min(2**64 - 1, value + draw(st.sampled_from(_TWEAKS))))
        elif action == "tweak" and isinstance(value, (str, bytes)) and value:
            container[key] = value[: draw(st.integers(0, len(value) - 1))]
        else:
            container[key] = draw(_MSGPACK_VALUES)
    return msgpack.packb(doc, use_bin_type=True)


def _is_msgpack(data: bytes) -> bool:
    try:
        msgpack.unpackb(data, raw=False)
    except ValueError:
        return False
    return True


@st.composite
def _damaged(draw, data: bytes) -> bytes:
    """``data`` truncated, with bytes flipped, inserted or deleted, replaced outright, or (a
    msgpack file) restructured."""
    n = len(data)
    kinds = ["truncate", "flip", "insert", "delete", "random", "msgpack"]
    kind = draw(st.sampled_from(kinds + ["structure"] * 3 if _is_msgpack(data) else kinds))
    if kind == "structure":
        return draw(_restructured(data))
    if kind == "truncate":
        return data[: draw(st.integers(0, n - 1))]
    if kind == "flip":
        out = bytearray(data)
        for pos, mask in draw(
            st.lists(st.tuples(st.integers(0, n - 1), st.integers(1, 255)), min_size=1, max_size=8)
        ):
            out[pos] ^= mask
        return bytes(out)
    if kind == "insert":
        pos = draw(st.integers(0, n))
        return data[:pos] + draw(st.binary(min_size=1, max_size=16)) + data[pos:]
    if kind == "delete":
        pos = draw(st.integers(0, n - 1))
        return data[:pos] + data[pos + draw(st.integers(1, 16)) :]
    if kind == "random":
        return draw(st.binary(max_size=2 * n))
    return msgpack.packb(draw(_MSGPACK_VALUES), use_bin_type=True)


_counter = iter(range(1 << 62))


@pytest.mark.parametrize("target", [META, INDEX, DATA])
@settings(max_examples=_EXAMPLES or 300, **_FUZZ)
@given(st.data())
def test_fuzzed_saved_model_loads_cleanly_or_raises_a_typed_error(model, tmp_path, target, data):
    original = model[1][target]
    damaged = data.draw(_damaged(original), label="damaged")
    options = LoadOptions(
        optimize=data.draw(st.booleans(), label="optimize"),
        verify_checksums=data.draw(st.booleans(), label="verify"),
    )
    d = _copy_model(model, tmp_path / f"m{next(_counter)}")
    try:
        Path(d, target).write_bytes(damaged)
        err = _load_and_serve(d, options)
        event(f"outcome: {type(err).__name__ if err else 'loaded and served'}")
        if damaged == original:
            assert err is None
    finally:
        shutil.rmtree(d)


def test_fuzz_baseline_the_undamaged_model_loads_and_serves(model, tmp_path):
    d = _copy_model(model, tmp_path / "m")
    assert _load_and_serve(d) is None
    with tf.Graph().as_default() as g, tf.Session(graph=g) as sess:
        meta = tf.saved_model.load(sess, ["serve"], d)
        sig = meta.signature_def["serving_default"]
        y = sess.run(sig.outputs["y"].name, {sig.inputs["x"].name: np.ones((2, 4), np.float32)})
        names = sess.run(sig.outputs["names"].name)
    np.testing.assert_array_equal(y, model[2])
    assert list(names) == [b"cat", b"dog"]
    ops = {op.type for op in g.get_operations()}
    assert {"If", "While", "VariableV2"} <= ops


@pytest.mark.parametrize("suffix", [".index", ".data-00000-of-00001", ".meta"])
@settings(max_examples=_EXAMPLES or 100, **_FUZZ)
@given(st.data())
def test_fuzzed_checkpoint_restores_cleanly_or_raises_a_typed_error(
    checkpoint, tmp_path, suffix, data
):
    """Saver.restore into the graph the checkpoint came from; for a damaged ``.meta``,
    import_meta_graph into a fresh graph and restore with the Saver it returns."""
    prefix, g, saver, originals = checkpoint
    damaged = data.draw(_damaged(originals[suffix]), label="damaged")
    copy = str(tmp_path / f"c{next(_counter)}" / "model.ckpt-1")
    os.makedirs(os.path.dirname(copy))
    for s, raw in originals.items():
        Path(copy + s).write_bytes(damaged if s == suffix else raw)
    if suffix == ".meta":
        g = tf.Graph()
    try:
        with g.as_default(), tf.Session(graph=g) as sess:
            if suffix == ".meta":
                saver = tf.train.import_meta_graph(copy + ".meta")
            if saver is not None:
                saver.restore(sess, copy)
            try:
                sess.run("y:0", {"x:0": np.ones((2, 4), np.float32)})
            except (errors.OpError, KeyError, ValueError):
                pass  # a damaged .meta may have lost or changed y or x: not a loading matter
    except errors.OpError as e:
        assert isinstance(e, TYPED), f"restore raised {type(e).__name__}: {e}"
        assert copy in str(e), f"the error does not name the checkpoint: {e}"
        event(f"outcome: {type(e).__name__}")
    else:
        event("outcome: restored")
    shutil.rmtree(os.path.dirname(copy))


@settings(max_examples=_EXAMPLES or 40, **_FUZZ)
@given(text=st.text(max_size=200) | st.binary(max_size=200))
def test_fuzzed_checkpoint_state_file_gives_a_path_none_or_a_typed_error(tmp_path, text):
    d = tmp_path / f"s{next(_counter)}"
    d.mkdir()
    (d / "checkpoint").write_bytes(text if isinstance(text, bytes) else text.encode())
    try:
        latest = tf.train.latest_checkpoint(str(d))
    except errors.OpError as e:
        assert isinstance(e, errors.DataLossError) and str(d) in str(e)
    else:
        assert latest is None or isinstance(latest, str)


# -----------------------------------------------------------------------------------------
# Hand-built hostile documents
# -----------------------------------------------------------------------------------------


@contextlib.contextmanager
def _cheap(mib=64):
    """Asserts the block allocates under ``mib`` MiB at peak (a claimed size is never trusted).

    Memory, not time, is what a hostile size could exhaust; timing bounds would only make the
    test depend on how busy the machine is.
    """
    tracemalloc.start()
    try:
        yield
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < mib << 20, f"allocated {peak >> 20} MiB"


def _doc(d, name):
    return msgpack.unpackb(Path(d, name).read_bytes(), raw=False)


def _write_doc(d, name, doc):
    Path(d, name).write_bytes(msgpack.packb(doc, use_bin_type=True))


def _edit_meta(d, fn):
    doc = _doc(d, META)
    mg = doc["meta_graphs"][0]
    fn(doc, mg, {n["name"]: n for n in mg["graph"]["nodes"]})
    _write_doc(d, META, doc)


def _edit_index(d, fn):
    doc = _doc(d, INDEX)
    fn(doc, {t["name"]: t for t in doc["tensors"]})
    _write_doc(d, INDEX, doc)


def _load_fails(d, etype, *patterns, file=None, options=None, mib=64):
    """Loads ``d`` expecting ``etype`` whose message names ``file`` (default: the directory)
    and matches every regex of ``patterns``, allocating little."""
    with _cheap(mib), tf.Graph().as_default() as g, tf.Session(graph=g) as sess:
        with pytest.raises(etype) as info:
            tf.saved_model.load(sess, ["serve"], d, options=options)
    msg = str(info.value)
    assert isinstance(info.value, TYPED), msg
    assert os.path.join(d, file) in msg if file else d in msg, msg
    for p in patterns:
        assert re.search(p, msg), f"{p!r} not in {msg!r}"
    return msg


def _set(obj, key, value):
    obj[key] = value


# index edits: (test id, edit, message pattern)
INDEX_CASES = [
    (
        "shape_2**40_squared",
        lambda d, t: _set(t["w1"], "shape", [2**40, 2**40]),
        r"'w1'.*needs \d+ bytes, index says 48",
    ),
    (
        "string_shape_2**40_squared",
        lambda d, t: _set(t["labels"], "shape", [2**40, 2**40]),
        r"string tensor 'labels' has too many elements",
    ),
    ("dim_over_limit", lambda d, t: _set(t["w1"], "shape", [2**41, 0]), r"dimension of 'w1'"),
    (
        "size_not_shape_times_itemsize",
        lambda d, t: _set(t["w1"], "size", 44),
        r"needs 48 bytes, index says 44",
    ),
    ("negative_dims", lambda d, t: _set(t["w1"], "shape", [-4, -3]), r"dimension of 'w1'.*-4"),
    ("float_dim", lambda d, t: _set(t["w1"], "shape", [4.0, 3]), r"dimension of 'w1'"),
    ("string_dim", lambda d, t: _set(t["w1"], "shape", ["4", 3]), r"dimension of 'w1'"),
    ("bool_dim", lambda d, t: _set(t["w1"], "shape", [True, 12]), r"dimension of 'w1'"),
    ("none_dim", lambda d, t: _set(t["w1"], "shape", [None]), r"dimension of 'w1'"),
    ("shape_not_a_list", lambda d, t: _set(t["w1"], "shape", 12), r"'w1' has an invalid shape"),
    (
        "rank_over_limit",
        lambda d, t: _set(t["w1"], "shape", [1] * 33),
        r"'w1' has an invalid shape",
    ),
    ("offset_past_the_data_file", lambda d, t: _set(t["w2"], "offset", 10**6), r"offset of 'w2'"),
    ("negative_offset", lambda d, t: _set(t["w2"], "offset", -64), r"offset of 'w2'"),
    (
        "size_past_the_data_file",
        lambda d, t: (_set(t["labels"], "shape", [2**20]), _set(t["labels"], "size", 10**6)),
        r"size of 'labels'",
    ),
    ("data_size_over_limit", lambda d, t: _set(d, "data_size", 2**41), r"data_size"),
    ("duplicate_tensor_names", lambda d, t: d["tensors"].append(dict(t["w1"])), r"duplicate name"),
    ("unnamed_tensor", lambda d, t: t["w1"].pop("name"), r"missing or duplicate name"),
    (
        "unknown_dtype",
        lambda d, t: _set(t["w1"], "dtype", "float128"),
        r"'w1' has unsupported dtype 'float128'",
    ),
    ("reference_dtype", lambda d, t: _set(t["w1"], "dtype", "float32_ref"), r"unsupported dtype"),
    ("dtype_not_a_string", lambda d, t: _set(t["w1"], "dtype", 1), r"unsupported dtype"),
    ("crc_not_an_int", lambda d, t: _set(t["w1"], "crc32", "x"), r"crc32 of 'w1'"),
    (
        "version_from_the_future",
        lambda d, t: _set(d, "version", 99),
        r"version 99, newer than the supported 1; upgrade",
    ),
    ("version_missing", lambda d, t: d.pop("version"), r"missing format version"),
    (
        "wrong_format_name",
        lambda d, t: _set(d, "format", "tensorflow.bundle"),
        r"not a flowserve.bundle index",
    ),
    (
        "other_data_file",
        lambda d, t: _set(d, "data_file", "../../../etc/passwd"),
        r"unexpected data file name",
    ),
    ("tensors_not_a_list", lambda d, t: _set(d, "tensors", {"w1": 1}), r"tensors must be a list"),
    ("entry_not_a_map", lambda d, t: d["tensors"].append([1, 2]), r"not a map"),
    ("metadata_not_a_map", lambda d, t: _set(d, "metadata", [1]), r"metadata must be a map"),
    ("variable_missing", lambda d, t: d["tensors"].remove(t["w2"]), r"no value for variable 'w2'"),
    (
        "dtype_differs_from_the_graph",
        lambda d, t: _set(t["w1"], "dtype", "int32"),
        r"'w1' is int32 on disk but float32",
    ),
    (
        "shape_differs_from_the_graph",
        lambda d, t: _set(t["w1"], "shape", [3, 4]),
        r"'w1' has shape \[3, 4\] on disk",
    ),
]


@pytest.mark.parametrize(
    "edit,pattern", [c[1:] for c in INDEX_CASES], ids=[c[0] for c in INDEX_CASES]
)
def test_hostile_index_entries_raise_data_loss_naming_the_index(model, tmp_path, edit, pattern):
    d = _copy_model(model, tmp_path / "m")
    _edit_index(d, edit)
    _load_fails(d, errors.DataLossError, pattern, file=INDEX)


def test_huge_claimed_shape_fails_fast_without_allocating(model, tmp_path):
    d = _copy_model(model, tmp_path / "m")
    _edit_index(
        d, lambda doc, t: (_set(t["w1"], "shape", [2**40, 2**40]), _set(t["w1"], "size", 2**64 - 1))
    )
    _load_fails(d, errors.DataLossError, r"size of 'w1'", file=INDEX, mib=16)


def test_data_file_shorter_than_the_index_claims(model, tmp_path):
    d = _copy_model(model, tmp_path / "m")
    data = Path(d, DATA).read_bytes()
    Path(d, DATA).write_bytes(data[: len(data) // 2])
    _load_fails(d, errors.DataLossError, r"truncated", file=DATA)
    Path(d, DATA).write_bytes(data)
    _edit_index(d, lambda doc, t: _set(doc, "data_size", len(data) + 64))
    _load_fails(d, errors.DataLossError, r"index expects \d+ \(truncated\)", file=DATA)


def test_damaged_tensor_bytes_fail_the_checksum(model, tmp_path):
    d = _copy_model(model, tmp_path / "m")
    entry = {t["name"]: t for t in _doc(d, INDEX)["tensors"]}["w1"]
    data = bytearray(Path(d, DATA).read_bytes())
    data[entry["offset"] + 5] ^= 0x40
    Path(d, DATA).write_bytes(bytes(data))
    _load_fails(d, errors.DataLossError, r"checksum mismatch for tensor 'w1'", file=DATA)


def _replace_string_payload(d, payload: bytes):
    """Writes ``payload`` as the 'labels' tensor's bytes, with a matching size and crc."""
    index = _doc(d, INDEX)
    entry = {t["name"]: t for t in index["tensors"]}["labels"]
    data = bytearray(Path(d, DATA).read_bytes())
    start = entry["offset"]
    room = 64 - entry["size"] % 64 + entry["size"]
    assert len(payload) <= room
    data[start : start + len(payload)] = payload
    entry["size"], entry["crc32"] = len(payload), zlib.crc32(payload)
    Path(d, DATA).write_bytes(bytes(data))
    _write_doc(d, INDEX, index)


@pytest.mark.parametrize(
    "payload,pattern",
    [
        (msgpack.packb([1, 2]), r"does not hold 2 byte strings"),
        (msgpack.packb([b"cat", None], use_bin_type=True), r"does not hold 2 byte strings"),
        (msgpack.packb([b"cat"], use_bin_type=True), r"does not hold 2 byte strings"),
        (msgpack.packb([[b"cat"], [b"dog"]], use_bin_type=True), r"does not hold 2 byte strings"),
        (msgpack.packb({b"a": b"b"}, use_bin_type=True), r"string tensor 'labels' is not valid"),
        (msgpack.packb(b"catdog", use_bin_type=True), r"does not hold 2 byte strings"),
        (b"\xdd\xff\xff\xff\xff", r"string tensor 'labels' is not valid"),  # 4G-element array
        (b"\x92\xc4\xff", r"string tensor 'labels' is not valid"),  # 255-byte bin, 0 present
        (msgpack.packb([b"a", b"b"]) + b"\x00", r"string tensor 'labels' is not valid"),
    ],
    ids=[
        "ints",
        "none_not_bytes",
        "too_few",
        "nested",
        "map",
        "bare_bytes",
        "huge_array",
        "truncated_bin",
        "trailing_bytes",
    ],
)
def test_string_tensor_payload_that_is_not_byte_strings(model, tmp_path, payload, pattern):
    d = _copy_model(model, tmp_path / "m")
    _replace_string_payload(d, payload)
    _load_fails(d, errors.DataLossError, pattern, file=DATA, mib=16)


def test_index_over_the_size_limit(model, tmp_path, monkeypatch):
    d = _copy_model(model, tmp_path / "m")
    monkeypatch.setattr(bundle.Limits, "max_index_bytes", 100)
    _load_fails(d, errors.DataLossError, r"index is \d+ bytes, over the 100 limit", file=INDEX)


def _nested_functions(levels: int) -> dict:
    fn = None
    for i in range(levels):
        node = {
            "name": "n",
            "op": "NoOp",
            "inputs": [],
            "device": "",
            "attrs": {} if fn is None else {"_body": ["func", fn]},
        }
        fn = {"name": f"f{i}", "nodes": [node], "inputs": [], "outputs": [], "control_outputs": []}
    return fn


def _add_node(mg, node):
    node = {"inputs": [], "device": "", "attrs": {}, **node}
    mg["graph"]["nodes"].append(node)


def _arg_not_an_input(_doc, _mg, n):
    n["cond"]["attrs"]["then_branch"][1]["inputs"] = []


def _py_func_node(_doc, mg, _n):
    _add_node(
        mg,
        {
            "name": "evil",
            "op": "PyFunc",
            "inputs": ["x:0"],
            "attrs": {
                "token": ["s", "pyfunc_0"],
                "Tin": ["list", [["dtype", "float32"]]],
                "Tout": ["list", [["dtype", "float32"]]],
            },
        },
    )


# meta graph edits: (test id, edit, message pattern)
META_CASES = [
    (
        "format_version_from_the_future",
        lambda doc, mg, n: _set(doc, "version", 99),
        r"format version 99, newer than the supported 1; upgrade",
    ),
    (
        "graph_version_from_the_future",
        lambda doc, mg, n: _set(mg["graph"], "version", 99),
        r"graph format version 99 is newer than the supported version 1; upgrade",
    ),
    (
        "not_a_model_file",
        lambda doc, mg, n: _set(doc, "format", "flowserve.bundle"),
        r"not a flowserve model file",
    ),
    ("no_meta_graphs", lambda doc, mg, n: _set(doc, "meta_graphs", []), r"no meta graphs"),
    (
        "unregistered_op_type",
        lambda doc, mg, n: _set(n["Relu"], "op", "FancyNewOp"),
        r"node 'Relu' uses op type not registered 'FancyNewOp'",
    ),
    ("py_func_node", _py_func_node, r"'PyFunc', which runs Python code"),
    (
        "input_from_a_missing_node",
        lambda doc, mg, n: _set(n["Relu"], "inputs", ["nothere:0"]),
        r"node 'Relu' has unknown input node 'nothere'",
    ),
    (
        "missing_control_input",
        lambda doc, mg, n: n["init"]["inputs"].append("^ghost"),
        r"unknown control input 'ghost'",
    ),
    (
        "input_output_index_out_of_range",
        lambda doc, mg, n: _set(n["Relu"], "inputs", ["add:99999999999999999999"]),
        r"reads output 99999999999999999999 of 'add'",
    ),
    (
        "cycle",
        lambda doc, mg, n: _set(n["add"], "inputs", ["Relu:0", "b1/read:0"]),
        r"cycle through node",
    ),
    (
        "self_loop",
        lambda doc, mg, n: _set(n["Relu"], "inputs", ["Relu:0"]),
        r"cycle through node 'Relu'",
    ),
    (
        "duplicate_node_names",
        lambda doc, mg, n: mg["graph"]["nodes"].append(dict(n["Relu"])),
        r"duplicate node name 'Relu'",
    ),
    (
        "invalid_node_name",
        lambda doc, mg, n: _set(n["y"], "name", "y\nimport os"),
        r"not a valid node name",
    ),
    (
        "const_bytes_do_not_match_shape",
        lambda doc, mg, n: _set(n["Greater/y"]["attrs"]["value"][1], "data", b"\0" * 7),
        r"'Greater/y' attr 'value': tensor of dtype float32 and shape \[\] needs 4 bytes, got 7",
    ),
    (
        "const_shape_2**40_squared",
        lambda doc, mg, n: _set(n["Greater/y"]["attrs"]["value"][1], "shape", [2**40, 2**40]),
        r"needs \d+ bytes, got 4",
    ),
    (
        "const_negative_dim",
        lambda doc, mg, n: _set(n["Greater/y"]["attrs"]["value"][1], "shape", [-1]),
        r"invalid dimension -1",
    ),
    (
        "const_unknown_dtype",
        lambda doc, mg, n: _set(n["Greater/y"]["attrs"]["value"][1], "dtype", "complex512"),
        r"unsupported tensor dtype 'complex512'",
    ),
    (
        "const_string_payload_not_bytes",
        lambda doc, mg, n: _set(
            n["labels/initial_value"]["attrs"]["value"][1], "data", msgpack.packb([1, 2])
        ),
        r"string tensor does not hold 2 byte strings",
    ),
    (
        "functions_nested_beyond_the_limit",
        lambda doc, mg, n: _add_node(
            mg,
            {
                "name": "deep",
                "op": "NoOp",
                "attrs": {"_f": ["func", _nested_functions(GraphDefLimits.max_nesting + 2)]},
            },
        ),
        r"functions nested too deeply",
    ),
    (
        "string_where_a_dtype_is_expected",
        lambda doc, mg, n: _set(n["x"]["attrs"], "dtype", ["s", "float32"]),
        r"node 'x' \(Placeholder\): attr 'dtype' must be a type attr, got 's'",
    ),
    (
        "int_where_a_dtype_is_expected",
        lambda doc, mg, n: _set(n["w1"]["attrs"], "dtype", ["i", 1]),
        r"node 'w1' \(VariableV2\): attr 'dtype' must be a type attr, got 'i'",
    ),
    (
        "string_where_a_function_is_expected",
        lambda doc, mg, n: _set(n["cond"]["attrs"], "then_branch", ["s", "cond_true"]),
        r"node 'cond' \(If\): attr 'then_branch' must be a func attr",
    ),
    (
        "int_where_a_loop_condition_is_expected",  # only compiled when a session runs it
        lambda doc, mg, n: _set(n["while"]["attrs"], "cond", ["i", 3]),
        r"node 'while' \(While\): attr 'cond' must be a func attr, got 'i'",
    ),
    (
        "string_where_an_output_dtype_is_expected",
        lambda doc, mg, n: _set(n["Cast"]["attrs"], "DstT", ["s", "float32"]),
        r"node 'Cast' \(Cast\): attr 'DstT' must be a type attr",
    ),
    (
        "string_where_a_tensor_is_expected",
        lambda doc, mg, n: _set(n["Greater/y"]["attrs"], "value", ["s", "0.0"]),
        r"node 'Greater/y' \(Const\): attr 'value' must be a tensor attr, got 's'",
    ),
    (
        "string_where_a_shape_is_expected",
        lambda doc, mg, n: _set(n["w1"]["attrs"], "shape", ["s", "[4, 3]"]),
        r"node 'w1' \(VariableV2\): attr 'shape' must be a shape attr",
    ),
    (
        "dtype_unknown",
        lambda doc, mg, n: _set(n["x"]["attrs"], "dtype", ["dtype", "float8"]),
        r"unknown dtype 'float8'",
    ),
    (
        "attr_tag_and_value_disagree",
        lambda doc, mg, n: _set(n["MatMul"]["attrs"], "transpose_a", ["b", "yes"]),
        r"malformed attr value with tag 'b'",
    ),
    (
        "attr_not_a_pair",
        lambda doc, mg, n: _set(n["MatMul"]["attrs"], "transpose_a", True),
        r"attr must be a \[tag, value\] pair",
    ),
    (
        "unknown_attr_name",
        lambda doc, mg, n: _set(n["MatMul"]["attrs"], "transpose_x", ["b", True]),
        r"node 'MatMul' \(MatMul\) has unknown attrs \['transpose_x'\]",
    ),
    (
        "missing_attr_of_an_op_the_session_binds",
        lambda doc, mg, n: n["while"]["attrs"].pop("cond"),
        r"node 'while' \(While\) lacks the attrs \['cond'\]",
    ),
    (
        "session_bound_argument_as_an_attr",
        lambda doc, mg, n: _set(n["w1"]["attrs"], "slot", ["i", 0]),
        r"node 'w1' \(VariableV2\) has unknown attrs \['slot'\]",
    ),
    (
        "missing_attr",
        lambda doc, mg, n: n["MatMul"]["attrs"].pop("transpose_b"),
        r"node 'MatMul' \(MatMul\) lacks the attrs \['transpose_b'\]",
    ),
    (
        "function_arg_not_among_its_inputs",
        _arg_not_an_input,
        r"function 'cond_true'.*Arg ops and its inputs differ",
    ),
    (
        "function_output_missing",
        lambda doc, mg, n: _set(n["cond"]["attrs"]["then_branch"][1], "outputs", ["nope:0"]),
        r"function 'cond_true'",
    ),
    (
        "invalid_device",
        lambda doc, mg, n: _set(n["MatMul"], "device", "/job:x/task:zz"),
        r"node 'MatMul' has an invalid device",
    ),
    (
        "signature_names_a_missing_tensor",
        lambda doc, mg, n: _set(
            mg["signatures"]["serving_default"]["outputs"]["y"], "name", "nope:0"
        ),
        r"signature 'serving_default' names tensor 'nope:0' \('y'\), which is not in the graph",
    ),
    (
        "signature_names_an_operation",
        lambda doc, mg, n: _set(mg["signatures"]["serving_default"]["inputs"]["x"], "name", "x"),
        r"signature 'serving_default' names tensor 'x'",
    ),
    (
        "signature_dtype_differs_from_the_graph",
        lambda doc, mg, n: _set(
            mg["signatures"]["serving_default"]["inputs"]["x"], "dtype", "int32"
        ),
        r"declares 'x:0' \('x'\) as int32",
    ),
    (
        "signature_shape_differs_from_the_graph",
        lambda doc, mg, n: _set(
            mg["signatures"]["serving_default"]["inputs"]["x"], "shape", [-1, 5]
        ),
        r"declares 'x:0' \('x'\) as float32 \(\?, 5\)",
    ),
    (
        "signature_unknown_dtype",
        lambda doc, mg, n: _set(
            mg["signatures"]["serving_default"]["inputs"]["x"], "dtype", "quux"
        ),
        r"unknown dtype 'quux'",
    ),
    (
        "signature_negative_dim",
        lambda doc, mg, n: _set(
            mg["signatures"]["serving_default"]["inputs"]["x"], "shape", [-7, 4]
        ),
        r"malformed shape",
    ),
    (
        "variable_record_names_a_non_variable",
        lambda doc, mg, n: _set(mg["variables"][0], "name", "MatMul"),
        r"variable 'MatMul' does not match its ops",
    ),
    (
        "variable_record_malformed",
        lambda doc, mg, n: _set(mg["variables"][0], "initializer", 7),
        r"has a malformed record",
    ),
    (
        "variable_listed_twice",
        lambda doc, mg, n: mg["variables"].append(mg["variables"][0]),
        r"listed twice",
    ),
    (
        "init_op_missing",
        lambda doc, mg, n: _set(mg, "init_op", "ghost"),
        r"init op 'ghost' is not in the graph",
    ),
    ("tags_not_strings", lambda doc, mg, n: _set(mg, "tags", [1]), r"tags must be a list"),
    (
        "nodes_not_a_list",
        lambda doc, mg, n: _set(mg["graph"], "nodes", {"a": 1}),
        r"nodes must be a list",
    ),
    ("node_without_op", lambda doc, mg, n: n["Relu"].pop("op"), r"lacks a name or op type"),
]


@pytest.mark.parametrize(
    "edit,pattern", [c[1:] for c in META_CASES], ids=[c[0] for c in META_CASES]
)
def test_hostile_graph_documents_raise_data_loss_naming_the_file(model, tmp_path, edit, pattern):
    d = _copy_model(model, tmp_path / "m")
    _edit_meta(d, edit)
    _load_fails(d, errors.DataLossError, pattern, file=META)
    # optimizing for serving imports the same hostile graph first: the same clean error
    _load_fails(d, errors.DataLossError, file=META, options=LoadOptions(optimize=True))


def test_optimizing_on_load_never_folds_a_huge_constant(tmp_path):
    """Constant folding runs kernels while the model loads: a Fill of constant dims may ask
    for any amount of memory, so it is left for run time."""
    d = str(tmp_path / "m")
    x = tf.placeholder(tf.float32, [], name="x")
    big = tf.fill(tf.constant([8192, 8192]), 1.0)  # 256 MiB if folded
    small = tf.fill(tf.constant([2, 2]), 3.0)  # folded
    y = tf.identity(x + tf.reduce_sum(big) + tf.reduce_sum(small), name="y")
    with tf.Session() as sess:
        tf.saved_model.simple_save(sess, d, {"x": x}, {"y": y})
    with _cheap(mib=32), tf.Graph().as_default() as g, tf.Session(graph=g) as sess:
        tf.saved_model.load(sess, ["serve"], d, options=LoadOptions(optimize=True))
    assert [op.type for op in g.get_operations()].count("Fill") == 1


def test_scalar_attr_of_the_wrong_kind_is_refused_at_import(model, tmp_path):
    """Every attr has a declared type, so a bool flag given a string is refused when the graph
    is read, even though the op's inference never reads it."""
    d = _copy_model(model, tmp_path / "m")
    _edit_meta(d, lambda doc, mg, n: _set(n["Sum"]["attrs"], "keep_dims", ["s", "yes"]))
    _load_fails(
        d, errors.DataLossError, r"node 'Sum' \(Sum\): attr 'keep_dims' must be a bool attr"
    )


def test_deeply_nested_list_attrs_do_not_recurse(model, tmp_path):
    d = _copy_model(model, tmp_path / "m")
    _edit_meta(d, lambda doc, mg, n: _set(n["Relu"]["attrs"], "_nested", None))
    raw = Path(d, META).read_bytes()
    marker = msgpack.packb("_nested") + b"\xc0"
    assert raw.count(marker) == 1
    # ["list", [["list", [ ... ["b", true] ... ]]]]: 480 levels, within msgpack's depth limit
    nested = b"\x92\xa4list\x91" * 480 + msgpack.packb(["b", True])
    Path(d, META).write_bytes(raw.replace(marker, marker[:-1] + nested))
    _load_fails(d, errors.DataLossError, r"list attrs hold scalars only", file=META)


@pytest.mark.parametrize(
    "blob",
    [
        b"\xdd\xff\xff\xff\xff",  # an array claiming 2**32 - 1 elements
        b"\xdf\xff\xff\xff\xff",  # a map claiming 2**32 - 1 entries
        b"\xc6\xff\xff\xff\xff",  # 4 GiB of bin data
        b"\xdb\xff\xff\xff\xff",  # 4 GiB of str
        b"\x91" * 5000,  # nesting deeper than any limit
        b"\xc7\x05\x01abcde",  # an ext type
        b"\x81\x81\x01\x02\x03",  # a map as a map key
        b"\x81\xa3abc\xc1",  # the reserved 0xc1 byte
        msgpack.packb({"format": "flowserve.meta_graph", "version": 1}) + b"\x00",  # extra data
        b"\xa2\xff\xfe",  # invalid utf-8 in a str
        b"",
    ],
    ids=[
        "array",
        "map",
        "bin",
        "str",
        "depth",
        "ext",
        "map_key",
        "reserved",
        "extra",
        "utf8",
        "empty",
    ],
)
def test_hostile_msgpack_headers_fail_fast_and_small(model, tmp_path, blob):
    d = _copy_model(model, tmp_path / "m")
    Path(d, META).write_bytes(blob)
    _load_fails(d, errors.DataLossError, file=META, mib=16)
    d2 = _copy_model(model, tmp_path / "m2")
    Path(d2, INDEX).write_bytes(blob)
    _load_fails(d2, errors.DataLossError, file=INDEX, mib=16)


def test_missing_files_and_directories_in_place_of_files(model, tmp_path):
    d = _copy_model(model, tmp_path / "a")
    os.remove(os.path.join(d, INDEX))
    _load_fails(d, errors.NotFoundError, r"No bundle index", file=INDEX)
    d = _copy_model(model, tmp_path / "b")
    os.remove(os.path.join(d, DATA))
    _load_fails(d, errors.DataLossError, r"missing", file=DATA)
    d = _copy_model(model, tmp_path / "c")
    os.remove(os.path.join(d, META))
    _load_fails(d, errors.NotFoundError, r"not a SavedModel directory")
    d = _copy_model(model, tmp_path / "d")
    os.remove(os.path.join(d, INDEX))
    os.mkdir(os.path.join(d, INDEX))
    _load_fails(d, errors.DataLossError, file=INDEX)
    d = _copy_model(model, tmp_path / "e")
    os.remove(os.path.join(d, DATA))
    os.mkdir(os.path.join(d, DATA))
    _load_fails(d, errors.DataLossError, file=DATA)
    d = _copy_model(model, tmp_path / "f")
    os.remove(os.path.join(d, INDEX))
    os.symlink("/dev/zero", os.path.join(d, INDEX))  # endless: read what stat says, no more
    _load_fails(d, errors.DataLossError, file=INDEX, mib=16)


def test_tags_that_match_no_meta_graph_raise_not_found_and_runtime_error(model, tmp_path):
    d = _copy_model(model, tmp_path / "m")
    _edit_meta(d, lambda doc, mg, n: _set(mg, "tags", ["serfe"]))
    msg = _load_fails(d, errors.NotFoundError, r"tags \['serve'\] could not be found.*serfe")
    with tf.Graph().as_default() as g, tf.Session(graph=g) as sess:
        with pytest.raises(RuntimeError):  # TF raises RuntimeError here; both hold
            tf.saved_model.load(sess, ["serve"], d)
    assert d in msg


def test_init_op_that_fails_names_the_file(model, tmp_path):
    d = _copy_model(model, tmp_path / "m")
    _edit_meta(d, lambda doc, mg, n: _set(mg, "init_op", "y"))  # y needs x fed
    _load_fails(d, errors.InvalidArgumentError, r"init op 'y' failed.*feed a value", file=META)


@pytest.mark.parametrize(
    "edit,etype,pattern",
    [
        (lambda doc, e: _set(e, "shape", [2**40, 2**40]), errors.DataLossError, r"needs"),
        (lambda doc, e: _set(e, "offset", 2**50), errors.DataLossError, r"offset of 'w1'"),
        (lambda doc, e: _set(doc, "version", 99), errors.DataLossError, r"version 99, newer"),
        (lambda doc, e: _set(e, "dtype", "int32"), errors.InvalidArgumentError, r"holds int32"),
        (lambda doc, e: _set(e, "shape", [12]), errors.InvalidArgumentError, r"shape \[12\]"),
        (lambda doc, e: _set(e, "name", "w9"), errors.NotFoundError, r"key w1 not found"),
    ],
    ids=["huge_shape", "offset", "version", "dtype", "shape", "missing_key"],
)
def test_checkpoint_with_hostile_index_raises_typed_errors(
    checkpoint, tmp_path, edit, etype, pattern
):
    prefix, g, saver, originals = checkpoint
    copy = str(tmp_path / "model.ckpt-1")
    for s, raw in originals.items():
        Path(copy + s).write_bytes(raw)
    doc = msgpack.unpackb(originals[".index"])
    edit(doc, {t["name"]: t for t in doc["tensors"]}["w1"])
    Path(copy + ".index").write_bytes(msgpack.packb(doc, use_bin_type=True))
    with _cheap(), tf.Session(graph=g) as sess:
        with pytest.raises(etype, match=pattern) as info:
            saver.restore(sess, copy)
    assert copy in str(info.value)


# -----------------------------------------------------------------------------------------
# No pickle, no eval
# -----------------------------------------------------------------------------------------

_UNSAFE_MODULES = {
    "pickle",
    "cPickle",
    "_pickle",
    "cloudpickle",
    "dill",
    "marshal",
    "shelve",
    "joblib",
    "jsonpickle",
}
_UNSAFE_BUILTINS = {"eval", "exec", "compile", "__import__", "execfile"}
_UNSAFE_WORD = re.compile(
    r"\b(?:c?pickle|_pickle|cloudpickle|dill|marshal|shelve|joblib)\b|"
    r"allow_pickle\s*=\s*True|(?<![.\w])(?:eval|exec)\s*\("
)


def _docstrings(tree) -> set[int]:
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                lines.update(range(body[0].lineno, body[0].end_lineno + 1))
    return lines


def _unsafe_uses(source: str, filename: str) -> list[str]:
    """Pickle, eval/exec and pickle-enabled numpy loads in ``source``, comments excluded.

    Documented false positives left alone: docstrings (prose such as "never pickle"),
    ``Tensor.eval()``/``Variable.eval()`` (TF's method that runs the graph: an attribute
    call or a method definition, not the builtin), and ``__reduce__`` methods (they pickle
    engine objects out for multiprocessing; nothing here unpickles).
    """
    found = []
    tree = ast.parse(source, filename)
    skip = _docstrings(tree)
    # 1. a grep of the code with comments and docstrings blanked out
    kept = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT or (tok.type == tokenize.STRING and tok.start[0] in skip):
            continue
        kept.append(tok)
    for tok in kept:
        if tok.type in (tokenize.NAME, tokenize.STRING) and _UNSAFE_WORD.search(tok.string):
            found.append(f"{filename}:{tok.start[0]}: {tok.string[:60]}")
    code = tokenize.untokenize(kept)
    for m in re.finditer(r"allow_pickle\s*=\s*True|(?<![.\w])(?:eval|exec)\s*\(", code):
        if not re.search(r"def\s+$", code[max(0, m.start() - 8) : m.start()]):
            found.append(f"{filename}: {m.group(0)}")
    # 2. the syntax tree: imports, builtin calls, numpy loads
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [
                f"{filename}:{node.lineno}: import {a.name}"
                for a in node.names
                if a.name.split(".")[0] in _UNSAFE_MODULES
            ]
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.split(".")[0] in _UNSAFE_MODULES
        ):
            found.append(f"{filename}:{node.lineno}: from {node.module} import")
        elif isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id in _UNSAFE_BUILTINS:
                found.append(f"{filename}:{node.lineno}: {f.id}()")
            kw = {k.arg: k.value for k in node.keywords}
            if "allow_pickle" in kw and not (
                isinstance(kw["allow_pickle"], ast.Constant) and kw["allow_pickle"].value is False
            ):
                found.append(f"{filename}:{node.lineno}: allow_pickle not False")
            if (
                isinstance(f, ast.Attribute)
                and f.attr == "load"
                and isinstance(f.value, ast.Name)
                and f.value.id in ("np", "numpy")
                and "allow_pickle" not in kw
            ):
                found.append(f"{filename}:{node.lineno}: np.load without allow_pickle=False")
    return found


def test_the_unsafe_use_scanner_finds_what_it_looks_for():
    bad = (
        "import pickle\nfrom joblib import load\nx = eval('1')\nexec('y = 2')\n"
        "a = np.load('f.npy')\nb = np.load('f.npy', allow_pickle=True)\n"
        "c = __import__('marshal')\n"
    )
    found = _unsafe_uses(bad, "bad.py")
    for what in (
        "import pickle",
        "from joblib",
        "eval()",
        "exec()",
        "np.load without",
        "allow_pickle not False",
        "__import__()",
        "marshal",
    ):
        assert any(what in f for f in found), what
    ok = (
        '"""Never pickle: docstrings are prose."""\n# pickle in a comment\n'
        "def eval(self):\n    return t.eval(session=s)\n"
        "x = np.load('f.npy', allow_pickle=False)\n"
    )
    assert _unsafe_uses(ok, "ok.py") == []


def test_no_pickle_eval_or_exec_in_the_engine_and_service_sources():
    files = [
        p
        for top in ("engine", "service")
        if (ROOT / top).is_dir()
        for p in sorted((ROOT / top).rglob("*.py"))
    ]
    assert len(files) > 20
    found = []
    for p in files:
        rel = p.relative_to(ROOT).as_posix()
        hits = _unsafe_uses(p.read_text(encoding="utf-8"), rel)
        if rel in _AUDITED:  # exactly the audited calls there, no more
            assert sorted(h.split(": ", 1)[1] for h in hits) == sorted(_AUDITED[rel]), hits
            continue
        found += hits
    assert found == []


# The one audited exception: make_callable's plan compiler compiles Python source it writes
# itself from slot indices and fixed text, every object (kernels, constants, ops) bound by
# index and never as text, so nothing from a graph file reaches the source (see
# engine/runtime/compiled.py and test_compiled_callable.py's hostile-names test).
_AUDITED = {"engine/runtime/compiled.py": ["exec(", "exec()", "compile()"]}


def test_loading_works_with_unpickling_and_np_load_disabled(model, tmp_path, monkeypatch):
    """Belt and braces: a model loads and serves with pickle.load(s) and np.load refusing."""
    import pickle

    def refuse(*_args, **_kwargs):
        raise AssertionError("a loader tried to unpickle")

    for name in ("load", "loads", "Unpickler"):
        monkeypatch.setattr(pickle, name, refuse)
    monkeypatch.setattr(np, "load", refuse)
    d = _copy_model(model, tmp_path / "m")
    assert _load_and_serve(d) is None


def test_struct_helpers_round_trip_the_original_documents(model, tmp_path):
    """The hostile-document helpers re-encode faithfully: an unedited round trip loads."""
    d = _copy_model(model, tmp_path / "m")
    _edit_meta(d, lambda doc, mg, n: None)
    _edit_index(d, lambda doc, t: None)
    assert _load_and_serve(d) is None
