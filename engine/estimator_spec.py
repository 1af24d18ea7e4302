"""TF 1.15's ``tf.estimator`` value types: ``ModeKeys``, ``EstimatorSpec``, ``RunConfig`` and
``WarmStartSettings``.

``EstimatorSpec`` validates what a ``model_fn`` returns exactly where TF does (a missing
``train_op`` in TRAIN, a missing ``loss`` in TRAIN/EVAL, a non-scalar loss, metric values that
are not ``(value, update_op)`` pairs, hooks that are not ``SessionRunHook``s), with TF's
exception types and messages. ``RunConfig`` keeps TF's defaults (checkpoints every 600 s,
summaries and step logging every 100 steps, 5 checkpoints kept); its cluster properties
describe the one in-process chief the engine runs.
"""

from __future__ import annotations

import collections
import copy

from engine.estimator_export import get_export_outputs
from engine.framework import graph as ops
from engine.framework.graph import Operation, Tensor
from engine.ops import array as array_ops
from engine.training.monitored_session import Scaffold
from engine.training.session_run_hook import SessionRunHook
from engine.variables import Variable

__all__ = ["ModeKeys", "EstimatorSpec", "RunConfig", "WarmStartSettings"]

_USE_DEFAULT = object()


class ModeKeys:
    """The three modes a ``model_fn`` is called in."""

    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


def _check_graph(x, name: str) -> None:
    graph = getattr(x, "graph", None)
    if graph is not None and graph is not ops.get_default_graph():
        raise ValueError(
            f"{name} must be from the default graph. Possible causes of this error include: "
            "\n\n1) {name} was created outside the context of the default graph.\n\n"
            "2) The object passed through to EstimatorSpec was not created in the most "
            'recent call to "model_fn".'
        )


def _check_is_tensor(x, name: str) -> Tensor:
    if isinstance(x, Variable):
        x = x.value()
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be Tensor, given: {x}")
    _check_graph(x, name)
    return x


def _validate_train_op(train_op, mode):
    if train_op is None:
        if mode == ModeKeys.TRAIN:
            raise ValueError("Missing train_op.")
        return None
    if isinstance(train_op, Variable):
        train_op = train_op.op
    if not isinstance(train_op, (Operation, Tensor)):
        raise TypeError(f"train_op must be Operation or Tensor, given: {train_op}")
    _check_graph(train_op, "train_op")
    return train_op


def _validate_loss(loss, mode):
    if loss is None:
        if mode in (ModeKeys.TRAIN, ModeKeys.EVAL):
            raise ValueError("Missing loss.")
        return None
    loss = _check_is_tensor(loss, "loss")
    if loss.shape.num_elements() not in (None, 1):
        raise ValueError(f"Loss must be scalar, given: {loss}")
    if loss.shape.rank != 0:
        loss = array_ops.reshape(loss, [])
    return loss


def _validate_predictions(predictions, mode):
    if predictions is None:
        if mode == ModeKeys.PREDICT:
            raise ValueError("Missing predictions.")
        return {}
    if isinstance(predictions, dict):
        return {k: _check_is_tensor(v, f"predictions[{k}]") for k, v in predictions.items()}
    return _check_is_tensor(predictions, "predictions")


def _validate_hooks(hooks) -> tuple:
    hooks = tuple(hooks or [])
    for hook in hooks:
        if not isinstance(hook, SessionRunHook):
            raise TypeError(f"All hooks must be SessionRunHook instances, given: {hook}")
    return hooks


def _validate_eval_metric_ops(eval_metric_ops) -> dict:
    if eval_metric_ops is None:
        return {}
    if not isinstance(eval_metric_ops, dict):
        raise TypeError(f"eval_metric_ops must be a dict, given: {eval_metric_ops}")
    for key, value in eval_metric_ops.items():
        if not isinstance(value, tuple) or len(value) != 2:
            raise TypeError(
                "Values of eval_metric_ops must be (metric_value, update_op) tuples, given: "
                f"{value} for key: {key}"
            )
        for part in value:
            _check_graph(part, f"eval_metric_ops[{key}]")
    return dict(eval_metric_ops)


_SPEC_FIELDS = (
    "mode",
    "predictions",
    "loss",
    "train_op",
    "eval_metric_ops",
    "export_outputs",
    "training_chief_hooks",
    "training_hooks",
    "scaffold",
    "evaluation_hooks",
    "prediction_hooks",
)


class EstimatorSpec(collections.namedtuple("EstimatorSpec", _SPEC_FIELDS)):
    """What a ``model_fn`` returns: the ops of one mode, validated as TF 1.15 does.

    >>> return tf.estimator.EstimatorSpec(mode, predictions=classes, loss=loss,
    ...                                   train_op=train_op,
    ...                                   eval_metric_ops={"accuracy": acc})
    """

    def __new__(
        cls,
        mode,
        predictions=None,
        loss=None,
        train_op=None,
        eval_metric_ops=None,
        export_outputs=None,
        training_chief_hooks=None,
        training_hooks=None,
        scaffold=None,
        evaluation_hooks=None,
        prediction_hooks=None,
    ):
        train_op = _validate_train_op(train_op, mode)
        loss = _validate_loss(loss, mode)
        predictions = _validate_predictions(predictions, mode)
        if mode == ModeKeys.PREDICT:
            export_outputs = get_export_outputs(export_outputs, predictions)
        scaffold = scaffold or Scaffold()
        if not isinstance(scaffold, Scaffold):
            raise TypeError(f"scaffold must be tf.train.Scaffold. Given: {scaffold}")
        return super().__new__(
            cls,
            mode=mode,
            predictions=predictions,
            loss=loss,
            train_op=train_op,
            eval_metric_ops=_validate_eval_metric_ops(eval_metric_ops),
            export_outputs=export_outputs,
            training_chief_hooks=_validate_hooks(training_chief_hooks),
            training_hooks=_validate_hooks(training_hooks),
            scaffold=scaffold,
            evaluation_hooks=_validate_hooks(evaluation_hooks),
            prediction_hooks=_validate_hooks(prediction_hooks),
        )

    def _replace(self, **kwds):
        if "mode" in kwds and self.mode != kwds["mode"]:
            raise ValueError("mode of EstimatorSpec cannot be changed.")
        return EstimatorSpec(**{**self._asdict(), **kwds})


def _check_non_negative(name: str, value) -> None:
    if value is not None and value < 0:
        raise ValueError(f"{name} must be >= 0, given: {value}")


class RunConfig:
    """How an ``Estimator`` runs: where it writes, how often it checkpoints, summarizes and
    logs, the graph-level random seed. ``replace(**changes)`` returns a modified copy."""

    def __init__(
        self,
        model_dir=None,
        tf_random_seed=None,
        save_summary_steps=100,
        save_checkpoints_steps=_USE_DEFAULT,
        save_checkpoints_secs=_USE_DEFAULT,
        session_config=None,
        keep_checkpoint_max=5,
        keep_checkpoint_every_n_hours=10000,
        log_step_count_steps=100,
        train_distribute=None,
        device_fn=None,
        protocol=None,
        eval_distribute=None,
        experimental_distribute=None,
        experimental_max_worker_delay_secs=None,  # noqa: ARG002 - distributed-only
        session_creation_timeout_secs=7200,
    ):
        for name, value in (
            ("train_distribute", train_distribute),
            ("eval_distribute", eval_distribute),
            ("experimental_distribute", experimental_distribute),
            ("protocol", protocol),
        ):
            if value is not None:
                raise NotImplementedError(
                    f"RunConfig({name}=...): distribution strategies and remote protocols are "
                    "out of scope; estimators here run one in-process chief."
                )
        if save_checkpoints_secs is _USE_DEFAULT and save_checkpoints_steps is _USE_DEFAULT:
            save_checkpoints_steps, save_checkpoints_secs = None, 600
        elif save_checkpoints_secs is _USE_DEFAULT:
            save_checkpoints_secs = None
        elif save_checkpoints_steps is _USE_DEFAULT:
            save_checkpoints_steps = None
        elif save_checkpoints_steps is not None and save_checkpoints_secs is not None:
            raise ValueError(
                "`save_checkpoints_steps` and `save_checkpoints_secs` cannot be both set."
            )
        if model_dir is not None and (not isinstance(model_dir, str) or not model_dir):
            raise ValueError("model_dir should be non-empty")
        for name, value in (
            ("save_summary_steps", save_summary_steps),
            ("save_checkpoints_steps", save_checkpoints_steps),
            ("save_checkpoints_secs", save_checkpoints_secs),
            ("keep_checkpoint_max", keep_checkpoint_max),
            ("keep_checkpoint_every_n_hours", keep_checkpoint_every_n_hours),
            ("log_step_count_steps", log_step_count_steps),
        ):
            _check_non_negative(name, value)
        if tf_random_seed is not None and not isinstance(tf_random_seed, int):
            raise ValueError(f"tf_random_seed must be integer, given: {tf_random_seed!r}")
        self._model_dir = model_dir
        self._tf_random_seed = tf_random_seed
        self._save_summary_steps = save_summary_steps
        self._save_checkpoints_steps = save_checkpoints_steps
        self._save_checkpoints_secs = save_checkpoints_secs
        self._session_config = session_config
        self._keep_checkpoint_max = keep_checkpoint_max
        self._keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self._log_step_count_steps = log_step_count_steps
        self._device_fn = device_fn
        self._session_creation_timeout_secs = session_creation_timeout_secs

    model_dir = property(lambda self: self._model_dir)
    tf_random_seed = property(lambda self: self._tf_random_seed)
    save_summary_steps = property(lambda self: self._save_summary_steps)
    save_checkpoints_steps = property(lambda self: self._save_checkpoints_steps)
    save_checkpoints_secs = property(lambda self: self._save_checkpoints_secs)
    session_config = property(lambda self: self._session_config)
    keep_checkpoint_max = property(lambda self: self._keep_checkpoint_max)
    keep_checkpoint_every_n_hours = property(lambda self: self._keep_checkpoint_every_n_hours)
    log_step_count_steps = property(lambda self: self._log_step_count_steps)
    device_fn = property(lambda self: self._device_fn)
    session_creation_timeout_secs = property(lambda self: self._session_creation_timeout_secs)
    # The one in-process chief of a local run.
    is_chief = True
    master = ""
    evaluation_master = ""
    num_ps_replicas = 0
    num_worker_replicas = 1
    task_type = "worker"
    task_id = 0
    global_id_in_cluster = 0
    cluster_spec = None
    service = None
    train_distribute = None
    eval_distribute = None
    protocol = None

    _REPLACEABLE = (
        "model_dir",
        "tf_random_seed",
        "save_summary_steps",
        "save_checkpoints_steps",
        "save_checkpoints_secs",
        "session_config",
        "keep_checkpoint_max",
        "keep_checkpoint_every_n_hours",
        "log_step_count_steps",
        "device_fn",
        "session_creation_timeout_secs",
    )

    def replace(self, **kwargs) -> RunConfig:
        """A copy with ``kwargs`` changed (TF's replaceable properties only)."""
        for key in kwargs:
            if key not in self._REPLACEABLE:
                raise ValueError(f"{key} is not allowed to be replaced in the RunConfig.")
        values = {k: getattr(self, k) for k in self._REPLACEABLE}
        if "save_checkpoints_steps" in kwargs and "save_checkpoints_secs" not in kwargs:
            values["save_checkpoints_secs"] = None
        if "save_checkpoints_secs" in kwargs and "save_checkpoints_steps" not in kwargs:
            values["save_checkpoints_steps"] = None
        values.update(kwargs)
        return RunConfig(**values)

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._REPLACEABLE)
        return f"RunConfig({fields})"


class WarmStartSettings(
    collections.namedtuple(
        "WarmStartSettings",
        [
            "ckpt_to_initialize_from",
            "vars_to_warm_start",
            "var_name_to_vocab_info",
            "var_name_to_prev_var_name",
        ],
    )
):
    """Where a new model's variables start from: a checkpoint (file or directory) and which
    variables (a regex over trainable variables, default all of them, or a list of names).
    Vocabulary remapping (``var_name_to_vocab_info``) is out of scope."""

    def __new__(
        cls,
        ckpt_to_initialize_from,
        vars_to_warm_start=".*",
        var_name_to_vocab_info=None,
        var_name_to_prev_var_name=None,
    ):
        if not ckpt_to_initialize_from:
            raise ValueError("`ckpt_to_initialize_from` MUST be set in WarmStartSettings")
        if var_name_to_vocab_info:
            raise NotImplementedError(
                "WarmStartSettings(var_name_to_vocab_info=...): vocabulary remapping is out of "
                "scope."
            )
        return super().__new__(
            cls,
            ckpt_to_initialize_from,
            vars_to_warm_start,
            {},
            copy.copy(var_name_to_prev_var_name or {}),
        )
