"""A stand-in for TF1's ``input_data.read_data_sets``: deterministic MNIST-shaped data, so
the tutorial programs run without downloads (the only change made to them)."""

import numpy as np


class _Set:
    def __init__(self, images, labels):
        self.images, self.labels = images, labels
        self._pos = 0

    @property
    def num_examples(self):
        return len(self.images)

    def next_batch(self, n):
        start = self._pos
        self._pos = (self._pos + n) % len(self.images)
        idx = np.arange(start, start + n) % len(self.images)
        return self.images[idx], self.labels[idx]


class _Datasets:
    def __init__(self, seed=0, n=512, one_hot=True):
        rng = np.random.default_rng(seed)
        labels = rng.integers(0, 10, n)
        protos = rng.random((10, 784)).astype(np.float32)
        images = np.clip(protos[labels] * 0.7 + rng.random((n, 784)) * 0.3, 0, 1).astype(np.float32)
        onehot = np.eye(10, dtype=np.float32)[labels] if one_hot else labels
        self.train = _Set(images[: n - 128], onehot[: n - 128])
        self.test = _Set(images[n - 128 :], onehot[n - 128 :])


def read_data_sets(train_dir=None, one_hot=True):
    return _Datasets(one_hot=one_hot)


def init(shape, seed, scale=0.1):
    """Deterministic initial weights (the tutorials' tf.random_normal, drawn with numpy so
    TensorFlow and the engine start from the same values)."""
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)
