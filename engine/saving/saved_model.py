"""SavedModel directories: a model's graph, variable values and serving signatures.

Layout::

    export_dir/saved_model.msgpack    meta graphs (tags, graph, signatures, variables)
    export_dir/variables/variables.index, variables.data-00000-of-00001
    export_dir/assets/                optional files the model reads

``Builder`` writes to a temporary sibling directory and renames it into place, so a model
repository watcher never sees a half-written version. ``load`` validates everything it reads
(sizes, dtypes, shapes, op types) and raises typed errors naming the file.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile

from engine import errors
from engine.formats.tensorflow import checkpoint as tf_checkpoint
from engine.formats.tensorflow import saved_model as tf_saved_model
from engine.formats.tensorflow import writer as tf_writer
from engine.formats.tensorflow.tensors import TFFormatError
from engine.framework import graph as ops
from engine.framework.graph import GraphKeys
from engine.ops import array as array_ops
from engine.ops import state as state_ops
from engine.ops.control_flow import group
from engine.saving import bundle, meta_graph
from engine.saving.meta_graph import (
    CLASSIFY_METHOD_NAME,
    PREDICT_METHOD_NAME,
    REGRESS_METHOD_NAME,
    MetaGraphDef,
    SignatureDef,
    TensorInfo,
    build_tensor_info,
)
from engine.saving.optimize import optimize

_log = logging.getLogger("tensorflow")

__all__ = [
    "Builder",
    "SavedModelBuilder",
    "simple_save",
    "load",
    "contains_saved_model",
    "predict_signature_def",
    "build_signature_def",
    "build_tensor_info",
    "MetaGraphDef",
    "SignatureDef",
    "TensorInfo",
    "SAVED_MODEL_FILENAME",
    "VARIABLES_DIRECTORY",
    "VARIABLES_FILENAME",
    "ASSETS_DIRECTORY",
    "DEFAULT_SERVING_SIGNATURE_DEF_KEY",
    "SERVING",
    "TRAINING",
    "GPU",
    "PREDICT_METHOD_NAME",
    "CLASSIFY_METHOD_NAME",
    "REGRESS_METHOD_NAME",
    "PREDICT_INPUTS",
    "PREDICT_OUTPUTS",
    "read_saved_model",
    "LoadOptions",
]

SAVED_MODEL_FILENAME = "saved_model.msgpack"
VARIABLES_DIRECTORY = "variables"
VARIABLES_FILENAME = "variables"
ASSETS_DIRECTORY = "assets"
DEFAULT_SERVING_SIGNATURE_DEF_KEY = "serving_default"
PREDICT_INPUTS = "inputs"
PREDICT_OUTPUTS = "outputs"
SERVING = "serve"
TRAINING = "train"
GPU = "gpu"


def predict_signature_def(inputs: dict, outputs: dict) -> SignatureDef:
    """A Predict signature from ``{alias: tensor}`` maps of inputs and outputs."""
    if not inputs:
        raise ValueError("Prediction inputs cannot be None or empty.")
    if not outputs:
        raise ValueError("Prediction outputs cannot be None or empty.")
    return build_signature_def(
        {k: build_tensor_info(v) for k, v in inputs.items()},
        {k: build_tensor_info(v) for k, v in outputs.items()},
        PREDICT_METHOD_NAME,
    )


def build_signature_def(inputs=None, outputs=None, method_name=PREDICT_METHOD_NAME):
    for where, d in (("inputs", inputs), ("outputs", outputs)):
        for alias, info in (d or {}).items():
            if not isinstance(alias, str) or not alias:
                raise ValueError(
                    f"Signature {where} aliases must be non-empty strings, got {alias!r}"
                )
            if not isinstance(info, TensorInfo):
                raise TypeError(
                    f"Signature {where}[{alias!r}] must be a TensorInfo (use build_tensor_info)"
                )
    return SignatureDef(inputs or {}, outputs or {}, method_name)


def contains_saved_model(export_dir: str) -> bool:
    """True for this engine's SavedModels and TensorFlow's (``saved_model.pb``)."""
    return os.path.isfile(
        os.path.join(export_dir, SAVED_MODEL_FILENAME)
    ) or tf_saved_model.is_tf_saved_model(export_dir)


def _variables_prefix(export_dir: str) -> str:
    return os.path.join(export_dir, VARIABLES_DIRECTORY, VARIABLES_FILENAME)


class Builder:
    """Builds a SavedModel: ``add_meta_graph_and_variables(sess, tags, ...)`` then ``save()``.

    Exporting into an existing non-empty directory fails rather than overwrite it.
    """

    def __init__(self, export_dir: str):
        export_dir = os.fspath(export_dir)
        if os.path.exists(export_dir) and (not os.path.isdir(export_dir) or os.listdir(export_dir)):
            raise errors.AlreadyExistsError(
                None,
                None,
                f"Export directory {export_dir} already exists, and isn't empty. "
                "Choose a different export directory, or delete all the contents "
                "of the specified directory.",
            )
        self._export_dir = export_dir
        self._meta_graphs: list[MetaGraphDef] = []
        self._variables: dict | None = None
        self._assets: dict[str, str] = {}
        self._saved = False

    def add_meta_graph_and_variables(
        self,
        sess,
        tags,
        signature_def_map=None,
        assets_collection=None,
        legacy_init_op=None,
        clear_devices=False,
        main_op=None,
        strip_default_attrs=False,  # noqa: ARG002 - TF API compatibility
        saver=None,  # noqa: ARG002 - TF API compatibility
        assets_list=None,
    ):
        """Adds the session's graph under ``tags`` and snapshots its variables' values."""
        if self._variables is not None:
            raise AssertionError(
                "Graph state including variables and assets has already been "
                "saved. Please invoke `add_meta_graph()` instead."
            )
        graph = sess.graph
        var_list = graph.get_collection(GraphKeys.GLOBAL_VARIABLES) + graph.get_collection(
            GraphKeys.LOCAL_VARIABLES
        )
        seen = {}
        for v in var_list:
            seen.setdefault(v.op.name, v)
        values = sess.run({name: v for name, v in seen.items()}) if seen else {}
        self._variables = values
        self._add(
            graph,
            tags,
            signature_def_map,
            main_op or legacy_init_op,
            clear_devices,
            assets_list or assets_collection,
        )

    def add_meta_graph(
        self,
        tags,
        signature_def_map=None,
        assets_collection=None,
        legacy_init_op=None,
        clear_devices=False,
        main_op=None,
        strip_default_attrs=False,  # noqa: ARG002 - TF API compatibility
        saver=None,  # noqa: ARG002 - TF API compatibility
        assets_list=None,
    ):
        """Adds another meta graph (of the default graph) sharing the saved variables."""
        if self._variables is None:
            raise AssertionError(
                "Graph state including variables and assets has not been "
                "saved yet. Please invoke `add_meta_graph_and_variables()` "
                "first."
            )
        self._add(
            ops.get_default_graph(),
            tags,
            signature_def_map,
            main_op or legacy_init_op,
            clear_devices,
            assets_list or assets_collection,
        )

    def _add(self, graph, tags, signature_def_map, init_op, clear_devices, assets):
        if isinstance(tags, str):
            tags = [tags]
        tags = list(tags or [])
        for m in self._meta_graphs:
            if set(m.tags) == set(tags):
                raise AssertionError(
                    f"A meta graph with tags {sorted(tags)} was already added to this SavedModel."
                )
        asset_names = []
        for a in assets or []:
            path = a if isinstance(a, str) else getattr(a, "asset_path", None)
            if not isinstance(path, str) or not os.path.isfile(path):
                raise ValueError(f"Asset {a!r} is not an existing file")
            name = os.path.basename(path)
            self._assets[name] = path
            asset_names.append(name)
        meta = meta_graph.meta_graph_from_graph(
            graph, tags, signature_def_map, init_op, assets=asset_names
        )
        if clear_devices:
            for n in meta.graph_def._doc["nodes"]:
                n["device"] = ""
        self._meta_graphs.append(meta)

    def save(self, as_text: bool = False, format: str = "flowserve") -> str:  # noqa: A002, ARG002 - TF API
        """Writes the SavedModel; returns the export directory. ``format="tensorflow"`` writes
        TensorFlow's layout instead (``saved_model.pb`` and a V2 checkpoint), which
        ``tf.compat.v1.saved_model.load`` and TF Serving load."""
        if format not in ("flowserve", "tensorflow"):
            raise ValueError(f"format must be 'flowserve' or 'tensorflow', got {format!r}")
        if self._saved:
            raise AssertionError("This SavedModel was already saved.")
        if not self._meta_graphs:
            raise AssertionError("Nothing to save: call add_meta_graph_and_variables() first.")
        export_dir = os.path.abspath(self._export_dir)
        parent = os.path.dirname(export_dir)
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix="." + os.path.basename(export_dir) + ".tmp-", dir=parent)
        try:
            if format == "tensorflow":
                self._write_tensorflow(tmp)
            else:
                bundle.write_bundle(
                    _variables_prefix(tmp),
                    sorted((self._variables or {}).items()),
                    metadata={"kind": "saved_model_variables"},
                )
            if self._assets:
                os.makedirs(os.path.join(tmp, ASSETS_DIRECTORY))
                for name, src in self._assets.items():
                    shutil.copyfile(src, os.path.join(tmp, ASSETS_DIRECTORY, name))
            if format != "tensorflow":
                with open(os.path.join(tmp, SAVED_MODEL_FILENAME), "wb") as f:
                    f.write(meta_graph.encode(self._meta_graphs, "saved_model"))
                    f.flush()
                    os.fsync(f.fileno())
            _make_readable(tmp)
            if os.path.isdir(export_dir):
                if os.listdir(export_dir):
                    raise errors.AlreadyExistsError(
                        None,
                        None,
                        f"Export directory {export_dir} was filled by someone "
                        "else while this model was being saved.",
                    )
                os.rmdir(export_dir)
            os.rename(tmp, export_dir)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        self._saved = True
        return self._export_dir

    def _write_tensorflow(self, directory: str) -> None:
        pairs = []
        for meta in self._meta_graphs:
            graph = ops.Graph()
            with graph.as_default():
                meta_graph.import_graph_def(meta.graph_def, name="")
            pairs.append((meta, graph))
        try:
            sm = tf_writer.saved_model_to_tf(pairs)
        except TFFormatError as e:
            raise ValueError(f"Cannot write the SavedModel in TensorFlow's format: {e}") from None
        tf_checkpoint.write_bundle(_variables_prefix(directory), self._variables or {})
        with open(os.path.join(directory, tf_saved_model.SAVED_MODEL_PB), "wb") as f:
            f.write(sm.SerializeToString())
            f.flush()
            os.fsync(f.fileno())


def _make_readable(root: str) -> None:
    """Gives the export the permissions a plain ``mkdir`` would (mkdtemp makes it 0700), so a
    server running as another user can read it."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(root, 0o777 & ~umask)
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            os.chmod(os.path.join(dirpath, d), 0o777 & ~umask)
        for f in filenames:
            os.chmod(os.path.join(dirpath, f), 0o666 & ~umask)


SavedModelBuilder = Builder


def simple_save(
    session,
    export_dir,
    inputs,
    outputs,
    legacy_init_op=None,
    format="flowserve",  # noqa: A002
) -> str:
    """Saves the session's graph and variables with one ``serving_default`` Predict signature
    (tag ``serve``); ``format="tensorflow"`` writes TensorFlow's layout."""
    b = Builder(export_dir)
    b.add_meta_graph_and_variables(
        session,
        [SERVING],
        signature_def_map={
            DEFAULT_SERVING_SIGNATURE_DEF_KEY: predict_signature_def(inputs, outputs)
        },
        main_op=legacy_init_op,
    )
    return b.save(format=format)


# -----------------------------------------------------------------------------------------
# Loading
# -----------------------------------------------------------------------------------------


class LoadOptions:
    """Loader switches: ``optimize`` rewrites the graph for serving before importing it."""

    def __init__(self, optimize: bool = False, verify_checksums: bool = True):
        self.optimize = optimize
        self.verify_checksums = verify_checksums


def read_saved_model(export_dir: str, tags=None) -> list[MetaGraphDef]:
    """All meta graphs of the SavedModel at ``export_dir`` (validated). A directory holding
    TensorFlow's ``saved_model.pb`` is read as TensorFlow wrote it (with ``tags``, only the
    meta graph so tagged is converted; the others keep only their tags)."""
    path = os.path.join(export_dir, SAVED_MODEL_FILENAME)
    if not os.path.isdir(export_dir):
        raise errors.NotFoundError(None, None, f"SavedModel directory {export_dir} does not exist")
    if not os.path.isfile(path) and tf_saved_model.is_tf_saved_model(export_dir):
        return tf_saved_model.read_meta_graphs(export_dir, tags)
    if not os.path.isfile(path):
        raise errors.NotFoundError(
            None,
            None,
            f"{export_dir} holds no {SAVED_MODEL_FILENAME} (flowserve) or "
            f"{tf_saved_model.SAVED_MODEL_PB} (TensorFlow); it is not a SavedModel directory",
        )
    return meta_graph.decode(meta_graph.read_file(path), path)


class MetaGraphNotFoundError(errors.NotFoundError, RuntimeError):
    """No meta graph has the requested tags: a RuntimeError as in TF, and a NotFoundError
    (an ``OpError``) like every other failure to load a model."""


def _select(metas: list[MetaGraphDef], tags, export_dir) -> MetaGraphDef:
    if isinstance(tags, str):
        tags = [tags]
    wanted = set(tags or [])
    for m in metas:
        if set(m.tags) == wanted:
            return m
    available = [sorted(m.tags) for m in metas]
    raise MetaGraphNotFoundError(
        None,
        None,
        f"MetaGraphDef associated with tags {sorted(wanted)} could not be found "
        f"in SavedModel {export_dir}, with available tags {available}.",
    )


def load(
    sess,
    tags,
    export_dir,
    import_scope=None,
    options: LoadOptions | None = None,
    **saver_kwargs,  # noqa: ARG001 - TF API compatibility
) -> MetaGraphDef:
    """Loads the meta graph tagged ``tags`` into ``sess.graph`` and restores its variables.

    Returns the ``MetaGraphDef``; its ``signature_def[key].inputs/outputs[alias]`` give tensor
    names (with ``import_scope`` prefixed), dtypes and shapes.
    """
    options = options or LoadOptions()
    export_dir = os.fsdecode(export_dir)  # TF's exports return bytes paths; TF loads those too
    meta = _select(read_saved_model(export_dir, tags), tags, export_dir)
    path = os.path.join(export_dir, SAVED_MODEL_FILENAME)
    if not os.path.isfile(path):
        path = os.path.join(export_dir, tf_saved_model.SAVED_MODEL_PB)
    if options.optimize:
        keep = [
            i.name
            for s in meta.signature_def.values()
            for i in list(s.inputs.values()) + list(s.outputs.values())
        ]
        keep += [meta.init_op] if meta.init_op else []
        keep += list(getattr(meta, "restore_keys", {}))
        for rec in meta.variables:
            keep += [rec["initializer"], rec["snapshot"], rec["initial_value"]]
        try:
            meta.graph_def, _ = optimize(meta.graph_def, keep=keep)
        except ValueError as e:  # GraphDefError included: the graph is malformed
            raise errors.DataLossError(None, None, f"{path}: {e}") from None
    with sess.graph.as_default():
        variables = meta_graph.import_into_default_graph(meta, path, import_scope)
        prefix = f"{import_scope}/" if import_scope else ""
        tensorflow_wrote_it = path.endswith(tf_saved_model.SAVED_MODEL_PB)
        _check_signatures(sess.graph, meta, prefix, path, trust_graph=tensorflow_wrote_it)
        keys = getattr(meta, "restore_keys", None)
        if keys is not None:
            # TensorFlow's format: restore what the graph's saver restores, by its keys.
            variables = _saver_targets(sess.graph, variables, keys, prefix, path)
        if variables:
            _restore(sess, variables, export_dir, options.verify_checksums, prefix, keys)
        if meta.init_op:
            try:
                init = sess.graph.get_operation_by_name(prefix + meta.init_op)
            except (KeyError, ValueError):
                raise errors.DataLossError(
                    None, None, f"{path}: init op {meta.init_op!r} is not in the graph"
                ) from None
            try:
                sess.run(init)
            except errors.OpError as e:
                raise type(e)(
                    e.node_def,
                    e.op,
                    f"{path}: running the init op {meta.init_op!r} failed: {e.message}",
                ) from None
    if import_scope:
        for sig in meta.signature_def.values():
            for info in list(sig.inputs.values()) + list(sig.outputs.values()):
                info.name = prefix + info.name
    return meta


def _check_signatures(graph, meta: MetaGraphDef, prefix: str, path: str, trust_graph: bool) -> None:
    """Every signature tensor exists in the imported graph with the dtype and a shape
    compatible with what the signature declares, so serving can trust the signature. In
    TensorFlow's files (``trust_graph``) a contradicted dtype or shape is replaced by the
    tensor's, as TF runs the graph's tensor whatever the signature says; in ours it means
    the file was altered, and the load fails."""
    for key, sig in meta.signature_def.items():
        for alias, info in list(sig.inputs.items()) + list(sig.outputs.items()):
            try:
                t = graph.get_tensor_by_name(prefix + info.name)
            except (KeyError, ValueError, TypeError):
                raise errors.DataLossError(
                    None,
                    None,
                    f"{path}: signature {key!r} names tensor "
                    f"{info.name!r} ({alias!r}), which is "
                    "not in the graph",
                ) from None
            if t.dtype.base_dtype is not info.engine_dtype or not t.shape.is_compatible_with(
                info.shape
            ):
                if not trust_graph:
                    raise errors.DataLossError(
                        None,
                        None,
                        f"{path}: signature {key!r} declares {info.name!r} ({alias!r}) "
                        f"as {info.engine_dtype.name} {info.shape}, but the graph has "
                        f"{t.dtype.base_dtype.name} {t.shape}",
                    )
                # TF Serving's own saved_model_half_plus_three declares a string tensor as
                # float32: serve the graph's, and say so
                _log.warning(
                    "%s: signature %r declares %r (%r) as %s %s, but the graph has %s %s; "
                    "serving the graph's",
                    path,
                    key,
                    info.name,
                    alias,
                    info.engine_dtype.name,
                    info.shape,
                    t.dtype.base_dtype.name,
                    t.shape,
                )
                fixed = TensorInfo(info.name, t.dtype.base_dtype, t.shape)
                (sig.inputs if alias in sig.inputs and sig.inputs[alias] is info else sig.outputs)[
                    alias
                ] = fixed


def _saver_targets(graph, variables, keys: dict, prefix: str, path: str) -> list:
    """The variables (or variable tensors, for TF2 graphs without Variable records) that
    ``keys`` restores."""
    by_name = {v.op.name: v for v in variables}
    targets = []
    for name in keys:
        v = by_name.get(prefix + name)
        if v is None:
            try:
                v = graph.get_tensor_by_name(f"{prefix}{name}:0")
            except (KeyError, ValueError):
                raise errors.DataLossError(
                    None, None, f"{path}: the saver restores {name!r}, which is not in the graph"
                ) from None
        targets.append(v)
    return targets


def _restore(sess, variables, export_dir, verify, scope_prefix="", keys=None) -> None:
    prefix = _variables_prefix(export_dir)
    _, entries = bundle.read_index(prefix)
    by_name = {e.name: e for e in entries}
    feeds = {}
    assigns = []
    with ops.name_scope("saved_model_restore"):
        for v in variables:
            key = v.op.name[len(scope_prefix) :]
            if keys is not None:
                key = keys[key]
            e = by_name.get(key)
            if e is None:
                raise errors.DataLossError(
                    None, None, f"{bundle.index_path(prefix)} has no value for variable {key!r}"
                )
            if e.dtype is not v.dtype.base_dtype:
                raise errors.DataLossError(
                    None,
                    None,
                    f"{bundle.index_path(prefix)}: variable "
                    f"{key!r} is {e.dtype.name} on disk but "
                    f"{v.dtype.base_dtype.name} in the graph",
                )
            if not v.shape.is_compatible_with(e.shape):
                raise errors.DataLossError(
                    None,
                    None,
                    f"{bundle.index_path(prefix)}: variable "
                    f"{key!r} has shape {list(e.shape)} on "
                    f"disk but {v.shape} in the graph",
                )
            ph = array_ops.placeholder(v.dtype.base_dtype, shape=v.shape)
            assigns.append(state_ops.assign(v, ph))
            feeds[key] = ph
        restore_op = group(*assigns, name="restore_all")
    values = bundle.read_bundle(prefix, names=list(feeds), verify=verify)
    sess._run_owned(restore_op, {feeds[k]: values[k] for k in feeds})
