"""``tf.keras.preprocessing.sequence`` beyond ``pad_sequences``: ``skipgrams`` (word pairs
for word2vec, with negative samples), ``make_sampling_table`` (Zipf-law keep
probabilities) and ``TimeseriesGenerator`` (windows of a series as a ``Sequence`` for
``fit_generator``), as TF1's Keras computes them. ``skipgrams`` draws from Python's
``random`` and ``TimeseriesGenerator(shuffle=True)`` from ``np.random``, as TF's do, so the
same seeds give the same draws."""

from __future__ import annotations

import json
import random

import numpy as np

from engine.keras.utils import Sequence, pad_sequences

__all__ = ["TimeseriesGenerator", "make_sampling_table", "pad_sequences", "skipgrams"]


def make_sampling_table(size, sampling_factor=1e-5) -> np.ndarray:
    """Keep probabilities for words ranked 0..size-1 by frequency (Zipf's law, as word2vec
    samples): ``min(1, sqrt(sampling_factor * inverse frequency))``."""
    size = int(size)
    if size < 1:
        raise ValueError(f"make_sampling_table needs size >= 1, got {size}")
    gamma = 0.577
    rank = np.arange(size)
    rank[0] = 1
    inv_fq = rank * (np.log(rank) + gamma) + 0.5 - 1.0 / (12.0 * rank)
    f = sampling_factor * inv_fq
    return np.minimum(1.0, f / np.sqrt(f))


def _positive_pairs(sequence, window_size, categorical, sampling_table):
    couples, labels = [], []
    for i, wi in enumerate(sequence):
        if not wi:
            continue
        if sampling_table is not None and sampling_table[wi] < random.random():
            continue
        for j in range(max(0, i - window_size), min(len(sequence), i + window_size + 1)):
            if j != i and sequence[j]:
                couples.append([wi, sequence[j]])
                labels.append([0, 1] if categorical else 1)
    return couples, labels


def skipgrams(
    sequence,
    vocabulary_size,
    window_size=4,
    negative_samples=1.0,
    shuffle=True,
    categorical=False,
    sampling_table=None,
    seed=None,
):
    """``(couples, labels)``: each non-zero word with its neighbours within ``window_size``
    (label 1), plus ``negative_samples`` times as many pairs with a random word (label 0);
    index 0 is skipped. Shuffled with Python's ``random`` (seeded by ``seed``)."""
    if int(vocabulary_size) < 2 and negative_samples > 0:
        raise ValueError(f"skipgrams needs vocabulary_size >= 2, got {vocabulary_size}")
    couples, labels = _positive_pairs(sequence, window_size, categorical, sampling_table)
    if negative_samples > 0:
        count = int(len(labels) * negative_samples)
        words = [c[0] for c in couples]
        random.shuffle(words)
        couples += [
            [words[i % len(words)], random.randint(1, int(vocabulary_size - 1))]
            for i in range(count)
        ]
        labels += [[1, 0] if categorical else 0 for _ in range(count)]
    if shuffle:
        if seed is None:
            seed = random.randint(0, int(10e6))
        random.seed(seed)
        random.shuffle(couples)
        random.seed(seed)
        random.shuffle(labels)
    return couples, labels


class TimeseriesGenerator(Sequence):
    """Batches of windows over ``data``: sample ``k`` of a batch is ``data[row - length :
    row : sampling_rate]`` with target ``targets[row]``, rows from ``start_index + length``
    to ``end_index`` every ``stride`` (or drawn with ``np.random`` when ``shuffle``)."""

    def __init__(
        self,
        data,
        targets,
        length,
        sampling_rate=1,
        stride=1,
        start_index=0,
        end_index=None,
        shuffle=False,
        reverse=False,
        batch_size=128,
    ):
        if len(data) != len(targets):
            raise ValueError(
                f"Data and targets have to be of same length. Data length is {len(data)} "
                f"while target length is {len(targets)}"
            )
        for name, v in (("length", length), ("sampling_rate", sampling_rate),
                        ("stride", stride), ("batch_size", batch_size)):  # fmt: skip
            if int(v) < 1:
                raise ValueError(f"TimeseriesGenerator: {name} must be >= 1, got {v}")
        self.data, self.targets = data, targets
        self.length, self.sampling_rate, self.stride = length, sampling_rate, stride
        self.start_index = start_index + length
        self.end_index = len(data) - 1 if end_index is None else end_index
        self.shuffle, self.reverse, self.batch_size = shuffle, reverse, batch_size
        if self.start_index > self.end_index:
            raise ValueError(
                f"`start_index+length={self.start_index} > end_index={self.end_index}` is "
                "disallowed, as no part of the sequence would be left to be used as current "
                "step."
            )

    def __len__(self) -> int:
        span = self.batch_size * self.stride
        return (self.end_index - self.start_index + span) // span

    def __getitem__(self, index):
        if self.shuffle:
            rows = np.random.randint(self.start_index, self.end_index + 1, size=self.batch_size)
        else:
            if not 0 <= index < len(self):
                raise IndexError(f"batch {index} is out of range for {len(self)} batches")
            i = self.start_index + self.batch_size * self.stride * index
            end = min(i + self.batch_size * self.stride, self.end_index + 1)
            rows = np.arange(i, end, self.stride)
        samples = np.array([self.data[r - self.length : r : self.sampling_rate] for r in rows])
        targets = np.array([self.targets[r] for r in rows])
        return (samples[:, ::-1, ...], targets) if self.reverse else (samples, targets)

    def get_config(self) -> dict:
        def as_json(v, what):
            try:
                return json.dumps(v.tolist() if isinstance(v, np.ndarray) else v)
            except TypeError as e:
                raise TypeError(f"{what} not JSON serializable") from e

        return {
            "data": as_json(self.data, "Data"),
            "targets": as_json(self.targets, "Targets"),
            "length": self.length,
            "sampling_rate": self.sampling_rate,
            "stride": self.stride,
            "start_index": self.start_index,
            "end_index": self.end_index,
            "shuffle": self.shuffle,
            "reverse": self.reverse,
            "batch_size": self.batch_size,
        }

    def to_json(self, **kwargs) -> str:
        return json.dumps(
            {"class_name": type(self).__name__, "config": self.get_config()}, **kwargs
        )
