"""RNN cells and drivers: variable names, shapes, sequence masks, dropout, errors, and a
dynamic_rnn that trains (values against TensorFlow are in test_rnn_tf.py)."""

import numpy as np
import pytest

import engine as tf

rng = np.random.default_rng(5)


def test_cell_variable_names_match_tf1():
    x = tf.placeholder(tf.float32, [None, 6, 3])
    cell = tf.nn.rnn_cell.MultiRNNCell(
        [tf.nn.rnn_cell.LSTMCell(4, use_peepholes=True, num_proj=2), tf.nn.rnn_cell.GRUCell(5)]
    )
    out, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    assert out.shape.as_list() == [None, 6, 5]
    assert state[0].c.shape.as_list() == [None, 4] and state[0].h.shape.as_list() == [None, 2]
    assert sorted(v.name for v in tf.trainable_variables()) == [
        "rnn/multi_rnn_cell/cell_0/lstm_cell/bias:0",
        "rnn/multi_rnn_cell/cell_0/lstm_cell/kernel:0",
        "rnn/multi_rnn_cell/cell_0/lstm_cell/projection/kernel:0",
        "rnn/multi_rnn_cell/cell_0/lstm_cell/w_f_diag:0",
        "rnn/multi_rnn_cell/cell_0/lstm_cell/w_i_diag:0",
        "rnn/multi_rnn_cell/cell_0/lstm_cell/w_o_diag:0",
        "rnn/multi_rnn_cell/cell_1/gru_cell/candidate/bias:0",
        "rnn/multi_rnn_cell/cell_1/gru_cell/candidate/kernel:0",
        "rnn/multi_rnn_cell/cell_1/gru_cell/gates/bias:0",
        "rnn/multi_rnn_cell/cell_1/gru_cell/gates/kernel:0",
    ]
    assert tf.get_default_graph().get_tensor_by_name(
        "rnn/multi_rnn_cell/cell_0/lstm_cell/kernel:0"
    ).shape.as_list() == [5, 16]


def test_sequence_mask_and_reverse_sequence():
    m = tf.sequence_mask([1, 3, 0], 4)
    r = tf.reverse_sequence(tf.constant([[1, 2, 3, 4], [5, 6, 7, 8]]), [2, 4], seq_axis=1)
    with tf.Session() as sess:
        mv, rv = sess.run([m, r])
    np.testing.assert_array_equal(mv, [[1, 0, 0, 0], [1, 1, 1, 0], [0, 0, 0, 0]])
    np.testing.assert_array_equal(rv, [[2, 1, 3, 4], [8, 7, 6, 5]])


def test_dropout_wrapper_drops_outputs_at_run_time():
    x = tf.ones([50, 2, 3])
    keep = tf.placeholder_with_default(1.0, [])
    cell = tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.BasicRNNCell(8), output_keep_prob=keep)
    out, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        full = sess.run(out)
        dropped = sess.run(out, {keep: 0.5})
    assert (full != 0).mean() > 0.9
    zero = dropped == 0
    assert 0.3 < zero.mean() < 0.7
    np.testing.assert_allclose(dropped[~zero], 2 * full[~zero], rtol=1e-5)


def test_dynamic_rnn_trains():
    x = tf.placeholder(tf.float32, [None, None, 2])
    y = tf.placeholder(tf.float32, [None, 1])
    out, state = tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicLSTMCell(8), x, dtype=tf.float32)
    pred = tf.layers.dense(state.h, 1)
    loss = tf.reduce_mean(tf.square(pred - y))
    train = tf.train.AdamOptimizer(0.05).minimize(loss)
    xv = rng.standard_normal((32, 5, 2)).astype(np.float32)
    yv = xv[:, :, :1].sum(axis=1)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss, {x: xv, y: yv})
        for _ in range(60):
            sess.run(train, {x: xv, y: yv})
        last = sess.run(loss, {x: xv, y: yv})
    assert last < first / 5


def test_errors():
    cell = tf.nn.rnn_cell.BasicRNNCell(3)
    with pytest.raises(ValueError, match="dtype"):
        tf.nn.dynamic_rnn(cell, tf.zeros([2, 3, 4]))
    with pytest.raises(ValueError, match="rank 3"):
        tf.nn.dynamic_rnn(cell, tf.zeros([2, 3]), dtype=tf.float32)
    with pytest.raises(ValueError, match="last dimension"):
        tf.nn.dynamic_rnn(cell, tf.placeholder(tf.float32, [2, 3, None]), dtype=tf.float32)
    with pytest.raises(ValueError, match="between 0 and 1"):
        tf.nn.rnn_cell.DropoutWrapper(cell, output_keep_prob=1.5)
    with pytest.raises(ValueError, match="at least one cell"):
        tf.nn.rnn_cell.MultiRNNCell([])


def test_variational_dropout_uses_one_mask_for_every_step_and_row():
    # Seeded, and 16 inputs: with 3, all of them are dropped one run in eight, and then every
    # output is 0 (tanh(0)), which says nothing about the output mask.
    tf.set_random_seed(7)
    x = tf.ones([4, 6, 16])
    cell = tf.nn.rnn_cell.DropoutWrapper(
        tf.nn.rnn_cell.BasicRNNCell(40),
        input_keep_prob=0.5,
        output_keep_prob=0.5,
        state_keep_prob=0.5,
        variational_recurrent=True,
        input_size=16,
        dtype=tf.float32,
    )
    out, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first, second = sess.run(out), sess.run(out)
    zero = first == 0
    # one [1, 40] mask: the same columns are dropped at every time step and batch row
    assert (zero == zero[:1, :1]).all()
    assert 0 < zero[0, 0].sum() < 40
    # a fresh mask per Session.run
    assert not ((second == 0) == zero).all()


def test_dropout_state_filter_keeps_lstm_memory():
    cell = tf.nn.rnn_cell.DropoutWrapper(
        tf.nn.rnn_cell.BasicLSTMCell(30), state_keep_prob=1e-6, seed=3
    )
    _, state = tf.nn.dynamic_rnn(cell, tf.ones([2, 3, 4]), dtype=tf.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        c, h = sess.run([state.c, state.h])
    assert (c != 0).all()  # never dropped, as in TF's default filter
    assert (h == 0).mean() > 0.9


def test_variational_dropout_and_flat_multi_cell_errors():
    cell = tf.nn.rnn_cell.BasicRNNCell(3)
    with pytest.raises(ValueError, match="dtype must be provided"):
        tf.nn.rnn_cell.DropoutWrapper(cell, output_keep_prob=0.5, variational_recurrent=True)
    with pytest.raises(ValueError, match="input_size must be provided"):
        tf.nn.rnn_cell.DropoutWrapper(
            cell, input_keep_prob=0.5, variational_recurrent=True, dtype=tf.float32
        )
    with pytest.raises(ValueError, match="flat states"):
        tf.nn.rnn_cell.MultiRNNCell([cell, tf.nn.rnn_cell.LSTMCell(2)], state_is_tuple=False)


def test_flat_multi_cell_state_is_the_concatenated_states():
    cells = [tf.nn.rnn_cell.GRUCell(3), tf.nn.rnn_cell.LSTMCell(2, state_is_tuple=False)]
    multi = tf.nn.rnn_cell.MultiRNNCell(cells, state_is_tuple=False)
    assert multi.state_size == 7
    out, state = tf.nn.dynamic_rnn(multi, tf.ones([2, 3, 4]), dtype=tf.float32)
    assert state.shape.as_list() == [2, 7]
    assert out.shape.as_list() == [2, 3, 2]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        o, s = sess.run([out, state])
    np.testing.assert_allclose(o[:, -1], s[:, -2:], rtol=1e-6)  # LSTM h is last
