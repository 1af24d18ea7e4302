"""``python -m engine``: inspect and run SavedModels (and ONNX models) from the command line.

    python -m engine inspect EXPORT_DIR|model.onnx [--tag serve] [--html OUT.html]
    python -m engine convert EXPORT_DIR OUTPUT_DIR --format tensorflow|flowserve [--tag serve]
    python -m engine run EXPORT_DIR [--signature serving_default] --input x=path.npy
                         [--input y='[[1, 2]]'] [--output-dir DIR] [--optimize]

Errors print one line to stderr and exit with status 1 (2 for usage errors).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

import engine as tf
from engine import errors, graph_inspection, graph_view
from engine.formats.tensorflow.inspect import describe
from engine.formats.tensorflow.saved_model import is_tf_saved_model
from engine.saving import bundle
from engine.saving.saved_model import (
    SAVED_MODEL_FILENAME,
    VARIABLES_DIRECTORY,
    VARIABLES_FILENAME,
    LoadOptions,
    read_saved_model,
)

_MAX_NPY_BYTES = 1 << 30


def _fmt_shape(info) -> str:
    return str(info.shape)


def _inspect_tensorflow(export_dir: str) -> None:
    print(f"TensorFlow SavedModel: {os.path.abspath(export_dir)}")
    for meta in describe(export_dir):
        version = meta["tensorflow_version"] or "unknown"
        print(f"\nMeta graph with tags {meta['tags']} (written by TensorFlow {version}):")
        for key, sig in meta["signatures"].items():
            print(f"  signature {key!r} ({sig['method_name']}):")
            for kind in ("inputs", "outputs"):
                for alias, info in sig[kind].items():
                    print(
                        f"    {kind[:-1]:6} {alias!r:20} {info['name']:30} "
                        f"{info['dtype']:8} {info['shape']}"
                    )
        counts = meta["op_counts"]
        print(f"  ops: {sum(counts.values())} in total ({meta['functions']} functions included)")
        for op_type, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"    {op_type:28} {n:>6}")
        if meta["error"]:
            print(f"  cannot be served: {meta['error']}")
        elif meta["missing_ops"]:
            listed = ", ".join(f"{t} ({n})" for t, n in meta["missing_ops"].items())
            print(f"  missing ops (not implemented by flowserve): {listed}")
        else:
            print("  missing ops: none")


def _onnx_path(path: str) -> str | None:
    """The model.onnx to use for ``path`` (a .onnx file or a dir holding only one), or None."""
    if os.path.isfile(path) and path.endswith(".onnx"):
        return path
    if os.path.isdir(path) and not os.path.isfile(os.path.join(path, "saved_model.msgpack")):
        candidate = os.path.join(path, "model.onnx")
        if os.path.isfile(candidate):
            return candidate
    return None


def _fmt_dims(dims) -> str:
    return (
        "<unknown rank>"
        if dims is None
        else "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"
    )


def inspect_onnx(path: str) -> int:
    s = tf.onnx.summarize(path)
    print(f"ONNX model: {os.path.abspath(path)}")
    print(f"  ir_version {s.ir_version}, opset {s.opset}, producer {s.producer or '-'}")
    for kind, infos in (("input", s.inputs), ("output", s.outputs)):
        for name, dtype, dims in infos:
            print(f"    {kind:6} {name!r:30} {dtype:8} {_fmt_dims(dims)}")
    print(f"  initializers: {s.initializer_bytes} bytes ({s.initializer_bytes / 2**20:.2f} MiB)")
    print(f"  operators: {sum(s.op_histogram.values())} in total")
    for op_type, n in s.op_histogram.items():
        print(f"    {op_type:28} {n:>6}")
    if s.unsupported:
        listed = ", ".join(f"{k} (x{v})" for k, v in s.unsupported.items())
        print(f"  unsupported operators: {listed}")
    else:
        print("  unsupported operators: none")
    return 0


def cmd_inspect(args) -> int:
    if args.html:
        return _write_html(args)
    onnx_path = _onnx_path(args.export_dir)
    if onnx_path is not None:
        return inspect_onnx(onnx_path)
    tf_format = is_tf_saved_model(args.export_dir) and not os.path.isfile(
        os.path.join(args.export_dir, SAVED_MODEL_FILENAME)
    )
    if tf_format:
        _inspect_tensorflow(args.export_dir)
        metas = []
    else:
        metas = read_saved_model(args.export_dir)
        print(f"SavedModel: {os.path.abspath(args.export_dir)}")
    for meta in metas:
        print(f"\nMeta graph with tags {meta.tags}:")
        for key in sorted(meta.signature_def):
            sig = meta.signature_def[key]
            print(f"  signature {key!r} ({sig.method_name}):")
            for kind, infos in (("input", sig.inputs), ("output", sig.outputs)):
                for alias in sorted(infos):
                    info = infos[alias]
                    print(
                        f"    {kind:6} {alias!r:20} {info.name:30} "
                        f"{info.engine_dtype.name:8} {_fmt_shape(info)}"
                    )
        counts = meta.graph_def.op_counts()
        print(f"  ops: {sum(counts.values())} in total")
        for op_type, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"    {op_type:28} {n:>6}")
    prefix = os.path.join(args.export_dir, VARIABLES_DIRECTORY, VARIABLES_FILENAME)
    if bundle.bundle_exists(prefix):
        _, entries = bundle.read_index(prefix)
        total = sum(e.size for e in entries)
        print(f"\nVariables: {len(entries)}, {total} bytes ({total / 2**20:.2f} MiB)")
        for e in sorted(entries, key=lambda e: e.name):
            print(f"    {e.name:40} {e.dtype.name:8} {list(e.shape)} {e.size} bytes")
    else:
        print("\nVariables: none")
    return 0


def _write_html(args) -> int:
    """Writes the interactive graph view of the meta graph tagged ``args.tag``, as loaded
    for serving (signatures included), to one self-contained HTML file."""
    graph = tf.Graph()
    onnx_path = _onnx_path(args.export_dir)
    with tf.Session(graph=graph) as sess:
        if onnx_path is not None:
            meta = tf.onnx.load(sess, onnx_path)
        else:  # flowserve's SavedModels and TensorFlow's
            meta = tf.saved_model.load(sess, args.tag, args.export_dir)
    description = graph_inspection.describe_graph(graph)
    description["signatures"] = {
        key: {
            kind: {
                alias: {"name": i.name, "dtype": i.engine_dtype.name, "shape": str(i.shape)}
                for alias, i in sorted(infos.items())
            }
            for kind, infos in (("inputs", sig.inputs), ("outputs", sig.outputs))
        }
        for key, sig in sorted(meta.signature_def.items())
    }
    page = graph_view.render_html(
        description,
        title=f"Graph of {os.path.abspath(args.export_dir)}",
        subtitle=f"{description['op_count']} ops; signatures: "
        + ", ".join(sorted(meta.signature_def)),
    ).encode("utf-8")
    with open(args.html, "wb") as f:
        f.write(page)
    print(f"wrote {args.html} ({description['op_count']} ops, {len(page)} bytes)")
    return 0


def _parse_input(spec: str):
    if "=" not in spec:
        raise ValueError(f"--input {spec!r}: expected ALIAS=PATH.npy or ALIAS=JSON")
    alias, value = spec.split("=", 1)
    if value.endswith(".npy"):
        try:
            if os.path.getsize(value) > _MAX_NPY_BYTES:
                raise ValueError(f"--input {alias}: {value} is larger than 1 GiB")
            return alias, np.load(value, allow_pickle=False)
        except FileNotFoundError:
            raise ValueError(f"--input {alias}: file {value} does not exist") from None
        except (OSError, ValueError) as e:
            raise ValueError(f"--input {alias}: cannot read {value} as .npy ({e})") from None
    try:
        return alias, json.loads(value)
    except json.JSONDecodeError as e:
        raise ValueError(
            f"--input {alias}: {value!r} is neither a .npy path nor JSON ({e})"
        ) from None


def cmd_run(args) -> int:
    inputs = dict(_parse_input(s) for s in args.input)
    graph = tf.Graph()
    with tf.Session(graph=graph) as sess:
        onnx_path = _onnx_path(args.export_dir)
        if onnx_path is not None:
            meta = tf.onnx.load(sess, onnx_path)
        else:
            meta = tf.saved_model.load(
                sess, args.tag, args.export_dir, options=LoadOptions(optimize=args.optimize)
            )
        sig = meta.signature_def.get(args.signature)
        if sig is None:
            raise ValueError(
                f"signature {args.signature!r} not found; the model has "
                f"{sorted(meta.signature_def)}"
            )
        missing = sorted(set(sig.inputs) - set(inputs))
        unknown = sorted(set(inputs) - set(sig.inputs))
        if missing or unknown:
            raise ValueError(
                f"signature {args.signature!r} takes inputs "
                f"{sorted(sig.inputs)}; missing {missing}, unknown {unknown}"
            )
        feeds = {sig.inputs[a].name: v for a, v in inputs.items()}
        aliases = sorted(sig.outputs)
        values = sess.run([sig.outputs[a].name for a in aliases], feeds)
    if args.output_dir:
        os.makedirs(args.output_dir, exist_ok=True)
        for alias, v in zip(aliases, values):
            path = os.path.join(args.output_dir, f"{alias}.npy")
            np.save(path, np.asarray(v), allow_pickle=False)
            print(f"{alias}: wrote {path}")
    else:
        np.set_printoptions(threshold=200, linewidth=100)
        for alias, v in zip(aliases, values):
            arr = np.asarray(v)
            print(f"{alias} (dtype {arr.dtype}, shape {list(arr.shape)}):\n{arr}")
    return 0


def cmd_convert(args) -> int:
    """Loads a SavedModel of either format and writes it in ``args.format``."""
    graph = tf.Graph()
    with tf.Session(graph=graph) as sess:
        meta = tf.saved_model.load(sess, args.tag, args.export_dir)
        builder = tf.saved_model.Builder(args.output_dir)
        with graph.as_default():
            builder.add_meta_graph_and_variables(
                sess, args.tag, signature_def_map=dict(meta.signature_def)
            )
    builder.save(format=args.format)
    print(f"wrote {args.output_dir} ({args.format} format)")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m engine", description="Inspect and run flowserve SavedModels."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("inspect", help="print signatures, op counts and variables")
    p.add_argument("export_dir")
    p.add_argument(
        "--tag", action="append", default=None, help="meta graph tag (repeatable; default: serve)"
    )
    p.add_argument(
        "--html", metavar="OUT.html", help="write the interactive graph view to one HTML file"
    )
    p.set_defaults(fn=cmd_inspect)
    p = sub.add_parser("run", help="run a signature on inputs and print or save the outputs")
    p.add_argument("export_dir")
    p.add_argument(
        "--tag", action="append", default=None, help="meta graph tag (repeatable; default: serve)"
    )
    p.add_argument("--signature", default="serving_default")
    p.add_argument("--input", action="append", default=[], metavar="ALIAS=PATH.npy|JSON")
    p.add_argument("--output-dir", help="write each output to DIR/<alias>.npy")
    p.add_argument("--optimize", action="store_true", help="optimize the graph when loading")
    p.set_defaults(fn=cmd_run)
    p = sub.add_parser("convert", help="write a SavedModel in TensorFlow's or flowserve's format")
    p.add_argument("export_dir")
    p.add_argument("output_dir")
    p.add_argument("--format", choices=("tensorflow", "flowserve"), required=True)
    p.add_argument(
        "--tag", action="append", default=None, help="meta graph tag (repeatable; default: serve)"
    )
    p.set_defaults(fn=cmd_convert)
    args = parser.parse_args(argv)
    if getattr(args, "tag", None) is None:
        args.tag = ["serve"]
    try:
        return args.fn(args)
    except (errors.OpError, ValueError, TypeError, RuntimeError, OSError) as e:
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        print(f"error: {msg}", file=sys.stderr)
        return 1
