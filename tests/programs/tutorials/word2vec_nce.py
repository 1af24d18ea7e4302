import collections

import numpy as np
import tensorflow as tf

from mnist_standin import init as randn

# Skip-gram word2vec on a tiny corpus. The negative samples are drawn with numpy from the
# log-uniform distribution and passed as sampled_values, so every run sees the same ones.
words = (
    "the quick brown fox jumps over the lazy dog while the quick cat sleeps under "
    "the warm sun and the lazy dog dreams of the brown fox"
).split()
count = collections.Counter(words).most_common()
dictionary = {w: i for i, (w, _) in enumerate(count)}
data = [dictionary[w] for w in words]
vocabulary_size, embedding_size, num_sampled, skip_window = len(dictionary), 8, 4, 1

pairs = []
for i in range(skip_window, len(data) - skip_window):
    for j in (i - skip_window, i + skip_window):
        pairs.append((data[i], data[j]))
pairs = np.array(pairs, np.int32)

rng = np.random.default_rng(8)
log_range = np.log(vocabulary_size + 1)
probs = np.log(np.arange(vocabulary_size) + 2) - np.log(np.arange(vocabulary_size) + 1)
probs = probs / log_range


def sample():
    ids = np.minimum(
        (np.exp(rng.random(num_sampled) * log_range) - 1).astype(np.int64), vocabulary_size - 1
    )
    return ids


train_inputs = tf.placeholder(tf.int32, shape=[None])
train_labels = tf.placeholder(tf.int32, shape=[None, 1])
sampled = tf.placeholder(tf.int64, shape=[num_sampled])
embeddings = tf.Variable(randn([vocabulary_size, embedding_size], 1, 0.5))
embed = tf.nn.embedding_lookup(embeddings, train_inputs)
nce_weights = tf.Variable(randn([vocabulary_size, embedding_size], 2, 0.3))
nce_biases = tf.Variable(tf.zeros([vocabulary_size]))
true_expected = tf.gather(
    tf.constant(probs * num_sampled, tf.float32), tf.reshape(train_labels, [-1, 1])
)
sampled_expected = tf.gather(tf.constant(probs * num_sampled, tf.float32), sampled)
loss = tf.reduce_mean(
    tf.nn.nce_loss(
        weights=nce_weights,
        biases=nce_biases,
        labels=train_labels,
        inputs=embed,
        num_sampled=num_sampled,
        num_classes=vocabulary_size,
        sampled_values=(sampled, true_expected, sampled_expected),
    )
)
optimizer = tf.train.GradientDescentOptimizer(1.0).minimize(loss)
norm = tf.sqrt(tf.reduce_sum(tf.square(embeddings), 1, keepdims=True))
normalized_embeddings = embeddings / norm
similarity = tf.matmul(normalized_embeddings, normalized_embeddings, transpose_b=True)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    average_loss = 0.0
    for step in range(1, 21):
        batch = pairs[(step * 8) % len(pairs) :][:8]
        feed = {train_inputs: batch[:, 0], train_labels: batch[:, 1:], sampled: sample()}
        _, loss_val = sess.run([optimizer, loss], feed_dict=feed)
        average_loss += loss_val
        if step % 5 == 0:
            print("Average loss at step ", step, ": %.6f" % (average_loss / 5))
            average_loss = 0.0
    sim = sess.run(similarity)
    print("Similarity fox-dog: %.6f" % sim[dictionary["fox"], dictionary["dog"]])
