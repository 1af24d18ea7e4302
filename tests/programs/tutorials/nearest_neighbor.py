import numpy as np
import tensorflow as tf

import mnist_standin as input_data

mnist = input_data.read_data_sets("/tmp/data/", one_hot=True)
Xtr, Ytr = mnist.train.next_batch(300)
Xte, Yte = mnist.test.next_batch(40)

xtr = tf.placeholder("float", [None, 784])
xte = tf.placeholder("float", [784])
distance = tf.reduce_sum(tf.abs(tf.add(xtr, tf.negative(xte))), reduction_indices=1)
pred = tf.arg_min(distance, 0)
accuracy = 0.0
init = tf.global_variables_initializer()
with tf.Session() as sess:
    sess.run(init)
    for i in range(len(Xte)):
        nn_index = sess.run(pred, feed_dict={xtr: Xtr, xte: Xte[i, :]})
        if np.argmax(Ytr[nn_index]) == np.argmax(Yte[i]):
            accuracy += 1.0 / len(Xte)
        if i % 10 == 0:
            d = sess.run(distance, feed_dict={xtr: Xtr, xte: Xte[i, :]})[nn_index]
            print("Test", i, "Prediction:", np.argmax(Ytr[nn_index]), "distance: %.4f" % d)
    print("Done!")
    print("Accuracy: %.4f" % accuracy)
