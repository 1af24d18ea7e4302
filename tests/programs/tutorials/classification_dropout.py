import tensorflow as tf

import mnist_standin as input_data
from mnist_standin import init as randn

mnist = input_data.read_data_sets("MNIST_data", one_hot=True)


def add_layer(inputs, in_size, out_size, seed, activation_function=None):
    Weights = tf.Variable(randn([in_size, out_size], seed))
    biases = tf.Variable(tf.zeros([1, out_size]) + 0.1)
    Wx_plus_b = tf.nn.dropout(tf.matmul(inputs, Weights) + biases, keep_prob)
    if activation_function is None:
        return Wx_plus_b
    return activation_function(Wx_plus_b)


def compute_accuracy(v_xs, v_ys):
    y_pre = sess.run(prediction, feed_dict={xs: v_xs, keep_prob: 1})
    correct_prediction = tf.equal(tf.argmax(y_pre, 1), tf.argmax(v_ys, 1))
    accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))
    return sess.run(accuracy, feed_dict={xs: v_xs, ys: v_ys, keep_prob: 1})


keep_prob = tf.placeholder(tf.float32)
xs = tf.placeholder(tf.float32, [None, 784])
ys = tf.placeholder(tf.float32, [None, 10])
l1 = add_layer(xs, 784, 50, 1, activation_function=tf.nn.tanh)
prediction = add_layer(l1, 50, 10, 2, activation_function=tf.nn.softmax)
cross_entropy = tf.reduce_mean(-tf.reduce_sum(ys * tf.log(prediction), reduction_indices=[1]))
train_step = tf.train.GradientDescentOptimizer(0.1).minimize(cross_entropy)
sess = tf.Session()
sess.run(tf.global_variables_initializer())
for i in range(30):
    batch_xs, batch_ys = mnist.train.next_batch(64)
    sess.run(train_step, feed_dict={xs: batch_xs, ys: batch_ys, keep_prob: 1.0})
    if i % 10 == 0:
        print("accuracy %.4f" % compute_accuracy(mnist.test.images, mnist.test.labels))
        print("loss %.6f" % sess.run(cross_entropy, {xs: batch_xs, ys: batch_ys, keep_prob: 1}))
