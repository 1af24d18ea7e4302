"""An imported ONNX CNN on flowserve's engine vs onnxruntime, one thread each.

Builds two small image classifiers with ``onnx.helper`` (seeded random weights):

* ``resnet``: a ResNet-style net on 3x64x64 inputs: conv 3x3/2 + BN + ReLU, max pool, two
  basic residual blocks at 32 channels, a strided block with a 1x1 projection to 64
  channels, global average pool, Gemm to 10 classes, softmax (BatchNormalization nodes kept,
  as exporters write them);
* ``mobilenet``: MobileNet-style depthwise-separable blocks (3x3 depthwise conv with
  group = channels, 1x1 pointwise conv, Clip as ReLU6) on 3x64x64 inputs.

and, when the installed onnx wheel ships it, ``resnet50``: the wheel's ``light_resnet50``
(the real ResNet-50 architecture at 1x3x224x224, weights filled with constants; batch 1 only,
as its input shape is fixed).

For each, in the same process: load time (engine.onnx import + session + first run vs
onnxruntime InferenceSession creation + first run) and per-call latency at batch 1 and 32
(median of repeated calls through ``make_callable`` / ``InferenceSession.run``), and checks
the outputs agree. Both use one thread: BLAS limited to one thread via the environment before
numpy loads; onnxruntime with intra_op_num_threads=1 and inter_op_num_threads=1.

    python bench/onnx_cnn.py [--repeat 20] [--json out.json]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import engine as tf  # noqa: E402

rng = np.random.default_rng(0)


class _Net:
    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def name(self, kind):
        self.n += 1
        return f"{kind}_{self.n}"

    def param(self, kind, value):
        n = self.name(kind)
        self.inits.append(numpy_helper.from_array(value.astype(np.float32), n))
        return n

    def node(self, op, inputs, **attrs):
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def conv_bn(self, x, cin, cout, k, stride=1, group=1, act="relu"):
        w = rng.standard_normal((cout, cin // group, k, k)) * np.sqrt(2 / (cin // group * k * k))
        p = k // 2
        y = self.node(
            "Conv",
            [x, self.param("w", w)],
            kernel_shape=[k, k],
            strides=[stride, stride],
            pads=[p, p, p, p],
            group=group,
        )
        y = self.node(
            "BatchNormalization",
            [
                y,
                self.param("gamma", rng.uniform(0.5, 1.5, cout)),
                self.param("beta", rng.standard_normal(cout) * 0.1),
                self.param("mean", rng.standard_normal(cout) * 0.1),
                self.param("var", rng.uniform(0.5, 1.5, cout)),
            ],
            epsilon=1e-5,
        )
        if act == "relu":
            return self.node("Relu", [y])
        if act == "relu6":
            lo, hi = self.param("lo", np.array(0.0)), self.param("hi", np.array(6.0))
            return self.node("Clip", [y, lo, hi])
        return y

    def head(self, x, c, classes=10):
        y = self.node("GlobalAveragePool", [x])
        y = self.node("Flatten", [y], axis=1)
        w = self.param("fc_w", rng.standard_normal((classes, c)) / np.sqrt(c))
        y = self.node("Gemm", [y, w, self.param("fc_b", np.zeros(classes))], transB=1)
        return self.node("Softmax", [y], axis=-1)

    def model(self, out, size=64) -> bytes:
        graph = helper.make_graph(
            self.nodes,
            "net",
            [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 3, size, size])],
            [helper.make_tensor_value_info(out, TensorProto.FLOAT, ["N", 10])],
            self.inits,
        )
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        return m.SerializeToString()


def resnet() -> bytes:
    net = _Net()
    x = net.conv_bn("image", 3, 32, 3, stride=2)
    x = net.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    for _ in range(2):
        y = net.conv_bn(x, 32, 32, 3)
        y = net.conv_bn(y, 32, 32, 3, act=None)
        x = net.node("Relu", [net.node("Add", [x, y])])
    y = net.conv_bn(x, 32, 64, 3, stride=2)
    y = net.conv_bn(y, 64, 64, 3, act=None)
    short = net.conv_bn(x, 32, 64, 1, stride=2, act=None)
    x = net.node("Relu", [net.node("Add", [short, y])])
    return net.model(net.head(x, 64))


def mobilenet() -> bytes:
    net = _Net()
    x = net.conv_bn("image", 3, 16, 3, stride=2, act="relu6")
    c = 16
    for cout, stride in ((32, 1), (64, 2), (64, 1), (128, 2)):
        x = net.conv_bn(x, c, c, 3, stride=stride, group=c, act="relu6")
        x = net.conv_bn(x, c, cout, 1, act="relu6")
        c = cout
    return net.model(net.head(x, c))


def _median_seconds(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench(name: str, data: bytes, repeat: int, size=64, batches=(1, 32)) -> list[dict]:
    x1 = rng.standard_normal((1, 3, size, size)).astype(np.float32)
    t0 = time.perf_counter()
    m = tf.onnx.import_model(data)
    sess = tf.Session(graph=m.graph)
    (image,) = m.signature.inputs
    fn = sess.make_callable(
        m.signature.outputs[next(iter(m.signature.outputs))].name,
        feed_list=[m.signature.inputs[image].name],
    )
    fn(x1)
    engine_load = time.perf_counter() - t0
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    t0 = time.perf_counter()
    ref = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
    ref.run(None, {image: x1})
    ort_load = time.perf_counter() - t0
    rows = [
        {"model": name, "what": "load", "engine_s": engine_load, "ort_s": ort_load},
    ]
    for batch in batches:
        x = rng.standard_normal((batch, 3, size, size)).astype(np.float32)
        got, want = fn(x), ref.run(None, {image: x})[0]
        if name != "resnet50":  # constant weights saturate its logits: compare elsewhere
            np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-5)
        n = repeat if batch == 1 and size == 64 else max(repeat // 4, 3)
        e = _median_seconds(lambda x=x: fn(x), n)
        o = _median_seconds(lambda x=x: ref.run(None, {image: x}), n)
        rows.append({"model": name, "what": f"batch {batch}", "engine_s": e, "ort_s": o})
    sess.close()
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--json", help="also write the rows as JSON")
    args = p.parse_args(argv)
    rows = []
    for name, build in (("resnet", resnet), ("mobilenet", mobilenet)):
        rows += bench(name, build(), args.repeat)
    import onnx

    light = Path(onnx.__file__).parent / "backend/test/data/light/light_resnet50.onnx"
    if light.is_file():
        rows += bench("resnet50", light.read_bytes(), args.repeat, size=224, batches=(1,))
    print(f"{'model':10} {'measure':9} {'flowserve':>12} {'onnxruntime':>12} {'ratio':>7}")
    for r in rows:
        ratio = r["engine_s"] / r["ort_s"]
        print(
            f"{r['model']:10} {r['what']:9} {r['engine_s'] * 1e3:10.2f}ms "
            f"{r['ort_s'] * 1e3:10.2f}ms {ratio:6.2f}x"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
