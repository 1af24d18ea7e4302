import tensorflow as tf

hello = tf.constant("Hello, TensorFlow!")
sess = tf.Session()
print(sess.run(hello).decode())
a = tf.constant(2.0)
b = tf.constant(3.0)
with tf.Session() as sess:
    print("a + b = %.4f" % sess.run(a + b))
    print("a * b = %.4f" % sess.run(a * b))
