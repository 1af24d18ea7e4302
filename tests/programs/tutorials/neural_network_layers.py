import tensorflow as tf

import mnist_standin as input_data

mnist = input_data.read_data_sets("/tmp/data/", one_hot=False)
learning_rate, num_steps, batch_size = 0.1, 8, 64
n_hidden_1, n_hidden_2, num_classes = 32, 32, 10
X = tf.placeholder(tf.float32, [None, 784])
Y = tf.placeholder(tf.int64, [None])


def neural_net(x):
    init = tf.constant_initializer(0.01)
    layer_1 = tf.layers.dense(x, n_hidden_1, kernel_initializer=init)
    layer_2 = tf.layers.dense(layer_1, n_hidden_2, kernel_initializer=init)
    return tf.layers.dense(layer_2, num_classes, kernel_initializer=init)


logits = neural_net(X)
loss_op = tf.reduce_mean(
    tf.nn.sparse_softmax_cross_entropy_with_logits(logits=logits, labels=tf.cast(Y, tf.int32))
)
train_op = tf.train.GradientDescentOptimizer(learning_rate).minimize(
    loss_op, global_step=tf.train.get_global_step()
)
pred_classes = tf.argmax(logits, axis=1)
acc_op = tf.reduce_mean(tf.cast(tf.equal(pred_classes, Y), tf.float32))

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(1, num_steps + 1):
        batch_x, batch_y = mnist.train.next_batch(batch_size)
        _, loss = sess.run([train_op, loss_op], feed_dict={X: batch_x, Y: batch_y})
        print("Step " + str(step) + ", Minibatch Loss= " + "{:.4f}".format(loss))
    print("Testing Accuracy: %.4f" % sess.run(acc_op, {X: mnist.test.images, Y: mnist.test.labels}))
