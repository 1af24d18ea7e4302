"""Queues (``engine/queues.py``, ``engine/ops/queue_ops.py``) and ``tf.train.QueueRunner``:
single-thread behaviour against TensorFlow's recording (``fixtures/make_queue_fixtures.py``),
then what only threads show: blocking, arrival order, cancellation, timeouts, a session
closing under a blocked op, and queue runners feeding a training loop."""

from __future__ import annotations

import re
import threading
import time

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures.make_queue_fixtures import evaluate
from tests.engine.fixtures.oracle import assert_recorded, load, recorded_keys

RECORDING = load("queue_tf.npz")
ENGINE = evaluate(tf)
# TF names an unshared queue '_<counter>_<op name>' in its messages; the engine, by op name.
_TF_QUEUE_NAME = re.compile(r"'_\d+_")


def _normalized(value):
    value = np.asarray(value)
    if value.dtype.kind == "U":
        text = _TF_QUEUE_NAME.sub("'", str(value))
        # TF 2.x prints TensorShape([None]); TF 1.15 and the engine TensorShape([Dimension(None)]).
        return np.asarray(text.replace("Dimension(None)", "None"))
    return value


@pytest.mark.parametrize("key", recorded_keys(RECORDING))
def test_queues_match_tensorflow(key):
    """Dequeued values, sizes, static shapes, padding, priorities and error messages."""
    expected = _normalized(RECORDING[key])
    got = _normalized(ENGINE[key])
    if expected.dtype.kind == "U":
        assert str(got) == str(expected), key
    else:
        assert_recorded(got, expected, key, rtol=0)


def test_tensor_and_op_names_match_tensorflow():
    for key in [k for k in RECORDING.files if k.startswith("name_")]:
        np.testing.assert_array_equal(ENGINE[key], RECORDING[key], err_msg=key)


def _run_in_thread(fn):
    box = {}

    def target():
        try:
            box["value"] = fn()
        except Exception as e:  # noqa: BLE001 - handed to the test
            box["error"] = e

    t = threading.Thread(target=target, daemon=True)
    t.start()
    return t, box


def _settle(thread, seconds=0.2):
    thread.join(seconds)
    return thread.is_alive()


def test_enqueue_blocks_while_full_and_dequeue_while_empty():
    q = tf.FIFOQueue(2, [tf.int32], shapes=[[]])
    x = tf.placeholder(tf.int32, [])
    enqueue, dequeue = q.enqueue(x), q.dequeue()
    with tf.Session() as sess:
        sess.run(enqueue, {x: 1})
        sess.run(enqueue, {x: 2})
        t, box = _run_in_thread(lambda: sess.run(enqueue, {x: 3}))
        assert _settle(t), "an enqueue into a full queue must wait"
        assert sess.run(dequeue) == 1
        t.join(5)
        assert not t.is_alive() and "error" not in box
        assert [sess.run(dequeue) for _ in range(2)] == [2, 3]
        t, box = _run_in_thread(lambda: sess.run(dequeue))
        assert _settle(t), "a dequeue from an empty queue must wait"
        sess.run(enqueue, {x: 4})
        t.join(5)
        assert box["value"] == 4


def test_a_batch_larger_than_the_capacity_is_assembled_as_elements_arrive():
    q = tf.FIFOQueue(3, [tf.int64], shapes=[[]])
    x = tf.placeholder(tf.int64, [None])
    enqueue, batch = q.enqueue_many(x), q.dequeue_many(7)
    with tf.Session() as sess:
        t, box = _run_in_thread(lambda: sess.run(batch))
        for chunk in ([0, 1, 2], [3, 4], [5, 6, 7]):
            sess.run(enqueue, {x: chunk})
        t.join(5)
        assert box["value"].tolist() == list(range(7))
        assert sess.run(q.size()) == 1


def test_a_short_dequeue_many_puts_its_elements_back_when_the_queue_closes():
    q = tf.FIFOQueue(10, [tf.int32], shapes=[[]])
    enqueue = q.enqueue_many([[1, 2]])
    many, rest = q.dequeue_many(3), q.dequeue_up_to(3)
    with tf.Session() as sess:
        sess.run(enqueue)
        t, box = _run_in_thread(lambda: sess.run(many))
        assert _settle(t)
        sess.run(q.close())
        t.join(5)
        assert isinstance(box["error"], tf.errors.OutOfRangeError)
        assert "requested 3, current size 2" in str(box["error"])
        assert sess.run(rest).tolist() == [1, 2]  # in their order, nothing lost


def test_waiters_are_served_in_arrival_order():
    q = tf.FIFOQueue(10, [tf.int32], shapes=[[]])
    x = tf.placeholder(tf.int32, [])
    enqueue, take_two, take_one = q.enqueue(x), q.dequeue_many(2), q.dequeue()
    with tf.Session() as sess:
        first, box1 = _run_in_thread(lambda: sess.run(take_two))
        assert _settle(first)
        second, box2 = _run_in_thread(lambda: sess.run(take_one))
        assert _settle(second)
        for v in (10, 20, 30):
            sess.run(enqueue, {x: v})
        first.join(5)
        second.join(5)
        assert box1["value"].tolist() == [10, 20] and box2["value"] == 30


def test_close_with_cancel_wakes_blocked_enqueues_and_plain_close_waits_for_them():
    q = tf.FIFOQueue(1, [tf.int32], shapes=[[]])
    enqueue = q.enqueue(7)
    with tf.Session() as sess:
        sess.run(enqueue)
        blocked, box = _run_in_thread(lambda: sess.run(enqueue))
        assert _settle(blocked)
        closing, close_box = _run_in_thread(lambda: sess.run(q.close()))
        assert _settle(closing), "a plain close waits behind the pending enqueue, as TF's"
        sess.run(q.close(cancel_pending_enqueues=True))
        blocked.join(5)
        closing.join(5)
        assert isinstance(box["error"], tf.errors.CancelledError)
        assert "is closed" in str(box["error"])
        assert sess.run(q.is_closed())
        assert sess.run(q.dequeue()) == 7  # what was enqueued stays to be drained


def test_a_blocked_dequeue_honours_the_run_timeout():
    q = tf.FIFOQueue(2, [tf.float32], shapes=[[]])
    options = tf.RunOptions(timeout_in_ms=100)
    with tf.Session() as sess:
        start = time.monotonic()
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(q.dequeue(), options=options)
        assert time.monotonic() - start < 5
        sess.run(q.enqueue(1.5))
        assert sess.run(q.dequeue()) == 1.5  # the timed-out waiter left no trace


def test_closing_the_session_wakes_a_blocked_op():
    q = tf.FIFOQueue(2, [tf.float32], shapes=[[]])
    dequeue = q.dequeue()
    sess = tf.Session()
    t, box = _run_in_thread(lambda: sess.run(dequeue))
    assert _settle(t)
    sess.close()
    t.join(5)
    assert not t.is_alive() and isinstance(box["error"], tf.errors.CancelledError)


def test_queues_are_per_session_and_shared_by_shared_name():
    q = tf.FIFOQueue(5, [tf.int32], shapes=[[]])
    also = tf.FIFOQueue(5, [tf.int32], shapes=[[]], shared_name="shared", name="a")
    same = tf.FIFOQueue(5, [tf.int32], shapes=[[]], shared_name="shared", name="b")
    with tf.Session() as one, tf.Session() as two:
        one.run([q.enqueue(1), also.enqueue(2)])
        assert one.run(q.size()) == 1 and two.run(q.size()) == 0
        assert one.run(same.dequeue()) == 2


def test_random_shuffle_queue_keeps_min_after_dequeue_until_closed():
    q = tf.RandomShuffleQueue(10, 3, [tf.int32], shapes=[[]], seed=1)
    enqueue, dequeue = q.enqueue_many([list(range(4))]), q.dequeue()
    with tf.Session() as sess:
        sess.run(enqueue)
        first = sess.run(dequeue)
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(dequeue, options=tf.RunOptions(timeout_in_ms=100))  # 3 left: held back
        sess.run(q.close())
        rest = [sess.run(dequeue) for _ in range(3)]
        assert sorted([first, *rest]) == [0, 1, 2, 3]


def test_random_shuffle_queue_order_repeats_with_a_seed_and_is_not_fifo():
    orders = []
    for _ in range(2):
        with tf.Graph().as_default():
            q = tf.RandomShuffleQueue(100, 0, [tf.int32], shapes=[[]], seed=7)
            enqueue, batch = q.enqueue_many([list(range(50))]), q.dequeue_many(50)
            tf.set_random_seed(3)
            with tf.Session() as sess:
                sess.run(enqueue)
                orders.append(sess.run(batch).tolist())
    assert orders[0] == orders[1] and sorted(orders[0]) == list(range(50))
    assert orders[0] != list(range(50))


def test_bad_arguments_say_what_is_wrong():
    with pytest.raises(tf.errors.InvalidArgumentError, match="count must be >= 0"):
        q = tf.FIFOQueue(2, [tf.int32], shapes=[[]])
        n = tf.placeholder(tf.int32, [])
        with tf.Session() as sess:
            sess.run(q.dequeue_many(n), {n: -1})
    with pytest.raises(TypeError, match="Shapes must be a TensorShape"):
        tf.FIFOQueue(2, [tf.int32], shapes=3)
    with pytest.raises(ValueError, match="names"):
        tf.FIFOQueue(2, [tf.int32], names=["a", "b"])
    with pytest.raises(ValueError, match="Queue must have names"):
        tf.FIFOQueue(2, [tf.int32]).enqueue({"a": 1})
    with pytest.raises(NotImplementedError, match="from_list"):
        tf.QueueBase.from_list(0, [tf.FIFOQueue(1, [tf.int32])])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Type mismatch"):
        q = tf.FIFOQueue(2, [tf.int32])
        x = tf.placeholder(tf.int64)
        # a raw op fed the wrong type reaches the kernel's check
        op = tf.get_default_graph()._create_op(
            "QueueEnqueueV2", [q.queue_ref, x], {"Tcomponents": [tf.int64]}, "raw_enqueue"
        )
        with tf.Session() as sess:
            sess.run(op, {x: 1})


# -- queue runners -------------------------------------------------------------------------


def _producer(n):
    """A queue filled from a dataset of ``n`` numbers by a QueueRunner of two threads."""
    it = tf.data.Dataset.range(n).make_one_shot_iterator()
    q = tf.FIFOQueue(4, [tf.int64], shapes=[[]])
    enqueue = q.enqueue(it.get_next())
    runner = tf.train.QueueRunner(q, [enqueue, enqueue])
    tf.train.add_queue_runner(runner)
    return q, runner


def test_queue_runner_feeds_until_its_input_ends_then_closes_the_queue():
    q, runner = _producer(23)
    batch = q.dequeue_up_to(5)
    got = []
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        assert len(threads) == 3  # two enqueue threads and the one cancelling on stop
        assert runner.create_threads(sess) == []  # already running in this session
        try:
            while not coord.should_stop():
                got.extend(sess.run(batch).tolist())
        except tf.errors.OutOfRangeError:
            pass
        finally:
            coord.request_stop()
        coord.join(threads, stop_grace_period_secs=5)
        assert sess.run(q.is_closed())
    assert sorted(got) == list(range(23))
    assert runner.exceptions_raised == []


def test_coordinator_stop_cancels_producers_blocked_on_a_full_queue():
    q = tf.FIFOQueue(2, [tf.float32], shapes=[[]])
    tf.train.add_queue_runner(tf.train.QueueRunner(q, [q.enqueue(tf.random_uniform([]))] * 3))
    x = q.dequeue()
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        values = [sess.run(x) for _ in range(10)]
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=5)
        assert not any(t.is_alive() for t in threads)
    assert all(0.0 <= v < 1.0 for v in values)


def test_a_producer_error_reaches_the_coordinator():
    q = tf.FIFOQueue(2, [tf.float32], shapes=[[]])
    tf.train.add_queue_runner(
        tf.train.QueueRunner(q, [q.enqueue(tf.check_numerics(tf.constant(np.nan), "bad input"))])
    )
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        with pytest.raises(tf.errors.InvalidArgumentError, match="bad input"):
            coord.join(threads, stop_grace_period_secs=5)


def test_queue_runner_arguments_are_checked():
    q = tf.FIFOQueue(2, [tf.float32], shapes=[[]])
    with pytest.raises(ValueError, match="at least one enqueue_op"):
        tf.train.QueueRunner(q, [])
    with pytest.raises(ValueError, match="Queue is a required argument"):
        tf.train.QueueRunner(None, [q.enqueue(1.0)])
    with pytest.raises(TypeError, match="queue_closed_exception_types"):
        tf.train.QueueRunner(q, [q.enqueue(1.0)], queue_closed_exception_types=(ValueError,))
    with pytest.raises(NotImplementedError, match="QueueRunnerDef"):
        tf.train.QueueRunner(queue_runner_def=object())


def test_monitored_session_and_supervisor_start_queue_runners(tmp_path):
    for make_session in (
        lambda: tf.train.MonitoredTrainingSession(),
        lambda: tf.train.Supervisor(logdir=str(tmp_path), save_model_secs=0).managed_session(),
    ):
        with tf.Graph().as_default():
            tf.train.get_or_create_global_step()
            q, _ = _producer(9)
            total = tf.reduce_sum(q.dequeue_up_to(4))
            sums = []
            with make_session() as sess:
                while True:
                    try:
                        sums.append(int(sess.run(total)))
                    except tf.errors.OutOfRangeError:
                        break
            assert sum(sums) == sum(range(9))


def round_trip_builder():
    """Every queue op type, filled (and one closed) in the setup ops; each fetch reads its
    own queue, so the values do not depend on the order the dequeues run in."""
    rows = np.arange(8, dtype=np.float32).reshape(4, 2)
    fifos = [tf.FIFOQueue(5, [tf.float32], shapes=[[2]], name=f"rt_fifo{i}") for i in range(4)]
    pad = tf.PaddingFIFOQueue(5, [tf.int32], shapes=[[None]], name="rt_pad")
    prio = tf.PriorityQueue(5, [tf.string], shapes=[[]], name="rt_prio")
    shuffle = tf.RandomShuffleQueue(5, 0, [tf.int32], shapes=[[]], seed=2, name="rt_shuffle")
    fill = tf.group(
        *[q.enqueue_many([rows]) for q in fifos],
        pad.enqueue([[1, 2]]),
        prio.enqueue_many([np.array([3, 1], np.int64), np.array([b"c", b"a"], object)]),
        shuffle.enqueue(5),
    )
    with tf.control_dependencies([fill]):
        close = fifos[2].close()
    fetches = [
        fifos[0].dequeue(),
        fifos[1].dequeue_many(2),
        fifos[2].dequeue_up_to(5),
        fifos[3].size(),
        fifos[3].is_closed(),
        pad.dequeue(),
        *prio.dequeue(),
        shuffle.dequeue(),
    ]
    return fetches, {}, [close.name]
