"""The ONNX project's backend test cases, run on the engine.

Two sources, both from the installed ``onnx`` wheel:

- the node-level cases (``onnx/backend/test/case/node``): newer wheels no longer ship them as
  files, so they are generated once from the wheel's own case definitions (the same code that
  writes ``onnx/backend/test/data/node``) into a cache directory keyed by the onnx version;
- the converted-model cases the wheel ships as files (``data/pytorch-converted``,
  ``data/pytorch-operator``, ``data/simple``, ``data/light``).

Each case is a ``model.onnx`` plus ``test_data_set_N/{input,output}_K.pb``. ``run_case``
imports the model with ``engine.onnx``, runs it, and compares with the recorded outputs.

``python -m tests.engine.onnx_conformance`` runs every case, prints pass/fail counts and the
main failure reasons, and with ``--update`` adds newly passing cases to the committed list
(``onnx_conformance_passing.txt``; cases are only ever added).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

PASSING_FILE = Path(__file__).with_name("onnx_conformance_passing.txt")
SHIPPED_KINDS = ("pytorch-converted", "pytorch-operator", "simple", "light")
# Runs under FLOWSERVE_TEST_DEVICE=gpu place the cases on a real GPU (see tests/conftest.py).
_ON_GPU = os.environ.get("FLOWSERVE_TEST_DEVICE", "").strip().lower() == "gpu"


def onnx_version() -> str | None:
    try:
        import onnx
    except ImportError:
        return None
    return onnx.__version__


def cache_dir() -> Path:
    root = os.environ.get("FLOWSERVE_ONNX_CASES")
    if root:
        return Path(root)
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "flowserve" / f"onnx-node-cases-{onnx_version()}"


def _generate_node_cases(dest: Path) -> None:
    """Writes the wheel's node cases (tensor inputs only) under ``dest``, atomically."""
    from onnx import numpy_helper
    from onnx.backend.test.case import node

    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=".gen-"))
    try:
        for case in node.collect_testcases(None):
            graph = case.model.graph
            if not all(i.type.HasField("tensor_type") for i in graph.input) or not all(
                o.type.HasField("tensor_type") for o in graph.output
            ):
                continue
            d = tmp / case.name
            d.mkdir()
            (d / "model.onnx").write_bytes(case.model.SerializeToString())
            (d / "tolerance.json").write_text(json.dumps({"rtol": case.rtol, "atol": case.atol}))
            for n, (inputs, outputs) in enumerate(case.data_sets):
                ds = d / f"test_data_set_{n}"
                ds.mkdir()
                for kind, values, infos in (
                    ("input", inputs, graph.input),
                    ("output", outputs, graph.output),
                ):
                    for k, v in enumerate(values):
                        t = v if hasattr(v, "SerializeToString") else None
                        if t is None:
                            t = numpy_helper.from_array(np.asarray(v), infos[k].name)
                        (ds / f"{kind}_{k}.pb").write_bytes(t.SerializeToString())
        try:
            tmp.rename(dest)
        except OSError:  # another process generated it first
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def case_dirs() -> dict[str, Path]:
    """Every case: ``node/<name>`` and ``<shipped kind>/<name>`` -> its directory."""
    import onnx

    out = {}
    node_dir = cache_dir()
    if not node_dir.is_dir():
        _generate_node_cases(node_dir)
    for d in sorted(node_dir.iterdir()):
        out[f"node/{d.name}"] = d
    data = Path(onnx.__file__).parent / "backend" / "test" / "data"
    for kind in SHIPPED_KINDS:
        for d in sorted((data / kind).iterdir()) if (data / kind).is_dir() else []:
            if (d / "model.onnx").is_file():
                out[f"{kind}/{d.name}"] = d
            elif d.suffix == "" and kind == "light":
                continue
    return out


def _read_tensor(path: Path) -> np.ndarray:
    from engine.formats.onnx.proto import decode
    from engine.formats.onnx.tensors import tensor_to_array

    return tensor_to_array(decode(path.read_bytes(), "TensorProto"))


def run_case(d: Path) -> None:
    """Imports and runs one case; raises AssertionError (or the engine's error) on failure."""
    import engine as tf

    tol = {"rtol": 1e-3, "atol": 1e-7}
    if (d / "tolerance.json").is_file():
        tol.update(json.loads((d / "tolerance.json").read_text()))
    # The engine computes in the model's own dtype; allow float32 rounding on top.
    tol["atol"] = max(tol["atol"], 1e-5)
    model = tf.onnx.import_model(d / "model.onnx")
    sig = model.signature
    with tf.Session(graph=model.graph) as sess:
        for ds in sorted(d.glob("test_data_set_*")):
            inputs = [_read_tensor(p) for p in sorted(ds.glob("input_*.pb"), key=_index)]
            expected = [_read_tensor(p) for p in sorted(ds.glob("output_*.pb"), key=_index)]
            names = list(sig.inputs)
            feed = {sig.inputs[n].name: v for n, v in zip(names, inputs)}
            outs = sess.run([sig.outputs[n].name for n in sig.outputs], feed)
            assert len(outs) == len(expected), f"{len(outs)} outputs, expected {len(expected)}"
            for k, (got, want) in enumerate(zip(outs, expected)):
                got = np.asarray(got)
                assert got.shape == want.shape, f"output {k}: shape {got.shape} != {want.shape}"
                if want.dtype.kind == "O":
                    assert got.tolist() == want.tolist(), f"output {k} differs"
                    continue
                assert got.dtype == want.dtype, f"output {k}: dtype {got.dtype} != {want.dtype}"
                rtol, atol = tol["rtol"], tol["atol"]
                if want.size and 0 < np.nanmax(np.abs(want)) <= atol:
                    # Every expected value is within the absolute tolerance of zero (the
                    # wheel's test_operator_add_size1_broadcast records denormals near
                    # 1e-309), so any small output would match: compare relatively.
                    atol = 0.0
                if want.dtype == np.float16 and _ON_GPU:
                    # cuBLAS sums half-precision products in another order and precision than
                    # the numpy reference; through a softmax that reaches 4 half ulps.
                    rtol = max(rtol, 2.0**-8)
                np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"output {k}")


def _index(p: Path) -> int:
    return int(p.stem.rsplit("_", 1)[1])


def passing_list() -> list[str]:
    if not PASSING_FILE.is_file():
        return []
    lines = PASSING_FILE.read_text().splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]


def _reason(e: BaseException) -> str:
    msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    if "unsupported operator" in msg:
        return "unsupported: " + msg.split(": ", 1)[-1]
    if isinstance(e, AssertionError):
        return "wrong result"
    return f"{type(e).__name__}: {msg[:100]}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--update", action="store_true", help="add newly passing cases to the list")
    p.add_argument("--verbose", action="store_true", help="print every failure")
    p.add_argument("pattern", nargs="?", default="", help="only cases containing this")
    args = p.parse_args(argv)
    cases = {k: v for k, v in case_dirs().items() if args.pattern in k}
    passed, reasons, failures = [], Counter(), {}
    for name, d in cases.items():
        try:
            run_case(d)
            passed.append(name)
        except Exception as e:  # noqa: BLE001 - a report of every failure kind
            reasons[_reason(e)] += 1
            failures[name] = f"{type(e).__name__}: {str(e)[:300]}"
    by_kind = Counter(n.split("/")[0] for n in cases)
    ok_kind = Counter(n.split("/")[0] for n in passed)
    for kind in sorted(by_kind):
        print(f"{kind}: {ok_kind[kind]}/{by_kind[kind]} pass")
    print(f"total: {len(passed)}/{len(cases)} pass")
    print("main failure reasons:")
    for reason, n in reasons.most_common(40):
        print(f"  {n:4d}  {reason}")
    if args.verbose:
        for name, msg in failures.items():
            print(f"FAIL {name}: {msg}")
    known = set(passing_list())
    lost = sorted(known & set(cases) - set(passed))
    if lost:
        print(f"REGRESSED ({len(lost)}): {', '.join(lost)}")
    if args.update:
        merged = sorted(known | set(passed))
        header = "# ONNX backend cases that pass on the engine; only ever add to this list.\n"
        PASSING_FILE.write_text(header + "\n".join(merged) + "\n")
        print(f"{PASSING_FILE.name}: {len(merged)} cases ({len(merged) - len(known)} new)")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
