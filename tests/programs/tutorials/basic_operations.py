import numpy as np
import tensorflow as tf

a = tf.placeholder(tf.float32)
b = tf.placeholder(tf.float32)
add = tf.add(a, b)
mul = tf.multiply(a, b)
with tf.Session() as sess:
    print("Addition with variables: %.3f" % sess.run(add, feed_dict={a: 2.5, b: 3.0}))
    print("Multiplication with variables: %.3f" % sess.run(mul, feed_dict={a: 2.5, b: 3.0}))

matrix1 = tf.constant([[3.0, 3.0]])
matrix2 = tf.constant([[2.0], [2.0]])
product = tf.matmul(matrix1, matrix2)
state = tf.Variable(0.5, name="counter")
update = tf.assign(state, tf.add(state, tf.constant(1.5)))
with tf.Session() as sess:
    print("product %.3f" % sess.run(product)[0, 0])
    sess.run(tf.global_variables_initializer())
    for _ in range(3):
        sess.run(update)
        print("counter %.3f" % sess.run(state))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    r = sess.run(tf.reduce_mean(tf.transpose(x) * 1.5, axis=0))
    print("mean " + " ".join("%.3f" % v for v in r))
