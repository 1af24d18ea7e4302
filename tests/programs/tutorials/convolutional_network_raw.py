import tensorflow as tf

import mnist_standin as input_data
from mnist_standin import init as randn

mnist = input_data.read_data_sets("/tmp/data/", one_hot=True)
learning_rate = 0.001
num_steps = 12
batch_size = 32
dropout = 1.0  # keep probability (1.0: deterministic, for comparison)

X = tf.placeholder(tf.float32, [None, 784])
Y = tf.placeholder(tf.float32, [None, 10])
keep_prob = tf.placeholder(tf.float32)


def conv2d(x, W, b, strides=1):
    x = tf.nn.conv2d(x, W, strides=[1, strides, strides, 1], padding="SAME")
    x = tf.nn.bias_add(x, b)
    return tf.nn.relu(x)


def maxpool2d(x, k=2):
    return tf.nn.max_pool(x, ksize=[1, k, k, 1], strides=[1, k, k, 1], padding="SAME")


def conv_net(x, weights, biases, dropout):
    x = tf.reshape(x, shape=[-1, 28, 28, 1])
    conv1 = maxpool2d(conv2d(x, weights["wc1"], biases["bc1"]), k=2)
    conv2 = maxpool2d(conv2d(conv1, weights["wc2"], biases["bc2"]), k=2)
    fc1 = tf.reshape(conv2, [-1, weights["wd1"].get_shape().as_list()[0]])
    fc1 = tf.nn.relu(tf.add(tf.matmul(fc1, weights["wd1"]), biases["bd1"]))
    fc1 = tf.nn.dropout(fc1, dropout)
    return tf.add(tf.matmul(fc1, weights["out"]), biases["out"])


weights = {
    "wc1": tf.Variable(randn([5, 5, 1, 8], 1)),
    "wc2": tf.Variable(randn([5, 5, 8, 16], 2)),
    "wd1": tf.Variable(randn([7 * 7 * 16, 64], 3, 0.05)),
    "out": tf.Variable(randn([64, 10], 4)),
}
biases = {
    "bc1": tf.Variable(randn([8], 5)),
    "bc2": tf.Variable(randn([16], 6)),
    "bd1": tf.Variable(randn([64], 7)),
    "out": tf.Variable(randn([10], 8)),
}

logits = conv_net(X, weights, biases, keep_prob)
prediction = tf.nn.softmax(logits)
loss_op = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=logits, labels=Y))
optimizer = tf.train.AdamOptimizer(learning_rate=learning_rate)
train_op = optimizer.minimize(loss_op)
correct_pred = tf.equal(tf.argmax(prediction, 1), tf.argmax(Y, 1))
accuracy = tf.reduce_mean(tf.cast(correct_pred, tf.float32))
init = tf.global_variables_initializer()

with tf.Session() as sess:
    sess.run(init)
    for step in range(1, num_steps + 1):
        batch_x, batch_y = mnist.train.next_batch(batch_size)
        sess.run(train_op, feed_dict={X: batch_x, Y: batch_y, keep_prob: dropout})
        loss, acc = sess.run(
            [loss_op, accuracy], feed_dict={X: batch_x, Y: batch_y, keep_prob: 1.0}
        )
        print("Step " + str(step) + ", Minibatch loss= " + "{:.6f}".format(loss))
