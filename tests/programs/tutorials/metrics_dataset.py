import numpy as np
import tensorflow as tf

from mnist_standin import init as randn

# A tf.data input pipeline feeding a classifier, evaluated with streaming tf.metrics.
rng = np.random.default_rng(6)
features = rng.standard_normal((96, 5)).astype(np.float32)
labels = (features[:, 0] + 0.5 * features[:, 1] > 0).astype(np.int64)

dataset = tf.data.Dataset.from_tensor_slices((features, labels))
dataset = dataset.filter(lambda f, l: tf.reduce_sum(f) > -4.0).batch(16)
iterator = dataset.make_initializable_iterator()
x, y = iterator.get_next()
w = tf.Variable(randn([5, 2], 1))
logits = tf.matmul(x, w)
loss = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
pred = tf.argmax(logits, 1)
acc, acc_update = tf.metrics.accuracy(labels=y, predictions=pred)
mean_loss, mean_update = tf.metrics.mean(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for epoch in range(3):
        sess.run(iterator.initializer)
        sess.run(tf.local_variables_initializer())
        while True:
            try:
                sess.run([train, acc_update, mean_update])
            except tf.errors.OutOfRangeError:
                break
        print(
            "Epoch %d: accuracy %.4f mean loss %.6f" % (epoch, sess.run(acc), sess.run(mean_loss))
        )
