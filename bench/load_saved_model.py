"""Loading a SavedModel with ~200 MB of variables vs reading the same bytes with numpy.

Writes a model whose variables total ``--mb`` megabytes (several large float32 matrices),
then in the same process times, from a warm page cache:

* numpy: ``numpy.fromfile`` of the variables data file (the floor: just reading bytes);
* load: ``saved_model.load`` into a fresh graph and session (parse, import, verify crc32,
  restore every variable);
* load without checksum verification.

The project's target: load at most 2x the numpy read.

    python bench/load_saved_model.py [--mb 200] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import engine as tf  # noqa: E402
from engine.saving.saved_model import LoadOptions  # noqa: E402


def build(export_dir: str, total_mb: int) -> int:
    n_vars = 8
    per_var = total_mb * (1 << 20) // n_vars // 4
    side = int(per_var**0.5)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, side], name="x")
        h = x
        for i in range(n_vars):
            # Initializers, not numpy constants: the graph stays small and the values live
            # only in the variables bundle.
            w = tf.get_variable(
                f"w{i}", [side, side], initializer=tf.random_normal_initializer(stddev=0.01, seed=i)
            )
            h = tf.matmul(h, w)
        with tf.Session(graph=g) as sess:
            sess.run(tf.global_variables_initializer())
            tf.saved_model.simple_save(sess, export_dir, {"x": x}, {"y": h})
    return n_vars * side * side * 4


def timed(fn, repeats):
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="fs-load-bench-")
    try:
        export_dir = os.path.join(tmp, "model")
        nbytes = build(export_dir, args.mb)
        data = os.path.join(export_dir, "variables", "variables.data-00000-of-00001")

        def read_numpy():
            return np.fromfile(data, dtype=np.float32)

        def load(verify=True):
            g = tf.Graph()
            with tf.Session(graph=g) as sess:
                tf.saved_model.load(
                    sess, ["serve"], export_dir, options=LoadOptions(verify_checksums=verify)
                )

        read_numpy()  # warm the page cache
        t_np = timed(read_numpy, args.repeats)
        t_load = timed(load, args.repeats)
        t_noverify = timed(lambda: load(False), args.repeats)
        result = {
            "variables_bytes": nbytes,
            "numpy_fromfile_s": round(t_np, 4),
            "load_s": round(t_load, 4),
            "load_no_checksum_s": round(t_noverify, 4),
            "ratio": round(t_load / t_np, 2),
            "ratio_no_checksum": round(t_noverify / t_np, 2),
        }
        print(f"variables: {nbytes / 2**20:.1f} MiB")
        print(f"numpy.fromfile          {t_np * 1e3:9.1f} ms")
        print(
            f"saved_model.load        {t_load * 1e3:9.1f} ms   ratio {result['ratio']:.2f}x"
            "  (target <= 2x)"
        )
        print(
            f"load, no crc32 verify   {t_noverify * 1e3:9.1f} ms   ratio "
            f"{result['ratio_no_checksum']:.2f}x"
        )
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=2))
        return 0 if result["ratio"] <= 2.0 else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
