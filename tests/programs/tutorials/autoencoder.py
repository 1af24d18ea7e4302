import tensorflow as tf

import mnist_standin as input_data
from mnist_standin import init as randn

mnist = input_data.read_data_sets("/tmp/data/", one_hot=True)
learning_rate = 0.01
num_steps = 8
batch_size = 64
num_hidden_1, num_hidden_2, num_input = 64, 32, 784

X = tf.placeholder("float", [None, num_input])
weights = {
    "encoder_h1": tf.Variable(randn([num_input, num_hidden_1], 1)),
    "encoder_h2": tf.Variable(randn([num_hidden_1, num_hidden_2], 2)),
    "decoder_h1": tf.Variable(randn([num_hidden_2, num_hidden_1], 3)),
    "decoder_h2": tf.Variable(randn([num_hidden_1, num_input], 4)),
}
biases = {
    "encoder_b1": tf.Variable(randn([num_hidden_1], 5)),
    "encoder_b2": tf.Variable(randn([num_hidden_2], 6)),
    "decoder_b1": tf.Variable(randn([num_hidden_1], 7)),
    "decoder_b2": tf.Variable(randn([num_input], 8)),
}


def encoder(x):
    layer_1 = tf.nn.sigmoid(tf.add(tf.matmul(x, weights["encoder_h1"]), biases["encoder_b1"]))
    return tf.nn.sigmoid(tf.add(tf.matmul(layer_1, weights["encoder_h2"]), biases["encoder_b2"]))


def decoder(x):
    layer_1 = tf.nn.sigmoid(tf.add(tf.matmul(x, weights["decoder_h1"]), biases["decoder_b1"]))
    return tf.nn.sigmoid(tf.add(tf.matmul(layer_1, weights["decoder_h2"]), biases["decoder_b2"]))


encoder_op = encoder(X)
decoder_op = decoder(encoder_op)
y_pred = decoder_op
y_true = X
loss = tf.reduce_mean(tf.pow(y_true - y_pred, 2))
optimizer = tf.train.RMSPropOptimizer(learning_rate).minimize(loss)
init = tf.global_variables_initializer()

with tf.Session() as sess:
    sess.run(init)
    for i in range(1, num_steps + 1):
        batch_x, _ = mnist.train.next_batch(batch_size)
        _, l = sess.run([optimizer, loss], feed_dict={X: batch_x})
        print("Step %i: Minibatch Loss: %f" % (i, l))
    batch_x, _ = mnist.test.next_batch(4)
    g = sess.run(decoder_op, feed_dict={X: batch_x})
    print("Reconstruction mean: %.6f" % g.mean())
