"""TF 1.15's ``tf.estimator``: ``Estimator`` over a ``model_fn``, with its modes, run config,
input functions (``tf.estimator.inputs``) and SavedModel export (``tf.estimator.export``).

Each of ``train``, ``evaluate``, ``predict`` and ``export_saved_model`` builds a fresh graph:
the graph-level seed from ``RunConfig.tf_random_seed``, a global step, the input_fn's
features and labels (tensors, or a ``tf.data.Dataset`` read through an initializable
iterator), then ``model_fn(features, labels, mode, params, config)`` (the arguments it names)
returning an ``EstimatorSpec``. Training runs a ``MonitoredTrainingSession`` in ``model_dir``
(a temporary directory when none is given) with TF's hooks: ``StopAtStepHook`` for
``steps``/``max_steps``, ``NanTensorHook``, a ``LoggingTensorHook`` of loss and step, and a
``CheckpointSaverHook``; a second ``train`` restores the newest checkpoint and carries on.
Evaluation restores the newest checkpoint, runs the metrics' update ops until the input ends
(or ``steps``), and returns the metric values with ``loss`` and ``global_step``.

    >>> est = tf.estimator.Estimator(model_fn, model_dir="/tmp/m")
    >>> est.train(tf.estimator.inputs.numpy_input_fn({"x": xs}, ys, shuffle=True), steps=100)
    >>> est.evaluate(tf.estimator.inputs.numpy_input_fn({"x": xs}, ys, shuffle=False))
    {'accuracy': 0.93, 'loss': 0.21, 'global_step': 100}

The canned estimators (``DNNClassifier``, ``LinearRegressor``, ...) are in
``engine/estimator_canned.py`` and join this namespace from ``engine/__init__.py``.
Out of scope: distribution strategies, ``Exporter``s, and TRAIN/EVAL meta graphs in
exports. ``train_and_evaluate`` trains to ``max_steps`` then evaluates once (TF also
evaluates after checkpoints while training).
"""

from __future__ import annotations

import collections
import copy
import os
import shutil
import tempfile
from types import SimpleNamespace

from engine import dtypes, errors, metrics
from engine import estimator_util as util
from engine import tf_logging as logging
from engine.estimator_export import (
    ClassificationOutput,
    ExportOutput,
    PredictOutput,
    RegressionOutput,
    ServingInputReceiver,
    TensorServingInputReceiver,
    build_all_signature_defs,
    build_parsing_serving_input_receiver_fn,
    build_raw_serving_input_receiver_fn,
    timestamped_export_dir,
)
from engine.estimator_inputs import numpy_input_fn, pandas_input_fn
from engine.estimator_spec import EstimatorSpec, ModeKeys, RunConfig, WarmStartSettings
from engine.framework import graph as ops
from engine.framework.graph import GraphKeys
from engine.ops.control_flow import group
from engine.ops.random import set_random_seed
from engine.saving.saved_model import SERVING, Builder
from engine.session import Session
from engine.summary import scalar as summary_scalar
from engine.training import saver as saver_lib
from engine.training import training_util
from engine.training.basic_session_run_hooks import (
    CheckpointSaverHook,
    LoggingTensorHook,
    NanTensorHook,
    StopAtStepHook,
)
from engine.training.checkpoint_utils import list_variables, load_variable
from engine.training.monitored_session import (
    ChiefSessionCreator,
    MonitoredSession,
    MonitoredTrainingSession,
    Scaffold,
)

__all__ = [
    "Estimator",
    "EstimatorSpec",
    "ModeKeys",
    "RunConfig",
    "WarmStartSettings",
    "TrainSpec",
    "EvalSpec",
    "train_and_evaluate",
    "inputs",
    "export",
]

_LOSS_KEY = "loss"
_GLOBAL_STEP_KEY = GraphKeys.GLOBAL_STEP


class Estimator:
    """Trains, evaluates, predicts with and exports the model ``model_fn`` builds.

    ``model_fn(features, labels, mode, params, config)`` (any subset that includes
    ``features``) returns an ``EstimatorSpec``. ``model_dir`` (or ``config.model_dir``)
    holds the checkpoints; a temporary directory is used when neither is given.
    """

    def __init__(self, model_fn, model_dir=None, config=None, params=None, warm_start_from=None):
        if model_fn is None:
            raise ValueError("model_fn must be provided to Estimator.")
        if config is None:
            config = RunConfig()
        elif not isinstance(config, RunConfig):
            raise ValueError(f"config must be an instance of `RunConfig`, but provided {config}.")
        model_dir = os.fspath(model_dir) if model_dir is not None else None
        if model_dir and config.model_dir and model_dir != config.model_dir:
            raise ValueError(
                "`model_dir` are set both in constructor and `RunConfig`, but with different "
                f"values. In constructor: '{model_dir}', in `RunConfig`: '{config.model_dir}' "
            )
        model_dir = model_dir or config.model_dir
        if not model_dir:
            model_dir = tempfile.mkdtemp()
            logging.warning("Using temporary folder as model directory: %s", model_dir)
        self._config = config.replace(model_dir=model_dir)
        self._model_dir = model_dir
        util.verify_model_fn_args(model_fn, params)
        self._model_fn = model_fn
        self._params = copy.deepcopy(params or {})
        if isinstance(warm_start_from, (str, os.PathLike)):
            warm_start_from = WarmStartSettings(os.fspath(warm_start_from))
        elif warm_start_from is not None and not isinstance(warm_start_from, WarmStartSettings):
            raise ValueError(
                "warm_start_from must be a string or a WarmStartSettings, instead got "
                f"{type(warm_start_from)}"
            )
        self._warm_start_settings = warm_start_from
        logging.info("Using config: %s", self._config)

    model_dir = property(lambda self: self._model_dir)
    config = property(lambda self: copy.deepcopy(self._config))
    params = property(lambda self: copy.deepcopy(self._params))

    @property
    def model_fn(self):
        """``model_fn`` as a function of (features, labels, mode, config)."""

        def public_model_fn(features, labels, mode, config):
            return self._call_model_fn(features, labels, mode, config)

        return public_model_fn

    def eval_dir(self, name=None) -> str:
        """Where ``evaluate(name=...)`` writes its summaries."""
        return os.path.join(self._model_dir, "eval" if not name else "eval_" + name)

    def latest_checkpoint(self):
        """The newest checkpoint in ``model_dir``, or None."""
        return saver_lib.latest_checkpoint(self._model_dir)

    def get_variable_names(self) -> list[str]:
        """The names of the variables in the newest checkpoint."""
        return [name for name, _ in list_variables(self._checkpoint_or_raise())]

    def get_variable_value(self, name):
        """The value of variable ``name`` in the newest checkpoint."""
        return load_variable(self._checkpoint_or_raise(), name)

    def _checkpoint_or_raise(self) -> str:
        path = self.latest_checkpoint()
        if not path:
            raise ValueError(
                f"Estimator is not trained yet (no checkpoint in {self._model_dir}). You "
                "need to call train before calling this."
            )
        return path

    # -- graph building ---------------------------------------------------------------------
    def _call_input_fn(self, input_fn, mode):
        args = util.fn_args(input_fn)
        kwargs = {}
        if "mode" in args:
            kwargs["mode"] = mode
        if "params" in args:
            kwargs["params"] = self.params
        if "config" in args:
            kwargs["config"] = self.config
        return util.parse_input_fn_result(input_fn(**kwargs))

    def _call_model_fn(self, features, labels, mode, config):
        args = util.fn_args(self._model_fn)
        kwargs = {}
        if "labels" in args:
            kwargs["labels"] = labels
        elif labels is not None:
            raise ValueError("model_fn does not take labels, but input_fn returns labels.")
        if "mode" in args:
            kwargs["mode"] = mode
        if "params" in args:
            kwargs["params"] = self.params
        if "config" in args:
            kwargs["config"] = config
        logging.info("Calling model_fn.")
        spec = self._model_fn(features=features, **kwargs)
        logging.info("Done calling model_fn.")
        if not isinstance(spec, EstimatorSpec):
            raise ValueError(
                f"model_fn should return an EstimatorSpec, but returned {type(spec).__name__}."
            )
        return spec

    def _new_graph(self, graph) -> None:
        """Seeds ``graph`` (the default graph) and gives it a global step."""
        set_random_seed(self._config.tf_random_seed)
        step = training_util.create_global_step(graph)
        if step.dtype.base_dtype not in (dtypes.int32, dtypes.int64) or step.shape.rank != 0:
            raise TypeError(f"Existing global_step must be an integer scalar: {step}")

    def _scaffold(self, spec, checkpoint_path) -> Scaffold:
        if self._warm_start_settings is None or checkpoint_path:
            return spec.scaffold
        return util.warm_started(spec.scaffold, self._warm_start_settings)

    # -- train --------------------------------------------------------------------------------
    def train(self, input_fn, hooks=None, steps=None, max_steps=None, saving_listeners=None):
        """Trains for ``steps`` more steps, up to global step ``max_steps``, or until the input
        ends; resumes from the newest checkpoint of ``model_dir``. Returns ``self``."""
        if steps is not None and max_steps is not None:
            raise ValueError("Can not provide both steps and max_steps.")
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        if max_steps is not None:
            latest = self.latest_checkpoint()
            start = int(load_variable(latest, _GLOBAL_STEP_KEY)) if latest else 0
            if max_steps <= start:
                logging.info("Skipping training since max_steps has already saved.")
                return self
        hooks = util.check_hooks_type(hooks)
        if steps is not None or max_steps is not None:
            hooks.append(StopAtStepHook(steps, max_steps))
        listeners = list(saving_listeners or [])
        loss = self._train_model(input_fn, hooks, listeners)
        logging.info("Loss for final step: %s.", loss)
        return self

    def _train_model(self, input_fn, hooks, saving_listeners):
        with ops.Graph().as_default() as g:
            self._new_graph(g)
            global_step = training_util.get_global_step(g)
            features, labels, in_hooks = self._call_input_fn(input_fn, ModeKeys.TRAIN)
            spec = self._call_model_fn(features, labels, ModeKeys.TRAIN, self.config)
            if not any(s.op.name == "loss" for s in ops.get_collection(GraphKeys.SUMMARIES)):
                summary_scalar("loss", spec.loss)
            ops.add_to_collection(GraphKeys.LOSSES, spec.loss)
            worker_hooks = [*in_hooks, *hooks, NanTensorHook(spec.loss)]
            if self._config.log_step_count_steps:
                worker_hooks.append(
                    LoggingTensorHook(
                        {"loss": spec.loss, "step": global_step},
                        every_n_iter=self._config.log_step_count_steps,
                    )
                )
            worker_hooks.extend(spec.training_hooks)
            if not (spec.scaffold.saver or ops.get_collection(GraphKeys.SAVERS)):
                ops.add_to_collection(
                    GraphKeys.SAVERS,
                    saver_lib.Saver(
                        sharded=True,
                        max_to_keep=self._config.keep_checkpoint_max,
                        keep_checkpoint_every_n_hours=self._config.keep_checkpoint_every_n_hours,
                        defer_build=True,
                        save_relative_paths=True,
                    ),
                )
            scaffold = self._scaffold(spec, self.latest_checkpoint())
            chief_hooks = self._checkpoint_hooks(spec, scaffold, worker_hooks, saving_listeners)
            return self._run_training(spec, scaffold, worker_hooks, chief_hooks)

    def _checkpoint_hooks(self, spec, scaffold, worker_hooks, saving_listeners) -> list:
        """The CheckpointSaverHook RunConfig asks for (unless a hook already saves), with the
        saving listeners attached to the first saver hook."""
        all_hooks = [*worker_hooks, *spec.training_chief_hooks]
        saver_hooks = [h for h in all_hooks if isinstance(h, CheckpointSaverHook)]
        chief_hooks = []
        cfg = self._config
        if (cfg.save_checkpoints_secs or cfg.save_checkpoints_steps) and not saver_hooks:
            chief_hooks = [
                CheckpointSaverHook(
                    self._model_dir,
                    save_secs=cfg.save_checkpoints_secs,
                    save_steps=cfg.save_checkpoints_steps,
                    scaffold=scaffold,
                )
            ]
            saver_hooks = chief_hooks[:1]
        if saving_listeners:
            if not saver_hooks:
                raise ValueError(
                    "There should be a CheckpointSaverHook to use saving_listeners. Please set "
                    "one of the RunConfig.save_checkpoints_steps or "
                    "RunConfig.save_checkpoints_secs."
                )
            for listener in saving_listeners:
                if listener not in saver_hooks[0]._listeners:
                    saver_hooks[0]._listeners.append(listener)
        return chief_hooks + list(spec.training_chief_hooks)

    def _run_training(self, spec, scaffold, worker_hooks, chief_hooks):
        loss, any_step_done = None, False
        with MonitoredTrainingSession(
            checkpoint_dir=self._model_dir,
            scaffold=scaffold,
            hooks=worker_hooks,
            chief_only_hooks=chief_hooks,
            save_checkpoint_secs=0,  # saving is the CheckpointSaverHook's
            save_summaries_steps=self._config.save_summary_steps,
            config=self._config.session_config,
            log_step_count_steps=self._config.log_step_count_steps,
        ) as mon_sess:
            while not mon_sess.should_stop():
                _, loss = mon_sess.run([spec.train_op, spec.loss])
                any_step_done = True
        if not any_step_done:
            logging.warning(
                "Training with estimator made no steps. Perhaps input is empty or misspecified."
            )
        return loss

    # -- evaluate -----------------------------------------------------------------------------
    def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None, name=None):
        """Evaluates the model of ``checkpoint_path`` (default: the newest checkpoint) on the
        input until it ends, or for ``steps`` batches. Returns the eval_metric_ops' values
        with ``loss`` (its mean over the batches) and ``global_step``."""
        hooks = util.check_hooks_type(hooks)
        if steps is not None:
            if steps <= 0:
                raise ValueError(f"Must specify steps > 0, given: {steps}")
            hooks.append(util.StopAfterNEvalsHook(steps))
        if not checkpoint_path:
            checkpoint_path = self.latest_checkpoint()
            if not checkpoint_path:
                logging.info(
                    "Could not find trained model in model_dir: %s, running initialization "
                    "to evaluate.",
                    self._model_dir,
                )
        with ops.Graph().as_default() as g:
            self._new_graph(g)
            features, labels, in_hooks = self._call_input_fn(input_fn, ModeKeys.EVAL)
            spec = self._call_model_fn(features, labels, ModeKeys.EVAL, self.config)
            eval_metric_ops = dict(spec.eval_metric_ops)
            if _LOSS_KEY in eval_metric_ops:
                raise ValueError(
                    f'Metric with name "{_LOSS_KEY}" is not allowed, because Estimator already '
                    "defines a default metric with the same name."
                )
            eval_metric_ops[_LOSS_KEY] = metrics.mean(spec.loss)
            if _GLOBAL_STEP_KEY in eval_metric_ops:
                raise ValueError(
                    "Metric with name `global_step` is not allowed, because Estimator already "
                    "defines a default metric with the same name."
                )
            names = sorted(eval_metric_ops)  # sorted, so the graph is the same every time
            update_op = group(*[eval_metric_ops[k][1] for k in names])
            eval_dict = {k: eval_metric_ops[k][0] for k in names}
            eval_dict[_GLOBAL_STEP_KEY] = training_util.get_global_step(g)
            all_hooks = [*in_hooks, *hooks, *spec.evaluation_hooks]
            results = util.evaluate_once(
                checkpoint_path,
                self._scaffold(spec, checkpoint_path),
                update_op,
                eval_dict,
                all_hooks,
                self._config.session_config,
            )
        util.write_dict_to_summary(self.eval_dir(name), results, results[_GLOBAL_STEP_KEY])
        logging.info(
            "Saving dict for global step %d: %s",
            results[_GLOBAL_STEP_KEY],
            ", ".join(f"{k} = {v}" for k, v in sorted(results.items())),
        )
        return results

    # -- predict ------------------------------------------------------------------------------
    def predict(
        self,
        input_fn,
        predict_keys=None,
        hooks=None,
        checkpoint_path=None,
        yield_single_examples=True,
    ):
        """Yields the predictions of the model of ``checkpoint_path`` (default: the newest
        checkpoint) for every input batch: one example (an array, or a dict for dict
        predictions) at a time, or whole batches with ``yield_single_examples=False``."""
        hooks = util.check_hooks_type(hooks)
        if not checkpoint_path:
            checkpoint_path = self.latest_checkpoint()
            if not checkpoint_path:
                logging.info(
                    "Could not find trained model in model_dir: %s, running initialization "
                    "to predict.",
                    self._model_dir,
                )
        # The graph is the default only while it is built: between the yields it is the
        # caller's code that runs.
        with ops.Graph().as_default() as g:
            self._new_graph(g)
            features, _, in_hooks = self._call_input_fn(input_fn, ModeKeys.PREDICT)
            spec = self._call_model_fn(features, None, ModeKeys.PREDICT, self.config)
            predictions = util.extract_keys(spec.predictions, predict_keys)
            creator = ChiefSessionCreator(
                scaffold=self._scaffold(spec, checkpoint_path),
                checkpoint_filename_with_path=checkpoint_path,
                config=self._config.session_config,
            )
            mon_sess = MonitoredSession(
                session_creator=creator, hooks=[*in_hooks, *hooks, *spec.prediction_hooks]
            )
        with mon_sess:
            while not mon_sess.should_stop():
                values = mon_sess.run(predictions)
                if not yield_single_examples:
                    yield values
                else:
                    yield from util.single_examples(predictions, values)

    # -- export -------------------------------------------------------------------------------
    def export_saved_model(
        self,
        export_dir_base,
        serving_input_receiver_fn,
        assets_extra=None,
        as_text=False,
        checkpoint_path=None,
        experimental_mode=ModeKeys.PREDICT,
    ):
        """Exports the PREDICT graph over ``serving_input_receiver_fn``'s inputs, with the
        variables of ``checkpoint_path`` (default: the newest checkpoint), as a SavedModel in
        ``export_dir_base/<timestamp>``; returns that path (bytes, as TF 1.x)."""
        if not serving_input_receiver_fn:
            raise ValueError("An input_receiver_fn must be defined.")
        if experimental_mode != ModeKeys.PREDICT:
            raise NotImplementedError(
                f"export_saved_model(experimental_mode={experimental_mode!r}): only the "
                "PREDICT graph is exported here."
            )
        checkpoint_path = checkpoint_path or self.latest_checkpoint()
        if not checkpoint_path:
            raise ValueError(f"Couldn't find trained model at {self._model_dir}.")
        export_dir = timestamped_export_dir(export_dir_base)
        with ops.Graph().as_default() as g:
            self._new_graph(g)
            receiver = serving_input_receiver_fn()
            if not isinstance(receiver, (ServingInputReceiver, TensorServingInputReceiver)):
                raise TypeError(
                    "serving_input_receiver_fn must return a ServingInputReceiver, got "
                    f"{type(receiver).__name__}"
                )
            spec = self._call_model_fn(
                receiver.features, getattr(receiver, "labels", None), ModeKeys.PREDICT, self.config
            )
            signatures = build_all_signature_defs(
                receiver.receiver_tensors,
                spec.export_outputs,
                receiver.receiver_tensors_alternatives,
            )
            self._save_export(spec, signatures, checkpoint_path, export_dir, as_text)
        for dest, source in (assets_extra or {}).items():
            target = os.path.join(export_dir, "assets.extra", dest)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile(source, target)
        return os.fsencode(export_dir)

    def _save_export(self, spec, signatures, checkpoint_path, export_dir, as_text) -> None:
        local_init_op = spec.scaffold.local_init_op
        if local_init_op is None:
            local_init_op = Scaffold.default_local_init_op()
        graph_saver = spec.scaffold.saver or saver_lib.Saver(sharded=True)
        with Session(config=self._config.session_config) as session:
            try:
                graph_saver.restore(session, checkpoint_path)
            except errors.NotFoundError as e:
                raise ValueError(
                    "Could not load all requested variables from checkpoint. Please make sure "
                    "your model_fn does not expect variables that were not saved in the "
                    f"checkpoint.\n\nEncountered error with mode `{ModeKeys.PREDICT}` while "
                    f"restoring checkpoint from: `{checkpoint_path}`: {e}"
                ) from None
            builder = Builder(export_dir)
            builder.add_meta_graph_and_variables(
                session,
                [SERVING],
                signature_def_map=signatures,
                assets_collection=ops.get_collection(GraphKeys.ASSET_FILEPATHS),
                main_op=local_init_op,
            )
        builder.save(as_text)

    def export_savedmodel(
        self,
        export_dir_base,
        serving_input_receiver_fn,
        assets_extra=None,
        as_text=False,
        checkpoint_path=None,
        strip_default_attrs=False,  # noqa: ARG002 - TF API compatibility
    ):
        """TF 1.x's older name of ``export_saved_model``."""
        return self.export_saved_model(
            export_dir_base, serving_input_receiver_fn, assets_extra, as_text, checkpoint_path
        )


class TrainSpec(collections.namedtuple("TrainSpec", ["input_fn", "max_steps", "hooks"])):
    """What ``train_and_evaluate`` trains on: ``input_fn`` up to global step ``max_steps``."""

    def __new__(cls, input_fn, max_steps=None, hooks=None):
        if not callable(input_fn):
            raise TypeError(f"`input_fn` must be callable, given: {input_fn}")
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        return super().__new__(cls, input_fn, max_steps, tuple(util.check_hooks_type(hooks)))


class EvalSpec(
    collections.namedtuple(
        "EvalSpec",
        ["input_fn", "steps", "name", "hooks", "exporters", "start_delay_secs", "throttle_secs"],
    )
):
    """What ``train_and_evaluate`` evaluates on (``steps`` batches of ``input_fn``)."""

    def __new__(
        cls,
        input_fn,
        steps=100,
        name=None,
        hooks=None,
        exporters=None,
        start_delay_secs=120,
        throttle_secs=600,
    ):
        if not callable(input_fn):
            raise TypeError(f"`input_fn` must be callable, given: {input_fn}")
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if exporters:
            raise NotImplementedError("EvalSpec(exporters=...): Exporters are out of scope.")
        hooks = tuple(util.check_hooks_type(hooks))
        return super().__new__(
            cls, input_fn, steps, name, hooks, (), start_delay_secs, throttle_secs
        )


def train_and_evaluate(estimator, train_spec, eval_spec):
    """Trains ``estimator`` per ``train_spec`` then evaluates it per ``eval_spec`` (locally,
    once); returns ``(eval_result, export_results)``."""
    if not isinstance(estimator, Estimator):
        raise TypeError(f"`estimator` must have type `tf.estimator.Estimator`, given {estimator}")
    if not isinstance(train_spec, TrainSpec):
        raise TypeError(f"`train_spec` must have type `tf.estimator.TrainSpec`, given {train_spec}")
    if not isinstance(eval_spec, EvalSpec):
        raise TypeError(f"`eval_spec` must have type `tf.estimator.EvalSpec`, given {eval_spec}")
    estimator.train(train_spec.input_fn, hooks=train_spec.hooks, max_steps=train_spec.max_steps)
    result = estimator.evaluate(
        eval_spec.input_fn, steps=eval_spec.steps, hooks=eval_spec.hooks, name=eval_spec.name
    )
    return result, []


inputs = SimpleNamespace(numpy_input_fn=numpy_input_fn, pandas_input_fn=pandas_input_fn)
export = SimpleNamespace(
    ExportOutput=ExportOutput,
    PredictOutput=PredictOutput,
    ClassificationOutput=ClassificationOutput,
    RegressionOutput=RegressionOutput,
    ServingInputReceiver=ServingInputReceiver,
    TensorServingInputReceiver=TensorServingInputReceiver,
    build_raw_serving_input_receiver_fn=build_raw_serving_input_receiver_fn,
    build_parsing_serving_input_receiver_fn=build_parsing_serving_input_receiver_fn,
)
