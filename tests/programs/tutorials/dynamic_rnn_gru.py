import numpy as np
import tensorflow as tf

from mnist_standin import init as randn

rng = np.random.default_rng(3)
seqs = rng.standard_normal((16, 6, 4)).astype(np.float32)
lengths = rng.integers(2, 7, 16).astype(np.int32)
targets = np.array([s[:n].sum() for s, n in zip(seqs, lengths)], np.float32)[:, None]

x = tf.placeholder(tf.float32, [None, None, 4])
seqlen = tf.placeholder(tf.int32, [None])
y = tf.placeholder(tf.float32, [None, 1])
with tf.variable_scope("model", initializer=tf.constant_initializer(0.05)):
    cell = tf.nn.rnn_cell.GRUCell(8)
    outputs, state = tf.nn.dynamic_rnn(cell, x, sequence_length=seqlen, dtype=tf.float32)
w = tf.Variable(randn([8, 1], 1))
pred = tf.matmul(state, w)
loss = tf.reduce_mean(tf.square(pred - y))
train = tf.train.RMSPropOptimizer(0.01).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(10):
        _, l = sess.run([train, loss], {x: seqs, seqlen: lengths, y: targets})
        print("step %d loss %.6f" % (step, l))
