# The TF1 "reading data" recipe (fully_connected_reader.py): TFRecord files of Examples,
# a filename queue with num_epochs, a TFRecordReader, parse_single_example + decode_raw,
# tf.train.batch, and a training loop driven by a Coordinator and queue runners until the
# epochs run out. One reader thread and shuffle=False keep the order fixed.
import os
import tempfile

import numpy as np
import tensorflow as tf

from mnist_standin import init as randn

rng = np.random.default_rng(7)
images = rng.standard_normal((60, 12)).astype(np.float32)
labels = (images[:, :3].sum(1) > 0).astype(np.int64)
tmp = tempfile.mkdtemp()
paths = []
for part in range(3):
    path = os.path.join(tmp, "train-%d.tfrecords" % part)
    with tf.python_io.TFRecordWriter(path) as writer:
        for i in range(part * 20, part * 20 + 20):
            example = tf.train.Example(
                features=tf.train.Features(
                    feature={
                        "image_raw": tf.train.Feature(
                            bytes_list=tf.train.BytesList(value=[images[i].tobytes()])
                        ),
                        "label": tf.train.Feature(
                            int64_list=tf.train.Int64List(value=[int(labels[i])])
                        ),
                    }
                )
            )
            writer.write(example.SerializeToString())
    paths.append(path)

with tf.name_scope("input"):
    filename_queue = tf.train.string_input_producer(paths, num_epochs=2, shuffle=False)
    reader = tf.TFRecordReader()
    _, serialized = reader.read(filename_queue)
    features = tf.parse_single_example(
        serialized,
        features={
            "image_raw": tf.FixedLenFeature([], tf.string),
            "label": tf.FixedLenFeature([], tf.int64),
        },
    )
    image = tf.decode_raw(features["image_raw"], tf.float32)
    image.set_shape([12])
    label = tf.cast(features["label"], tf.int32)
    image_batch, label_batch = tf.train.batch(
        [image, label], batch_size=16, num_threads=1, capacity=32, allow_smaller_final_batch=True
    )

w = tf.Variable(randn([12, 2], 1), name="weights")
b = tf.Variable(tf.zeros([2]), name="biases")
logits = tf.matmul(image_batch, w) + b
loss = tf.reduce_mean(
    tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label_batch, logits=logits)
)
train_op = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
batch_size = tf.shape(label_batch)[0]

print("batch shape", image_batch.shape.as_list(), label_batch.shape.as_list())
with tf.Session() as sess:
    sess.run(tf.group(tf.global_variables_initializer(), tf.local_variables_initializer()))
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess=sess, coord=coord)
    step = 0
    try:
        while not coord.should_stop():
            _, loss_value, n = sess.run([train_op, loss, batch_size])
            print("step %d: %d examples, loss = %.6f" % (step, n, loss_value))
            step += 1
    except tf.errors.OutOfRangeError:
        print("Done training for 2 epochs, %d steps." % step)
    finally:
        coord.request_stop()
    coord.join(threads)
    print("weights", " ".join("%.5f" % v for v in sess.run(w).ravel()[:6]))
