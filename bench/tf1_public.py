"""Runs the public TF1 example programs (issue 12) with ``import engine as tf`` and reports
which run.

The programs are not ours and are not in this repository: pass the git directories of
``aymericdamien/TensorFlow-Examples`` and ``nlintz/TensorFlow-Tutorials``. Each program is
copied into a scratch directory with only these changes: ``import tensorflow as tf`` becomes
``import engine as tf`` (``--tf`` gives ``tensorflow.compat.v1`` instead, for the oracle
count), ``from tensorflow.contrib ...`` becomes ``from engine.contrib ...``, ``from
__future__`` lines go, the MNIST downloader is replaced by ``tests/programs/tutorials/
mnist_standin.py``, a small synthetic ``text8.zip`` stands in for word2vec's download,
``matplotlib`` is a no-op stand-in, ``np.reshape(x, newshape=...)`` loses the keyword numpy
2.4 removed, and step/epoch counts are capped (scipy must be installed for
variational_autoencoder.py).

    python bench/tf1_public.py --examples GITDIR --tutorials GITDIR [--tf] [--timeout 120]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = ("1_Introduction", "2_BasicModels", "3_NeuralNetworks", "4_Utils", "6_MultiGPU")
STEP_CAP = 20
_STEPS = re.compile(
    r"^(?P<name>(?!time)[A-Za-z_]*(?:steps|epochs|iters|iterations)[A-Za-z_]*)\s*=\s*(?P<n>\d+)",
    re.MULTILINE,
)
_RANGE = re.compile(r"for (?P<v>\w+) in range\((?P<n>\d{3,})\)")
_MPL_STUB = '''"""No-op matplotlib stand-in: the harness has no display."""
import sys

class _Any:
    def __getattr__(self, name):
        return _Any()
    def __call__(self, *a, **k):
        return _Any()
    def __iter__(self):
        return iter((_Any(), _Any()))
    def __getitem__(self, k):
        return _Any()

pyplot = gridspec = cm = _Any()
for _sub in ("pyplot", "gridspec", "cm"):
    sys.modules[__name__ + "." + _sub] = _Any()


def __getattr__(name):
    return _Any()
'''


def _list(gitdir: str, prefix: str) -> list[str]:
    out = subprocess.run(
        ["git", f"--git-dir={gitdir}", "ls-tree", "-r", "--name-only", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [p for p in out if p.startswith(prefix) and p.endswith(".py")]


def _show(gitdir: str, path: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={gitdir}", "show", f"HEAD:{path}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def rewrite(src: str, use_tf: bool) -> str:
    """The program with the harness's (and only the harness's) changes."""
    lines = []
    for line in src.splitlines():
        s = line.strip()
        if s.startswith("from __future__"):
            continue
        if re.match(r"from tensorflow\.examples\.tutorials\.mnist import input_data", s):
            line = line.replace(s, "import mnist_standin as input_data")
        elif not use_tf:
            line = re.sub(r"^(\s*)import tensorflow as tf\b", r"\1import engine as tf", line)
            line = re.sub(r"^(\s*)from tensorflow\.contrib\b", r"\1from engine.contrib", line)
            line = re.sub(r"^(\s*)import tensorflow\.contrib\b", r"\1import engine.contrib", line)
        else:
            line = re.sub(
                r"^(\s*)import tensorflow as tf\b",
                r"\1import tensorflow.compat.v1 as tf; tf.disable_v2_behavior()",
                line,
            )
        lines.append(line)
    out = "\n".join(lines) + "\n"
    out = _STEPS.sub(lambda m: f"{m['name']} = {min(int(m['n']), STEP_CAP)}", out)
    out = _RANGE.sub(lambda m: f"for {m['v']} in range({min(int(m['n']), STEP_CAP)})", out)
    # numpy 2.4 removed np.reshape's ``newshape=`` keyword (a numpy change, not a TF one)
    return out.replace("newshape=", "")


def _text8(path: str) -> None:
    """A small synthetic stand-in for word2vec's text8.zip (Zipf-distributed words)."""
    rng = np.random.default_rng(0)
    # the words word2vec.py evaluates come first, so they are frequent enough to be kept
    evals = ["five", "of", "going", "hardware", "american", "britain"]
    vocab = evals + [f"w{i}" for i in range(2000)]
    ranks = np.minimum(rng.zipf(1.3, 60000), len(vocab)) - 1
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("text8", " ".join(vocab[r] for r in ranks))


def prepare(args) -> list[tuple[str, str]]:
    shutil.rmtree(args.scratch, ignore_errors=True)
    os.makedirs(os.path.join(args.scratch, "matplotlib"))
    with open(os.path.join(args.scratch, "matplotlib", "__init__.py"), "w") as f:
        f.write(_MPL_STUB)
    shutil.copy(
        os.path.join(ROOT, "tests", "programs", "tutorials", "mnist_standin.py"), args.scratch
    )
    _text8(os.path.join(args.scratch, "text8.zip"))
    programs = []
    for folder in FOLDERS:
        for p in _list(args.examples, f"tensorflow_v1/examples/{folder}/"):
            programs.append((f"{folder}/{os.path.basename(p)}", _show(args.examples, p)))
    for p in _list(args.tutorials, ""):
        if "/" not in p and re.match(r"\d\d_", p):
            programs.append((f"nlintz/{p}", _show(args.tutorials, p)))
    out = []
    for name, src in programs:
        target = os.path.join(args.scratch, name.replace("/", "__"))
        with open(target, "w") as f:
            f.write(rewrite(src, args.tf))
        out.append((name, target))
    return out


def first_error(stderr: str) -> str:
    lines = [x for x in stderr.strip().splitlines() if x and not x.startswith(" ")]
    for line in reversed(lines):
        if re.match(r"^[\w.]+(Error|Exception|Exit)\b|^[\w.]+: ", line):
            return line[:200]
    return (lines[-1] if lines else "")[:200]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--examples", required=True, help="git dir of aymericdamien/TensorFlow-Examples"
    )
    ap.add_argument("--tutorials", required=True, help="git dir of nlintz/TensorFlow-Tutorials")
    ap.add_argument("--scratch", default="/tmp/tf1_public")
    ap.add_argument("--tf", action="store_true", help="run with tensorflow.compat.v1 (oracle)")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--only", default="", help="substring filter on program names")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    programs = [p for p in prepare(args) if args.only in p[0]]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([args.scratch, ROOT]))
    env.update(MPLBACKEND="Agg", TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    results = []
    for name, path in programs:
        t0 = time.monotonic()
        try:
            proc = subprocess.run(
                [sys.executable, path],
                cwd=args.scratch,
                env=env,
                capture_output=True,
                text=True,
                timeout=args.timeout,
            )
            ok, reason = (
                proc.returncode == 0,
                "" if proc.returncode == 0 else first_error(proc.stderr),
            )
        except subprocess.TimeoutExpired:
            ok, reason = False, f"timeout after {args.timeout:.0f} s"
        results.append({"program": name, "ok": ok, "reason": reason, "s": time.monotonic() - t0})
        print(f"| {name} | {'runs' if ok else 'FAILS'} | {reason} |", flush=True)
    n = sum(r["ok"] for r in results)
    print(f"\n{n} of {len(results)} run ({'tensorflow.compat.v1' if args.tf else 'engine'})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
