import tensorflow as tf

import mnist_standin as input_data
from mnist_standin import init as randn

mnist = input_data.read_data_sets("/tmp/data/", one_hot=True)
num_gpus, num_steps, batch_size, learning_rate = 2, 5, 16, 0.01


def conv_net(x, reuse):
    with tf.variable_scope("ConvNet", reuse=reuse):
        x = tf.reshape(x, [-1, 28, 28, 1])
        w1 = tf.get_variable("w1", initializer=randn([5, 5, 1, 8], 1))
        w2 = tf.get_variable("w2", initializer=randn([7 * 7 * 8, 10], 2, 0.05))
        x = tf.nn.relu(tf.nn.conv2d(x, w1, [1, 2, 2, 1], "SAME"))
        x = tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
        return tf.matmul(tf.reshape(x, [-1, 7 * 7 * 8]), w2)


def average_gradients(tower_grads):
    average_grads = []
    for grad_and_vars in zip(*tower_grads):
        grads = [tf.expand_dims(g, 0) for g, _ in grad_and_vars]
        grad = tf.reduce_mean(tf.concat(grads, 0), 0)
        average_grads.append((grad, grad_and_vars[0][1]))
    return average_grads


with tf.device("/cpu:0"):
    tower_grads, losses = [], []
    X = tf.placeholder(tf.float32, [None, 784])
    Y = tf.placeholder(tf.float32, [None, 10])
    optimizer = tf.train.AdamOptimizer(learning_rate=learning_rate)
    reuse_vars = False
    for i in range(num_gpus):
        with tf.device("/gpu:%d" % i):
            _x = X[i * batch_size : (i + 1) * batch_size]
            _y = Y[i * batch_size : (i + 1) * batch_size]
            logits = conv_net(_x, reuse_vars)
            loss_op = tf.reduce_mean(
                tf.nn.softmax_cross_entropy_with_logits(logits=logits, labels=_y)
            )
            tower_grads.append(optimizer.compute_gradients(loss_op))
            losses.append(loss_op)
            reuse_vars = True
    train_op = optimizer.apply_gradients(average_gradients(tower_grads))
    loss = tf.reduce_mean(tf.stack(losses))

with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(1, num_steps + 1):
        batch_x, batch_y = mnist.train.next_batch(batch_size * num_gpus)
        _, l = sess.run([train_op, loss], feed_dict={X: batch_x, Y: batch_y})
        print("Step " + str(step) + ": Minibatch Loss= " + "{:.6f}".format(l))
