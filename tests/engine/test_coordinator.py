"""tf.train.Coordinator and tf.train.start_queue_runners: TF1's thread coordination."""

import logging
import threading

import numpy as np
import pytest

import engine as tf
from engine import errors


def _worker(coord, stop_seen, body=None):
    def run():
        with coord.stop_on_exception():
            while not coord.should_stop():
                if body is not None:
                    body()
                coord.wait_for_stop(0.001)
            stop_seen.append(threading.current_thread().name)

    return threading.Thread(target=run, name=f"worker-{len(stop_seen)}-{id(run)}")


def test_a_stop_request_stops_every_thread_and_join_returns():
    coord = tf.train.Coordinator()
    seen = []
    threads = [_worker(coord, seen) for _ in range(3)]
    for t in threads:
        t.start()
    assert not coord.should_stop() and not coord.wait_for_stop(0.01)
    coord.request_stop()
    coord.join(threads)
    assert len(seen) == 3 and coord.should_stop() and coord.joined
    assert coord.wait_for_stop(0)


def test_join_reraises_the_first_exception_a_thread_stopped_with():
    coord = tf.train.Coordinator()
    first = ValueError("bad batch")

    def fail():
        raise first

    thread = _worker(coord, [], body=fail)
    thread.start()
    with pytest.raises(ValueError, match="bad batch") as caught:
        coord.join([thread])
    assert caught.value is first
    with pytest.raises(ValueError, match="bad batch"):
        coord.raise_requested_exception()
    # Before a join, the first exception wins; later ones are dropped.
    other = tf.train.Coordinator()
    other.request_stop(KeyError("first"))
    other.request_stop(IndexError("second"))
    with pytest.raises(KeyError, match="first"):
        other.join([])


def test_out_of_range_is_a_clean_stop():
    coord = tf.train.Coordinator()

    def end_of_data():
        raise errors.OutOfRangeError(None, None, "End of sequence")

    thread = _worker(coord, [], body=end_of_data)
    thread.start()
    coord.join([thread])  # no exception
    assert coord.should_stop()
    custom = tf.train.Coordinator(clean_stop_exception_types=(KeyError,))
    custom.request_stop(KeyError("done"))
    custom.join([])


def test_request_stop_after_join_raises_at_once():
    coord = tf.train.Coordinator()
    coord.request_stop()
    coord.join([])
    with pytest.raises(IndexError, match="late"):
        coord.request_stop(IndexError("late"))
    coord.request_stop()  # nothing to raise: fine


def test_threads_still_running_after_the_grace_period():
    coord = tf.train.Coordinator()
    release = threading.Event()
    stuck = threading.Thread(target=release.wait, name="stuck-reader")
    stuck.start()
    try:
        coord.request_stop()
        with pytest.raises(RuntimeError, match="threads still running: stuck-reader"):
            coord.join([stuck], stop_grace_period_secs=0.01)
        coord.clear_stop()
        assert not coord.should_stop() and not coord.joined
        coord.request_stop()
        coord.join([stuck], stop_grace_period_secs=0.01, ignore_live_threads=True)
    finally:
        release.set()
        stuck.join()


def test_registered_threads_are_joined_and_a_bad_exception_still_stops():
    coord = tf.train.Coordinator()
    seen = []
    thread = _worker(coord, seen)
    coord.register_thread(thread)
    thread.start()
    coord.request_stop()
    coord.join()
    assert seen and not thread.is_alive()
    # Not an exception: still a stop (the threads must not run on), and join says why.
    bad = tf.train.Coordinator()
    bad.request_stop("disk full")
    assert bad.should_stop()
    with pytest.raises(ValueError, match="exception or an exc_info tuple: 'disk full'"):
        bad.join([])


def test_start_queue_runners_without_runners_is_an_empty_list(caplog):
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="No default session is registered"):
            tf.train.start_queue_runners()
        with pytest.raises(TypeError, match="must be a `tf.Session`"):
            tf.train.start_queue_runners(sess=object())
        sess = tf.Session()
        with caplog.at_level(logging.WARNING, logger="tensorflow"):
            assert tf.train.start_queue_runners(sess=sess, coord=tf.train.Coordinator()) == []
        assert "safely remove the call" in caplog.text
        with sess.as_default():
            assert tf.train.start_queue_runners() == []


def test_start_queue_runners_starts_what_the_collection_holds():
    class Runner:  # a program's own object with TF's QueueRunner interface
        def create_threads(self, sess, coord=None, daemon=False, start=False):
            self.args = (sess, coord, daemon, start)
            return ["thread-a", "thread-b"]

    with tf.Graph().as_default() as g:
        runner = Runner()
        g.add_to_collection(tf.GraphKeys.QUEUE_RUNNERS, runner)
        sess, coord = tf.Session(), tf.train.Coordinator()
        assert tf.train.start_queue_runners(sess, coord) == ["thread-a", "thread-b"]
        assert runner.args == (sess, coord, True, True)


def test_the_tf1_training_loop_idiom_runs_to_the_end_of_its_data():
    with tf.Graph().as_default():
        data = tf.data.Dataset.from_tensor_slices(np.arange(5, dtype=np.float32)).batch(2)
        batch = data.make_one_shot_iterator().get_next()
        total = tf.Variable(0.0)
        step = tf.assign_add(total, tf.reduce_sum(batch))
        with tf.Session() as sess:
            sess.run(total.initializer)
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess=sess, coord=coord)
            try:
                while not coord.should_stop():
                    sess.run(step)
            except tf.errors.OutOfRangeError:
                pass
            finally:
                coord.request_stop()
            coord.join(threads)
            assert sess.run(total) == 10.0
