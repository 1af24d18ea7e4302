"""MonitoredSession, MonitoredTrainingSession and the basic hooks, against TensorFlow's
recorded behaviour (``fixtures/make_monitored_session_fixtures.py``) and TF1's documented
semantics."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures.make_monitored_session_fixtures import build, evaluate
from tests.engine.fixtures.oracle import assert_recorded, load, recorded_keys

RECORDING = load("monitored_session_tf.npz")
ENGINE = evaluate(tf)


@pytest.mark.parametrize("key", recorded_keys(RECORDING))
def test_training_loop_matches_tensorflow(key):
    """Hook call order, losses, checkpoint steps, restored variables and global step."""
    assert_recorded(ENGINE[key], RECORDING[key], key, rtol=1e-5, atol=1e-6)


class Recorder(tf.train.SessionRunHook):
    def __init__(self, fetches=None, feeds=None):
        self.calls, self.results = [], []
        self._fetches, self._feeds = fetches, feeds

    def begin(self):
        self.calls.append("begin")

    def after_create_session(self, session, coord):  # noqa: ARG002  # noqa: ARG002
        self.calls.append("after_create_session")

    def before_run(self, run_context):  # noqa: ARG002
        self.calls.append("before_run")
        if self._fetches is None and self._feeds is None:
            return None
        return tf.train.SessionRunArgs(self._fetches, self._feeds)

    def after_run(self, run_context, run_values):  # noqa: ARG002
        self.calls.append("after_run")
        self.results.append(run_values.results)

    def end(self, session):  # noqa: ARG002
        self.calls.append("end")


def test_fetches_and_feeds_are_merged():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        y = tf.placeholder(tf.float32, [])
        both = Recorder(fetches={"double": x * 2.0}, feeds={y: 5.0})
        silent = Recorder()
        x_plus_one = x + 1.0
        with tf.train.MonitoredSession(hooks=[both, silent]) as sess:
            assert sess.run([x_plus_one, y], feed_dict={x: 3.0}) == [4.0, 5.0]
        assert both.results == [{"double": 6.0}]
        assert silent.results == [None]
        assert both.calls == [
            "begin", "after_create_session", "before_run", "after_run", "end"
        ]  # fmt: skip


def test_feed_conflicts_raise():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        with tf.train.MonitoredSession(hooks=[Recorder(feeds={x: 1.0})]) as sess:
            with pytest.raises(RuntimeError, match="fed by a SessionRunHook and user"):
                sess.run(x, feed_dict={x: 2.0})
            assert sess.run(x) == 1.0


def _counter():
    step = tf.train.get_or_create_global_step()
    return tf.assign_add(step, 1)


@pytest.mark.parametrize(
    ("hook", "expected"),
    [
        (lambda: tf.train.StopAtStepHook(num_steps=3), 3),
        (lambda: tf.train.StopAtStepHook(last_step=5), 5),
    ],
)
def test_stop_at_step(hook, expected):
    with tf.Graph().as_default():
        inc = _counter()
        runs = 0
        with tf.train.MonitoredSession(hooks=[hook()]) as sess:
            while not sess.should_stop():
                sess.run(inc)
                runs += 1
        assert runs == expected


def test_stop_at_step_arguments():
    with pytest.raises(ValueError, match="One of num_steps or last_step"):
        tf.train.StopAtStepHook()
    with pytest.raises(ValueError, match="Only one of"):
        tf.train.StopAtStepHook(num_steps=1, last_step=2)


def test_second_session_restores_and_continues(tmp_path):
    """Variables and the global step continue where the first session stopped."""
    for last_step in (4, 9):
        with tf.Graph().as_default():
            train_op, _, w = build(tf)
            stop = tf.train.StopAtStepHook(last_step=last_step)
            final_w = tf.train.FinalOpsHook(w)
            with tf.train.MonitoredTrainingSession(
                checkpoint_dir=str(tmp_path), hooks=[stop, final_w], save_checkpoint_steps=2
            ) as sess:
                start = sess.run(tf.train.get_global_step())
                while not sess.should_stop():
                    sess.run(train_op)
        assert start == (0 if last_step == 4 else 4)
        assert tf.train.latest_checkpoint(str(tmp_path)).endswith(f"model.ckpt-{last_step}")
    # Nine uninterrupted steps reach the same variables.
    with tf.Graph().as_default():
        train_op, _, w = build(tf)
        final_w_once = tf.train.FinalOpsHook(w)
        hooks = [tf.train.StopAtStepHook(9), final_w_once]
        with tf.train.MonitoredTrainingSession(hooks=hooks) as sess:
            while not sess.should_stop():
                sess.run(train_op)
    np.testing.assert_allclose(final_w.final_ops_values, final_w_once.final_ops_values, rtol=1e-6)


def test_nan_tensor_hook():
    with tf.Graph().as_default():
        loss = tf.constant(float("nan"))
        with pytest.raises(tf.train.NanLossDuringTrainingError):
            with tf.train.MonitoredSession(hooks=[tf.train.NanTensorHook(loss)]) as sess:
                sess.run(loss)
        with tf.train.MonitoredSession(hooks=[tf.train.NanTensorHook(loss, False)]) as sess:
            sess.run(loss)
            assert sess.should_stop()


def test_logging_tensor_hook(caplog):
    with tf.Graph().as_default():
        inc = _counter()
        hook = tf.train.LoggingTensorHook({"step": inc}, every_n_iter=2)
        with caplog.at_level(logging.INFO, logger="tensorflow"):
            with tf.train.MonitoredSession(hooks=[hook]) as sess:
                for _ in range(5):
                    sess.run(inc.op)
        logged = [r.getMessage() for r in caplog.records if r.name == "tensorflow"]
        steps = [m.split(" = ")[1].split(" ")[0] for m in logged if m.startswith("step = ")]
        assert steps == ["1", "3", "5"]  # runs 0, 2 and 4


def test_out_of_range_ends_the_loop_cleanly():
    with tf.Graph().as_default():
        item = tf.data.Dataset.range(3).make_one_shot_iterator().get_next()
        final = tf.train.FinalOpsHook(tf.constant(7))
        seen = []
        with tf.train.MonitoredSession(hooks=[final]) as sess:
            while not sess.should_stop():
                seen.append(int(sess.run(item)))
        assert seen == [0, 1, 2]
        assert final.final_ops_values == 7  # end() ran: a clean close


def test_close_is_idempotent_and_ends_hooks_once():
    with tf.Graph().as_default():
        hook, inc = Recorder(), _counter()
        sess = tf.train.MonitoredSession(hooks=[hook])
        sess.close()
        sess.close()
        assert hook.calls.count("end") == 1
        assert sess.should_stop()
        with pytest.raises(RuntimeError, match="closed"):
            sess.run(inc)
        assert not tf.get_default_graph().finalized


def test_error_skips_end():
    with tf.Graph().as_default():
        hook = Recorder()
        with pytest.raises(ZeroDivisionError):
            with tf.train.MonitoredSession(hooks=[hook]):
                1 / 0  # noqa: B018
        assert "end" not in hook.calls


def test_run_step_fn():
    with tf.Graph().as_default():
        inc = _counter()
        hook = Recorder()
        with tf.train.MonitoredSession(hooks=[hook]) as sess:
            assert sess.run_step_fn(lambda step_context: step_context.run_with_hooks(inc)) == 1
            assert sess.run_step_fn(lambda step_context: step_context.session.run(inc)) == 2
            sess.run_step_fn(lambda step_context: step_context.request_stop())
        assert hook.calls.count("after_run") == 1
        assert hook.calls[-1] == "end"


def test_scaffold_defaults_and_finalized_graph():
    with tf.Graph().as_default() as g:
        tf.Variable(1.0)
        scaffold = tf.train.Scaffold()
        with tf.train.SingularMonitoredSession(scaffold=scaffold) as sess:
            assert g.finalized
            assert scaffold.init_op is not None and scaffold.ready_op is not None
            assert isinstance(scaffold.saver, tf.train.Saver)
            assert g.get_collection(tf.GraphKeys.SAVERS) == [scaffold.saver]
            assert sess.raw_session().graph is g


@pytest.mark.parametrize(
    ("kwargs", "what"),
    [({"master": "grpc://ps:2222"}, "master='grpc://ps:2222'"), ({"is_chief": False}, "is_chief")],
)
def test_distributed_options_are_out_of_scope(kwargs, what):
    with tf.Graph().as_default(), pytest.raises(NotImplementedError, match="out of scope") as e:
        tf.train.MonitoredTrainingSession(**kwargs)
    assert what in str(e.value)


def test_timer_steps():
    timer = tf.train.SecondOrStepTimer(every_steps=3)
    assert timer.should_trigger_for_step(0)
    timer.update_last_triggered_step(0)
    assert [timer.should_trigger_for_step(s) for s in (0, 2, 3)] == [False, False, True]
