"""Learning-rate schedules against TensorFlow: values at many global steps and tensor names
recorded by ``fixtures/make_lr_decay_fixtures.py`` from the same graphs (``build``)."""

import numpy as np
import pytest

import engine as tf
from tests.engine.fixtures.make_lr_decay_fixtures import PIECEWISE, SCHEDULES, STEPS, build
from tests.engine.fixtures.oracle import load

TF = load("lr_decay_tf.npz")
VALUE_KEYS = sorted(k for k in TF.files if not k.startswith(("name_", "tf_version", "steps")))


@pytest.fixture(scope="module")
def ours():
    g = tf.Graph()
    with g.as_default():
        fetch, names = build(tf)
        with tf.Session(graph=g) as sess:
            return {k: np.array(v) for k, v in sess.run(fetch).items()}, names


def test_the_fixture_records_its_tensorflow_version_and_steps():
    assert str(TF["tf_version"]).count(".") == 2
    assert TF["steps"].tolist() == STEPS
    # Every case is compared at every step: 32 cases of 18 steps, 576 values.
    assert set(VALUE_KEYS) == {*SCHEDULES, *PIECEWISE, "exp_tensor_arguments"}
    assert sum(TF[k].size for k in VALUE_KEYS) == 32 * 18 == len(VALUE_KEYS) * len(STEPS)


@pytest.mark.parametrize("key", VALUE_KEYS)
def test_schedule_matches_tensorflow(ours, key):
    values, _ = ours
    expected = TF[key]
    got = values[key]
    assert got.dtype == expected.dtype and got.shape == expected.shape, key
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-12, equal_nan=True)


def test_tensor_names_match_tensorflow(ours):
    _, names = ours
    assert names, "no names recorded"
    for key, name in names.items():
        assert name == str(TF[f"name_{key}"]), key


def test_the_recorded_schedules_have_their_shape():
    """Sanity of the recorded cases: staircase steps only at multiples of decay_steps, cycle
    jumps back up after each period, restarts return to the initial rate."""
    steps = np.array(STEPS)
    np.testing.assert_allclose(TF["exp"], 0.1 * 0.5 ** (steps / 10), rtol=1e-6)
    np.testing.assert_allclose(TF["exp_staircase"], 0.1 * 0.5 ** (steps // 10), rtol=1e-6)
    at = {s: i for i, s in enumerate(STEPS)}
    assert TF["poly_cycle"][at[11]] > TF["poly_cycle"][at[10]]
    assert TF["poly"][at[11]] == TF["poly"][at[10]]
    for s in (0, 10, 30, 70):
        assert np.isclose(TF["restarts"][at[s]], 0.1), s
    assert np.isnan(TF["exp_zero_decay_steps"][0])  # TF does not check decay_steps


def test_int64_and_int32_steps_agree(ours):
    values, _ = ours
    np.testing.assert_array_equal(values["exp"], values["exp_int64"])


COSINE_FAMILY = [k for k, v in SCHEDULES.items() if "cosine" in v[0] or k.startswith("poly_cycle")]


@pytest.mark.parametrize("key", COSINE_FAMILY)
def test_float64_learning_rates_work_where_tensorflow_raises(key):
    """TF mixes a float32 constant into these schedules, so a float64 rate raises there; the
    engine computes them in float64, which agrees with TF's float32 values."""
    fn_name, lr, step_dtype, kwargs = SCHEDULES[key]
    schedule = getattr(tf.train, fn_name)
    with tf.Graph().as_default():
        rate = tf.constant(lr, dtype=tf.float64)
        outs = [schedule(rate, tf.constant(s, getattr(tf, step_dtype)), **kwargs) for s in STEPS]
        assert all(o.dtype == tf.float64 for o in outs)
        with tf.Session() as sess:
            got = np.array(sess.run(outs))
    assert got.dtype == np.float64
    # float32 rounding of TF's values, near cos(pi) cancellation: an absolute bound too.
    np.testing.assert_allclose(got, TF[key], rtol=2e-6, atol=0.1 * 2e-7)


def test_the_schedule_follows_a_global_step_variable():
    with tf.Graph().as_default():
        step = tf.train.get_or_create_global_step()
        lr = tf.train.polynomial_decay(0.1, step, 10, cycle=True)
        bump = tf.assign_add(step, 5)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            seen = []
            for _ in range(len(STEPS[:4])):
                seen.append(sess.run(lr))
                sess.run(bump)
    np.testing.assert_allclose(seen, TF["poly_cycle"][[0, 2, 4, 6]], rtol=1e-6)


def test_a_decayed_rate_drives_gradient_descent():
    """Each step moves w by exactly lr(step) * grad, with lr evaluated at the step before the
    update (the optimizer increments the global step after applying)."""
    with tf.Graph().as_default():
        step = tf.train.get_or_create_global_step()
        lr = tf.train.exponential_decay(0.5, step, 2, 0.5, staircase=True)
        w = tf.Variable(np.array([1.0, -2.0], np.float32), name="w")
        loss = tf.reduce_sum(w * tf.constant(np.array([3.0, 4.0], np.float32)))  # grad [3, 4]
        train = tf.train.GradientDescentOptimizer(lr).minimize(loss, global_step=step)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for i in range(6):
                before, rate = sess.run([w, lr])
                assert rate == np.float32(0.5 * 0.5 ** (i // 2)), i
                sess.run(train)
                after = sess.run(w)
                np.testing.assert_allclose(before - after, rate * np.array([3.0, 4.0]), rtol=1e-6)
            assert sess.run(step) == 6


@pytest.mark.parametrize(
    "fn_name, args",
    [
        ("exponential_decay", (10, 0.5)),
        ("natural_exp_decay", (10, 0.5)),
        ("inverse_time_decay", (10, 0.5)),
        ("polynomial_decay", (10,)),
        ("cosine_decay", (10,)),
        ("cosine_decay_restarts", (10,)),
        ("linear_cosine_decay", (10,)),
        ("noisy_linear_cosine_decay", (10,)),
    ],
)
def test_a_missing_global_step_is_a_clear_error(fn_name, args):
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=f"global_step is required for {fn_name}\\."):
            getattr(tf.train, fn_name)(0.1, None, *args)


def test_piecewise_constant_rejects_what_tensorflow_rejects():
    with tf.Graph().as_default():
        x = tf.constant(3)
        with pytest.raises(ValueError, match="length of boundaries should be 1 less"):
            tf.train.piecewise_constant(x, [1, 2], [1.0, 2.0])
        with pytest.raises(ValueError, match="length of boundaries should be 1 less"):
            tf.train.piecewise_constant_decay(x, [1], [1.0, 2.0, 3.0])
        msg = (
            r"Boundaries \(<dtype: 'int32'>\) must have the same dtype as x \(<dtype: 'float32'>\)"
        )
        with pytest.raises(ValueError, match=msg):
            tf.train.piecewise_constant(tf.constant(3.0), [1, 2], [1.0, 2.0, 3.0])
        with pytest.raises(ValueError, match="Boundaries .*int64.* same dtype as x .*int32"):
            tf.train.piecewise_constant(x, [tf.constant(1, tf.int64)], [1.0, 2.0])
        msg = r"same dtype \(<dtype: 'float32'> vs <dtype: 'int32'>\)"
        with pytest.raises(ValueError, match=msg):
            tf.train.piecewise_constant(x, [1, 2], [1.0, 2, 3.0])
        with pytest.raises(ValueError, match="x is required for piecewise_constant"):
            tf.train.piecewise_constant(None, [1], [1.0, 2.0])


def test_piecewise_constant_falls_back_to_the_first_value_for_nan():
    """TF's case() has no matching branch for NaN and takes its default, values[0]."""
    with tf.Graph().as_default():
        out = tf.train.piecewise_constant(tf.constant(np.nan), [1.0, 2.0], [7.0, 8.0, 9.0])
        with tf.Session() as sess:
            assert sess.run(out) == 7.0


def test_noisy_linear_cosine_decay_is_noisy_around_linear_cosine():
    with tf.Graph().as_default():
        tf.set_random_seed(3)
        step = tf.constant(2)
        noisy = tf.train.noisy_linear_cosine_decay(0.1, step, 10)
        clean = tf.train.linear_cosine_decay(0.1, step, 10)
        with tf.Session() as sess:
            draws = np.array([sess.run(noisy) for _ in range(400)])
            mean = sess.run(clean)
    assert draws.dtype == np.float32 and np.std(draws) > 0.01
    # lr * cos * noise with variance (1 + 2) ** -0.55: the mean stays at the clean rate.
    assert abs(draws.mean() - mean) < 4 * draws.std() / np.sqrt(len(draws))
