"""tf.data in graph mode: sources, transformations, iterators (one-shot and initializable,
fed from placeholders), OutOfRangeError at the end, shuffling, errors, and a training loop
over a dataset."""

import numpy as np
import pytest

import engine as tf

F = np.float32


def _drain(t, feed=None, limit=100):
    out = []
    with tf.Session() as sess:
        for _ in range(limit):
            try:
                out.append(sess.run(t, feed))
            except tf.errors.OutOfRangeError:
                return out
    raise AssertionError("dataset did not end")


def test_slices_map_batch_repeat_in_order():
    x = np.arange(10, dtype=F).reshape(5, 2)
    ds = tf.data.Dataset.from_tensor_slices((x, np.arange(5))).map(lambda a, b: (a * 2.0, b + 1))
    ds = ds.batch(2).repeat(2)
    assert ds.output_types == (tf.float32, tf.int64)
    assert [s.as_list() for s in ds.output_shapes] == [[None, 2], [None]]
    got = _drain(ds.make_one_shot_iterator().get_next())
    assert [b.tolist() for _, b in got] == [[1, 2], [3, 4], [5], [1, 2], [3, 4], [5]]
    np.testing.assert_array_equal(got[2][0], [[16.0, 18.0]])


def test_from_tensors_range_zip_take_skip_prefetch_and_dicts():
    r = tf.data.Dataset.range(2, 12, 3)
    z = tf.data.Dataset.zip({"a": r, "b": r.map(lambda v: tf.cast(v, tf.float32) / 2)})
    got = _drain(z.skip(1).take(2).prefetch(1).make_one_shot_iterator().get_next())
    assert [(int(e["a"]), float(e["b"])) for e in got] == [(5, 2.5), (8, 4.0)]
    one = _drain(tf.data.Dataset.from_tensors([1, 2, 3]).make_one_shot_iterator().get_next())
    assert [v.tolist() for v in one] == [[1, 2, 3]]
    dropped = tf.data.Dataset.range(5).batch(2, drop_remainder=True)
    assert dropped.output_shapes.as_list() == [2]
    assert [v.tolist() for v in _drain(dropped.make_one_shot_iterator().get_next())] == [
        [0, 1],
        [2, 3],
    ]


def test_initializable_iterator_takes_data_from_the_feed_and_restarts():
    p = tf.placeholder(tf.float32, [None])
    it = tf.data.Dataset.from_tensor_slices(p).batch(3).make_initializable_iterator()
    nxt = it.get_next()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="not been initialized"):
            sess.run(nxt)
        sess.run(it.initializer, {p: [1, 2, 3, 4]})
        assert sess.run(nxt).tolist() == [1, 2, 3]
        sess.run(it.initializer, {p: [7]})
        assert sess.run(nxt).tolist() == [7]
        with pytest.raises(tf.errors.OutOfRangeError, match="End of sequence"):
            sess.run(nxt)
    with pytest.raises(ValueError, match="one-shot"):
        tf.data.Dataset.range(2).make_one_shot_iterator().initializer  # noqa: B018


def test_shuffle_is_a_permutation_seeded_and_reshuffled_per_epoch():
    ds = tf.data.Dataset.range(20).shuffle(20, seed=4).repeat(3)
    first = [int(v) for v in _drain(ds.make_one_shot_iterator().get_next())]
    again = [int(v) for v in _drain(ds.make_one_shot_iterator().get_next())]
    epochs = [first[i * 20 : (i + 1) * 20] for i in range(3)]
    assert all(sorted(e) == list(range(20)) for e in epochs)
    assert epochs[0] != list(range(20)) and epochs[0] != epochs[1]
    assert first == again  # seeded: the same orders in every session
    fixed = tf.data.Dataset.range(20).shuffle(20, seed=4, reshuffle_each_iteration=False)
    order = [int(v) for v in _drain(fixed.repeat(2).make_one_shot_iterator().get_next())]
    assert order[:20] == order[20:]


def test_training_loop_over_a_dataset():
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((64, 3)).astype(F)
    ys = xs @ np.array([[1.0], [-2.0], [0.5]], F)
    x, y = (
        tf.data.Dataset.from_tensor_slices((xs, ys))
        .shuffle(64, seed=1)
        .batch(16)
        .repeat(30)
        .make_one_shot_iterator()
        .get_next()
    )
    w = tf.Variable(tf.zeros([3, 1]))
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    steps = 0
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        while True:
            try:
                sess.run(train)
            except tf.errors.OutOfRangeError:
                break
            steps += 1
        np.testing.assert_allclose(sess.run(w).ravel(), [1.0, -2.0, 0.5], atol=1e-3)
    assert steps == 4 * 30


def test_errors():
    with pytest.raises(ValueError, match="rank >= 1"):
        tf.data.Dataset.from_tensor_slices(tf.constant(1.0))
    with pytest.raises(ValueError, match="must all be equal"):
        tf.data.Dataset.from_tensor_slices((np.zeros(3), np.zeros(4)))
    ragged = tf.data.Dataset.from_tensor_slices(tf.constant([1, 2, 3])).map(lambda v: tf.range(v))
    nxt = ragged.batch(2).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Cannot batch tensors"):
            sess.run(nxt)


def round_trip_builder():
    """Every dataset op, for test_graph_def's round-trip table."""
    r = tf.data.Dataset.range(6)
    ds = tf.data.Dataset.zip((r, tf.data.Dataset.from_tensor_slices(np.arange(6.0))))
    ds = ds.map(lambda a, b: (a * 2, b + 1.0)).skip(1).take(4).shuffle(4, seed=2)
    ds = ds.batch(2).repeat(1).prefetch(1)
    a, b = ds.make_one_shot_iterator().get_next()
    it = tf.data.Dataset.from_tensors(np.ones(2)).make_initializable_iterator()
    nested = tf.data.Dataset.range(1, 5).filter(lambda x: x > 1)
    nested = nested.flat_map(lambda x: tf.data.Dataset.range(x)).map(lambda y: tf.fill([y], y))
    padded = nested.padded_batch(3, padded_shapes=[None], padding_values=np.int64(7)).cache()
    return (
        [a, b, it.get_next(), padded.make_one_shot_iterator().get_next()],
        {},
        [it.initializer.name],
    )


def test_round_trip_builder_runs():
    fetches, _, setup = round_trip_builder()
    with tf.Session() as sess:
        sess.run(setup[0])
        a, b, c, d = sess.run(fetches)
    assert a.shape == (2,) and b.dtype == np.float64 and c.tolist() == [1.0, 1.0]
    assert d.tolist() == [[7], [1], [7]]  # fill([0], 0), fill([1], 1), fill([0], 0), padded


# The expected values below are TensorFlow 2.21's (tf.compat.v1, graph mode) for the same
# pipelines.


def test_filter_keeps_elements_where_the_predicate_holds():
    ds = tf.data.Dataset.range(10).filter(lambda x: tf.equal(x % 3, 0))
    assert _drain(ds.make_one_shot_iterator().get_next()) == [0, 3, 6, 9]
    with pytest.raises(ValueError, match="scalar boolean"):
        tf.data.Dataset.range(3).filter(lambda x: x)


def test_flat_map_concatenates_inner_datasets():
    ds = tf.data.Dataset.range(4).flat_map(
        lambda x: tf.data.Dataset.range(x).map(lambda y: y * 10 + x)
    )
    assert _drain(ds.make_one_shot_iterator().get_next()) == [1, 2, 12, 3, 13, 23]
    with pytest.raises(TypeError, match="must return a `Dataset`"):
        tf.data.Dataset.range(3).flat_map(lambda x: x)


def test_padded_batch_pads_to_the_longest_or_to_a_fixed_shape():
    seqs = tf.data.Dataset.range(1, 6).map(lambda n: (tf.fill([n], n), n))
    ds = seqs.padded_batch(2, padded_shapes=([None], []), padding_values=(np.int64(-1), None))
    assert [s.as_list() for s in ds.output_shapes] == [[None, None], [None]]
    got = _drain(ds.make_one_shot_iterator().get_next())
    assert [b[0].tolist() for b in got] == [
        [[1, -1], [2, 2]],
        [[3, 3, 3, -1], [4, 4, 4, 4]],
        [[5, 5, 5, 5, 5]],
    ]
    assert [b[1].tolist() for b in got] == [[1, 2], [3, 4], [5]]
    fixed = seqs.padded_batch(2, padded_shapes=([6], []), drop_remainder=True)
    assert [s.as_list() for s in fixed.output_shapes] == [[2, 6], [2]]
    got = _drain(fixed.make_one_shot_iterator().get_next())
    assert [b[0].tolist() for b in got] == [
        [[1, 0, 0, 0, 0, 0], [2, 2, 0, 0, 0, 0]],
        [[3, 3, 3, 0, 0, 0], [4, 4, 4, 4, 0, 0]],
    ]
    too_small = seqs.padded_batch(2, padded_shapes=([3], []))
    with pytest.raises(tf.errors.InvalidArgumentError, match="pad to a smaller size"):
        _drain(too_small.make_one_shot_iterator().get_next())
    with pytest.raises(ValueError, match="not compatible"):
        tf.data.Dataset.from_tensors(np.zeros([4], F)).padded_batch(2, padded_shapes=[2])
    with pytest.raises(ValueError, match="structure"):
        seqs.padded_batch(2, padded_shapes=[None])


def test_cache_replays_the_first_pass():
    ds = tf.data.Dataset.range(3).map(lambda x: tf.random_uniform([]) + tf.cast(x, tf.float32))
    got = _drain(ds.cache().repeat(2).make_one_shot_iterator().get_next())
    assert got[:3] == got[3:]  # computed once: the random draws are replayed
    uncached = _drain(ds.repeat(2).make_one_shot_iterator().get_next())
    assert uncached[:3] != uncached[3:]
    with pytest.raises(ValueError, match="in memory only"):
        ds.cache("/tmp/cache")
