"""Optimizers, the global step and the classic TF1 training examples."""

import numpy as np
import pytest

import engine as tf
from models.datasets import load_digits, train_test_split


def test_linear_regression_with_gradient_descent_from_streamed_samples():
    rng = np.random.default_rng(0)
    x = tf.placeholder(tf.float32, [None], name="x")
    y = tf.placeholder(tf.float32, [None], name="y")
    m = tf.Variable(0.0, name="m")
    b = tf.Variable(0.0, name="b")
    loss = tf.reduce_mean(tf.square(m * x + b - y))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(500):
            xs = rng.uniform(-1, 1, 32).astype(np.float32)
            ys = 3.0 * xs - 2.0 + rng.normal(0, 0.01, 32).astype(np.float32)
            sess.run(train, {x: xs, y: ys})
        m_val, b_val = sess.run([m, b])
    assert abs(m_val - 3.0) < 0.02 and abs(b_val + 2.0) < 0.02


def test_polynomial_fit_with_adam():
    # "Effective TensorFlow": y = 5x^2 + 3 through tf.stack([x*x, x, ones_like(x)], 1) @ w,
    # with a small L2 penalty on w. The doc's 1000 steps leave the constant term at ~3.45;
    # 4000 steps bring it to the optimum.
    x = tf.placeholder(tf.float32, [None], name="x")
    y = tf.placeholder(tf.float32, [None], name="y")
    w = tf.get_variable("w", shape=[3, 1])
    f = tf.stack([tf.square(x), x, tf.ones_like(x)], 1)
    yhat = tf.squeeze(tf.matmul(f, w), 1)
    loss = tf.nn.l2_loss(yhat - y) + 0.1 * tf.nn.l2_loss(w)
    train_op = tf.train.AdamOptimizer(0.1).minimize(loss)
    rng = np.random.default_rng(1)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(4000):
            xs = rng.uniform(-10.0, 10.0, size=100).astype(np.float32)
            sess.run(train_op, {x: xs, y: 5 * xs * xs + 3})
        w_val = sess.run(w).ravel()
    assert abs(w_val[0] - 5.0) < 0.05 and abs(w_val[1]) < 0.05
    assert abs(w_val[2] - 3.0) < 0.3


def _mlp(x, sizes, seed=0):
    h = x
    for i, n in enumerate(sizes):
        h = tf.layers.dense(
            h,
            n,
            activation=tf.nn.relu if i < len(sizes) - 1 else None,
            kernel_initializer=tf.glorot_uniform_initializer(seed=seed + i),
        )
    return h


@pytest.mark.parametrize(
    "optimizer",
    [
        lambda: tf.train.AdamOptimizer(0.01),
        lambda: tf.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
        lambda: tf.train.RMSPropOptimizer(0.005),
        lambda: tf.train.AdagradOptimizer(0.1),
    ],
)
def test_mlp_classifier_on_real_digits_reaches_high_accuracy(optimizer):
    images, labels = load_digits()
    x_tr, y_tr, x_te, y_te = train_test_split(images / 16.0, labels, 0.25, seed=0)
    x = tf.placeholder(tf.float32, [None, 64], name="x")
    y = tf.placeholder(tf.int64, [None], name="y")
    logits = _mlp(x, [64, 10])
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    step = tf.train.get_or_create_global_step()
    train = optimizer().minimize(loss, global_step=step)
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))
    rng = np.random.default_rng(0)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(30):
            order = rng.permutation(len(x_tr))
            for i in range(0, len(order), 64):
                idx = order[i : i + 64]
                sess.run(train, {x: x_tr[idx], y: y_tr[idx]})
        acc = sess.run(accuracy, {x: x_te, y: y_te})
        steps = sess.run(step)
    assert acc > 0.93, f"test accuracy {acc}"
    assert steps == 30 * int(np.ceil(len(x_tr) / 64))


def test_slot_variables_are_named_as_tf_names_them():
    w = tf.Variable([1.0, 2.0], name="w")
    b = tf.Variable(0.0, name="b")
    loss = tf.reduce_sum(w * w) + b * b
    tf.train.AdamOptimizer().minimize(loss)
    tf.train.MomentumOptimizer(0.1, 0.9).minimize(loss)
    names = [v.op.name for v in tf.global_variables()]
    for expected in [
        "w/Adam",
        "w/Adam_1",
        "b/Adam",
        "b/Adam_1",
        "beta1_power",
        "beta2_power",
        "w/Momentum",
        "b/Momentum",
    ]:
        assert expected in names
    trainable = [v.op.name for v in tf.trainable_variables()]
    assert trainable == ["w", "b"]


def test_one_step_is_one_run_and_adds_no_ops():
    w = tf.Variable([1.0, 2.0])
    loss = tf.reduce_sum(tf.square(w))
    train = tf.train.GradientDescentOptimizer(0.25).minimize(loss)
    g = tf.get_default_graph()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        n = len(g.get_operations())
        sess.run(train)
        np.testing.assert_allclose(sess.run(w), [0.5, 1.0])  # w - 0.25 * 2w
        for _ in range(5):
            sess.run(train)
        assert len(g.get_operations()) == n


def test_optimizer_update_rules_match_numpy():
    g0 = np.array([0.5, -1.0], np.float32)
    w0 = np.array([1.0, 2.0], np.float32)
    cases = {
        "sgd": (tf.train.GradientDescentOptimizer(0.1), lambda w, s: w - 0.1 * g0),
        "momentum": (tf.train.MomentumOptimizer(0.1, 0.9), None),
        "adam": (tf.train.AdamOptimizer(0.01), None),
    }
    for name, (opt, _) in cases.items():
        with tf.Graph().as_default():
            w = tf.Variable(w0)
            train = opt.apply_gradients([(tf.constant(g0), w)])
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                for _ in range(3):
                    sess.run(train)
                got = sess.run(w)
        ref = w0.astype(np.float64).copy()
        m = np.zeros(2)
        v = np.zeros(2)
        for t in range(1, 4):
            if name == "sgd":
                ref -= 0.1 * g0
            elif name == "momentum":
                m = 0.9 * m + g0
                ref -= 0.1 * m
            else:
                m = 0.9 * m + 0.1 * g0
                v = 0.999 * v + 0.001 * g0 * g0
                lr = 0.01 * np.sqrt(1 - 0.999**t) / (1 - 0.9**t)
                ref -= lr * m / (np.sqrt(v) + 1e-8)
        np.testing.assert_allclose(got, ref, rtol=1e-5, err_msg=name)


def test_update_ops_idiom_and_global_step():
    w = tf.Variable(1.0)
    counter = tf.Variable(0.0, trainable=False)
    tf.add_to_collection(tf.GraphKeys.UPDATE_OPS, tf.assign_add(counter, 1.0))
    loss = tf.square(w)
    step = tf.train.get_or_create_global_step()
    assert tf.train.get_global_step() is step and step.dtype.base_dtype == tf.int64
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    assert train in tf.get_collection(tf.GraphKeys.TRAIN_OP)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train)
        assert sess.run(counter) == 3.0 and sess.run(step) == 3
    with pytest.raises(ValueError, match="already exists"):
        tf.train.create_global_step()


def test_compute_and_apply_gradients_and_errors():
    w = tf.Variable(1.0)
    other = tf.Variable(2.0)
    loss = tf.square(w)
    opt = tf.train.GradientDescentOptimizer(0.5)
    gv = opt.compute_gradients(loss)
    assert [v for _, v in gv] == [w, other]
    assert gv[1][0] is None
    clipped = [(tf.clip_by_value(g, -0.1, 0.1), v) for g, v in gv if g is not None]
    train = opt.apply_gradients(clipped)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        assert sess.run(w) == pytest.approx(0.95)
    with pytest.raises(ValueError, match="No gradients provided for any variable"):
        opt.minimize(
            tf.square(tf.constant(1.0)) + 0 * tf.cast(tf.constant(1), tf.float32), var_list=[other]
        )
    with pytest.raises(ValueError, match="No variables to optimize"):
        opt.minimize(loss, var_list=[])


def test_learning_rate_may_be_a_placeholder():
    lr = tf.placeholder(tf.float32, [])
    w = tf.Variable(1.0)
    train = tf.train.GradientDescentOptimizer(lr).minimize(tf.square(w))
    with tf.Session() as sess:
        sess.run(w.initializer)
        sess.run(train, {lr: 0.25})
        assert sess.run(w) == pytest.approx(0.5)


def test_fetching_a_variable_then_training_does_not_mutate_the_fetched_array():
    w = tf.Variable([1.0, 2.0])
    train = tf.train.AdamOptimizer(0.1).minimize(tf.reduce_sum(w * w))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        before = sess.run(w)
        kept = before.copy()
        sess.run(train)
        np.testing.assert_array_equal(before, kept)
        assert not np.array_equal(sess.run(w), kept)


# -- checkpoints ----------------------------------------------------------------------------


def test_saver_round_trip_gives_identical_outputs(tmp_path):
    x = tf.placeholder(tf.float32, [None, 64])
    logits = _mlp(x, [32, 10])
    xs = np.random.default_rng(0).standard_normal((5, 64)).astype(np.float32)
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        before = sess.run(logits, {x: xs})
        path = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=7)
    assert path.endswith("model.ckpt-7")
    with tf.Session() as sess:
        saver.restore(sess, tf.train.latest_checkpoint(str(tmp_path)))
        after = sess.run(logits, {x: xs})
    assert before.tobytes() == after.tobytes()


def test_saver_max_to_keep_and_state_file(tmp_path):
    v = tf.Variable(0)
    inc = tf.assign_add(v, 1)
    saver = tf.train.Saver(max_to_keep=2)
    with tf.Session() as sess:
        sess.run(v.initializer)
        paths = []
        for step in range(4):
            sess.run(inc)
            paths.append(saver.save(sess, str(tmp_path / "ckpt"), global_step=step))
    assert saver.last_checkpoints == paths[2:]
    assert not tf.train.checkpoint_exists(paths[0]) and tf.train.checkpoint_exists(paths[3])
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path == paths[3]
    assert state.all_model_checkpoint_paths == paths[2:]
    with tf.Session() as sess:
        saver.restore(sess, paths[2])
        assert sess.run(v) == 3


def test_saver_errors_name_the_variable(tmp_path):
    with tf.Graph().as_default():
        tf.Variable([1.0, 2.0], name="w")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = tf.train.Saver().save(sess, str(tmp_path / "a"))
    with tf.Graph().as_default():
        tf.Variable([1.0, 2.0], name="w")
        tf.Variable(1.0, name="extra")
        with tf.Session() as sess:
            with pytest.raises(tf.errors.NotFoundError, match="extra"):
                tf.train.Saver().restore(sess, path)
    with tf.Graph().as_default():
        tf.Variable([1.0, 2.0, 3.0], name="w")
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="w.*shape"):
                tf.train.Saver().restore(sess, path)
    with tf.Graph().as_default():
        tf.Variable([1, 2], name="w")
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="int32"):
                tf.train.Saver().restore(sess, path)
    with tf.Graph().as_default():
        tf.Variable(1.0)
        with tf.Session() as sess:
            with pytest.raises(ValueError, match="not a valid checkpoint"):
                tf.train.Saver().restore(sess, str(tmp_path / "missing"))
            with pytest.raises(ValueError, match="save_path when it is None"):
                tf.train.Saver().restore(sess, None)
    assert tf.train.latest_checkpoint(str(tmp_path / "nowhere")) is None


def test_saver_var_list_dict_and_import_meta_graph(tmp_path):
    w = tf.Variable([3.0, 4.0], name="w")
    y = tf.multiply(w, 2.0, name="y")
    with tf.Session() as sess:
        sess.run(w.initializer)
        path = tf.train.Saver({"renamed": w}).save(sess, str(tmp_path / "d"))
        full = tf.train.Saver().save(sess, str(tmp_path / "full"))
    with tf.Graph().as_default():
        w2 = tf.Variable([0.0, 0.0], name="other")
        with tf.Session() as sess:
            tf.train.Saver({"renamed": w2}).restore(sess, path)
            np.testing.assert_array_equal(sess.run(w2), [3.0, 4.0])
    with tf.Graph().as_default() as g:
        saver = tf.train.import_meta_graph(full + ".meta")
        with tf.Session() as sess:
            saver.restore(sess, full)
            np.testing.assert_array_equal(sess.run(g.get_tensor_by_name(y.name)), [6.0, 8.0])
            assert [v.name for v in tf.global_variables()] == ["w:0"]
