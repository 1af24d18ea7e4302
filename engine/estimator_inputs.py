"""TF 1.15's ``tf.estimator.inputs``: ``numpy_input_fn`` and ``pandas_input_fn``, without
queues.

TF feeds the rows of the arrays into a FIFO (or, shuffling, a RandomShuffleQueue) from a
queue-runner thread and dequeues batches. The engine has no queues, so the input_fn here
makes one placeholder per column and registers a feeding hook with the graph; the Estimator
adds the graph's feeding hooks to its session, and each ``run`` is fed the next batch.
The batches are TF's (see ``row_batches``):

- the rows stream epoch after epoch, in order (``shuffle=False``) or, shuffling, each epoch
  a fresh permutation, seeded from the graph-level seed (``RunConfig(tf_random_seed=...)``);
- batches are consecutive ``batch_size`` rows of that stream, so a batch may span an epoch
  boundary; with ``num_epochs`` set the last batch is what is left (possibly short) and the
  next run raises ``OutOfRangeError``; with ``num_epochs=None`` batches are all full (their
  static batch dimension is ``batch_size``, as TF's ``dequeue_many``) and never end;
- ``num_threads > 1`` interleaves that many such streams batch by batch (TF applies
  ``num_epochs`` per thread, so there are ``num_threads`` times as many rows).

Deviation: TF's shuffle queue mixes rows across epoch boundaries (only ``capacity`` rows at a
time); here each epoch is a whole permutation. Outside an Estimator (a plain ``Session``)
nothing feeds the placeholders: use ``tf.data`` there.
"""

from __future__ import annotations

import collections
import itertools

import numpy as np

from engine import dtypes, errors
from engine import tf_logging as logging
from engine.framework.graph import get_default_graph, name_scope
from engine.ops.array import placeholder
from engine.ops.random import get_seed
from engine.training.session_run_hook import SessionRunArgs, SessionRunHook

try:  # optional: only pandas_input_fn needs it
    import pandas
except ImportError:
    pandas = None

__all__ = ["numpy_input_fn", "pandas_input_fn", "input_hooks"]

_TARGET_KEY = "__target_key__"
_DIRECT_INPUT_KEY = "__direct_np_input__"
# The graph collection of the feeding hooks input_fns register (as TF's QueueRunners are
# collected in their graph); the Estimator runs them with its session.
FEED_HOOKS = "estimator_input_feed_hooks"


def input_hooks(graph) -> list[SessionRunHook]:
    """The feeding hooks the input_fns called in ``graph`` registered (in call order)."""
    return list(graph.get_collection(FEED_HOOKS))


def _epoch_orders(n: int, shuffle: bool, rng: np.random.RandomState):
    while True:
        yield rng.permutation(n) if shuffle else np.arange(n)


def row_batches(n, batch_size, num_epochs, shuffle, seed=None, num_threads=1):
    """The row indices of each batch ``numpy_input_fn`` feeds, as a generator of arrays."""
    streams = []
    for i in range(num_threads):
        rng = np.random.RandomState(None if seed is None else (seed * (i + 1)) % 2**32)
        orders = _epoch_orders(n, shuffle, rng)
        rows = itertools.chain.from_iterable(
            orders if num_epochs is None else itertools.islice(orders, num_epochs)
        )
        streams.append(_chunks(rows, batch_size))
    if num_threads == 1:
        return streams[0]
    return _round_robin(streams)


def _chunks(rows, batch_size):
    while True:
        batch = np.fromiter(itertools.islice(rows, batch_size), dtype=np.int64)
        if batch.size == 0:
            return
        yield batch


def _round_robin(streams):
    live = list(streams)
    while live:
        for stream in list(live):
            batch = next(stream, None)
            if batch is None:
                live.remove(stream)
            else:
                yield batch


class _FeedBatchesHook(SessionRunHook):
    """Feeds the next batch of rows into the columns' placeholders before every run; raises
    ``OutOfRangeError`` once the batches are spent (which ends a MonitoredSession's loop)."""

    def __init__(self, placeholders, columns, batches):
        self._placeholders = placeholders
        self._columns = columns
        self._batches = batches

    def before_run(self, run_context):  # noqa: ARG002 - the hook API's signature
        rows = next(self._batches, None)
        if rows is None:
            raise errors.OutOfRangeError(
                None, None, "numpy_input_fn: all epochs of the input have been fed"
            )
        feed = {p: c[rows] for p, c in zip(self._placeholders, self._columns)}
        return SessionRunArgs(fetches=None, feed_dict=feed)


def _as_column(name, value) -> np.ndarray:
    array = np.asarray(value)
    if array.ndim == 0:
        raise ValueError(f"Input {name!r} must have a batch dimension; got a scalar.")
    return array


def _validate_and_convert_features(x) -> collections.OrderedDict:
    if isinstance(x, dict):
        if not x:
            raise ValueError("x cannot be an empty dict")
        return collections.OrderedDict(
            (k, _as_column(k, v)) for k, v in sorted(x.items(), key=lambda t: t[0])
        )
    if isinstance(x, np.ndarray):
        if x.size == 0:
            raise ValueError("x cannot be an empty array")
        return collections.OrderedDict({_DIRECT_INPUT_KEY: x})
    raise TypeError(f"x must be a dict or array; got {type(x).__name__}")


def _unique_target_key(features, name=_TARGET_KEY) -> str:
    while name in features:
        name += "_n"
    return name


def _columns(x, y):
    """The ordered columns (features, then targets), the feature keys and the target keys
    (None, a key, or a list of keys for a dict ``y``)."""
    data = _validate_and_convert_features(x)
    feature_keys = list(data)
    if y is None:
        target_keys = None
    elif isinstance(y, dict):
        if not y:
            raise ValueError("y cannot be empty dict, use None instead.")
        ordered_y = collections.OrderedDict(sorted(y.items(), key=lambda t: t[0]))
        target_keys = list(ordered_y)
        duplicates = set(data).intersection(target_keys)
        if duplicates:
            raise ValueError(
                f"{len(duplicates)} duplicate keys are found in both x and y: {duplicates}"
            )
        data.update((k, _as_column(k, v)) for k, v in ordered_y.items())
    else:
        target_keys = _unique_target_key(data)
        data[target_keys] = _as_column("y", y)
    lengths = {v.shape[0] for v in data.values()}
    if len(lengths) != 1:
        shapes = {k: v.shape for k, v in data.items()}
        raise ValueError(
            "Length of tensors in x and y is mismatched. All elements in x and y must have the "
            f"same length.\nShapes: {shapes}"
        )
    return data, feature_keys, target_keys


def _tf_dtype(array: np.ndarray):
    if array.dtype.kind in "OUS":
        return dtypes.string
    return dtypes.as_dtype(array.dtype)


def _feed_tensors(data, batch_size, num_epochs, shuffle, num_threads, scope):
    """Placeholders for the columns, registered with the graph's feeding hooks."""
    graph = get_default_graph()
    static_batch = batch_size if num_epochs is None else None
    with name_scope(scope):
        tensors = [
            placeholder(_tf_dtype(v), shape=[static_batch, *v.shape[1:]], name=f"column_{i}")
            for i, v in enumerate(data.values())
        ]
    graph_seed, op_seed = get_seed(None)
    seed = None if graph_seed is None else (graph_seed * 1000003 + op_seed) % 2**31
    batches = row_batches(
        len(next(iter(data.values()))), batch_size, num_epochs, shuffle, seed, num_threads
    )
    columns = [v if v.dtype.kind not in "U" else v.astype(object) for v in data.values()]
    graph.add_to_collection(FEED_HOOKS, _FeedBatchesHook(tensors, columns, batches))
    return dict(zip(data, tensors))


def _check_args(batch_size, num_epochs, shuffle, num_threads) -> None:
    if not isinstance(shuffle, bool):
        raise ValueError(
            "shuffle must be provided and explicitly set as boolean (it is recommended to set "
            f"it as True for training); got {shuffle}"
        )
    if not isinstance(batch_size, int) or batch_size <= 0:
        raise ValueError(f"batch_size must be a positive integer; got {batch_size!r}")
    if num_epochs is not None and (not isinstance(num_epochs, int) or num_epochs <= 0):
        raise ValueError(f"num_epochs must be None or a positive integer; got {num_epochs!r}")
    if not isinstance(num_threads, int) or num_threads <= 0:
        raise ValueError(f"num_threads must be a positive integer; got {num_threads!r}")
    if num_threads > 1 and num_epochs is not None:
        logging.warning(
            "enqueue_data was called with num_epochs and num_threads > 1. num_epochs is "
            "applied per thread, so this will produce more epochs than you probably intend. "
            "If you want to limit epochs, use one thread."
        )


def numpy_input_fn(
    x,
    y=None,
    batch_size=128,
    num_epochs=1,
    shuffle=None,
    queue_capacity=1000,  # noqa: ARG001 - no queue here: batches are fed as they are needed
    num_threads=1,
):
    """An input_fn feeding batches of the numpy array (or dict of arrays) ``x`` and of ``y``
    (``None``, an array or a dict); it returns ``features`` or ``(features, labels)``.

    >>> input_fn = tf.estimator.inputs.numpy_input_fn(
    ...     x={"x": xs}, y=ys, batch_size=32, num_epochs=None, shuffle=True)
    """
    _check_args(batch_size, num_epochs, shuffle, num_threads)

    def input_fn():
        data, feature_keys, target_keys = _columns(x, y)
        tensors = _feed_tensors(data, batch_size, num_epochs, shuffle, num_threads, "numpy_input")
        if isinstance(x, np.ndarray):
            features = tensors[_DIRECT_INPUT_KEY]
        else:
            features = {k: tensors[k] for k in feature_keys}
        if target_keys is None:
            return features
        if isinstance(target_keys, str):
            return features, tensors[target_keys]
        return features, {k: tensors[k] for k in target_keys}

    return input_fn


def _pandas():
    if pandas is None:
        raise TypeError(
            "pandas_input_fn should not be called without pandas installed (pip install pandas)"
        )
    return pandas


def pandas_input_fn(
    x,
    y=None,
    batch_size=128,
    num_epochs=1,
    shuffle=None,
    queue_capacity=1000,  # noqa: ARG001 - no queue here
    num_threads=1,
    target_column="target",
):
    """As ``numpy_input_fn``, over the columns of the DataFrame ``x`` (features keyed by
    column name) and the Series (or DataFrame) ``y``, whose index must equal ``x``'s."""
    pd = _pandas()
    _check_args(batch_size, num_epochs, shuffle, num_threads)
    if not isinstance(target_column, str):
        raise TypeError(f"target_column must be a string type; got {type(target_column)}")
    if not isinstance(x, pd.DataFrame):
        raise TypeError(f"x must be a pandas DataFrame; got {type(x).__name__}")
    if y is not None:
        if target_column in x:
            raise ValueError(
                f"Cannot use name {target_column} for target column: DataFrame already has a "
                f"column with that name: {list(x.columns)}"
            )
        if not np.array_equal(x.index, y.index):
            raise ValueError(
                f"Index for x and y are mismatched.\nIndex for x: {x.index}\n"
                f"Index for y: {y.index}\n"
            )
    features = {str(c): x[c].to_numpy() for c in x.columns}
    if y is None:
        targets = None
    elif isinstance(y, pd.DataFrame):
        targets = {str(c): y[c].to_numpy() for c in y.columns}
    else:
        targets = y.to_numpy()
    return numpy_input_fn(
        features, targets, batch_size, num_epochs, shuffle, num_threads=num_threads
    )
