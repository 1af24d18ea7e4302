"""The public API of ``service/`` and of the engine's namespace modules is annotated.

Public: module-level functions and the methods (``__init__`` included) of module-level
classes whose names do not start with ``_``. Every parameter but ``self``/``cls`` has an
annotation, and every function but ``__init__`` a return annotation.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The engine's namespace modules: what ``import engine as tf`` exposes as tf.layers,
# tf.losses, tf.nn, tf.train, tf.saved_model, tf.test, and the engine's public helpers.
ENGINE_NAMESPACES = [
    "engine/__init__.py",
    "engine/layers.py",
    "engine/losses.py",
    "engine/nn.py",
    "engine/train.py",
    "engine/saved_model.py",
    "engine/test.py",
    "engine/graph_inspection.py",
    "engine/framework/tensor_like.py",
]


def _public_functions(tree: ast.Module):
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if not node.name.startswith("_"):
                yield node.name, node
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for m in node.body:
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                    not m.name.startswith("_") or m.name == "__init__"
                ):
                    yield f"{node.name}.{m.name}", m


def missing_annotations(source: str) -> dict[str, list[str]]:
    """Public function -> its parameters (and "return") that lack an annotation."""
    out = {}
    for name, fn in _public_functions(ast.parse(source)):
        a = fn.args
        params = [*a.posonlyargs, *a.args, *a.kwonlyargs]
        lacking = [p.arg for p in params if p.annotation is None and p.arg not in ("self", "cls")]
        for star, p in (("*", a.vararg), ("**", a.kwarg)):
            if p is not None and p.annotation is None:
                lacking.append(star + p.arg)
        if fn.returns is None and fn.name != "__init__":
            lacking.append("return")
        if lacking:
            out[name] = lacking
    return out


def _modules() -> list[Path]:
    return sorted((ROOT / "service").rglob("*.py")) + [ROOT / p for p in ENGINE_NAMESPACES]


def test_public_api_is_annotated():
    problems = [
        f"{path.relative_to(ROOT).as_posix()}: {name} lacks annotations for {lacking}"
        for path in _modules()
        for name, lacking in missing_annotations(path.read_text(encoding="utf-8")).items()
    ]
    assert not problems, "\n".join(problems)


def test_the_check_sees_what_is_missing():
    source = (
        "def f(a, b: int, *args, key=1, **kw): ...\n"
        "def _private(x): ...\n"
        "def g(x: int) -> int: ...\n"
        "class C:\n"
        "    def __init__(self, v): ...\n"
        "    def m(self, w: int): ...\n"
        "    @classmethod\n"
        "    def k(cls) -> None: ...\n"
        "    def _p(self, z): ...\n"
        "class _Hidden:\n"
        "    def m(self, q): ...\n"
    )
    assert missing_annotations(source) == {
        "f": ["a", "key", "*args", "**kw", "return"],
        "C.__init__": ["v"],
        "C.m": ["return"],
    }
