"""The loops behind ``fit``, ``evaluate`` and ``predict`` (TF1 Keras' array loops): inputs
checked against the model's, batches fed to one session run each, losses and metrics
accumulated over the epoch (each batch weighted by its size, so an epoch's value is the mean
over its samples), callbacks and the progress display."""

from __future__ import annotations

import os

import numpy as np

from engine.keras import backend, hdf5_weights
from engine.keras import callbacks as cbks
from engine.keras.data_adapter import (
    batches,
    check_array_lengths,
    class_weights_to_samples,
    slice_arrays,
    standardize_inputs,
    standardize_targets,
)
from engine.keras.progbar import Progbar
from engine.training.saver import Saver

__all__ = ["evaluate", "fit", "predict", "run_one_batch"]


def _feed(model, g, xs, ys=None, sws=None, phase=None) -> dict:
    feed = dict(zip(model.inputs, xs))
    if ys is not None:
        feed.update(zip([g.targets[i] for i in g.fed], ys))
        feed.update(zip([g.sample_weights[i] for i in g.fed], sws))
    lp = backend.learning_phase_placeholder()
    if phase is not None and lp is not None:
        feed[lp] = phase
    return feed


def _fetches(g, train: bool) -> list:
    fetch = [g.total_loss] + [x for x in g.output_losses if x is not None]
    if len(g.output_losses) == 1:
        fetch = fetch[:1]
    stats = [s for group in g.metric_stats for s in group]
    return [fetch, stats, g.train_updates if train else []]


class _Aggregator:
    """Sums batch losses (times batch size) and metric sums over an epoch."""

    def __init__(self, g):
        self.g = g
        self.loss_sums = None
        self.stats = None
        self.samples = 0
        self.batches = 0

    def add(self, loss_values, stats, n) -> None:
        # The total loss counts each sample; each output's loss counts each batch once (TF1
        # Keras keeps those in unweighted Mean metrics).
        vals = np.asarray(loss_values, np.float64).copy()
        vals[0] *= n
        self.loss_sums = vals if self.loss_sums is None else self.loss_sums + vals
        self.batches += 1
        arr = [np.asarray(s, np.float64) for s in stats]
        self.stats = arr if self.stats is None else [a + b for a, b in zip(self.stats, arr)]
        self.samples += n

    def results(self) -> list:
        out = []
        if self.loss_sums is not None:
            out = [self.loss_sums[0] / max(self.samples, 1)]
            out += list(self.loss_sums[1:] / max(self.batches, 1))
        i = 0
        for (_, m), group in zip(self.g.metric_objs, self.g.metric_stats):
            out.append(m.result_of(self.stats[i : i + len(group)]))
            i += len(group)
        return [float(v) if np.ndim(v) == 0 else v for v in out]


def _prepare(model, x, y, sample_weight, class_weight, what: str):
    model._require_compiled(what)
    xs = standardize_inputs(model, x)
    if not model.outputs:
        model._build_from_data(xs)
        xs = standardize_inputs(model, x)
    g = model._build_train_graph()
    ys, sws = _targets(model, g, y, sample_weight, class_weight, what)
    check_array_lengths(xs, ys, sws)
    return g, xs, ys, sws


def _targets(model, g, y, sample_weight, class_weight, what: str):
    """Targets and weights of the outputs compiled with a loss (none when every loss comes
    from ``add_loss``, as in a VAE: then ``y`` must be None)."""
    if not g.fed:
        if y is not None:
            raise ValueError(
                "Error when checking model target: expected no data (the model has no "
                f"output compiled with a loss), but got {type(y).__name__}"
            )
        return [], []
    if y is None:
        raise ValueError(f"{what} needs targets `y` for a model compiled with a loss")
    ys = standardize_targets(model, y, g.fed)
    return ys, class_weights_to_samples(model, ys, sample_weight, class_weight, g.fed)


def _step_fn(model, g, train: bool):
    """``fn(xs, ys, sws) -> (loss values, metric sums)``: one batch through a callable the
    session compiled once per (session, train or test)."""
    session = backend.get_session()
    key = (id(session), bool(train))
    cached = g.step_fns.get(key)
    if cached is not None and cached[0] is session:
        return cached[1]
    losses, stats, updates = _fetches(g, train)
    lp = backend.learning_phase_placeholder()
    feeds = list(model.inputs) + [g.targets[i] for i in g.fed]
    feeds += [g.sample_weights[i] for i in g.fed]
    feeds += [lp] if lp is not None else []
    call = session.make_callable(losses + stats + updates, feed_list=feeds)
    n_loss, n_stats = len(losses), len(stats)

    def fn(xs, ys, sws):
        args = [*xs, *ys, *sws] + ([bool(train)] if lp is not None else [])
        out = call(*args)
        return out[:n_loss], out[n_loss : n_loss + n_stats]

    g.step_fns[key] = (session, fn)
    return fn


def _run_epoch(model, g, arrays, batch_size, index, train, callbacks, progbar):
    xs, ys, sws = arrays
    agg = _Aggregator(g)
    step = _step_fn(model, g, train)
    for b, idx in enumerate(batches(index, batch_size)):
        xb, yb, wb = (slice_arrays(a, idx) for a in (xs, ys, sws))
        logs = {"batch": b, "size": len(idx)}
        if callbacks is not None:
            callbacks.on_batch_begin(b, logs)
        loss_values, stats = step(xb, yb, wb)
        agg.add(loss_values, stats, len(idx))
        if callbacks is not None:
            logs.update(zip(g.names, _batch_values(g, loss_values, stats)))
            callbacks.on_batch_end(b, logs)
        if progbar is not None:
            progbar.update(agg.samples, list(zip(g.names, agg.results())), finalize=False)
        if train and model.stop_training:
            break
    return agg.results()


def _batch_values(g, loss_values, stats) -> list:
    out, i = list(loss_values), 0
    for (_, m), group in zip(g.metric_objs, g.metric_stats):
        out.append(m.result_of([np.asarray(s, np.float64) for s in stats[i : i + len(group)]]))
        i += len(group)
    return out


def _split_validation(model, arrays, validation_split, validation_data, sample_weight):
    xs, ys, sws = arrays
    if validation_data is not None:
        if not isinstance(validation_data, (list, tuple)) or len(validation_data) not in (2, 3):
            raise ValueError(
                "When passing validation_data, it must contain 2 (x_val, y_val) or 3 "
                f"(x_val, y_val, val_sample_weights) items, however it contains "
                f"{len(validation_data) if isinstance(validation_data, (list, tuple)) else 1}"
            )
        vx = standardize_inputs(model, validation_data[0])
        vw = validation_data[2] if len(validation_data) == 3 else None
        vy, vw = _targets(
            model, model._build_train_graph(), validation_data[1], vw, None, "validation"
        )
        check_array_lengths(vx, vy, vw)
        return arrays, (vx, vy, vw)
    if validation_split:
        if not 0 < validation_split < 1:
            raise ValueError(f"validation_split must be in (0, 1), got {validation_split}")
        n = len(xs[0])
        split = int(n * (1.0 - validation_split))
        head = tuple([a[:split] for a in group] for group in (xs, ys, sws))
        tail = tuple([a[split:] for a in group] for group in (xs, ys, sws))
        return head, tail
    del sample_weight
    return arrays, None


def fit(
    model,
    x,
    y,
    batch_size=None,
    epochs=1,
    verbose=1,
    callbacks=None,
    validation_split=0.0,
    validation_data=None,
    shuffle=True,
    class_weight=None,
    sample_weight=None,
    initial_epoch=0,
    steps_per_epoch=None,
    validation_steps=None,
    validation_freq=1,
    **kwargs,
):
    if kwargs:
        raise TypeError(f"Unrecognized keyword arguments: {sorted(kwargs)}")
    if steps_per_epoch is not None or validation_steps is not None:
        raise ValueError(
            "steps_per_epoch/validation_steps apply to datasets and generators; "
            "with arrays, use batch_size (or fit_generator)"
        )
    g, xs, ys, sws = _prepare(model, x, y, sample_weight, class_weight, "training")
    batch_size = _batch_size(batch_size)
    train, val = _split_validation(
        model, (xs, ys, sws), validation_split, validation_data, sample_weight
    )
    n = len(train[0][0])
    if verbose and val is not None:
        print(f"Train on {n} samples, validate on {len(val[0][0])} samples")
    elif verbose:
        print(f"Train on {n} samples")
    val_names = [f"val_{name}" for name in g.names] if val is not None else []
    history, cb = cbks.configure(
        model,
        callbacks,
        {
            "batch_size": batch_size,
            "epochs": epochs,
            "steps": None,
            "samples": n,
            "verbose": verbose,
            "do_validation": val is not None,
            "metrics": list(g.names) + val_names,
        },
    )
    model.stop_training = False
    cb.on_train_begin()
    for epoch in range(initial_epoch, epochs):
        cb.on_epoch_begin(epoch)
        index = np.arange(n)
        if shuffle == "batch":
            index = _batch_shuffle(index, batch_size)
        elif shuffle:
            np.random.shuffle(index)
        if verbose:
            print(f"Epoch {epoch + 1}/{epochs}")
        bar = _progbar(n, verbose, g)
        values = _run_epoch(model, g, train, batch_size, index, True, cb, bar)
        logs = dict(zip(g.names, values))
        if val is not None and (epoch + 1) % validation_freq == 0:
            vvalues = _run_epoch(
                model, g, val, batch_size, np.arange(len(val[0][0])), False, None, None
            )
            logs.update(zip(val_names, vvalues))
        if bar is not None:
            bar.finish(list(logs.items()))
        cb.on_epoch_end(epoch, logs)
        if model.stop_training:
            break
    cb.on_train_end()
    model.history = history
    return history


def _progbar(n, verbose, g):
    """The progress bar of an array loop (counting samples), or None when quiet."""
    if not verbose:
        return None
    return Progbar(n, verbose=verbose, stateful_metrics=g.names, unit_name="sample")


def _batch_size(batch_size) -> int:
    if batch_size is None:
        return 32
    if int(batch_size) <= 0:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size}")
    return int(batch_size)


def _batch_shuffle(index, batch_size):
    whole = len(index) // batch_size * batch_size
    head = index[:whole].reshape(-1, batch_size)
    np.random.shuffle(head)
    return np.append(head.flatten(), index[whole:])


def evaluate(
    model,
    x,
    y,
    batch_size=None,
    verbose=1,
    sample_weight=None,
    steps=None,
    callbacks=None,
    **kwargs,
):
    if kwargs:
        raise TypeError(f"Unrecognized keyword arguments: {sorted(kwargs)}")
    if steps is not None:
        raise ValueError("evaluate(steps=...) applies to datasets and generators")
    del callbacks
    g, xs, ys, sws = _prepare(model, x, y, sample_weight, None, "evaluating")
    n = len(xs[0])
    bar = _progbar(n, verbose, g)
    values = _run_epoch(
        model, g, (xs, ys, sws), _batch_size(batch_size), np.arange(n), False, None, bar
    )
    if bar is not None:
        bar.finish(list(zip(g.names, values)))
    values = [_scalar(v) for v in values]
    return values[0] if len(values) == 1 else values


def _scalar(v):
    return np.float32(v) if np.ndim(v) == 0 else np.asarray(v, np.float32)


def _predict_fn(model):
    """``fn(xs) -> outputs`` in inference mode, compiled once per session."""
    session = backend.get_session()
    cached = getattr(model, "_predict_cache", None)
    outs = tuple(model.outputs)
    if cached is not None and cached[0] is session and cached[1] == tuple(map(id, outs)):
        return cached[2]
    lp = backend.learning_phase_placeholder()
    call = session.make_callable(
        list(model.outputs), feed_list=list(model.inputs) + ([lp] if lp is not None else [])
    )

    def fn(xs):
        return call(*xs, *([False] if lp is not None else []))

    model._predict_cache = (session, tuple(map(id, outs)), fn)
    return fn


def predict(model, x, batch_size=None, verbose=0, steps=None, whole=False, **kwargs):
    if kwargs:
        raise TypeError(f"Unrecognized keyword arguments: {sorted(kwargs)}")
    del verbose
    if steps is not None:
        raise ValueError("predict(steps=...) applies to datasets and generators")
    xs = standardize_inputs(model, x)
    if not model.outputs:
        model._build_from_data(xs)
        xs = standardize_inputs(model, x)
    check_array_lengths(xs, [], [])
    n = len(xs[0])
    run = _predict_fn(model)
    size = n if whole else _batch_size(batch_size)
    chunks = [[] for _ in model.outputs]
    for idx in batches(np.arange(n), max(size, 1)):
        for c, o in zip(chunks, run(slice_arrays(xs, idx))):
            c.append(o)
    result = [np.concatenate(c) if c else np.zeros((0,)) for c in chunks]
    return result[0] if len(result) == 1 else result


def run_one_batch(model, x, y, sample_weight, class_weight, train: bool):
    g, xs, ys, sws = _prepare(
        model, x, y, sample_weight, class_weight, "training" if train else "evaluating"
    )
    session = backend.get_session()
    loss_values, stats, _ = session.run(
        _fetches(g, train), feed_dict=_feed(model, g, xs, ys, sws, phase=train)
    )
    values = [_scalar(v) for v in _batch_values(g, loss_values, stats)]
    return values[0] if len(values) == 1 else values


# -- weights on disk -----------------------------------------------------------------------


def _saver(model, by_name=False) -> Saver:
    weights = model.weights
    if not weights:
        raise ValueError(f"The model {model.name} has no weights to save or load")
    del by_name
    return Saver(var_list={w.op.name: w for w in weights}, write_version=2)


def save_weights(model, filepath, overwrite=True, save_format=None) -> None:
    """Writes the model's weights as a TF checkpoint at ``filepath`` (a prefix)."""
    filepath = os.fspath(filepath)
    if hdf5_weights.is_hdf5_path(filepath, save_format):
        return hdf5_weights.save_weights(model, filepath, overwrite)
    if save_format not in (None, "tf"):
        raise ValueError(f"save_format must be 'tf' or 'h5', got {save_format!r}")
    if not overwrite and os.path.exists(filepath + ".index"):
        raise FileExistsError(f"{filepath} exists and overwrite=False")
    _saver(model).save(backend.get_session(), filepath, write_meta_graph=False)


def load_weights(model, filepath, by_name=False) -> None:
    """Restores weights saved by :func:`save_weights` (matched by variable name)."""
    filepath = os.fspath(filepath)
    if hdf5_weights.is_hdf5_path(filepath) or hdf5_weights.is_hdf5_file(filepath):
        return hdf5_weights.load_weights(model, filepath, by_name=by_name)
    _saver(model, by_name).restore(backend.get_session(), filepath)
