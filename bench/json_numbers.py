"""JSON request bodies to input arrays: the fast parse (``service/protocols/json_numbers.py``,
pysimdjson) against the orjson path it replaces, in process, on the bodies the protocols
parse (TF Serving rows, V2 data; floats written as float64 or float32 text, integers, a
batch of 8 and 64, and bodies the fast parse leaves to orjson).

Each case runs both ways in alternating rounds of CPU time (``time.process_time``), so load
from other work falls on both alike; printed: the median microseconds per body of each and
the fast path's ratio to orjson's (below 1.0x: faster). The arrays are checked identical
first.

    python bench/json_numbers.py [--duration 10]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from engine import dtypes  # noqa: E402
from engine.tensor_shape import TensorShape  # noqa: E402
from service.protocols import json_numbers, tfserving, v2_tensors  # noqa: E402
from service.protocols.common import parse_json  # noqa: E402
from service.tensors import TensorSpec  # noqa: E402


class _Signature:
    def __init__(self, dtype):
        self.key = "serving_default"
        self.input_order = ["x"]
        self.inputs = {"x": TensorSpec("x", "x:0", dtype, TensorShape(None))}


def _rest(signature):
    def convert(parse, raw):
        body = parse(raw)
        key = "instances" if "instances" in body else "inputs"
        if key == "instances":
            return tfserving._row_inputs(body[key], signature, True)["x"]
        return tfserving._columnar_inputs(body[key], signature)["x"]

    return convert


def _v2(parse, raw):
    item = parse(raw)["inputs"][0]
    return v2_tensors.tensor_from_data(
        item["data"], dtypes.float32, item["shape"], "FP32", "input 'x'"
    )


def _cases():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 784)).astype(np.float32)
    short = [[float(f"{v:.8g}") for v in row] for row in x[:1].tolist()]
    floats, ints = _Signature(dtypes.float32), _Signature(dtypes.int32)
    v2 = {"inputs": [{"name": "x", "shape": [1, 784], "datatype": "FP32"}]}
    v2["inputs"][0]["data"] = x[0].tolist()
    rest, infer = json_numbers.parse_predict, json_numbers.parse_infer
    return [
        ("REST 1x784 floats (float64 text)", {"instances": x[:1].tolist()}, _rest(floats), rest),
        ("REST 1x784 floats (float32 text)", {"instances": short}, _rest(floats), rest),
        ("REST 8x784 floats", {"instances": x[:8].tolist()}, _rest(floats), rest),
        ("REST 64x784 floats", {"instances": x.tolist()}, _rest(floats), rest),
        ("REST 1x784 int32", {"inputs": [rng.integers(0, 255, 784).tolist()]}, _rest(ints), rest),
        ("V2 1x784 FP32", v2, _v2, infer),
        ("REST 1x256 floats (5 KB)", {"instances": x[:1, :256].tolist()}, _rest(floats), rest),
        (
            "REST 1x64 floats (under 2 KiB: orjson)",
            {"instances": x[:1, :64].tolist()},
            _rest(floats),
            rest,
        ),
        (
            "REST 64x4 floats (short rows)",
            {"instances": x[:64, :4].tolist()},
            _rest(floats),
            rest,
        ),
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=10.0, help="seconds in all")
    args = parser.parse_args(argv)
    if not json_numbers.ENABLED:
        print("pysimdjson is not installed (pip install -e '.[fast]')", file=sys.stderr)
        return 1
    cases = _cases()
    per_case = args.duration / len(cases)
    print(f"load average {os.getloadavg()[0]:.1f}; ~{per_case:.1f} s per case; CPU time\n")
    print("| body | bytes | fast parse us | orjson path us | fast / orjson |")
    print("|---|---|---|---|---|")
    for name, doc, convert, fast_parse in cases:
        raw = json.dumps(doc).encode()

        def fast(convert=convert, parse=fast_parse, raw=raw):
            return convert(parse, raw)

        def slow(convert=convert, raw=raw):
            return convert(parse_json, raw)

        a, b = fast(), slow()
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), name
        times = {"fast": [], "slow": []}
        n = max(1, int(2000 / max(1, len(raw) // 4000)))
        deadline = time.monotonic() + per_case
        while time.monotonic() < deadline or len(times["fast"]) < 3:
            for key, f in (("fast", fast), ("slow", slow)):
                t0 = time.process_time()
                for _ in range(n):
                    f()
                times[key].append((time.process_time() - t0) / n * 1e6)
        us_fast, us_slow = statistics.median(times["fast"]), statistics.median(times["slow"])
        print(f"| {name} | {len(raw)} | {us_fast:.1f} | {us_slow:.1f} | {us_fast / us_slow:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
