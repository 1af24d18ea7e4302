"""Loads models other tools made, runs them on the engine and compares.

For each ``MODEL/`` under the given directories (written by ``export_keras.py`` and
``export_torch.py``): a TensorFlow SavedModel (``MODEL/1/saved_model.pb``) loads with
``tf.saved_model.load``, an ONNX model (``MODEL/1/model.onnx``) with ``engine.onnx``; both
run on ``reference.npz``'s inputs. ONNX models also run on onnxruntime (CPU, one intra-op
thread, as the engine here), the reference for their values and timing. Prints one row per
model: load seconds, median run milliseconds (engine, onnxruntime), and the largest
difference from the producer's recorded outputs and from onnxruntime's.

    python bench/real_models/check.py DIR [DIR ...] [--only NAME] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import engine as tf  # noqa: E402


def _median_ms(fn, repeats=3) -> float:
    fn()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples)


def _diff(got: list, want: list) -> float | None:
    if not want:
        return None
    worst = 0.0
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape:
            return float("inf")
        if g.size:
            worst = max(worst, float(np.max(np.abs(g.astype(np.float64) - w.astype(np.float64)))))
    return worst


def _saved_model(path: Path, ref) -> dict:
    t0 = time.perf_counter()
    g = tf.Graph()
    sess = tf.Session(graph=g)
    with g.as_default():
        meta = tf.saved_model.load(sess, ["serve"], str(path / "1"))
    load = time.perf_counter() - t0
    sig = meta.signature_def["serving_default"]
    (inp,) = sig.inputs.values()
    outs = [o.name for o in sig.outputs.values()]
    run = lambda: sess.run(outs, {inp.name: ref["x"]})  # noqa: E731
    got = run()
    return {"load_s": load, "engine_ms": _median_ms(run), "vs_producer": _diff(got, [ref["y"]])}


def _onnx(path: Path, ref) -> dict:
    import onnxruntime as ort

    data = (path / "1" / "model.onnx").read_bytes()
    inputs = [ref[k] for k in sorted(ref.files, key=_index) if k.startswith("input_")]
    want = [ref[k] for k in sorted(ref.files, key=_index) if k.startswith("output_")]
    t0 = time.perf_counter()
    m = tf.onnx.import_model(data)
    load = time.perf_counter() - t0
    sess = tf.Session(graph=m.graph)
    in_names = list(m.signature.inputs)
    feed = {m.signature.inputs[n].name: v for n, v in zip(in_names, inputs)}
    fetch = [m.signature.outputs[n].name for n in m.signature.outputs]
    run = lambda: sess.run(fetch, feed)  # noqa: E731
    got = run()
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    ort_sess = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
    ort_feed = {i.name: v for i, v in zip(ort_sess.get_inputs(), inputs)}
    ort_run = lambda: ort_sess.run(None, ort_feed)  # noqa: E731
    ort_out = ort_run()
    return {
        "load_s": load,
        "engine_ms": _median_ms(run),
        "ort_ms": _median_ms(ort_run),
        "vs_producer": _diff(got, want),
        "vs_onnxruntime": _diff(got, ort_out),
        "ops": len(m.op_histogram),
    }


def _index(key: str) -> int:
    return int(key.rsplit("_", 1)[1]) if key[-1].isdigit() else -1


def check(path: Path) -> dict:
    ref = np.load(path / "reference.npz")
    row = {"model": path.name, "producer": str(ref["producer"])}
    try:
        if (path / "1" / "model.onnx").exists():
            row |= _onnx(path, ref)
        else:
            row |= _saved_model(path, ref)
        row["result"] = "ok"
    except Exception as e:  # a model that fails is a row, not the end of the run
        row["result"] = f"{type(e).__name__}: {str(e)[:300]}"
    return row


def _fmt(v, spec):
    return "" if v is None else format(v, spec)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dirs", nargs="+", type=Path)
    p.add_argument("--only", action="append", default=[])
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    rows = []
    print("| model | load s | engine ms | onnxruntime ms | diff: producer | onnxruntime | result |")
    print("|---|---|---|---|---|---|---|")
    for d in args.dirs:
        for path in sorted(q for q in d.iterdir() if (q / "reference.npz").exists()):
            if args.only and path.name not in args.only:
                continue
            row = check(path)
            rows.append(row)
            print(
                f"| {row['model']} | {_fmt(row.get('load_s'), '.2f')} | "
                f"{_fmt(row.get('engine_ms'), '.1f')} | {_fmt(row.get('ort_ms'), '.1f')} | "
                f"{_fmt(row.get('vs_producer'), '.2g')} | "
                f"{_fmt(row.get('vs_onnxruntime'), '.2g')} | "
                f"{row['result']} |",
                flush=True,
            )
    ok = sum(r["result"] == "ok" for r in rows)
    print(f"{ok} of {len(rows)} models load and run")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0 if ok == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
