import numpy as np
import tensorflow as tf

from mnist_standin import init as randn

# An RNN written by hand with tf.TensorArray and tf.while_loop (how dynamic_rnn works
# inside), trained through the loop.
rng = np.random.default_rng(5)
steps, batch, depth, units = 7, 8, 3, 10
xs = rng.standard_normal((batch, steps, depth)).astype(np.float32)
ys = xs[:, :, :1].cumsum(axis=1).astype(np.float32)

x = tf.placeholder(tf.float32, [None, steps, depth])
y = tf.placeholder(tf.float32, [None, steps, 1])
W = tf.Variable(randn([depth + units, units], 1, 0.3))
b = tf.Variable(tf.zeros([units]))
V = tf.Variable(randn([units, 1], 2, 0.3))
inputs = tf.TensorArray(tf.float32, size=steps).unstack(tf.transpose(x, [1, 0, 2]))
outputs = tf.TensorArray(tf.float32, size=steps)


def body(t, h, outputs):
    h = tf.tanh(tf.matmul(tf.concat([inputs.read(t), h], 1), W) + b)
    return t + 1, h, outputs.write(t, tf.matmul(h, V))


h0 = tf.zeros(tf.stack([tf.shape(x)[0], units]))
_, h, outputs = tf.while_loop(lambda t, h, o: t < steps, body, [tf.constant(0), h0, outputs])
pred = tf.transpose(outputs.stack(), [1, 0, 2])
loss = tf.reduce_mean(tf.square(pred - y))
train = tf.train.AdamOptimizer(0.02).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(12):
        _, l = sess.run([train, loss], {x: xs, y: ys})
        print("step %d loss %.6f" % (step, l))
