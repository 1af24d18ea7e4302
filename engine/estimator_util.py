"""The machinery under ``engine.estimator.Estimator`` (TF 1.15's ``estimator.util`` and
``evaluation`` modules): argument inspection of model/input fns, parsing what an input_fn
returns, the evaluation loop, warm starting, prediction batches and eval summaries."""

from __future__ import annotations

import inspect
import re

import numpy as np

from engine import dtypes
from engine import tf_logging as logging
from engine.data import Dataset
from engine.estimator_inputs import input_hooks
from engine.estimator_spec import WarmStartSettings
from engine.framework import graph as ops
from engine.framework.graph import GraphKeys
from engine.init_ops import zeros_initializer
from engine.ops.state import assign_add
from engine.summary.proto import Summary
from engine.summary.writer import FileWriterCache
from engine.training.basic_session_run_hooks import FinalOpsHook
from engine.training.checkpoint_utils import load_checkpoint
from engine.training.monitored_session import ChiefSessionCreator, MonitoredSession, Scaffold
from engine.training.session_run_hook import SessionRunArgs, SessionRunHook
from engine.variable_scope import get_variable
from engine.variables import trainable_variables

_VALID_MODEL_FN_ARGS = {"features", "labels", "mode", "params", "self", "config"}


def fn_args(fn) -> tuple[str, ...]:
    """The names ``fn`` takes (arguments a ``functools.partial`` already binds excluded)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError) as e:
        raise TypeError(f"{fn} is not a callable whose arguments can be inspected: {e}") from None
    bound = set(getattr(fn, "keywords", None) or ())
    return tuple(
        p.name
        for p in params
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name not in bound
    )


def verify_model_fn_args(model_fn, params) -> None:
    args = set(fn_args(model_fn))
    if "features" not in args:
        raise ValueError(f"model_fn ({model_fn}) must include features argument.")
    if params is not None and "params" not in args:
        raise ValueError(
            f"model_fn ({model_fn}) does not include params argument, but params ({params}) "
            "is passed to Estimator."
        )
    if params is None and "params" in args:
        logging.warning(
            "Estimator's model_fn (%s) includes params argument, but params are not passed "
            "to Estimator.",
            model_fn,
        )
    unexpected = sorted(args - _VALID_MODEL_FN_ARGS)
    if unexpected:
        raise ValueError(f"model_fn ({model_fn}) has following not expected args: {unexpected}")


def check_hooks_type(hooks) -> list:
    hooks = list(hooks or [])
    for h in hooks:
        if not isinstance(h, SessionRunHook):
            raise TypeError(f"Hooks must be a SessionRunHook, given: {h}")
    return hooks


class _DatasetInitializerHook(SessionRunHook):
    """Runs a Dataset iterator's initializer once the session exists."""

    def __init__(self, iterator):
        self._iterator = iterator

    def after_create_session(self, session, coord):  # noqa: ARG002 - the hook API's signature
        session.run(self._iterator.initializer)


class StopAfterNEvalsHook(SessionRunHook):
    """Stops an evaluation after ``num_evals`` runs of its update ops."""

    def __init__(self, num_evals):
        self._num_evals = num_evals
        self._evals_completed = None

    def set_evals_completed_tensor(self, tensor) -> None:
        self._evals_completed = tensor

    def before_run(self, run_context):  # noqa: ARG002 - the hook API's signature
        return SessionRunArgs({"evals_completed": self._evals_completed})

    def after_run(self, run_context, run_values):
        done = int(run_values.results["evals_completed"])
        logging.info("Evaluation [%d/%d]", done, self._num_evals)
        if done >= self._num_evals:
            run_context.request_stop()


def parse_input_fn_result(result):
    """(features, labels, hooks) from what an input_fn returned: a Dataset (read through an
    initializable iterator), a ``(features, labels)`` pair, or features alone."""
    hooks = input_hooks(ops.get_default_graph())
    if isinstance(result, Dataset):
        iterator = result.make_initializable_iterator()
        hooks.append(_DatasetInitializerHook(iterator))
        result = iterator.get_next()
    if isinstance(result, (list, tuple)):
        if len(result) != 2:
            raise ValueError("input_fn should return (features, labels) as a len 2 tuple.")
        return result[0], result[1], hooks
    return result, None, hooks


def extract_keys(predictions, predict_keys):
    if not predict_keys:
        return predictions
    if not isinstance(predictions, dict):
        raise ValueError("predict_keys argument is not valid in case of non-dict predictions.")
    picked = {k: v for k, v in predictions.items() if k in predict_keys}
    if not picked:
        raise ValueError(
            f"Expected to run at least one output from {list(predictions)}, provided "
            f"{predict_keys}."
        )
    return picked


def _extract_batch_length(values: dict) -> int:
    batch_length = None
    for key, value in values.items():
        batch_length = batch_length or value.shape[0]
        if value.shape[0] != batch_length:
            raise ValueError(
                f"Batch length of predictions should be same. {key} has different batch "
                "length than others."
            )
    return batch_length


def single_examples(predictions, values):
    """The rows of one batch of predictions: arrays, or dicts of one row per key."""
    if not isinstance(predictions, dict):
        yield from values
        return
    for i in range(_extract_batch_length(values)):
        yield {key: value[i] for key, value in values.items()}


def _warm_start_variables(settings: WarmStartSettings) -> list:
    wanted = settings.vars_to_warm_start
    candidates = trainable_variables()
    if wanted is None:
        return []
    if isinstance(wanted, str):
        pattern = re.compile(wanted)
        return [v for v in candidates if pattern.match(v.op.name)]
    names = {w if isinstance(w, str) else w.op.name for w in wanted}
    return [v for v in candidates if v.op.name in names]


def warm_started(scaffold: Scaffold, settings: WarmStartSettings) -> Scaffold:
    """``scaffold`` whose init_fn also loads the warm-start variables from the checkpoint
    (which runs only when there is no checkpoint to restore, as TF's warm start)."""
    variables = _warm_start_variables(settings)
    user_init_fn = scaffold.init_fn  # already bound to the scaffold: takes the session
    ckpt = settings.ckpt_to_initialize_from
    renames = settings.var_name_to_prev_var_name

    def init_fn(_scaffold, sess):
        if user_init_fn is not None:
            user_init_fn(sess)
        reader = load_checkpoint(ckpt)
        for v in variables:
            name = renames.get(v.op.name, v.op.name)
            if not reader.has_tensor(name):
                raise ValueError(f"Warm start: {name!r} is not in the checkpoint {ckpt}")
            v.load(reader.get_tensor(name), sess)
        logging.info("Warm-started %d variables from %s.", len(variables), ckpt)

    return Scaffold(copy_from_scaffold=scaffold, init_fn=init_fn)


def write_dict_to_summary(output_dir, dictionary, current_global_step) -> None:
    """Writes the scalar results of an evaluation as summaries in ``output_dir``."""
    writer = FileWriterCache.get(output_dir)
    values = []
    for key, value in sorted(dictionary.items()):
        if key == GraphKeys.GLOBAL_STEP:
            continue
        array = np.asarray(value)
        if array.ndim == 0 and array.dtype.kind in "fiub":
            values.append(Summary.Value(tag=key, simple_value=float(array)))
        else:
            logging.warning("Skipping summary for %s, must be a float or an int scalar.", key)
    writer.add_summary(Summary(value=values), int(current_global_step))
    writer.flush()


def evaluate_once(checkpoint_path, scaffold, update_op, eval_dict, hooks, config):
    """Runs ``update_op`` until the input ends or a hook stops it; the final metric values."""
    eval_step = get_variable(
        "eval_step",
        shape=[],
        dtype=dtypes.int64,
        initializer=zeros_initializer(),
        trainable=False,
        collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.EVAL_STEP],
    )
    update_eval_step = assign_add(eval_step, 1)
    for h in hooks:
        if isinstance(h, StopAfterNEvalsHook):
            h.set_evals_completed_tensor(update_eval_step)
    eval_ops = [update_eval_step] if update_op is None else [update_op, update_eval_step]
    final_ops_hook = FinalOpsHook(eval_dict)
    creator = ChiefSessionCreator(
        scaffold=scaffold, checkpoint_filename_with_path=checkpoint_path, config=config
    )
    logging.info("Starting evaluation")
    with MonitoredSession(session_creator=creator, hooks=[*hooks, final_ops_hook]) as session:
        while not session.should_stop():
            session.run(eval_ops)
    logging.info("Finished evaluation")
    return final_ops_hook.final_ops_values
