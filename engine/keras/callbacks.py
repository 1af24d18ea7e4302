"""``tf.keras.callbacks``: hooks ``fit`` calls around epochs and batches — ``History``,
``EarlyStopping``, ``ModelCheckpoint``, ``LearningRateScheduler``, ``ReduceLROnPlateau``,
``CSVLogger``, ``TerminateOnNaN``, ``LambdaCallback``, ``TensorBoard`` (epoch scalars)."""

from __future__ import annotations

import csv
import os

import numpy as np

from engine.keras import backend
from engine.summary.proto import Summary
from engine.summary.writer import FileWriter

__all__ = [
    "CSVLogger",
    "Callback",
    "CallbackList",
    "EarlyStopping",
    "History",
    "LambdaCallback",
    "LearningRateScheduler",
    "ModelCheckpoint",
    "ReduceLROnPlateau",
    "TensorBoard",
    "TerminateOnNaN",
]


class Callback:
    """The base: every hook does nothing; ``self.model`` and ``self.params`` are set by fit."""

    def __init__(self):
        self.model = None
        self.params = {}
        self.validation_data = None

    def set_params(self, params) -> None:
        self.params = params

    def set_model(self, model) -> None:
        self.model = model

    def on_epoch_begin(self, epoch, logs=None): ...
    def on_epoch_end(self, epoch, logs=None): ...
    def on_batch_begin(self, batch, logs=None): ...
    def on_batch_end(self, batch, logs=None): ...
    def on_train_batch_begin(self, batch, logs=None): ...
    def on_train_batch_end(self, batch, logs=None): ...
    def on_train_begin(self, logs=None): ...
    def on_train_end(self, logs=None): ...


class CallbackList:
    def __init__(self, callbacks):
        self.callbacks = list(callbacks)

    def _each(self, hook, *args) -> None:
        for cb in self.callbacks:
            getattr(cb, hook)(*args)

    def on_epoch_begin(self, epoch, logs=None):
        self._each("on_epoch_begin", epoch, logs or {})

    def on_epoch_end(self, epoch, logs=None):
        self._each("on_epoch_end", epoch, logs or {})

    def on_batch_begin(self, batch, logs=None):
        self._each("on_batch_begin", batch, logs or {})
        self._each("on_train_batch_begin", batch, logs or {})

    def on_batch_end(self, batch, logs=None):
        self._each("on_batch_end", batch, logs or {})
        self._each("on_train_batch_end", batch, logs or {})

    def on_train_begin(self, logs=None):
        self._each("on_train_begin", logs or {})

    def on_train_end(self, logs=None):
        self._each("on_train_end", logs or {})


class History(Callback):
    """``history.history``: each logged value per epoch; ``history.epoch``: the epochs."""

    def __init__(self):
        super().__init__()
        self.epoch: list = []
        self.history: dict = {}

    def on_train_begin(self, logs=None):  # noqa: ARG002
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)


def configure(model, callbacks, params):
    """(the History, the CallbackList fit calls) with model and params set."""
    history = History()
    given = list(callbacks or [])
    for cb in given:
        if not isinstance(cb, Callback):
            raise TypeError(f"callbacks must be Callback instances, got {cb!r}")
    cbl = CallbackList([*given, history])
    for cb in cbl.callbacks:
        cb.set_model(model)
        cb.set_params(params)
    return history, cbl


class _Monitor(Callback):
    """What EarlyStopping, ModelCheckpoint and ReduceLROnPlateau share: which way is better."""

    def __init__(self, monitor, mode, min_delta=0.0):
        super().__init__()
        if mode not in ("auto", "min", "max"):
            raise ValueError(f"mode must be 'auto', 'min' or 'max', got {mode!r}")
        self.monitor = monitor
        if mode == "max" or (
            mode == "auto"
            and ("acc" in monitor or monitor.startswith("fmeasure") or "auc" in monitor)
        ):
            self.monitor_op, self.min_delta = np.greater, abs(min_delta)
        else:
            self.monitor_op, self.min_delta = np.less, -abs(min_delta)
        self.best = -np.inf if self.monitor_op is np.greater else np.inf

    def _current(self, logs):
        value = (logs or {}).get(self.monitor)
        if value is None:
            print(
                f"WARNING: {type(self).__name__} conditioned on metric `{self.monitor}` which "
                f"is not available. Available metrics are: {','.join(logs or {})}"
            )
        return value

    def _improved(self, value) -> bool:
        return bool(self.monitor_op(value - self.min_delta, self.best))


class EarlyStopping(_Monitor):
    """Stops training once ``monitor`` has not improved for ``patience`` epochs."""

    def __init__(
        self,
        monitor="val_loss",
        min_delta=0,
        patience=0,
        verbose=0,
        mode="auto",
        baseline=None,
        restore_best_weights=False,
    ):
        super().__init__(monitor, mode, min_delta)
        self.patience, self.verbose = int(patience), verbose
        self.baseline, self.restore_best_weights = baseline, restore_best_weights
        self.wait, self.stopped_epoch, self.best_weights = 0, 0, None

    def on_train_begin(self, logs=None):  # noqa: ARG002
        self.wait, self.stopped_epoch = 0, 0
        if self.baseline is not None:
            self.best = self.baseline
        else:
            self.best = -np.inf if self.monitor_op is np.greater else np.inf

    def on_epoch_end(self, epoch, logs=None):
        value = self._current(logs)
        if value is None:
            return
        if self._improved(value):
            self.best, self.wait = value, 0
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            return
        self.wait += 1
        if self.wait >= self.patience:
            self.stopped_epoch = epoch
            self.model.stop_training = True
            if self.restore_best_weights and self.best_weights is not None:
                self.model.set_weights(self.best_weights)

    def on_train_end(self, logs=None):  # noqa: ARG002
        if self.stopped_epoch > 0 and self.verbose > 0:
            print(f"Epoch {self.stopped_epoch + 1:05d}: early stopping")


class ModelCheckpoint(_Monitor):
    """Saves the model (HDF5, as TF1's ``model.save``) or with ``save_weights_only`` its
    weights (a TF checkpoint, or HDF5 for an ``.h5`` path) after each epoch, or only when
    ``monitor`` improves; ``filepath`` may hold ``{epoch:02d}`` and ``{val_loss:.2f}``-style
    fields."""

    def __init__(
        self,
        filepath,
        monitor="val_loss",
        verbose=0,
        save_best_only=False,
        save_weights_only=False,
        mode="auto",
        save_freq="epoch",
        period=1,
    ):
        super().__init__(monitor, mode)
        self.filepath = os.fspath(filepath)
        self.verbose, self.save_best_only = verbose, save_best_only
        self.save_weights_only = save_weights_only
        self.period, self._since = int(period), 0
        if save_freq != "epoch":
            raise ValueError("ModelCheckpoint(save_freq=...) supports 'epoch' only")

    def on_epoch_end(self, epoch, logs=None):
        self._since += 1
        if self._since < self.period:
            return
        self._since = 0
        path = self.filepath.format(epoch=epoch + 1, **(logs or {}))
        if self.save_best_only:
            value = self._current(logs)
            if value is None:
                return
            if not self._improved(value):
                if self.verbose:
                    print(
                        f"\nEpoch {epoch + 1:05d}: {self.monitor} did not improve from "
                        f"{self.best:.5f}"
                    )
                return
            if self.verbose:
                print(
                    f"\nEpoch {epoch + 1:05d}: {self.monitor} improved from {self.best:.5f} "
                    f"to {value:.5f}, saving model to {path}"
                )
            self.best = value
        elif self.verbose:
            print(f"\nEpoch {epoch + 1:05d}: saving model to {path}")
        if self.save_weights_only:
            self.model.save_weights(path, overwrite=True)
        else:  # TF1's model.save writes HDF5 whatever the path's extension
            self.model.save(path, overwrite=True, save_format="h5")


class LearningRateScheduler(Callback):
    """Sets the optimizer's learning rate to ``schedule(epoch[, lr])`` before each epoch."""

    def __init__(self, schedule, verbose=0):
        super().__init__()
        self.schedule, self.verbose = schedule, verbose

    def on_epoch_begin(self, epoch, logs=None):  # noqa: ARG002
        opt = self.model.optimizer
        if not hasattr(opt, "lr"):
            raise ValueError('Optimizer must have a "lr" attribute.')
        try:
            lr = self.schedule(epoch, float(backend.get_value(opt.lr)))
        except TypeError:
            lr = self.schedule(epoch)
        if not isinstance(lr, (float, int, np.floating, np.integer)):
            raise ValueError('The output of the "schedule" function should be float.')
        backend.set_value(opt.lr, lr)
        if self.verbose:
            print(f"\nEpoch {epoch + 1:05d}: LearningRateScheduler setting learning rate to {lr}.")

    def on_epoch_end(self, epoch, logs=None):  # noqa: ARG002
        if logs is not None:
            logs["lr"] = float(backend.get_value(self.model.optimizer.lr))


class ReduceLROnPlateau(_Monitor):
    """Multiplies the learning rate by ``factor`` after ``patience`` epochs without
    improvement of ``monitor`` (never below ``min_lr``)."""

    def __init__(
        self,
        monitor="val_loss",
        factor=0.1,
        patience=10,
        verbose=0,
        mode="auto",
        min_delta=1e-4,
        cooldown=0,
        min_lr=0,
        **kwargs,
    ):
        super().__init__(monitor, mode, kwargs.pop("epsilon", min_delta))
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau does not support a factor >= 1.0. Got {factor}")
        self.factor, self.patience, self.verbose = factor, patience, verbose
        self.cooldown, self.min_lr = cooldown, min_lr
        self.wait, self.cooldown_counter = 0, 0

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        logs["lr"] = float(backend.get_value(self.model.optimizer.lr))
        value = self._current(logs)
        if value is None:
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if self._improved(value):
            self.best, self.wait = value, 0
        elif self.cooldown_counter <= 0:
            self.wait += 1
            if self.wait >= self.patience:
                old = logs["lr"]
                if old > self.min_lr:
                    new = max(old * self.factor, self.min_lr)
                    backend.set_value(self.model.optimizer.lr, new)
                    if self.verbose:
                        print(
                            f"\nEpoch {epoch + 1:05d}: ReduceLROnPlateau reducing learning "
                            f"rate to {new}."
                        )
                    self.cooldown_counter, self.wait = self.cooldown, 0


class TerminateOnNaN(Callback):
    def on_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not np.isfinite(loss):
            print(f"Batch {batch}: Invalid loss, terminating training")
            self.model.stop_training = True


class CSVLogger(Callback):
    """Appends each epoch's logs as a CSV row (``epoch`` first)."""

    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        self.filename, self.sep, self.append = os.fspath(filename), separator, append
        self._file, self._writer = None, None

    def on_train_begin(self, logs=None):  # noqa: ARG002
        exists = self.append and os.path.exists(self.filename)
        self._file = open(self.filename, "a" if self.append else "w", newline="")  # noqa: SIM115
        self._has_header = exists

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        keys = sorted(logs)
        if self._writer is None:
            self._writer = csv.DictWriter(
                self._file, fieldnames=["epoch", *keys], delimiter=self.sep
            )
            if not self._has_header:
                self._writer.writeheader()
        self._writer.writerow({"epoch": epoch, **{k: logs[k] for k in keys}})
        self._file.flush()

    def on_train_end(self, logs=None):  # noqa: ARG002
        if self._file is not None:
            self._file.close()
        self._file, self._writer = None, None


class LambdaCallback(Callback):
    """Callbacks from plain functions: ``LambdaCallback(on_epoch_end=lambda e, logs: ...)``."""

    def __init__(
        self,
        on_epoch_begin=None,
        on_epoch_end=None,
        on_batch_begin=None,
        on_batch_end=None,
        on_train_begin=None,
        on_train_end=None,
        **kwargs,
    ):
        super().__init__()
        hooks = dict(
            on_epoch_begin=on_epoch_begin,
            on_epoch_end=on_epoch_end,
            on_batch_begin=on_batch_begin,
            on_batch_end=on_batch_end,
            on_train_begin=on_train_begin,
            on_train_end=on_train_end,
            **kwargs,
        )
        for name, fn in hooks.items():
            if fn is not None:
                setattr(self, name, fn)


class TensorBoard(Callback):
    """Writes each epoch's logged values as TensorBoard scalars (and the graph once) under
    ``log_dir``; histograms, images and profiling are not written."""

    def __init__(self, log_dir="./logs", histogram_freq=0, write_graph=True, **kwargs):  # noqa: ARG002
        super().__init__()
        self.log_dir, self.write_graph = os.fspath(log_dir), write_graph
        self.writer = None

    def on_train_begin(self, logs=None):  # noqa: ARG002
        graph = self.model.outputs[0].graph if self.write_graph and self.model.outputs else None
        self.writer = FileWriter(self.log_dir, graph=graph)

    def on_epoch_end(self, epoch, logs=None):
        summary = Summary(
            value=[
                Summary.Value(tag=k, simple_value=float(v))
                for k, v in (logs or {}).items()
                if np.ndim(v) == 0
            ]
        )
        self.writer.add_summary(summary, epoch)
        self.writer.flush()

    def on_train_end(self, logs=None):  # noqa: ARG002
        if self.writer is not None:
            self.writer.close()
