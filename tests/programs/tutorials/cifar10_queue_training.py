# The CIFAR-10 tutorial's input and training loop (tensorflow/models tutorials/image/cifar10),
# scaled down: binary records read with FixedLengthRecordReader from a filename queue,
# decoded with decode_raw + strided_slice + transpose, cropped and standardized, batched by
# queue runners, a conv/LRN/pool network whose losses collection carries weight decay, loss
# averages kept with ExponentialMovingAverage, an exponentially decayed learning rate, and
# MonitoredTrainingSession with StopAtStepHook, NanTensorHook and a logging hook. One reader
# thread and tf.train.batch (instead of the random crops and shuffle_batch) keep it
# deterministic.
import os
import tempfile

import numpy as np
import tensorflow as tf

from mnist_standin import init as randn

IMAGE = 12
CROP = 10
BATCH = 8
rng = np.random.default_rng(11)
data_dir = tempfile.mkdtemp()
filenames = []
for part in range(2):
    labels = rng.integers(0, 4, 24).astype(np.uint8)
    pixels = rng.integers(0, 256, (24, 3 * IMAGE * IMAGE)).astype(np.uint8)
    pixels[:, : IMAGE * IMAGE] = np.minimum(pixels[:, : IMAGE * IMAGE], labels[:, None] * 60)
    path = os.path.join(data_dir, "data_batch_%d.bin" % (part + 1))
    with open(path, "wb") as f:
        f.write(np.concatenate([labels[:, None], pixels], 1).tobytes())
    filenames.append(path)


def read_cifar10(filename_queue):
    class CIFAR10Record(object):
        pass

    result = CIFAR10Record()
    label_bytes = 1
    result.height, result.width, result.depth = IMAGE, IMAGE, 3
    image_bytes = result.height * result.width * result.depth
    record_bytes = label_bytes + image_bytes
    reader = tf.FixedLengthRecordReader(record_bytes=record_bytes)
    result.key, value = reader.read(filename_queue)
    record_bytes = tf.decode_raw(value, tf.uint8)
    result.label = tf.cast(tf.strided_slice(record_bytes, [0], [label_bytes]), tf.int32)
    depth_major = tf.reshape(
        tf.strided_slice(record_bytes, [label_bytes], [label_bytes + image_bytes]),
        [result.depth, result.height, result.width],
    )
    result.uint8image = tf.transpose(depth_major, [1, 2, 0])
    return result


def inputs():
    with tf.name_scope("input"):
        filename_queue = tf.train.string_input_producer(filenames, shuffle=False)
        read_input = read_cifar10(filename_queue)
        reshaped_image = tf.cast(read_input.uint8image, tf.float32)
        resized_image = tf.image.resize_image_with_crop_or_pad(reshaped_image, CROP, CROP)
        float_image = tf.image.per_image_standardization(resized_image)
        float_image.set_shape([CROP, CROP, 3])
        read_input.label.set_shape([1])
        images, label_batch = tf.train.batch(
            [float_image, read_input.label], batch_size=BATCH, num_threads=1, capacity=24
        )
        tf.summary.image("images", images)
        return images, tf.reshape(label_batch, [BATCH])


def _variable_with_weight_decay(name, shape, seed, wd):
    var = tf.get_variable(name, initializer=tf.constant(randn(shape, seed)))
    if wd is not None:
        weight_decay = tf.multiply(tf.nn.l2_loss(var), wd, name="weight_loss")
        tf.add_to_collection("losses", weight_decay)
    return var


def _activation_summary(x):
    tf.summary.histogram(x.op.name + "/activations", x)
    tf.summary.scalar(x.op.name + "/sparsity", tf.nn.zero_fraction(x))


def inference(images):
    with tf.variable_scope("conv1") as scope:
        kernel = _variable_with_weight_decay("weights", [3, 3, 3, 8], 1, None)
        conv = tf.nn.conv2d(images, kernel, [1, 1, 1, 1], padding="SAME")
        biases = tf.get_variable("biases", [8], initializer=tf.constant_initializer(0.0))
        conv1 = tf.nn.relu(tf.nn.bias_add(conv, biases), name=scope.name)
        _activation_summary(conv1)
    pool1 = tf.nn.max_pool(conv1, [1, 3, 3, 1], [1, 2, 2, 1], padding="SAME", name="pool1")
    norm1 = tf.nn.lrn(pool1, 4, bias=1.0, alpha=0.001 / 9.0, beta=0.75, name="norm1")
    with tf.variable_scope("local3") as scope:
        reshape = tf.reshape(norm1, [BATCH, -1])
        dim = int(reshape.get_shape()[1])
        weights = _variable_with_weight_decay("weights", [dim, 16], 2, 0.004)
        biases = tf.get_variable("biases", [16], initializer=tf.constant_initializer(0.1))
        local3 = tf.nn.relu(tf.matmul(reshape, weights) + biases, name=scope.name)
        _activation_summary(local3)
    with tf.variable_scope("softmax_linear") as scope:
        weights = _variable_with_weight_decay("weights", [16, 4], 3, None)
        biases = tf.get_variable("biases", [4], initializer=tf.constant_initializer(0.0))
        softmax_linear = tf.add(tf.matmul(local3, weights), biases, name=scope.name)
    return softmax_linear


def loss(logits, labels):
    cross_entropy = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.cast(labels, tf.int64), logits=logits, name="cross_entropy_per_example"
    )
    tf.add_to_collection("losses", tf.reduce_mean(cross_entropy, name="cross_entropy"))
    return tf.add_n(tf.get_collection("losses"), name="total_loss")


def train(total_loss, global_step):
    lr = tf.train.exponential_decay(0.1, global_step, 10, 0.5, staircase=True)
    tf.summary.scalar("learning_rate", lr)
    loss_averages = tf.train.ExponentialMovingAverage(0.9, name="avg")
    losses = tf.get_collection("losses")
    loss_averages_op = loss_averages.apply(losses + [total_loss])
    with tf.control_dependencies([loss_averages_op]):
        opt = tf.train.GradientDescentOptimizer(lr)
        grads = opt.compute_gradients(total_loss)
    apply_gradient_op = opt.apply_gradients(grads, global_step=global_step)
    variable_averages = tf.train.ExponentialMovingAverage(0.9999, global_step)
    with tf.control_dependencies([apply_gradient_op]):
        variables_averages_op = variable_averages.apply(tf.trainable_variables())
    return variables_averages_op


global_step = tf.train.get_or_create_global_step()
images, labels = inputs()
logits = inference(images)
total_loss = loss(logits, labels)
train_op = train(total_loss, global_step)


class _LoggerHook(tf.train.SessionRunHook):
    def begin(self):
        self._step = -1

    def before_run(self, run_context):
        self._step += 1
        return tf.train.SessionRunArgs(total_loss)

    def after_run(self, run_context, run_values):
        if self._step % 3 == 0:
            print("step %d, loss = %.5f" % (self._step, run_values.results))


with tf.train.MonitoredTrainingSession(
    checkpoint_dir=tempfile.mkdtemp(),
    hooks=[
        tf.train.StopAtStepHook(last_step=15),
        tf.train.NanTensorHook(total_loss),
        _LoggerHook(),
    ],
    save_summaries_steps=None,
    save_summaries_secs=None,
    log_step_count_steps=None,
) as mon_sess:
    while not mon_sess.should_stop():
        mon_sess.run(train_op)
print("labels seen", images.shape.as_list(), labels.shape.as_list())
