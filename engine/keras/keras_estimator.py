"""``tf.keras.estimator.model_to_estimator``: a compiled Keras model as a TF1 ``Estimator``.

The estimator's ``model_fn`` clones the model (same layer and variable names) on the
features, computes the compiled loss per output (times its loss weight, plus the layers'
regularization losses), trains with the model's optimizer, evaluates the compiled metrics as
streaming ``tf.metrics``, and predicts and exports ``{output layer name: output}``. As TF 1.15
does, the Keras model's current weights become the estimator's first checkpoint (global step
0, ``keras_model.ckpt`` in ``model_dir``), so training continues from them.

>>> est = tf.keras.estimator.model_to_estimator(keras_model=model, model_dir="/tmp/m")
>>> est.train(input_fn, steps=100)
"""

from __future__ import annotations

import os

from engine import metrics as tf_metrics
from engine.estimator import Estimator
from engine.estimator_export import PredictOutput
from engine.estimator_spec import EstimatorSpec, ModeKeys
from engine.framework import graph as ops
from engine.framework.graph import Tensor
from engine.keras import backend, losses
from engine.keras import metrics as keras_metrics
from engine.keras.data_adapter import _is_sparse_loss
from engine.keras.hdf5 import load_model
from engine.keras.model_config import clone_model
from engine.keras.training import _per_output
from engine.ops import array as array_ops
from engine.ops import math as math_ops
from engine.ops.control_flow import group
from engine.session import Session
from engine.training import saver as saver_lib
from engine.training import training_util
from engine.variables import global_variables_initializer

__all__ = ["model_to_estimator"]

_FIRST_CHECKPOINT = "keras_model.ckpt"


def _by_name(value, names: list, what: str) -> list:
    """One tensor per name from a dict keyed by those names, a list, or a single tensor."""
    if isinstance(value, dict):
        missing = [n for n in names if n not in value]
        if missing:
            raise KeyError(
                f"The dictionary passed into {what} does not have the expected "
                f"{what} keys defined in the keras model. Expected keys: {names}, "
                f"{what} keys: {sorted(value)}"
            )
        return [value[n] for n in names]
    if isinstance(value, (list, tuple)):
        if len(value) != len(names):
            raise ValueError(f"The model has {len(names)} {what}s ({names}), got {len(value)}")
        return list(value)
    if len(names) != 1:
        raise ValueError(
            f"The model has {len(names)} {what}s ({names}): pass a dict keyed by their names"
        )
    return [value]


class _KerasModelFn:
    """The estimator's model_fn over a compiled Keras model."""

    def __init__(self, keras_model):
        self.keras_model = keras_model
        self.last_clone = None

    def __call__(self, features, labels, mode):
        source = self.keras_model
        model = clone_model(source)
        self.last_clone = model
        inputs = _by_name(features, source.input_names, "input")
        inputs = [
            math_ops.cast(t, s.dtype) if isinstance(t, Tensor) and t.dtype != s.dtype else t
            for t, s in zip(inputs, source.inputs)
        ]
        outputs = model(inputs if len(inputs) > 1 else inputs[0], training=mode == ModeKeys.TRAIN)
        outputs = outputs if isinstance(outputs, list) else [outputs]
        predictions = dict(zip(source.output_names, outputs))
        if mode == ModeKeys.PREDICT:
            return EstimatorSpec(
                mode,
                predictions=predictions,
                export_outputs={"serving_default": PredictOutput(predictions)},
            )
        targets = _by_name(labels, source.output_names, "label")
        loss = self._loss(model, outputs, targets)
        eval_ops = self._metrics(outputs, targets)
        train_op = None
        if mode == ModeKeys.TRAIN:
            updates = source.optimizer.get_updates(loss, model.trainable_weights)
            updates += [
                u.op if isinstance(u, Tensor) else u for u in _not_from(model.updates, model.inputs)
            ]
            with ops.control_dependencies(updates):
                step = training_util.get_global_step()
                train_op = group(*updates, step.assign_add(1).op)
        return EstimatorSpec(
            mode, predictions=predictions, loss=loss, train_op=train_op, eval_metric_ops=eval_ops
        )

    def _loss(self, model, outputs, targets):
        compiled = self.keras_model._compiled
        names = self.keras_model.output_names
        fns = _per_output(compiled["loss"], names, "loss")
        weights = _per_output(compiled["loss_weights"] or 1.0, names, "loss_weights")
        total = None
        with ops.name_scope("loss"):
            for fn, w, out, target in zip(fns, weights, outputs, targets):
                if fn is None:
                    continue
                fn = losses.get(fn) if not isinstance(fn, losses.Loss) else fn
                value = (
                    fn(target, out)
                    if isinstance(fn, losses.Loss)
                    else losses.reduce_weighted(fn(target, out), None)
                )
                value = value * w if w != 1.0 else value
                total = value if total is None else total + value
            for reg in _not_from(model.losses, model.inputs):
                total = total + math_ops.cast(reg, backend.floatx())
        return total

    def _metrics(self, outputs, targets) -> dict:
        compiled = self.keras_model._compiled
        names = self.keras_model.output_names
        loss_fns = _per_output(compiled["loss"], names, "loss")
        idents = _per_output(compiled["metrics"] or [], names, "metrics")
        ops_by_name = {}
        for i, name in enumerate(names):
            group_ = idents[i] if isinstance(idents[i], (list, tuple)) else [idents[i]]
            for ident in group_:
                if ident is None:
                    continue
                loss_fn = losses.get(loss_fns[i]) if isinstance(loss_fns[i], str) else loss_fns[i]
                m = keras_metrics.resolve(ident, loss_fn, outputs[i])
                key = m.name if len(names) == 1 else f"{name}_{m.name}"
                ops_by_name[key] = _streaming(m, targets[i], outputs[i])
        return ops_by_name


def _not_from(tensors, placeholders) -> list:
    """``tensors`` (or ops) that do not depend on ``placeholders``: the clone's own input
    placeholders feed the updates and activity losses of its first, symbolic call; only those
    of the call on the features belong to the estimator's graph."""
    stop = {id(p.op) for p in placeholders}
    out = []
    for t in tensors:
        op = t.op if isinstance(t, Tensor) else t
        seen, todo, hit = set(), [op], False
        while todo and not hit:
            o = todo.pop()
            if id(o) in seen:
                continue
            seen.add(id(o))
            hit = id(o) in stop
            todo.extend(i.op for i in o.inputs)
            todo.extend(o.control_inputs)
        if not hit:
            out.append(t)
    return out


def _streaming(metric, target, output):
    """(value, update_op) of a Keras metric as a TF1 streaming metric."""
    if isinstance(metric, keras_metrics.AUC):
        return tf_metrics.auc(
            target, output, num_thresholds=len(metric.thresholds), curve=metric.curve
        )
    if isinstance(metric, keras_metrics.Precision):
        return tf_metrics.precision(target, math_ops.greater(output, metric.thresholds[0]))
    if isinstance(metric, keras_metrics.Recall):
        return tf_metrics.recall(target, math_ops.greater(output, metric.thresholds[0]))
    if isinstance(metric, keras_metrics.MeanMetricWrapper):
        values = metric._fn(target, output, **metric._fn_kwargs)
        return tf_metrics.mean(math_ops.cast(values, backend.floatx()))
    raise ValueError(
        f"model_to_estimator cannot evaluate the metric {metric.name!r} "
        f"({type(metric).__name__}) as a streaming metric"
    )


def _save_first_checkpoint(estimator, model_fn, keras_model) -> None:
    """The Keras model's weights as the estimator's step-0 checkpoint, with the training
    graph's other variables (optimizer slots, global step) at their initial values."""
    if estimator.latest_checkpoint() is not None:
        return
    values = keras_model.get_weights()  # from Keras' session, before another graph is entered
    graph = ops.Graph()
    with graph.as_default():
        training_util.get_or_create_global_step()
        features = {
            n: array_ops.placeholder(t.dtype, t.shape, name=n)
            for n, t in zip(keras_model.input_names, keras_model.inputs)
        }
        labels = {
            n: array_ops.placeholder(
                t.dtype, (None,) if _is_sparse_loss(keras_model, i) else t.shape, name=f"{n}_y"
            )
            for i, (n, t) in enumerate(zip(keras_model.output_names, keras_model.outputs))
        }
        model_fn(features, labels, ModeKeys.TRAIN)
        clone = model_fn.last_clone
        with Session(graph=graph) as sess:
            sess.run(global_variables_initializer())
            for var, value in zip(clone.weights, values):
                var.load(value, sess)
            os.makedirs(estimator.model_dir, exist_ok=True)
            saver_lib.Saver().save(
                sess, os.path.join(estimator.model_dir, _FIRST_CHECKPOINT), global_step=0
            )


def model_to_estimator(
    keras_model=None,
    keras_model_path=None,
    custom_objects=None,
    model_dir=None,
    config=None,
    checkpoint_format="saver",
):
    """An ``Estimator`` that trains, evaluates, predicts and exports ``keras_model`` (a
    compiled Sequential or functional model, or an HDF5 file's path)."""
    if (keras_model is None) == (keras_model_path is None):
        raise ValueError("Either `keras_model` or `keras_model_path` needs to be provided.")
    if checkpoint_format not in ("saver", "checkpoint"):
        raise ValueError(
            f"Unknown checkpoint_format {checkpoint_format!r}: 'saver' or 'checkpoint'"
        )
    if keras_model_path is not None:
        keras_model = load_model(keras_model_path, custom_objects=custom_objects)
    if not getattr(keras_model, "_is_graph_network", False):
        raise NotImplementedError(
            "model_to_estimator takes Sequential and functional models; a subclassed model "
            "has no config to clone"
        )
    if keras_model._compiled is None:
        raise ValueError(
            "The given keras model has not been compiled yet. Please compile the "
            "model with `model.compile()` before calling `model_to_estimator()`."
        )
    model_fn = _KerasModelFn(keras_model)
    estimator = Estimator(model_fn=model_fn, model_dir=model_dir, config=config)
    _save_first_checkpoint(estimator, model_fn, keras_model)
    return estimator
