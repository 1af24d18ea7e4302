import numpy as np
import tensorflow as tf

from mnist_standin import init as randn

# The classic toy problem: is a variable-length sequence linear or random?
rng = np.random.default_rng(11)
max_seq_len, n_samples = 12, 48
data, labels, seqlen = [], [], []
for i in range(n_samples):
    n = int(rng.integers(3, max_seq_len + 1))
    seqlen.append(n)
    if i % 2 == 0:
        start = int(rng.integers(0, 20))
        s = [[float(k) / 20.0] for k in range(start, start + n)]
        labels.append([1.0, 0.0])
    else:
        s = [[float(rng.integers(0, 20)) / 20.0] for _ in range(n)]
        labels.append([0.0, 1.0])
    data.append(s + [[0.0]] * (max_seq_len - n))
data = np.array(data, np.float32)
labels = np.array(labels, np.float32)
seqlen = np.array(seqlen, np.int32)

n_hidden, n_classes = 16, 2
x = tf.placeholder("float", [None, max_seq_len, 1])
y = tf.placeholder("float", [None, n_classes])
sl = tf.placeholder(tf.int32, [None])
weights = {"out": tf.Variable(randn([n_hidden, n_classes], 1, 0.5))}
biases = {"out": tf.Variable(randn([n_classes], 2))}


def dynamicRNN(x, seqlen, weights, biases):
    lstm_cell = tf.nn.rnn_cell.BasicLSTMCell(n_hidden)
    with tf.variable_scope("lstm", initializer=tf.constant_initializer(0.1)):
        outputs, states = tf.nn.dynamic_rnn(lstm_cell, x, dtype=tf.float32, sequence_length=seqlen)
    batch_size = tf.shape(outputs)[0]
    index = tf.range(0, batch_size) * max_seq_len + (seqlen - 1)
    outputs = tf.gather(tf.reshape(outputs, [-1, n_hidden]), index)
    return tf.matmul(outputs, weights["out"]) + biases["out"]


pred = dynamicRNN(x, sl, weights, biases)
cost = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=pred, labels=y))
optimizer = tf.train.GradientDescentOptimizer(learning_rate=0.5).minimize(cost)
correct_pred = tf.equal(tf.argmax(pred, 1), tf.argmax(y, 1))
accuracy = tf.reduce_mean(tf.cast(correct_pred, tf.float32))

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(1, 9):
        batch = slice((step - 1) % 3 * 16, (step - 1) % 3 * 16 + 16)
        feed = {x: data[batch], y: labels[batch], sl: seqlen[batch]}
        _, loss = sess.run([optimizer, cost], feed_dict=feed)
        print("Step " + str(step) + ", Minibatch Loss= " + "{:.6f}".format(loss))
    print("Testing Accuracy: %.4f" % sess.run(accuracy, {x: data, y: labels, sl: seqlen}))
