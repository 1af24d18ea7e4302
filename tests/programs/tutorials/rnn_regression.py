import numpy as np
import tensorflow as tf

from mnist_standin import init as randn

BATCH_START, TIME_STEPS, BATCH_SIZE = 0, 10, 8
INPUT_SIZE, OUTPUT_SIZE, CELL_SIZE, LR = 1, 1, 8, 0.01


def get_batch():
    global BATCH_START
    xs = np.arange(BATCH_START, BATCH_START + TIME_STEPS * BATCH_SIZE).reshape(
        (BATCH_SIZE, TIME_STEPS)
    ) / (10 * np.pi)
    seq, res = np.sin(xs), np.cos(xs)
    BATCH_START += TIME_STEPS
    return (seq[:, :, np.newaxis].astype(np.float32), res[:, :, np.newaxis].astype(np.float32))


class LSTMRNN(object):
    def __init__(self):
        with tf.name_scope("inputs"):
            self.xs = tf.placeholder(tf.float32, [None, TIME_STEPS, INPUT_SIZE], name="xs")
            self.ys = tf.placeholder(tf.float32, [None, TIME_STEPS, OUTPUT_SIZE], name="ys")
        with tf.variable_scope("in_hidden"):
            l_in_x = tf.reshape(self.xs, [-1, INPUT_SIZE])
            Ws_in = tf.get_variable("weights", initializer=randn([INPUT_SIZE, CELL_SIZE], 1, 1.0))
            bs_in = tf.get_variable("biases", initializer=tf.constant(0.1, shape=[CELL_SIZE]))
            l_in_y = tf.reshape(tf.matmul(l_in_x, Ws_in) + bs_in, [-1, TIME_STEPS, CELL_SIZE])
        with tf.variable_scope("LSTM_cell", initializer=tf.constant_initializer(0.05)):
            cell = tf.nn.rnn_cell.BasicLSTMCell(CELL_SIZE, forget_bias=1.0, state_is_tuple=True)
            self.cell_init_state = cell.zero_state(BATCH_SIZE, dtype=tf.float32)
            self.cell_outputs, self.cell_final_state = tf.nn.dynamic_rnn(
                cell, l_in_y, initial_state=self.cell_init_state, time_major=False
            )
        with tf.variable_scope("out_hidden"):
            l_out_x = tf.reshape(self.cell_outputs, [-1, CELL_SIZE])
            Ws_out = tf.get_variable("weights", initializer=randn([CELL_SIZE, OUTPUT_SIZE], 2, 1.0))
            bs_out = tf.get_variable("biases", initializer=tf.constant(0.1, shape=[OUTPUT_SIZE]))
            self.pred = tf.matmul(l_out_x, Ws_out) + bs_out
        with tf.name_scope("cost"):
            self.cost = tf.reduce_mean(
                tf.square(tf.reshape(self.pred, [-1]) - tf.reshape(self.ys, [-1]))
            )
        with tf.name_scope("train"):
            self.train_op = tf.train.AdamOptimizer(LR).minimize(self.cost)


model = LSTMRNN()
sess = tf.Session()
sess.run(tf.global_variables_initializer())
state = None  # the final state of the previous batch, fed as the next initial state
for i in range(12):
    seq, res = get_batch()
    if i == 0:
        feed_dict = {model.xs: seq, model.ys: res}
    else:
        feed_dict = {model.xs: seq, model.ys: res, model.cell_init_state: state}
    _, cost, state = sess.run(
        [model.train_op, model.cost, model.cell_final_state], feed_dict=feed_dict
    )
    print("cost: %.6f" % cost)
