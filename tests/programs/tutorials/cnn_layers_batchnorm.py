import numpy as np
import tensorflow as tf

import mnist_standin as input_data
from mnist_standin import init as randn

mnist = input_data.read_data_sets("/tmp/data/", one_hot=False)
num_steps = 8
batch_size = 32


def const(shape, seed, scale=0.1):
    return tf.constant_initializer(randn(shape, seed, scale))


X = tf.placeholder(tf.float32, [None, 784])
Y = tf.placeholder(tf.int64, [None])
training = tf.placeholder_with_default(False, [])
x = tf.reshape(X, [-1, 28, 28, 1])
conv1 = tf.layers.conv2d(x, 8, 5, activation=tf.nn.relu, kernel_initializer=const([5, 5, 1, 8], 1))
conv1 = tf.layers.max_pooling2d(conv1, 2, 2)
conv1 = tf.layers.batch_normalization(conv1, training=training)
conv2 = tf.layers.conv2d(
    conv1, 16, 3, padding="same", activation=tf.nn.relu, kernel_initializer=const([3, 3, 8, 16], 2)
)
conv2 = tf.layers.average_pooling2d(conv2, 2, 2)
fc1 = tf.layers.flatten(conv2)
fc1 = tf.layers.dense(fc1, 32, activation=tf.nn.relu, kernel_initializer=const([576, 32], 3))
logits = tf.layers.dense(fc1, 10, kernel_initializer=const([32, 10], 4))
loss_op = tf.losses.sparse_softmax_cross_entropy(labels=Y, logits=logits)
update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
with tf.control_dependencies(update_ops):
    train_op = tf.train.MomentumOptimizer(0.05, 0.9).minimize(loss_op)
init = tf.global_variables_initializer()

with tf.Session() as sess:
    sess.run(init)
    for step in range(1, num_steps + 1):
        batch_x, batch_y = mnist.train.next_batch(batch_size)
        _, loss = sess.run([train_op, loss_op], {X: batch_x, Y: batch_y, training: True})
        print("Step %d, loss= %.6f" % (step, loss))
    test_loss = sess.run(loss_op, {X: mnist.test.images, Y: mnist.test.labels})
    print("Test loss= %.6f" % test_loss)
    moving_mean = [v for v in tf.global_variables() if "moving_mean" in v.name][0]
    print("moving mean sum= %.6f" % np.sum(sess.run(moving_mean)))
