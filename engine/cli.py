"""``python -m engine``: inspect and run SavedModels from the command line.

    python -m engine inspect EXPORT_DIR [--tag serve]
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
from engine import errors
from engine.saving import bundle
from engine.saving.saved_model import (
    VARIABLES_DIRECTORY,
    VARIABLES_FILENAME,
    LoadOptions,
    read_saved_model,
)

_MAX_NPY_BYTES = 1 << 30


def _fmt_shape(info) -> str:
    return str(info.shape)


def cmd_inspect(args) -> int:
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m engine", description="Inspect and run flowserve SavedModels."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("inspect", help="print signatures, op counts and variables")
    p.add_argument("export_dir")
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
    args = parser.parse_args(argv)
    if getattr(args, "tag", None) is None:
        args.tag = ["serve"]
    try:
        return args.fn(args)
    except (errors.OpError, ValueError, TypeError, RuntimeError, OSError) as e:
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        print(f"error: {msg}", file=sys.stderr)
        return 1
