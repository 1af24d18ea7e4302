"""TF1's queue-based input pipelines (``engine/training/input.py``) and ``CountUpTo``:
TensorFlow's recorded behaviour (``fixtures/make_input_pipeline_fixtures.py``: batches,
graphs, shapes, summaries, collections, errors), then what a recording cannot hold:
shuffling (every element once per epoch, seeded runs repeat, ``min_after_dequeue`` kept),
several enqueue threads, and stopping pipelines that never end.

Every consumer run has a deadline (``RunOptions.timeout_in_ms``) and every join a grace
period, so a broken pipeline fails a test instead of hanging it.
"""

from __future__ import annotations

import threading
from collections import Counter

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures.make_input_pipeline_fixtures import (
    BUILD,
    BUILD_ERRORS,
    JOIN_GRACE_SECS,
    NO_OPS,
    RUN,
    TIMEOUT_MS,
    evaluate,
)
from tests.engine.fixtures.oracle import assert_recorded, load

RECORDING = load("input_pipeline_tf.npz")
ENGINE = evaluate(tf)
OPTIONS = tf.RunOptions(timeout_in_ms=TIMEOUT_MS)


def _keys(prefix: str) -> list[str]:
    """The recorded keys starting with ``prefix``, but the op lists (compared on their own)."""
    return sorted(k for k in RECORDING.files if k.startswith(prefix) and not k.endswith("_ops"))


def _case_keys(case: str) -> list[str]:
    """The recorded keys of one pipeline (``case_...``, not another case's ``case_x_...``)."""
    others = [c for c in (*RUN, *BUILD) if c != case and c.startswith(f"{case}_")]
    return [k for k in _keys(f"{case}_") if not any(k.startswith(f"{o}_") for o in others)]


def _assert_keys(keys) -> None:
    assert keys
    for key in keys:
        assert key in ENGINE, f"{key}: not produced by the engine"
        assert_recorded(ENGINE[key], RECORDING[key], key, rtol=1e-6)


# -- against TensorFlow ------------------------------------------------------------------


@pytest.mark.parametrize("case", RUN)
def test_pipeline_runs_as_tensorflow(case):
    """Every batch until OutOfRangeError, the returned structure, static shapes and dtypes,
    the queue runners, summaries (tags and final values) and local variables."""
    _assert_keys(_case_keys(case))


@pytest.mark.parametrize("case", list(BUILD))
def test_built_pipeline_matches_tensorflow(case):
    """Pipelines whose order is random or that never end: their structure, shapes,
    queue runners (enqueue op counts) and summaries."""
    _assert_keys(_case_keys(case))


def _normalized_op(entry: str) -> str | None:
    """An op ("name type") without the differences that are not the input pipeline's (both
    sides are normalized, so either may come to match TF): TF folds ``Size``/``Shape`` of a
    fully defined tensor into a constant, and its ``Assert`` converts its data once more
    outside the op (an unused ``Assert/Const``)."""
    name, op_type = entry.rsplit(" ", 1)
    if name.endswith("/Assert/Const"):
        return None
    if op_type == "Const" and name.rsplit("/", 1)[-1] in ("Size", "Shape"):
        op_type = name.rsplit("/", 1)[-1]
    return f"{name} {op_type}"


@pytest.mark.parametrize("case", [c for c in (*RUN, *BUILD) if c not in NO_OPS])
def test_graph_ops_match_tensorflow(case):
    """The same ops, by name and type: name scopes, queues, enqueue/close/size ops, the
    epoch counter, the summary arithmetic and the dequeue named after the scope."""
    expected = {_normalized_op(e) for e in RECORDING[f"{case}_ops"].tolist()} - {None}
    got = {_normalized_op(e) for e in ENGINE[f"{case}_ops"].tolist()} - {None}
    assert got == expected, (sorted(got - expected), sorted(expected - got))


def test_count_up_to_and_limit_epochs_match_tensorflow():
    _assert_keys(_keys("count_") + _keys("limit_epochs_"))


# A repr inside a message is the engine's own (TensorShape, Tensor): compared up to it.
_REPRS = ("[TensorShape(", 'Tensor("')


@pytest.mark.parametrize("key", sorted(BUILD_ERRORS))
def test_build_errors_match_tensorflow(key):
    """Each misuse fails as TF's does: the same exception type and TF's message (TF's own
    node description, after the message, is not compared)."""
    expected, got = str(RECORDING[f"error_{key}"]), str(ENGINE[f"error_{key}"])
    for marker in _REPRS:
        if marker in expected:
            expected, got = expected.split(marker)[0], got.split(marker)[0]
    assert got.startswith(expected), (got, expected)


def test_run_errors_match_tensorflow():
    """A queue runner's failure (an empty string list, uninitialized local variables)
    closes the queues, ends the consumer with OutOfRangeError and is re-raised by join."""
    _assert_keys(_keys("run_"))


# -- what a recording cannot hold --------------------------------------------------------


def _session_run(build, steps=None):
    """Runs ``build()``'s fetches the TF1 way until OutOfRangeError (or ``steps`` runs):
    ``(values, queue runners, session-level extra)``."""
    with tf.Graph().as_default() as g:
        fetch = build()
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            values = []
            try:
                while steps is None or len(values) < steps:
                    values.append(sess.run(fetch, options=OPTIONS))
            except tf.errors.OutOfRangeError:
                pass
            finally:
                coord.request_stop()
                coord.join(threads, stop_grace_period_secs=JOIN_GRACE_SECS)
            assert not any(t.is_alive() for t in threads)
            return values, g.get_collection(tf.GraphKeys.QUEUE_RUNNERS)


def test_shuffled_producers_give_each_element_once_per_epoch():
    def build():
        return tf.train.string_input_producer(list("abcdefgh"), num_epochs=3, seed=4).dequeue()

    values, _ = _session_run(build)
    epochs = [sorted(values[i : i + 8]) for i in range(0, 24, 8)]
    assert len(values) == 24 and all(e == [c.encode() for c in "abcdefgh"] for e in epochs)
    assert values[:8] != sorted(values[:8]) or values[8:16] != sorted(values[8:16])


def test_shuffle_batch_delivers_every_element_and_mixes_them():
    def build():
        i = tf.train.range_input_producer(50, num_epochs=2, seed=1).dequeue()
        return tf.train.shuffle_batch(
            [i, i * 2], 8, capacity=40, min_after_dequeue=10, num_threads=3, seed=2,
            allow_smaller_final_batch=True,
        )  # fmt: skip

    batches, runners = _session_run(build)
    ids = np.concatenate([b[0] for b in batches])
    assert Counter(ids.tolist()) == Counter({i: 2 for i in range(50)})
    np.testing.assert_array_equal(np.concatenate([b[1] for b in batches]), ids * 2)
    assert [len(b[0]) for b in batches[:-1]] == [8] * (len(batches) - 1)
    assert ids.tolist() != sorted(ids.tolist())
    assert len(runners[-1].enqueue_ops) == 3


def _seeded_shuffle_batches(seed):
    """A shuffle queue filled at once (one enqueue_many within capacity): its draws depend
    only on the seed, however the threads interleave."""

    def build():
        rows = tf.train.limit_epochs(tf.range(12), num_epochs=1)
        return tf.train.shuffle_batch(
            [rows], 3, capacity=20, min_after_dequeue=4, enqueue_many=True, seed=seed
        )

    return [b.tolist() for b in _session_run(build)[0]]


def test_seeded_shuffling_repeats():
    first = _seeded_shuffle_batches(3)
    assert sorted(sum(first, [])) == list(range(12))
    assert _seeded_shuffle_batches(3) == first
    assert _seeded_shuffle_batches(4) != first

    def build():
        return tf.train.range_input_producer(10, num_epochs=2, seed=7).dequeue()

    order = _session_run(build)[0]
    assert _session_run(build)[0] == order and sorted(order) == sorted(list(range(10)) * 2)


def test_min_after_dequeue_is_kept_until_the_input_ends():
    with tf.Graph().as_default():
        batch = tf.train.shuffle_batch([tf.constant(1)], 2, capacity=20, min_after_dequeue=10)
        size = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)[0].queue.size()
        with tf.Session() as sess:
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            for _ in range(20):
                sess.run(batch, options=OPTIONS)
                assert sess.run(size) >= 10  # only enqueues run between the two
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=JOIN_GRACE_SECS)

    def build():  # a finite input: once closed, the last min_after_dequeue come out too
        rows = tf.train.limit_epochs(tf.range(7), num_epochs=1)
        return tf.train.shuffle_batch(
            [rows], 3, capacity=20, min_after_dequeue=5, enqueue_many=True,
            allow_smaller_final_batch=True,
        )  # fmt: skip

    batches = _session_run(build)[0]
    assert sorted(np.concatenate(batches).tolist()) == list(range(7))


def test_several_threads_and_joined_inputs_lose_nothing():
    def build():
        files = tf.train.string_input_producer(["x", "y", "z"], num_epochs=4, shuffle=False)
        return tf.train.batch([files.dequeue()], 5, num_threads=3, allow_smaller_final_batch=True)

    values = np.concatenate(_session_run(build)[0]).tolist()
    assert Counter(values) == Counter({b"x": 4, b"y": 4, b"z": 4})

    def build_join():
        a = tf.train.range_input_producer(6, num_epochs=1, shuffle=False).dequeue()
        b = tf.train.range_input_producer(4, num_epochs=1, shuffle=False).dequeue() + 100
        return tf.train.shuffle_batch_join(
            [{"v": a}, {"v": b}], 4, capacity=16, min_after_dequeue=2,
            allow_smaller_final_batch=True,
        )  # fmt: skip

    batches, runners = _session_run(build_join)
    values = np.concatenate([b["v"] for b in batches]).tolist()
    assert sorted(values) == [0, 1, 2, 3, 4, 5, 100, 101, 102, 103]
    assert len(runners[-1].enqueue_ops) == 2


def test_endless_pipelines_stop_when_asked():
    """No num_epochs: threads block on full queues until request_stop cancels them."""

    def build():
        i = tf.train.range_input_producer(3, shuffle=False, capacity=2).dequeue()
        return tf.train.batch([i], 2, capacity=2, num_threads=2)

    batches, _ = _session_run(build, steps=5)
    assert len(batches) == 5 and set(np.concatenate(batches).tolist()) <= {0, 1, 2}


def test_a_bare_tensor_is_batched_whole():
    """TF refuses a bare tensor (it would iterate it); the engine batches it as one
    component and returns one tensor."""

    def build():
        rows = tf.train.limit_epochs(tf.constant([[1, 2], [3, 4]]), num_epochs=1)
        return tf.train.batch(rows, 2, enqueue_many=True)

    (batch,), _ = _session_run(build)
    np.testing.assert_array_equal(batch, [[1, 2], [3, 4]])


def test_sparse_inputs_are_refused():
    sp = tf.SparseTensor([[0, 0]], [1.0], [2, 2])
    with pytest.raises(NotImplementedError, match="SparseTensor"):
        tf.train.batch([sp], 2)
    with pytest.raises(NotImplementedError, match="SparseTensor"):
        tf.train.slice_input_producer([sp])


def test_namespaces():
    for name in (
        "limit_epochs input_producer string_input_producer range_input_producer "
        "slice_input_producer batch maybe_batch batch_join maybe_batch_join shuffle_batch "
        "maybe_shuffle_batch shuffle_batch_join maybe_shuffle_batch_join"
    ).split():
        assert callable(getattr(tf.train, name)), name
    qr = tf.train.queue_runner
    assert qr.QueueRunner is tf.train.QueueRunner
    assert qr.add_queue_runner is tf.train.add_queue_runner
    assert qr.start_queue_runners is tf.train.start_queue_runners
    assert tf.compat.v1.count_up_to is tf.count_up_to


# -- CountUpTo ---------------------------------------------------------------------------


def test_count_up_to_is_atomic_across_concurrent_runs():
    v = tf.Variable(0, name="v")
    step = v.count_up_to(400)
    seen, failures = [], []
    with tf.Session() as sess:
        sess.run(v.initializer)

        def work():
            while True:
                try:
                    seen.append(int(sess.run(step, options=OPTIONS)))
                except tf.errors.OutOfRangeError:
                    return
                except Exception as e:  # noqa: BLE001 - reported by the assertion below
                    failures.append(e)
                    return

        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert not failures and not any(t.is_alive() for t in threads)
        assert sorted(seen) == list(range(400)) and sess.run(v) == 400


def test_count_up_to_needs_an_integer_scalar_variable():
    with pytest.raises(TypeError, match="mutable tensor"):
        tf.count_up_to(tf.constant(0), 3)
    with pytest.raises(TypeError, match="attr 'T'"):
        tf.Variable(0.0).count_up_to(3)
    v = tf.Variable(0)
    c = tf.count_up_to(v, 2)
    with tf.Session() as sess, pytest.raises(tf.errors.FailedPreconditionError):
        sess.run(c)
    assert tf.gradients(tf.cast(c, tf.float32), [v])[0] is None


def round_trip_builder():
    """(fetches, feed, setup) for tests/engine/test_graph_def.py's round trip: CountUpTo on
    an int64 variable (the queue ops have their own cases)."""
    counter = tf.Variable(np.int64(3), name="epochs_counter")
    count = tf.count_up_to(counter, 10, name="count_to_ten")
    return [count], {}, [counter.initializer.name]
