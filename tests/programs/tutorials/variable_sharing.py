import numpy as np
import tensorflow as tf


def conv_relu(inputs, kernel_shape, bias_shape):
    weights = tf.get_variable("weights", kernel_shape, initializer=tf.constant_initializer(0.05))
    biases = tf.get_variable("biases", bias_shape, initializer=tf.constant_initializer(0.1))
    conv = tf.nn.conv2d(inputs, weights, strides=[1, 1, 1, 1], padding="SAME")
    return tf.nn.relu(conv + biases)


def my_image_filter(input_images):
    with tf.variable_scope("conv1"):
        relu1 = conv_relu(input_images, [5, 5, 1, 4], [4])
    with tf.variable_scope("conv2"):
        return conv_relu(relu1, [5, 5, 4, 4], [4])


image1 = tf.placeholder(tf.float32, [None, 8, 8, 1])
image2 = tf.placeholder(tf.float32, [None, 8, 8, 1])
with tf.variable_scope("image_filters") as scope:
    result1 = my_image_filter(image1)
    scope.reuse_variables()
    result2 = my_image_filter(image2)
with tf.variable_scope("image_filters", reuse=True):
    shared = tf.get_variable("conv1/weights")
print("variables:", len(tf.global_variables()))
print("shared:", shared.name)
with tf.variable_scope("foo", reuse=tf.AUTO_REUSE):
    v1 = tf.get_variable("v", [1], initializer=tf.constant_initializer(2.5))
    v2 = tf.get_variable("v", [1])
update = tf.assign_add(v1, [1.0])
rng = np.random.default_rng(2)
a = rng.random((2, 8, 8, 1)).astype(np.float32)
bimg = rng.random((2, 8, 8, 1)).astype(np.float32)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    r1, r2 = sess.run([result1, result2], {image1: a, image2: bimg})
    print("result1 mean %.6f" % r1.mean())
    print("result2 mean %.6f" % r2.mean())
    sess.run(update)
    print("v2 %.3f" % sess.run(v2)[0])
