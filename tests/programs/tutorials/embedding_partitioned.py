import tensorflow as tf

from mnist_standin import init as randn

# An embedding table sharded over three variables, looked up with both partition
# strategies, then trained by sparse gradients into the shards.
params = [tf.Variable(randn([3, 4], i + 1, 1.0), name="shard_%d" % i) for i in range(3)]
ids = tf.constant([0, 4, 8, 2, 7, 4])
lookups = {s: tf.nn.embedding_lookup(params, ids, partition_strategy=s) for s in ("mod", "div")}
target = tf.constant(randn([6, 4], 9, 1.0))
loss = tf.reduce_mean(tf.square(lookups["div"] - target))
train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for s in ("mod", "div"):
        print(s, "sum %.6f" % sess.run(tf.reduce_sum(lookups[s] * target)))
    for step in range(6):
        _, l = sess.run([train, loss])
        print("step %d loss %.6f" % (step, l))
    print("untouched shard row %.6f" % sess.run(tf.reduce_sum(params[1][2])))
