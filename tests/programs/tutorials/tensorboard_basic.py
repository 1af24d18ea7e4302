import os
import tempfile

import tensorflow as tf

import mnist_standin as input_data

mnist = input_data.read_data_sets("/tmp/data/", one_hot=True)
logs_path = tempfile.mkdtemp()
x = tf.placeholder(tf.float32, [None, 784], name="InputData")
y = tf.placeholder(tf.float32, [None, 10], name="LabelData")
W = tf.Variable(tf.zeros([784, 10]), name="Weights")
b = tf.Variable(tf.zeros([10]), name="Bias")
with tf.name_scope("Model"):
    pred = tf.nn.softmax(tf.matmul(x, W) + b)
with tf.name_scope("Loss"):
    cost = tf.reduce_mean(-tf.reduce_sum(y * tf.log(pred), reduction_indices=1))
with tf.name_scope("SGD"):
    optimizer = tf.train.GradientDescentOptimizer(0.05).minimize(cost)
with tf.name_scope("Accuracy"):
    acc = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(pred, 1), tf.argmax(y, 1)), tf.float32))
tf.summary.scalar("loss", cost)
tf.summary.scalar("accuracy", acc)
merged_summary_op = tf.summary.merge_all()

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    summary_writer = tf.summary.FileWriter(logs_path, graph=tf.get_default_graph())
    for epoch in range(3):
        avg_cost = 0.0
        total_batch = 6
        for i in range(total_batch):
            batch_xs, batch_ys = mnist.train.next_batch(64)
            _, c, summary = sess.run(
                [optimizer, cost, merged_summary_op], feed_dict={x: batch_xs, y: batch_ys}
            )
            summary_writer.add_summary(summary, epoch * total_batch + i)
            avg_cost += c / total_batch
        print("Epoch:", "%04d" % (epoch + 1), "cost=", "{:.9f}".format(avg_cost))
    summary_writer.close()
    print("Accuracy: %.4f" % acc.eval({x: mnist.test.images, y: mnist.test.labels}))
    print("Event files:", len([f for f in os.listdir(logs_path) if "tfevents" in f]))
