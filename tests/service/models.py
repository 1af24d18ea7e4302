"""Small saved models for the service tests, exported with the engine."""

from __future__ import annotations

import json
from pathlib import Path

import engine as tf


def export(path: Path, build, variables_init=True) -> None:
    """Builds a graph with ``build() -> {signature_key: (inputs, outputs)}`` and exports it."""
    g = tf.Graph()
    with g.as_default():
        sigs = build()
        with tf.Session(graph=g) as sess:
            if variables_init:
                sess.run(tf.global_variables_initializer())
            b = tf.saved_model.Builder(str(path))
            b.add_meta_graph_and_variables(
                sess,
                ["serve"],
                signature_def_map={
                    key: tf.saved_model.predict_signature_def(ins, outs)
                    for key, (ins, outs) in sigs.items()
                },
            )
            b.save()


def half_plus_two(path: Path, a: float = 0.5, b: float = 2.0) -> None:
    """y = a*x + b with x of shape [None]: the classic TF Serving smoke test."""

    def build():
        x = tf.placeholder(tf.float32, [None], name="x")
        wa = tf.Variable(a, name="a")
        wb = tf.Variable(b, name="b")
        return {"serving_default": ({"x": x}, {"y": tf.add(tf.multiply(wa, x), wb, name="y")})}

    export(path, build)


def multi_io(path: Path) -> None:
    """Two inputs, three outputs (one int, one string) and a second signature."""

    def build():
        a = tf.placeholder(tf.float32, [None, 3], name="a")
        b = tf.placeholder(tf.int32, [None], name="b")
        total = tf.identity(tf.reduce_sum(a, axis=1) + tf.cast(b, tf.float32), name="total")
        doubled = tf.identity(b * 2, name="doubled")
        label = tf.where(
            total > 0, tf.fill(tf.shape(b), "pos"), tf.fill(tf.shape(b), "neg"), name="label"
        )
        neg = tf.identity(-a, name="neg")
        return {
            "serving_default": (
                {"a": a, "b": b},
                {"total": total, "doubled": doubled, "label": label},
            ),
            "negate": ({"a": a}, {"neg": neg}),
        }

    export(path, build)


def strings(path: Path) -> None:
    """Bytes in, bytes out: appends '!' and reports lengths (a string-valued model)."""

    def build():
        s = tf.placeholder(tf.string, [None], name="s")
        out = tf.identity(s + "!", name="out")
        return {"serving_default": ({"text": s}, {"shouted": out})}

    export(path, build)


def slow(path: Path, iterations: int = 3_000_000) -> None:
    """A deliberately slow model (a long while_loop) for event-loop and deadline tests."""

    def build():
        x = tf.placeholder(tf.float32, [None], name="x")
        n = tf.placeholder_with_default(tf.constant(iterations), [], name="n")
        _, y = tf.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, y), [0, x])
        return {"serving_default": ({"x": x}, {"y": tf.identity(y, name="y")})}

    export(path, build)


def stateful(path: Path) -> None:
    """A signature whose output is an assign (a counter): served one request at a time."""

    def build():
        x = tf.placeholder(tf.float32, [None], name="x")
        v = tf.Variable(0.0, name="counter")
        y = tf.assign_add(v, tf.reduce_sum(x))
        return {"serving_default": ({"x": x}, {"y": y})}

    export(path, build)


def broken(path: Path) -> None:
    """A version that fails to load: its saved_model.msgpack is not a model."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "saved_model.msgpack").write_bytes(b"\x93not a model")


def write_config(model_dir: Path, config: dict) -> None:
    model_dir.mkdir(parents=True, exist_ok=True)
    (model_dir / "config.json").write_text(json.dumps(config))


def make_repository(root: Path) -> Path:
    """half_plus_two (versions 1 and 2, label stable->1), multi_io, strings."""
    half_plus_two(root / "half_plus_two" / "1", a=0.5, b=2.0)
    half_plus_two(root / "half_plus_two" / "2", a=0.5, b=3.0)
    write_config(
        root / "half_plus_two",
        {"version_policy": {"all": {}}, "version_labels": {"stable": 1, "canary": 2}},
    )
    multi_io(root / "multi_io" / "1")
    strings(root / "strings" / "1")
    return root
