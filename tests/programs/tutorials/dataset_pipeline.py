import numpy as np
import tensorflow as tf

from mnist_standin import init as randn

rng = np.random.default_rng(5)
features = rng.standard_normal((96, 5)).astype(np.float32)
labels = (features @ np.array([1.0, -1.0, 0.5, 0.0, 2.0], np.float32) > 0).astype(np.int64)

dataset = tf.data.Dataset.from_tensor_slices((features, labels))
dataset = dataset.map(lambda f, l: (f * 2.0, l)).batch(32).repeat(3)
iterator = dataset.make_one_shot_iterator()
x, y = iterator.get_next()
h = tf.layers.dense(
    x, 8, activation=tf.nn.tanh, kernel_initializer=tf.constant_initializer(randn([5, 8], 1))
)
logits = tf.layers.dense(h, 2, kernel_initializer=tf.constant_initializer(randn([8, 2], 2)))
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
acc, acc_update = tf.metrics.accuracy(y, tf.argmax(logits, 1))
train = tf.train.AdagradOptimizer(0.5).minimize(loss)

with tf.Session() as sess:
    sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
    step = 0
    while True:
        try:
            _, l, _ = sess.run([train, loss, acc_update])
        except tf.errors.OutOfRangeError:
            break
        print("step %d loss %.6f" % (step, l))
        step += 1
    print("streaming accuracy %.6f" % sess.run(acc))
