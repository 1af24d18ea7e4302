import tensorflow as tf

import mnist_standin as input_data
from mnist_standin import init as randn

mnist = input_data.read_data_sets("/tmp/data/", one_hot=True)
learning_rate = 0.001
training_epochs = 3
batch_size = 64
n_hidden_1, n_hidden_2, n_input, n_classes = 64, 32, 784, 10

X = tf.placeholder("float", [None, n_input])
Y = tf.placeholder("float", [None, n_classes])
weights = {
    "h1": tf.Variable(randn([n_input, n_hidden_1], 1)),
    "h2": tf.Variable(randn([n_hidden_1, n_hidden_2], 2)),
    "out": tf.Variable(randn([n_hidden_2, n_classes], 3)),
}
biases = {
    "b1": tf.Variable(randn([n_hidden_1], 4)),
    "b2": tf.Variable(randn([n_hidden_2], 5)),
    "out": tf.Variable(randn([n_classes], 6)),
}


def multilayer_perceptron(x):
    layer_1 = tf.nn.relu(tf.add(tf.matmul(x, weights["h1"]), biases["b1"]))
    layer_2 = tf.nn.relu(tf.add(tf.matmul(layer_1, weights["h2"]), biases["b2"]))
    return tf.matmul(layer_2, weights["out"]) + biases["out"]


logits = multilayer_perceptron(X)
loss_op = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(logits=logits, labels=Y))
optimizer = tf.train.AdamOptimizer(learning_rate=learning_rate)
train_op = optimizer.minimize(loss_op)
init = tf.global_variables_initializer()

with tf.Session() as sess:
    sess.run(init)
    for epoch in range(training_epochs):
        avg_cost = 0.0
        total_batch = int(mnist.train.num_examples / batch_size)
        for i in range(total_batch):
            batch_x, batch_y = mnist.train.next_batch(batch_size)
            _, c = sess.run([train_op, loss_op], feed_dict={X: batch_x, Y: batch_y})
            avg_cost += c / total_batch
        print("Epoch:", "%04d" % (epoch + 1), "loss=", "{:.9f}".format(avg_cost))
