"""Models for the load benchmarks, exported into a model repository.

* ``wide_mlp``: a 784-2048-2048-10 ReLU MLP with softmax -- compute-bound (about 6M
  multiply-adds and 23 MB of weights read per unbatched request), the case batching helps.
* ``mlp``: the issue-13 784-256-128-10 ReLU MLP with softmax (the model of the peer table):
  cheap per request, so serving overhead dominates.
* ``big_input``: the mean of a float32 [N, 262144] input (1 MiB per row): payload-bound, for
  comparing request encodings.

    python bench/bench_models.py REPOSITORY_DIR [--batching on|off]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import engine as tf  # noqa: E402

BIG_INPUT_FLOATS = 262_144  # 1 MiB of float32


def _export(path: Path, build) -> None:
    g = tf.Graph()
    with g.as_default():
        inputs, outputs = build()
        with tf.Session(graph=g) as sess:
            sess.run(tf.global_variables_initializer())
            tf.saved_model.simple_save(sess, str(path), inputs, outputs)


def _dense_stack(path: Path, layers: list[int]) -> None:
    def build():
        x = tf.placeholder(tf.float32, [None, 784], name="x")
        h = x
        for i, units in enumerate(layers):
            w = tf.get_variable(
                f"w{i}",
                [h.shape[1].value, units],
                initializer=tf.glorot_uniform_initializer(seed=i),
            )
            b = tf.get_variable(f"b{i}", [units], initializer=tf.zeros_initializer())
            h = tf.matmul(h, w) + b
            if i < len(layers) - 1:
                h = tf.nn.relu(h)
        return {"x": x}, {"probabilities": tf.nn.softmax(h, name="probabilities")}

    _export(path, build)


def wide_mlp(path: Path) -> None:
    _dense_stack(path, [2048, 2048, 10])


def mlp(path: Path) -> None:
    _dense_stack(path, [256, 128, 10])


def big_input(path: Path) -> None:
    def build():
        x = tf.placeholder(tf.float32, [None, BIG_INPUT_FLOATS], name="x")
        return {"x": x}, {"mean": tf.reduce_mean(x, axis=1, name="mean")}

    _export(path, build)


def build_repository(root: Path, batching: bool | dict | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, fn in (("wide_mlp", wide_mlp), ("mlp", mlp), ("big_input", big_input)):
        if not (root / name / "1").exists():
            fn(root / name / "1")
        if batching is not None:
            (root / name / "config.json").write_text(
                json.dumps({"batching": batching, "warmup": True})
            )
    return root


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repository")
    parser.add_argument("--batching", choices=["on", "off"])
    args = parser.parse_args(argv)
    flag = None if args.batching is None else args.batching == "on"
    build_repository(Path(args.repository), flag)
    print(f"models written to {args.repository}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
