import tensorflow as tf

# tf.while_loop and tf.cond: the Collatz sequence, and the gradient of a power computed by a
# loop.
x = tf.placeholder(tf.float32, [])


def cond(i, v):
    return tf.greater(v, 1.0)


def body(i, v):
    return i + 1, tf.cond(
        tf.equal(tf.floormod(v, 2.0), 0.0), lambda: v / 2.0, lambda: 3.0 * v + 1.0
    )


steps, final = tf.while_loop(cond, body, [tf.constant(0), x])
w = tf.Variable(1.5)
_, power = tf.while_loop(lambda k, p: k < 5, lambda k, p: (k + 1, p * w), [0, tf.constant(1.0)])
grad = tf.gradients(power, w)[0]
opt = tf.train.GradientDescentOptimizer(0.01).minimize(tf.square(power - 2.0))
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for start in (6.0, 27.0):
        n, f = sess.run([steps, final], {x: start})
        print("collatz", int(start), "steps", n, "final %.1f" % f)
    print("power %.4f grad %.4f" % tuple(sess.run([power, grad])))
    for i in range(5):
        sess.run(opt)
        print("w %.6f" % sess.run(w))
