"""Checkpoints: ``Saver.save``/``restore`` and ``latest_checkpoint`` with TF1 semantics.

A checkpoint ``<dir>/model.ckpt-1000`` is a tensor bundle (``.index`` + ``.data-...``; see
``engine/saving/bundle.py``) holding one array per variable, keyed by the variable's op name.
The ``checkpoint`` file in the directory lists the recent checkpoints, newest last. The Saver
adds its restore ops to the graph when it is built, so saving and restoring never add ops.
"""

from __future__ import annotations

import os
import re
import time

import numpy as np

from engine import errors
from engine.formats.tensorflow import checkpoint as tf_checkpoint
from engine.formats.tensorflow import writer as tf_writer
from engine.framework import graph as ops
from engine.framework.graph import GraphKeys
from engine.ops import array as array_ops
from engine.ops import state as state_ops
from engine.ops.control_flow import group, no_op
from engine.saving import bundle

__all__ = [
    "Saver",
    "latest_checkpoint",
    "get_checkpoint_state",
    "checkpoint_exists",
    "CheckpointState",
    "update_checkpoint_state",
]

_STATE_LINE = re.compile(r'^\s*(model_checkpoint_path|all_model_checkpoint_paths)\s*:\s*"(.*)"\s*$')


class CheckpointState:
    """The contents of a ``checkpoint`` state file."""

    def __init__(self, model_checkpoint_path: str, all_model_checkpoint_paths: list[str]):
        self.model_checkpoint_path = model_checkpoint_path
        self.all_model_checkpoint_paths = all_model_checkpoint_paths

    def __repr__(self) -> str:
        return (
            f"CheckpointState(model_checkpoint_path={self.model_checkpoint_path!r}, "
            f"all_model_checkpoint_paths={self.all_model_checkpoint_paths!r})"
        )


def _unescape(s: str) -> str:
    return s.replace('\\"', '"').replace("\\\\", "\\")


def _escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"')


def get_checkpoint_state(checkpoint_dir: str, latest_filename: str | None = None):
    """The checkpoint state recorded in ``checkpoint_dir``, or None when there is none."""
    path = os.path.join(checkpoint_dir, latest_filename or "checkpoint")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read(1 << 20)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise errors.DataLossError(
            None, None, f"Cannot read checkpoint state {path}: {e}"
        ) from None
    model, every = None, []
    for line in text.splitlines():
        m = _STATE_LINE.match(line)
        if not m:
            continue
        value = _unescape(m.group(2))
        if not os.path.isabs(value):
            value = os.path.join(checkpoint_dir, value)
        if m.group(1) == "model_checkpoint_path":
            model = value
        else:
            every.append(value)
    if model is None:
        return None
    if not every or every[-1] != model:
        every.append(model)
    return CheckpointState(model, every)


def update_checkpoint_state(
    save_dir: str, model_checkpoint_path: str, all_model_checkpoint_paths=None, latest_filename=None
) -> None:
    """Rewrites the ``checkpoint`` state file of ``save_dir`` (atomically)."""
    all_paths = list(all_model_checkpoint_paths or [])
    if not all_paths or all_paths[-1] != model_checkpoint_path:
        all_paths.append(model_checkpoint_path)

    def rel(p):
        return (
            os.path.relpath(p, save_dir)
            if os.path.dirname(os.path.abspath(p)) == os.path.abspath(save_dir)
            else p
        )

    lines = [f'model_checkpoint_path: "{_escape(rel(model_checkpoint_path))}"']
    lines += [f'all_model_checkpoint_paths: "{_escape(rel(p))}"' for p in all_paths]
    path = os.path.join(save_dir, latest_filename or "checkpoint")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, path)


def checkpoint_exists(checkpoint_prefix: str) -> bool:
    return bundle.bundle_exists(checkpoint_prefix)


def latest_checkpoint(checkpoint_dir: str, latest_filename: str | None = None):
    """The prefix of the newest checkpoint in ``checkpoint_dir``, or None."""
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state and checkpoint_exists(state.model_checkpoint_path):
        return state.model_checkpoint_path
    return None


def _remove_checkpoint(prefix: str) -> None:
    for p in (bundle.index_path(prefix), bundle.data_path(prefix), prefix + ".meta"):
        try:
            os.remove(p)
        except OSError:
            pass


class Saver:
    """Saves and restores variables (all global variables by default).

    >>> saver = Saver(max_to_keep=3)
    >>> path = saver.save(sess, "/tmp/run/model.ckpt", global_step=step)
    >>> saver.restore(sess, latest_checkpoint("/tmp/run"))
    """

    def __init__(
        self,
        var_list=None,
        reshape=False,
        sharded=False,  # noqa: ARG002 - TF API compatibility
        max_to_keep=5,
        keep_checkpoint_every_n_hours=10000.0,
        name=None,
        restore_sequentially=False,  # noqa: ARG002 - TF API compatibility
        saver_def=None,  # noqa: ARG002 - TF API compatibility
        builder=None,  # noqa: ARG002 - TF API compatibility
        defer_build=False,  # noqa: ARG002 - TF API compatibility
        allow_empty=False,
        write_version=2,  # noqa: ARG002 - TF API compatibility
        pad_step_number=False,
        save_relative_paths=False,  # noqa: ARG002 - TF API compatibility
        filename=None,
        format="flowserve",  # noqa: A002
    ):
        if format not in ("flowserve", "tensorflow"):
            raise ValueError(f"format must be 'flowserve' or 'tensorflow', got {format!r}")
        self._format = format
        self._graph = ops.get_default_graph()
        if var_list is None:
            var_list = self._graph.get_collection(
                GraphKeys.GLOBAL_VARIABLES
            ) + self._graph.get_collection(GraphKeys.SAVEABLE_OBJECTS)
        if isinstance(var_list, dict):
            items = sorted(var_list.items())
        else:
            items = []
            for v in var_list:
                if not hasattr(v, "_ref") or not hasattr(v, "op"):
                    raise TypeError(f"Variable to save is not a Variable: {v!r}")
                items.append((v.op.name, v))
        seen = {}
        for key, v in items:
            if key in seen:
                raise ValueError(f"At least two variables have the same name: {key}")
            seen[key] = v
        if not items and not allow_empty:
            raise ValueError("No variables to save")
        self._vars = items
        self._max_to_keep = max_to_keep
        self._keep_every_s = keep_checkpoint_every_n_hours * 3600.0
        self._next_keep_time = time.time() + self._keep_every_s
        self._last_checkpoints: list[tuple[str, float]] = []
        self._pad_step_number = pad_step_number
        self._filename = filename
        self._reshape = reshape
        self._build_restore_ops(name)

    def _build_restore_ops(self, name) -> None:
        self._feeds = {}
        with self._graph.as_default(), ops.control_dependencies(None), ops.name_scope(name, "save"):
            assigns = []
            for key, v in self._vars:
                ph = array_ops.placeholder(v.dtype.base_dtype, shape=None)
                assigns.append(state_ops.assign(v, ph, validate_shape=not self._reshape))
                self._feeds[key] = ph
            self._restore_op = (
                group(*assigns, name="restore_all") if assigns else no_op(name="restore_all")
            )

    @property
    def last_checkpoints(self) -> list[str]:
        return [p for p, _ in self._last_checkpoints]

    def set_last_checkpoints_with_time(self, last_checkpoints_with_time) -> None:
        self._last_checkpoints = list(last_checkpoints_with_time)

    def recover_last_checkpoints(self, checkpoint_paths) -> None:
        self._last_checkpoints = [
            (p, time.time()) for p in checkpoint_paths if checkpoint_exists(p)
        ]

    # -- save -----------------------------------------------------------------------------
    def save(
        self,
        sess,
        save_path,
        global_step=None,
        latest_filename=None,
        meta_graph_suffix="meta",
        write_meta_graph=True,
        write_state=True,
        strip_default_attrs=False,  # noqa: ARG002 - TF API compatibility
        save_debug_info=False,  # noqa: ARG002 - TF API compatibility
    ) -> str:
        """Writes the variables' values in ``sess``; returns the checkpoint prefix."""
        if sess.graph is not self._graph:
            raise ValueError("The session's graph is not the graph this Saver was built for.")
        if global_step is not None:
            if not isinstance(global_step, (int, np.integer)):
                global_step = int(sess.run(global_step))
            step = f"{int(global_step):08d}" if self._pad_step_number else str(int(global_step))
            prefix = f"{save_path}-{step}"
        else:
            prefix = save_path
        save_dir = os.path.dirname(prefix) or "."
        if not os.path.isdir(save_dir):
            raise ValueError(f"Parent directory of {save_path} doesn't exist, can't save.")
        values = sess.run({key: v for key, v in self._vars}) if self._vars else {}
        if self._format == "tensorflow":
            self._save_tensorflow(prefix, values, write_meta_graph, meta_graph_suffix)
            write_meta_graph = False
        else:
            bundle.write_bundle(
                prefix,
                sorted(values.items()),
                metadata={"kind": "checkpoint", "saved_at": time.time()},
            )
        if write_meta_graph and hasattr(self._graph, "as_graph_def"):
            try:
                from engine.saving import meta_graph

                meta_graph.export_meta_graph(
                    prefix + "." + meta_graph_suffix, graph=self._graph, saver=self
                )
            except ImportError:
                pass
        if write_state:
            self._record(prefix, save_dir, latest_filename)
        return prefix

    def _save_tensorflow(self, prefix, values, write_meta_graph, suffix) -> None:
        """A V2 checkpoint TF reads, and (optionally) a ``.meta`` TF's import_meta_graph reads."""
        from engine.saving import meta_graph  # as save() does: meta_graph imports this module

        tf_checkpoint.write_bundle(prefix, values)
        if write_meta_graph:
            meta = meta_graph.meta_graph_from_graph(self._graph)
            data = tf_writer.meta_graph_to_tf(meta, self._graph).SerializeToString()
            tmp = f"{prefix}.{suffix}.tmp"
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, f"{prefix}.{suffix}")

    def _record(self, prefix, save_dir, latest_filename) -> None:
        now = time.time()
        self._last_checkpoints = [(p, t) for p, t in self._last_checkpoints if p != prefix]
        self._last_checkpoints.append((prefix, now))
        if self._max_to_keep:
            while len(self._last_checkpoints) > self._max_to_keep:
                old, saved_at = self._last_checkpoints.pop(0)
                if saved_at >= self._next_keep_time:
                    self._next_keep_time += self._keep_every_s  # kept for keep_every_n_hours
                    continue
                _remove_checkpoint(old)
        update_checkpoint_state(save_dir, prefix, self.last_checkpoints, latest_filename)

    # -- restore ----------------------------------------------------------------------------
    def restore(self, sess, save_path) -> None:
        """Restores every variable of this Saver from the checkpoint at ``save_path``."""
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        if sess.graph is not self._graph:
            raise ValueError("The session's graph is not the graph this Saver was built for.")
        if not checkpoint_exists(save_path):
            raise ValueError(f"The passed save_path is not a valid checkpoint: {save_path}")
        _, entries = bundle.read_index(save_path)
        by_name = {e.name: e for e in entries}
        for key, v in self._vars:
            e = by_name.get(key)
            if e is None:
                raise errors.NotFoundError(
                    None,
                    None,
                    f"Restoring from checkpoint failed: key {key} not found in "
                    f"checkpoint {save_path}. The graph has a variable that the "
                    "checkpoint does not.",
                )
            if e.dtype is not v.dtype.base_dtype:
                raise errors.InvalidArgumentError(
                    None,
                    None,
                    f"Restoring {key} from {save_path}: the checkpoint holds "
                    f"{e.dtype.name}, the variable is {v.dtype.base_dtype.name}",
                )
            if not self._reshape and not v.shape.is_compatible_with(e.shape):
                raise errors.InvalidArgumentError(
                    None,
                    None,
                    f"Restoring {key} from {save_path}: the checkpoint holds shape "
                    f"{list(e.shape)}, the variable has shape {v.shape}",
                )
        values = bundle.read_bundle(save_path, names=[k for k, _ in self._vars])
        sess._run_owned(self._restore_op, {self._feeds[k]: values[k] for k, _ in self._vars})
