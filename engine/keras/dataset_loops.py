"""``fit``/``evaluate``/``predict`` on ``tf.data``: a ``Dataset`` yielding ``(x, y)`` or
``(x, y, sample_weight)`` batches, or a one-shot/initializable ``Iterator``, as TF1 Keras
runs them (``training_arrays_v1.model_iteration`` in its step-wise mode).

- A Dataset gets a fresh initializable iterator per call. With ``steps`` None its cardinality
  (read statically from the pipeline) gives the steps; an infinite one needs ``steps``; an
  unknown one runs until ``OutOfRangeError`` and is re-initialized for the next epoch. With
  ``steps`` given the iterator carries on across epochs, as TF's does.
- An Iterator is used as given (the caller initializes it) and always needs ``steps``.
- Each step fetches the next batch, then feeds it to the model's step (TF wires the
  iterator's tensors in as inputs; the values, order and consumption are the same).
- Step-wise aggregation is TF's: the epoch loss is the mean of the batch losses (each batch
  counts once, whatever its size); metrics accumulate over the epoch.
"""

from __future__ import annotations

import inspect
import logging
import random
from itertools import count

import numpy as np

from engine import data as tf_data
from engine.errors import OutOfRangeError
from engine.framework.tensor_util import constant_value
from engine.keras import backend
from engine.keras import callbacks as cbks
from engine.keras import training_loops as loops
from engine.keras.progbar import Progbar
from engine.keras.utils import Sequence

__all__ = ["INFINITE", "UNKNOWN", "cardinality", "evaluate", "fit", "is_tf_data", "predict"]

INFINITE = -1
UNKNOWN = -2
_log = logging.getLogger("engine.keras")


def is_tf_data(x) -> bool:
    """Whether ``x`` is a ``tf.data`` Dataset or Iterator."""
    return isinstance(x, (tf_data.Dataset, tf_data.Iterator))


def is_generator_like(x) -> bool:
    """Whether ``x`` is a Python generator or a ``keras.utils.Sequence``."""
    return inspect.isgenerator(x) or isinstance(x, Sequence)


def is_step_input(x) -> bool:
    """Whether ``x`` is what this module's step-wise loops run (not arrays)."""
    return is_tf_data(x) or is_generator_like(x)


def fit_function(x):
    """The ``fit`` for input ``x`` when it is not arrays (else None)."""
    if is_tf_data(x):
        return fit
    return fit_on_generator if is_generator_like(x) else None


# -- cardinality ---------------------------------------------------------------------------


def _const(t) -> int | None:
    v = constant_value(t)
    return None if v is None else int(np.asarray(v))


def _slices(op) -> int:
    firsts = {t.shape.as_tuple()[0] for t in op.inputs if t.shape.rank}
    return UNKNOWN if None in firsts or len(firsts) != 1 else int(firsts.pop())


def _range(op) -> int:
    start, stop, step = (_const(t) for t in op.inputs)
    if None in (start, stop, step) or step == 0:
        return UNKNOWN
    return max(0, -(-(stop - start) // step))


def _batch(op, n: int) -> int:
    size, drop = _const(op.inputs[1]), constant_value(op.inputs[2])
    if n < 0 or size is None or drop is None:
        return n if n == INFINITE else UNKNOWN
    return n // size if bool(drop) else -(-n // size)


def _repeat(op, n: int) -> int:
    times = _const(op.inputs[1])
    if times is None:
        return UNKNOWN
    if n == 0 or times == 0:
        return 0
    if times < 0 or n == INFINITE:
        return INFINITE
    return UNKNOWN if n == UNKNOWN else n * times


def _take(op, n: int) -> int:
    c = _const(op.inputs[1])
    if c is None:
        return UNKNOWN
    if c < 0:
        return n
    if n == INFINITE:
        return c
    return UNKNOWN if n == UNKNOWN else min(n, c)


def _skip(op, n: int) -> int:
    c = _const(op.inputs[1])
    if c is None or n == UNKNOWN:
        return UNKNOWN
    if n == INFINITE:
        return INFINITE
    return 0 if c < 0 else max(n - c, 0)


_SAME = {"MapDataset", "PrefetchDataset", "CacheDataset", "ShuffleDataset"}
_SIZED = {"BatchDatasetV2": _batch, "PaddedBatchDatasetV2": _batch, "RepeatDataset": _repeat}
_SIZED.update({"TakeDataset": _take, "SkipDataset": _skip})


def _op_cardinality(op) -> int:
    if op.type == "TensorSliceDataset":
        return _slices(op)
    if op.type == "TensorDataset":
        return 1
    if op.type == "RangeDataset":
        return _range(op)
    if op.type == "ZipDataset":
        sizes = [_op_cardinality(t.op) for t in op.inputs]
        finite = [s for s in sizes if s >= 0]
        if finite:
            return min(finite)
        return UNKNOWN if UNKNOWN in sizes else INFINITE
    if op.type in _SAME:
        return _op_cardinality(op.inputs[0].op)
    if op.type in _SIZED:
        return _SIZED[op.type](op, _op_cardinality(op.inputs[0].op))
    return UNKNOWN  # filter, flat_map, readers: known only by running


def cardinality(dataset: tf_data.Dataset) -> int:
    """The number of elements ``dataset`` yields, from its pipeline alone: ``INFINITE``
    (-1) for a repeat without end, ``UNKNOWN`` (-2) when it depends on the data."""
    return _op_cardinality(dataset._variant.op)


def infer_steps(dataset, steps, epochs: int, steps_name: str):
    """TF's ``infer_steps_for_dataset``: the steps a pass takes, checked against the size."""
    size = cardinality(dataset)
    if size == INFINITE and steps is None:
        raise ValueError(
            "When passing an infinitely repeating dataset, you "
            f"must specify the `{steps_name}` argument."
        )
    if size >= 0 and steps is not None and steps * epochs > size:
        if epochs > 1:
            raise ValueError(
                f"The dataset you passed contains {size} batches, but you passed "
                f"`epochs={epochs}` and `{steps_name}={steps}`, which is a total of "
                f"{steps * epochs} steps. We cannot draw that many steps from this "
                f"dataset. We suggest to set `{steps_name}={size // epochs}`."
            )
        raise ValueError(
            f"The dataset you passed contains {size} batches, but you passed "
            f"`{steps_name}={steps}`. We cannot draw that many steps from this "
            f"dataset. We suggest to set `{steps_name}={size}`."
        )
    if steps is None:
        return size if size >= 0 else None
    return steps


# -- sources of batches --------------------------------------------------------------------


def _as_triple(item, what: str):
    """A batch as ``(x, y, sample_weight)``; tuples of 1 to 3 items, anything else is x."""
    if not isinstance(item, tuple) or hasattr(item, "_fields"):
        return item, None, None
    if len(item) not in (1, 2, 3):
        raise ValueError(
            f"Output of {what} should be a tuple of 1 or 2 or 3 elements: (input,) or "
            f"(input, target) or (input, target, sample_weights). Received {item}"
        )
    return (*item, None, None)[:3]


class _DatasetSource:
    """Batches from a Dataset (through an initializable iterator of its own) or a given
    Iterator, as numpy; ``get_next`` is built once."""

    weights_by_size = False

    def __init__(self, data):
        self.is_dataset = isinstance(data, tf_data.Dataset)
        graph = (data._variant if self.is_dataset else data._handle).graph
        with graph.as_default():
            self.iterator = data.make_initializable_iterator() if self.is_dataset else data
            self.next = self.iterator.get_next()
        if self.is_dataset:
            self.reset()

    def reset(self) -> None:
        backend.get_session().run(self.iterator.initializer)

    def pull(self):
        """The next batch's ``(x, y, sample_weight)``; ``OutOfRangeError`` past the end."""
        item = backend.get_session().run(self.next)
        if isinstance(item, list):
            item = tuple(item)
        if isinstance(item, tuple) and len(item) == 1:
            return item[0], None, None
        if isinstance(item, tuple) and len(item) not in (2, 3) and not hasattr(item, "_fields"):
            raise ValueError(
                "Please provide model inputs as a list or tuple of 2 or 3 elements: "
                f"(input, target) or (input, target, sample_weights) Received {item}"
            )
        return _as_triple(item, "the dataset")


def is_sequence(data) -> bool:
    return hasattr(data, "__getitem__") and hasattr(data, "__len__")


def _sequence_stream(seq, shuffle: bool):
    """A Sequence's batches pass after pass (order shuffled each pass with Python's
    ``random`` when ``shuffle``, as TF's OrderedEnqueuer), ``on_epoch_end`` after each."""
    while True:
        order = list(range(len(seq)))
        if shuffle:
            random.shuffle(order)
        for i in order:
            yield seq[i]
        if hasattr(seq, "on_epoch_end"):
            seq.on_epoch_end()


class _GeneratorSource:
    """Batches from a Python generator (consumed as it goes) or a Sequence."""

    is_dataset = False
    weights_by_size = True

    def __init__(self, data, shuffle=False):
        self.stream = _sequence_stream(data, shuffle) if is_sequence(data) else iter(data)

    def pull(self):
        try:
            item = next(self.stream)
        except StopIteration:
            raise OutOfRangeError(None, None, "the generator ran out of data") from None
        return _as_triple(item, "generator")


class _ArraySource(_GeneratorSource):
    """``(x, y[, sample_weight])`` arrays in order, ``batch_size`` rows at a time."""

    def __init__(self, arrays, batch_size: int):
        x = arrays[0]
        first = next(iter(x.values())) if isinstance(x, dict) else x
        first = first[0] if isinstance(first, (list, tuple)) else first
        self.steps = -(-len(first) // batch_size)

        def cut(a, s):
            if isinstance(a, dict):
                return {k: v[s] for k, v in a.items()}
            if isinstance(a, (list, tuple)):
                return [v[s] for v in a]
            return None if a is None else np.asarray(a)[s]

        self.stream = iter(
            tuple(cut(a, slice(i * batch_size, (i + 1) * batch_size)) for a in arrays)
            for i in range(self.steps)
        )


def _check_args(x, y, sample_weight, batch_size, validation_split=0.0) -> None:
    if y is not None:
        raise ValueError(
            f"You passed a dataset or dataset iterator ({x}) as input `x` to your model. "
            "In that case, you should not specify a target (`y`) argument, since the "
            "dataset or dataset iterator generates both input data and target data. "
            f"Received: {y}"
        )
    if sample_weight is not None:
        raise ValueError(
            "`sample_weight` argument is not supported when input `x` is a dataset or a "
            "dataset iterator. Instead, you can provide sample_weight as the third element "
            "of your dataset, i.e. (inputs, targets, sample_weight)."
        )
    if validation_split:
        raise ValueError(
            "`validation_split` argument is not supported when input `x` is a dataset or "
            "a dataset iterator."
        )
    if batch_size is not None:
        raise ValueError(
            "The `batch_size` argument must not be specified for the given input type. "
            f"Received input: {x}, batch_size: {batch_size}"
        )


def _steps_for(data, steps, epochs: int, steps_name: str):
    """(steps, whether to re-initialize each epoch) as TF decides them for tf.data."""
    if isinstance(data, tf_data.Iterator):
        if steps is None:
            raise ValueError(
                "When using a Dataset iterator as input to a model, you should specify "
                f"the `{steps_name}` argument."
            )
        return int(steps), False
    if steps is None:
        return infer_steps(data, None, epochs, steps_name), True
    return int(steps), False  # TF checks the size only when it infers the steps


def _generator_steps(data, steps, steps_name: str) -> int:
    if steps is None and is_sequence(data):
        return len(data)
    if steps is None:
        raise ValueError(f"Please specify the number of steps via the `{steps_name}` argument.")
    return int(steps)


# -- one pass ------------------------------------------------------------------------------


class _Pass:
    """One pass of ``steps`` batches (or until the data ends when None) through the train or
    test step; ``run`` returns the epoch's loss and metrics, aggregated step-wise."""

    def __init__(self, model, source, steps, train: bool, class_weight=None):
        self.model, self.source, self.steps = model, source, steps
        self.train, self.class_weight = train, class_weight
        self.last_batch_size = None

    def run(self, callbacks=None, progbar=None) -> list:
        agg = None
        for step in count():
            if self.steps is not None and step >= self.steps:
                break
            try:
                x, y, sw = self.source.pull()
            except OutOfRangeError:
                self._out_of_data(step)
                break
            what = "training" if self.train else "evaluating"
            g, xs, ys, sws = loops._prepare(self.model, x, y, sw, self.class_weight, what)
            self.last_batch_size = len(xs[0])
            logs = {"batch": step, "size": len(xs[0])}
            if callbacks is not None:
                callbacks.on_batch_begin(step, logs)
            agg = agg or loops._Aggregator(g)
            loss_values, stats, _ = backend.get_session().run(
                loops._fetches(g, self.train),
                feed_dict=loops._feed(self.model, g, xs, ys, sws, phase=self.train),
            )
            agg.add(loss_values, stats, self._weight(len(xs[0])))
            if callbacks is not None:
                logs.update(zip(g.names, loops._batch_values(g, loss_values, stats)))
                callbacks.on_batch_end(step, logs)
            if progbar is not None:
                progbar.update(step + 1, list(zip(g.names, agg.results())), finalize=False)
            if self.train and self.model.stop_training:
                break
        if agg is None:
            raise ValueError("Empty training data.")
        if not self.train and self.steps is not None:
            agg.samples = self.steps  # TF divides by the steps asked for, even when cut short
        return agg.results()

    def _weight(self, batch_size: int) -> int:
        """How much a batch's loss counts: TF's legacy Keras weights training batches from a
        generator by their size, and every other batch (training on tf.data, evaluating)
        once."""
        return batch_size if self.train and self.source.weights_by_size else 1

    def _out_of_data(self, step: int) -> None:
        if self.source.is_dataset and not self.steps:
            self.steps = step or None  # now the size is known
            return
        self.model.stop_training = True
        _log.warning(
            "Your %s ran out of data; interrupting training. Make sure that it can "
            "generate at least `steps * epochs` batches (here %s per epoch).",
            "dataset" if self.source.is_dataset else "data source",
            self.steps,
        )


# -- fit / evaluate / predict --------------------------------------------------------------


class _Validation:
    """The validation pass fit runs after an epoch: on tf.data, a generator, a Sequence
    (from its start each time, as TF's fresh enqueuer) or arrays."""

    def __init__(self, model, data, steps, epochs, generator_fit: bool):
        self.model, self.data, self.generator_fit = model, data, generator_fit
        self.source, self.size = None, None
        if is_tf_data(data):
            self.steps, _ = _steps_for(data, steps, epochs, "validation_steps")
            self.source, self.size = _DatasetSource(data), self.steps
        elif not isinstance(data, (list, tuple)):
            if not is_sequence(data) and not steps:
                raise ValueError("Please specify the `validation_steps` argument.")
            self.steps = _generator_steps(data, steps, "validation_steps")
            self.source = None if is_sequence(data) else _GeneratorSource(data)
        elif len(data) not in (2, 3):
            raise ValueError(
                "When passing validation_data, it must contain 2 (x_val, y_val) or 3 "
                f"(x_val, y_val, val_sample_weights) items, however it contains {len(data)}"
            )

    def run(self, last: bool, batch_size) -> list:
        if isinstance(self.data, (list, tuple)) and not self.generator_fit:
            w = self.data[2] if len(self.data) == 3 else None
            values = loops.evaluate(self.model, *self.data[:2], sample_weight=w, verbose=0)
            return values if isinstance(values, list) else [values]
        if isinstance(self.data, (list, tuple)):  # fit_generator: TF batches them like the
            source = _ArraySource(self.data, batch_size)  # last training batch
            return _Pass(self.model, source, source.steps, False).run()
        if self.source is None:
            source = _GeneratorSource(self.data)
            return _Pass(self.model, source, self.steps, False).run()
        values = _Pass(self.model, self.source, self.steps, False).run()
        if self.source.is_dataset and not last:
            self.source.reset()
        return values


def _run_fit(model, source, steps, reset_each, validation, epochs, verbose, callbacks, kw):
    """The epoch loop ``fit`` runs on a source of batches; returns the History."""
    if verbose and not isinstance(source, _GeneratorSource):  # TF1's generator loop is quiet
        unit = "steps" if source.is_dataset else "samples"
        extra = f", validate on {validation.size} {unit}" if validation and validation.size else ""
        print(f"Train on {steps} {unit}{extra}")
    model.stop_training = False
    train_pass = _Pass(model, source, steps, True, kw.get("class_weight"))
    history, cb = _callbacks(model, callbacks, epochs, steps, verbose, validation)
    cb.on_train_begin()
    freq = kw.get("validation_freq", 1)
    for epoch in range(kw.get("initial_epoch", 0), epochs):
        cb.on_epoch_begin(epoch)
        if verbose:
            print(f"Epoch {epoch + 1}/{epochs}")
        bar = Progbar(train_pass.steps, verbose=verbose) if verbose else None
        values = train_pass.run(cb, bar)
        names = model._build_train_graph().names
        logs = dict(zip(names, values))
        if validation is not None and (epoch + 1) % freq == 0 and not model.stop_training:
            vals = validation.run(epoch == epochs - 1, train_pass.last_batch_size)
            logs.update(zip([f"val_{n}" for n in names], vals))
        if bar is not None:
            bar.finish(list(logs.items()))
        cb.on_epoch_end(epoch, logs)
        if reset_each and epoch < epochs - 1:
            source.reset()
        if model.stop_training:
            break
    cb.on_train_end()
    model.history = history
    return history


def _callbacks(model, callbacks, epochs, steps, verbose, validation):
    names = list(model._build_train_graph().names) if model.outputs else ["loss"]
    val_names = [f"val_{n}" for n in names] if validation is not None else []
    return cbks.configure(
        model,
        callbacks,
        {
            "batch_size": None,
            "epochs": epochs,
            "steps": steps,
            "samples": steps,
            "verbose": verbose,
            "do_validation": validation is not None,
            "metrics": names + val_names,
        },
    )


_FIT_KEYWORDS = {
    "validation_split", "validation_data", "shuffle", "class_weight", "sample_weight",
    "initial_epoch", "steps_per_epoch", "validation_steps", "validation_freq",
}  # fmt: skip


def fit(model, x, y=None, batch_size=None, epochs=1, verbose=1, callbacks=None, **kw):
    """``Model.fit`` on a Dataset or Iterator (see the module docstring)."""
    unknown = set(kw) - _FIT_KEYWORDS
    if unknown:
        raise TypeError(f"Unrecognized keyword arguments: {sorted(unknown)}")
    _check_args(x, y, kw.get("sample_weight"), batch_size, kw.get("validation_split", 0.0))
    model._require_compiled("training")
    steps, reset_each = _steps_for(x, kw.get("steps_per_epoch"), epochs, "steps_per_epoch")
    source = _DatasetSource(x)
    val = kw.get("validation_data")
    validation = None
    if val is not None:
        validation = _Validation(model, val, kw.get("validation_steps"), epochs, False)
    return _run_fit(model, source, steps, reset_each, validation, epochs, verbose, callbacks, kw)


def fit_generator(model, generator, steps_per_epoch=None, epochs=1, verbose=1, **kw):
    """``Model.fit_generator`` on a Python generator or a Sequence (``shuffle``, default
    True, shuffles a Sequence's batch order each pass with Python's ``random``)."""
    model._require_compiled("training")
    steps = _generator_steps(generator, steps_per_epoch, "steps_per_epoch")
    val = kw.get("validation_data")
    validation = None
    if val is not None:
        validation = _Validation(model, val, kw.get("validation_steps"), epochs, True)
    source = _GeneratorSource(generator, kw.get("shuffle", True))
    callbacks = kw.pop("callbacks", None)
    return _run_fit(model, source, steps, False, validation, epochs, verbose, callbacks, kw)


def fit_on_generator(model, x, y=None, batch_size=None, epochs=1, verbose=1, callbacks=None, **kw):
    """``Model.fit`` given a generator or Sequence: ``fit_generator``, as TF1 does."""
    if y is not None or kw.pop("sample_weight", None) is not None:
        raise ValueError(
            "`y` and `sample_weight` arguments are not supported when data is a generator "
            "or Sequence instance. Instead pass targets (and weights) as the second (and "
            "third) element of the generator."
        )
    if kw.pop("validation_split", 0.0):
        raise ValueError(
            "If your data is in the form of a Python generator, you cannot use `validation_split`."
        )
    _check_args(x, None, None, batch_size)
    steps = kw.pop("steps_per_epoch", None)
    return fit_generator(model, x, steps, epochs, verbose, callbacks=callbacks, **kw)


def _source_and_steps(x, steps, steps_name: str):
    if is_tf_data(x):
        return _DatasetSource(x), _steps_for(x, steps, 1, steps_name)[0]
    return _GeneratorSource(x), _generator_steps(x, steps, steps_name)


def evaluate(model, x, y=None, batch_size=None, verbose=1, sample_weight=None, steps=None):
    """``Model.evaluate`` on a Dataset, Iterator, generator or Sequence: a scalar, or a list
    as ``metrics_names``."""
    _check_args(x, y, sample_weight, batch_size)
    model._require_compiled("evaluating")
    source, steps = _source_and_steps(x, steps, "steps")
    bar = Progbar(steps, verbose=verbose) if verbose else None
    values = _Pass(model, source, steps, False).run(None, bar)
    if bar is not None:
        bar.finish(list(zip(model._build_train_graph().names, values)))
    values = [loops._scalar(v) for v in values]
    return values[0] if len(values) == 1 else values


def predict(model, x, batch_size=None, verbose=0, steps=None):
    """``Model.predict`` on a Dataset, Iterator, generator or Sequence: the outputs of each
    batch, concatenated."""
    del verbose
    if batch_size is not None:
        _check_args(x, None, None, batch_size)
    source, steps = _source_and_steps(x, steps, "steps")
    chunks = None
    for _ in range(steps) if steps is not None else count():
        try:
            batch = source.pull()[0]
        except OutOfRangeError:
            break
        out = loops.predict(model, batch, whole=True)
        out = out if isinstance(out, list) else [out]
        chunks = [[] for _ in out] if chunks is None else chunks
        for c, o in zip(chunks, out):
            c.append(o)
    if chunks is None:
        raise ValueError("Empty data: no batch to predict on.")
    result = [np.concatenate(c) for c in chunks]
    return result[0] if len(result) == 1 else result
