"""Runs a classic TF1 program file unchanged with a given ``tensorflow`` module (the engine,
or TensorFlow's ``compat.v1`` when recording), capturing what it prints."""

from __future__ import annotations

import contextlib
import io
import os
import re
import runpy
import sys

TUTORIALS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tutorials")
PROGRAMS = sorted(
    f[:-3] for f in os.listdir(TUTORIALS) if f.endswith(".py") and f != "mnist_standin.py"
)
_NUMBER = re.compile(r"[-+]?\d+\.\d+(?:[eE][-+]?\d+)?")


def run(program: str, tf_module, contrib=None) -> list[str]:
    """The lines ``program`` prints when ``import tensorflow`` gives ``tf_module``."""
    # ``from tensorflow.keras.layers import Dense`` must reach tf_module's own submodules:
    # each loaded ``<tf_module>.x.y`` is also ``tensorflow.x.y`` while the program runs.
    prefix = tf_module.__name__ + "."
    aliases = {
        "tensorflow." + k[len(prefix) :]: m
        for k, m in list(sys.modules.items())
        if k.startswith(prefix) and m is not None
    }
    saved = {k: sys.modules.get(k) for k in ("tensorflow", "tensorflow.contrib", *aliases)}
    sys.modules["tensorflow"] = tf_module
    sys.modules.update(aliases)
    if contrib is not None:
        sys.modules["tensorflow.contrib"] = contrib
    sys.path.insert(0, TUTORIALS)
    out = io.StringIO()
    try:
        tf_module.reset_default_graph()
        with contextlib.redirect_stdout(out):
            runpy.run_path(os.path.join(TUTORIALS, program + ".py"), run_name="__main__")
    finally:
        sys.path.remove(TUTORIALS)
        sys.modules.pop("mnist_standin", None)
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return out.getvalue().splitlines()


def numbers(line: str) -> list[float]:
    return [float(x) for x in _NUMBER.findall(line)]


def text(line: str) -> str:
    """``line`` with each decimal number replaced by ``#``: the part compared exactly
    (words, integers such as a step count or a predicted class, names)."""
    return _NUMBER.sub("#", line)
