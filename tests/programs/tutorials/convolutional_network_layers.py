import tensorflow as tf

import mnist_standin as input_data
from mnist_standin import init as randn

mnist = input_data.read_data_sets("/tmp/data/", one_hot=False)
learning_rate, num_steps, batch_size = 0.05, 6, 32
num_classes, dropout = 10, 0.25
X = tf.placeholder(tf.float32, [None, 784])
Y = tf.placeholder(tf.int32, [None])


def conv_net(x, n_classes, dropout, reuse, is_training):
    with tf.variable_scope("ConvNet", reuse=reuse):
        x = tf.reshape(x, shape=[-1, 28, 28, 1])
        conv1 = tf.layers.conv2d(
            x,
            8,
            5,
            activation=tf.nn.relu,
            kernel_initializer=tf.constant_initializer(randn([5, 5, 1, 8], 1)),
        )
        conv1 = tf.layers.max_pooling2d(conv1, 2, 2)
        conv2 = tf.layers.conv2d(
            conv1,
            16,
            3,
            activation=tf.nn.relu,
            kernel_initializer=tf.constant_initializer(randn([3, 3, 8, 16], 2)),
        )
        conv2 = tf.layers.average_pooling2d(conv2, 2, 2)
        fc1 = tf.contrib.layers.flatten(conv2)
        fc1 = tf.layers.dense(fc1, 32, kernel_initializer=tf.constant_initializer(0.01))
        fc1 = tf.layers.dropout(fc1, rate=dropout, training=is_training)
        return tf.layers.dense(fc1, n_classes, kernel_initializer=tf.constant_initializer(0.02))


logits_train = conv_net(X, num_classes, dropout, reuse=False, is_training=False)
logits_test = conv_net(X, num_classes, dropout, reuse=True, is_training=False)
loss_op = tf.reduce_mean(
    tf.nn.sparse_softmax_cross_entropy_with_logits(logits=logits_train, labels=Y)
)
train_op = tf.train.GradientDescentOptimizer(learning_rate=learning_rate).minimize(loss_op)
acc_op = tf.reduce_mean(
    tf.cast(tf.equal(tf.argmax(logits_test, 1, output_type=tf.int32), Y), tf.float32)
)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(1, num_steps + 1):
        batch_x, batch_y = mnist.train.next_batch(batch_size)
        _, loss = sess.run([train_op, loss_op], feed_dict={X: batch_x, Y: batch_y})
        print("Step " + str(step) + ", Minibatch Loss= " + "{:.4f}".format(loss))
    print(
        "Testing Accuracy: %.4f"
        % sess.run(acc_op, {X: mnist.test.images[:64], Y: mnist.test.labels[:64]})
    )
