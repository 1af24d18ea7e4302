"""``tf.train.Supervisor`` against TensorFlow's recorded behaviour
(``fixtures/make_supervisor_fixtures.py``), its timed services read back with
TensorBoard's event reader, and its errors."""

from __future__ import annotations

import os
import time

import pytest

import engine as tf
from tests.engine.fixtures.make_supervisor_fixtures import evaluate
from tests.engine.fixtures.oracle import assert_recorded, load, recorded_keys

RECORDING = load("supervisor_tf.npz")
ENGINE = evaluate(tf)


@pytest.mark.parametrize("key", recorded_keys(RECORDING))
def test_supervisor_matches_tensorflow(key):
    """Losses, steps, the resumed run, logdir files, restored values and how blocks end."""
    assert_recorded(ENGINE[key], RECORDING[key], key, rtol=1e-6, atol=1e-6)


def _model():
    step = tf.train.get_or_create_global_step()
    w = tf.Variable(4.0, name="w")
    loss = tf.square(w - 1.0)
    tf.summary.scalar("loss", loss)
    return tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step), step


def test_timed_services_write_checkpoints_and_summaries(tmp_path):
    accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    with tf.Graph().as_default():
        train_op, step = _model()
        sv = tf.train.Supervisor(logdir=str(tmp_path), save_model_secs=0.2, save_summaries_secs=0.2)
        with sv.managed_session() as sess:
            deadline = time.monotonic() + 30
            while not sv.should_stop() and time.monotonic() < deadline:
                sess.run(train_op)
                state = tf.train.get_checkpoint_state(str(tmp_path))
                if sess.run(step) >= 50 and len(state.all_model_checkpoint_paths) >= 2:
                    break
                time.sleep(0.01)
    assert not any(t.is_alive() for t in sv._threads)
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert len(state.all_model_checkpoint_paths) >= 2  # the first save runs at once
    assert (tmp_path / "graph.pbtxt").exists()
    acc = accumulator.EventAccumulator(str(tmp_path))
    acc.Reload()
    tags = acc.Tags()
    assert tags["graph"] is True
    assert "loss" in tags["scalars"] and "global_step/sec" in tags["scalars"]
    losses = acc.Scalars("loss")
    for event in losses:  # each loss was written at the step it was computed with
        assert event.value == pytest.approx(9.0 * 0.64**event.step, rel=1e-3)


def test_second_supervisor_resumes_from_the_newest_checkpoint(tmp_path):
    for expected_start in (0, 4):
        with tf.Graph().as_default():
            train_op, step = _model()
            sv = tf.train.Supervisor(logdir=str(tmp_path), save_model_secs=0)
            with sv.managed_session() as sess:
                assert sess.run(step) == expected_start
                for _ in range(4):
                    sess.run(train_op)
                sv.saver.save(sess, sv.save_path, global_step=step)
    assert os.path.basename(tf.train.latest_checkpoint(str(tmp_path))) == "model.ckpt-8"


def test_loop_runs_until_stop_and_exceptions_reach_stop():
    with tf.Graph().as_default():
        tf.train.get_or_create_global_step()
        sv = tf.train.Supervisor(logdir=None)
        calls = []
        sv.loop(0.01, calls.append, (1,))
        time.sleep(0.1)
        sv.stop()
        assert 1 <= len(calls) and sv.should_stop()

    with tf.Graph().as_default():
        tf.train.get_or_create_global_step()
        sv = tf.train.Supervisor(logdir=None)

        def fail():
            raise RuntimeError("service failed")

        sv.loop(None, fail)
        sv.wait_for_stop()
        with pytest.raises(RuntimeError, match="service failed"):
            sv.stop()


def test_explicit_none_ops_and_init_fn():
    with tf.Graph().as_default():
        w = tf.Variable(3.0, name="w")
        seen = []
        sv = tf.train.Supervisor(
            logdir=None, init_op=None, ready_op=None, init_fn=lambda sess: seen.append(sess)
        )
        assert sv.init_op is None and sv.ready_op is None and sv.ready_for_local_init_op is None
        with sv.managed_session() as sess:
            assert seen == [sess]
            with pytest.raises(tf.errors.FailedPreconditionError):
                sess.run(w)  # nothing initialized it, and no ready op checked


def test_unsupported_configurations_say_so():
    with tf.Graph().as_default():
        with pytest.raises(NotImplementedError, match="is_chief=False"):
            tf.train.Supervisor(is_chief=False)
    with tf.Graph().as_default():
        sv = tf.train.Supervisor(logdir=None)
        with pytest.raises(NotImplementedError, match="remote"):
            sv.prepare_or_wait_for_session(master="grpc://localhost:2222")
