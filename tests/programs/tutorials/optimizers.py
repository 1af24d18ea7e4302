import numpy as np
import tensorflow as tf

from mnist_standin import init as randn

x_data = np.linspace(-1, 1, 64, dtype=np.float32)[:, np.newaxis]
y_data = np.power(x_data, 2) + np.random.default_rng(5).normal(0, 0.1, x_data.shape).astype(
    np.float32
)
tf_x = tf.placeholder(tf.float32, x_data.shape)
tf_y = tf.placeholder(tf.float32, y_data.shape)


class Net:
    def __init__(self, opt, **kwargs):
        w1 = tf.Variable(randn([1, 20], 1, 0.5))
        w2 = tf.Variable(randn([20, 1], 2, 0.5))
        b1 = tf.Variable(tf.zeros([20]))
        b2 = tf.Variable(tf.zeros([1]))
        l = tf.nn.relu(tf.matmul(tf_x, w1) + b1)
        out = tf.matmul(l, w2) + b2
        self.loss = tf.losses.mean_squared_error(tf_y, out)
        self.train = opt(0.05, **kwargs).minimize(self.loss)


net_SGD = Net(tf.train.GradientDescentOptimizer)
net_Momentum = Net(tf.train.MomentumOptimizer, momentum=0.9)
net_RMSprop = Net(tf.train.RMSPropOptimizer)
net_Adam = Net(tf.train.AdamOptimizer)
net_Adagrad = Net(tf.train.AdagradOptimizer)
nets = [net_SGD, net_Momentum, net_RMSprop, net_Adam, net_Adagrad]
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(20):
        results = sess.run([[n.train, n.loss] for n in nets], {tf_x: x_data, tf_y: y_data})
        if step % 5 == 4:
            print("losses " + " ".join("%.6f" % r[1] for r in results))
