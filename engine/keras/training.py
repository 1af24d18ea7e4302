"""``compile`` and the training graph of a Keras model in TF1 graph mode: target and
sample-weight placeholders, the total loss (each output's weighted loss, times its loss weight,
plus the layers' regularization losses), the metrics' per-batch sums, and the optimizer's
update ops. The loops (``fit``, ``evaluate``, ``predict``) are in
:mod:`engine.keras.training_loops`."""

from __future__ import annotations

from engine.framework import graph as ops
from engine.framework.graph import Tensor
from engine.keras import backend, dataset_loops, losses, metrics, optimizers
from engine.keras import training_loops as loops
from engine.keras.relevance import feedable_from
from engine.ops import array as array_ops
from engine.ops import math as math_ops

__all__ = ["Training"]


def _per_output(value, names: list, what: str) -> list:
    """``value`` given once, as a list (one per output) or as a dict by output name."""
    if isinstance(value, dict):
        unknown = set(value) - set(names)
        if unknown:
            raise ValueError(
                f"Unknown entries in {what} dictionary: {sorted(unknown)}. Only "
                f"expected following keys: {names}"
            )
        return [value.get(n) for n in names]
    if isinstance(value, (list, tuple)) and what != "metrics":
        if len(value) != len(names):
            raise ValueError(
                f"When passing a list as {what}, it should have one entry per "
                f"model output. The model has {len(names)} outputs, but you "
                f"passed {what}={value}"
            )
        return list(value)
    return [value] * len(names)


def _as_seq(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


class _Graph:
    """What compile builds: placeholders and fetches for the train/test/predict steps."""

    def __init__(self):
        self.targets: list = []
        self.sample_weights: list = []
        self.fed: list = []  # indices of the outputs with a loss (those fed targets)
        self.total_loss = None
        self.output_losses: list = []
        self.metric_objs: list = []  # (name, Metric)
        self.metric_stats: list = []  # per metric, its batch sums
        self.train_updates: list = []
        self.names: list = []
        self.step_fns: dict = {}  # (session id, train) -> (session, compiled step)


class Training:
    """The training half of ``Model``: compile, fit, evaluate, predict and friends."""

    def __init__(self):
        self._compiled = None  # compile's arguments
        self._train_graph = None
        self.optimizer = None
        self.history = None

    # -- compile ---------------------------------------------------------------------------

    def compile(
        self,
        optimizer="rmsprop",
        loss=None,
        metrics=None,
        loss_weights=None,
        sample_weight_mode=None,
        weighted_metrics=None,
        target_tensors=None,
        **kwargs,
    ):
        """Configures training: the optimizer (a name, a Keras or a tf.train optimizer), the
        loss (one, or one per output as a list or dict), metrics and loss weights."""
        if kwargs:
            raise TypeError(f"Invalid keyword argument(s) in `compile`: {sorted(kwargs)}")
        modes = sample_weight_mode
        for mode in modes.values() if isinstance(modes, dict) else _as_seq(modes):
            if mode not in (None, "temporal"):
                raise ValueError(
                    f"sample_weight_mode must be None or 'temporal', got {sample_weight_mode!r}"
                )
        if target_tensors is not None:
            raise ValueError(
                "compile(target_tensors=...) is not supported: feed targets to fit instead"
            )
        self.optimizer = optimizers.get(optimizer)
        self._compiled = {
            "loss": loss,
            "metrics": metrics,
            "loss_weights": loss_weights,
            "weighted_metrics": weighted_metrics,
            "sample_weight_mode": sample_weight_mode,
        }
        self._train_graph = None
        if self.outputs:
            try:
                self._build_train_graph()
            except ValueError:
                self._compiled = None
                raise

    @property
    def loss(self):
        return self._compiled["loss"] if self._compiled else None

    @property
    def metrics_names(self) -> list:
        g = self._train_graph
        return list(g.names) if g is not None else ["loss"]

    def _sample_weight_modes(self) -> list:
        """Per output: "temporal" (weights per sample and timestep) or None."""
        mode = self._compiled.get("sample_weight_mode") if self._compiled else None
        return _per_output(mode, self.output_names, "sample_weight_mode")

    def _require_compiled(self, what: str) -> None:
        if self._compiled is None:
            raise RuntimeError(
                f"You must compile your model before {what}. Use `model.compile(optimizer, loss)`."
            )

    def _build_train_graph(self) -> _Graph:
        if self._train_graph is not None:
            return self._train_graph
        g = _Graph()
        names = self.output_names
        with self.outputs[0].graph.as_default():
            loss_fns = [
                losses.get(x) if x is not None else None
                for x in _per_output(self._compiled["loss"], names, "loss")
            ]
            weights = _per_output(self._compiled["loss_weights"] or 1.0, names, "loss_weights")
            totals = []
            modes = self._sample_weight_modes()
            with ops.name_scope(None):
                for name, out, fn, w, mode in zip(names, self.outputs, loss_fns, weights, modes):
                    self._add_output_loss(g, name, out, fn, w, totals, mode)
                with ops.name_scope("loss"):
                    # Only losses/updates of this model's inputs (not a nested model's own).
                    own_losses = feedable_from(self.losses, self.inputs)
                    reg = [math_ops.cast(x, backend.floatx()) for x in own_losses]
                    if not totals and not reg:
                        raise ValueError(
                            "The model cannot be compiled because it has no loss to optimize."
                        )
                    total = (totals + reg)[0]
                    for t in (totals + reg)[1:]:
                        total = total + t
                    g.total_loss = total
                self._add_metrics(g, names, loss_fns)
                with ops.name_scope("training"):
                    params = self.trainable_weights
                    g.train_updates = list(self.optimizer.get_updates(g.total_loss, params))
                    own_updates = feedable_from(self.updates, self.inputs)
                    g.train_updates += [u.op if isinstance(u, Tensor) else u for u in own_updates]
        g.names = (
            ["loss"]
            + ([f"{names[i]}_loss" for i in g.fed] if len(names) > 1 else [])
            + [n for n, _ in g.metric_objs]
        )
        self._train_graph = g
        return g

    def _add_output_loss(self, g, name, out, fn, weight, totals, mode=None) -> None:
        rank = out.shape.rank
        if rank is None:
            raise ValueError(f"The output {name} has an unknown rank; Keras needs it")
        with ops.name_scope(None):
            target = array_ops.placeholder(
                out.dtype.base_dtype, shape=(None,) * rank, name=f"{name}_target"
            )
            sw = array_ops.placeholder(
                backend.floatx(),
                shape=(None, None) if mode == "temporal" else (None,),
                name=f"{name}_sample_weights",
            )
        g.targets.append(target)
        g.sample_weights.append(sw)
        if fn is None:
            g.output_losses.append(None)
            return
        g.fed.append(len(g.targets) - 1)
        with ops.name_scope(f"loss/{name}_loss"):
            if isinstance(fn, losses.Loss):
                value = fn(target, out, sample_weight=sw)
            else:
                value = losses.reduce_weighted(fn(target, out), sw)
        g.output_losses.append(value)
        totals.append(value * weight if weight != 1.0 else value)

    def _add_metrics(self, g, names, loss_fns) -> None:
        plain = _per_output(self._compiled["metrics"] or [], names, "metrics")
        weighted = _per_output(self._compiled["weighted_metrics"] or [], names, "metrics")
        seen = set()
        for i, name in enumerate(names):
            if i not in g.fed:  # TF1 skips the metrics of outputs without a loss
                continue
            for ids, use_w in ((plain[i], False), (weighted[i], True)):
                for ident in ids if isinstance(ids, (list, tuple)) else [ids]:
                    if ident is None:
                        continue
                    m = metrics.resolve(ident, loss_fns[i], self.outputs[i])
                    # TF1: "weighted_" joins the metric's name, then the output's name
                    # prefixes it (reg_weighted_mse).
                    full = f"weighted_{m.name}" if use_w else m.name
                    full = full if len(names) == 1 else f"{name}_{full}"
                    if full in seen:
                        continue
                    seen.add(full)
                    with ops.name_scope(f"metrics/{m.name}"):
                        stats = m.batch_stats(
                            g.targets[i], self.outputs[i], g.sample_weights[i] if use_w else None
                        )
                    g.metric_objs.append((full, m))
                    g.metric_stats.append(stats)

    # -- the public loops ------------------------------------------------------------------

    def fit(
        self,
        x=None,
        y=None,
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
        """Trains for ``epochs`` passes over ``x``/``y``; returns the History."""
        fit = dataset_loops.fit_function(x) or loops.fit
        return fit(
            self,
            x,
            y,
            batch_size=batch_size,
            epochs=epochs,
            verbose=verbose,
            callbacks=callbacks,
            validation_split=validation_split,
            validation_data=validation_data,
            shuffle=shuffle,
            class_weight=class_weight,
            sample_weight=sample_weight,
            initial_epoch=initial_epoch,
            steps_per_epoch=steps_per_epoch,
            validation_steps=validation_steps,
            validation_freq=validation_freq,
            **kwargs,
        )

    def evaluate(
        self,
        x=None,
        y=None,
        batch_size=None,
        verbose=1,
        sample_weight=None,
        steps=None,
        callbacks=None,
        **kwargs,
    ):
        """The loss (and metrics) over ``x``/``y``: a scalar, or a list as ``metrics_names``."""
        if dataset_loops.is_step_input(x):
            del callbacks
            return dataset_loops.evaluate(self, x, y, batch_size, verbose, sample_weight, steps)
        return loops.evaluate(
            self,
            x,
            y,
            batch_size=batch_size,
            verbose=verbose,
            sample_weight=sample_weight,
            steps=steps,
            callbacks=callbacks,
            **kwargs,
        )

    def predict(self, x, batch_size=None, verbose=0, steps=None, callbacks=None, **kwargs):
        """The model's outputs for ``x``, batch by batch (an array, or a list of arrays)."""
        del callbacks  # predict runs no callbacks here
        if dataset_loops.is_step_input(x):
            return dataset_loops.predict(self, x, batch_size, verbose, steps)
        return loops.predict(self, x, batch_size=batch_size, verbose=verbose, steps=steps, **kwargs)

    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None, reset_metrics=True):  # noqa: ARG002 - metrics are per batch here
        return loops.run_one_batch(self, x, y, sample_weight, class_weight, train=True)

    def test_on_batch(self, x, y=None, sample_weight=None, reset_metrics=True):  # noqa: ARG002
        return loops.run_one_batch(self, x, y, sample_weight, None, train=False)

    def predict_on_batch(self, x):
        return loops.predict(self, x, batch_size=None, whole=True)

    def fit_generator(
        self,
        generator,
        steps_per_epoch=None,
        epochs=1,
        verbose=1,
        callbacks=None,
        validation_data=None,
        validation_steps=None,
        class_weight=None,
        initial_epoch=0,
        shuffle=True,
        **kwargs,
    ):  # noqa: ARG002
        freq = kwargs.pop("validation_freq", 1)
        del kwargs  # workers, max_queue_size, use_multiprocessing: batches are made in order
        return dataset_loops.fit_generator(
            self,
            generator,
            steps_per_epoch,
            epochs,
            verbose,
            callbacks=callbacks,
            validation_data=validation_data,
            validation_steps=validation_steps,
            class_weight=class_weight,
            initial_epoch=initial_epoch,
            shuffle=shuffle,
            validation_freq=freq,
        )

    def evaluate_generator(self, generator, steps=None, verbose=0, **kwargs):  # noqa: ARG002
        return dataset_loops.evaluate(self, generator, verbose=verbose, steps=steps)

    def predict_generator(self, generator, steps=None, verbose=0, **kwargs):  # noqa: ARG002
        return dataset_loops.predict(self, generator, verbose=verbose, steps=steps)

    def reset_metrics(self) -> None:
        """Nothing to reset: the loops accumulate metrics per call."""

    # -- weights on disk -------------------------------------------------------------------

    def save_weights(self, filepath, overwrite=True, save_format=None) -> None:
        loops.save_weights(self, filepath, overwrite=overwrite, save_format=save_format)

    def load_weights(self, filepath, by_name=False) -> None:
        loops.load_weights(self, filepath, by_name=by_name)
