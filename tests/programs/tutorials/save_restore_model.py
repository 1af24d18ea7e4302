import os
import tempfile

import tensorflow as tf

import mnist_standin as input_data
from mnist_standin import init as randn

mnist = input_data.read_data_sets("/tmp/data/", one_hot=True)
model_path = os.path.join(tempfile.mkdtemp(), "model.ckpt")
x = tf.placeholder("float", [None, 784])
y = tf.placeholder("float", [None, 10])
weights = {"h1": tf.Variable(randn([784, 32], 1)), "out": tf.Variable(randn([32, 10], 2))}
biases = {"b1": tf.Variable(randn([32], 3)), "out": tf.Variable(randn([10], 4))}
layer_1 = tf.nn.relu(tf.add(tf.matmul(x, weights["h1"]), biases["b1"]))
pred = tf.matmul(layer_1, weights["out"]) + biases["out"]
cost = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=pred, labels=y))
optimizer = tf.train.AdamOptimizer(learning_rate=0.001).minimize(cost)
init = tf.global_variables_initializer()
saver = tf.train.Saver()

print("Starting 1st session...")
with tf.Session() as sess:
    sess.run(init)
    for epoch in range(3):
        batch_x, batch_y = mnist.train.next_batch(64)
        _, c = sess.run([optimizer, cost], feed_dict={x: batch_x, y: batch_y})
        print("Epoch:", "%04d" % (epoch + 1), "cost=", "{:.9f}".format(c))
    save_path = saver.save(sess, model_path)
    print("Model saved:", os.path.basename(save_path))

print("Starting 2nd session...")
with tf.Session() as sess:
    sess.run(init)
    saver.restore(sess, model_path)
    print("Model restored")
    for epoch in range(3):
        batch_x, batch_y = mnist.train.next_batch(64)
        _, c = sess.run([optimizer, cost], feed_dict={x: batch_x, y: batch_y})
        print("Epoch:", "%04d" % (epoch + 4), "cost=", "{:.9f}".format(c))
    correct = tf.equal(tf.argmax(pred, 1), tf.argmax(y, 1))
    accuracy = tf.reduce_mean(tf.cast(correct, "float"))
    print("Accuracy: %.4f" % accuracy.eval({x: mnist.test.images, y: mnist.test.labels}))
