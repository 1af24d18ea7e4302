import numpy as np
import tensorflow as tf

from mnist_standin import init as randn


def add_layer(inputs, in_size, out_size, seed, activation_function=None):
    Weights = tf.Variable(randn([in_size, out_size], seed, 0.5))
    biases = tf.Variable(tf.zeros([1, out_size]) + 0.1)
    Wx_plus_b = tf.matmul(inputs, Weights) + biases
    if activation_function is None:
        return Wx_plus_b
    return activation_function(Wx_plus_b)


x_data = np.linspace(-1, 1, 300, dtype=np.float32)[:, np.newaxis]
noise = np.random.default_rng(1).normal(0, 0.05, x_data.shape).astype(np.float32)
y_data = np.square(x_data) - 0.5 + noise
xs = tf.placeholder(tf.float32, [None, 1])
ys = tf.placeholder(tf.float32, [None, 1])
l1 = add_layer(xs, 1, 10, 1, activation_function=tf.nn.relu)
prediction = add_layer(l1, 10, 1, 2, activation_function=None)
loss = tf.reduce_mean(tf.reduce_sum(tf.square(ys - prediction), reduction_indices=[1]))
train_step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for i in range(200):
        sess.run(train_step, feed_dict={xs: x_data, ys: y_data})
        if i % 40 == 0:
            print("loss %.6f" % sess.run(loss, feed_dict={xs: x_data, ys: y_data}))
