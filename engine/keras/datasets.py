"""``tf.keras.datasets``: the datasets Keras downloads, read here only from Keras' cache
(``~/.keras/datasets``, or ``KERAS_HOME``): the engine never downloads. Files are read as
plain arrays (``np.load(allow_pickle=False)``, IDX); datasets Keras stores as pickles (IMDB,
CIFAR, Reuters) are refused."""

from __future__ import annotations

import gzip
import os
from types import SimpleNamespace

import numpy as np

__all__ = ["boston_housing", "fashion_mnist", "mnist"]

_MAX_IDX_BYTES = 200 * 1024 * 1024


def _cache_dir(cache_dir=None) -> str:
    base = (
        cache_dir or os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    )
    return os.path.join(base, "datasets")


def _cached(name: str, what: str) -> str:
    path = os.path.join(_cache_dir(), name)
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"{what}: {path} is not there. The engine does not download datasets; place "
            f"Keras' {name} there (the file tf.keras downloads)."
        )
    return path


def _npz(path: str, keys) -> list:
    with np.load(path, allow_pickle=False) as f:
        missing = [k for k in keys if k not in f.files]
        if missing:
            raise ValueError(f"{path} lacks the arrays {missing}")
        return [f[k] for k in keys]


def _mnist_load_data(path="mnist.npz"):
    """((x_train, y_train), (x_test, y_test)) of MNIST from Keras' cached ``mnist.npz``."""
    x_train, y_train, x_test, y_test = _npz(
        _cached(path, "mnist.load_data"), ["x_train", "y_train", "x_test", "y_test"]
    )
    return (x_train, y_train), (x_test, y_test)


def _read_idx(path: str) -> np.ndarray:
    """An IDX file (gzipped): magic (0, 0, type 0x08, ndim), big-endian dims, uint8 data."""
    with gzip.open(path, "rb") as f:
        data = f.read(_MAX_IDX_BYTES + 1)
    if len(data) > _MAX_IDX_BYTES:
        raise ValueError(f"{path} is larger than {_MAX_IDX_BYTES} bytes")
    if len(data) < 4 or data[0] or data[1] or data[2] != 0x08:
        raise ValueError(f"{path} is not an IDX file of unsigned bytes")
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    start = 4 + 4 * ndim
    if len(data) - start != int(np.prod(dims, dtype=np.int64)):
        raise ValueError(f"{path}: header says {dims}, but holds {len(data) - start} values")
    return np.frombuffer(data, np.uint8, offset=start).reshape(dims)


def _fashion_load_data():
    """((x_train, y_train), (x_test, y_test)) of Fashion-MNIST from Keras' cached IDX files."""
    names = [
        "train-labels-idx1-ubyte.gz",
        "train-images-idx3-ubyte.gz",
        "t10k-labels-idx1-ubyte.gz",
        "t10k-images-idx3-ubyte.gz",
    ]
    arrays = [
        _read_idx(_cached(os.path.join("fashion-mnist", n), "fashion_mnist.load_data"))
        for n in names
    ]
    return (arrays[1], arrays[0]), (arrays[3], arrays[2])


def _boston_load_data(path="boston_housing.npz", test_split=0.2, seed=113):
    """((x_train, y_train), (x_test, y_test)), shuffled and split as Keras does."""
    x, y = _npz(_cached(path, "boston_housing.load_data"), ["x", "y"])
    rng = np.random.RandomState(seed)
    idx = np.arange(len(x))
    rng.shuffle(idx)
    x, y = x[idx], y[idx]
    cut = int(len(x) * (1 - test_split))
    return (x[:cut], y[:cut]), (x[cut:], y[cut:])


def _refused(name: str):
    def load_data(*args, **kwargs):  # noqa: ARG001
        raise NotImplementedError(
            f"tf.keras.datasets.{name}: Keras stores this dataset as Python pickles, which the "
            "engine never loads; load it into numpy arrays yourself"
        )

    return SimpleNamespace(load_data=load_data)


mnist = SimpleNamespace(load_data=_mnist_load_data)
fashion_mnist = SimpleNamespace(load_data=_fashion_load_data)
boston_housing = SimpleNamespace(load_data=_boston_load_data)
imdb = _refused("imdb")
cifar10 = _refused("cifar10")
cifar100 = _refused("cifar100")
reuters = _refused("reuters")
