import tensorflow as tf

import mnist_standin as input_data
from mnist_standin import init as randn

mnist = input_data.read_data_sets("/tmp/data/", one_hot=True)
learning_rate = 0.05
training_steps = 6
batch_size = 16
num_input, timesteps, num_hidden, num_classes = 28, 28, 16, 10

X = tf.placeholder("float", [None, timesteps, num_input])
Y = tf.placeholder("float", [None, num_classes])
weights = {"out": tf.Variable(randn([2 * num_hidden, num_classes], 1))}
biases = {"out": tf.Variable(randn([num_classes], 2))}


def BiRNN(x, weights, biases):
    x = tf.unstack(x, timesteps, 1)
    lstm_fw_cell = tf.nn.rnn_cell.BasicLSTMCell(num_hidden, forget_bias=1.0)
    lstm_bw_cell = tf.nn.rnn_cell.BasicLSTMCell(num_hidden, forget_bias=1.0)
    with tf.variable_scope("birnn", initializer=tf.constant_initializer(0.01)):
        outputs, _, _ = tf.nn.static_bidirectional_rnn(
            lstm_fw_cell, lstm_bw_cell, x, dtype=tf.float32
        )
    return tf.matmul(outputs[-1], weights["out"]) + biases["out"]


logits = BiRNN(X, weights, biases)
prediction = tf.nn.softmax(logits)
loss_op = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=logits, labels=Y))
train_op = tf.train.GradientDescentOptimizer(learning_rate=learning_rate).minimize(loss_op)
correct_pred = tf.equal(tf.argmax(prediction, 1), tf.argmax(Y, 1))
accuracy = tf.reduce_mean(tf.cast(correct_pred, tf.float32))
init = tf.global_variables_initializer()

with tf.Session() as sess:
    sess.run(init)
    for step in range(1, training_steps + 1):
        batch_x, batch_y = mnist.train.next_batch(batch_size)
        batch_x = batch_x.reshape((batch_size, timesteps, num_input))
        _, loss, acc = sess.run([train_op, loss_op, accuracy], feed_dict={X: batch_x, Y: batch_y})
        print("Step " + str(step) + ", Minibatch Loss= " + "{:.6f}".format(loss))
