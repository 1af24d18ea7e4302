import tempfile

import tensorflow as tf

import mnist_standin as input_data
from mnist_standin import init as randn

mnist = input_data.read_data_sets("/tmp/data/", one_hot=True)
logs_path = tempfile.mkdtemp()
x = tf.placeholder(tf.float32, [None, 784], name="InputData")
y = tf.placeholder(tf.float32, [None, 10], name="LabelData")


def multilayer_perceptron(x, weights, biases):
    layer_1 = tf.nn.relu(tf.add(tf.matmul(x, weights["w1"]), biases["b1"]))
    tf.summary.histogram("relu1", layer_1)
    layer_2 = tf.nn.relu(tf.add(tf.matmul(layer_1, weights["w2"]), biases["b2"]))
    tf.summary.histogram("relu2", layer_2)
    return tf.add(tf.matmul(layer_2, weights["w3"]), biases["b3"])


weights = {
    "w1": tf.Variable(randn([784, 64], 1), name="W1"),
    "w2": tf.Variable(randn([64, 64], 2), name="W2"),
    "w3": tf.Variable(randn([64, 10], 3), name="W3"),
}
biases = {
    "b1": tf.Variable(randn([64], 4), name="b1"),
    "b2": tf.Variable(randn([64], 5), name="b2"),
    "b3": tf.Variable(randn([10], 6), name="b3"),
}
with tf.name_scope("Model"):
    pred = multilayer_perceptron(x, weights, biases)
with tf.name_scope("Loss"):
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=pred, labels=y))
with tf.name_scope("SGD"):
    optimizer = tf.train.GradientDescentOptimizer(0.1)
    grads = tf.gradients(loss, tf.trainable_variables())
    grads = list(zip(grads, tf.trainable_variables()))
    apply_grads = optimizer.apply_gradients(grads_and_vars=grads)
with tf.name_scope("Accuracy"):
    acc = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(pred, 1), tf.argmax(y, 1)), tf.float32))
tf.summary.scalar("loss", loss)
tf.summary.scalar("accuracy", acc)
for var in tf.trainable_variables():
    tf.summary.histogram(var.name.replace(":", "_"), var)
for grad, var in grads:
    tf.summary.histogram(var.name.replace(":", "_") + "/gradient", grad)
merged_summary_op = tf.summary.merge_all()

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    summary_writer = tf.summary.FileWriter(logs_path, graph=tf.get_default_graph())
    for step in range(1, 9):
        batch_xs, batch_ys = mnist.train.next_batch(64)
        _, c, summary = sess.run(
            [apply_grads, loss, merged_summary_op], feed_dict={x: batch_xs, y: batch_ys}
        )
        summary_writer.add_summary(summary, step)
        print("Step:", "%04d" % step, "cost=", "{:.9f}".format(c))
    summary_writer.close()
    print("Accuracy: %.4f" % acc.eval({x: mnist.test.images, y: mnist.test.labels}))
