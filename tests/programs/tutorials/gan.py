import numpy as np
import tensorflow as tf

import mnist_standin as input_data
from mnist_standin import init as randn

mnist = input_data.read_data_sets("/tmp/data/", one_hot=True)
num_steps, batch_size, learning_rate = 8, 32, 0.0002
image_dim, gen_hidden_dim, disc_hidden_dim, noise_dim = 784, 32, 32, 10
weights = {
    "gen_hidden1": tf.Variable(randn([noise_dim, gen_hidden_dim], 1)),
    "gen_out": tf.Variable(randn([gen_hidden_dim, image_dim], 2)),
    "disc_hidden1": tf.Variable(randn([image_dim, disc_hidden_dim], 3)),
    "disc_out": tf.Variable(randn([disc_hidden_dim, 1], 4)),
}
biases = {
    "gen_hidden1": tf.Variable(tf.zeros([gen_hidden_dim])),
    "gen_out": tf.Variable(tf.zeros([image_dim])),
    "disc_hidden1": tf.Variable(tf.zeros([disc_hidden_dim])),
    "disc_out": tf.Variable(tf.zeros([1])),
}


def generator(x):
    hidden_layer = tf.nn.relu(tf.add(tf.matmul(x, weights["gen_hidden1"]), biases["gen_hidden1"]))
    return tf.nn.sigmoid(tf.add(tf.matmul(hidden_layer, weights["gen_out"]), biases["gen_out"]))


def discriminator(x):
    hidden_layer = tf.nn.relu(tf.add(tf.matmul(x, weights["disc_hidden1"]), biases["disc_hidden1"]))
    return tf.nn.sigmoid(tf.add(tf.matmul(hidden_layer, weights["disc_out"]), biases["disc_out"]))


gen_input = tf.placeholder(tf.float32, shape=[None, noise_dim], name="input_noise")
disc_input = tf.placeholder(tf.float32, shape=[None, image_dim], name="disc_input")
gen_sample = generator(gen_input)
disc_real = discriminator(disc_input)
disc_fake = discriminator(gen_sample)
gen_loss = -tf.reduce_mean(tf.log(disc_fake))
disc_loss = -tf.reduce_mean(tf.log(disc_real) + tf.log(1.0 - disc_fake))
optimizer_gen = tf.train.AdamOptimizer(learning_rate=learning_rate)
optimizer_disc = tf.train.AdamOptimizer(learning_rate=learning_rate)
gen_vars = [weights["gen_hidden1"], weights["gen_out"], biases["gen_hidden1"], biases["gen_out"]]
disc_vars = [
    weights["disc_hidden1"],
    weights["disc_out"],
    biases["disc_hidden1"],
    biases["disc_out"],
]
train_gen = optimizer_gen.minimize(gen_loss, var_list=gen_vars)
train_disc = optimizer_disc.minimize(disc_loss, var_list=disc_vars)
init = tf.global_variables_initializer()
rng = np.random.default_rng(4)

with tf.Session() as sess:
    sess.run(init)
    for i in range(1, num_steps + 1):
        batch_x, _ = mnist.train.next_batch(batch_size)
        z = rng.uniform(-1.0, 1.0, size=[batch_size, noise_dim]).astype(np.float32)
        feed_dict = {disc_input: batch_x, gen_input: z}
        _, _, gl, dl = sess.run([train_gen, train_disc, gen_loss, disc_loss], feed_dict=feed_dict)
        print("Step %i: Generator Loss: %f, Discriminator Loss: %f" % (i, gl, dl))
