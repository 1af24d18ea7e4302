import numpy as np
import tensorflow as tf

from mnist_standin import init as randn

# Data parallelism over two towers pinned to GPUs; with allow_soft_placement the program
# also runs where no GPU is present.
num_gpus = 2
rng = np.random.default_rng(9)
xs = rng.standard_normal((64, 10)).astype(np.float32)
ys = (xs @ rng.standard_normal((10, 1))).astype(np.float32)


def average_gradients(tower_grads):
    average_grads = []
    for grad_and_vars in zip(*tower_grads):
        grads = [tf.expand_dims(g, 0) for g, _ in grad_and_vars]
        grad = tf.reduce_mean(tf.concat(grads, 0), 0)
        average_grads.append((grad, grad_and_vars[0][1]))
    return average_grads


with tf.device("/cpu:0"):
    X = tf.placeholder(tf.float32, [None, 10])
    Y = tf.placeholder(tf.float32, [None, 1])
    opt = tf.train.GradientDescentOptimizer(0.05)
    tower_grads, losses = [], []
    reuse_vars = False
    for i in range(num_gpus):
        with tf.device("/gpu:%d" % i):
            _x = X[i * 32 : (i + 1) * 32]
            _y = Y[i * 32 : (i + 1) * 32]
            with tf.variable_scope("model", reuse=reuse_vars):
                w = tf.get_variable("w", initializer=randn([10, 1], 1))
                b = tf.get_variable("b", initializer=tf.zeros([1]))
            loss = tf.reduce_mean(tf.square(tf.matmul(_x, w) + b - _y))
            reuse_vars = True
            tower_grads.append(opt.compute_gradients(loss))
            losses.append(loss)
    train_op = opt.apply_gradients(average_gradients(tower_grads))
    mean_loss = tf.add_n(losses) / num_gpus

config = tf.ConfigProto(allow_soft_placement=True)
with tf.Session(config=config) as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(1, 11):
        _, l = sess.run([train_op, mean_loss], {X: xs, Y: ys})
        print("Step %d: loss %.6f" % (step, l))
